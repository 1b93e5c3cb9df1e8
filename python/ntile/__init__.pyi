"""ntile from Python: plan, lower, simulate and model tiled GEMMs on numpy arrays.

Every function runs the same Rust code as the ``ntile`` command line, with the GIL released
(Ctrl-C stops a long run with ``KeyboardInterrupt``). Bad input raises ``ValueError`` with
the CLI's message; an internal failure (a bug) raises ``RuntimeError``.
"""

import os
from typing import Any, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

__version__: str

PathLike = Union[str, os.PathLike[str]]
Block = Union[Tuple[int, ...], Mapping[str, int]]
"""Block sizes in elements: ``(m, n)``, ``(m, n, k)`` or ``{"m": .., "n": .., "k": ..}``."""
Hw = Union[PathLike, Mapping[str, Any]]
"""A hardware profile for ``--hw``: a JSON file's path, or the profile as a mapping."""

class CheckFailed(AssertionError):
    """The simulated C disagrees with the fp64 reference beyond the error bound
    ``|c - ref| <= 2*K*eps32*(|A|@|B|)``; ``.result`` holds the :class:`GemmResult`."""

    result: GemmResult
    def __init__(self, result: GemmResult) -> None: ...

class Config:
    """The keyword arguments of :func:`gemm` / :func:`model` as one frozen, picklable value
    (a dataclass: ``dataclasses.replace(cfg, target="trn1")`` makes a variant)."""

    dtype: Optional[str]
    out_dtype: str
    target: str
    schedule: str
    block: Optional[Block]
    lhs_transposed: bool
    perf_mode: Optional[str]
    sparsity: Optional[str]
    simulate: Optional[bool]
    """None: each function's default (:func:`gemm` simulates, :func:`model` does not)."""
    check: bool
    hw: Optional[Hw]
    flags: Tuple[str, ...]
    def __init__(
        self,
        dtype: Optional[str] = None,
        out_dtype: str = "fp32",
        target: str = "trn2",
        schedule: str = "auto",
        block: Optional[Block] = None,
        lhs_transposed: bool = False,
        perf_mode: Optional[str] = None,
        sparsity: Optional[str] = None,
        simulate: Optional[bool] = None,
        check: bool = True,
        hw: Optional[Hw] = None,
        flags: Tuple[str, ...] = (),
    ) -> None: ...
    def kwargs(self) -> Dict[str, Any]:
        """The fields as keyword arguments of :func:`gemm` / :func:`model`."""
    def gemm(self, a: Any, b: Any) -> GemmResult:
        """:func:`gemm` with this configuration."""
    def model(self, m: int, k: int, n: int) -> GemmResult:
        """:func:`model` with this configuration."""

class GemmResult:
    """What :func:`gemm` and :func:`model` return. Pickles (without any native state)."""

    c: Optional[np.ndarray]
    """The simulated C ``[M, N]``: float32, float16, or ``ml_dtypes.bfloat16`` per
    ``out_dtype``; None when not simulated."""
    report: Dict[str, Any]
    """The ``ntile gemm --json`` report: the same keys, in the same order (``target, m, k,
    n, lhs_dtype, ..., hbm_bytes, check, modeled_time_us, hfu, engine_busy, ...``)."""
    @property
    def check(self) -> Optional[Dict[str, Any]]:
        """``report["check"]``: ``max_abs_err``, ``max_rel_err``, ``passed``, ``failures``;
        None when not simulated."""
    @property
    def modeled_time_us(self) -> float:
        """``report["modeled_time_us"]``: the cycle model's time in microseconds."""
    def trace(self, path: PathLike) -> None:
        """Write the modeled engine timeline to ``path`` as Chrome/Perfetto trace-event JSON
        (open it in ui.perfetto.dev or chrome://tracing). The plan is modeled again from the
        same flags; nothing is simulated."""
    def svg(self) -> str:
        """The modeled engine timeline as SVG text (a row per engine, busy percentages, a
        time axis in us); computed on first use, then kept."""
    def _repr_svg_(self) -> str:
        """Jupyter shows a result as its timeline."""

