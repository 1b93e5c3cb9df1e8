"""ntile.neuronxcc.nki: NKI kernels on ntile, with the legacy ``neuronxcc.nki`` API.

An unchanged legacy kernel (``from neuronxcc import nki``, ``import neuronxcc.nki.language as
nl``) runs after ``ntile.nki.install()``:

- ``@nki.jit`` (any ``mode``), ``nki.trace``, ``nki.baremetal``: calling the kernel with numpy
  arrays traces it and runs it on ntile's simulator; ``nki.simulate_kernel(kernel, *arrays)``
  does the same explicitly. Outputs come back as numpy arrays; kernel arguments the kernel
  writes are updated in place.
- ``nki.benchmark(warmup=, iters=)(kernel)`` / ``nki.benchmark(kernel, save_trace_name=...)``:
  models the kernel without data and sets ``.benchmark_result.nc_latency``
  (``get_latency_percentile(p)`` is the modeled latency in microseconds).
- ``nki.profile(working_directory=..., save_trace_name=...)``: writes ntile's modeled timeline.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Optional

from ..._nki import run as _run
from ..._nki.run import TensorType, Kernel  # noqa: F401
from ...nki import _baremetal
from . import compiler, isa, language, typing  # noqa: F401
from .typing import tensor  # noqa: F401


def jit(func: Optional[Callable[..., Any]] = None, mode: str = "auto", **kwargs: Any) -> Any:
    """Make ``func`` an NKI kernel (every ``mode`` runs it on ntile when called with arrays)."""
    return _run.jit_decorator("legacy", func, mode=mode, **kwargs)


trace = jit


def simulate_kernel(kernel: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ``kernel(*args)`` on ntile's simulator (fresh SBUF/PSUM reads are NaN, the race
    detector is on) and return its outputs as numpy arrays."""
    return _run.simulate_call(kernel, args, kwargs, "legacy")


def benchmark(kernel: Any = None, **kwargs: Any) -> Any:
    """``@nki.benchmark(warmup=, iters=, save_trace_name=)``: each call models the kernel without
    data and sets ``.benchmark_result.nc_latency``."""
    return _run.benchmark_decorator("legacy", kernel, **kwargs)


def baremetal(kernel: Any = None, **kwargs: Any) -> Any:
    return _baremetal("legacy", kernel, **kwargs)


def profile(func: Any = None, working_directory: Optional[str] = None, save_neff_name: Optional[str] = None,
            save_trace_name: Optional[str] = "profile.ntff", **_ignored: Any) -> Any:
    """``@nki.profile(working_directory=...)``: each call models the kernel and writes ntile's
    timeline into ``working_directory``."""
    def wrap(k: Any) -> Callable[..., None]:
        fn, api = _run.unwrap(k)

        def call(*args: Any, **kw: Any) -> None:
            traced = _run.trace_kernel(fn, args, kw, api or "legacy")
            handle = _run.execute(traced, simulate=False)
            if working_directory:
                os.makedirs(working_directory, exist_ok=True)
            _run.save_artifacts(handle, fn.__name__, save_neff_name, save_trace_name, working_directory)

        call.__name__ = fn.__name__
        return call
    return wrap if func is None else wrap(func)


def FrameworkKernel(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 (NKI's name)
    raise NotImplementedError("neuronxcc.nki.FrameworkKernel (framework integration) is not supported by ntile")
