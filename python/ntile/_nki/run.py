"""Tracing a kernel, and the entry points that run the trace (simulate, benchmark, profile).

:func:`trace_kernel` runs the kernel's Python once: every tensor argument (a numpy array or a
shape placeholder ``nt.tensor[[8192, 4096], nl.bfloat16]``) becomes an input of the trace named
after its parameter; other arguments pass through as Python values. The trace then goes to the
runner, ``ntile._native.nki_run(trace_json, inputs, options) -> handle`` (imported only when a
kernel runs), whose handle gives ``.outputs() -> {name: ndarray}``, ``.report() -> dict`` (the
keys of ``ntile run --json``), ``.trace(path)``, ``.svg() -> str`` and ``.emit(form) -> str``.
``options`` holds ``target`` (``trn1``/``trn2``/``trn3``), ``simulate`` (run the data, with fresh
SBUF/PSUM reading as NaN and the race detector on) and ``race_check``.
"""

from __future__ import annotations

import inspect
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import dtypes, spmd
from .errors import NkiError, NkiTypeError, NkiUnsupportedError, NkiValueError
from .trace import _STACK, Storage, Trace, active
from .view import View

_TARGETS = {"trn1": "trn1", "inf2": "trn1", "gen2": "trn1", "trn2": "trn2", "gen3": "trn2", "trn3": "trn3",
            "gen4": "trn3"}
DEFAULT_TARGET = "trn2"

_VIEW_CLASSES: Dict[str, type] = {}

# A stand-in for ntile._native.nki_run (tests run traces through a numpy interpreter with it).
RUNNER: Optional[Callable[[str, Optional[Dict[str, np.ndarray]], Dict[str, Any]], Any]] = None


def register_api(api: str, view_class: type) -> None:
    _VIEW_CLASSES[api] = view_class


def resolve_target(target: Optional[str] = None) -> str:
    """``target``, else ``NEURON_PLATFORM_TARGET_OVERRIDE``, else trn2 (NKI's spellings accepted)."""
    t = target if target is not None else os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE") or DEFAULT_TARGET
    found = _TARGETS.get(str(t).lower())
    if found is None:
        raise ValueError(f"unknown target {t!r} (expected trn1, trn2 or trn3; NKI's inf2/gen2/gen3/gen4 also work)")
    return found


class TensorType:
    """A tensor argument known by shape and dtype only (``nt.tensor[[8192, 4096], nl.bfloat16]``):
    the kernel is traced and modeled without data."""

    def __init__(self, shape: Sequence[int], dtype: Any = None) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"tensor[{list(self.shape)}, {self.dtype}]"


def _is_array(x: Any) -> bool:
    # A class such as np.float32 (a dtype argument) has these attributes too, unbound.
    return isinstance(x, np.ndarray) or (hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__array__")
                                         and not isinstance(x, (View, np.generic, type)))


class Traced:
    """A traced kernel: the trace, the input arrays by name (None for a placeholder), the
    structure of what it returned, and the in-place outputs (written kernel arguments)."""

    def __init__(self, trace: Trace, inputs: Dict[str, Optional[np.ndarray]], returned: Any,
                 in_place: List[Tuple[str, np.ndarray]]) -> None:
        self.trace = trace
        self.inputs = inputs
        self.returned = returned
        self.in_place = in_place

    def json(self) -> str:
        return self.trace.to_json()

    def data(self) -> Optional[Dict[str, np.ndarray]]:
        """Every input's array, or None when some input is a placeholder."""
        if any(v is None for v in self.inputs.values()):
            return None
        return dict(self.inputs)  # type: ignore[arg-type]


def _input(T: Trace, name: str, value: Any, loc: List[int]) -> Tuple[View, Optional[np.ndarray]]:
    if isinstance(value, TensorType):
        if value.dtype is None:
            raise NkiValueError(f"argument '{name}': a shape placeholder needs a dtype "
                                f"(nt.tensor[{list(value.shape)}, nl.bfloat16])")
        dt, shape, data = dtypes.name_of(value.dtype), value.shape, None
    else:
        arr = np.asarray(value)
        if arr.dtype == np.float64:
            raise NkiValueError(f"argument '{name}' holds float64, which NKI has no type for; "
                                f"pass {name}.astype(np.float32)")
        try:
            dt = dtypes.name_of(arr.dtype)
        except dtypes.DTypeError as e:
            raise NkiValueError(f"argument '{name}': {e}") from None
        if arr.dtype == np.bool_:
            arr = arr.view(np.uint8)  # NKI's bool is uint8: 0 and 1, the same bytes
        shape, data = tuple(arr.shape), arr
    if not shape:
        raise NkiValueError(f"argument '{name}' is a 0-d array; pass a Python number for a scalar")
    st = T.new_storage(name, "input", dt, shape, 0, site=(T._site_id(("input", name)), loc, name))
    return T.view_class.whole(st), data


