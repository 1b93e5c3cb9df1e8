"""``nki.isa`` of the current NKI API: one instruction per call, ``dst`` first.

Each call appends one record to the trace (``nc_matmul`` a ``matmul`` with its ``accumulate``,
``nc_transpose`` a ``transpose`` ...) and returns an :class:`NkiInstruction` handle. Calls ntile
does not implement raise ``NotImplementedError`` naming them.
"""

from __future__ import annotations

from typing import Any, Optional

from .._nki import isa_ops, lang, ops, values
from .._nki.enums import dge_mode, dma_engine, engine, matmul_perf_mode, nc_version, nc_version_of, oob_mode, reduce_cmd
from .._nki.errors import NkiValueError, unsupported
from .._nki.trace import current
from . import language as _nl

__all__ = ["engine", "reduce_cmd", "dge_mode", "oob_mode", "nc_version", "matmul_perf_mode", "dma_engine"]

tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown


class NkiInstruction:
    """The handle of a traced instruction (``depends_on`` adds nothing: the builder orders by data)."""

    def __init__(self, rec: Any = None) -> None:
        self._rec = rec

    def depends_on(self, *producers: "NkiInstruction") -> "NkiInstruction":
        return self


class NkiValidationError(Exception):
    """Raised when hardware constraints are violated."""


def get_nc_version() -> nc_version:
    return nc_version_of(current().target)


def get_nc_sub_version() -> int:
    return 0


def dma_copy(dst: Any, src: Any, priority: Any = None, oob_mode: Any = oob_mode.error, dge_mode: Any = dge_mode.unknown,
             engine: Any = engine.unknown, name: Any = None) -> NkiInstruction:
    return NkiInstruction(ops.dma_copy(dst, src, skip=ops.oob_skips(oob_mode)))


def tensor_copy(dst: Any, src: Any, engine: Any = engine.unknown, name: Any = None, dtype: Any = None) -> NkiInstruction:
    """``dst = src`` on an engine, cast into ``dst``'s dtype. The destination tile fixes the
    output dtype: a ``dtype`` argument (kernels written for the legacy call pass one) is read
    as a name and otherwise not used, so ``dtype=nl.bfloat16`` into an fp32 tile writes fp32."""
    if dtype is not None:
        lang.dt(dtype)  # an unknown dtype name is still an error
    return NkiInstruction(ops.tensor_copy(dst, src, ops.engine_name(engine)))


def memset(dst: Any, value: Any, engine: Any = engine.unknown, name: Any = None) -> NkiInstruction:
    return NkiInstruction(ops.memset(dst, value, ops.engine_name(engine)))


def nc_matmul(dst: Any, stationary: Any, moving: Any, is_stationary_onezero: bool = False,
              is_moving_onezero: bool = False, is_transpose: bool = False, accumulate: Optional[bool] = None,
              tile_position: Any = (), tile_size: Any = (), perf_mode: Any = matmul_perf_mode.none,
              name: Any = None) -> NkiInstruction:
    if is_transpose:
        # ``moving`` is the identity: the PE passes ``stationary`` through, transposed.
        return NkiInstruction(ops.transpose(dst, stationary))
    mode = getattr(perf_mode, "value", perf_mode) or "none"
    if accumulate is not None:
        accumulate = bool(accumulate)
    return NkiInstruction(ops.matmul(dst, stationary, moving, accumulate, str(mode), tile_position or None,
                                     tile_size or None))


def dma_transpose(dst: Any, src: Any, axes: Any = None, priority: Any = None, dge_mode: Any = dge_mode.unknown,
                  oob_mode: Any = oob_mode.error, name: Any = None) -> NkiInstruction:
    """``dst = src`` transposed by ``axes``, by the DMA that copies it from HBM (a 2-D on-chip
    source goes through the Tensor Engine)."""
    if src.st.on_chip:
        dst[...] = isa_ops.dma_transpose_tile(src, axes)
        return NkiInstruction()
    return NkiInstruction(ops.dma_copy(dst, isa_ops.dma_transpose_view(src, axes)))


