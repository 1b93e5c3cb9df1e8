"""``neuronxcc.nki.isa`` (legacy NKI API): each call is one instruction and returns its result
tile (``nc_matmul`` a PSUM tile, the others an SBUF tile); assigning the result into a tile makes
the instruction write there (``psum[...] += nisa.nc_matmul(a, b)`` accumulates). Calls ntile does
not implement raise ``NotImplementedError`` naming them."""

from __future__ import annotations

from typing import Any, Optional

from ...._nki import isa_ops, lang, ops, values
from ...._nki.enums import dge_mode, dma_engine, engine, matmul_perf_mode, nc_version, nc_version_of, oob_mode, reduce_cmd
from ...._nki.errors import NkiTypeError, unsupported
from ...._nki.indirect import Indirect
from ...._nki.trace import current
from ...._nki.values import clipped, fit_clip, nothing, produced, temp
from ...._nki.view import View
from .. import language as _nl

__all__ = ["engine", "reduce_cmd", "dge_mode", "oob_mode", "nc_version", "matmul_perf_mode", "dma_engine"]

tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown
fp32 = _nl.fp32


def get_nc_version() -> nc_version:
    return nc_version_of(current().target)


def _dtype(dtype: Any, like: Any) -> str:
    return lang.dt(dtype) or values.dtype_of(like) or "fp32"


def _whole(mask: Any, like: View, what: str) -> bool:
    """Whether an instruction whose ``mask`` can only keep all or nothing runs: True for no mask
    or one keeping the whole tile (a kernel's ``mask=q_tile >= k_tile`` on loop indices), False
    for one keeping nothing; a mask keeping part of the tile is refused with the instruction."""
    c = fit_clip(lang.clip(mask), like.tile_counts()) if isinstance(like, View) else lang.clip(mask)
    if c is not None and c is not False:
        raise unsupported(f"{what} with a mask that keeps part of the tile")
    return c is None


def nc_matmul(stationary: Any, moving: Any, *, is_stationary_onezero: bool = False, is_moving_onezero: bool = False,
              is_transpose: bool = False, tile_position: Any = (), tile_size: Any = (), mask: Any = None,
              perf_mode: Any = None, **kwargs: Any) -> View:
    """``stationary.T @ moving`` into a new fp32 PSUM tile. With ``is_transpose`` (``moving`` the
    identity) the PE passes ``stationary`` through transposed: a transpose, whose PSUM result
    keeps a 16-bit source's dtype."""
    if is_transpose:
        c = values.fit_clip(lang.clip(mask), stationary.tile_counts()[::-1])
        if c is False:  # a mask that keeps nothing: no instruction
            return values.nothing(values.temp(stationary.tile_counts()[::-1], "fp32", "psum"))
        if c is not None:
            raise unsupported("nisa.nc_matmul(is_transpose=True) with a mask that keeps part of the tile")
        return values.transpose_tile(stationary)
    mode = getattr(perf_mode, "value", perf_mode) or "none"
    # The PE reads SBUF: a PSUM operand (an nc_transpose result) is staged as the compiler does.
    stationary, moving = values.in_sbuf(stationary), values.in_sbuf(moving)
    return values.matmul_tile(stationary, moving, lang.clip(mask), str(mode), tile_position or None,
                              tile_size or None)


def nc_transpose(data: Any, *, mask: Any = None, dtype: Any = None, engine: Any = engine.unknown, **kwargs: Any) -> View:
    if not _whole(mask, data, "nisa.nc_transpose"):
        return values.nothing(temp(data.tile_counts()[::-1], lang.dt(dtype) or "fp32", "psum"))
    return values.transpose_tile(data, ops.engine_name(engine), lang.dt(dtype))


def tensor_copy(src: Any, *, mask: Any = None, dtype: Any = None, engine: Any = engine.unknown, **kwargs: Any) -> View:
    return values.copy_tile(src, lang.dt(dtype), lang.clip(mask), ops.engine_name(engine))


