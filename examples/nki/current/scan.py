"""A linear recurrence along each row, current NKI API (``nki``): ntile's own kernel.

``h[r, t] = a[r, t] * h[r, t - 1] + b[r, t]`` with ``h[r, -1] = h0[r]``: the state update of a
diagonal state-space layer, one row per channel. The Vector Engine's scan
(``nisa.tensor_tensor_scan``) runs it in one instruction per tile of 128 rows: it carries the
previous result along the free axis, combining it with ``data0`` by ``op0`` and the result
with ``data1`` by ``op1``.
"""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def recurrence(a, b, h0):
    """``a`` and ``b`` are ``[N, T]``; ``h0`` is ``[N, 1]`` fp32; the result is ``[N, T]``."""
    N, T = a.shape
    out = nl.ndarray((N, T), dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((N + P - 1) // P):
        r0 = t * P
        r1 = min(N, r0 + P)
        rows = r1 - r0
        ta = nl.ndarray((P, T), dtype=a.dtype, buffer=nl.sbuf)
        tb = nl.ndarray((P, T), dtype=b.dtype, buffer=nl.sbuf)
        start = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta[0:rows, :], src=a[r0:r1, :])
        nisa.dma_copy(dst=tb[0:rows, :], src=b[r0:r1, :])
        nisa.dma_copy(dst=start[0:rows, :], src=h0[r0:r1, :])
        h = nl.ndarray((P, T), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=h[0:rows, :], data0=ta[0:rows, :], data1=tb[0:rows, :],
                                initial=start[0:rows, :], op0=nl.multiply, op1=nl.add)
        nisa.dma_copy(dst=out[r0:r1, :], src=h[0:rows, :])
    return out