class RunResult(NamedTuple):
    """What :func:`run` returns; unpacks as ``outputs, report``."""

    outputs: Dict[str, np.ndarray]
    """Each output tensor by name, as a numpy array of its dtype (ml_dtypes for bf16/fp8)."""
    report: Dict[str, Any]
    """The cycle model of the program (``kernel, target, bir_instructions, hbm_bytes,
    modeled_time_us, hfu, engine_busy``), its HBM ``tensors`` (name, dtype, shape, role) and
    the text ``ntile run`` printed (``stdout``)."""

def gemm(
    a: Any,
    b: Any,
    *,
    dtype: Optional[str] = None,
    out_dtype: str = "fp32",
    target: str = "trn2",
    schedule: str = "auto",
    block: Optional[Block] = None,
    lhs_transposed: bool = False,
    perf_mode: Optional[str] = None,
    sparsity: Optional[str] = None,
    lnc: int = 1,
    split: Optional[str] = None,
    simulate: bool = True,
    check: bool = True,
    hw: Optional[Hw] = None,
    flags: Sequence[str] = (),
) -> GemmResult:
    """C = A @ B: plan, lower, simulate byte-exactly, check against fp64, cycle-model.

    Args:
        a: A ``[M, K]`` (``[K, M]`` with ``lhs_transposed``). float32 and float16 arrays are
            stored fp32 in HBM and cast to the matmul dtype by the modeled DMA, as the CLI
            does with ``.npy`` files; ``ml_dtypes`` ``bfloat16`` / ``float8_e4m3`` /
            ``float8_e4m3fn`` / ``float8_e5m2`` arrays are taken as they are (HBM holds that
            dtype; if A and B differ, both are held fp32, which gives the same numbers).
            Any strides; a float32 C-contiguous array is read in place.
        b: B ``[K, N]``, likewise.
        dtype: matmul dtype of both operands (``fp32``, ``bf16``, ``fp16``, ``fp8e4m3``,
            ``fp8e5m2``, ``fp8e4m3fn`` on trn3). Default: an ml_dtypes operand's own dtype,
            else bf16.
        out_dtype: dtype of C: ``fp32``, ``bf16`` or ``fp16``.
        target: ``trn1``, ``trn2`` or ``trn3``.
        schedule: ``naive``, ``hoisted``, ``blocked-mn``, ``blocked-mnk`` or ``auto`` (search
            with the cycle model).
        block: block sizes of the blocked schedules, ``(m, n[, k])`` or a dict (without it,
            an explicit blocked schedule gets the blocks the cycle model finds best for it).
        lhs_transposed: A is given as ``[K, M]``.
        perf_mode: ``double_row`` (trn2/trn3, fp8 operands) or None.
        sparsity: structured sparsity of A along K (``1:2``, ``2:4``, ``4:8``, ``4:12``,
            ``4:16``); A must already satisfy it.
        lnc: physical cores (``2``: the two cores of a logical NeuronCore on trn2/trn3,
            sharing HBM and its bandwidth; trn1 refuses it). C is divided between them and
            ``report["lnc"]`` holds each core's share and figures.
        split: how ``lnc=2`` divides the GEMM: ``m`` (bands of C's rows), ``n`` (bands of
            columns) or ``k`` (halves of the contraction: each core an fp32 partial sum of
            C, the two added after a shared semaphore); default: all three planned and the
            fastest by the cycle model kept.
        simulate: simulate and check (else plan and model only; ``c`` is None).
        check: check C against the fp64 reference and raise :class:`CheckFailed` when it
            is outside the error bound; ``False`` skips the check (``report["check"]`` is
            None, as with ``ntile gemm --no-check``).
        hw: hardware profile for ``--hw`` (needs an ntile with hardware profiles).
        flags: more ``ntile gemm`` flags, e.g. ``["--order", "n-outer"]``.

    Raises:
        ValueError: bad input, with the CLI's message.
        CheckFailed: the result is outside the error bound (with ``check=True``).
        KeyboardInterrupt: Ctrl-C during the run.
    """

