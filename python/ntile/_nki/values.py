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
from .errors import NkiTypeError, NkiValueError, unsupported
from .indirect import Indirect
from .trace import current
from .view import View, as_int

Clip = Optional[List[Optional[Tuple[int, int]]]]
Number = (bool, int, float, np.integer, np.floating)


def either(v: Optional[View], fallback: View) -> View:
    """``v`` unless it is None (views have no truth value: ``or`` would ask a tile for one)."""
    return fallback if v is None else v


def temp(shape: Sequence[int], dtype: str, buffer: str = "sbuf") -> View:
    """A fresh temporary tile of ``shape`` (partition dim first)."""
    T = current()
    shape = tuple(shape)
    for n in shape:
        if type(n) is not int:
            shape = tuple(int(n) for n in shape)
            break
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


def nothing(view: View) -> View:
    """Mark the temporary ``view`` as the result of an instruction its mask skipped: assigning
    it, accumulating it or storing it then does nothing (as no instruction wrote it)."""
    view.st.void = True
    return view


def is_nothing(value: Any) -> bool:
    return isinstance(value, View) and value.st.temp and value.st.void


def mask_clip(mask: Any) -> Union[None, bool, List[Optional[Tuple[int, int]]]]:
    return index.rectangle(mask)


def fit_clip(clip: Any, space: Sequence[int]) -> Any:
    """A mask's ranges cut to the iteration space ``space``: None when it keeps everything, False
    when it keeps nothing (the instruction is then skipped)."""
    if clip is None or clip is False:
        return clip
    out: List[Optional[Tuple[int, int]]] = []
    for d, n in enumerate(space):
        r = clip[d] if d < len(clip) else None
        if r is None:
            out.append(None)
            continue
        lo, hi = max(r[0], 0), min(r[1], n)
        if hi <= lo:
            return False
        out.append(None if (lo, hi) == (0, n) else (lo, hi))
    return None if all(r is None for r in out) else out


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


class LoopReduce:
    """What ``nl.loop_reduce(x, op, ...)`` returns: assigned into a tile ``dst``, it becomes
    ``dst = dst op x`` in place (the destination is the reduction's other operand)."""

    __slots__ = ("x", "alu", "clip")

    def __init__(self, x: Any, alu: str, clip: Clip) -> None:
        if alu not in ("add", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor",
                       "logical_and", "logical_or", "logical_xor"):
            raise NkiValueError(f"nl.loop_reduce reduces with an associative, commutative operator, not `{alu}`")
        if not isinstance(x, View):
            raise NkiTypeError(f"nl.loop_reduce reduces a tile, got {type(x).__name__}")
        self.x, self.alu, self.clip = x, alu, clip

    MISUSE = ("the result of nl.loop_reduce must be assigned into the tile that accumulates it "
              "(acc[...] = nl.loop_reduce(x, op=np.add, loop_indices=[i]))")

    def __getattr__(self, name: str) -> Any:
        raise NkiTypeError(LoopReduce.MISUSE)


