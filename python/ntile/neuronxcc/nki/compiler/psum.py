"""``ncc.psum``: PSUM direct allocation (``alloc``, ``mod_alloc``) and ``auto_alloc``."""

from ...._nki.alloc import Buffer
from ...._nki.alloc import psum_alloc as alloc  # noqa: F401
from ...._nki.alloc import psum_mod_alloc as mod_alloc  # noqa: F401


def auto_alloc() -> Buffer:
    return Buffer("psum")