def model(
    m: int,
    k: int,
    n: int,
    *,
    dtype: Optional[str] = None,
    out_dtype: str = "fp32",
    target: str = "trn2",
    schedule: str = "auto",
    block: Optional[Block] = None,
    lhs_transposed: bool = False,
    perf_mode: Optional[str] = None,
    sparsity: Optional[str] = None,
    lnc: int = 1,
    split: Optional[str] = None,
    simulate: bool = False,
    check: bool = True,
    hw: Optional[Hw] = None,
    flags: Sequence[str] = (),
) -> GemmResult:
    """Plan, lower and cycle-model an ``m x k x n`` GEMM without data (operands fp32 in
    HBM, as :func:`gemm` stores float32 arrays; ``flags=["--hbm-dtype", "bf16"]`` for bf16).

    With ``simulate=True`` it also simulates seeded random inputs and checks them. The
    other arguments are those of :func:`gemm`. Cheap to call from a process pool: the
    arguments and the result pickle.
    """

def run(
    kernel: Union[PathLike, str],
    inputs: Mapping[str, Any],
    *,
    target: Optional[str] = None,
    outputs: Optional[Sequence[str]] = None,
) -> RunResult:
    """Simulate a hand-written kernel on numpy inputs, as ``ntile run`` does.

    Args:
        kernel: a ``.pir`` / ``.bir`` (or JSON) file's path, or the kernel's text.
        inputs: every input tensor by name. Float tensors take float32 or float16 arrays
            (cast as the DMA would); bf16 / fp8 tensors also take ml_dtypes arrays as they
            are; integer tensors take the matching integer arrays.
        target: target to lower a Penguin kernel for (default trn2); a BIR program names its
            own.
        outputs: the tensors to return (default: the kernel's outputs).

    Raises:
        ValueError: a bad kernel, a missing or misshapen input, a simulation error in the
            program (a race, a read of an open PSUM group), with the CLI's message.
    """

def cli(*args: PathLike) -> str:
    """Run any ``ntile`` command line in-process (``ntile.cli("verify", "k.pir")``) and return
    what it prints. Raises ``ValueError`` for bad input, ``AssertionError`` when a GEMM's check
    fails (exit code 1)."""

def hw(target: str = "trn2", *, overrides: Optional[Hw] = None) -> Dict[str, Any]:
    """The hardware profile of ``target`` as ``ntile hw show --json`` prints it: ``{"target":
    ..., KEY: {"value", "unit", "source", "about"}, ...}``, with ``overrides`` (a ``--hw``
    file's path or the same JSON as a mapping) applied; the dict loads back as ``hw=``.
    Needs an ntile with hardware profiles (``ValueError`` otherwise)."""

class Calibration(NamedTuple):
    """What :func:`calibrate` returns."""

    profile: Dict[str, Any]
    """The fitted profile, in the JSON form ``hw=`` takes."""
    report: str
    """What ``ntile calibrate`` printed: each row's modeled and measured time before and
    after the fit, and the mean absolute percentage error."""

def calibrate(
    measured: Union[PathLike, Sequence[Mapping[str, Any]]],
    *,
    target: str = "trn2",
    fit: Optional[Sequence[str]] = None,
    hw: Optional[Hw] = None,
) -> Calibration:
    """Fit hardware profile keys to measured GEMM times, as ``ntile calibrate`` does.

    Args:
        measured: the CSV file's path, or its rows as mappings with the columns ``m, k, n,
            dtype, schedule, block_m, block_n, block_k, lhs_transposed, target,
            measured_us`` (a missing or None cell is empty: the blocks ``ntile gemm`` picks for the
            schedule).
        target: target of every row.
        fit: the profile keys to fit (default: the CLI's).
        hw: the starting profile.

    Needs an ntile with hardware profiles (``ValueError`` otherwise).
    """
