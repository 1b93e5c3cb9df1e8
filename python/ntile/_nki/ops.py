"""One record builder per instruction of the trace format, shared by both API generations.

Each builder takes resolved views, numbers and trace names, appends one record to the current
trace and returns it. Operand names follow the format (``docs/nki-trace.md`` on the Rust side);
the builders check only what the tracer must know (that operands are views of the right rank and
element count, that names are known); the kernel builder checks the hardware rules.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from .errors import NkiTypeError, NkiValueError, unsupported
from .indirect import Indirect
from .trace import current, number
from .view import View

Rec = Dict[str, Any]

# ALU operators of the format (NKI's names) and what else kernels pass for them.
ALU = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal", "not_equal",
       "greater", "greater_equal", "less", "less_equal", "bitwise_and", "bitwise_or", "bitwise_xor",
       "left_shift", "right_shift", "abs", "square", "relu", "rsqrt", "reciprocal", "mod", "fmod", "logical_and",
       "logical_or", "logical_xor", "abs_max", "abs_min")
ACT = ("copy", "exp", "log", "tanh", "sigmoid", "relu", "gelu", "gelu_apprx_tanh", "silu", "softplus",
       "square", "sqrt", "rsqrt", "reciprocal", "abs", "sign", "erf", "sin", "gelu_dx", "gelu_apprx_sigmoid",
       "gelu_apprx_sigmoid_dx", "silu_dx", "mish", "erf_dx", "arctan", "cos", "tan", "floor", "ceil", "trunc")
ENGINES = {"act", "dve", "pool", "pe", "sp"}


def _numpy_ops() -> Dict[int, str]:
    pairs = [(np.add, "add"), (np.subtract, "subtract"), (np.multiply, "multiply"), (np.divide, "divide"),
             (np.true_divide, "divide"), (np.maximum, "maximum"), (np.fmax, "maximum"), (np.minimum, "minimum"),
             (np.fmin, "minimum"), (np.power, "power"), (np.equal, "equal"), (np.not_equal, "not_equal"),
             (np.greater, "greater"), (np.greater_equal, "greater_equal"), (np.less, "less"),
             (np.less_equal, "less_equal"), (np.bitwise_and, "bitwise_and"), (np.bitwise_or, "bitwise_or"),
             (np.bitwise_xor, "bitwise_xor"), (np.logical_and, "logical_and"), (np.logical_or, "logical_or"),
             (np.logical_xor, "logical_xor"), (np.mod, "mod"), (np.fmod, "fmod"), (np.left_shift, "left_shift"), (np.right_shift, "right_shift"),
             (np.max, "maximum"), (np.amax, "maximum"), (np.min, "minimum"), (np.amin, "minimum"),
             (np.sum, "add"), (np.prod, "multiply")]
    return {id(f): n for f, n in pairs}


def _numpy_acts() -> Dict[int, str]:
    pairs = [(np.exp, "exp"), (np.log, "log"), (np.tanh, "tanh"), (np.sqrt, "sqrt"), (np.reciprocal, "reciprocal"),
             (np.abs, "abs"), (np.absolute, "abs"), (np.sign, "sign"), (np.sin, "sin"), (np.square, "square"),
             (np.copy, "copy"), (np.arctan, "arctan"), (np.cos, "cos"), (np.tan, "tan"), (np.floor, "floor"),
             (np.ceil, "ceil"), (np.trunc, "trunc")]
    return {id(f): n for f, n in pairs}


_NP_ALU = _numpy_ops()
_NP_ACT = _numpy_acts()


def alu_name(op: Any, what: str = "op") -> str:
    """The ALU name of an operator given as ``nl.add``, ``np.add``, or a name."""
    name = getattr(op, "_nki_alu", None)
    if name is None:
        name = _NP_ALU.get(id(op))
    if name is None and isinstance(op, str):
        name = op
    if name is None:
        raise NkiValueError(f"{what}: {getattr(op, '__name__', op)!r} is not an ALU operator")
    if name not in ALU:
        raise unsupported(f"the ALU operator {name!r}")
    return name


def act_name(op: Any) -> str:
    """The activation function name of ``nl.exp``, ``np.exp`` or a name."""
    name = getattr(op, "_nki_act", None)
    if name is None:
        name = _NP_ACT.get(id(op))
    if name is None and isinstance(op, str):
        name = op
    if name is None:
        raise NkiValueError(f"{getattr(op, '__name__', op)!r} is not an activation function")
    if name not in ACT:
        raise unsupported(f"the activation function {name!r}")
    return name


_ENGINE_OF = {"tensor": "pe", "vector": "dve", "scalar": "act", "gpsimd": "pool", "sync": "sp", "dma": None,
              "unknown": None}


def engine_name(engine: Any) -> Optional[str]:
    """The format's engine name of ``nisa.engine.*`` (None for unknown / unset: the builder chooses)."""
    if engine is None:
        return None
    if isinstance(engine, str) and engine in ENGINES:
        return engine
    name = getattr(engine, "name", None)
    if name in _ENGINE_OF:
        return _ENGINE_OF[name]
    raise NkiValueError(f"unknown engine {engine!r}")