def _programs(T: Trace, fn: Callable[..., Any], args: List[Any], kwargs: Dict[str, Any], grid: spmd.Grid) -> Any:
    """Every program of an SPMD grid: ``nl.program_id`` gives each its coordinates and shared
    HBM tensors are shared. Programs on one core run one after the other (a loop per grid
    axis); with an axis on several cores, each core's programs are traced in turn and the
    trace marks where each core's records begin."""
    ret: Any = None
    T.grid = grid.sizes
    spmd.check_target(grid, T.target, getattr(fn, "__name__", "kernel"))

    def level(axis: int, coords: Tuple[int, ...], core: int) -> None:
        nonlocal ret
        if axis == len(grid.sizes):
            T.program = coords
            T.shared_seen = {}
            ret = fn(*args, **kwargs)
            return
        indices = grid.programs_of(core) if axis == grid.core_axis else range(grid.sizes[axis])
        T.emit({"op": "loop_begin", "loc": T.loc(), "kind": "affine", "trips": len(indices)})
        for n, i in enumerate(indices):
            T.emit({"op": "iteration", "loc": T.loc(), "index": n})
            level(axis + 1, coords + (i,), core)
        T.emit({"op": "loop_end", "loc": T.loc()})

    if grid.core_axis is None or grid.cores == 1:
        level(0, (), 0)
        return ret
    for core in range(grid.cores):
        T.cores.append(len(T.ops))
        level(0, (), core)
    return ret


def trace_kernel(fn: Callable[..., Any], args: Sequence[Any], kwargs: Dict[str, Any], api: str,
                 target: Optional[str] = None, grid: Optional[spmd.Grid] = None) -> Traced:
    """Run ``fn`` once (once per program of ``grid``) with its tensor arguments as trace inputs
    and return the trace."""
    if active() is not None:
        raise NkiError("a kernel cannot be traced while another one is being traced")
    view_class = _VIEW_CLASSES.get(api)
    if view_class is None:
        raise RuntimeError(f"the {api} NKI API is not loaded")
    T = Trace(fn.__name__, api, resolve_target(target), view_class)
    code = getattr(fn, "__code__", None)
    loc = [T.file_index(code.co_filename), code.co_firstlineno] if code is not None else [T.file_index("<kernel>"), 0]
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{fn.__name__}: {e}") from None
    bound.apply_defaults()
    inputs: Dict[str, Optional[np.ndarray]] = {}
    in_arrays: Dict[int, Tuple[str, Any]] = {}
    call_args: List[Any] = []
    call_kwargs: Dict[str, Any] = {}
    sig = inspect.signature(fn)
    for pname, value in bound.arguments.items():
        kind = sig.parameters[pname].kind

        def conv(name: str, v: Any) -> Any:
            if isinstance(v, TensorType) or _is_array(v):
                view, data = _input(T, name, v, loc)
                inputs[view.st.name] = data
                if data is not None:
                    in_arrays[id(view.st)] = (view.st.name, v)
                return view
            return v

        if kind == inspect.Parameter.VAR_POSITIONAL:
            call_args.extend(conv(f"{pname}{i}", v) for i, v in enumerate(value))
        elif kind == inspect.Parameter.VAR_KEYWORD:
            for k, v in value.items():
                call_kwargs[k] = conv(k, v)
        elif kind == inspect.Parameter.KEYWORD_ONLY:
            call_kwargs[pname] = conv(pname, value)
        else:
            call_args.append(conv(pname, value))
    _STACK.append(T)
    T.entry = sys._getframe(0)
    try:
        if grid is None:
            ret = _stored_out(T, fn(*call_args, **call_kwargs))
        else:
            ret = _programs(T, fn, call_args, call_kwargs, grid)
    finally:
        _STACK.pop()
        T.open = False
    returned = _returned(T, ret)
    outs: List[Storage] = []
    for st in _flatten(returned):
        if st not in outs:
            outs.append(st)
    in_place = []
    for st in T.storages:
        if st.buffer == "input" and st.written:
            if st not in outs:
                outs.append(st)
            if id(st) in in_arrays:
                in_place.append(in_arrays[id(st)])
    T.outputs = outs
    return Traced(T, inputs, returned, in_place)