def nc_transpose(dst: Any, data: Any, engine: Any = engine.unknown, name: Any = None) -> NkiInstruction:
    if ops.engine_name(engine) == "dve":
        # Up to 32 x 32 on VectorE: the same values through the PE and a copy (values.transpose_tile).
        return NkiInstruction(values.copy_into(dst, values.transpose_tile(data, "dve")))
    return NkiInstruction(ops.transpose(dst, data, ops.engine_name(engine)))


def tensor_tensor(dst: Any, data1: Any, data2: Any, op: Any, engine: Any = engine.unknown,
                  name: Any = None) -> NkiInstruction:
    return NkiInstruction(ops.tensor_tensor(dst, data1, data2, ops.alu_name(op), ops.engine_name(engine)))


def nc_stream_shuffle(dst: Any, src: Any, shuffle_mask: Any, name: Any = None) -> NkiInstruction:
    """Within each quadrant of 32 partitions, ``dst`` partition ``i`` takes ``src`` partition
    ``shuffle_mask[i]`` (255 keeps it), on VectorE (a partition broadcast with ``[0] * 32``)."""
    return NkiInstruction(ops.stream_shuffle(dst, src, shuffle_mask))


def select_reduce(dst: Any, predicate: Any, on_true: Any, on_false: Any, reduce_res: Any = None,
                  reduce_cmd: Any = reduce_cmd.idle, reduce_op: Any = None, reverse_pred: bool = False,
                  name: Any = None) -> NkiInstruction:
    """``dst = where(predicate, on_true, on_false)`` (negated with ``reverse_pred``), and each
    partition's maximum into ``reduce_res`` when given, on VectorE."""
    isa_ops.select_reduce(dst, predicate, on_true, on_false, reduce_res, reduce_cmd, reduce_op, reverse_pred)
    return NkiInstruction(None)


def range_select(dst: Any, on_true_tile: Any, comp_op0: Any, comp_op1: Any, bound0: Any, bound1: Any,
                 reduce_cmd: Any = reduce_cmd.reset_reduce, reduce_res: Any = None, reduce_op: Any = None,
                 range_start: Any = 0, on_false_value: Any = None, name: Any = None) -> NkiInstruction:
    """``dst = on_true_tile`` where its free index plus ``range_start`` passes both comparisons
    with the ``[P, 1]`` bounds, else ``on_false_value`` (fp32's lowest); each partition's
    maximum into ``reduce_res`` when given, on VectorE."""
    isa_ops.range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_res, reduce_cmd, reduce_op,
                         range_start, on_false_value)
    return NkiInstruction(None)


def dropout(dst: Any, data: Any, prob: Any, name: Any = None) -> NkiInstruction:
    """``dst`` = ``data`` with each element replaced by 0 with probability ``prob`` (a number or
    a ``[P, 1]`` column), from ``nl.rand`` values (see ``nl.dropout``)."""
    result = lang.dropout(data, prob)
    values.assign(dst, result)
    return NkiInstruction(None)


def max8(dst: Any, src: Any, name: Any = None) -> NkiInstruction:
    """``dst`` (``[P, 8]``) = the 8 largest values of each partition of ``src``, descending, on
    VectorE."""
    return NkiInstruction(ops.top8("max8", dst, values.in_sbuf(src)))


def nc_find_index8(dst: Any, data: Any, vals: Any, name: Any = None) -> NkiInstruction:
    """``dst`` (``[P, 8]`` uint16 or uint32) = the position in each partition of ``data`` of each
    of its 8 ``vals`` (all ones where absent), on VectorE."""
    return NkiInstruction(ops.top8("find_index8", dst, values.in_sbuf(data), vals))


def nc_match_replace8(dst: Any, data: Any, vals: Any, imm: Any, dst_idx: Any = None, name: Any = None) -> NkiInstruction:
    """``dst`` = ``data`` with the first occurrence of each of its 8 ``vals`` replaced by ``imm``
    (their positions into ``dst_idx`` when given), on VectorE."""
    return NkiInstruction(ops.top8("match_replace8", dst, values.in_sbuf(data), vals, dst_idx, float(imm)))