def memset(shape: Any, value: Any, dtype: Any, *, mask: Any = None, engine: Any = engine.unknown,
           **kwargs: Any) -> View:
    dst = temp(lang.shapes_from(shape), lang.dt(dtype))
    c = fit_clip(lang.clip(mask), dst.tile_counts())
    if c is False:
        return nothing(dst)
    rec = ops.memset(clipped(dst, c, dst.tile_counts()), value, ops.engine_name(engine))
    return produced(dst, rec, c)


def tensor_tensor(data1: Any, data2: Any, op: Any, *, dtype: Any = None, mask: Any = None,
                  engine: Any = engine.unknown, **kwargs: Any) -> View:
    return values.elementwise(ops.alu_name(op), data1, data2, lang.dt(dtype), lang.clip(mask),
                              engine=ops.engine_name(engine))


def tensor_tensor_scan(data0: Any, data1: Any, initial: Any, op0: Any, op1: Any, reverse0: bool = False,
                       reverse1: bool = False, *, dtype: Any = None, mask: Any = None, **kwargs: Any) -> View:
    """The scan of ``data0`` and ``data1`` along each partition, into a new tile:
    ``result[:, i] = op1(op0(data0[:, i], result[:, i - 1]), data1[:, i])`` from ``initial``."""
    if not isinstance(data0, View) or not isinstance(data1, View):
        raise NkiTypeError("nisa.tensor_tensor_scan needs tiles as data0 and data1")
    dst = temp(data0.tile_counts(), _dtype(dtype, data0))
    if not _whole(mask, data0, "nisa.tensor_tensor_scan"):
        return dst
    rec = ops.tensor_tensor_scan(dst, data0, data1, initial, ops.alu_name(op0, "op0"), ops.alu_name(op1, "op1"),
                                 reverse0, reverse1)
    return values.produced(dst, rec, None)


def tensor_scalar(data: Any, op0: Any, operand0: Any, reverse0: bool = False, op1: Any = None, operand1: Any = None,
                  reverse1: bool = False, *, dtype: Any = None, mask: Any = None, engine: Any = engine.unknown,
                  **kwargs: Any) -> View:
    if not isinstance(data, View):
        raise NkiTypeError("nisa.tensor_scalar needs a tile as data")
    dst = temp(data.tile_counts(), _dtype(dtype, data))
    space = dst.tile_counts()
    c = fit_clip(lang.clip(mask), space)
    if c is False:
        return nothing(dst)
    operand0, operand1 = values.fp32_scalar(operand0), values.fp32_scalar(operand1)
    s0 = operand0.clip([c[0]], space[:1]) if c and isinstance(operand0, View) else operand0
    s1 = operand1.clip([c[0]], space[:1]) if c and isinstance(operand1, View) else operand1
    rec = ops.tensor_scalar(clipped(dst, c, space), clipped(data, c, space), ops.alu_name(op0, "op0"), s0, reverse0,
                            None if op1 is None else ops.alu_name(op1, "op1"), s1, reverse1, ops.engine_name(engine))
    return produced(dst, rec, c)


def tensor_reduce(op: Any, data: Any, axis: Any, *, mask: Any = None, dtype: Any = None, negate: bool = False,
                  keepdims: bool = False, **kwargs: Any) -> View:
    return values.reduce(ops.alu_name(op), data, axis, lang.dt(dtype), keepdims, lang.clip(mask), negate)


def activation(op: Any, data: Any, *, bias: Any = None, scale: Any = 1.0, reduce_op: Any = None,
               reduce_res: Any = None, reduce_cmd: Any = reduce_cmd.idle, mask: Any = None, dtype: Any = None,
               **kwargs: Any) -> View:
    """``op(data * scale + bias)`` on the scalar engine; with ``reduce_res`` the row sums of the
    results are written there too."""
    cmd = reduce_cmd if reduce_cmd is not None else 0
    if int(cmd) in (2, 4):
        raise unsupported(f"nisa.activation with reduce_cmd={getattr(cmd, 'name', cmd)} (reduction state kept "
                          "across instructions)")
    if reduce_res is None and int(cmd) not in (0,):
        raise unsupported("nisa.activation reducing into the engine's registers without reduce_res")
    if reduce_res is not None and reduce_op is not None and ops.alu_name(reduce_op, "reduce_op") != "add":
        raise unsupported("nisa.activation with a reduce_op other than nl.add")
    return _activation(op, data, bias, scale, reduce_res, mask, dtype)