def _stored_out(T: Trace, ret: Any) -> Any:
    """The returned value with each on-chip tile stored into a new HBM tensor of its shape (as
    NKI's simulation returns a tile's values), by a DMA the model charges; HBM tensors as they
    are."""
    if isinstance(ret, View) and ret.st.on_chip:
        from . import alloc, ops, values  # noqa: PLC0415

        if ret.st.buffer == "psum":
            ret = values.in_sbuf(ret)
        out = alloc.new_tensor(ret.tile_counts(), ret.st.dtype, "shared_hbm", name=ret.st.name + "_out")
        ops.dma_copy(out, ret)
        return out
    if isinstance(ret, (tuple, list)):
        return type(ret)(_stored_out(T, r) for r in ret)
    if isinstance(ret, dict):
        return {k: _stored_out(T, v) for k, v in ret.items()}
    return ret


def _returned(T: Trace, ret: Any) -> Any:
    """The structure of the returned value with each tensor replaced by its storage."""
    if ret is None:
        return None
    if isinstance(ret, View):
        st = ret.st
        if st.on_chip:
            raise NkiValueError(f"{T.kernel} returns an on-chip tile ('{st.name}'); a kernel returns HBM tensors "
                                "(nl.ndarray(..., buffer=nl.shared_hbm)) it stored its results into",
                                at=(T.files[st.loc[0]], st.loc[1]))
        if st.buffer == "private_hbm":
            st.buffer = "shared_hbm"
        return st
    if isinstance(ret, (tuple, list)):
        return type(ret)(_returned(T, r) for r in ret)
    if isinstance(ret, dict):
        return {k: _returned(T, v) for k, v in ret.items()}
    raise NkiTypeError(f"{T.kernel} returns a {type(ret).__name__}; a kernel returns HBM tensors (or nothing)")


def _flatten(x: Any) -> List[Storage]:
    if x is None:
        return []
    if isinstance(x, Storage):
        return [x]
    if isinstance(x, dict):
        return [s for v in x.values() for s in _flatten(v)]
    return [s for v in x for s in _flatten(v)]


def _restructure(x: Any, outputs: Dict[str, np.ndarray]) -> Any:
    if x is None:
        return None
    if isinstance(x, Storage):
        return outputs[x.name]
    if isinstance(x, dict):
        return {k: _restructure(v, outputs) for k, v in x.items()}
    return type(x)(_restructure(v, outputs) for v in x)


def runner() -> Callable[..., Any]:
    if RUNNER is not None:
        return RUNNER
    try:
        from .. import _native  # noqa: PLC0415 (the tracer never needs it)
    except ImportError as e:
        raise RuntimeError(f"ntile's native module is not available ({e}); the tracer works without it, "
                           "running a kernel does not") from None
    fn = getattr(_native, "nki_run", None)
    if fn is None:
        raise NotImplementedError("this build of ntile has no NKI runner (ntile._native.nki_run)")
    return fn


def execute(traced: Traced, simulate: bool, target: Optional[str] = None) -> Any:
    """Hand the trace to the runner; the handle."""
    data = traced.data() if simulate else None
    if simulate and data is None:
        missing = [k for k, v in traced.inputs.items() if v is None]
        raise ValueError(f"{traced.trace.kernel}: running a kernel needs an array for every tensor argument; "
                         f"{missing} are shape placeholders (benchmark or profile model without data)")
    options = {"target": traced.trace.target, "simulate": bool(simulate), "race_check": bool(simulate)}
    return runner()(traced.json(), data, options)


def outputs_of(traced: Traced, handle: Any) -> Any:
    """The kernel's return value as numpy arrays; written kernel arguments are updated in place."""
    outs = handle.outputs()
    for name, arr in traced.in_place:
        if name in outs and isinstance(arr, np.ndarray):
            arr[...] = outs[name].reshape(arr.shape).astype(arr.dtype, copy=False)
    return _restructure(traced.returned, outs)


def unwrap(kernel: Any) -> Tuple[Callable[..., Any], Optional[str]]:
    """The Python function of a kernel (a ``@nki.jit`` object or a plain function) and its API
    (for a plain function, the API whose modules its globals hold, if only one)."""
    fn = getattr(kernel, "func", None)
    if fn is not None and callable(fn):
        return fn, getattr(kernel, "api", None)
    if callable(kernel):
        return kernel, _api_of_globals(kernel)
    raise TypeError(f"not a kernel: {kernel!r}")