def _view(x: Any, what: str) -> View:
    if not isinstance(x, View):
        raise NkiTypeError(f"{what} must be a tensor or tile, got {type(x).__name__}")
    return x


def fit(src: View, like: View) -> View:
    """``src`` with the logical shape of ``like`` when they hold the same elements in order
    (so the builder sees operands of one shape), else ``src`` unchanged."""
    if src.counts == like.counts:
        return src
    want = like.tile_counts() if like.st.on_chip else like.counts
    got = src.conform(want)
    return src if got is None else got


def _scalar(x: Any, what: str) -> Any:
    if isinstance(x, View):
        return x.rec()
    if isinstance(x, (bool, int, float, np.integer, np.floating)):
        return number(x)
    if isinstance(x, np.generic) and np.ndim(x) == 0:
        # An ml_dtypes scalar (``nl.finfo(nl.bfloat16).min``) is a number too.
        return number(float(x))
    raise NkiTypeError(f"{what} must be a number or a [P, 1] tile, got {type(x).__name__}")


def _emit(rec: Rec) -> Rec:
    return current().emit(rec)


def oob_skips(mode: Any) -> bool:
    """Whether ``oob_mode`` (``nisa.oob_mode.error`` / ``skip``, or its value) skips an index
    outside the table rather than stopping the run."""
    name = getattr(mode, "name", None)
    if name in ("error", "skip"):
        return name == "skip"
    if mode in (0, 1, None):
        return mode == 1
    raise NkiValueError(f"oob_mode is nisa.oob_mode.error or nisa.oob_mode.skip, not {mode!r}")


def dma_copy(dst: View, src: View, add: bool = False, skip: bool = False) -> Rec:
    """``dst = src`` on a DMA queue; rows named by a tile of indices (``table[idx, ...]``) are
    gathered as a source, and scatter-added into as a destination with ``add``; with ``skip``
    an index outside the table leaves its row alone (``oob_mode=skip``)."""
    if isinstance(src, Indirect) or isinstance(dst, Indirect):
        rec = _indirect_copy(dst, src, add)
        if skip:
            rec["skip"] = True
        return rec
    if add:
        raise unsupported("a DMA that adds into its destination (dst_rmw_op) other than into rows named by a tile "
                          "of indices")
    if skip:
        raise NkiValueError("oob_mode=skip applies to rows named by a tile of indices (table[idx, ...]); this DMA "
                            "has none")
    dst, src = _view(dst, "dst"), _view(src, "src")
    if dst.nelem != src.nelem:
        raise NkiValueError(f"dma_copy: dst holds {dst.nelem} elements ({list(dst.counts)}), "
                            f"src {src.nelem} ({list(src.counts)})")
    if not dst.st.on_chip and src.st.on_chip:
        dst = fit(dst, src)
    else:
        src = fit(src, dst)
    s = src.rec()
    return _emit({"op": "dma_copy", "loc": current().loc(), "dst": dst.rec(True), "src": s})


def perf_mode_name(mode: Any) -> str:
    """The format's name of a matmul perf mode: ``none`` or ``double_row`` (which kernels for a
    given NeuronCore generation also spell ``double_row_gen3`` / ``double_row_gen4``)."""
    name = str(getattr(mode, "value", mode) or "none")
    if name in ("none", "double_row"):
        return name
    if name in ("double_row_gen3", "double_row_gen4"):
        return "double_row"
    raise unsupported(f"the matmul perf_mode {name!r} (ntile has none and double_row)")


