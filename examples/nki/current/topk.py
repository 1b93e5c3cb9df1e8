"""The k largest values of each row and where they are, current NKI API (``nki``): ntile's own
kernel, as a mixture-of-experts router or a sampler picks its top k.

The Vector Engine finds 8 values at a time: ``nisa.max8`` writes each partition's 8 largest,
descending; ``nisa.nc_match_replace8`` replaces them in the row by ``-inf`` and writes where
they were, so the next ``max8`` finds the next 8.

- ``top_k(x, k)``: for ``x`` ``[N, D]`` (N a multiple of 128, 8 <= D <= 16384, k a multiple of 8
  up to D), the values ``[N, k]`` in descending order and their column indices ``[N, k]``
  (uint32).
"""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def top_k(x, k):
    N, D = x.shape
    assert N % P == 0 and k % 8 == 0 and 8 <= k <= D
    values = nl.ndarray((N, k), dtype=x.dtype, buffer=nl.shared_hbm)
    indices = nl.ndarray((N, k), dtype=nl.uint32, buffer=nl.shared_hbm)
    for t in range(N // P):
        rows = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows, src=x[t * P:(t + 1) * P, :])
        for r in range(k // 8):
            best = nl.ndarray((P, 8), dtype=x.dtype, buffer=nl.sbuf)
            nisa.max8(dst=best, src=rows)
            where = nl.ndarray((P, 8), dtype=nl.uint32, buffer=nl.sbuf)
            rest = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
            nisa.nc_match_replace8(dst=rest, data=rows, vals=best, imm=float("-inf"), dst_idx=where)
            nisa.dma_copy(dst=values[t * P:(t + 1) * P, r * 8:(r + 1) * 8], src=best)
            nisa.dma_copy(dst=indices[t * P:(t + 1) * P, r * 8:(r + 1) * 8], src=where)
            rows = rest
    return values, indices