def _api_of_globals(fn: Callable[..., Any]) -> Optional[str]:
    found = set()
    for v in getattr(fn, "__globals__", {}).values():
        name = getattr(v, "__name__", None)
        if not isinstance(name, str) or not hasattr(v, "__spec__"):
            continue
        if name.startswith("ntile.neuronxcc"):
            found.add("legacy")
        elif name.startswith("ntile.nki"):
            found.add("current")
    return found.pop() if len(found) == 1 else None


def grid_of(kernel: Any) -> Optional[spmd.Grid]:
    return getattr(kernel, "grid", None)


def target_of(kernel: Any, target: Optional[str] = None) -> Optional[str]:
    """``target`` if given, else the kernel's ``platform_target`` (``@nki.jit(platform_target=)``),
    else None (the environment's or the default, see :func:`resolve_target`)."""
    if target is not None:
        return target
    return getattr(kernel, "options", {}).get("platform_target")


def simulate_call(kernel: Any, args: Sequence[Any], kwargs: Dict[str, Any], api: str) -> Any:
    fn, k_api = unwrap(kernel)
    traced = trace_kernel(fn, args, kwargs, k_api or api, target_of(kernel), grid_of(kernel))
    return outputs_of(traced, execute(traced, simulate=True))


class Kernel:
    """What ``@nki.jit`` makes: called inside another kernel it is inlined; called with numpy
    arrays it is traced and run by ntile's simulator (the outputs come back as numpy arrays)."""

    def __init__(self, func: Callable[..., Any], api: str, grid: Optional[spmd.Grid] = None,
                 **options: Any) -> None:
        self.func = func
        self.api = api
        self.grid = grid
        self.options = options
        self.__name__ = getattr(func, "__name__", "kernel")
        self.__doc__ = getattr(func, "__doc__", None)
        self.__wrapped__ = func

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        T = active()
        if T is not None:
            if self.grid is not None and self.grid.cores > 1:
                raise NkiUnsupportedError("a kernel launched on several NeuronCores called from inside another kernel "
                                          "(launch it on the cores from Python)", at=None)
            if self.grid is not None:
                return _programs(T, self.func, list(args), kwargs, self.grid)
            return self.func(*args, **kwargs)
        return simulate_call(self, args, kwargs, self.api)

    def __getitem__(self, grid: Any) -> "Kernel":
        """``kernel[grid]``: an SPMD launch grid. Integer axes of the legacy API run their
        programs one after the other on one NeuronCore; ``nl.nc(n)`` and ``nl.spmd_dim`` axes
        (and ``kernel[n]`` in the current API) place them on ``n`` physical cores that share
        HBM (see ``ntile._nki.spmd``)."""
        g = grid if isinstance(grid, tuple) else (grid,)
        if self.api == "current" and all(isinstance(x, int) and not isinstance(x, bool) and x == 1 for x in g):
            return self  # one core: the kernel itself (a legacy grid of ones still numbers its axes)
        return Kernel(self.func, self.api, spmd.parse(g, self.api, self.__name__), **self.options)

    def __repr__(self) -> str:
        return f"<ntile NKI kernel {self.__name__} ({self.api} API)>"


def jit_decorator(api: str, func: Optional[Callable[..., Any]] = None, **options: Any) -> Any:
    if func is None:
        return lambda f: Kernel(unwrap(f)[0], api, **options)
    if isinstance(func, Kernel):
        return func
    return Kernel(func, api, **options)


class Latency:
    """``benchmark_result.nc_latency``: every percentile is the modeled latency (microseconds)."""

    def __init__(self, us: float) -> None:
        self.us = float(us)

    def get_latency_percentile(self, percentile: int) -> float:
        p = float(percentile)
        if not 0 <= p <= 100:
            raise ValueError(f"percentile {percentile} is outside [0, 100]")
        return self.us

    def __repr__(self) -> str:
        return f"<modeled latency {self.us:.3f} us>"


class BenchmarkResult:
    def __init__(self, us: float, report: Dict[str, Any]) -> None:
        self.nc_latency = Latency(us)
        self.report = report


