"""Element types: the trace's names (penguin's), what each API spells, and NKI's promotion rules.

Inside the tracer a dtype is always its trace name (``"bf16"``). Each API surface has its own
objects for users (the legacy API numpy dtypes, the current API strings such as
``"bfloat16"``); :func:`name_of` reads any of them, and numpy/ml_dtypes dtypes too.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

# Bytes per element of each trace dtype. The first nine are penguin's; the others are NKI
# dtypes the builder may refuse (it names them), kept so the tracer never silently changes a
# kernel's types.
ITEMSIZE: Dict[str, int] = {
    "fp32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8e4m3": 1,
    "fp8e4m3fn": 1,
    "fp8e5m2": 1,
    "uint8": 1,
    "int16": 2,
    "int32": 4,
    "int8": 1,
    "uint16": 2,
    "uint32": 4,
    "tf32": 4,
}

FLOATS = {"fp32", "bf16", "fp16", "fp8e4m3", "fp8e4m3fn", "fp8e5m2", "tf32"}

# Every spelling a kernel may use, lower-cased, by trace name.
_ALIASES: Dict[str, str] = {}
for _name, _spellings in {
    "fp32": ("fp32", "float32", "f32", "float"),
    "bf16": ("bf16", "bfloat16"),
    "fp16": ("fp16", "float16", "f16", "half"),
    "fp8e4m3": ("fp8e4m3", "float8_e4m3", "fp8_e4m3"),
    "fp8e4m3fn": ("fp8e4m3fn", "float8_e4m3fn", "fp8_e4m3fn"),
    "fp8e5m2": ("fp8e5m2", "float8_e5m2", "fp8_e5m2"),
    "uint8": ("uint8", "u8", "bool", "bool_", "bool8"),
    "int16": ("int16", "i16"),
    "int32": ("int32", "i32"),
    "int8": ("int8", "i8"),
    "uint16": ("uint16", "u16"),
    "uint32": ("uint32", "u32"),
    "tf32": ("tf32", "tfloat32"),
}.items():
    for _s in _spellings:
        _ALIASES[_s] = _name


class DTypeError(ValueError):
    """A dtype the tracer cannot name."""


def name_of(dtype: Any) -> str:
    """The trace name of ``dtype``: a trace name, an NKI spelling, a numpy or ml_dtypes dtype or
    scalar type, or an API dtype object carrying ``_ntile_dtype``."""
    tagged = getattr(dtype, "_ntile_dtype", None)
    if isinstance(tagged, str):
        return tagged
    if isinstance(dtype, str):
        found = _ALIASES.get(dtype.lower())
        if found is None:
            raise DTypeError(f"unknown dtype {dtype!r}")
        return found
    if dtype is bool:
        return "uint8"
    if dtype is float:
        return "fp32"
    if dtype is int:
        return "int32"
    try:
        npd = np.dtype(dtype)
    except TypeError:
        raise DTypeError(f"not a dtype: {dtype!r}") from None
    if npd == np.dtype("V4"):
        return "tf32"
    found = _ALIASES.get(npd.name.lower())
    if found is None:
        raise DTypeError(f"dtype {npd} has no NKI equivalent")
    return found


def itemsize(name: str) -> int:
    return ITEMSIZE[name]


def is_float(name: str) -> bool:
    return name in FLOATS


_ML = {
    "bf16": "bfloat16",
    "fp8e4m3": "float8_e4m3",
    "fp8e4m3fn": "float8_e4m3fn",
    "fp8e5m2": "float8_e5m2",
}


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype holding values of ``name`` (ml_dtypes for bf16 and fp8, imported only
    here: the tracer itself never needs it)."""
    if name in _ML:
        import ml_dtypes  # noqa: PLC0415 (optional dependency, only for data)

        return np.dtype(getattr(ml_dtypes, _ML[name]))
    if name == "tf32":
        return np.dtype(np.float32)
    return np.dtype({"fp32": np.float32, "fp16": np.float16, "uint8": np.uint8, "int16": np.int16,
                     "int32": np.int32, "int8": np.int8, "uint16": np.uint16, "uint32": np.uint32}[name])


# Floating types by (exponent bits, mantissa bits), for promotion.
_FLOAT_BITS = {"fp8e4m3": (4, 3), "fp8e4m3fn": (4, 3), "fp8e5m2": (5, 2), "fp16": (5, 10),
               "bf16": (8, 7), "tf32": (8, 10), "fp32": (8, 23)}
_INT_RANGE = {"uint8": (0, 8), "int8": (1, 8), "uint16": (0, 16), "int16": (1, 16),
              "uint32": (0, 32), "int32": (1, 32)}


def promote(a: str, b: str) -> str:
    """NKI's type promotion for the inputs of an arithmetic operation (the documented rules: a
    float beats an integer; two floats give the narrowest type holding both ranges and
    precisions; two integers the narrowest holding both ranges, int32 with uint32 giving fp32)."""
    if a == b:
        return a
    fa, fb = a in _FLOAT_BITS, b in _FLOAT_BITS
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    if fa and fb:
        (ea, ma), (eb, mb) = _FLOAT_BITS[a], _FLOAT_BITS[b]
        if ea >= eb and ma >= mb and (ea, ma) != (eb, mb):
            return a
        if eb >= ea and mb >= ma and (ea, ma) != (eb, mb):
            return b
        # Neither holds the other: the widened type is bf16 when it holds both, else fp32.
        return "bf16" if ea <= 8 and eb <= 8 and ma <= 7 and mb <= 7 else "fp32"
    (sa, wa), (sb, wb) = _INT_RANGE[a], _INT_RANGE[b]
    signed = sa or sb
    # Bits needed: an unsigned w-bit value needs w+1 bits in a signed type.
    need = max(wa + (1 if signed and not sa else 0), wb + (1 if signed and not sb else 0))
    for cand in (("int8", "int16", "int32") if signed else ("uint8", "uint16", "uint32")):
        if _INT_RANGE[cand][1] >= need:
            return cand
    return "fp32"


def scalar_dtype(value: Any) -> Optional[str]:
    """The dtype of a Python or numpy scalar as an operand: weakly typed Python scalars are the
    widest the hardware has (bool -> uint8, int -> int32, float -> fp32); numpy scalars keep theirs."""
    if isinstance(value, np.generic):
        return name_of(value.dtype)
    if isinstance(value, bool):
        return "uint8"
    if isinstance(value, int):
        return "int32"
    if isinstance(value, float):
        return "fp32"
    return None
