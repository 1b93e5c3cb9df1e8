"""ntile from Python: plan, lower, simulate and model tiled GEMMs on numpy arrays.

The work is done by the same Rust pipeline as the ``ntile`` command line (its ``driver``
crate): every keyword argument is the CLI flag of the same name, the report is the dict of
``ntile gemm --json``, bad input raises ``ValueError`` with the CLI's message, and the GIL is
released while ntile runs.

NKI kernels: :mod:`ntile.nki` (the current API) and :mod:`ntile.neuronxcc.nki` (the legacy
one). Their tracer is pure Python and numpy, so importing this package loads neither the native
module nor ml_dtypes until something needs them (the ``ntile nki`` command runs the tracer with
a bare ``python3``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import operator
import os
import tempfile
from typing import Any, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

try:
    import ml_dtypes
except ImportError:  # only bf16/fp8 arrays need it; the NKI tracer does not
    ml_dtypes = None


class _Native:
    """``ntile._native``, imported on first use (importing it replaces this stand-in)."""

    def __getattr__(self, name: str) -> Any:
        import importlib

        return getattr(importlib.import_module("ntile._native"), name)


_native = _Native()

__all__ = [
    "Calibration",
    "CheckFailed",
    "Config",
    "GemmResult",
    "RunResult",
    "calibrate",
    "cli",
    "gemm",
    "hw",
    "model",
    "run",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return _native.__version__
    raise AttributeError(f"module 'ntile' has no attribute {name!r}")


# numpy dtypes whose arrays HBM holds as they are, by ntile dtype name.
_HBM_DTYPES = {} if ml_dtypes is None else {
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(ml_dtypes.float8_e4m3): "fp8e4m3",
    np.dtype(ml_dtypes.float8_e4m3fn): "fp8e4m3fn",
    np.dtype(ml_dtypes.float8_e5m2): "fp8e5m2",
}

# The numpy dtype of each ntile dtype's values.
_NUMPY_OF = {
    "fp32": np.dtype(np.float32),
    "fp16": np.dtype(np.float16),
    "uint8": np.dtype(np.uint8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int8": np.dtype(np.int8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
}
if ml_dtypes is not None:
    _NUMPY_OF.update({
        "bf16": np.dtype(ml_dtypes.bfloat16),
        "fp8e4m3": np.dtype(ml_dtypes.float8_e4m3),
        "fp8e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
        "fp8e5m2": np.dtype(ml_dtypes.float8_e5m2),
    })

PathLike = Union[str, "os.PathLike[str]"]


def _size(name: str, v: Any) -> int:
    """A positive whole number given for ``name`` (a size or a block): an int or a numpy
    integer, never a float truncated (``1.5`` is refused, not read as 1)."""
    if isinstance(v, bool):
        raise TypeError(f"{name}: expected a positive integer, got a bool ({v!r})")
    try:
        n = operator.index(v)
    except TypeError:
        if isinstance(v, numbers.Real):
            raise ValueError(f"{name}: expected a positive integer, got {v!r}") from None
        raise TypeError(f"{name}: expected a positive integer, got {type(v).__name__} {v!r}") from None
    if n <= 0:
        raise ValueError(f"{name}: expected a positive integer, got {n}")
    return n


def _words(flags: Any) -> list:
    """``flags=`` as a list of words: a sequence of strings (or paths), never one string
    (which would be split into its characters)."""
    if isinstance(flags, (str, bytes)):
        raise TypeError(
            f"flags: expected a sequence of strings such as ['--no-sim'], got a {type(flags).__name__} ({flags!r})"
        )
    try:
        words = list(flags)
    except TypeError:
        raise TypeError(f"flags: expected a sequence of strings, got {type(flags).__name__}") from None
    for w in words:
        if not isinstance(w, (str, os.PathLike)):
            raise TypeError(f"flags: every word must be a string, got {type(w).__name__} {w!r}")
    return [os.fspath(w) for w in words]


def _check_input_bytes(nbytes: int) -> None:
    """Refuse input arrays whose copies would exceed the memory budget, before any is made
    (a broadcast view is small, its contiguous copy is not)."""
    _native.check_input_bytes(int(nbytes))


class CheckFailed(AssertionError):
    """The simulated C disagrees with the fp64 reference beyond the error bound.

    ``.result`` holds the :class:`GemmResult` (its ``.check`` says by how much).
    """

    def __init__(self, result: "GemmResult") -> None:
        c = result.check or {}
        super().__init__(
            "simulated C is outside the error bound: max |err| {}, max rel err {}".format(
                c.get("max_abs_err"), c.get("max_rel_err")
            )
        )
        self.result = result

    def __reduce__(self):  # pickles with its result (for process pools)
        return (CheckFailed, (self.result,))


@dataclasses.dataclass(frozen=True)
class Config:
    """The keyword arguments of :func:`gemm` and :func:`model` as one picklable value.

    ``cfg.model(m, k, n)`` and ``cfg.gemm(a, b)`` call those functions with it;
    ``dataclasses.replace(cfg, target="trn1")`` makes a variant.
    """

    dtype: Optional[str] = None
    out_dtype: str = "fp32"
    target: str = "trn2"
    schedule: str = "auto"
    block: Optional[Union[Tuple[int, ...], Mapping[str, int]]] = None
    lhs_transposed: bool = False
    perf_mode: Optional[str] = None
    sparsity: Optional[str] = None
    simulate: Optional[bool] = None
    check: bool = True
    hw: Optional[Union[PathLike, Mapping[str, Any]]] = None
    flags: Tuple[str, ...] = ()

    def kwargs(self) -> Dict[str, Any]:
        """The fields as keyword arguments (``simulate=None`` leaves each function's default:
        :func:`gemm` simulates, :func:`model` does not)."""
        kw = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if kw["simulate"] is None:
            del kw["simulate"]
        return kw

    def gemm(self, a: Any, b: Any) -> "GemmResult":
        """:func:`gemm` with this configuration."""
        return gemm(a, b, **self.kwargs())

    def model(self, m: int, k: int, n: int) -> "GemmResult":
        """:func:`model` with this configuration."""
        return model(m, k, n, **self.kwargs())


class GemmResult:
    """What :func:`gemm` and :func:`model` return.

    Attributes:
        c: the simulated C as a numpy array (float32, float16, or an ml_dtypes array for a
            bf16 output), or None when not simulated.
        report: the ``ntile gemm --json`` report as a dict.
    """

    def __init__(
        self,
        report: Dict[str, Any],
        c: Optional[np.ndarray],
        fields: Mapping[str, Any],
        flags: Sequence[str],
        hw: Optional[Union[PathLike, Mapping[str, Any]]] = None,
    ) -> None:
        self.report = report
        self.c = c
        self._fields = dict(fields)
        self._flags = list(flags)
        self._hw = dict(hw) if isinstance(hw, Mapping) else (None if hw is None else os.fspath(hw))
        self._svg: Optional[str] = None

    def _model(self, extra: Sequence[str], timeline: Optional[str] = None) -> Optional[str]:
        """Plan and model the GEMM again (no simulation), with ``extra`` flags."""
        with _HwFile(self._hw) as hw_path:
            fields = dict(self._fields, no_sim=True, hw=hw_path)
            fields.pop("no_check", None)
            _, _, picture = _native.gemm(fields, self._flags + list(extra), None, None, timeline)
        return picture

    @property
    def check(self) -> Optional[Dict[str, Any]]:
        """The check against the fp64 reference (``max_abs_err``, ``max_rel_err``,
        ``passed``, ...), or None when not simulated."""
        return self.report.get("check")

    @property
    def modeled_time_us(self) -> float:
        """The cycle model's time, in microseconds."""
        return self.report["modeled_time_us"]

    def trace(self, path: PathLike) -> None:
        """Write the modeled engine timeline as Chrome/Perfetto trace-event JSON to ``path``.

        The timeline does not depend on the data, so the plan is modeled again (the same
        flags give the same plan); nothing is simulated.
        """
        self._model(["--trace", os.fspath(path)])

    def svg(self) -> str:
        """The modeled engine timeline as SVG text (computed once, then kept)."""
        if self._svg is None:
            self._svg = self._model([], timeline="svg")
        return self._svg

    def _repr_svg_(self) -> str:
        return self.svg()

    def __repr__(self) -> str:
        r = self.report
        check = r.get("check")
        verdict = "not simulated" if check is None else ("passed" if check.get("passed") else "FAILED")
        return (
            f"<ntile.GemmResult {r['m']}x{r['k']}x{r['n']} {r['lhs_dtype']} x {r['rhs_dtype']} -> "
            f"{r['out_dtype']} on {r['target']}, schedule {r['schedule']}: "
            f"{r['modeled_time_us']:.1f} us modeled, HFU {r['hfu']:.2f}, check {verdict}>"
        )

    def __getstate__(self) -> Dict[str, Any]:
        return {
            "report": self.report,
            "c": self.c,
            "fields": self._fields,
            "flags": self._flags,
            "hw": self._hw,
            "svg": self._svg,
        }

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.report = state["report"]
        self.c = state["c"]
        self._fields = state["fields"]
        self._flags = state["flags"]
        self._hw = state["hw"]
        self._svg = state["svg"]


