"""Creating tensors: buffers, ``nl.par_dim`` and block dims, and direct allocation.

``nl.ndarray`` allocates nothing by itself: a storage enters the trace when a record uses it,
and the kernel builder places it by liveness. A kernel that places its tiles itself (legacy
``ncc.sbuf.alloc``/``mod_alloc``, ``ncc.psum.*``; the current API's ``address=``) gets its
addresses resolved here, one per block for a tensor with block dims.
"""

from __future__ import annotations

import inspect
import itertools
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from . import dtypes
from .errors import NkiValueError
from .trace import current
from .view import View, as_int

BUFFERS = ("sbuf", "psum", "private_hbm", "shared_hbm")
PSUM_BANK_BYTES = 2048


class Buffer:
    """A memory for ``buffer=``: ``nl.sbuf``, ``nl.psum``, ``nl.hbm`` ..., or a direct allocation."""

    __slots__ = ("name", "place")

    def __init__(self, name: str, place: Optional[Callable[..., Tuple[int, int]]] = None) -> None:
        self.name = name
        self.place = place

    def __repr__(self) -> str:
        return f"<buffer {self.name}{' (direct allocation)' if self.place else ''}>"

    def __eq__(self, other: Any) -> bool:
        try:
            return buffer_name(other) == self.name
        except NkiValueError:
            return False

    def __hash__(self) -> int:
        return hash(self.name)


def buffer_name(buffer: Any) -> str:
    if isinstance(buffer, Buffer):
        return buffer.name
    value = getattr(buffer, "value", buffer)
    if isinstance(value, str):
        v = value.lower()
        if v == "hbm":
            return "private_hbm"
        if v in BUFFERS:
            return v
    raise NkiValueError(f"unknown buffer {buffer!r} (expected nl.sbuf, nl.psum, nl.hbm, nl.private_hbm or "
                        "nl.shared_hbm)")


class ParDim(int):
    """``nl.par_dim(n)``: marks the partition dimension of a legacy on-chip tensor's shape."""

    def __repr__(self) -> str:
        return f"par_dim({int(self)})"


def par_dim(n: Any) -> ParDim:
    return ParDim(as_int(n, "par_dim size"))


def parse_shape(shape: Any, on_chip: bool) -> Tuple[Tuple[int, ...], int]:
    """(shape, index of the partition dim) of a shape that may hold one ``nl.par_dim``."""
    items = (shape,) if isinstance(shape, (int,)) or not hasattr(shape, "__iter__") else tuple(shape)
    par = [i for i, s in enumerate(items) if isinstance(s, ParDim)]
    if len(par) > 1:
        raise NkiValueError("a shape holds at most one nl.par_dim")
    dims = tuple(as_int(s, "shape") for s in items)
    if not dims or any(d < 1 for d in dims):
        raise NkiValueError(f"bad shape {list(dims)}: every size must be at least 1")
    p = par[0] if par else 0
    if not on_chip:
        p = 0
    if on_chip and len(dims) - p < 2:
        dims = dims + (1,)
    return dims, p


def new_tensor(shape: Any, dtype: Any, buffer: Any, name: str = "", address: Any = None) -> View:
    """A new tensor of the kernel (no record: it enters the trace when used)."""
    T = current()
    buf = buffer_name(buffer)
    try:
        dt = dtypes.name_of(dtype)
    except dtypes.DTypeError as e:
        raise NkiValueError(str(e)) from None
    on_chip = buf in ("sbuf", "psum")
    dims, par = parse_shape(shape, on_chip)
    site = T.site()
    if T.grid and buf == "shared_hbm":
        # Every program of an SPMD grid sees the same shared HBM tensor at this allocation.
        n = T.shared_seen.get(site[0], 0)
        T.shared_seen[site[0]] = n + 1
        prior = T.shared.get((site[0], n))
        if prior is not None:
            return T.view_class.whole(prior)
    st = T.new_storage(str(name) if name else "", buf, dt, dims, par, site=site)
    if T.grid and buf == "shared_hbm":
        T.shared[(site[0], T.shared_seen[site[0]] - 1)] = st
    place = buffer.place if isinstance(buffer, Buffer) else None
    if address is not None:
        if not on_chip:
            raise NkiValueError("address= places an on-chip tensor (SBUF or PSUM)")
        p, b = address
        st.address = {"partition": as_int(p, "address partition"), "byte": as_int(b, "address byte")}
    elif place is not None:
        st.address = _placed(st, place)
    if st.address is not None:
        st.address = first_trace_address(T, site[0], st.address)
    return T.view_class.whole(st)


