"""The ``nki.isa`` calls both APIs spell alike beyond one record each: ``iota`` and
``affine_select`` patterns from affine index expressions, ``scalar_tensor_tensor``,
``tensor_scalar_reduce``, ``tensor_scalar_cumulative``'s accumulator register and the DMA
transposes (the tile-level helpers they build on are in ``values``)."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from . import index, ops, values
from .errors import NkiTypeError, NkiValueError, unsupported
from .trace import current
from .values import (Clip, clipped, copy_tile, fit_clip, fp32_scalar, load, nothing, produced, result_shape, temp,
                     transpose_tile)
from .view import View


def _pattern_of(expr: index.Affine, shape: Tuple[int, ...]) -> Tuple[List[List[int]], int, int]:
    """(free pattern, channel multiplier, offset) of an affine expression over a tile's grid."""
    n = len(shape)
    coef = [0] * n
    for g, c in expr._aligned(n):
        coef[g] = c
    pattern = [[coef[d], shape[d]] for d in range(1, n)]
    return pattern, coef[0] if n else 0, expr.const


def _clipped_pattern(expr: index.Affine, shape: Tuple[int, ...], clip: Clip) -> Tuple[List[List[int]], int, int]:
    """The affine pattern of ``expr`` over the part of a ``shape`` grid a mask keeps: the
    instruction numbers the kept rectangle from 0, so its offset takes the rectangle's corner."""
    if not clip:
        return _pattern_of(expr, shape)
    kept = tuple((r[1] - r[0]) if r else n for r, n in zip(list(clip) + [None] * len(shape), shape))
    pattern, cm, off = _pattern_of(expr, kept)
    n = len(shape)
    coef = [0] * n
    for g, c in expr._aligned(n):
        coef[g] = c
    off += sum(coef[d] * r[0] for d, r in enumerate(clip) if r and d < n)
    return pattern, cm, off


def iota_tile(expr: Any, dtype: str, clip: Clip = None) -> View:
    if isinstance(expr, int):
        expr = index.Affine.constant(expr)
    if not isinstance(expr, index.Affine):
        raise NkiTypeError("nisa.iota takes an affine expression of nl.arange indices")
    shape = expr.shape if len(expr.shape) >= 2 else ((expr.shape[0] if expr.shape else 1), 1)
    dst = temp(shape, dtype)
    space = tuple(dst.tile_counts())
    c = fit_clip(clip, space)
    if c is False:
        return nothing(dst)
    pattern, cm, off = _clipped_pattern(expr, space, c)
    rec = ops.iota(clipped(dst, c, space), pattern, off, cm)
    return produced(dst, rec, c)


def affine_select_tile(pred: Any, on_true: View, on_false: Any, dtype: Optional[str] = None,
                       clip: Clip = None) -> View:
    if isinstance(pred, index.Mask) and len(pred.preds) == 1 and not pred.disjunction:
        pred = pred.preds[0]
    if not isinstance(on_true, View):
        raise NkiTypeError("on_true_tile must be a tile")
    shape = result_shape(on_true)
    dst = temp(shape, dtype or on_true.st.dtype)
    c = fit_clip(clip, shape)
    if c is False:
        return nothing(dst)
    if isinstance(pred, (bool, np.bool_)):
        # A predicate of loop indices only: the whole tile is selected, or the whole is filled.
        rec = ops.tensor_copy(clipped(dst, c, shape), clipped(on_true, c, shape)) if pred else \
            ops.memset(clipped(dst, c, shape), on_false)
        return produced(dst, rec, c)
    if not isinstance(pred, index.Predicate):
        raise NkiValueError("nisa.affine_select takes one comparison of an affine expression of nl.arange indices "
                            "(not masks joined by '&' or '|')")
    pattern, cm, off = _clipped_pattern(pred.expr, tuple(shape), c)
    rec = ops.affine_select(clipped(dst, c, shape), clipped(on_true, c, shape), pattern, cm, off, pred.cmp, on_false)
    return produced(dst, rec, c)