class RunResult(NamedTuple):
    """What :func:`run` returns: ``outputs, report = ntile.run(...)``."""

    outputs: Dict[str, np.ndarray]
    """Every output tensor of the kernel (or those asked for), by name."""
    report: Dict[str, Any]
    """The cycle model of the kernel (modeled time, HFU, engine busy, HBM bytes), its HBM
    tensors, and what ``ntile run`` printed (``stdout``)."""


def _operand(name: str, x: Any) -> Tuple[Tuple[np.ndarray, str, int, int], str]:
    """A 2-D operand as the native layer takes it, and the dtype HBM holds it in."""
    # Nested lists carry no dtype of their own: read them as float32, as a .npy would hold.
    arr = np.asarray(x) if hasattr(x, "dtype") else np.asarray(x, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name}: expected a non-empty 2-D array, got shape {list(arr.shape)}")
    rows, cols = arr.shape
    hbm = _HBM_DTYPES.get(arr.dtype)
    # The contiguous copy (float32 for float16 and float32 operands) is charged before it is made.
    _check_input_bytes(arr.size * (arr.dtype.itemsize if hbm is not None else 4))
    if hbm is not None:
        # Taken as it is: its bit patterns, viewed as bytes (a copy only if not contiguous).
        flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        return (flat, hbm, rows, cols), hbm
    if arr.dtype == np.float32 or arr.dtype == np.float16:
        # As the CLI reads a .npy: float32 values (float16 widened exactly), stored fp32 in
        # HBM and cast by the DMA that loads them.
        flat = np.ascontiguousarray(arr, dtype=np.float32).reshape(-1)
        return (flat, "fp32", rows, cols), "fp32"
    if arr.dtype == np.float64:
        raise ValueError(f"{name}: holds float64; pass it as float32 ({name}.astype(np.float32))")
    raise ValueError(
        f"{name}: holds dtype {arr.dtype}; expected float32, float16, or an ml_dtypes "
        "bfloat16 / float8_e4m3 / float8_e4m3fn / float8_e5m2 array"
    )