def first_trace_address(T: Any, site: int, address: Dict[str, Any]) -> Dict[str, Any]:
    """The address of a placed tensor as NKI gives it: NKI traces the body of an
    ``affine_range`` or ``sequential_range`` loop once, so the Python code that computes an
    address there (``addr += size`` in the body) runs once, and every iteration's tensor of a
    site has the address of the first. ntile runs the body once per iteration: a site's visit
    in a later iteration takes the address of the same visit (the same site, the same
    iterations of static loops, the same count of earlier visits) where every other enclosing
    loop was at its first iteration."""
    if not T.loop_path:
        return address
    path = tuple((loc, kind, i) for loc, kind, i in T.loop_path)
    first = tuple((loc, kind, i if kind == "static" else 0) for loc, kind, i in T.loop_path)
    key = (site, path)
    n = T.site_visits.get(key, 0)
    T.site_visits[key] = n + 1
    canonical = (site, first, n)
    if path == first:
        T.first_addresses[canonical] = address
        return address
    return T.first_addresses.get(canonical, address)


def _placed(st: Any, place: Callable[..., Tuple[int, int]]) -> Dict[str, Any]:
    fbytes = st.F * dtypes.itemsize(st.dtype)
    pdim = st.tile_shape[0]
    if not st.block_shape:
        p, b = place((), pdim, fbytes)
        return {"partition": p, "byte": b}
    blocks = [list(place(idx, pdim, fbytes)) for idx in itertools.product(*(range(n) for n in st.block_shape))]
    return {"blocks": blocks}


def _linear(shape: Sequence[int], idx: Sequence[int]) -> int:
    out = 0
    for n, i in zip(shape, idx):
        out = out * n + i
    return out


def _modulo(base: int, tiles: Sequence[int], scale: int) -> Callable[[Tuple[int, ...]], int]:
    def f(idx: Tuple[int, ...]) -> int:
        # As the documented formula does, the block index and the tile counts pair up by zip: a
        # tensor without block dims sits at the base whatever the counts say.
        shape = tuple(tiles) if tiles else (1,) * len(idx)
        pairs = list(zip(idx, shape))
        return base + _linear([s for _, s in pairs], [i % s for i, s in pairs]) * scale
    return f


def _call_alloc(func: Callable[..., Any], idx: Tuple[int, ...], pdim: int, fbytes: int) -> Any:
    """``func(idx, pdim_size, fdim_size)``: by keyword when it names those parameters (so a
    ``functools.partial`` that binds a leading argument by keyword works), else by position."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        params = {}
    if all(n in params for n in ("idx", "pdim_size", "fdim_size")):
        return func(idx=idx, pdim_size=pdim, fdim_size=fbytes)
    return func(idx, pdim, fbytes)


def sbuf_alloc(func: Callable[..., Tuple[int, int]]) -> Buffer:
    """``ncc.sbuf.alloc(func)``: ``func(block index, partitions, bytes per partition)`` gives
    ``(start partition, byte address)`` for each block."""
    def place(idx: Tuple[int, ...], pdim: int, fbytes: int) -> Tuple[int, int]:
        p, b = _call_alloc(func, idx, pdim, fbytes)
        return int(p), int(b)
    return Buffer("sbuf", place)


def sbuf_mod_alloc(*, base_addr: int, base_partition: int = 0, num_par_tiles: Sequence[int] = (),
                   num_free_tiles: Sequence[int] = ()) -> Buffer:
    """``ncc.sbuf.mod_alloc``: block ``idx`` at ``base + linear(idx mod tiles) * tile size`` along
    the partitions and the bytes."""
    def place(idx: Tuple[int, ...], pdim: int, fbytes: int) -> Tuple[int, int]:
        return (_modulo(base_partition, num_par_tiles, pdim)(idx), _modulo(base_addr, num_free_tiles, fbytes)(idx))
    return Buffer("sbuf", place)


def psum_alloc(func: Callable[..., Tuple[int, int, int]]) -> Buffer:
    """``ncc.psum.alloc(func)``: ``func`` gives ``(bank, start partition, byte in the bank)``."""
    def place(idx: Tuple[int, ...], pdim: int, fbytes: int) -> Tuple[int, int]:
        bank, p, b = _call_alloc(func, idx, pdim, fbytes)
        return int(p), int(bank) * PSUM_BANK_BYTES + int(b)
    return Buffer("psum", place)


def psum_mod_alloc(*, base_bank: int, base_addr: int = 0, base_partition: int = 0, num_bank_tiles: Sequence[int] = (),
                   num_par_tiles: Sequence[int] = (), num_free_tiles: Sequence[int] = ()) -> Buffer:
    """``ncc.psum.mod_alloc``: block ``idx`` in bank ``base_bank + linear(idx mod num_bank_tiles)``."""
    def place(idx: Tuple[int, ...], pdim: int, fbytes: int) -> Tuple[int, int]:
        bank = _modulo(base_bank, num_bank_tiles, 1)(idx)
        p = _modulo(base_partition, num_par_tiles, pdim)(idx)
        b = _modulo(base_addr, num_free_tiles, fbytes)(idx)
        return p, bank * PSUM_BANK_BYTES + b
    return Buffer("psum", place)
