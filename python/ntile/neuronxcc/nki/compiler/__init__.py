"""``neuronxcc.nki.compiler``: direct allocation (``ncc.sbuf``/``ncc.psum``) and the compiler
directives kernels pass (which change nothing in ntile's trace)."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional

from . import psum, sbuf  # noqa: F401


def _passthrough(func: Optional[Callable[..., Any]] = None, **_: Any) -> Any:
    if func is None:
        return lambda f: f
    return func


skip_middle_end_transformations = _passthrough
enable_stack_allocator = _passthrough
force_auto_alloc = _passthrough


@contextlib.contextmanager
def no_reorder() -> Iterator[None]:
    yield


@contextlib.contextmanager
def allocation_scope() -> Iterator[None]:
    yield


def multi_buffer(factor: int = 2) -> Callable[[Any], Any]:
    return lambda f: f
