"""``ncc.sbuf``: SBUF direct allocation (``alloc``, ``mod_alloc``) and ``auto_alloc``."""

from ...._nki.alloc import Buffer
from ...._nki.alloc import sbuf_alloc as alloc  # noqa: F401
from ...._nki.alloc import sbuf_mod_alloc as mod_alloc  # noqa: F401


def auto_alloc() -> Buffer:
    return Buffer("sbuf")