def activation_reduce(op: Any, data: Any, *, reduce_op: Any, reduce_res: Any, bias: Any = None, scale: Any = 1.0,
                      mask: Any = None, dtype: Any = None, **kwargs: Any) -> View:
    if reduce_op is not None and ops.alu_name(reduce_op, "reduce_op") != "add":
        raise unsupported("nisa.activation_reduce with a reduce_op other than nl.add")
    return _activation(op, data, bias, scale, reduce_res, mask, dtype)


def _activation(op: Any, data: Any, bias: Any, scale: Any, reduce_res: Optional[View], mask: Any, dtype: Any) -> View:
    if not isinstance(data, View):
        raise NkiTypeError("nisa.activation needs a tile as data")
    func = ops.act_name(op)
    dst = temp(data.tile_counts(), _dtype(dtype, data))
    space = dst.tile_counts()
    c = fit_clip(lang.clip(mask), space)
    if c is False:
        return nothing(dst)
    b = bias.clip([c[0]], space[:1]) if c and isinstance(bias, View) else bias
    s = scale.clip([c[0]], space[:1]) if c and isinstance(scale, View) else scale
    r = reduce_res.clip([c[0]], space[:1]) if c and isinstance(reduce_res, View) else reduce_res
    rec = ops.activation(clipped(dst, c, space), clipped(data, c, space), func, s, b, r)
    return produced(dst, rec, c)


def scalar_tensor_tensor(*, data: Any, op0: Any, operand0: Any, op1: Any, operand1: Any, reverse0: bool = False,
                         reverse1: bool = False, dtype: Any = None, mask: Any = None, engine: Any = engine.unknown,
                         **kwargs: Any) -> View:
    """``(data op0 operand0) op1 operand1``: a number or ``[P, 1]`` column, then a tile."""
    if not isinstance(data, View):
        raise NkiTypeError("nisa.scalar_tensor_tensor needs a tile as data")
    dst = temp(data.tile_counts(), _dtype(dtype, data))
    space = dst.tile_counts()
    c = fit_clip(lang.clip(mask), space)
    if c is False:
        return nothing(dst)
    s0 = operand0.clip([c[0]], space[:1]) if c and isinstance(operand0, View) else operand0
    d1 = clipped(operand1, c, space) if isinstance(operand1, View) else operand1
    rec = isa_ops.scalar_tensor_tensor(clipped(dst, c, space), clipped(data, c, space), ops.alu_name(op0, "op0"), s0,
                                      reverse0, ops.alu_name(op1, "op1"), d1, reverse1, ops.engine_name(engine))
    return produced(dst, rec, c)


def tensor_copy_predicated(*, src: Any, dst: Any, predicate: Any, reverse_pred: bool = False, mask: Any = None,
                           dtype: Any = None, **kwargs: Any) -> None:
    """``dst`` takes ``src`` (a tile or a number) where ``predicate`` is nonzero (zero with
    ``reverse_pred``) and keeps its values elsewhere, in place (VectorE)."""
    if not isinstance(dst, View) or not isinstance(predicate, View):
        raise NkiTypeError("nisa.tensor_copy_predicated needs tiles as dst and predicate")
    space = dst.tile_counts()
    c = fit_clip(lang.clip(mask), space)
    if c is False:
        return
    s = clipped(src, c, space) if isinstance(src, View) else src
    ops.tensor_copy_predicated(clipped(dst, c, space), s, clipped(values.predicate(predicate), c, space), reverse_pred)


