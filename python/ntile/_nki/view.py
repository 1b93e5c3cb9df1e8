"""Strided views over storages, in the trace's ``.ap()`` convention.

A :class:`View` is a storage, an element offset and ``[stride, count]`` dims in the storage's
virtual element space (see :class:`~.trace.Storage`). Indexing (integers, slices, ``nl.ds``,
``...``, ``None`` and the legacy affine indices of ``nl.arange``/``nl.mgrid``), ``.ap()``,
``reshape`` and the other view methods only compute new dims; :meth:`View.rec` writes the
operand of a record. On chip, ``pdim`` is the index of the partition dim among the dims (dims
before it are legacy block dims, which a record's operand must have fixed).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import index as ix
from .errors import NkiIndexError, NkiTypeError, NkiUnsupportedError, NkiValueError
from .trace import Storage

Dims = Tuple[Tuple[int, int], ...]
_second = itemgetter(1)
# Layouts of affine indices by (dims, partition dim, on chip, the indices' axes and coefficients).
_AFFINE_LAYOUTS: Dict[Tuple[Any, ...], Tuple[Dims, int]] = {}
# Layouts of integer-only indices by (dims, partition dim, on chip, number of integers).
_INT_LAYOUTS: Dict[Tuple[Any, ...], Tuple[Dims, int]] = {}
# Layouts of basic indices by (dims, partition dim, on chip, the items' kinds and counts).
_BASIC_LAYOUTS: Dict[Tuple[Any, ...], Tuple[Dims, int]] = {}


def _prod(xs: Sequence[int]) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def as_int(x: Any, what: str) -> int:
    """``x`` as a Python int, or an error naming ``what`` (a tile here is a data-dependent value)."""
    if type(x) is int:
        return x
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, View):
        raise NkiTypeError(f"data-dependent {what}: a tile's values are not known while the kernel is traced")
    if isinstance(x, ix.Affine):
        raise NkiTypeError(f"{what} must be an integer, not an nl.arange/nl.mgrid index expression")
    try:
        return int(x.__index__())
    except (AttributeError, TypeError):
        raise NkiTypeError(f"{what} must be an integer, got {type(x).__name__}") from None


def reshape_dims(dims: Dims, shape: Sequence[int]) -> Optional[Dims]:
    """``dims`` reshaped to ``shape`` without moving data, or None when the layout does not allow
    it (numpy's no-copy reshape: each group of old dims merged into new ones must be contiguous)."""
    old = [(s, c) for s, c in dims if c != 1]
    if _prod(c for _, c in old) != _prod(shape):
        return None
    new = list(shape)
    strides = [0] * len(new)
    oi, ni = 0, 0
    while ni < len(new) and oi < len(old):
        if new[ni] == 1:
            ni += 1
            continue
        nj, oj = ni + 1, oi + 1
        np_, op_ = new[ni], old[oi][1]
        while np_ != op_:
            if np_ < op_:
                if nj >= len(new):
                    return None
                np_ *= new[nj]
                nj += 1
            else:
                if oj >= len(old):
                    return None
                op_ *= old[oj][1]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][0] != old[k + 1][0] * old[k + 1][1]:
                return None
        strides[nj - 1] = old[oj - 1][0]
        for k in range(nj - 1, ni, -1):
            strides[k - 1] = strides[k] * new[k]
        ni, oi = nj, oj
    # Trailing size-1 dims keep stride 0 (they never move).
    return tuple((strides[i], new[i]) for i in range(len(new)))


def _is_scalar_index(it: Any) -> bool:
    """Whether ``it`` indexes one element of its dimension: an integer, or an affine
    expression without axes."""
    return type(it) is int or isinstance(it, ix.Affine) and not it.terms and not it.shape