def tensor_partition_reduce(dst: Any, op: Any, data: Any, name: Any = None) -> NkiInstruction:
    """``dst`` (one partition) = ``data`` reduced across its partitions by ``op``, on GpSimd."""
    return NkiInstruction(ops.tensor_partition_reduce(dst, data, ops.alu_name(op)))


def tensor_scalar_cumulative(dst: Any, src: Any, op0: Any, op1: Any, imm0: Any, imm1: Any = None,
                             reduce_cmd: Any = reduce_cmd.reset_reduce, reverse0: bool = False,
                             name: Any = None) -> NkiInstruction:
    """Along each partition, ``reg = op1(op0(src[i], imm0), reg)`` and ``dst[i] = reg``, on
    VectorE, the register from ``op1``'s identity, ``imm1`` (``load_reduce``) or the previous
    cumulative's (``reduce``)."""
    return NkiInstruction(isa_ops.cumulative(dst, src, ops.alu_name(op0, "op0"), ops.alu_name(op1, "op1"), imm0,
                                             imm1, reduce_cmd, reverse0))


def tensor_copy_predicated(dst: Any, src: Any, predicate: Any, reverse_pred: bool = False,
                           name: Any = None) -> NkiInstruction:
    """``dst`` takes ``src`` (a tile or a number) where ``predicate`` is nonzero (zero with
    ``reverse_pred``) and keeps its values elsewhere (VectorE)."""
    return NkiInstruction(ops.tensor_copy_predicated(dst, src, predicate, reverse_pred))


def tensor_tensor_scan(dst: Any, data0: Any, data1: Any, initial: Any, op0: Any, op1: Any, reverse0: bool = False,
                       reverse1: bool = False, name: Any = None) -> NkiInstruction:
    """``dst[:, i] = op1(op0(data0[:, i], dst[:, i - 1]), data1[:, i])`` from ``initial``, on VectorE."""
    return NkiInstruction(ops.tensor_tensor_scan(dst, data0, data1, initial, ops.alu_name(op0, "op0"),
                                                 ops.alu_name(op1, "op1"), reverse0, reverse1))


def tensor_scalar(dst: Any, data: Any, op0: Any, operand0: Any, reverse0: bool = False, op1: Any = None,
                  operand1: Any = None, reverse1: bool = False, engine: Any = engine.unknown,
                  name: Any = None) -> NkiInstruction:
    return NkiInstruction(ops.tensor_scalar(dst, data, ops.alu_name(op0, "op0"), operand0, reverse0,
                                            None if op1 is None else ops.alu_name(op1, "op1"), operand1, reverse1,
                                            ops.engine_name(engine)))


def scalar_tensor_tensor(dst: Any, data: Any, op0: Any, operand0: Any, op1: Any, operand1: Any,
                         reverse0: bool = False, reverse1: bool = False, engine: Any = engine.unknown,
                         name: Any = None) -> NkiInstruction:
    """``dst = (data op0 operand0) op1 operand1`` (a number or ``[P, 1]`` column, then a tile)."""
    return NkiInstruction(isa_ops.scalar_tensor_tensor(dst, data, ops.alu_name(op0, "op0"), operand0, reverse0,
                                                      ops.alu_name(op1, "op1"), operand1, reverse1,
                                                      ops.engine_name(engine)))


def tensor_reduce(dst: Any, op: Any, data: Any, axis: Any, negate: bool = False, keepdims: bool = False,
                  name: Any = None) -> NkiInstruction:
    axes = values.normalize_axes(axis, len(data.tile_counts()))
    return NkiInstruction(ops.tensor_reduce(dst, data, ops.alu_name(op), axes, negate, keepdims))


def _reduce_target(reduce_op: Any, reduce_res: Any, reduce_cmd_: Any, what: str) -> Any:
    cmd = reduce_cmd(int(reduce_cmd_)) if reduce_cmd_ is not None else reduce_cmd.idle
    if cmd in (reduce_cmd.reduce, reduce_cmd.load_reduce):
        raise unsupported(f"{what} with reduce_cmd={cmd.name} (reduction state kept across instructions)")
    if reduce_res is None:
        if cmd != reduce_cmd.idle:
            raise unsupported(f"{what} reducing into the engine's registers without reduce_res")
        return None
    if reduce_op is not None and ops.alu_name(reduce_op, "reduce_op") != "add":
        raise unsupported(f"{what} with a reduce_op other than nl.add")
    return reduce_res


