"""Errors raised at the kernel's own line, and how that line is found.

The location of a call is the innermost frame whose code is not inside the ``ntile`` package:
the kernel (or a helper of the kernel) that called ``nl``/``nisa``. Every error the tracer
raises about a kernel starts with ``file.py:LINE:`` so an editor can jump to it.
"""

from __future__ import annotations

import os
import sys
from types import FrameType
from typing import Dict, Optional, Tuple

# The directory of the ntile package: frames whose code lives under it are ntile's own.
NTILE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

_OURS: Dict[str, bool] = {}


def is_ours(filename: str) -> bool:
    """Whether code in ``filename`` belongs to ntile (cached per file name)."""
    hit = _OURS.get(filename)
    if hit is None:
        # Python's own frozen modules (runpy running ``python -m``) are not the user's either.
        hit = filename.startswith("<frozen ") or os.path.abspath(filename).startswith(NTILE_DIR)
        _OURS[filename] = hit
    return hit


def user_frame(depth: int = 2) -> Optional[FrameType]:
    """The innermost frame outside ntile, starting ``depth`` frames above the caller's caller."""
    try:
        f: Optional[FrameType] = sys._getframe(depth)
    except ValueError:
        return None
    ours = _OURS
    while f is not None:
        name = f.f_code.co_filename
        hit = ours.get(name)
        if hit is None:
            hit = is_ours(name)
        if not hit:
            return f
        f = f.f_back
    return None


def where() -> Optional[Tuple[str, int]]:
    """``(file, line)`` of the kernel code running now, or None outside any."""
    f = user_frame(2)
    if f is None:
        return None
    return shown_path(f.f_code.co_filename), f.f_lineno


class NkiError(Exception):
    """An error in a kernel, raised at the kernel's line (``.file``, ``.line``)."""

    def __init__(self, message: str, at: Optional[Tuple[str, int]] = None) -> None:
        if at is None:
            at = where()
        self.file, self.line = at if at is not None else (None, None)
        self.bare = message
        super().__init__(f"{self.file}:{self.line}: {message}" if at is not None else message)


class NkiTypeError(NkiError, TypeError):
    """A value used where the tracer cannot know it: control flow on a tile, a tile as a shape."""


class NkiValueError(NkiError, ValueError):
    """Bad arguments: shapes that do not fit, a mask that is not a rectangle, a bad dtype."""


class NkiIndexError(NkiError, IndexError):
    """An index outside the tensor."""


class NkiUnsupportedError(NkiError, NotImplementedError):
    """An NKI API or form ntile does not support (named in the message)."""


def unsupported(what: str, why: str = "") -> NkiUnsupportedError:
    tail = f": {why}" if why else ""
    return NkiUnsupportedError(f"{what} is not supported by ntile{tail}")


def shown_path(filename: str) -> str:
    """A kernel file as errors and reports show it: relative to the working directory when it
    is inside it (``examples/nki/legacy/matmul.py:52``), else absolute."""
    path = os.path.abspath(filename)
    try:
        cwd = os.getcwd()
    except OSError:
        return path
    if path.startswith(cwd + os.sep):
        return os.path.relpath(path, cwd)
    return path
