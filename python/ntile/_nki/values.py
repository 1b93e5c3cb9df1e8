"""Tile-returning calls, assignment and operators: the NKI semantics shared above the records.

A call that returns a tile (``nl.exp(x)``, legacy ``nisa.nc_matmul(a, b)``) writes a fresh
temporary tile and remembers its producing record. Assigning that tile into another one
(``t[...] = nl.exp(x)``, ``psum[...] += nisa.nc_matmul(a, b)``) redirects the producer's
``dst`` instead of copying, as the compiler does; a temporary whose producer was redirected is
used by no record and is left out of the trace. A masked call keeps its rectangle with the
pending record so that the redirected destination is clipped the same way.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import dtypes, index, ops
from .errors import NkiTypeError, NkiUnsupportedError, NkiValueError, unsupported
from .trace import Storage, current
from .view import View, as_int

Clip = Optional[List[Optional[Tuple[int, int]]]]
Number = (bool, int, float, np.integer, np.floating)


def either(v: Optional[View], fallback: View) -> View:
    """``v`` unless it is None (views have no truth value: ``or`` would ask a tile for one)."""
    return fallback if v is None else v


def temp(shape: Sequence[int], dtype: str, buffer: str = "sbuf") -> View:
    """A fresh temporary tile of ``shape`` (partition dim first)."""
    T = current()
    shape = tuple(int(s) for s in shape)
    if len(shape) < 2:
        shape = (shape[0] if shape else 1, 1)
    st = T.new_storage("", buffer, dtype, shape, 0)
    st.temp = True
    return T.view_class.whole(st)


def produced(view: View, rec: ops.Rec, clip: Clip = None) -> View:
    """Remember that ``rec`` wrote the temporary ``view`` (so an assignment may redirect it)."""
    if view.st.temp:
        view.st.pending = (rec, clip)
    return view


def mask_clip(mask: Any) -> Union[None, bool, List[Optional[Tuple[int, int]]]]:
    return index.rectangle(mask)


def clipped(v: View, clip: Clip, space: Sequence[int]) -> View:
    return v if not clip else v.clip(clip, space)


def dtype_of(x: Any) -> Optional[str]:
    if isinstance(x, View):
        return x.st.dtype
    return dtypes.scalar_dtype(x)


def _can_write(op: str, buffer: str, rec: ops.Rec) -> bool:
    if op == "dma_copy":
        return buffer == "sbuf"
    if op == "matmul":
        return buffer == "psum"
    if op == "transpose":
        return buffer == "psum" if rec.get("engine") != "dve" else buffer in ("sbuf", "psum")
    if op in ("iota", "affine_select"):
        return buffer == "sbuf"
    return buffer in ("sbuf", "psum")


def redirect(dst: View, value: View, accumulate: Union[None, bool, str] = False) -> bool:
    """Make the pending producer of the temporary ``value`` write ``dst`` instead; False when
    it cannot (not a pending temporary, another memory, another shape)."""
    st = value.st
    pending = st.pending
    if pending is None or not st.temp or not value.covers_storage():
        return False
    rec, clip = pending
    if not _can_write(rec["op"], dst.st.buffer, rec):
        return False
    target = dst.conform(value.tile_counts())
    if target is None:
        return False
    if clip:
        target = target.clip(clip, value.tile_counts())
    st.refs -= 1
    rec["dst"] = target.rec(True)
    if rec["op"] == "matmul":
        rec["accumulate"] = accumulate
    st.pending = None
    return True


def assign(dst: View, value: Any) -> None:
    """``dst[...] = value``: a number fills it, a pending temporary is redirected into it, any
    other tile is copied (DMA when either side is in HBM)."""
    if isinstance(value, Number):
        if not dst.st.on_chip:
            raise unsupported("assigning a number to an HBM tensor")
        ops.memset(dst, value)
        return
    if not isinstance(value, View):
        if isinstance(value, np.ndarray):
            raise unsupported("assigning a numpy array inside a kernel", "pass it as a kernel argument")
        raise NkiTypeError(f"cannot assign a {type(value).__name__} to a tile")
    if value.same(dst):
        return
    if redirect(dst, value):
        return
    copy_into(dst, value)


def copy_into(dst: View, src: View) -> ops.Rec:
    if dst.nelem != src.nelem and src.conform(dst.tile_counts() if dst.st.on_chip else dst.counts) is None:
        raise NkiValueError(f"cannot assign a tile of shape {list(src.tile_counts())} to a view of shape "
                            f"{list(dst.tile_counts())}")
    if not dst.st.on_chip or not src.st.on_chip:
        return ops.dma_copy(dst, src)
    return ops.tensor_copy(dst, src)


def augmented(target: View, value: Any, alu: str) -> View:
    """``target op= value``: a matmul into PSUM accumulates (``+=``), anything else is one
    elementwise instruction writing ``target`` in place."""
    if not target.st.on_chip:
        raise unsupported(f"'{alu}=' on an HBM tensor (an accumulating DMA)")
    if alu == "add" and isinstance(value, View) and value.st.pending is not None \
            and value.st.pending[0]["op"] == "matmul" and target.st.buffer == "psum":
        if redirect(target, value, accumulate="add"):
            return target
    elementwise(alu, target, value, into=target)
    return target


def _full_and_column(x: View, y: View) -> Optional[Tuple[View, View, bool]]:
    """When one operand is a [P, 1] column and the other a [P, ...] tile: (tile, column, column
    is the left operand)."""
    for a, b, rev in ((x, y, False), (y, x, True)):
        asz, bsz = a.tile_counts(), b.tile_counts()
        if bsz[0] == asz[0] and all(c == 1 for c in bsz[1:]) and any(c != 1 for c in asz[1:]):
            return a, b, rev
    return None


def _broadcast(small: View, shape: Tuple[int, ...]) -> Optional[View]:
    """``small`` read across ``shape`` with stride-0 free dims (numpy broadcasting, free dims)."""
    counts = small.tile_counts()
    if len(counts) > len(shape):
        return None
    if len(counts) < len(shape):
        return None
    if counts[0] != shape[0]:
        return None
    base = max(small.pdim, 0)
    dims = list(small.dims[base:])
    for d in range(1, len(shape)):
        if dims[d][1] == shape[d]:
            continue
        if dims[d][1] != 1:
            return None
        dims[d] = (0, shape[d])
    return small._new(small.off, tuple(small.dims[:base]) + tuple(dims), small.pdim)


def result_shape(x: View) -> Tuple[int, ...]:
    return x.tile_counts()


def elementwise(alu: str, x: Any, y: Any, dtype: Optional[str] = None, clip: Clip = None,
                into: Optional[View] = None, engine: Optional[str] = None) -> Any:
    """``x alu y`` for tiles and numbers, as ``tensor_tensor`` or (with a number or a [P, 1]
    column) ``tensor_scalar``; the result is a new tile unless ``into`` is given."""
    xv, yv = isinstance(x, View), isinstance(y, View)
    if not xv and not yv:
        raise NkiTypeError(f"nl.{alu} needs at least one tile")
    if clip is False:
        return into if into is not None else temp(result_shape(x if xv else y), dtype or dtype_of(x if xv else y))
    if xv and yv:
        fc = _full_and_column(x, y)
        full = fc[0] if fc else (x if x.nelem >= y.nelem else y)
    else:
        fc = None
        full = x if xv else y
    shape = result_shape(full)
    if dtype is None:
        a, b = dtype_of(x), dtype_of(y)
        dtype = dtypes.promote(a, b) if a and b else (a or b)
        if alu in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal") and current().api == "legacy":
            dtype = "uint8"
    dst = into if into is not None else temp(shape, dtype)
    space = dst.tile_counts()
    d = clipped(dst, clip, space)
    if xv and yv and fc is None:
        if x.tile_counts()[0] != y.tile_counts()[0]:
            raise unsupported(f"nl.{alu} of tiles with {x.tile_counts()[0]} and {y.tile_counts()[0]} partitions",
                              "broadcasting along the partition dimension")
        xb = x if x.tile_counts() == shape else _broadcast(x, shape)
        yb = y if y.tile_counts() == shape else _broadcast(y, shape)
        if xb is None or yb is None:
            xb, yb = x, y
        rec = ops.tensor_tensor(d, clipped(xb, clip, space), clipped(yb, clip, space), alu, engine)
    elif xv and yv:
        tile, col, rev = fc
        col = col.clip([clip[0]], space[:1]) if clip else col
        rec = ops.tensor_scalar(d, clipped(tile, clip, space), alu, col, reverse0=rev, engine=engine)
    else:
        tile, num, rev = (x, y, False) if xv else (y, x, True)
        rec = ops.tensor_scalar(d, clipped(tile, clip, space), alu, num, reverse0=rev, engine=engine)
    return produced(dst, rec, clip) if into is None else dst


def unary(func: str, x: Any, dtype: Optional[str] = None, clip: Clip = None, scale: Any = 1.0,
          bias: Any = None) -> View:
    """``func(x * scale + bias)`` on the scalar engine, into a new tile."""
    if not isinstance(x, View):
        raise NkiTypeError(f"nl.{func} needs a tile, got {type(x).__name__}")
    dst = temp(result_shape(x), dtype or x.st.dtype)
    if clip is False:
        return dst
    space = dst.tile_counts()
    rec = ops.activation(clipped(dst, clip, space), clipped(x, clip, space), func, scale, bias)
    return produced(dst, rec, clip)


def normalize_axes(axis: Any, ndim: int) -> List[int]:
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    out = []
    for a in axes:
        a = as_int(a, "axis")
        if a < 0:
            a += ndim
        if not 1 <= a < ndim:
            raise NkiValueError(f"axis {a} is not a free dimension of a {ndim}-D tile (the partition dim 0 "
                                f"cannot be reduced)")
        out.append(a)
    out = sorted(set(out))
    if out != list(range(ndim - len(out), ndim)):
        raise NkiValueError(f"reduction axes {out} must be the last free dimensions of the tile")
    return out


def reduce(alu: str, x: View, axis: Any, dtype: Optional[str] = None, keepdims: bool = False, clip: Clip = None,
           negate: bool = False) -> View:
    if not isinstance(x, View):
        raise NkiTypeError(f"a reduction needs a tile, got {type(x).__name__}")
    shape = result_shape(x)
    axes = normalize_axes(axis, len(shape))
    out_shape = tuple(1 if d in axes else n for d, n in enumerate(shape)) if keepdims else \
        tuple(n for d, n in enumerate(shape) if d not in axes)
    dst = temp(out_shape, dtype or x.st.dtype)
    if clip is False:
        return dst
    src = clipped(x, clip, shape)
    d = dst.clip([clip[0]], dst.tile_counts()) if clip and clip[0] else dst
    rec = ops.tensor_reduce(d, src, alu, axes, negate, keepdims)
    return produced(dst, rec, None)


def matmul_tile(stationary: View, moving: View, clip: Clip = None, perf_mode: str = "none",
                tile_position: Any = None, tile_size: Any = None) -> View:
    """``stationary.T @ moving`` into a new fp32 PSUM tile."""
    if not isinstance(stationary, View) or not isinstance(moving, View):
        raise NkiTypeError("matmul operands must be tiles")
    sc, mc = stationary.tile_counts(), moving.tile_counts()
    m = sc[-1] if perf_mode == "double_row" else _prod(sc[1:])
    n = mc[-1] if perf_mode == "double_row" else _prod(mc[1:])
    dst = temp((m, n), "fp32", "psum")
    if clip is False:
        return dst
    if clip:
        r = list(clip) + [None] * 2
        if r[0]:
            stationary = stationary.clip([None, r[0]], sc)
        if r[1]:
            moving = moving.clip([None, r[1]], mc)
    rec = ops.matmul(clipped(dst, clip, (m, n)), stationary, moving, None, perf_mode, tile_position, tile_size)
    return produced(dst, rec, clip)


def transpose_tile(x: View, engine: Optional[str] = None, dtype: Optional[str] = None) -> View:
    if not isinstance(x, View):
        raise NkiTypeError("transpose needs a tile")
    c = x.tile_counts()
    f = _prod(c[1:])
    src = x if len(c) == 2 else either(x.conform((c[0], f)), x)
    dst = temp((f, c[0]), dtype or x.st.dtype, "sbuf" if engine == "dve" else "psum")
    rec = ops.transpose(dst, src, engine)
    return produced(dst, rec, None)


def load(src: View, dtype: Optional[str] = None, clip: Clip = None) -> View:
    if not isinstance(src, View):
        raise NkiTypeError(f"nl.load needs a tensor, got {type(src).__name__}")
    if src.st.on_chip:
        raise NkiValueError("nl.load reads an HBM tensor; this one is already on chip (use nl.copy)")
    shape = src.counts if len(src.counts) >= 2 else (src.counts[0], 1)
    dst = temp(shape, dtype or src.st.dtype)
    if clip is False:
        return dst
    s = src if src.counts == shape else either(src.conform(shape), src)
    rec = ops.dma_copy(clipped(dst, clip, shape), clipped(s, clip, shape))
    return produced(dst, rec, clip)


def store(dst: View, value: Any, clip: Clip = None) -> None:
    if not isinstance(dst, View) or dst.st.on_chip:
        raise NkiValueError("nl.store writes an HBM tensor")
    if not isinstance(value, View):
        raise NkiTypeError(f"nl.store stores a tile, got {type(value).__name__}")
    if clip is False:
        return
    space = value.tile_counts()
    d = either(dst.conform(space), dst)
    ops.dma_copy(clipped(d, clip, space), clipped(value, clip, space))


def copy_tile(x: View, dtype: Optional[str] = None, clip: Clip = None, engine: Optional[str] = None) -> View:
    if not isinstance(x, View):
        raise NkiTypeError(f"a copy needs a tile, got {type(x).__name__}")
    if not x.st.on_chip:
        return load(x, dtype, clip)
    dst = temp(result_shape(x), dtype or x.st.dtype)
    if clip is False:
        return dst
    space = dst.tile_counts()
    rec = ops.tensor_copy(clipped(dst, clip, space), clipped(x, clip, space), engine)
    return produced(dst, rec, clip)


def fill(dst: View, value: Any) -> None:
    """Fill every block of an on-chip tensor with ``value`` (one memset per block)."""
    st = dst.st
    if not st.on_chip:
        raise unsupported("nl.zeros/nl.full in HBM", "fill an SBUF tile and store it")
    if not st.block_shape:
        ops.memset(dst, value)
        return
    whole = type(dst).whole(st)
    nb = _prod(st.block_shape)
    inner = whole._new(0, whole.dims[st.par:], 0)
    for b in range(nb):
        ops.memset(inner._new(b * st.T, inner.dims, 0), value)


def _prod(xs: Sequence[int]) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def _pattern_of(expr: index.Affine, shape: Tuple[int, ...]) -> Tuple[List[List[int]], int, int]:
    """(free pattern, channel multiplier, offset) of an affine expression over a tile's grid."""
    n = len(shape)
    coef = [0] * n
    for g, c in expr._aligned(n):
        coef[g] = c
    pattern = [[coef[d], shape[d]] for d in range(1, n)]
    return pattern, coef[0] if n else 0, expr.const