def _checked(result: "GemmResult", check: bool) -> "GemmResult":
    """The result, or :class:`CheckFailed` when it was checked and is outside the bound."""
    if check and result.check is not None and not result.check.get("passed", True):
        raise CheckFailed(result)
    return result


def _sim_fields(simulate: bool, check: bool) -> Dict[str, Any]:
    """``no_sim`` without a simulation, ``no_check`` for a simulation left unchecked."""
    if not simulate:
        return {"no_sim": True}
    return {} if check else {"no_check": True}


def _fields(
    dtype: Optional[str],
    out_dtype: str,
    target: str,
    schedule: str,
    block: Optional[Union[Tuple[int, ...], Mapping[str, int]]],
    lhs_transposed: bool,
    perf_mode: Optional[str],
    sparsity: Optional[str],
) -> Dict[str, Any]:
    """The flags the keywords set, by flag name (``block_m`` for ``--block-m``)."""
    fields: Dict[str, Any] = {"out_dtype": str(out_dtype), "target": str(target), "schedule": str(schedule)}
    if dtype is not None:
        fields["dtype"] = str(dtype)
    if block is not None:
        if isinstance(block, Mapping):
            unknown = set(block) - {"m", "n", "k"}
            if unknown:
                raise ValueError(f"block: unknown keys {sorted(unknown)} (expected m, n, k)")
            sizes = [(d, block[d]) for d in ("m", "n", "k") if d in block]
        else:
            if isinstance(block, (str, bytes)) or not hasattr(block, "__iter__"):
                raise TypeError(f"block: expected (m, n), (m, n, k) or a mapping, got {type(block).__name__}")
            block = tuple(block)
            if not 1 <= len(block) <= 3:
                raise ValueError(f"block: expected (m, n) or (m, n, k), got {block!r}")
            sizes = list(zip(("m", "n", "k"), block))
        for d, v in sizes:
            fields[f"block_{d}"] = _size(f"block[{d!r}]" if isinstance(block, Mapping) else f"block {d}", v)
    if lhs_transposed:
        fields["lhs_transposed"] = True
    if perf_mode is not None:
        fields["perf_mode"] = str(perf_mode)
    if sparsity is not None:
        fields["sparsity"] = str(sparsity)
    return fields


