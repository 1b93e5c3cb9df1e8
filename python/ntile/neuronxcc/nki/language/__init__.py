"""``neuronxcc.nki.language`` (legacy NKI API) on ntile's tracer.

Calls return tiles (:class:`Tile`), operators work on tiles (``a + b``, ``psum += ...``),
indices may be affine expressions of ``nl.arange``/``nl.mgrid`` and calls take ``mask=``; a
shape may put the partition dim later with ``nl.par_dim`` (the dims before it are block dims).
dtypes are numpy's (bf16 and fp8 are ml_dtypes' when it is installed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...._nki import alloc, dtypes, index, lang, run, values
from ...._nki.alloc import Buffer, par_dim  # noqa: F401
from ...._nki.lang import (  # noqa: F401 (re-exported NKI names)
    affine_range,
    broadcast_to,
    copy,
    device_print,
    dropout,
    ds,
    expand_dims,
    load,
    load_transpose2d,
    loop_reduce,
    matmul,
    invert,
    logical_not,
    mean,
    negative,
    num_programs,
    prod,
    program_id,
    program_ndim,
    rand,
    sequential_range,
    softmax,
    static_range,
    store,
    tile_size,
    transpose,
    var,
    where,
)
from ...._nki.lang import all, max, min, sum  # noqa: F401,A004 (NKI's names)
from ...._nki.spmd import nc, spmd_dim  # noqa: F401 (NKI's names)
from ...._nki.tensors import Tensor
from ...._nki.trace import active


class _DType:
    """A dtype numpy lacks without ml_dtypes (bfloat16, float8): compares equal to its names."""

    def __init__(self, nki: str, trace: str) -> None:
        self.name = nki
        self._ntile_dtype = trace

    def __eq__(self, other: Any) -> bool:
        try:
            return dtypes.name_of(other) == self._ntile_dtype
        except (dtypes.DTypeError, TypeError):
            return False

    def __hash__(self) -> int:
        return hash(self._ntile_dtype)

    def __repr__(self) -> str:
        return f"dtype('{self.name}')"


def _ml(name: str, trace: str) -> Any:
    try:
        import ml_dtypes  # noqa: PLC0415 (optional)

        return np.dtype(getattr(ml_dtypes, name))
    except (ImportError, AttributeError):
        return _DType(name, trace)


bool_ = np.bool_
int8 = np.int8
int16 = np.int16
int32 = np.int32
uint8 = np.uint8
uint16 = np.uint16
uint32 = np.uint32
float16 = np.float16
float32 = np.float32
bfloat16 = _ml("bfloat16", "bf16")
float8_e4m3 = _ml("float8_e4m3", "fp8e4m3")
float8_e4m3fn = _ml("float8_e4m3fn", "fp8e4m3fn")
float8_e5m2 = _ml("float8_e5m2", "fp8e5m2")
tfloat32 = np.dtype("V4")

_DTYPE_OBJ = {"fp32": np.dtype(np.float32), "fp16": np.dtype(np.float16), "bf16": bfloat16,
              "fp8e4m3": float8_e4m3, "fp8e4m3fn": float8_e4m3fn, "fp8e5m2": float8_e5m2,
              "uint8": np.dtype(np.uint8), "int16": np.dtype(np.int16), "int32": np.dtype(np.int32),
              "int8": np.dtype(np.int8), "uint16": np.dtype(np.uint16), "uint32": np.dtype(np.uint32),
              "tf32": tfloat32}


class fp32:
    """FP32 constants: ``nl.fp32.min`` is the most negative finite float32."""

    min = float(np.finfo(np.float32).min)


class bfp16:
    """BF16 constants: ``nl.bfp16.min`` is the most negative finite bfloat16."""

    min = -3.3895313892515355e38


sbuf = Buffer("sbuf")
psum = Buffer("psum")
hbm = Buffer("private_hbm")
private_hbm = Buffer("private_hbm")
shared_hbm = Buffer("shared_hbm")
_BUFFER_OBJ = {"sbuf": sbuf, "psum": psum, "private_hbm": private_hbm, "shared_hbm": shared_hbm, "input": shared_hbm}

mgrid = index.MGrid()
arange = index.arange


class Tile(Tensor):
    """A tensor or tile of a legacy kernel; operators make elementwise instructions."""

    __slots__ = ()

    @staticmethod
    def _api_dtype(name: str) -> Any:
        return _DTYPE_OBJ.get(name, name)

    @staticmethod
    def _api_buffer(name: str) -> Any:
        return _BUFFER_OBJ[name]

    def __add__(self, o: Any) -> "Tile":
        return values.elementwise("add", self, o)

    def __radd__(self, o: Any) -> "Tile":
        return values.elementwise("add", o, self)

    def __sub__(self, o: Any) -> "Tile":
        return values.elementwise("subtract", self, o)

    def __rsub__(self, o: Any) -> "Tile":
        return values.elementwise("subtract", o, self)

    def __mul__(self, o: Any) -> "Tile":
        return values.elementwise("multiply", self, o)

    def __rmul__(self, o: Any) -> "Tile":
        return values.elementwise("multiply", o, self)

    def __truediv__(self, o: Any) -> "Tile":
        return values.elementwise("divide", self, o)

    def __rtruediv__(self, o: Any) -> "Tile":
        return values.elementwise("divide", o, self)

    def __pow__(self, o: Any) -> "Tile":
        return values.elementwise("power", self, o)

    def __rpow__(self, o: Any) -> "Tile":
        return values.elementwise("power", o, self)

    def __neg__(self) -> "Tile":
        return lang.negative(self)

    def __lt__(self, o: Any) -> "Tile":
        return values.elementwise("less", self, o)

    def __le__(self, o: Any) -> "Tile":
        return values.elementwise("less_equal", self, o)

    def __gt__(self, o: Any) -> "Tile":
        return values.elementwise("greater", self, o)

    def __ge__(self, o: Any) -> "Tile":
        return values.elementwise("greater_equal", self, o)

    def __and__(self, o: Any) -> "Tile":
        return values.elementwise("bitwise_and", self, o)

    def __or__(self, o: Any) -> "Tile":
        return values.elementwise("bitwise_or", self, o)

    def __xor__(self, o: Any) -> "Tile":
        return values.elementwise("bitwise_xor", self, o)

    def __iadd__(self, o: Any) -> "Tile":
        return values.augmented(self, o, "add")

    def __isub__(self, o: Any) -> "Tile":
        return values.augmented(self, o, "subtract")

    def __imul__(self, o: Any) -> "Tile":
        return values.augmented(self, o, "multiply")

    def __itruediv__(self, o: Any) -> "Tile":
        return values.augmented(self, o, "divide")

    def broadcast_to(self, shape: Any) -> "Tile":
        return lang.broadcast_to(self, shape)

    def expand_dims(self, axis: Any) -> "Tile":
        return lang.expand_dims(self, axis)

    def astype(self, dtype: Any) -> "Tile":
        return values.copy_tile(self, lang.dt(dtype))

    def assert_shape(self, shape: Any) -> "Tile":
        if tuple(shape) != self.shape:
            raise lang.NkiValueError(f"expected shape {list(shape)}, the tile has {list(self.shape)}")
        return self


run.register_api("legacy", Tile)

globals().update(lang.BINARY)
globals().update(lang.UNARY)


def _buffer(buffer: Any) -> Any:
    return sbuf if buffer is None else buffer


def ndarray(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "", **kwargs: Any) -> Tile:
    """A new tensor (uninitialized); ``nl.par_dim`` in ``shape`` marks a later partition dim."""
    return alloc.new_tensor(shape, dtype, _buffer(buffer), name)


def full(shape: Any, fill_value: Any, dtype: Any, *, buffer: Any = None, name: str = "", **kwargs: Any) -> Tile:
    t = alloc.new_tensor(shape, dtype, _buffer(buffer), name)
    values.fill(t, fill_value)
    return t


def zeros(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "", **kwargs: Any) -> Tile:
    return full(shape, 0.0, dtype, buffer=buffer, name=name)


def ones(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "", **kwargs: Any) -> Tile:
    return full(shape, 1.0, dtype, buffer=buffer, name=name)


def zeros_like(a: Any, dtype: Any = None, *, buffer: Any = None, name: str = "", **kwargs: Any) -> Tile:
    return zeros(a.shape, dtype if dtype is not None else a.dtype, buffer=buffer or a.buffer, name=name)


def empty_like(a: Any, dtype: Any = None, *, buffer: Any = None, name: str = "", **kwargs: Any) -> Tile:
    return ndarray(a.shape, dtype if dtype is not None else a.dtype, buffer=buffer or a.buffer, name=name)


def shared_constant(constant: Any, dtype: Any = None, **kwargs: Any) -> Tile:
    """A kernel constant as an HBM tensor (its values travel with the trace)."""
    return lang.shared_hbm_constant(constant, dtype)


def shared_identity_matrix(n: Any, dtype: Any = np.uint8, **kwargs: Any) -> Tile:
    return lang.identity(n, dtype)


def finfo(dtype: Any) -> Any:
    name = lang.dt(dtype)
    return np.finfo(dtypes.numpy_dtype(name or "fp32"))


def static_cast(data: Any, dtype: Any, **kwargs: Any) -> Any:
    """``data`` converted to ``dtype`` by value (round to nearest even): a tile in a kernel is
    copied into a new tile of that dtype; a numpy array on the host (test code preparing inputs,
    outside any kernel) comes back as a numpy array of it."""
    name = lang.dt(dtype)
    if name is None:
        raise lang.NkiValueError(f"nl.static_cast needs a dtype, got {dtype!r}")
    if isinstance(data, values.View):
        return lang.copy(data, name)
    if active() is not None:
        raise lang.NkiTypeError(f"nl.static_cast in a kernel takes a tile, got {type(data).__name__}")
    return np.asarray(data).astype(dtypes.numpy_dtype(name))


for _name in ("rms_norm", "gather_flattened", "random_seed", "atomic_rmw",
              "all_reduce",
              "gemm_grid", "gemm_stationary_grid"):
    globals()[_name] = lang.refused(f"neuronxcc.nki.language.{_name}")
del _name
