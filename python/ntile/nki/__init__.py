"""ntile.nki: NKI kernels on ntile, with the current NKI API (the standalone ``nki`` package).

Write or keep a kernel with ``import nki``, ``import nki.language as nl`` and
``import nki.isa as nisa`` and call ``ntile.nki.install()`` first (or import ``ntile.nki`` under
those names yourself); the legacy ``neuronxcc.nki`` API is :mod:`ntile.neuronxcc.nki`.

- ``@nki.jit``: calling the kernel with numpy arrays traces it and runs it on ntile's
  simulator (outputs back as numpy arrays).
- ``nki.simulate(kernel)(*arrays)``: the same, explicitly.
- ``nki.benchmark(warmup=, iters=)(kernel)(*args)``: models the kernel without data (arrays or
  ``nt.tensor[[8192, 4096], nl.bfloat16]`` placeholders); ``.benchmark_result.nc_latency
  .get_latency_percentile(p)`` is the modeled latency in microseconds.
- ``ntile.nki.profile(kernel, *args, target=...)``: outputs (with data), the report of
  ``ntile run --json``, and the timeline (``.trace(path)``, ``.svg()``).
- ``target`` follows ``NEURON_PLATFORM_TARGET_OVERRIDE`` when it is not given (default trn2).

Tracing is pure Python and numpy; only running a trace needs ntile's native module.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .._nki import run as _run
from .._nki.errors import NkiError, NkiIndexError, NkiTypeError, NkiUnsupportedError, NkiValueError
from .._nki.hook import install, uninstall
from .._nki.run import Kernel, Profile, TensorType
from . import language, isa, typing  # noqa: F401 (the API's submodules)

__all__ = ["jit", "simulate", "benchmark", "baremetal", "profile", "trace", "install", "uninstall", "language",
           "isa", "typing", "Kernel", "Profile", "NkiError", "dtype"]

# The type of a dtype value (``nl.bfloat16`` is the string ``"bfloat16"``), for annotations such
# as ``dtype: nki.dtype = nl.bfloat16``.
dtype = str


def jit(fn: Optional[Callable[..., Any]] = None, **kwargs: Any) -> Any:
    """Make ``fn`` an NKI kernel: called with numpy arrays it runs on ntile's simulator; called
    inside another kernel it is inlined."""
    return _run.jit_decorator("current", fn, **kwargs)


def simulate(kernel: Any) -> Callable[..., Any]:
    """``nki.simulate(kernel)(*arrays)``: trace the kernel, run it on ntile's simulator (fresh
    SBUF/PSUM reads are NaN, the race detector is on) and return its outputs as numpy arrays."""
    def run(*args: Any, **kwargs: Any) -> Any:
        return _run.simulate_call(kernel, args, kwargs, "current")
    return run


def benchmark(kernel: Any = None, **kwargs: Any) -> Any:
    """``nki.benchmark(warmup=, iters=)(kernel)`` or ``nki.benchmark(kernel, save_trace_name=...)``:
    calls model the kernel without data and set ``.benchmark_result.nc_latency``."""
    return _run.benchmark_decorator("current", kernel, **kwargs)


def baremetal(kernel: Any = None, **kwargs: Any) -> Any:
    """Like :func:`jit` (the kernel runs on ntile's simulator); ``save_trace_name`` receives
    ntile's modeled timeline."""
    return _baremetal("current", kernel, **kwargs)


class _Baremetal:
    """A kernel under ``nki.baremetal``: calling it simulates it (and saves ``save_trace_name``);
    ``kernel[grid]`` launches it on an SPMD grid, as for a ``jit`` kernel."""

    def __init__(self, kernel: Any, api: str, save_neff_name: Optional[str], save_trace_name: Optional[str]) -> None:
        self._kernel = kernel
        self.func, k_api = _run.unwrap(kernel)
        self.api = k_api or api
        self.__name__ = self.func.__name__
        self._saves = (save_neff_name, save_trace_name)

    def __call__(self, *args: Any, **kw: Any) -> Any:
        k = self._kernel
        traced = _run.trace_kernel(self.func, args, kw, self.api, _run.target_of(k), _run.grid_of(k))
        handle = _run.execute(traced, simulate=True)
        _run.save_artifacts(handle, self.func.__name__, *self._saves)
        return _run.outputs_of(traced, handle)

    @property
    def grid(self) -> Any:
        return _run.grid_of(self._kernel)

    @property
    def options(self) -> Any:
        return getattr(self._kernel, "options", {})

    def __getitem__(self, grid: Any) -> "_Baremetal":
        k = self._kernel if isinstance(self._kernel, _run.Kernel) else _run.Kernel(self.func, self.api)
        return _Baremetal(k[grid], self.api, *self._saves)


def _baremetal(api: str, kernel: Any, save_neff_name: Optional[str] = None, save_trace_name: Optional[str] = None,
               **_ignored: Any) -> Any:
    def wrap(k: Any) -> _Baremetal:
        return _Baremetal(k, api, save_neff_name, save_trace_name)
    return wrap if kernel is None else wrap(kernel)


def profile(kernel: Any, *args: Any, target: Optional[str] = None, **kwargs: Any) -> Profile:
    """Trace ``kernel(*args, **kwargs)`` and run it: simulated when every tensor argument is an
    array (then ``.outputs`` holds its outputs), modeled in any case (``.report``,
    ``.modeled_time_us``, ``.trace(path)``, ``.svg()``, ``.emit("penguin" | "bir")``)."""
    return _run.profile_call(kernel, args, kwargs, "current", target)


def trace(kernel: Any, *args: Any, target: Optional[str] = None, **kwargs: Any) -> str:
    """The trace of ``kernel(*args, **kwargs)`` as JSON (format ``ntile-nki-trace``), without
    running it. Arguments may be arrays or ``nt.tensor[...]`` placeholders."""
    fn, api = _run.unwrap(kernel)
    return _run.trace_kernel(fn, args, kwargs, api or "current", _run.target_of(kernel, target),
                             _run.grid_of(kernel)).json()