def _cores(lnc: int, split: Optional[str]) -> Dict[str, Any]:
    """The flags ``lnc=`` and ``split=`` set (``--lnc``, ``--split``)."""
    fields: Dict[str, Any] = {}
    if lnc != 1:
        fields["lnc"] = _size("lnc", lnc)
    if split is not None:
        fields["split"] = str(split)
    return fields


class _HwFile:
    """``hw`` as a file path for ``--hw``: a path as given, a mapping written to a temp file."""

    def __init__(self, hw: Optional[Union[PathLike, Mapping[str, Any]]]) -> None:
        self._tmp: Optional[tempfile.TemporaryDirectory] = None
        self.path: Optional[str] = None
        if hw is None:
            return
        if isinstance(hw, Mapping):
            for key, v in hw.items():
                value = v.get("value") if isinstance(v, Mapping) else v
                if isinstance(value, float) and not math.isfinite(value):
                    raise ValueError(f"hw: `{key}` is {value}, not a finite number")
            self._tmp = tempfile.TemporaryDirectory(prefix="ntile-")
            self.path = os.path.join(self._tmp.name, "hw.json")
            with open(self.path, "w", encoding="utf-8") as f:
                json.dump(dict(hw), f, allow_nan=False)
        elif isinstance(hw, (str, os.PathLike)):
            self.path = os.fspath(hw)
        else:
            raise TypeError(f"hw: expected a path or a mapping of profile keys, got {type(hw).__name__}")

    def __enter__(self) -> Optional[str]:
        return self.path

    def __exit__(self, *exc: Any) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


def _to_numpy_c(c: Optional[np.ndarray], report: Dict[str, Any]) -> Optional[np.ndarray]:
    if c is None:
        return None
    c = c.reshape(report["m"], report["n"])
    want = _NUMPY_OF.get(report["out_dtype"], np.dtype(np.float32))
    # The simulator's C decoded to float32 is exact, so this cast gives back its bits.
    return c if want == c.dtype else c.astype(want)