def scalar_tensor_tensor(dst: View, data: View, op0: str, s0: Any, reverse0: bool, op1: str, data1: View,
                         reverse1: bool, engine: Optional[str] = None) -> ops.Rec:
    """``(data op0 s0) op1 data1`` (``data1 op1 (...)`` with ``reverse1``): the engine keeps the
    first result in fp32, so ntile writes it to an fp32 tile and combines it with ``data1`` in a
    second instruction (the same values; the model counts two passes over the tile)."""
    if not isinstance(data, View) or not isinstance(data1, View):
        raise NkiTypeError("scalar_tensor_tensor needs tiles as data and operand1")
    mid = temp(dst.tile_counts(), "fp32")
    ops.tensor_scalar(mid, data, op0, fp32_scalar(s0), reverse0, engine=engine)
    a, b = (data1, mid) if reverse1 else (mid, data1)
    return ops.tensor_tensor(dst, a, b, op1, engine)


def scalar_then_reduce(dst: View, data: View, op0: str, s0: Any, reverse0: bool, reduce_alu: str,
                       reduce_res: View, negate: bool = False) -> None:
    """``dst = data op0 s0`` and ``reduce_res = reduce(dst)`` along the free dims, as the engine
    computes it: the reduction reads the fp32 results (through an fp32 tile when ``dst`` is
    narrower), so two or three records stand for the one instruction."""
    mid = dst if dst.st.dtype == "fp32" else temp(dst.tile_counts(), "fp32")
    ops.tensor_scalar(mid, data, op0, s0, reverse0)
    n = len(mid.tile_counts())
    keep = len(reduce_res.tile_counts()) == n
    ops.tensor_reduce(reduce_res, mid, reduce_alu, list(range(1, n)), negate, keep)
    if mid is not dst:
        ops.tensor_copy(dst, mid)


_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def dma_transpose_view(src: View, axes: Any) -> View:
    """``src`` with its dims permuted by ``axes`` (the NKI defaults by rank when None): a DMA
    reading it transposes as it copies. Only HBM sources: an on-chip view keeps its partition
    dim first."""
    if not isinstance(src, View):
        raise NkiTypeError("dma_transpose needs a tensor")
    n = len(src.dims)
    order = tuple(axes) if axes is not None else _TRANSPOSE_AXES.get(n)
    if order is None or sorted(order) != list(range(n)):
        raise NkiValueError(f"dma_transpose: no transpose axes {axes} for a {n}-D tensor")
    if src.st.on_chip:
        raise unsupported("dma_transpose of an on-chip tile other than 2-D")
    return src._new(src.off, tuple(src.dims[a] for a in order), -1)


def dma_transpose_tile(src: View, axes: Any, dtype: Optional[str] = None) -> View:
    """``src`` transposed into a new SBUF tile: read transposed by the DMA from HBM; a 2-D
    on-chip tile goes through the Tensor Engine (the same values, bit for bit)."""
    if isinstance(src, View) and src.st.on_chip and len(src.tile_counts()) == 2 and axes in (None, (1, 0), [1, 0]):
        return copy_tile(transpose_tile(src), dtype)
    return load(dma_transpose_view(src, axes), dtype)