def assign(dst: View, value: Any) -> None:
    """``dst[...] = value``: a number fills it, a pending temporary is redirected into it, any
    other tile is copied (DMA when either side is in HBM)."""
    if isinstance(value, LoopReduce):
        if not dst.st.on_chip:
            raise unsupported("nl.loop_reduce into an HBM tensor (an accumulating DMA)")
        elementwise(value.alu, dst, value.x, None, value.clip, into=dst)
        return
    if isinstance(value, Number):
        if not dst.st.on_chip:
            raise unsupported("assigning a number to an HBM tensor")
        ops.memset(dst, value)
        return
    if not isinstance(value, View):
        if isinstance(value, np.ndarray):
            raise unsupported("assigning a numpy array inside a kernel", "pass it as a kernel argument")
        raise NkiTypeError(f"cannot assign a {type(value).__name__} to a tile")
    if value.same(dst) or is_nothing(value):
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
    if is_nothing(value):
        return target
    if alu == "add" and isinstance(value, View) and value.st.pending is not None \
            and value.st.pending[0]["op"] == "matmul" and target.st.buffer == "psum":
        # `+=` adds into what the region holds; into a region nothing wrote yet, the first
        # matmul starts the accumulation (as the compiler infers it).
        fresh = target.st.T and (target.off // target.st.T) not in target.st.written_blocks
        if redirect(target, value, accumulate=None if fresh else "add"):
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
        # Extra size-1 free dims (``t[ip, 0]`` of a [P, 1] column indexed as [P, 1, 1]) drop.
        base = max(small.pdim, 0)
        dims = list(small.dims[base:])
        while len(dims) > len(shape):
            ones = [d for d in range(len(dims) - 1, 0, -1) if dims[d][1] == 1]
            if not ones:
                return None
            del dims[ones[0]]
        small = small._new(small.off, tuple(small.dims[:base]) + tuple(dims), small.pdim)
        counts = small.tile_counts()
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
    if isinstance(x, index.Affine) or isinstance(y, index.Affine):
        raise unsupported("an index computed from a tile's values (dynamic indexing)")
    if not xv and not yv:
        raise NkiTypeError(f"nl.{alu} needs at least one tile")
    if xv and yv:
        px, py = x.tile_counts()[0], y.tile_counts()[0]
        if px != py and 1 in (px, py):
            # One operand on one partition: it is first copied to every partition.
            if px == 1:
                x = partition_broadcast(x, (py,) + tuple(x.tile_counts()[1:]))
            else:
                y = partition_broadcast(y, (px,) + tuple(y.tile_counts()[1:]))
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
        elif alu == "divide" and dtype not in dtypes.FLOATS:
            # True division, as Python's `/` and numpy's: integers give a float quotient (which
            # kernels then floor), not one rounded back to an integer.
            dtype = "fp32"
    dst = into if into is not None else temp(shape, dtype)
    space = dst.tile_counts()
    clip = fit_clip(clip, space)
    if clip is False:
        return dst if into is not None else nothing(dst)
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
        col = fp32_scalar(col)
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
    space = dst.tile_counts()
    clip = fit_clip(clip, space)
    if clip is False:
        return nothing(dst)
    rec = ops.activation(clipped(dst, clip, space), clipped(x, clip, space), func, scale, bias)
    return produced(dst, rec, clip)


def normalize_axes(axis: Any, ndim: int, trailing: bool = True) -> List[int]:
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
    if trailing and out != list(range(ndim - len(out), ndim)):
        raise NkiValueError(f"reduction axes {out} must be the last free dimensions of the tile")
    return out


def reduce(alu: str, x: View, axis: Any, dtype: Optional[str] = None, keepdims: bool = False, clip: Clip = None,
           negate: bool = False) -> View:
    if not isinstance(x, View):
        raise NkiTypeError(f"a reduction needs a tile, got {type(x).__name__}")
    shape = result_shape(x)
    axes = normalize_axes(axis, len(shape), trailing=False)
    out_shape = tuple(1 if d in axes else n for d, n in enumerate(shape)) if keepdims else \
        tuple(n for d, n in enumerate(shape) if d not in axes)
    dst = temp(out_shape, dtype or x.st.dtype)
    clip = fit_clip(clip, shape)
    if clip is False:
        return nothing(dst)
    src = clipped(x, clip, shape)
    d = dst.clip([clip[0]], dst.tile_counts()) if clip and clip[0] else dst
    n = len(shape)
    if axes != list(range(n - len(axes), n)):
        # Reduced axes in the middle: a free-dim permutation (a view) puts them last, and the
        # result is written without the kept size-1 dims.
        keep = [a for a in range(n) if a not in axes]
        base = max(src.pdim, 0)
        src = src._new(src.off, src.dims[:base] + tuple(src.dims[base + a] for a in keep + axes), src.pdim)
        d = either(d.conform(tuple(d.tile_counts()[a] for a in keep)), d) if keepdims else d
        axes, keepdims = list(range(len(keep), n)), False
    rec = ops.tensor_reduce(d, src, alu, axes, negate, keepdims)
    return produced(dst, rec, None)


def matmul_tile(stationary: View, moving: View, clip: Clip = None, perf_mode: str = "none",
                tile_position: Any = None, tile_size: Any = None) -> View:
    """``stationary.T @ moving`` into a new fp32 PSUM tile."""
    if not isinstance(stationary, View) or not isinstance(moving, View):
        raise NkiTypeError("matmul operands must be tiles")
    sc, mc = stationary.tile_counts(), moving.tile_counts()
    double = perf_mode.startswith("double_row")
    m = sc[-1] if double else _prod(sc[1:])
    n = mc[-1] if double else _prod(mc[1:])
    dst = temp((m, n), "fp32", "psum")
    clip = fit_clip(clip, (m, n))
    if clip is False:
        return nothing(dst)
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
    if engine == "dve":
        # VectorE transposes within 32 x 32 blocks; ntile moves the same values through the PE
        # (a transpose into PSUM, then a copy into SBUF where the Vector Engine would write).
        if c[0] > 32 or f > 32:
            raise NkiValueError(f"a Vector Engine transpose takes at most 32 x 32 elements, not {c[0]} x {f}")
        return copy_tile(transpose_tile(x), dtype or x.st.dtype)
    src = x if len(c) == 2 else either(x.conform((c[0], f)), x)
    if dtype is None and x.st.dtype not in ("fp32", "bf16", "fp16"):
        # The PE writes PSUM in fp32, or in a 16-bit source's own dtype: an fp8 (or other)
        # tile's transpose comes out fp32, exactly, for the copy that follows to cast.
        dtype = "fp32"
    dst = temp((f, c[0]), dtype or x.st.dtype, "psum")
    rec = ops.transpose(dst, src, engine)
    return produced(dst, rec, None)


def load(src: View, dtype: Optional[str] = None, clip: Clip = None) -> View:
    if isinstance(src, Indirect):
        # Rows named by a tile of indices: a gather into a new tile (a mask keeps some of the
        # index tile's rows and some columns: only those are gathered).
        shape = src.counts if len(src.counts) >= 2 else (src.counts[0], 1)
        dst = temp(shape, dtype or src.st.dtype)
        clip = fit_clip(clip, shape)
        if clip is False:
            return nothing(dst)
        return produced(dst, ops.dma_copy(clipped(dst, clip, shape), src.clip(clip)), clip)
    if not isinstance(src, View):
        raise NkiTypeError(f"nl.load needs a tensor, got {type(src).__name__}")
    if src.st.on_chip:
        raise NkiValueError("nl.load reads an HBM tensor; this one is already on chip (use nl.copy)")
    shape = src.counts if len(src.counts) >= 2 else (src.counts[0], 1)
    dst = temp(shape, dtype or src.st.dtype)
    clip = fit_clip(clip, shape)
    if clip is False:
        return nothing(dst)
    s = src if src.counts == shape else either(src.conform(shape), src)
    rec = ops.dma_copy(clipped(dst, clip, shape), clipped(s, clip, shape))
    return produced(dst, rec, clip)


def in_sbuf(x: Any) -> Any:
    """``x``, or for a PSUM tile a copy of it in a new SBUF tile (``tensor_copy``): the
    staging the compiler adds when an ``nl.*`` call (``nl.store``, ``nl.matmul``,
    ``nl.transpose``) is handed a PSUM tile the DMA or the PE cannot read."""
    if isinstance(x, View) and x.st.buffer == "psum":
        return copy_tile(x)
    return x


def store(dst: View, value: Any, clip: Clip = None) -> None:
    if isinstance(dst, Indirect):
        # Rows named by a tile of indices: a scatter of the tile (of the rows and columns a mask
        # keeps).
        if is_nothing(value):
            return
        if not isinstance(value, View):
            raise NkiTypeError(f"nl.store stores a tile, got {type(value).__name__}")
        space = value.tile_counts()
        clip = fit_clip(clip, space)
        if clip is False:
            return
        ops.dma_copy(dst.clip(clip), clipped(in_sbuf(value), clip, space))
        return
    if not isinstance(dst, View) or dst.st.on_chip:
        raise NkiValueError("nl.store writes an HBM tensor")
    if is_nothing(value):
        return
    if isinstance(value, Number) and clip is None:
        # A number stored into HBM: filled in SBUF (128 rows at a time) and copied out.
        counts = dst.counts if len(dst.counts) >= 2 else (dst.counts[0], 1)
        whole = either(dst.conform(counts), dst)
        for r0 in range(0, counts[0], 128):
            rows = min(128, counts[0] - r0)
            t = temp((rows,) + tuple(counts[1:]), dst.st.dtype)
            ops.memset(t, value)
            ops.dma_copy(whole.index((slice(r0, r0 + rows),)), t)
        return
    if not isinstance(value, View):
        if isinstance(value, LoopReduce):
            raise NkiTypeError(LoopReduce.MISUSE)
        raise NkiTypeError(f"nl.store stores a tile, got {type(value).__name__}")
    space = value.tile_counts()
    clip = fit_clip(clip, space)
    if clip is False:
        return
    d = either(dst.conform(space), dst)
    ops.dma_copy(clipped(d, clip, space), clipped(value, clip, space))


def copy_tile(x: View, dtype: Optional[str] = None, clip: Clip = None, engine: Optional[str] = None) -> View:
    if not isinstance(x, View):
        raise NkiTypeError(f"a copy needs a tile, got {type(x).__name__}")
    if not x.st.on_chip:
        return load(x, dtype, clip)
    dst = temp(result_shape(x), dtype or x.st.dtype)
    space = dst.tile_counts()
    clip = fit_clip(clip, space)
    if clip is False:
        return nothing(dst)
    rec = ops.tensor_copy(clipped(dst, clip, space), clipped(x, clip, space), engine)
    return produced(dst, rec, clip)


# Predicate dtypes a predicated copy reads as they are (nonzero copies).
_PREDICATES = ("uint8", "int8", "int16", "uint16", "int32", "uint32")


def predicate(cond: View) -> View:
    """``cond`` as a predicated copy reads it: an integer tile, or ``cond != 0`` as uint8."""
    if cond.st.dtype in _PREDICATES:
        return cond
    return elementwise("not_equal", cond, 0.0, "uint8")


def where(cond: Any, x: Any, y: Any, dtype: Optional[str] = None, clip: Clip = None) -> View:
    """``x`` where ``cond`` is nonzero, ``y`` elsewhere, into a new tile: ``y`` is copied (or
    filled) first, then ``x`` copied over it under the predicate (``tensor_copy_predicated``)."""
    if not isinstance(cond, View):
        raise NkiTypeError(f"nl.where needs a tile as its condition, got {type(cond).__name__}")
    for v, what in ((x, "x"), (y, "y")):
        if not isinstance(v, View) and dtypes.scalar_dtype(v) is None:
            raise NkiTypeError(f"nl.where: {what} must be a tile or a number, got {type(v).__name__}")
    if dtype is None:
        tiles = [v.st.dtype for v in (x, y) if isinstance(v, View)]
        # A Python number is weakly typed: the tile's dtype wins.
        dtype = (dtypes.promote(*tiles) if len(tiles) == 2 else tiles[0]) if tiles else \
            dtypes.promote(dtype_of(x), dtype_of(y))
    shape = result_shape(cond)
    dst = temp(shape, dtype)
    space = dst.tile_counts()
    c = fit_clip(clip, space)
    if c is False:
        return nothing(dst)
    d = clipped(dst, c, space)
    if isinstance(y, View):
        ops.tensor_copy(d, clipped(y, c, space))
    else:
        ops.memset(d, y)
    if isinstance(x, View) and x.st.dtype != dtype:
        x = copy_tile(x, dtype)
    src = clipped(x, c, space) if isinstance(x, View) else x
    # Not a pending result: redirecting the last record alone would lose the copy of ``y``.
    ops.tensor_copy_predicated(d, src, clipped(predicate(cond), c, space))
    return dst


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


def partition_broadcast(x: View, shape: Sequence[int]) -> View:
    """A ``[1, ...]`` tile copied to every one of ``shape[0]`` partitions: a K = 1 matmul of a
    row of ones against it (exact: each product is 1 * x), 512 columns per PSUM bank; an
    integer tile through HBM."""
    p = int(shape[0])
    counts = x.tile_counts()
    f = _prod(counts[1:])
    flat = either(x.conform((1, f)), x)
    if flat.counts != (1, f):
        raise unsupported("nl.broadcast_to across partitions of a strided tile")
    if x.st.dtype not in dtypes.FLOATS:
        # The PE multiplies floats only: an integer row goes out to HBM and comes back read
        # with partition stride 0 (two DMAs, bit for bit).
        scratch = temp((1, f), x.st.dtype, "private_hbm")
        ops.dma_copy(scratch, flat)
        dst = temp((p, f), x.st.dtype)
        ops.dma_copy(dst, scratch.broadcast(0, p))
        out = dst.reshape((p,) + tuple(counts[1:]))
        return out.conform(tuple(shape)) if out.counts != tuple(shape) else out
    ones = temp((1, p), x.st.dtype)
    ops.memset(ones, 1.0)
    dst = temp((p, f), x.st.dtype)
    for c0 in range(0, f, 512):
        w = min(512, f - c0)
        ps = temp((p, w), "fp32", "psum")
        ops.matmul(ps, ones, flat.index((slice(None), slice(c0, c0 + w))), None)
        ops.tensor_copy(dst.index((slice(None), slice(c0, c0 + w))), ps)
    out = dst.reshape((p,) + tuple(counts[1:]))
    return out.conform(tuple(shape)) if out.counts != tuple(shape) else out


def fp32_scalar(s: Any) -> Any:
    """An engine's per-partition scalar is fp32: a column of another dtype is cast first (the
    copy the compiler inserts); a number passes as it is."""
    if isinstance(s, View) and s.st.dtype != "fp32":
        return copy_tile(s, "fp32")
    return s
