"""``neuronxcc.nki.language.constants``: ``sizeinbytes(dtype)``, and the tile size constants."""

from typing import Any

from ...._nki import dtypes, lang
from ...._nki.lang import tile_size  # noqa: F401


def sizeinbytes(dtype: Any) -> int:
    """Bytes per element of ``dtype``."""
    return dtypes.itemsize(lang.dt(dtype))