def iota_tile(expr: Any, dtype: str) -> View:
    if isinstance(expr, int):
        expr = index.Affine.constant(expr)
    if not isinstance(expr, index.Affine):
        raise NkiTypeError("nisa.iota takes an affine expression of nl.arange indices")
    shape = expr.shape if len(expr.shape) >= 2 else ((expr.shape[0] if expr.shape else 1), 1)
    dst = temp(shape, dtype)
    pattern, cm, off = _pattern_of(expr, tuple(dst.tile_counts()))
    rec = ops.iota(dst, pattern, off, cm)
    return produced(dst, rec, None)


def affine_select_tile(pred: Any, on_true: View, on_false: Any, dtype: Optional[str] = None) -> View:
    if isinstance(pred, index.Mask) and len(pred.preds) == 1 and not pred.disjunction:
        pred = pred.preds[0]
    if not isinstance(pred, index.Predicate):
        raise NkiValueError("nisa.affine_select takes one comparison of an affine expression of nl.arange indices "
                            "(not masks joined by '&' or '|')")
    if not isinstance(on_true, View):
        raise NkiTypeError("on_true_tile must be a tile")
    shape = result_shape(on_true)
    dst = temp(shape, dtype or on_true.st.dtype)
    pattern, cm, off = _pattern_of(pred.expr, shape)
    rec = ops.affine_select(dst, on_true, pattern, cm, off, pred.cmp, on_false)
    return produced(dst, rec, None)
