"""The ``nki.language`` functions both API generations share (each returns a new tile).

Signatures are the union of both generations' (``mask=`` is the legacy API's; a current-API
kernel never passes it). Each elementwise function carries the ALU or activation name it stands
for (``_nki_alu`` / ``_nki_act``), so ``op=nl.add`` and ``nisa.activation(nl.exp, ...)`` work.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Dict, Iterator, Optional

import numpy as np

from . import alloc, dtypes, loops, ops, values
from .errors import NkiTypeError, NkiValueError, unsupported
from .index import DSlice
from .trace import current
from .view import View


def dt(dtype: Any) -> Optional[str]:
    """A dtype argument as a trace name (None stays None)."""
    if dtype is None:
        return None
    try:
        return dtypes.name_of(dtype)
    except dtypes.DTypeError as e:
        raise NkiValueError(str(e)) from None


def clip(mask: Any) -> Any:
    return values.mask_clip(mask)


def _binary(name: str, alu: str) -> Callable[..., Any]:
    def f(x: Any, y: Any, dtype: Any = None, mask: Any = None, **kwargs: Any) -> Any:
        return values.elementwise(alu, x, y, dt(dtype), clip(mask))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``{name}(x, y)`` elementwise (``tensor_tensor``, or ``tensor_scalar`` with a number or a [P, 1] tile)."
    f._nki_alu = alu  # type: ignore[attr-defined]
    return f


def _unary(name: str, act: Optional[str], alu: Optional[str] = None) -> Callable[..., Any]:
    def f(x: Any, dtype: Any = None, mask: Any = None, **kwargs: Any) -> Any:
        if act is None or act not in _SUPPORTED_ACT:
            raise unsupported(f"nl.{name}")
        return values.unary(act, x, dt(dtype), clip(mask))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``{name}(x)`` elementwise on the scalar engine (``activation``)."
    if act is not None:
        f._nki_act = act  # type: ignore[attr-defined]
    if alu is not None:
        f._nki_alu = alu  # type: ignore[attr-defined]
    return f


_SUPPORTED_ACT = set(ops.ACT) - {"copy"}

BINARY = {n: _binary(n, n) for n in (
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal", "not_equal", "greater",
    "greater_equal", "less", "less_equal", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
    "logical_xor", "left_shift", "right_shift", "abs_max", "abs_min", "mod", "fmod")}

UNARY = {n: _unary(n, n) for n in sorted(_SUPPORTED_ACT)}
# The ISA table's one function ntile does not run (its alpha has no field in the format):
# refused by name, from `nl.prelu` and as `nisa.activation`'s op.
UNARY["prelu"] = _unary("prelu", "prelu")
UNARY["rsqrt"]._nki_alu = "rsqrt"  # type: ignore[attr-defined]
UNARY["abs"]._nki_alu = "abs"  # type: ignore[attr-defined]
UNARY["reciprocal"]._nki_alu = "reciprocal"  # type: ignore[attr-defined]


def copy(x: Any, dtype: Any = None, mask: Any = None, **kwargs: Any) -> View:
    """A copy of a tile (``tensor_copy``; from PSUM it evicts into SBUF)."""
    return values.copy_tile(x, dt(dtype), clip(mask))


copy._nki_act = "copy"  # type: ignore[attr-defined]


def negative(x: Any, dtype: Any = None, mask: Any = None, **kwargs: Any) -> View:
    return values.elementwise("multiply", x, -1.0, dt(dtype) or values.dtype_of(x), clip(mask))


def _reduction(name: str, alu: Optional[str]) -> Callable[..., Any]:
    def f(x: Any, axis: Any, dtype: Any = None, mask: Any = None, keepdims: bool = False, **kwargs: Any) -> View:
        if alu is None:
            raise unsupported(f"nl.{name}")
        return values.reduce(alu, x, axis, dt(dtype), keepdims, clip(mask))

    f.__name__ = f.__qualname__ = name
    if alu is not None:
        f._nki_alu = alu  # type: ignore[attr-defined]
    return f


sum = _reduction("sum", "add")  # noqa: A001 (NKI's name)
max = _reduction("max", "maximum")  # noqa: A001
min = _reduction("min", "minimum")  # noqa: A001
prod = _reduction("prod", "multiply")


def all(x: Any, axis: Any, dtype: Any = None, mask: Any = None, keepdims: bool = False,  # noqa: A001 (NKI's name)
        **kwargs: Any) -> View:
    """Whether every element along ``axis`` is nonzero (1 or 0): the minimum of ``x != 0``."""
    c = clip(mask)
    nonzero = values.elementwise("not_equal", x, 0.0, "fp32", c)
    return values.reduce("minimum", nonzero, axis, dt(dtype) or "uint8", keepdims, c)


def var(x: Any, axis: Any, dtype: Any = None, mask: Any = None, keepdims: bool = False, **kwargs: Any) -> View:
    """The population variance along ``axis`` (numpy's ``var``, ``ddof=0``): the mean of the
    squared deviations from the mean, in fp32."""
    c = clip(mask)
    centred = values.elementwise("subtract", x, mean(x, axis, "fp32", mask, keepdims=True), "fp32", c)
    return mean(values.elementwise("multiply", centred, centred, "fp32", c), axis, dtype or x.st.dtype, mask,
                keepdims)


def logical_not(x: Any, dtype: Any = None, mask: Any = None, **kwargs: Any) -> View:
    """1 where ``x`` is zero, else 0."""
    return values.elementwise("equal", x, 0.0, dt(dtype) or "uint8", clip(mask))


def invert(x: Any, dtype: Any = None, mask: Any = None, **kwargs: Any) -> View:
    """The bitwise NOT of an integer tile (``x ^ all ones``)."""
    if not isinstance(x, View) or x.st.dtype in dtypes.FLOATS:
        raise NkiTypeError("nl.invert takes an integer tile")
    ones = (1 << (8 * dtypes.itemsize(x.st.dtype))) - 1
    if x.st.dtype.startswith("int"):
        ones = -1
    return values.elementwise("bitwise_xor", x, ones, dt(dtype) or x.st.dtype, clip(mask))


def mean(x: Any, axis: Any, dtype: Any = None, mask: Any = None, keepdims: bool = False, **kwargs: Any) -> View:
    """The mean along ``axis``: a sum (in fp32) scaled by 1/n."""
    c = clip(mask)
    total = values.reduce("add", x, axis, "fp32", keepdims, c)
    shape = x.tile_counts()
    n = 1
    for a in values.normalize_axes(axis, len(shape)):
        n *= shape[a]
    return values.elementwise("multiply", total, 1.0 / n, dt(dtype) or x.st.dtype)


def matmul(x: Any, y: Any, transpose_x: bool = False, mask: Any = None, **kwargs: Any) -> View:
    """``x @ y`` into a new fp32 PSUM tile; ``transpose_x=True`` when ``x`` is given as
    ``[K, M]`` (else ``x`` is transposed on the PE first)."""
    c = clip(mask)
    x, y = values.in_sbuf(x), values.in_sbuf(y)
    if not transpose_x:
        x = values.copy_tile(values.transpose_tile(x))
    return values.matmul_tile(x, y, c)


def transpose(x: Any, dtype: Any = None, mask: Any = None, **kwargs: Any) -> View:
    """The partition/free transpose of a 2-D tile (on the PE, into PSUM)."""
    return values.transpose_tile(values.in_sbuf(x), None, dt(dtype))


def load(src: Any, dtype: Any = None, mask: Any = None, **kwargs: Any) -> View:
    """An HBM tensor (view) loaded into a new SBUF tile (``dma_copy``)."""
    return values.load(src, dt(dtype), clip(mask))


def store(dst: Any, value: Any, mask: Any = None, **kwargs: Any) -> None:
    """A tile stored into an HBM tensor (view) (``dma_copy``; a PSUM tile is copied to SBUF
    first, as the DMA reads SBUF)."""
    values.store(dst, values.in_sbuf(value), clip(mask))


def load_transpose2d(src: Any, dtype: Any = None, mask: Any = None, **kwargs: Any) -> View:
    """An HBM ``[R, C]`` tensor loaded transposed as a ``[C, R]`` SBUF tile (a DMA with the
    transposed access pattern)."""
    if not isinstance(src, View) or src.st.on_chip or len(src.dims) != 2:
        raise NkiValueError("nl.load_transpose2d reads a 2-D HBM tensor")
    t = src._new(src.off, (src.dims[1], src.dims[0]), -1)
    return values.load(t, dt(dtype), clip(mask))


def softmax(x: Any, axis: Any = -1, dtype: Any = None, compute_dtype: Any = None, mask: Any = None,
            **kwargs: Any) -> View:
    """``exp(x - max) / sum(exp(x - max))`` along the last free axis, in fp32."""
    if mask is not None:
        raise unsupported("nl.softmax with a mask")
    shape = x.tile_counts()
    axes = values.normalize_axes(axis, len(shape))
    if axes != [len(shape) - 1] or len(shape) != 2:
        raise unsupported("nl.softmax other than along the last axis of a 2-D tile")
    from . import ops  # noqa: PLC0415

    negmax = values.reduce("maximum", x, axes, "fp32", True, None, negate=True)
    e = values.temp(shape, "fp32")
    s = values.temp((shape[0], 1), "fp32")
    ops.activation(e, x, "exp", 1.0, negmax, reduce_dst=s)
    r = values.unary("reciprocal", s)
    return values.elementwise("multiply", e, r, dt(dtype) or x.st.dtype)


def broadcast_to(x: Any, shape: Any = None, **kwargs: Any) -> View:
    """``x`` read across ``shape`` along its size-1 dims. Free dims (and every dim of an HBM
    tensor) broadcast as stride-0 views; a one-partition tile broadcast across partitions is
    computed, as ``ones[1, P].T @ x[1, F]`` on the Tensor Engine."""
    shape = tuple(kwargs.get("shape", shape))
    if not isinstance(x, View):
        raise NkiTypeError("nl.broadcast_to needs a tile")
    if x.st.on_chip and x.tile_counts()[0] != shape[0]:
        if x.tile_counts()[0] != 1:
            raise NkiValueError(f"cannot broadcast a tile of {x.tile_counts()[0]} partitions to {shape[0]}")
        return values.partition_broadcast(x, shape)
    got = values._broadcast(x, shape) if x.st.on_chip else None
    if got is None:
        if not x.st.on_chip and len(x.dims) == len(shape):
            dims = tuple((s if c == n else 0, n) for (s, c), n in zip(x.dims, shape))
            return x._new(x.off, dims, -1)
        raise NkiValueError(f"cannot broadcast a tile of shape {list(x.tile_counts())} to {list(shape)}")
    return got


def expand_dims(data: Any, axis: Any) -> View:
    a = int(axis)
    if a < 0:
        a += len(data.dims) + 1
    return data.with_dim(a, [(0, 1)], removed=0)


def ds(start: Any, size: Any) -> DSlice:
    """``size`` consecutive indices from ``start`` (as the slice ``start:start+size``)."""
    return DSlice(start, size)


def program_id(axis: int = 0) -> int:
    """The coordinate along ``axis`` of the SPMD program being traced (0 without a grid)."""
    T = current()
    a = int(axis)
    return T.program[a] if a < len(T.program) else 0


def num_programs(axes: Any = 0) -> Any:
    T = current()
    if isinstance(axes, (tuple, list)):
        n = 1
        for a in axes:
            n *= T.grid[int(a)] if int(a) < len(T.grid) else 1
        return n
    a = int(axes)
    return T.grid[a] if a < len(T.grid) else 1


def program_ndim() -> int:
    return len(current().grid)


def device_print(*args: Any, **kwargs: Any) -> None:
    """Printing a tile on the device prints nothing here (tracing knows no values)."""


@contextlib.contextmanager
def no_reorder() -> Iterator[None]:
    yield


def shared_hbm_constant(array: Any, dtype: Any = None, name: str = "constant") -> View:
    """A kernel constant (``nl.shared_constant``) as an HBM input whose values the trace carries."""
    T = current()
    arr = np.asarray(array)
    d = dt(dtype) or dtypes.name_of(arr.dtype if arr.dtype != np.float64 else np.float32)
    st = T.new_storage(name, "input", d, tuple(arr.shape) if arr.ndim else (1,), 0)
    st.constant = [float(v) for v in arr.reshape(-1)]
    return T.view_class.whole(st)


def identity(n: Any, dtype: Any = "uint8") -> View:
    n = int(n)
    return shared_hbm_constant(np.identity(n, dtype=np.float32), dtype, f"identity{n}")


affine_range = loops.affine_range
sequential_range = loops.sequential_range
static_range = loops.static_range


def where(condition: Any, x: Any, y: Any, dtype: Any = None, mask: Any = None, **kwargs: Any) -> View:
    """``x`` where ``condition`` is nonzero, else ``y`` (tiles or numbers), elementwise."""
    return values.where(condition, x, y, dt(dtype), clip(mask))


# The seed of the values `nl.rand` draws (one generator per traced kernel, so a kernel traced
# again draws the same values).
RAND_SEED = 0x6E74696C


def rand(shape: Any, dtype: Any = None, buffer: Any = None, name: str = "", **kwargs: Any) -> View:
    """A tile of values uniform in [0, 1). ntile has no random-number engine: the values are
    drawn when the kernel is traced (numpy, the same each time the kernel is traced) and
    loaded from a constant the trace carries, so the model charges their DMA."""
    T = current()
    if T.rand_generator is None:
        T.rand_generator = np.random.default_rng(RAND_SEED)
    gen = T.rand_generator
    dims = shapes_from(shape)
    d = dt(dtype) or "fp32"
    buf = alloc.buffer_name(buffer) if buffer is not None else "sbuf"
    if buf not in ("sbuf", "hbm", "shared_hbm", "private_hbm"):
        raise unsupported(f"nl.rand into {buf} (ntile draws into SBUF or HBM)")
    const = shared_hbm_constant(gen.random(dims, dtype=np.float32), d, name or "rand")
    return const if buf != "sbuf" else values.load(const, d)


def dropout(x: Any, rate: Any, dtype: Any = None, mask: Any = None, **kwargs: Any) -> View:
    """``x`` with each element replaced by 0 with probability ``rate`` (a number or a ``[P, 1]``
    column of per-partition rates): kept where an ``nl.rand`` value is at least the rate, an
    ``nl.where`` of the comparison (no rescaling of the kept elements, as the ISA describes)."""
    if not isinstance(x, View):
        raise NkiTypeError(f"dropout takes a tile, got {type(x).__name__}")
    keep = values.elementwise("greater_equal", rand(x.tile_counts(), "fp32"), rate, "uint8")
    return values.where(keep, x, 0.0, dt(dtype) or x.st.dtype, clip(mask))


def loop_reduce(x: Any, op: Any, loop_indices: Any = None, *, dtype: Any = None, mask: Any = None,
                **kwargs: Any) -> Any:
    """``acc[...] = nl.loop_reduce(x, op, loop_indices)`` is ``acc = acc op x`` (one instruction
    per iteration; ``loop_indices`` only tells a compiler which loops the reduction runs along)."""
    from . import ops  # noqa: PLC0415

    return values.LoopReduce(x, ops.alu_name(op), clip(mask))


def refused(qualified: str) -> Callable[..., Any]:
    """A documented NKI function ntile does not implement: calling it names it."""

    def f(*args: Any, **kwargs: Any) -> Any:
        raise unsupported(qualified)

    f.__name__ = f.__qualname__ = qualified.rsplit(".", 1)[-1]
    f.__doc__ = f"``{qualified}`` (not supported by ntile: calling it raises NotImplementedError)."
    return f


def shapes_from(shape: Any) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(shape)


TILE_CONSTANTS: Dict[str, Dict[str, int]] = {
    t: {"pmax": 128, "psum_fmax": 512, "psum_bank_fmax": 512, "psum_bank_fmax_bytes": 2048,
        "gemm_stationary_fmax": 128, "gemm_moving_fmax": 512, "bn_stats_fmax": 512, "psum_min_align": 4,
        "sbuf_min_align": 64, "psum_num_banks": 8,
        "sbuf_fmax_bytes": {"trn1": 192, "trn2": 224, "trn3": 256}[t] * 1024}
    for t in ("trn1", "trn2", "trn3")
}


class TileSize:
    """``nl.tile_size``: the target's tile limits (the target of the kernel being traced, else trn2)."""

    def _get(self, key: str) -> int:
        from .trace import active  # noqa: PLC0415

        T = active()
        return TILE_CONSTANTS[T.target if T is not None else "trn2"][key]

    pmax = property(lambda self: self._get("pmax"))
    psum_fmax = property(lambda self: self._get("psum_fmax"))
    psum_bank_fmax = property(lambda self: self._get("psum_bank_fmax"))
    psum_bank_fmax_bytes = property(lambda self: self._get("psum_bank_fmax_bytes"))
    psum_num_banks = property(lambda self: self._get("psum_num_banks"))
    gemm_stationary_fmax = property(lambda self: self._get("gemm_stationary_fmax"))
    gemm_moving_fmax = property(lambda self: self._get("gemm_moving_fmax"))
    bn_stats_fmax = property(lambda self: self._get("bn_stats_fmax"))
    psum_min_align = property(lambda self: self._get("psum_min_align"))
    sbuf_min_align = property(lambda self: self._get("sbuf_min_align"))
    sbuf_fmax_bytes = property(lambda self: self._get("sbuf_fmax_bytes"))
    total_available_sbuf_size = property(lambda self: self._get("sbuf_fmax_bytes"))
    sbuf_fmax = property(lambda self: self._get("sbuf_fmax_bytes") // 4)
    sbuf_size_bytes = property(lambda self: self._get("sbuf_fmax_bytes") * 128)

    def __repr__(self) -> str:
        return "<nl.tile_size: pmax 128, psum_bank_fmax 512, gemm_stationary_fmax 128, gemm_moving_fmax 512>"


tile_size = TileSize()
