"""The trace being built: its file table, storages, allocation sites, records and JSON.

One :class:`Trace` is active while a kernel runs (``current()``); every ``nl``/``nisa`` call
appends a record dict to ``ops``. Records hold their operands' storages as objects; ids are
given once, when the JSON is written, to the storages some record (or the outputs) still use,
so a temporary tile whose producing record was redirected into another tile costs nothing.
"""

from __future__ import annotations

import json
import math
import os
import re
import linecache
from types import FrameType
from typing import Any, Dict, List, Optional, Tuple

from .errors import NkiError, is_ours, shown_path, user_frame

FORMAT = "ntile-nki-trace"
VERSION = 1

_STACK: List["Trace"] = []


def current() -> "Trace":
    """The trace of the kernel being traced; an error outside any kernel."""
    if not _STACK:
        raise NkiError("this NKI call ran outside a kernel being traced (call it inside a @nki.jit kernel)")
    return _STACK[-1]


def active() -> Optional["Trace"]:
    return _STACK[-1] if _STACK else None


_ASSIGNED = re.compile(r"^\s*([A-Za-z_][A-Za-z_0-9]*)\s*(?:\[[^=]*\])?\s*(?::[^=]*)?[-+*/]?=(?!=)")


def _layout(shape: Tuple[int, ...], par: int, on_chip: bool) -> Tuple[Any, ...]:
    """(block shape, tile shape, F, T, virtual strides) of a storage's shape."""
    strides = [0] * len(shape)
    if not on_chip:
        acc = 1
        for d in range(len(shape) - 1, -1, -1):
            strides[d] = acc
            acc *= shape[d]
        return (), shape, 0, 0, tuple(strides), tuple(zip(strides, shape))
    tile = shape[par:]
    F = 1
    for n in tile[1:]:
        F *= n
    T = F * tile[0]
    acc = T
    for d in range(par - 1, -1, -1):
        strides[d] = acc
        acc *= shape[d]
    strides[par] = F
    acc = 1
    for d in range(len(shape) - 1, par, -1):
        strides[d] = acc
        acc *= shape[d]
    return shape[:par], tile, F, T, tuple(strides), tuple(zip(strides, shape))


_LAYOUTS: Dict[Tuple[Any, ...], Tuple[Any, ...]] = {}


class Storage:
    """A tensor of the trace: a kernel input, an HBM tensor or an on-chip tile (with its blocks).

    Element positions are virtual: on chip, block ``b`` (row-major over the block dims) holds
    elements ``[b*T, (b+1)*T)`` with ``T = P * F`` and element ``(p, f)`` of a tile at
    ``p * F + f``, so one strided view algebra serves HBM and on-chip tensors alike.
    """

    __slots__ = ("name", "buffer", "dtype", "shape", "par", "site", "loc", "address", "refs", "id",
                 "on_chip", "block_shape", "tile_shape", "F", "T", "strides", "pending", "temp",
                 "written", "written_blocks", "constant", "whole_dims", "void")

    def __init__(self, name: str, buffer: str, dtype: str, shape: Tuple[int, ...], par: int,
                 site: int, loc: List[int]) -> None:
        on_chip = buffer in ("sbuf", "psum")
        self.name = name
        self.buffer = buffer
        self.dtype = dtype
        self.shape = shape
        self.par = par
        self.site = site
        self.loc = loc
        self.address: Optional[Dict[str, Any]] = None
        self.refs = 0
        self.id = -1
        self.on_chip = on_chip
        self.pending: Optional[Any] = None
        self.temp = False
        self.void = False
        self.written = False
        self.written_blocks: set = set()
        self.constant: Optional[Any] = None
        key = (shape, par, on_chip)
        layout = _LAYOUTS.get(key)
        if layout is None:
            layout = _LAYOUTS[key] = _layout(shape, par, on_chip)
        self.block_shape, self.tile_shape, self.F, self.T, self.strides, self.whole_dims = layout

    def json(self) -> Dict[str, Any]:
        return {"name": self.name, "buffer": self.buffer, "dtype": self.dtype, "shape": list(self.shape),
                "par": self.par, "site": self.site, "loc": self.loc, "address": self.address}


