"""Legacy index algebra: ``nl.arange``, ``nl.mgrid`` (``.p``/``.x``), ``nl.ds`` and masks.

An :class:`Affine` is ``const + sum(coef * g_d)`` over the axes ``g_d`` of an index grid whose
shape broadcasts like numpy's (``nl.arange(128)[:, None]`` is axis 0 of a ``(128, 1)`` grid).
Comparisons give a :class:`Predicate` (``expr CMP 0``); ``&`` joins them. A mask becomes
per-axis ranges when each predicate bounds one axis (a rectangle); anything else is an error
naming the kernel's line. ``nisa.affine_select`` and ``nisa.iota`` read an Affine or a
Predicate as their pattern.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from .errors import NkiTypeError, NkiValueError

Terms = Tuple[Tuple[int, int], ...]


def broadcast_shapes(shapes: Sequence[Tuple[int, ...]]) -> Tuple[int, ...]:
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for k, e in enumerate(s):
            d = n - len(s) + k
            if e != 1:
                if out[d] not in (1, e):
                    raise NkiValueError(f"index grids of shapes {[list(x) for x in shapes]} do not broadcast")
                out[d] = e
    return tuple(out)


def _int(x: Any) -> Optional[int]:
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    return None


class Affine:
    """An affine index expression over the axes of an index grid."""

    __slots__ = ("shape", "terms", "const")

    def __init__(self, shape: Tuple[int, ...], terms: Terms, const: int) -> None:
        self.shape = shape
        # A term on an axis of extent 1 is always zero.
        self.terms = tuple((g, c) for g, c in terms if c != 0 and shape[g] != 1)
        self.const = const

    @staticmethod
    def constant(c: int) -> "Affine":
        return Affine((), (), c)

    @staticmethod
    def axis(shape: Tuple[int, ...], d: int, start: int = 0, step: int = 1) -> "Affine":
        return Affine(shape, ((d, step),), start)

    def _aligned(self, n: int) -> Terms:
        shift = n - len(self.shape)
        return tuple((g + shift, c) for g, c in self.terms)

    def _combine(self, other: Any, sign: int) -> "Affine":
        k = _int(other)
        if k is not None:
            return Affine(self.shape, self.terms, self.const + sign * k)
        if not isinstance(other, Affine):
            return NotImplemented
        shape = broadcast_shapes([self.shape, other.shape])
        acc = {}
        for g, c in self._aligned(len(shape)):
            acc[g] = acc.get(g, 0) + c
        for g, c in other._aligned(len(shape)):
            acc[g] = acc.get(g, 0) + sign * c
        return Affine(shape, tuple(sorted(acc.items())), self.const + sign * other.const)

    def __add__(self, other: Any) -> "Affine":
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other: Any) -> "Affine":
        return self._combine(other, -1)

    def __rsub__(self, other: Any) -> "Affine":
        return (-self)._combine(other, 1)

    def __neg__(self) -> "Affine":
        return Affine(self.shape, tuple((g, -c) for g, c in self.terms), -self.const)

    def __mul__(self, other: Any) -> "Affine":
        k = _int(other)
        if k is None:
            if isinstance(other, Affine):
                raise NkiValueError("the product of two index expressions is not affine")
            return NotImplemented
        return Affine(self.shape, tuple((g, c * k) for g, c in self.terms), self.const * k)

    __rmul__ = __mul__

    def _not_affine(self, *_: Any) -> Any:
        raise NkiValueError("an index expression must be affine (+, -, and * by an integer only)")

    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __truediv__ = __rtruediv__ = _not_affine

    def __getitem__(self, key: Any) -> "Affine":
        """``[:, None]`` / ``[None, :]``: place the axes in a grid of higher rank."""
        items = key if isinstance(key, tuple) else (key,)
        shape: List[int] = []
        where: List[int] = []
        src = 0
        for it in items:
            if it is None:
                shape.append(1)
            elif isinstance(it, slice) and it == slice(None):
                if src >= len(self.shape):
                    raise NkiValueError("too many ':' when placing an nl.arange index")
                where.append(len(shape))
                shape.append(self.shape[src])
                src += 1
            else:
                raise NkiValueError("an nl.arange index can only be re-shaped with ':' and None")
        while src < len(self.shape):
            where.append(len(shape))
            shape.append(self.shape[src])
            src += 1
        return Affine(tuple(shape), tuple((where[g], c) for g, c in self.terms), self.const)

    def _cmp(self, other: Any, op: str) -> "Predicate":
        diff = self - other
        if diff is NotImplemented:
            raise NkiTypeError(f"cannot compare an index expression with {type(other).__name__}")
        return Predicate(diff, op)

    def __lt__(self, o: Any) -> "Predicate":
        return self._cmp(o, "less")

    def __le__(self, o: Any) -> "Predicate":
        return self._cmp(o, "less_equal")

    def __gt__(self, o: Any) -> "Predicate":
        return self._cmp(o, "greater")

    def __ge__(self, o: Any) -> "Predicate":
        return self._cmp(o, "greater_equal")

    def __bool__(self) -> bool:
        raise NkiTypeError("control flow on an nl.arange/nl.mgrid index expression (use a mask= instead)")

    def __index__(self) -> int:
        raise NkiTypeError("an nl.arange/nl.mgrid index expression is not an integer")

    def __repr__(self) -> str:
        t = " + ".join(f"{c}*g{g}" for g, c in self.terms)
        return f"Affine({t or '0'} + {self.const}, grid {list(self.shape)})"


class Predicate:
    """``expr CMP 0`` for one affine expression."""

    __slots__ = ("expr", "cmp")

    def __init__(self, expr: Affine, cmp: str) -> None:
        self.expr = expr
        self.cmp = cmp

    def __and__(self, other: Any) -> "Mask":
        return Mask([self]) & other

    __rand__ = __and__

    def __or__(self, other: Any) -> "Mask":
        return Mask([self], disjunction=True)

    __ror__ = __or__

    def __invert__(self) -> "Mask":
        return Mask([self], disjunction=True)

    def __bool__(self) -> bool:
        raise NkiTypeError("control flow on a mask: combine masks with '&', not 'and'")


class Mask:
    """A conjunction of predicates (a disjunction or negation is kept only to be refused)."""

    __slots__ = ("preds", "disjunction")

    def __init__(self, preds: List[Predicate], disjunction: bool = False) -> None:
        self.preds = preds
        self.disjunction = disjunction

    def __and__(self, other: Any) -> "Mask":
        if isinstance(other, Predicate):
            return Mask(self.preds + [other], self.disjunction)
        if isinstance(other, Mask):
            return Mask(self.preds + other.preds, self.disjunction or other.disjunction)
        if type(other) is bool or type(other).__name__ == "bool_":
            # A Python condition (of loop indices): keeps this mask, or nothing.
            return self if other else False
        return NotImplemented

    __rand__ = __and__

    def __or__(self, other: Any) -> "Mask":
        return Mask(self.preds, True)

    __ror__ = __or__
    __invert__ = __or__

    def __bool__(self) -> bool:
        raise NkiTypeError("control flow on a mask: combine masks with '&', not 'and'")


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def rectangle(mask: Any) -> Union[None, bool, List[Optional[Tuple[int, int]]]]:
    """The per-axis ranges ``[lo, hi)`` a mask keeps (None for an axis it leaves alone), None
    for no mask, False for a mask that keeps nothing. A mask that is not a rectangle (two axes in
    one predicate, ``|``, ``~``, ``!=``) is an error."""
    if mask is None or mask is True:
        return None
    if mask is False:
        return False
    if isinstance(mask, (bool, np.bool_)):
        return None if mask else False
    if isinstance(mask, Predicate):
        mask = Mask([mask])
    if not isinstance(mask, Mask):
        raise NkiTypeError(f"a mask must be comparisons of nl.arange indices joined by '&', got {type(mask).__name__}")
    if mask.disjunction:
        raise NkiValueError("the mask is not a rectangle: '|' and '~' of masks are not supported "
                            "(a mask must be bounds on single indices joined by '&')")
    rank = max((len(p.expr.shape) for p in mask.preds), default=0)
    lo = [0] * rank
    hi: List[Optional[int]] = [None] * rank
    touched = [False] * rank
    for p in mask.preds:
        e = p.expr
        terms = e._aligned(rank)
        if len(terms) == 0:
            # A constant comparison: keeps all or nothing.
            if not _holds(e.const, p.cmp):
                return False
            continue
        if len(terms) > 1:
            raise NkiValueError("the mask is not a rectangle: one comparison bounds two indices at once "
                                "(use nisa.affine_select for a triangular or diagonal selection)")
        (g, a), = terms
        c = e.const
        touched[g] = True
        # a*g + c CMP 0
        if p.cmp in ("less", "less_equal"):
            bound = -c - (1 if p.cmp == "less" else 0)  # a*g <= bound
            if a > 0:
                _set_hi(hi, g, bound // a + 1)
            else:
                _set_lo(lo, g, _ceil_div(bound, a))
        elif p.cmp in ("greater", "greater_equal"):
            bound = -c + (1 if p.cmp == "greater" else 0)  # a*g >= bound
            if a > 0:
                _set_lo(lo, g, _ceil_div(bound, a))
            else:
                _set_hi(hi, g, bound // a + 1)
        else:
            raise NkiValueError(f"the mask is not a rectangle: '{p.cmp}' is not a bound")
    out: List[Optional[Tuple[int, int]]] = []
    for g in range(rank):
        if not touched[g]:
            out.append(None)
            continue
        h = hi[g]
        out.append((max(lo[g], 0), h if h is not None else 1 << 62))
    return out


def _set_hi(hi: List[Optional[int]], g: int, v: int) -> None:
    hi[g] = v if hi[g] is None else min(hi[g], v)


def _set_lo(lo: List[int], g: int, v: int) -> None:
    lo[g] = max(lo[g], v)


def _holds(x: int, cmp: str) -> bool:
    return {"less": x < 0, "less_equal": x <= 0, "greater": x > 0, "greater_equal": x >= 0}.get(cmp, False)


class DSlice:
    """``nl.ds(start, size)``: ``size`` consecutive indices from ``start``."""

    __slots__ = ("start", "size")

    def __init__(self, start: Any, size: Any) -> None:
        self.start = start
        self.size = size

    def __repr__(self) -> str:
        return f"ds({self.start}, {self.size})"


class GridAxes(tuple):
    """What ``nl.mgrid[...]`` returns: one :class:`Affine` per axis, also as ``.p .x .y .z``."""

    @property
    def p(self) -> Affine:
        return self[0]

    @property
    def x(self) -> Affine:
        return self[1]

    @property
    def y(self) -> Affine:
        return self[2]

    @property
    def z(self) -> Affine:
        return self[3]


def _range_of(s: Any) -> Tuple[int, int, int]:
    if isinstance(s, slice):
        start = 0 if s.start is None else int(s.start)
        step = 1 if s.step is None else int(s.step)
        if s.stop is None:
            raise NkiValueError("nl.mgrid needs a stop for every axis")
        return start, int(s.stop), step
    return 0, int(s), 1


class MGrid:
    """``nl.mgrid``: ``nl.mgrid[0:128, 0:512]`` gives the two axes of a ``(128, 512)`` grid."""

    def __getitem__(self, key: Any) -> Union[Affine, GridAxes]:
        items = key if isinstance(key, tuple) else (key,)
        ranges = [_range_of(s) for s in items]
        shape = tuple(len(range(a, b, c)) for a, b, c in ranges)
        axes = [Affine.axis(shape, d, a, c) for d, (a, _, c) in enumerate(ranges)]
        if not isinstance(key, tuple):
            return axes[0]
        return GridAxes(axes)


def arange(*args: Any) -> Affine:
    """``nl.arange(stop)`` / ``nl.arange(start, stop[, step])``: a 1-D index."""
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    elif len(args) in (2, 3):
        start, stop = args[0], args[1]
        step = args[2] if len(args) == 3 else 1
    else:
        raise NkiValueError("nl.arange takes (stop) or (start, stop)")
    start, stop, step = int(start), int(stop), int(step)
    n = len(range(start, stop, step))
    if n < 1:
        raise NkiValueError(f"nl.arange({start}, {stop}) is empty")
    return Affine.axis((n,), 0, start, step)