def cumulative(dst: Any, src: Any, op0: str, op1: str, imm0: Any, imm1: Any, cmd: Any,
               reverse0: bool = False) -> ops.Rec:
    """``nisa.tensor_scalar_cumulative``: along each partition ``reg = op1(op0(src[i], imm0),
    reg)`` and ``dst[i] = reg``. The register starts at ``op1``'s identity (``reset_reduce``, and
    ``idle``), at ``imm1`` (``load_reduce``), or where the previous cumulative left it
    (``reduce``): that is its result's last column, read back when the result was fp32 (so
    the value is the register's, unrounded) and nothing has touched it since."""
    from .enums import reduce_cmd  # noqa: PLC0415

    T = current()
    cmd = reduce_cmd(int(cmd)) if cmd is not None else reduce_cmd.idle
    if cmd in (reduce_cmd.idle, reduce_cmd.reset_reduce):
        if op1 not in ops.CUMULATIVE_START:
            raise unsupported(f"nisa.tensor_scalar_cumulative with op1={op1} (add, subtract, multiply, maximum or "
                              "minimum)")
        initial = ops.CUMULATIVE_START[op1]
    elif cmd == reduce_cmd.load_reduce:
        if imm1 is None:
            raise NkiValueError("nisa.tensor_scalar_cumulative with reduce_cmd=load_reduce needs imm1, the "
                                "register's starting value")
        initial = fp32_scalar(imm1)
    elif cmd == reduce_cmd.reduce:
        last = getattr(T, "vector_register", None)
        if last is None or last[1] != last[0].st.refs:
            raise unsupported("nisa.tensor_scalar_cumulative with reduce_cmd=reduce after anything but a "
                              "tensor_scalar_cumulative whose fp32 result is untouched since (ntile reads the "
                              "register back from that result's last column)")
        initial = last[0]
    else:
        raise unsupported(f"nisa.tensor_scalar_cumulative with reduce_cmd={cmd.name}")
    rec = ops.tensor_scalar_cumulative(dst, src, op0, fp32_scalar(imm0), reverse0, op1, initial)
    T.vector_register = None
    if isinstance(dst, View) and dst.st.dtype == "fp32":
        counts = dst.tile_counts()
        flat = dst.conform((counts[0], dst.nelem // counts[0]))
        if flat is not None:
            col = flat.index((slice(None), slice(flat.counts[1] - 1, flat.counts[1])))
            T.vector_register = (col, col.st.refs)
    return rec


def _reduce_max_into(reduce_res: Any, result: View, cmd: Any, reduce_op: Any, what: str) -> None:
    """The Vector Engine's maximum registers, one per partition: ``reset_reduce`` (or ``reset``)
    starts them at each partition's maximum of ``result``, ``reduce`` takes the maximum with
    it, ``idle`` leaves them; ``reduce_res``, when given, receives them (with ``idle``, the
    maximum of ``result`` alone). ntile keeps the registers in an fp32 ``[P, 1]`` SBUF tile of
    the trace, so a chain across instructions costs a reduction and a maximum per step."""
    code = int(cmd) if cmd is not None else 0
    if code == 4:
        raise unsupported(f"{what} with reduce_cmd=load_reduce (registers loaded from a tile)")
    if reduce_res is None and code == 0:
        return
    if reduce_op is not None and ops.alu_name(reduce_op, "reduce_op") != "maximum":
        raise NkiValueError(f"{what} reduces with maximum only, not {ops.alu_name(reduce_op, 'reduce_op')}")
    axes = list(range(1, len(result.tile_counts())))
    row_max = values.reduce("maximum", result, axes, "fp32", keepdims=True)
    T = current()
    regs = T.dve_max_registers
    if code in (1, 3):
        T.dve_max_registers = regs = row_max
    elif code == 2:
        if regs is None or regs.tile_counts()[0] != row_max.tile_counts()[0]:
            raise NkiValueError(f"{what} with reduce_cmd=reduce continues a reduction no earlier instruction of "
                                f"{row_max.tile_counts()[0]} partitions started (start it with reset_reduce)")
        T.dve_max_registers = regs = values.elementwise("maximum", regs, row_max, "fp32")
    else:
        regs = row_max
    # The registers are a tile of their own: assigning them copies (a redirect of the
    # instruction that wrote them would leave them unwritten for the next `reduce`).
    regs.st.pending = None
    if reduce_res is not None:
        values.assign(reduce_res, regs if regs.st.dtype == reduce_res.st.dtype else copy_tile(regs,
                                                                                               reduce_res.st.dtype))


def _column_or_number(v: Any, shape: Tuple[int, ...], what: str) -> Any:
    """A number, or a ``[P, 1]`` column read across ``shape``."""
    if not isinstance(v, View):
        return v
    c = v.tile_counts()
    if c[0] != shape[0] or int(np.prod(c[1:])) != 1:
        raise NkiValueError(f"{what} is a number or a [{shape[0]}, 1] column, not {list(c)}")
    b = values._broadcast(v, shape)
    if b is None:
        raise NkiValueError(f"{what} cannot be read across {list(shape)}")
    return b


def select_reduce(dst: Any, predicate: Any, on_true: Any, on_false: Any, reduce_res: Any, cmd: Any, reduce_op: Any,
                  reverse_pred: bool) -> View:
    """``dst = where(predicate, on_true, on_false)`` (the predicate negated with ``reverse_pred``)
    and, with ``reduce_res``, each partition's maximum of it: a fill of ``on_false``, a
    predicated copy and a reduction (VectorE's one instruction, modeled as the three)."""
    if not isinstance(on_true, View) or not isinstance(predicate, View):
        raise NkiTypeError("nisa.select_reduce takes tiles as predicate and on_true")
    shape = result_shape(on_true)
    if predicate.st.dtype in ("fp32", "bf16", "fp16", "tf32"):
        raise NkiTypeError(f"nisa.select_reduce's predicate is an integer tile, not {predicate.st.dtype}")
    out = dst if isinstance(dst, View) else temp(shape, on_true.st.dtype)
    fill = _column_or_number(on_false, shape, "nisa.select_reduce on_false")
    if isinstance(fill, View):
        ops.tensor_copy(out, fill)
    else:
        ops.memset(out, fill)
    ops.tensor_copy_predicated(out, on_true, predicate, reverse=bool(reverse_pred))
    _reduce_max_into(reduce_res, out, cmd, reduce_op, "nisa.select_reduce")
    return out


_RANGE_CMPS = ("equal", "less", "less_equal", "greater", "greater_equal")


def range_select(dst: Any, on_true: Any, cmp0: Any, cmp1: Any, bound0: Any, bound1: Any, reduce_res: Any, cmd: Any,
                 reduce_op: Any, range_start: Any, on_false: Any) -> View:
    """``dst[p, i] = on_true[p, i]`` where ``(i + range_start) cmp0 bound0[p]`` and
    ``(i + range_start) cmp1 bound1[p]``, else ``on_false`` (fp32's lowest by default), and with
    ``reduce_res`` each partition's maximum: the free index from ``iota``, two comparisons, a
    fill, a predicated copy and a reduction (VectorE's one instruction, modeled as those)."""
    if not isinstance(on_true, View):
        raise NkiTypeError("nisa.range_select takes a tile as on_true_tile")
    shape = result_shape(on_true)
    if len(shape) != 2:
        raise unsupported(f"nisa.range_select of a {len(shape)}-dimensional tile (ntile takes [P, F])")
    ops_ = []
    for c in (cmp0, cmp1):
        name = ops.alu_name(c, "comp_op")
        if name not in _RANGE_CMPS:
            raise NkiValueError(f"nisa.range_select compares with equal, less, less_equal, greater or greater_equal, "
                                f"not {name}")
        ops_.append(name)
    start = int(range_start) if not isinstance(range_start, index.Affine) else None
    if start is None:
        if range_start.terms:
            raise unsupported("nisa.range_select with a range_start that varies across the tile")
        start = int(range_start.const)
    free = index.Affine.axis(shape, 1, start)
    idx = iota_tile(free, "fp32")
    keep = None
    for name, bound in zip(ops_, (bound0, bound1)):
        if isinstance(bound, View):
            _column_or_number(bound, shape, "nisa.range_select bound")
            bound = fp32_scalar(bound)
        t = values.elementwise(name, idx, bound, "uint8")
        keep = t if keep is None else values.elementwise("bitwise_and", keep, t, "uint8")
    fill = float(np.finfo(np.float32).min) if on_false is None or on_false is Ellipsis else on_false
    fill = _column_or_number(fill, shape, "nisa.range_select on_false_value")
    out = dst if isinstance(dst, View) else temp(shape, on_true.st.dtype)
    if isinstance(fill, View):
        ops.tensor_copy(out, fill)
    else:
        ops.memset(out, fill)
    ops.tensor_copy_predicated(out, on_true, keep)
    _reduce_max_into(reduce_res, out, cmd, reduce_op, "nisa.range_select")
    return out