def _trace_file(name: str) -> str:
    """Where a trace requested as ``name`` is written: never under a NEFF/NTFF name."""
    root, ext = os.path.splitext(os.fspath(name))
    if ext.lower() in (".ntff", ".neff", ""):
        return root + ".trace.json"
    return os.fspath(name)


def save_artifacts(handle: Any, kernel: str, save_neff_name: Optional[str], save_trace_name: Optional[str],
                   directory: Optional[str] = None) -> List[str]:
    """Write ntile's timeline where the kernel asked for a trace; say what was (and was not) written."""
    written = []
    if save_trace_name:
        path = _trace_file(save_trace_name)
        if directory:
            path = os.path.join(directory, path)
        handle.trace(path)
        written.append(path)
        print(f"ntile: wrote the modeled timeline of {kernel} (Chrome/Perfetto trace JSON, not an NTFF) to {path}")
    if save_neff_name:
        print(f"ntile: no NEFF is produced for {kernel} (ntile models the kernel; '{save_neff_name}' was not written)")
    return written


class Benchmarked:
    """What ``nki.benchmark`` makes: each call traces and models the kernel without data and
    sets ``.benchmark_result.nc_latency``."""

    def __init__(self, kernel: Any, api: str, target: Optional[str] = None, save_neff_name: Optional[str] = None,
                 save_trace_name: Optional[str] = None, **_ignored: Any) -> None:
        self.func, k_api = unwrap(kernel)
        self.api = k_api or api
        self.grid = grid_of(kernel)
        self.target = target_of(kernel, target)
        self.save_neff_name = save_neff_name
        self.save_trace_name = save_trace_name
        self.benchmark_result: Optional[BenchmarkResult] = None
        self.__name__ = getattr(self.func, "__name__", "kernel")

    def __getitem__(self, grid: Any) -> "Benchmarked":
        """``bench[grid]``: the same benchmark of an SPMD launch (see ``Kernel.__getitem__``)."""
        launched = Kernel(self.func, self.api)[grid]
        return Benchmarked(launched, self.api, self.target, self.save_neff_name, self.save_trace_name)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        traced = trace_kernel(self.func, args, kwargs, self.api, self.target, self.grid)
        handle = execute(traced, simulate=False)
        report = handle.report()
        self.benchmark_result = BenchmarkResult(report["modeled_time_us"], report)
        save_artifacts(handle, self.__name__, self.save_neff_name, self.save_trace_name)
        return None


def benchmark_decorator(api: str, kernel: Any = None, **kwargs: Any) -> Any:
    if kernel is None:
        return lambda k: Benchmarked(k, api, **kwargs)
    return Benchmarked(kernel, api, **kwargs)


class Profile:
    """What :func:`profile` returns: the outputs (when the arguments held data), the report of
    ``ntile run --json``, and the modeled timeline (``.trace(path)``, ``.svg()``, shown as SVG in
    a notebook)."""

    def __init__(self, traced: Traced, handle: Any, simulated: bool) -> None:
        self.kernel = traced.trace.kernel
        self.target = traced.trace.target
        self.nki_trace = traced.json()
        self._handle = handle
        self.report: Dict[str, Any] = handle.report()
        self.outputs = outputs_of(traced, handle) if simulated else None
        self._svg: Optional[str] = None

    @property
    def modeled_time_us(self) -> float:
        return self.report["modeled_time_us"]

    def trace(self, path: Any) -> None:
        """Write the modeled engine timeline as Chrome/Perfetto trace-event JSON to ``path``."""
        self._handle.trace(os.fspath(path))

    def svg(self) -> str:
        if self._svg is None:
            self._svg = self._handle.svg()
        return self._svg

    def emit(self, form: str) -> str:
        """The kernel as ``penguin`` or ``bir`` text."""
        return self._handle.emit(form)

    def _repr_svg_(self) -> str:
        return self.svg()

    def __repr__(self) -> str:
        chip = self.report.get("chip")
        cores = f" x {len(chip['cores'])} cores" if chip else ""
        return f"<ntile.nki.Profile {self.kernel} on {self.target}{cores}: {self.modeled_time_us:.3f} us modeled>"


def profile_call(kernel: Any, args: Sequence[Any], kwargs: Dict[str, Any], api: str,
                 target: Optional[str] = None) -> Profile:
    fn, k_api = unwrap(kernel)
    traced = trace_kernel(fn, args, kwargs, k_api or api, target_of(kernel, target), grid_of(kernel))
    simulated = traced.data() is not None
    return Profile(traced, execute(traced, simulate=simulated), simulated)