def matmul(dst: View, stationary: View, moving: View, accumulate: Union[None, bool, str] = None,
           perf_mode: str = "none", tile_position: Optional[Sequence[int]] = None,
           tile_size: Optional[Sequence[int]] = None) -> Rec:
    dst, stationary, moving = _view(dst, "dst"), _view(stationary, "stationary"), _view(moving, "moving")
    perf_mode = perf_mode_name(perf_mode)
    s, m = stationary.rec(), moving.rec()
    return _emit({"op": "matmul", "loc": current().loc(), "dst": dst.rec(True), "stationary": s, "moving": m,
                  "accumulate": accumulate, "perf_mode": perf_mode,
                  "tile_position": list(tile_position) if tile_position else None,
                  "tile_size": list(tile_size) if tile_size else None})


def transpose(dst: View, src: View, engine: Optional[str] = None) -> Rec:
    dst, src = _view(dst, "dst"), _view(src, "data")
    s = src.rec()
    return _emit({"op": "transpose", "loc": current().loc(), "dst": dst.rec(True), "src": s, "engine": engine})


def _indirect_copy(dst: Any, src: Any, add: bool) -> Rec:
    loc = current().loc()
    if isinstance(src, Indirect):
        if isinstance(dst, Indirect) or add:
            raise unsupported("an indirect DMA read into anything but a plain SBUF tile")
        dst = _view(dst, "dst")
        if not dst.st.on_chip or dst.st.buffer != "sbuf":
            raise NkiValueError("a gather (rows named by a tile of indices) writes an SBUF tile")
        if tuple(dst.tile_counts()) != tuple(src.counts):
            raise NkiValueError(f"a gather of {list(src.counts)} rows into a tile of shape {list(dst.tile_counts())}")
        return _emit({"op": "dma_gather", "loc": loc, "dst": dst.rec(True), "table": src.rows.rec(),
                      "indices": src.index.rec()})
    src = _view(src, "src")
    if not src.st.on_chip or src.st.buffer != "sbuf":
        raise NkiValueError("a scatter (rows named by a tile of indices) reads an SBUF tile")
    if tuple(src.tile_counts()) != tuple(dst.counts):
        raise NkiValueError(f"a scatter of a tile of shape {list(src.tile_counts())} into {list(dst.counts)} rows")
    return _emit({"op": "dma_scatter_add" if add else "dma_scatter", "loc": loc, "table": dst.rows.rec(True), "src": src.rec(),
                  "indices": dst.index.rec()})


def tensor_copy(dst: View, src: View, engine: Optional[str] = None) -> Rec:
    dst, src = _view(dst, "dst"), _view(src, "src")
    s = fit(src, dst).rec()
    return _emit({"op": "tensor_copy", "loc": current().loc(), "dst": dst.rec(True), "src": s, "engine": engine})


def memset(dst: View, value: Any, engine: Optional[str] = None) -> Rec:
    dst = _view(dst, "dst")
    return _emit({"op": "memset", "loc": current().loc(), "dst": dst.rec(True), "value": _scalar(value, "value"),
                  "engine": engine})


def tensor_tensor(dst: View, in0: View, in1: View, alu: str, engine: Optional[str] = None) -> Rec:
    dst, in0, in1 = _view(dst, "dst"), _view(in0, "data1"), _view(in1, "data2")
    a, b = fit(in0, dst).rec(), fit(in1, dst).rec()
    return _emit({"op": "tensor_tensor", "loc": current().loc(), "dst": dst.rec(True), "in0": a, "in1": b,
                  "alu": alu, "engine": engine})


def activation(dst: View, src: View, func: str, scale: Any = 1.0, bias: Any = None,
               reduce_dst: Optional[View] = None) -> Rec:
    dst, src = _view(dst, "dst"), _view(src, "data")
    s = fit(src, dst).rec()
    sc = _scalar(scale, "scale")
    bi = None if bias is None else _scalar(bias, "bias")
    red = None if reduce_dst is None else {"alu": "add", "dst": _view(reduce_dst, "reduce_res").rec(True)}
    return _emit({"op": "activation", "loc": current().loc(), "dst": dst.rec(True), "src": s, "func": func,
                  "scale": sc, "bias": bi, "reduce": red})


def tensor_scalar(dst: View, src: View, op0: str, s0: Any, reverse0: bool = False, op1: Optional[str] = None,
                  s1: Any = None, reverse1: bool = False, engine: Optional[str] = None) -> Rec:
    dst, src = _view(dst, "dst"), _view(src, "data")
    s = fit(src, dst).rec()
    a = _scalar(s0, "operand0")
    b = None if op1 is None else _scalar(s1, "operand1")
    return _emit({"op": "tensor_scalar", "loc": current().loc(), "dst": dst.rec(True), "src": s, "op0": op0,
                  "s0": a, "reverse0": bool(reverse0), "op1": op1, "s1": b,
                  "reverse1": bool(reverse1) if op1 is not None else False, "engine": engine})