class Trace:
    """Everything recorded while one kernel runs."""

    def __init__(self, kernel: str, api: str, target: str, view_class: type) -> None:
        self.kernel = kernel
        self.api = api
        self.target = target
        self.view_class = view_class
        self.files: List[str] = []
        self._file_index: Dict[str, int] = {}
        self.storages: List[Storage] = []
        self.ops: List[Dict[str, Any]] = []
        self._sites: Dict[Tuple[Any, ...], int] = {}
        self._site_cache: Dict[Tuple[Any, ...], Tuple[int, List[int], str]] = {}
        self.outputs: List[Storage] = []
        self.entry: Optional[FrameType] = None
        self._names: Dict[str, int] = {}
        self._json: Optional[str] = None
        self.open = True
        # The SPMD program being traced (legacy grids), and the shared HBM tensors its programs share.
        self.grid: Tuple[int, ...] = ()
        self.program: Tuple[int, ...] = ()
        self.shared: Dict[Tuple[int, int], Storage] = {}
        self.shared_seen: Dict[int, int] = {}
        # Where each physical core's records begin (a kernel launched on several cores).
        self.cores: List[int] = []
        # The NKI loops being traced, outermost first: [loop location, kind, iteration]; and the
        # addresses placed tensors took where every enclosing affine/sequential loop was at its
        # first iteration (see `alloc.first_trace_address`).
        self.loop_path: List[List[Any]] = []
        # The generator `nl.rand` draws from (made at its first call), and the Vector Engine's
        # maximum registers of select_reduce / range_select (`isa_ops._reduce_max_into`).
        self.rand_generator: Any = None
        self.dve_max_registers: Any = None
        self.first_addresses: Dict[Tuple[Any, ...], Any] = {}
        self.site_visits: Dict[Tuple[Any, ...], int] = {}

    # --- locations -------------------------------------------------------------------------

    def file_index(self, filename: str) -> int:
        i = self._file_index.get(filename)
        if i is None:
            i = len(self.files)
            self.files.append(shown_path(filename))
            self._file_index[filename] = i
        return i

    def loc(self) -> List[int]:
        """``[file index, line]`` of the kernel code making the current call."""
        f = user_frame(2)
        if f is None:
            return [self.file_index("<unknown>"), 0]
        return [self.file_index(f.f_code.co_filename), f.f_lineno]

    def site(self) -> Tuple[int, List[int], str]:
        """The allocation site of the current call (its kernel location and call chain), its
        location, and the name the kernel's line assigns the result to (or "")."""
        f = user_frame(2)
        if f is None:
            return self._site_id(("<unknown>",)), [self.file_index("<unknown>"), 0], ""
        first = f
        chain = []
        entry = self.entry
        while f is not None and f is not entry:
            code = f.f_code
            if not is_ours(code.co_filename):
                chain.append((code, f.f_lineno))
            f = f.f_back
        key = tuple(chain)
        hit = self._site_cache.get(key)
        if hit is None:
            line = linecache.getline(first.f_code.co_filename, first.f_lineno)
            m = _ASSIGNED.match(line)
            hit = (self._site_id(key), [self.file_index(first.f_code.co_filename), first.f_lineno],
                   m.group(1) if m else "")
            self._site_cache[key] = hit
        return hit

    def _site_id(self, key: Tuple[Any, ...]) -> int:
        s = self._sites.get(key)
        if s is None:
            s = len(self._sites)
            self._sites[key] = s
        return s

    # --- storages and records ----------------------------------------------------------------

    def unique_name(self, base: str) -> str:
        n = self._names.get(base)
        if n is None:
            self._names[base] = 1
            return base
        self._names[base] = n + 1
        return f"{base}_{n}"

    def new_storage(self, name: str, buffer: str, dtype: str, shape: Tuple[int, ...], par: int = 0,
                    site: Optional[Tuple[int, List[int], str]] = None) -> Storage:
        site_id, loc, assigned = site if site is not None else self.site()
        base = name or assigned or "t"
        # HBM tensors are found by name (inputs, outputs); on-chip tiles keep their site's name.
        st = Storage(base if buffer in ("sbuf", "psum") else self.unique_name(base), buffer, dtype, shape, par,
                     site_id, loc)
        self.storages.append(st)
        self._json = None
        return st

    def emit(self, rec: Dict[str, Any]) -> Dict[str, Any]:
        self.ops.append(rec)
        return rec

    # --- JSON ---------------------------------------------------------------------------------

    def kept(self) -> List[Storage]:
        """The storages the trace lists: inputs, outputs, and those some record uses, in creation
        order, with their ids set."""
        out = set(id(s) for s in self.outputs)
        kept = [s for s in self.storages if s.refs > 0 or s.buffer == "input" or id(s) in out]
        for i, s in enumerate(kept):
            s.id = i
        return kept

    def to_json(self) -> str:
        """The trace as JSON (written once; the records are never copied)."""
        if self._json is not None:
            return self._json
        kept = self.kept()
        sites: Dict[int, int] = {}
        tensors = []
        for s in kept:
            d = s.json()
            d["site"] = sites.setdefault(s.site, len(sites))
            tensors.append(d)
        doc: Dict[str, Any] = {
            "format": FORMAT, "version": VERSION, "kernel": self.kernel, "api": self.api,
            "target": self.target, "files": self.files, "tensors": tensors, "ops": self.ops,
            "outputs": [s.id for s in self.outputs],
        }
        consts = [{"t": s.id, "values": s.constant} for s in kept if s.constant is not None]
        if consts:
            doc["constants"] = consts
        if len(self.cores) > 1:
            doc["cores"] = self.cores
        self._json = json.dumps(doc, separators=(",", ":"), default=_storage_id, allow_nan=False)
        return self._json


def _storage_id(o: Any) -> int:
    if isinstance(o, Storage):
        return o.id
    raise TypeError(f"not JSON: {o!r}")


def number(x: Any) -> Any:
    """An immediate as the trace writes it (NaN and infinities as strings)."""
    x = float(x) if not isinstance(x, (bool, int)) else int(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        if x.is_integer() and abs(x) < 2 ** 53:
            return x
    return x
