"""Rows of an HBM tensor chosen by a tile of indices: ``table[idx, ...]`` with ``idx`` an SBUF
int32 tile of shape ``[K, 1]`` (one row number per partition). Reading it is a DMA gather
(``dma_gather``: ``dst[k, :] = table[idx[k], ...]``); adding into it with
``dst_rmw_op=np.add`` is a DMA scatter-add. The indices are values only the run knows, so the
view has a shape (``[K] + the row's shape``) and no access pattern of its own."""

from __future__ import annotations

from typing import Any, List, Tuple

from . import index as ix
from .errors import NkiTypeError, NkiValueError, unsupported


class Indirect:
    """``table[index, rest...]``: ``rows`` is the HBM view ``table[:, rest...]`` (every row,
    the columns ``rest`` picks), ``index`` the ``[K, 1]`` int32 tile of row numbers."""

    def __init__(self, rows: Any, index: Any) -> None:
        self.rows = rows
        self.index = index
        self.st = rows.st

    @property
    def counts(self) -> Tuple[int, ...]:
        return (self.index.tile_counts()[0],) + tuple(self.rows.counts[1:])

    def tile_counts(self) -> Tuple[int, ...]:
        return self.counts

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.counts

    @property
    def dtype(self) -> str:
        return self.st.dtype

    def is_indirect(self) -> bool:
        return True

    def __getitem__(self, key: Any) -> Any:
        raise unsupported("indexing a view already indexed by a tile")

    def clip(self, clip: Any) -> "Indirect":
        """The rows of the index tile and the columns a mask's ranges keep (``clip`` over
        ``[K] + the row's shape``, as ``values.fit_clip`` gives it; None keeps all)."""
        if not clip:
            return self
        rows, index = self.rows, self.index
        if clip[0] is not None:
            index = index.clip([clip[0]] + [None] * (len(index.tile_counts()) - 1), index.tile_counts())
        if any(r is not None for r in clip[1:]):
            rows = rows.clip([None] + list(clip[1:]), rows.counts)
        return Indirect(rows, index)

    def __repr__(self) -> str:
        return f"<indirect rows of {self.st.name} by {self.index.st.name} {list(self.counts)}>"


def index_by_tile(table: Any, items: List[Any]) -> Indirect:
    """``table[items]`` where ``items[0]`` is a tile of row indices (the caller checked)."""
    idx = items[0]
    if table.st.on_chip:
        raise unsupported("indexing an on-chip tile with a tile (a gather within SBUF)")
    if any(type(it).__name__ == "View" for it in items[1:]):
        raise unsupported("indexing a tensor with a tile in a dimension other than the first")
    if not idx.st.on_chip:
        raise NkiValueError("the indices of an indirect access must be in an SBUF tile (load them first)")
    counts = idx.tile_counts()
    per = 1
    for n in counts[1:]:
        per *= n
    if per != 1:
        raise unsupported(f"a tile of indices shaped {list(idx.tile_counts())} (ntile takes one row number per "
                          "partition, a [K, 1] tile)")
    if idx.st.dtype != "int32":
        raise NkiTypeError(f"the indices of an indirect access are int32, not {idx.st.dtype}")
    rest = list(items[1:])
    if any(isinstance(it, ix.Affine) for it in rest):
        # Legacy index grids (``ix, iy = nl.mgrid[0:K, 0:F]``): the column index may carry the
        # grid's row axis with extent K; the rows are the index tile's, so it is dropped.
        first: Any = ix.Affine.axis((table.counts[0], 1), 0)
        for k, it in enumerate(rest):
            if isinstance(it, ix.Affine) and len(it.shape) >= 2:
                if any(g == 0 for g, _ in it.terms):
                    raise unsupported("an indirect access whose column index depends on the row")
                rest[k] = ix.Affine((1,) + tuple(it.shape[1:]), it.terms, it.const)
    else:
        first = slice(None)
    rows = table.index(tuple([first] + rest))
    if len(rows.counts) < 1 or rows.counts[0] != table.counts[0]:
        raise unsupported("an indirect access whose other indices drop or narrow the indexed dimension")
    return Indirect(rows, idx)
