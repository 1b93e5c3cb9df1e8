"""Rows picked at run time, legacy NKI API: ntile's own kernels for an embedding layer.

Indexing an HBM tensor's first dimension with an SBUF tile of int32 row numbers
(``table[ids, i_f]``) names rows that only the run knows. Loading that view is a DMA gather,
one row per partition; storing into it is a DMA scatter (a row named twice keeps the later
row), and ``nisa.dma_copy(..., dst_rmw_op=np.add)`` into it a DMA scatter-add, where a row
named twice receives both additions.

- ``embed``: ``out[t, :] = table[ids[t], :]`` for a sequence of token ids, 128 tokens a tile.
- ``put_rows``: a copy of ``table`` with rows ``ids[k]`` replaced by ``rows[k]`` (an index
  put, as a cache update at run-time positions).
- ``embed_backward``: the table's gradient, ``grad[v, :] = sum of dout[t, :] over t with
  ids[t] == v``: zeros, then a scatter-add of each tile of 128 output rows.

Run them with ``ntile.nki.install()`` first (``import neuronxcc.nki`` then resolves to ntile).
"""

import numpy as np
from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

P = 128


@nki.jit
def embed(table, ids):
    """``table`` is ``[V, D]``, ``ids`` is ``[T, 1]`` int32 (T a multiple of 128); the result
    is ``[T, D]`` in the table's dtype."""
    V, D = table.shape
    T = ids.shape[0]
    out = nl.ndarray((T, D), dtype=table.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(D)[None, :]
    for t in nl.affine_range(T // P):
        rows = nl.load(ids[t * P + i_p, 0])
        vecs = nl.load(table[rows[i_p, 0], i_f])
        nl.store(out[t * P + i_p, i_f], value=vecs)
    return out


@nki.jit
def put_rows(table, ids, rows):
    """``table`` is ``[V, D]`` (V a multiple of 128), ``ids`` is ``[K, 1]`` int32 and ``rows``
    is ``[K, D]`` (K at most 128); the result is the updated ``[V, D]`` table."""
    V, D = table.shape
    K = ids.shape[0]
    out = nl.ndarray((V, D), dtype=table.dtype, buffer=nl.shared_hbm)
    for v in nl.sequential_range(V // P):
        nl.store(out[v * P:(v + 1) * P, :], value=nl.load(table[v * P:(v + 1) * P, :]))
    where = nl.load(ids)
    nl.store(out[where, :], value=nl.load(rows))
    return out


@nki.jit
def embed_backward(dout, ids, V):
    """``dout`` is ``[T, D]`` fp32, ``ids`` is ``[T, 1]`` int32 (T a multiple of 128); the
    result is the ``[V, D]`` fp32 gradient of the table (V a multiple of 128)."""
    T, D = dout.shape
    grad = nl.ndarray((V, D), dtype=nl.float32, buffer=nl.shared_hbm)
    zeros = nl.zeros((P, D), dtype=nl.float32)
    for v in nl.sequential_range(V // P):
        nl.store(grad[v * P:(v + 1) * P, :], value=zeros)
    for t in nl.sequential_range(T // P):
        rows = nl.load(ids[t * P:(t + 1) * P, :])
        g = nl.load(dout[t * P:(t + 1) * P, :])
        nisa.dma_copy(dst=grad[rows, :], src=g, dst_rmw_op=np.add)
    return grad
