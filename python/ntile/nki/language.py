"""``nki.language`` of the current NKI API, on ntile's tracer (``import nki.language as nl``).

Tensors are :class:`NkiTensor` views (integer/slice/``...`` indexing, ``.ap()``, ``reshape``,
``permute`` ...); dtypes are NKI's strings (``nl.bfloat16 == "bfloat16"``); the convenience
functions (``nl.add``, ``nl.exp``, ``nl.matmul``, ``nl.load`` ...) return new tiles.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from .._nki import alloc, lang, run, values
from .._nki.lang import (  # noqa: F401 (re-exported NKI names)
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
    no_reorder,
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
from .._nki.lang import all, max, min, sum  # noqa: F401,A004 (NKI's names)
from .._nki.spmd import nc, spmd_dim  # noqa: F401 (NKI's names)
from .._nki.tensors import Tensor

# dtypes: NKI spells them as strings.
bool_ = "bool"
int8 = "int8"
int16 = "int16"
int32 = "int32"
uint8 = "uint8"
uint16 = "uint16"
uint32 = "uint32"
float16 = "float16"
float32 = "float32"
bfloat16 = "bfloat16"
tfloat32 = "tfloat32"
float8_e4m3 = "float8_e4m3"
float8_e4m3fn = "float8_e4m3fn"
float8_e5m2 = "float8_e5m2"
float8_e5m2_x4 = "float8_e5m2_x4"
float8_e4m3fn_x4 = "float8_e4m3fn_x4"
float8_e8m0fnu = "float8_e8m0fnu"
float4_e2m1fn_x4 = "float4_e2m1fn_x4"

_DTYPE_OBJ = {"fp32": float32, "bf16": bfloat16, "fp16": float16, "fp8e4m3": float8_e4m3,
              "fp8e4m3fn": float8_e4m3fn, "fp8e5m2": float8_e5m2, "uint8": uint8, "int16": int16, "int32": int32,
              "int8": int8, "uint16": uint16, "uint32": uint32, "tf32": tfloat32}


class MemoryRegion(Enum):
    """Memory region constants for NKI tensors."""

    sbuf = "sbuf"
    psum = "psum"
    private_hbm = "private_hbm"
    shared_hbm = "shared_hbm"


sbuf = MemoryRegion.sbuf
psum = MemoryRegion.psum
private_hbm = MemoryRegion.private_hbm
hbm = MemoryRegion.private_hbm
shared_hbm = MemoryRegion.shared_hbm
# A kernel's arguments are in `nl.hbm` (what kernels assert of them).
_BUFFER_OBJ = {"sbuf": sbuf, "psum": psum, "private_hbm": private_hbm, "shared_hbm": shared_hbm,
               "input": hbm}


class NKIObject:
    """Base class of NKI kernel dataclasses (plain Python here). A subclass's plain class
    attributes (``section_idx = None``) are fields too: they are annotated as the class is made,
    so ``@dataclass`` gives its ``__init__`` a keyword for each."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        notes = dict(cls.__dict__.get("__annotations__", {}))
        plain = [k for k, v in cls.__dict__.items()
                 if not k.startswith("_") and k not in notes and not callable(v)
                 and not isinstance(v, (property, classmethod, staticmethod))]
        if plain:
            notes.update({k: Any for k in plain})
            cls.__annotations__ = notes

    def __init__(self, **kwargs: Any) -> None:
        for k, v in kwargs.items():
            setattr(self, k, v)


class NkiTensor(Tensor):
    """A view of a tensor: shape, strides, offset, dtype and buffer, and view methods."""

    __slots__ = ()

    @staticmethod
    def _api_dtype(name: str) -> Any:
        return _DTYPE_OBJ.get(name, name)

    @staticmethod
    def _api_buffer(name: str) -> Any:
        return _BUFFER_OBJ[name]

    def ap(self, pattern: Any, offset: Any = None, scalar_offset: Any = None, vector_offset: Any = None,
           indirect_dim: int = 0, dtype: Any = None) -> "NkiTensor":
        if scalar_offset is not None or vector_offset is not None:
            raise lang.unsupported(".ap() with scalar_offset / vector_offset (dynamic, indirect access)")
        if dtype is not None and lang.dt(dtype) != self.st.dtype:
            raise lang.unsupported(".ap(dtype=...) reinterpreting a tensor as another dtype")
        return Tensor.ap(self, pattern, offset)

    def rearrange(self, *args: Any, **kwargs: Any) -> "NkiTensor":
        raise lang.unsupported("NkiTensor.rearrange")

    def vector_select(self, *args: Any, **kwargs: Any) -> "NkiTensor":
        raise lang.unsupported("NkiTensor.vector_select (dynamic, indirect access)")

    def indirect(self, *args: Any, **kwargs: Any) -> "NkiTensor":
        raise lang.unsupported("NkiTensor.indirect (tensor indirection)")

    reinterpret_cast = Tensor.view


run.register_api("current", NkiTensor)

globals().update(lang.BINARY)
globals().update(lang.UNARY)


def is_hbm(buffer: Any) -> bool:
    return alloc.buffer_name(buffer) in ("private_hbm", "shared_hbm")


def is_on_chip(buffer: Any) -> bool:
    return alloc.buffer_name(buffer) in ("sbuf", "psum")


def is_psum(buffer: Any) -> bool:
    return alloc.buffer_name(buffer) == "psum"


def is_sbuf(buffer: Any) -> bool:
    return alloc.buffer_name(buffer) == "sbuf"


def ndarray(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "", address: Any = None) -> NkiTensor:
    """A new tensor of ``shape`` (partition dim first on chip); uninitialized."""
    return alloc.new_tensor(shape, dtype, buffer, name, address)


def zeros(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "") -> NkiTensor:
    return full(shape, 0.0, dtype, buffer, name)


def ones(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "") -> NkiTensor:
    return full(shape, 1.0, dtype, buffer, name)


def full(shape: Any, fill_value: Any, dtype: Any, buffer: Any = sbuf, name: str = "") -> NkiTensor:
    t = alloc.new_tensor(shape, dtype, buffer, name)
    values.fill(t, fill_value)
    return t


def zeros_like(x: Any, dtype: Any = None, buffer: Any = None, name: str = "") -> NkiTensor:
    return zeros(x.shape, dtype if dtype is not None else x.dtype, buffer if buffer is not None else x.buffer, name)


def empty_like(x: Any, dtype: Any = None, buffer: Any = None, name: str = "") -> NkiTensor:
    return ndarray(x.shape, dtype if dtype is not None else x.dtype, buffer if buffer is not None else x.buffer, name)


def shared_constant(constant: Any, dtype: Any = None) -> NkiTensor:
    return lang.shared_hbm_constant(constant, dtype)


def shared_identity_matrix(n: Any, dtype: Any = uint8, dst: Any = None) -> NkiTensor:
    """An ``n x n`` identity matrix in SBUF (loaded from a constant the trace carries)."""
    tile = load(lang.identity(n, dtype))
    if dst is not None:
        dst[...] = tile
        return dst
    return tile


for _name in ("rms_norm", "gather_flattened", "random_seed", "fori_loop", "while_loop",
              "dynamic_range"):
    globals()[_name] = lang.refused(f"nki.language.{_name}")
del _name