class View:
    """A strided view of a storage (the base of both APIs' tensor classes)."""

    __slots__ = ("st", "off", "dims", "pdim", "_counts")

    def __init__(self, st: Storage, off: int, dims: Dims, pdim: int) -> None:
        self.st = st
        self.off = off
        self.dims = dims
        self.pdim = pdim
        self._counts: Optional[Tuple[int, ...]] = None

    @classmethod
    def whole(cls, st: Storage) -> "View":
        return cls(st, 0, st.whole_dims, st.par if st.on_chip else -1)

    def _new(self, off: int, dims: Dims, pdim: int) -> "View":
        return type(self)(self.st, off, dims, pdim)

    # --- what a kernel can ask ---------------------------------------------------------------

    @property
    def counts(self) -> Tuple[int, ...]:
        c = self._counts
        if c is None:
            c = self._counts = tuple(map(_second, self.dims))
        return c

    def tile_counts(self) -> Tuple[int, ...]:
        """The counts from the partition dim on (the logical tile shape of an on-chip view)."""
        p = self.pdim
        return self.counts if p <= 0 else self.counts[p:]

    @property
    def nelem(self) -> int:
        return _prod(self.counts)

    def same(self, other: "View") -> bool:
        return self.st is other.st and self.off == other.off and self.dims == other.dims

    def covers_storage(self) -> bool:
        return self.off == 0 and self.dims == self.st.whole_dims

    def __bool__(self) -> bool:
        if not self.st.on_chip:
            # An HBM tensor (a kernel argument) is an object, as `if imm1:` for an optional one
            # tests; its values are not involved.
            return True
        raise NkiTypeError(
            "control flow on a tile value: a tile's values are not known while the kernel is traced "
            "(use nl.where / nisa.affine_select, or a mask, instead of `if`/`while`/`and`/`or` on a tile)")

    def __index__(self) -> int:
        raise NkiTypeError("data-dependent shape or index: a tile's values are not known while the kernel is traced")

    __int__ = __index__

    def __float__(self) -> float:
        raise NkiTypeError("a tile's values are not known while the kernel is traced (float(tile))")

    def __len__(self) -> int:
        return self.dims[0][1] if self.dims else 0

    def __iter__(self):
        raise NkiTypeError("iterating over a tile: index it with slices or nl.arange instead")

    def __array__(self, *a: Any, **k: Any):
        raise NkiTypeError("a tile's values are not known while the kernel is traced (numpy on a tile)")

    # --- the operand of a record ---------------------------------------------------------------

    def rec(self, write: bool = False) -> Dict[str, Any]:
        """This view as a record operand (counting it as a use of the storage). Any use of a
        temporary tile after its producer fixes it in place: the producer can no longer be
        redirected (a later read needs the values there, a later write would be lost)."""
        st = self.st
        st.refs += 1
        st.pending = None
        if write:
            st.written = True
        if not st.on_chip:
            return {"t": st, "offset": self.off, "ap": self.dims}
        p = self.pdim
        for s, c in self.dims[:p]:
            if c != 1:
                raise NkiValueError(
                    f"a view of '{st.name}' spans {c} of its blocks; index the block dimensions with integers")
        dims = self.dims[p:] if p else self.dims
        T = st.T
        for s, c in dims[1:]:
            if c > 1 and s != 0 and s % T == 0:
                raise NkiValueError(f"a view of '{st.name}' spans its blocks")
        block, off = divmod(self.off, T)
        if write:
            st.written_blocks.add(block)
        v: Dict[str, Any] = {"t": st, "offset": off, "ap": dims}
        if st.block_shape:
            idx = []
            for n in reversed(st.block_shape):
                block, r = divmod(block, n)
                idx.append(r)
            v["block"] = idx[::-1]
        return v

    # --- indexing --------------------------------------------------------------------------------

    def index(self, key: Any) -> "View":
        if key is Ellipsis:
            return self
        if type(key) is int:
            return self._index_ints((key,))
        if type(key) is tuple and all(type(k) is int for k in key):
            return self._index_ints(key)
        items = list(key) if isinstance(key, tuple) else [key]
        ellipsis = affine = False
        for it in items:
            if it is Ellipsis:
                ellipsis = True
            elif isinstance(it, ix.Affine):
                affine = True
            elif isinstance(it, View):
                if it is items[0] and not self.st.on_chip:
                    from .indirect import index_by_tile  # noqa: PLC0415

                    return index_by_tile(self, items)
                lead = items[: next(k for k, x in enumerate(items) if x is it)]
                if not self.st.on_chip and all(_is_scalar_index(x) for x in lead):
                    # ``t[b, idx, ...]``: the leading numbers pick a sub-tensor, whose rows the
                    # tile indexes.
                    return self.index(tuple(lead)).index(tuple(items[len(lead):]))
                raise NkiUnsupportedError(
                    "indexing a tensor with a tile (dynamic, data-dependent indexing) is not supported by ntile "
                    "beyond the rows of an HBM tensor (table[idx_tile, ...])")
        if ellipsis:
            at = [i for i, it in enumerate(items) if it is Ellipsis]
            if len(at) > 1:
                raise NkiIndexError("an index can hold only one '...'")
            real = sum(1 for it in items if it is not None and it is not Ellipsis)
            fill = len(self.dims) - real
            if fill < 0:
                raise NkiIndexError(f"too many indices for a view of {len(self.dims)} dimensions")
            items = items[: at[0]] + [slice(None)] * fill + items[at[0] + 1:]
        if affine:
            return self._index_affine(items)
        return self._index_basic(items)

    def _index_ints(self, key: Tuple[int, ...]) -> "View":
        """``t[i, j]`` with integers only (a block of a legacy tensor, a row): bounds checked,
        the layout cached per view shape."""
        dims = self.dims
        if len(key) > len(dims):
            return self._index_basic(list(key))
        off = self.off
        for k, (stride, count) in zip(key, dims):
            if k < 0:
                k += count
            if not 0 <= k < count:
                raise NkiIndexError(f"index {k} is outside a dimension of size {count}")
            off += k * stride
        lkey = (dims, self.pdim, self.st.on_chip, len(key))
        hit = _INT_LAYOUTS.get(lkey)
        if hit is None:
            v = self._new(0, dims, self.pdim)._index_basic([0] * len(key))
            hit = _INT_LAYOUTS[lkey] = (v.dims, v.pdim)
        return self._new(off, hit[0], hit[1])

    def _index_basic(self, items: List[Any]) -> "View":
        """Integers, slices, ``nl.ds`` and None. The layout depends on the view's dims and the
        items' kinds and counts; it is computed once per such structure (the starts only move
        the offset)."""
        dims = self.dims
        parts: List[Any] = []
        off = self.off
        i = 0
        for it in items:
            t = type(it)
            if it is None:
                parts.append(None)
                continue
            if i >= len(dims):
                break
            stride, count = dims[i]
            if t is int:
                k = it + count if it < 0 else it
                if not 0 <= k < count:
                    break
                off += k * stride
                parts.append(0)
            elif t is slice:
                if not all(x is None or type(x) is int for x in (it.start, it.stop, it.step)):
                    break
                start, stop, step = it.indices(count)
                n = len(range(start, stop, step))
                if n == 0 or step < 1 or (i == self.pdim and step != 1):
                    break
                off += start * stride
                parts.append((n, step))
            elif t is ix.DSlice and type(it.start) is int and type(it.size) is int:
                if it.start < 0 or it.size < 1 or it.start + it.size > count:
                    break
                off += it.start * stride
                parts.append(-it.size)
            else:
                break
            i += 1
        else:
            key = (dims, self.pdim, self.st.on_chip, tuple(parts))
            hit = _BASIC_LAYOUTS.get(key)
            if hit is None:
                zeroed = [None if p is None else 0 if p == 0 else ix.DSlice(0, -p) if type(p) is int
                          else slice(0, p[0] * p[1], p[1]) for p in parts]
                v = self._new(0, dims, self.pdim)._index_items(zeroed)
                hit = _BASIC_LAYOUTS[key] = (v.dims, v.pdim)
            return self._new(off, hit[0], hit[1])
        return self._index_items(items)

    def _index_items(self, items: List[Any]) -> "View":
        dims, pdim, on_chip = self.dims, self.pdim, self.st.on_chip
        out: List[Tuple[int, int]] = []
        new_pdim = -1
        off = self.off
        dropped: Optional[Tuple[int, int]] = None
        i = 0
        for it in items:
            if it is None:
                out.append((0, 1))
                continue
            if i >= len(dims):
                raise NkiIndexError(f"too many indices for a view of {len(dims)} dimensions")
            stride, count = dims[i]
            if i == pdim:
                new_pdim = len(out)
            if isinstance(it, slice):
                start, stop, step = slice(
                    None if it.start is None else as_int(it.start, "slice start"),
                    None if it.stop is None else as_int(it.stop, "slice stop"),
                    None if it.step is None else as_int(it.step, "slice step")).indices(count)
                n = len(range(start, stop, step))
                if n == 0:
                    raise NkiIndexError(f"empty slice {start}:{stop}:{step} of a dimension of size {count}")
                if i == pdim and step != 1:
                    raise NkiValueError("the partition dimension can only be sliced with step 1")
                off += start * stride
                out.append((stride * step, n))
            elif isinstance(it, ix.DSlice):
                start, size = as_int(it.start, "nl.ds start"), as_int(it.size, "nl.ds size")
                if start < 0 or size < 1 or start + size > count:
                    raise NkiIndexError(f"nl.ds({start}, {size}) is outside a dimension of size {count}")
                off += start * stride
                out.append((stride, size))
            else:
                k = as_int(it, "index")
                if k < 0:
                    k += count
                if not 0 <= k < count:
                    raise NkiIndexError(f"index {k} is outside a dimension of size {count}")
                off += k * stride
                if i == pdim:
                    out.append((stride, 1))
                elif i > pdim >= 0 or not on_chip:
                    dropped = (stride, 1)
            i += 1
        for j in range(i, len(dims)):
            if j == pdim:
                new_pdim = len(out)
            out.append(dims[j])
        if on_chip and len(out) - new_pdim < 2:
            out.append(dropped if dropped is not None else (1, 1))
        if not on_chip and not out:
            out.append(dropped if dropped is not None else (1, 1))
        return self._new(off, tuple(out), new_pdim)

    def _index_affine(self, items: List[Any]) -> "View":
        # Fast path for the common index of affine expressions and integers: the layout (dims,
        # partition dim) depends only on the expressions' axes and coefficients, so it is
        # computed once per structure; the offset is the constants times the dims' strides.
        if len(items) <= len(self.dims):
            parts = []
            consts = []
            for it in items:
                t = type(it)
                if t is ix.Affine:
                    parts.append((it.shape, it.terms))
                    consts.append(it.const)
                elif t is int:
                    parts.append(None)
                    consts.append(it)
                else:
                    break
            else:
                key = (self.dims, self.pdim, self.st.on_chip, tuple(parts))
                hit = _AFFINE_LAYOUTS.get(key)
                if hit is None:
                    zeroed = [ix.Affine(it.shape, it.terms, 0) if type(it) is ix.Affine else 0 for it in items]
                    v = self._new(0, self.dims, self.pdim)._index_general(zeroed)
                    hit = _AFFINE_LAYOUTS[key] = (v.dims, v.pdim)
                off = self.off
                for c, (stride, _) in zip(consts, self.dims):
                    off += c * stride
                return self._new(off, hit[0], hit[1])
        return self._index_general(items)

    def _index_general(self, items: List[Any]) -> "View":
        dims, pdim, on_chip = self.dims, self.pdim, self.st.on_chip
        n_adv = 0
        for k, it in enumerate(items):
            if isinstance(it, ix.Affine):
                n_adv = k + 1
        if n_adv > len(dims):
            raise NkiIndexError(f"too many indices for a view of {len(dims)} dimensions")
        # A slice or nl.ds among the affine indices is one more grid axis, at its own position.
        rank = max([n_adv] + [len(it.shape) for it in items[:n_adv] if isinstance(it, ix.Affine)])
        exprs = []
        for k, it in enumerate(items[:n_adv]):
            if isinstance(it, ix.Affine):
                exprs.append(it)
            elif isinstance(it, (slice, ix.DSlice)):
                if isinstance(it, slice):
                    start, stop, step = it.indices(dims[k][1])
                    n = len(range(start, stop, step))
                else:
                    start, n, step = as_int(it.start, "nl.ds start"), as_int(it.size, "nl.ds size"), 1
                if n < 1:
                    raise NkiIndexError(f"empty slice of a dimension of size {dims[k][1]}")
                shape = tuple(n if d == k + rank - n_adv else 1 for d in range(rank))
                exprs.append(ix.Affine.axis(shape, k + rank - n_adv, start, step))
            elif it is None:
                raise NkiUnsupportedError("None (a new axis) among nl.arange/nl.mgrid indices")
            else:
                exprs.append(ix.Affine.constant(as_int(it, "index")))
        grid = ix.broadcast_shapes([e.shape for e in exprs])
        g_strides = [0] * len(grid)
        off = self.off
        for k, e in enumerate(exprs):
            stride = dims[k][0]
            off += e.const * stride
            shift = len(grid) - len(e.shape)
            for g, coef in e.terms:
                g_strides[g + shift] += coef * stride
        out = [(g_strides[g], grid[g]) for g in range(len(grid))]
        new_pdim = -1
        if on_chip and pdim < n_adv:
            e = exprs[pdim]
            shift = len(grid) - len(e.shape)
            if not e.terms:
                out.insert(0, (dims[pdim][0], 1))
                new_pdim = 0
            elif len(e.terms) > 1 or e.terms[0][1] != 1:
                raise NkiValueError("the partition dimension must be indexed by one nl.arange index with step 1")
            else:
                g = e.terms[0][0] + shift
                if any(c != 1 for _, c in out[:g]):
                    raise NkiValueError("the partition index must be the first dimension of the index grid")
                out = out[g:]
                new_pdim = 0
        base = len(out)
        rest = self._new(0, dims[n_adv:], (pdim - n_adv) if pdim >= n_adv else -1)
        if n_adv < len(items):
            tail = rest._index_basic(items[n_adv:]) if rest.dims else None
        else:
            tail = rest
        if tail is not None:
            off += tail.off
            if on_chip and pdim >= n_adv:
                new_pdim = base + tail.pdim
            out.extend(tail.dims)
        if on_chip and len(out) - max(new_pdim, 0) < 2:
            out.append((1, 1))
        return self._new(off, tuple(out), new_pdim)

    # --- view methods ----------------------------------------------------------------------------

    def reshape(self, shape: Sequence[int]) -> "View":
        shape = tuple(as_int(s, "reshape size") for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if _prod(shape) != self.nelem:
            raise NkiValueError(f"cannot reshape a view of shape {list(self.counts)} ({self.nelem} elements) "
                                f"to {list(shape)} ({_prod(shape)} elements)")
        if self.st.on_chip:
            p = self.pdim
            if p > 0 or shape[0] != self.dims[p][1]:
                raise NkiValueError(f"reshape of an on-chip view must keep the partition dimension "
                                    f"({self.dims[p][1]}) first, got {list(shape)}")
            free = reshape_dims(self.dims[1:], shape[1:])
            if free is None:
                raise NkiValueError(f"the layout of this view does not allow reshaping it to {list(shape)}")
            return self._new(self.off, (self.dims[0],) + free, 0)
        dims = reshape_dims(self.dims, shape)
        if dims is None:
            raise NkiValueError(f"the layout of this view does not allow reshaping it to {list(shape)}")
        return self._new(self.off, dims, -1)

    def conform(self, shape: Sequence[int]) -> Optional["View"]:
        """This view with logical shape ``shape`` when both hold the same elements in the same
        order (dims of one inserted or merged), else None."""
        shape = tuple(shape)
        if self.counts == shape:
            return self
        if self.st.on_chip:
            if self.pdim != 0 or not shape or shape[0] != self.dims[0][1]:
                return None
            free = reshape_dims(self.dims[1:], shape[1:])
            return None if free is None else self._new(self.off, (self.dims[0],) + free, 0)
        dims = reshape_dims(self.dims, shape)
        return None if dims is None else self._new(self.off, dims, -1)

    def permute(self, order: Sequence[int]) -> "View":
        order = [as_int(d, "dimension") for d in order]
        if sorted(order) != list(range(len(self.dims))):
            raise NkiValueError(f"{order} is not a permutation of the {len(self.dims)} dimensions")
        if self.st.on_chip and order[self.pdim] != self.pdim:
            raise NkiValueError("an on-chip view keeps its partition dimension in place")
        return self._new(self.off, tuple(self.dims[d] for d in order), self.pdim)

    def with_dim(self, d: int, new: Sequence[Tuple[int, int]], removed: int = 1) -> "View":
        dims = self.dims[:d] + tuple(new) + self.dims[d + removed:]
        pdim = self.pdim if self.pdim < d else self.pdim + len(new) - removed
        return self._new(self.off, dims, pdim)

    def clip(self, ranges: Sequence[Optional[Tuple[int, int]]], space: Sequence[int]) -> "View":
        """This view restricted to ``ranges`` of the iteration space ``space`` (a mask): each of
        its leading dims whose count is the space's count gets ``[lo, hi)``."""
        off = self.off
        dims = list(self.dims)
        base = max(self.pdim, 0)
        for d, r in enumerate(ranges):
            k = base + d
            if r is None or k >= len(dims) or d >= len(space) or dims[k][1] != space[d]:
                continue
            lo, hi = r
            s, _ = dims[k]
            off += lo * s
            dims[k] = (s, hi - lo)
        return self._new(off, tuple(dims), self.pdim)

    def ap(self, pattern: Sequence[Sequence[int]], offset: Optional[int] = None) -> "View":
        dims = tuple((as_int(p[0], "ap stride"), as_int(p[1], "ap count")) for p in pattern)
        if not dims:
            raise NkiValueError("an access pattern needs at least one [stride, count] pair")
        st = self.st
        if offset is None:
            off = self.off
        else:
            off = (self.off // st.T * st.T if st.on_chip and st.T else 0) + as_int(offset, "ap offset")
        if st.on_chip:
            if dims[0][0] != st.F and dims[0][1] > 1:
                raise NkiValueError(f"the partition stride of an on-chip access pattern must be the tile's "
                                    f"elements per partition ({st.F}), got {dims[0][0]}")
            if len(dims) < 2:
                dims = dims + ((1, 1),)
            return self._new(off, dims, 0)
        return self._new(off, dims, -1)

    def pattern(self) -> List[List[int]]:
        return [[s, c] for s, c in self.dims[max(self.pdim, 0):]]