def nc_stream_shuffle(src: Any, dst: Any, shuffle_mask: Any, *, dtype: Any = None, mask: Any = None,
                      **kwargs: Any) -> None:
    """In place: within each quadrant of 32 partitions, ``dst`` partition ``i`` takes ``src``
    partition ``shuffle_mask[i]`` (255 keeps it), on VectorE."""
    if mask is not None and not _whole(mask, dst, "nisa.nc_stream_shuffle"):
        return
    ops.stream_shuffle(dst, src, shuffle_mask)


def tensor_scalar_reduce(*, data: Any, op0: Any, operand0: Any, reduce_op: Any, reduce_res: Any,
                         reverse0: bool = False, dtype: Any = None, mask: Any = None, **kwargs: Any) -> View:
    """``data op0 operand0``, with its row reduction (``reduce_op``) written to ``reduce_res``."""
    if not isinstance(data, View):
        raise NkiTypeError("nisa.tensor_scalar_reduce needs a tile as data")
    dst = temp(data.tile_counts(), _dtype(dtype, data))
    if not _whole(mask, data, "nisa.tensor_scalar_reduce"):
        return dst
    isa_ops.scalar_then_reduce(dst, data, ops.alu_name(op0, "op0"), operand0, reverse0,
                              ops.alu_name(reduce_op, "reduce_op"), reduce_res)
    return dst


def dma_transpose(src: Any, *, axes: Any = None, mask: Any = None, dtype: Any = None, **kwargs: Any) -> View:
    """``src`` (HBM) transposed into a new SBUF tile by the DMA that loads it."""
    if mask is not None and isinstance(src, View) and not _whole(mask, src, "nisa.dma_transpose"):
        return values.nothing(temp(src.tile_counts()[::-1], lang.dt(dtype) or src.st.dtype))
    return isa_ops.dma_transpose_tile(src, axes, lang.dt(dtype))


def reciprocal(data: Any, *, dtype: Any = None, mask: Any = None, **kwargs: Any) -> View:
    return values.unary("reciprocal", data, lang.dt(dtype), lang.clip(mask))


def affine_select(pred: Any, on_true_tile: Any, on_false_value: Any, *, mask: Any = None, dtype: Any = None,
                  **kwargs: Any) -> View:
    """``pred ? on_true_tile : on_false_value`` with ``pred`` one comparison of an affine
    expression of ``nl.arange`` indices (a causal mask is ``iy <= ix``)."""
    # GpSimd cannot read PSUM: a PSUM tile (a matmul's scores) is copied to SBUF first.
    return isa_ops.affine_select_tile(pred, values.in_sbuf(on_true_tile), on_false_value, lang.dt(dtype),
                                     lang.clip(mask))


def iota(expr: Any, dtype: Any, *, mask: Any = None, **kwargs: Any) -> View:
    return isa_ops.iota_tile(expr, lang.dt(dtype) or "int32", lang.clip(mask))


def bn_stats(data: Any, *, mask: Any = None, dtype: Any = None, **kwargs: Any) -> View:
    """Per-partition mean/variance statistics of ``data`` (6 values per partition)."""
    return _stats(ops.bn_stats, 6, data, mask, dtype)


def bn_aggr(data: Any, *, mask: Any = None, dtype: Any = None, **kwargs: Any) -> View:
    """The mean and variance per partition from ``bn_stats`` results (2 values per partition)."""
    return _stats(ops.bn_aggr, 2, data, mask, dtype)


def _stats(emit: Any, width: int, data: Any, mask: Any, dtype: Any) -> View:
    if not isinstance(data, View):
        raise NkiTypeError("bn_stats / bn_aggr need a tile as data")
    space = data.tile_counts()
    dst = temp((space[0], width), _dtype(dtype, data))
    c = fit_clip(lang.clip(mask), space)
    if c is False:
        return nothing(dst)
    d = dst.clip([c[0]], space[:1]) if c and c[0] else dst
    return produced(dst, emit(d, clipped(data, c, space)), None)


