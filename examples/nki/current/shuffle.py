"""Moving data across partitions without the Tensor Engine, current NKI API (``nki``): ntile's
own kernels.

Compute engines work lane by lane: partition ``p`` of a result comes from partition ``p`` of
the inputs. ``nisa.nc_stream_shuffle`` is the exception on the Vector Engine: within each
quadrant of 32 partitions, destination partition ``i`` takes the source partition
``shuffle_mask[i]`` names (255 leaves it as it was).

- ``scale_rows``: ``out[r, :] = x[r, :] * g`` for a gain row ``g``: the row is loaded once into
  one partition and copied to all 128 with four shuffles whose mask is all zeros, one per
  quadrant.
- ``swap_pairs``: rows ``2k`` and ``2k + 1`` of each tile of 128 exchanged, one shuffle over all
  four quadrants (the mask applies to each).
"""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128
Q = 32


@nki.jit
def scale_rows(x, g):
    """``x`` is ``[N, D]`` (N a multiple of 128), ``g`` is ``[1, D]``; the result has ``x``'s dtype."""
    N, D = x.shape
    assert N % P == 0 and tuple(g.shape) == (1, D)
    out = nl.ndarray((N, D), dtype=x.dtype, buffer=nl.shared_hbm)
    row = nl.ndarray((1, D), dtype=g.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row, src=g)
    gain = nl.ndarray((P, D), dtype=g.dtype, buffer=nl.sbuf)
    for q in range(P // Q):
        nisa.nc_stream_shuffle(dst=gain[q * Q:(q + 1) * Q, :], src=row[0:1, :], shuffle_mask=[0] * Q)
    for t in range(N // P):
        tile = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * P:(t + 1) * P, :])
        res = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=res, data1=tile, data2=gain, op=nl.multiply)
        nisa.dma_copy(dst=out[t * P:(t + 1) * P, :], src=res)
    return out


@nki.jit
def swap_pairs(x):
    """``x`` is ``[N, D]`` (N a multiple of 128); rows ``2k`` and ``2k + 1`` trade places."""
    N, D = x.shape
    assert N % P == 0
    out = nl.ndarray((N, D), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(N // P):
        tile = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * P:(t + 1) * P, :])
        swapped = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.nc_stream_shuffle(dst=swapped, src=tile, shuffle_mask=[i ^ 1 for i in range(Q)])
        nisa.dma_copy(dst=out[t * P:(t + 1) * P, :], src=swapped)
    return out