def activation(dst: Any, op: Any, data: Any, bias: Any = None, scale: Any = 1.0, reduce_op: Any = None,
               reduce_res: Any = None, reduce_cmd: Any = reduce_cmd.idle, name: Any = None) -> NkiInstruction:
    red = _reduce_target(reduce_op, reduce_res, reduce_cmd, "nisa.activation")
    return NkiInstruction(ops.activation(dst, data, ops.act_name(op), scale, bias, red))


def activation_reduce(dst: Any, op: Any, data: Any, reduce_op: Any, reduce_res: Any, bias: Any = None,
                      scale: Any = 1.0, name: Any = None) -> NkiInstruction:
    red = _reduce_target(reduce_op, reduce_res, None, "nisa.activation_reduce")
    return NkiInstruction(ops.activation(dst, data, ops.act_name(op), scale, bias, red))


def tensor_scalar_reduce(dst: Any, data: Any, op0: Any, operand0: Any, reduce_op: Any, reduce_res: Any = None,
                         reverse0: bool = False, reduce_cmd: Any = reduce_cmd.reset_reduce, reduce_init: Any = None,
                         reduce_res_negate: bool = False, name: Any = None) -> NkiInstruction:
    """``dst = data op0 operand0`` with its row reduction (``reduce_op``) into ``reduce_res``."""
    cmd = reduce_cmd_of(reduce_cmd)
    if cmd != reduce_cmd.reset_reduce or reduce_init is not None or reduce_res is None:
        raise unsupported("nisa.tensor_scalar_reduce other than reset_reduce into reduce_res")
    isa_ops.scalar_then_reduce(dst, data, ops.alu_name(op0, "op0"), operand0, reverse0,
                              ops.alu_name(reduce_op, "reduce_op"), reduce_res, reduce_res_negate)
    return NkiInstruction()


def reduce_cmd_of(x: Any) -> reduce_cmd:
    return reduce_cmd(int(x)) if x is not None else reduce_cmd.idle


def reciprocal(dst: Any, data: Any, name: Any = None) -> NkiInstruction:
    return NkiInstruction(ops.activation(dst, data, "reciprocal"))


def iota(dst: Any, pattern: Any, offset: int = 0, channel_multiplier: int = 0, name: Any = None) -> NkiInstruction:
    return NkiInstruction(ops.iota(dst, _pattern(pattern), offset, channel_multiplier))


def affine_select(dst: Any, pattern: Any, channel_multiplier: int, on_true_tile: Any, on_false_value: Any,
                  cmp_op: Any = _nl.equal, offset: int = 0, name: Any = None) -> NkiInstruction:
    return NkiInstruction(ops.affine_select(dst, on_true_tile, _pattern(pattern), channel_multiplier, offset,
                                            ops.alu_name(cmp_op, "cmp_op"), on_false_value))


def bn_stats(dst: Any, data: Any, name: Any = None) -> NkiInstruction:
    return NkiInstruction(ops.bn_stats(dst, data))


def bn_aggr(dst: Any, data: Any, name: Any = None) -> NkiInstruction:
    return NkiInstruction(ops.bn_aggr(dst, data))


def _pattern(pattern: Any) -> list:
    try:
        return [[int(s), int(n)] for s, n in pattern]
    except (TypeError, ValueError):
        raise NkiValueError(f"a pattern is a list of [step, count] pairs, got {pattern!r}") from None


for _name in ("nc_matmul_mx",
              "activate2", "local_gather", "nc_n_gather", "rng", "set_rng_seed", "rand_set_state", "rand_get_state", "rand2",
              "exponential", "sequence_bounds",
              "core_barrier", "dma_compute", "quantize_mx", "sendrecv",
              "register_alloc", "register_move", "register_load", "register_store",
              "nonzero_with_count", "topk"):
    globals()[_name] = lang.refused(f"nki.isa.{_name}")
del _name
