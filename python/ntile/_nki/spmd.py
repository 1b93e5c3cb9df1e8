"""SPMD launch grids and the physical NeuronCores their programs run on.

A grid axis is an integer (its programs run one after the other on one core), ``nl.nc(n)``
(program ``i`` of the axis runs on physical core ``i``) or ``nl.spmd_dim(...)`` (an axis made
of sub-dimensions, one of them ``nl.nc(n)``: program ``i`` runs on the core of its coordinate
along that sub-dimension, so ``nl.spmd_dim(nl.nc(2), 2)`` puts programs 0 and 1 on core 0 and
2 and 3 on core 1). In the current API, ``kernel[n]`` launches the kernel on ``n`` physical
cores of a logical NeuronCore (LNC=n), and ``nl.program_id(0)`` tells each which it is.

The tracer runs each core's programs in order, core after core, and marks where each core's
records begin (the trace's ``cores``); ntile builds one program per core and runs them on one
chip sharing HBM. A logical NeuronCore of trn2 or trn3 has two physical cores; trn1 has one.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from .errors import NkiUnsupportedError, NkiValueError

# Physical cores in one logical NeuronCore (the public Logical NeuronCore documentation).
MAX_CORES = {"trn1": 1, "trn2": 2, "trn3": 2}


class nc:
    """``nl.nc(n)``: a launch-grid axis of ``n`` programs, program ``i`` on physical core ``i``."""

    def __init__(self, n: Any) -> None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise NkiValueError(f"nl.nc({n!r}): the number of NeuronCores is a positive integer")
        self.n = n

    def __repr__(self) -> str:
        return f"nl.nc({self.n})"

    def __mul__(self, k: Any) -> "spmd_dim":
        """``nl.nc(2) * 2`` is ``nl.spmd_dim(nl.nc(2), 2)``: each core takes a block of programs."""
        return spmd_dim(self, k)

    def __rmul__(self, k: Any) -> "spmd_dim":
        """``2 * nl.nc(2)`` is ``nl.spmd_dim(2, nl.nc(2))``: the cores take programs in turn."""
        return spmd_dim(k, self)


class spmd_dim:
    """``nl.spmd_dim(*dims)``: a launch-grid axis of ``prod(dims)`` programs; with an
    ``nl.nc(n)`` among ``dims``, each program runs on the core of its coordinate along it."""

    def __init__(self, *dims: Any) -> None:
        if not dims:
            raise NkiValueError("nl.spmd_dim() needs at least one dimension")
        for d in dims:
            ok = isinstance(d, nc) or (isinstance(d, int) and not isinstance(d, bool) and d >= 1)
            if not ok:
                raise NkiValueError(f"nl.spmd_dim: {d!r} is not a positive integer or nl.nc(n)")
        if sum(isinstance(d, nc) for d in dims) > 1:
            raise NkiUnsupportedError("nl.spmd_dim with two nl.nc dimensions", at=None)
        self.dims = tuple(dims)

    def size(self) -> int:
        n = 1
        for d in self.dims:
            n *= d.n if isinstance(d, nc) else d
        return n

    def core_of(self, i: int) -> int:
        """The core of program ``i`` of the axis (its sub-dimension coordinates row-major)."""
        core = 0
        for d in reversed(self.dims):
            size = d.n if isinstance(d, nc) else d
            if isinstance(d, nc):
                core = i % size
            i //= size
        return core

    def __repr__(self) -> str:
        return f"nl.spmd_dim({', '.join(map(repr, self.dims))})"


class Grid:
    """A launch grid: its axis sizes and, for an axis placed on cores, which."""

    def __init__(self, sizes: Tuple[int, ...], core_axis: Optional[int], cores: int, entry: Any) -> None:
        self.sizes = sizes
        self.core_axis = core_axis
        self.cores = cores
        self._entry = entry

    def core_of(self, i: int) -> int:
        if isinstance(self._entry, spmd_dim):
            return self._entry.core_of(i)
        return i

    def programs_of(self, core: int) -> List[int]:
        """The coordinates along the core axis of ``core``'s programs, in order."""
        assert self.core_axis is not None
        return [i for i in range(self.sizes[self.core_axis]) if self.core_of(i) == core]


def _is_size(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 1


def parse(entries: Sequence[Any], api: str, kernel: str) -> Grid:
    """The grid of ``kernel[entries]``. In the current API an integer axis alone is a number
    of physical cores (``kernel[2]``: LNC=2); in the legacy API integers are programs run one
    after the other and only ``nl.nc`` / ``nl.spmd_dim`` place programs on cores."""
    if api != "legacy" and len(entries) == 1 and _is_size(entries[0]):
        entries = [nc(entries[0])]
    if api == "legacy" and list(entries) == [0]:
        # ``kernel[0]``, as public legacy kernels launch a one-program kernel: the grid of one
        # program (``nl.program_id(0)`` is 0).
        entries = [1]
    sizes: List[int] = []
    core_axis: Optional[int] = None
    cores = 1
    entry: Any = None
    for axis, e in enumerate(entries):
        placed = isinstance(e, nc) or (isinstance(e, spmd_dim) and any(isinstance(d, nc) for d in e.dims))
        if placed:
            if core_axis is not None:
                raise NkiUnsupportedError(f"the launch grid of {kernel} places two axes on NeuronCores "
                                          f"({list(entries)}); put nl.nc on one axis", at=None)
            core_axis, entry = axis, e
            cores = e.n if isinstance(e, nc) else next(d.n for d in e.dims if isinstance(d, nc))
        if isinstance(e, nc):
            sizes.append(e.n)
        elif isinstance(e, spmd_dim):
            sizes.append(e.size())
        elif _is_size(e):
            if api != "legacy":
                raise NkiUnsupportedError(f"the launch grid {list(entries)} of {kernel} (the current API launches "
                                          "kernel[n] on n NeuronCores; use nl.spmd_dim for more axes)", at=None)
            sizes.append(e)
        else:
            raise NkiValueError(f"the launch grid of {kernel}: {e!r} is not a positive integer, nl.nc(n) "
                                "or nl.spmd_dim(...)")
    return Grid(tuple(sizes), core_axis, cores, entry)


def check_target(grid: Grid, target: str, kernel: str) -> None:
    """Refuse more physical cores than a logical NeuronCore of ``target`` has."""
    most = MAX_CORES.get(target, 1)
    if grid.cores > most:
        why = ("trn1 runs one NeuronCore per kernel (no LNC=2)" if most == 1
               else f"a logical NeuronCore of {target} has {most} physical cores (LNC={most})")
        raise NkiUnsupportedError(f"launching {kernel} on {grid.cores} NeuronCores: {why}", at=None)