def gemm(
    a: Any,
    b: Any,
    *,
    dtype: Optional[str] = None,
    out_dtype: str = "fp32",
    target: str = "trn2",
    schedule: str = "auto",
    block: Optional[Union[Tuple[int, ...], Mapping[str, int]]] = None,
    lhs_transposed: bool = False,
    perf_mode: Optional[str] = None,
    sparsity: Optional[str] = None,
    lnc: int = 1,
    split: Optional[str] = None,
    simulate: bool = True,
    check: bool = True,
    hw: Optional[Union[PathLike, Mapping[str, Any]]] = None,
    flags: Sequence[str] = (),
) -> GemmResult:
    """C = A @ B, planned, lowered, simulated byte-exactly and modeled for ``target``.

    See ``ntile/__init__.pyi`` for the full description of every argument.
    """
    (op_a, hbm_a), (op_b, hbm_b) = _operand("a", a), _operand("b", b)
    fields = _fields(dtype, out_dtype, target, schedule, block, lhs_transposed, perf_mode, sparsity)
    fields.update(_cores(lnc, split))
    if dtype is None:
        # The matmul dtype of an ml_dtypes operand is its own; float32 operands take the
        # CLI's default (bf16).
        if hbm_a != "fp32":
            fields["lhs_dtype"] = hbm_a
        if hbm_b != "fp32":
            fields["rhs_dtype"] = hbm_b
    # HBM holds one dtype for A and B: theirs when they agree, else fp32 (every narrow
    # value is exact in fp32, so the numbers are the same).
    fields["hbm_dtype"] = hbm_a if hbm_a == hbm_b else "fp32"
    flags = _words(flags)
    with _HwFile(hw) as hw_path:
        call = dict(fields, hw=hw_path, **_sim_fields(simulate, check))
        text, c, _ = _native.gemm(call, flags, op_a, op_b)
    report = json.loads(text)
    shape = {"m": report["m"], "k": report["k"], "n": report["n"]}
    result = GemmResult(report, _to_numpy_c(c, report), dict(fields, **shape), flags, hw)
    return _checked(result, simulate and check)


def model(
    m: int,
    k: int,
    n: int,
    *,
    dtype: Optional[str] = None,
    out_dtype: str = "fp32",
    target: str = "trn2",
    schedule: str = "auto",
    block: Optional[Union[Tuple[int, ...], Mapping[str, int]]] = None,
    lhs_transposed: bool = False,
    perf_mode: Optional[str] = None,
    sparsity: Optional[str] = None,
    lnc: int = 1,
    split: Optional[str] = None,
    simulate: bool = False,
    check: bool = True,
    hw: Optional[Union[PathLike, Mapping[str, Any]]] = None,
    flags: Sequence[str] = (),
) -> GemmResult:
    """Plan, lower and cycle-model an ``m x k x n`` GEMM without data.

    With ``simulate=True`` it also simulates seeded random inputs and checks them, as
    ``ntile gemm`` does with no ``--lhs``/``--rhs``.
    """
    fields = {"m": _size("m", m), "k": _size("k", k), "n": _size("n", n)}
    fields.update(_fields(dtype, out_dtype, target, schedule, block, lhs_transposed, perf_mode, sparsity))
    fields.update(_cores(lnc, split))
    flags = _words(flags)
    with _HwFile(hw) as hw_path:
        text, c, _ = _native.gemm(dict(fields, hw=hw_path, **_sim_fields(simulate, check)), flags)
    report = json.loads(text)
    result = GemmResult(report, _to_numpy_c(c, report), fields, flags, hw)
    return _checked(result, simulate and check)


def _is_path(kernel: Any) -> bool:
    """Whether ``kernel`` names a file rather than holding a kernel's text: a path object, or
    one line that does not start a kernel (``kernel``, ``program`` or JSON's ``{``)."""
    if isinstance(kernel, os.PathLike):
        return True
    if not isinstance(kernel, str) or "\n" in kernel.strip():
        return False
    if os.path.exists(kernel):
        return True
    first = kernel.lstrip()
    return not (first.startswith(("kernel ", "program ", "{", "#", ";")) or first == "")