# Operators whose operands may swap (a reverse flag changes nothing).
_COMMUTATIVE = ("add", "multiply", "maximum", "minimum", "equal", "not_equal")


def tensor_tensor_scan(dst: View, data0: View, data1: View, initial: Any, op0: str, op1: str,
                       reverse0: bool = False, reverse1: bool = False) -> Rec:
    """``x = initial``; ``x = op1(op0(data0[i], x), data1[i])`` along each partition."""
    dst, data0, data1 = _view(dst, "dst"), _view(data0, "data0"), _view(data1, "data1")
    for flag, op, name in ((reverse0, op0, "reverse0"), (reverse1, op1, "reverse1")):
        if flag and op not in _COMMUTATIVE:
            raise unsupported(f"tensor_tensor_scan with {name}=True for `{op}` (swapped operands)")
    a, b = fit(data0, dst).rec(), fit(data1, dst).rec()
    return _emit({"op": "tensor_tensor_scan", "loc": current().loc(), "dst": dst.rec(True), "in0": a, "in1": b,
                  "op0": op0, "op1": op1, "initial": _scalar(initial, "initial")})


# The register a running reduction starts from when it is reset (NKI ISA
# tensor_scalar_cumulative): the identity of its operator.
CUMULATIVE_START = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "maximum": float("-inf"),
                    "minimum": float("inf")}


def tensor_scalar_cumulative(dst: View, src: View, op0: str, s0: Any, reverse0: bool, op1: str,
                             initial: Any) -> Rec:
    """``reg = initial``; ``reg = op1(op0(src[i], s0), reg)``, ``dst[i] = reg`` along each
    partition (``op0(s0, src[i])`` with ``reverse0``)."""
    dst, src = _view(dst, "dst"), _view(src, "src")
    s = fit(src, dst).rec()
    return _emit({"op": "tensor_scalar_cumulative", "loc": current().loc(), "dst": dst.rec(True), "src": s,
                  "op0": op0, "s0": _scalar(s0, "imm0"), "reverse0": bool(reverse0), "op1": op1,
                  "initial": _scalar(initial, "imm1")})


def tensor_copy_predicated(dst: View, src: Any, pred: View, reverse: bool = False) -> Rec:
    """``dst[i] = src[i]`` (or the number ``src``) where ``pred[i]`` is nonzero (zero with
    ``reverse``); the other elements of ``dst`` keep their values."""
    dst, pred = _view(dst, "dst"), _view(pred, "predicate")
    rec: Rec = {"op": "tensor_copy_predicated", "loc": current().loc(), "dst": dst.rec(True),
                "pred": fit(pred, dst).rec(), "reverse": bool(reverse)}
    if isinstance(src, View):
        rec["src"] = fit(src, dst).rec()
    else:
        rec["value"] = _scalar(src, "src")
    return _emit(rec)


def stream_shuffle(dst: View, src: View, shuffle_mask: Any) -> Rec:
    """Destination partition ``q * 32 + i`` takes source partition ``q * 32 + shuffle_mask[i]``
    (255 keeps it): VectorE's move across partitions within each quadrant of 32."""
    dst, src = _view(dst, "dst"), _view(src, "src")
    try:
        mask = [int(m) for m in shuffle_mask]
    except (TypeError, ValueError):
        raise NkiTypeError(f"shuffle_mask must be a list of 32 integers, got {shuffle_mask!r}") from None
    if len(mask) != 32 or any(not (0 <= m < 32 or m == 255) for m in mask):
        raise NkiValueError(f"shuffle_mask must be 32 source partitions 0..31 (or 255, to keep a partition), "
                            f"got {mask}")
    return _emit({"op": "stream_shuffle", "loc": current().loc(), "dst": dst.rec(True), "src": src.rec(),
                  "shuffle_mask": mask})


TOP8_NAMES = {"max8": "nisa.max8", "find_index8": "nisa.nc_find_index8", "match_replace8": "nisa.nc_match_replace8"}


