"""Loop ranges: ``nl.affine_range``, ``nl.sequential_range``, ``nl.static_range``.

A kernel's loops run in Python (the compiler unrolls them too); each range also records where
its iterations start (``loop_begin``, ``iteration``, ``loop_end``) so the kernel builder can roll
the traced function back into loops. Outside a trace a range is a plain ``range``.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

from .errors import NkiTypeError
from .trace import active
from .view import View


def _bound(x: Any, what: str) -> int:
    if isinstance(x, View):
        raise NkiTypeError(f"data-dependent loop bound ({what}): a tile's values are not known while the kernel "
                           "is traced")
    try:
        return int(x.__index__())
    except (AttributeError, TypeError):
        raise NkiTypeError(f"a loop {what} must be an integer, got {type(x).__name__}") from None


class LoopRange:
    """An iterable range that marks its iterations in the trace."""

    __slots__ = ("kind", "range")

    def __init__(self, kind: str, start: Any, stop: Optional[Any] = None, step: Any = 1) -> None:
        if stop is None:
            start, stop = 0, start
        self.kind = kind
        self.range = range(_bound(start, "start"), _bound(stop, "stop"), _bound(step, "step"))

    def __len__(self) -> int:
        return len(self.range)

    def __iter__(self) -> Iterator[int]:
        T = active()
        if T is None:
            return iter(self.range)
        return _marked(T, self.kind, self.range)

    def __repr__(self) -> str:
        return f"{self.kind}_range({self.range.start}, {self.range.stop}, {self.range.step})"


def _marked(T: Any, kind: str, r: range) -> Iterator[int]:
    loc = T.loc()
    T.emit({"op": "loop_begin", "loc": loc, "kind": kind, "trips": len(r)})
    entry = [tuple(loc), kind, 0]
    T.loop_path.append(entry)
    try:
        for i, v in enumerate(r):
            entry[2] = i
            T.emit({"op": "iteration", "loc": T.loc(), "index": i})
            yield v
    finally:
        if T.loop_path and T.loop_path[-1] is entry:
            T.loop_path.pop()
        # A loop left by `break` or an exception still closes (CPython closes the generator as
        # soon as the loop drops it); a trace already finished is left alone.
        if T.open:
            T.emit({"op": "loop_end", "loc": T.loc()})


def affine_range(start: Any, stop: Optional[Any] = None, step: Any = 1, **_: Any) -> LoopRange:
    return LoopRange("affine", start, stop, step)


def sequential_range(start: Any, stop: Optional[Any] = None, step: Any = 1, **_: Any) -> LoopRange:
    return LoopRange("sequential", start, stop, step)


def static_range(start: Any, stop: Optional[Any] = None, step: Any = 1, **_: Any) -> LoopRange:
    return LoopRange("static", start, stop, step)