def dma_copy(*, dst: Any, src: Any, mask: Any = None, dst_rmw_op: Any = None, oob_mode: Any = oob_mode.error,
             dge_mode: Any = dge_mode.unknown, **kwargs: Any) -> None:
    if isinstance(dst, Indirect) or isinstance(src, Indirect):
        if mask is not None:
            raise unsupported("nisa.dma_copy of rows named by a tile of indices with a mask")
        add = dst_rmw_op is not None and ops.alu_name(dst_rmw_op, "dst_rmw_op") == "add"
        if dst_rmw_op is not None and not add:
            raise unsupported("nisa.dma_copy with a dst_rmw_op other than add")
        ops.dma_copy(dst, src, add, ops.oob_skips(oob_mode))
        return
    if dst_rmw_op is not None:
        raise unsupported("nisa.dma_copy with dst_rmw_op (a read-modify-write DMA) other than adding into rows "
                          "named by a tile of indices")
    space = src.tile_counts() if src.st.on_chip else dst.tile_counts() if dst.st.on_chip else dst.counts
    c = fit_clip(lang.clip(mask), space)
    if c is False:
        return
    ops.dma_copy(clipped(dst, c, space), clipped(src, c, space), skip=ops.oob_skips(oob_mode))


def tensor_scalar_cumulative(*, dst: Any, src: Any, op0: Any, op1: Any, imm0: Any, imm1: Any = None,
                             reduce_cmd: Any = reduce_cmd.reset_reduce, reverse0: bool = False, mask: Any = None,
                             **kwargs: Any) -> None:
    """In place: along each partition ``reg = op1(op0(src[i], imm0), reg)`` and ``dst[i] =
    reg`` on VectorE (the register from ``op1``'s identity, ``imm1`` or the previous one's)."""
    if mask is not None and not _whole(mask, dst, "nisa.tensor_scalar_cumulative"):
        return
    isa_ops.cumulative(dst, src, ops.alu_name(op0, "op0"), ops.alu_name(op1, "op1"), imm0, imm1, reduce_cmd,
                       reverse0)


def tensor_partition_reduce(op: Any, data: Any, *, mask: Any = None, dtype: Any = None, **kwargs: Any) -> View:
    """``data`` reduced across its partitions by ``op`` into a new one-partition tile, on GpSimd."""
    if not isinstance(data, View):
        raise NkiTypeError("nisa.tensor_partition_reduce needs a tile as data")
    dst = temp((1,) + tuple(data.tile_counts()[1:]), lang.dt(dtype) or data.st.dtype)
    if not _whole(mask, data, "nisa.tensor_partition_reduce"):
        return nothing(dst)
    return produced(dst, ops.tensor_partition_reduce(dst, values.in_sbuf(data), ops.alu_name(op)), None)


def _top8(mode: str, data: Any, shape: Any, dtype: str, mask: Any, vals: Any = None, dst_idx: Any = None,
          imm: float = 0.0) -> View:
    """A new tile of ``shape`` written by the ``mode`` search over ``data``; a mask keeps part of
    ``data`` (and the partitions and, for match_replace8, the elements of the result it
    writes)."""
    if not isinstance(data, View):
        raise NkiTypeError(f"{ops.TOP8_NAMES[mode]} needs a tile as data")
    dst = temp(shape, dtype)
    space = data.tile_counts()
    c = fit_clip(lang.clip(mask), space)
    if c is False:
        return nothing(dst)
    src = clipped(values.in_sbuf(data), c, space)
    if not c:
        out = dst
    elif mode == "match_replace8":
        out = clipped(dst, c, dst.tile_counts())
    else:
        out = clipped(dst, [c[0]] + [None] * (len(dst.tile_counts()) - 1), dst.tile_counts()) if c[0] else dst
    if isinstance(vals, View) and c and c[0]:
        vals = clipped(vals, [c[0]] + [None] * (len(vals.tile_counts()) - 1), vals.tile_counts())
    return produced(dst, ops.top8(mode, out, src, vals, dst_idx, imm), None)