def top8(mode: str, dst: View, src: View, vals: Optional[View] = None, idx: Optional[View] = None,
         value: float = 0.0) -> Rec:
    """VectorE's eight-value searches over each partition of ``src`` (its elements in row-major
    order): ``max8`` (the 8 largest, descending, into ``[P, 8]``), ``find_index8`` (the positions
    of ``vals``' values, uint16/uint32, all ones where absent) and ``match_replace8`` (``src``
    with those values replaced by ``value``; their positions into ``idx`` when given)."""
    what = TOP8_NAMES[mode]
    dst, src = _view(dst, "dst"), _view(src, "data")
    counts = src.tile_counts()
    parts = counts[0]
    per = src.nelem // parts
    if not 8 <= per <= 16384:
        raise NkiValueError(f"{what} reads 8 to 16384 elements per partition, not {per}")

    def eight(t: View, role: str) -> None:
        c = t.tile_counts()
        if c[0] != parts or t.nelem != 8 * parts:
            raise NkiValueError(f"{what}: {role} must be [{parts}, 8] (8 per partition of the data), not {list(c)}")

    def index(t: View, role: str) -> None:
        eight(t, role)
        if t.st.dtype not in ("uint16", "uint32"):
            raise NkiTypeError(f"{what}: {role} holds uint16 or uint32 indices, not {t.st.dtype}")

    rec: Dict[str, Any] = {"op": "top8", "loc": current().loc(), "mode": mode}
    if mode == "max8":
        eight(dst, "dst")
    else:
        if vals is None:
            raise NkiTypeError(f"{what} needs vals (the 8 values per partition to find)")
        eight(_view(vals, "vals"), "vals")
        if mode == "find_index8":
            index(dst, "dst")
        elif dst.tile_counts() != counts and (dst.nelem != src.nelem or dst.tile_counts()[0] != parts):
            raise NkiValueError(f"{what}: dst {list(dst.tile_counts())} is not the data's shape {list(counts)}")
    if idx is not None:
        index(_view(idx, "dst_idx"), "dst_idx")
    rec["dst"] = dst.rec(True)
    rec["src"] = src.rec()
    if vals is not None:
        rec["vals"] = vals.rec()
    if idx is not None:
        rec["idx"] = idx.rec(True)
    if mode == "match_replace8":
        rec["value"] = number(float(value))
    return _emit(rec)


def tensor_partition_reduce(dst: View, src: View, alu: str) -> Rec:
    """``dst[0, ...] = alu over the partitions of src`` on GpSimd (partition 0 first)."""
    dst, src = _view(dst, "dst"), _view(src, "data")
    s = src.rec()
    return _emit({"op": "tensor_partition_reduce", "loc": current().loc(), "dst": dst.rec(True), "src": s,
                  "alu": alu})


def tensor_reduce(dst: View, src: View, alu: str, axes: Sequence[int], negate: bool = False,
                  keepdims: bool = False) -> Rec:
    dst, src = _view(dst, "dst"), _view(src, "data")
    s = src.rec()
    return _emit({"op": "tensor_reduce", "loc": current().loc(), "dst": dst.rec(True), "src": s, "alu": alu,
                  "axes": list(axes), "negate": bool(negate), "keepdims": bool(keepdims)})


def affine_select(dst: View, src: View, pattern: List[List[int]], channel_multiplier: int, offset: int, cmp: str,
                  value: Any) -> Rec:
    dst, src = _view(dst, "dst"), _view(src, "on_true_tile")
    s = fit(src, dst).rec()
    return _emit({"op": "affine_select", "loc": current().loc(), "dst": dst.rec(True), "src": s,
                  "pattern": pattern, "channel_multiplier": int(channel_multiplier), "offset": int(offset),
                  "cmp": cmp, "value": _scalar(value, "on_false_value")})


def iota(dst: View, pattern: List[List[int]], offset: int, channel_multiplier: int) -> Rec:
    dst = _view(dst, "dst")
    return _emit({"op": "iota", "loc": current().loc(), "dst": dst.rec(True), "pattern": pattern,
                  "offset": int(offset), "channel_multiplier": int(channel_multiplier)})


def bn_stats(dst: View, src: View) -> Rec:
    dst, src = _view(dst, "dst"), _view(src, "data")
    s = src.rec()
    return _emit({"op": "bn_stats", "loc": current().loc(), "dst": dst.rec(True), "src": s})


def bn_aggr(dst: View, src: View) -> Rec:
    dst, src = _view(dst, "dst"), _view(src, "data")
    s = src.rec()
    return _emit({"op": "bn_aggr", "loc": current().loc(), "dst": dst.rec(True), "src": s})