def _input(name: str, x: Any) -> Tuple[np.ndarray, str, list]:
    """An input array as the native layer takes it: its bytes, its numpy type string and its
    shape; narrow floats as their bit patterns."""
    arr = np.ascontiguousarray(x)
    hbm = _HBM_DTYPES.get(arr.dtype)
    if hbm == "bf16":
        arr = arr.view(np.uint16)
    elif hbm is not None:
        arr = arr.view(np.uint8)
    return arr.reshape(-1).view(np.uint8), arr.dtype.str, list(arr.shape)


def run(
    kernel: Union[PathLike, str],
    inputs: Mapping[str, Any],
    *,
    target: Optional[str] = None,
    outputs: Optional[Sequence[str]] = None,
) -> RunResult:
    """Simulate a ``.pir``/``.bir`` kernel (a path, or its text) on numpy ``inputs``.

    Returns ``(outputs, report)``: each output tensor as a numpy array of its dtype (ml_dtypes
    for bf16/fp8), and the cycle model of the program.
    """
    if _is_path(kernel):
        path, text = os.fspath(kernel), None
        if not os.path.exists(path):
            raise FileNotFoundError(f"kernel: {path}: no such file (pass a path that exists, or the kernel's text)")
    elif isinstance(kernel, str):
        path, text = None, kernel
    else:
        raise TypeError(f"kernel: expected a path or the kernel's text, got {type(kernel).__name__}")
    if not isinstance(inputs, Mapping):
        raise TypeError(f"inputs: expected a mapping of tensor names to arrays, got {type(inputs).__name__}")
    if outputs is not None and (isinstance(outputs, (str, bytes)) or not hasattr(outputs, "__iter__")):
        raise TypeError(f"outputs: expected a sequence of tensor names, got {type(outputs).__name__}")
    viewed = {str(name): np.asarray(x) for name, x in inputs.items()}
    # Each input is copied twice (contiguous here, then into the simulator's memory): both
    # copies are charged before the first is made.
    _check_input_bytes(2 * sum(a.nbytes for a in viewed.values()))
    arrays = [(name, _input(name, a)) for name, a in viewed.items()]
    wanted = None if outputs is None else [str(o) for o in outputs]
    outs, report, stdout = _native.run(path, text, arrays, target, wanted)
    result: Dict[str, np.ndarray] = {}
    for name, dtype, shape, data in outs:
        want = _NUMPY_OF.get(dtype, np.dtype(np.uint8))
        result[name] = np.frombuffer(data, dtype=want).reshape(shape).copy()
    info = json.loads(report)
    info["stdout"] = stdout
    return RunResult(result, info)


def cli(*args: Union[str, "os.PathLike[str]"]) -> str:
    """Run any ``ntile`` command line in-process and return what it prints.

    ``ntile.cli("compile", "k.pir")`` is ``ntile compile k.pir``. Bad input raises
    ``ValueError``; a GEMM whose check fails (exit code 1) raises :class:`CheckFailed`'s base,
    ``AssertionError``, with the printed text.
    """
    text, code = _native.cli([os.fspath(a) for a in args])
    if code == 1:
        raise AssertionError(text)
    return text


def hw(target: str = "trn2", *, overrides: Optional[Union[PathLike, Mapping[str, Any]]] = None) -> Dict[str, Any]:
    """The hardware profile of ``target`` as ``ntile hw show --json`` prints it: every key
    with its ``value``, ``unit`` and ``source``, with ``overrides`` (a ``--hw`` file's path or
    the same JSON as a mapping) applied. The dict itself loads back as ``hw=``."""
    with _HwFile(overrides) as path:
        extra = [] if path is None else ["--hw", path]
        return json.loads(cli("hw", "show", "--target", str(target), "--json", *extra))


from ._calibrate import Calibration, calibrate  # noqa: E402 (it uses cli and _HwFile above)