def max8(*, src: Any, mask: Any = None, dtype: Any = None, **kwargs: Any) -> View:
    """The 8 largest values of each partition of ``src``, in descending order, on VectorE."""
    if not isinstance(src, View):
        raise NkiTypeError("nisa.max8 needs a tile as src")
    return _top8("max8", src, (src.tile_counts()[0], 8), lang.dt(dtype) or src.st.dtype, mask)


def nc_find_index8(*, data: Any, vals: Any, mask: Any = None, dtype: Any = None, **kwargs: Any) -> View:
    """The position in each partition of ``data`` of each of its 8 ``vals`` (uint32 unless
    ``dtype`` says uint16; all ones where a value is absent), on VectorE."""
    if not isinstance(data, View):
        raise NkiTypeError("nisa.nc_find_index8 needs a tile as data")
    return _top8("find_index8", data, (data.tile_counts()[0], 8), lang.dt(dtype) or "uint32", mask, vals)


def nc_match_replace8(*, data: Any, vals: Any, imm: Any, dst_idx: Any = None, mask: Any = None, dtype: Any = None,
                      **kwargs: Any) -> View:
    """``data`` with the first occurrence of each of its 8 ``vals`` replaced by ``imm`` (their
    positions into ``dst_idx`` when given), on VectorE."""
    if not isinstance(data, View):
        raise NkiTypeError("nisa.nc_match_replace8 needs a tile as data")
    return _top8("match_replace8", data, data.tile_counts(), lang.dt(dtype) or data.st.dtype, mask, vals, dst_idx,
                 float(imm))


def select_reduce(dst: Any, predicate: Any, on_true: Any, on_false: Any, reduce_res: Any = None,
                  reduce_cmd: Any = reduce_cmd.idle, reduce_op: Any = None, reverse_pred: bool = False,
                  mask: Any = None, dtype: Any = None, **kwargs: Any) -> View:
    """``dst = where(predicate, on_true, on_false)`` (negated with ``reverse_pred``), and each
    partition's maximum into ``reduce_res`` when given, on VectorE."""
    if not _whole(mask, on_true, "nisa.select_reduce"):
        return dst
    return isa_ops.select_reduce(dst, predicate, on_true, on_false, reduce_res, reduce_cmd, reduce_op, reverse_pred)


def range_select(*, on_true_tile: Any, comp_op0: Any, comp_op1: Any, bound0: Any, bound1: Any,
                 reduce_cmd: Any = reduce_cmd.reset_reduce, reduce_res: Any = None, reduce_op: Any = None,
                 range_start: Any = 0, on_false_value: Any = None, mask: Any = None, dtype: Any = None,
                 **kwargs: Any) -> View:
    """``on_true_tile`` where its free index plus ``range_start`` passes both comparisons with
    the ``[P, 1]`` bounds, else ``on_false_value`` (fp32's lowest), into a new tile; each
    partition's maximum into ``reduce_res`` when given, on VectorE."""
    if not isinstance(on_true_tile, View):
        raise NkiTypeError("nisa.range_select takes a tile as on_true_tile")
    out = temp(on_true_tile.tile_counts(), lang.dt(dtype) or on_true_tile.st.dtype)
    if not _whole(mask, on_true_tile, "nisa.range_select"):
        return nothing(out)
    return isa_ops.range_select(out, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_res, reduce_cmd,
                                reduce_op, range_start, on_false_value)


def dropout(data: Any, prob: Any, *, mask: Any = None, dtype: Any = None, **kwargs: Any) -> View:
    """``data`` with each element replaced by 0 with probability ``prob`` (a number or a
    ``[P, 1]`` column), from ``nl.rand`` values (see ``nl.dropout``)."""
    return lang.dropout(data, prob, dtype, mask)


for _name in ("local_gather", "sequence_bounds", "tensor_copy_dynamic_src", "tensor_copy_dynamic_dst", "builtin_custom_op"):
    globals()[_name] = lang.refused(f"neuronxcc.nki.isa.{_name}")
del _name
