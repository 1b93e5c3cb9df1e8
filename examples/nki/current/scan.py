"""A linear recurrence along each row, current NKI API (``nki``): ntile's own kernel.

``h[r, t] = a[r, t] * h[r, t - 1] + b[r, t]`` with ``h[r, -1] = h0[r]``: the state update of a
diagonal state-space layer, one row per channel. The Vector Engine's scan
(``nisa.tensor_tensor_scan``) runs it in one instruction per tile of 128 rows: it carries the
previous result along the free axis, combining it with ``data0`` by ``op0`` and the result
with ``data1`` by ``op1``.

Two running reductions use ``nisa.tensor_scalar_cumulative``, which applies one operator with a
number or a per-row column (``op0`` with ``imm0``) and folds each result into a register
(``op1``), storing the register after every element:

- ``cumsum``: prefix sums of each row in fp32, one instruction per chunk of columns; each chunk
  after the first starts its register from the previous chunk's last sum (``imm1`` with
  ``reduce_cmd.load_reduce``).
- ``running_peak``: ``max(x[r, 0..t] * g[r])``, the running maximum of each row scaled by its
  own gain (``imm0`` a ``[P, 1]`` column).
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


def _row_tiles(N):
    for t in range((N + P - 1) // P):
        yield t * P, min(N, t * P + P)


@nki.jit
def cumsum(x, chunk=512):
    """``x`` is ``[N, T]``; the result is ``[N, T]`` fp32, ``out[r, t] = x[r, 0] + ... + x[r, t]``
    summed left to right in fp32."""
    N, T = x.shape
    out = nl.ndarray((N, T), dtype=nl.float32, buffer=nl.shared_hbm)
    for r0, r1 in _row_tiles(N):
        rows = r1 - r0
        tx = nl.ndarray((P, T), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tx[0:rows, :], src=x[r0:r1, :])
        sums = nl.ndarray((P, T), dtype=nl.float32, buffer=nl.sbuf)
        for c0 in range(0, T, chunk):
            c1 = min(T, c0 + chunk)
            if c0 == 0:
                nisa.tensor_scalar_cumulative(dst=sums[0:rows, c0:c1], src=tx[0:rows, c0:c1], op0=nl.multiply,
                                              op1=nl.add, imm0=1.0)
            else:
                nisa.tensor_scalar_cumulative(dst=sums[0:rows, c0:c1], src=tx[0:rows, c0:c1], op0=nl.multiply,
                                              op1=nl.add, imm0=1.0, imm1=sums[0:rows, c0 - 1:c0],
                                              reduce_cmd=nisa.reduce_cmd.load_reduce)
        nisa.dma_copy(dst=out[r0:r1, :], src=sums[0:rows, :])
    return out


@nki.jit
def running_peak(x, g):
    """``x`` is ``[N, T]``, ``g`` is ``[N, 1]`` fp32; ``out[r, t] = max(x[r, 0..t] * g[r])`` in
    ``x``'s dtype."""
    N, T = x.shape
    out = nl.ndarray((N, T), dtype=x.dtype, buffer=nl.shared_hbm)
    for r0, r1 in _row_tiles(N):
        rows = r1 - r0
        tx = nl.ndarray((P, T), dtype=x.dtype, buffer=nl.sbuf)
        gain = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tx[0:rows, :], src=x[r0:r1, :])
        nisa.dma_copy(dst=gain[0:rows, :], src=g[r0:r1, :])
        peak = nl.ndarray((P, T), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar_cumulative(dst=peak[0:rows, :], src=tx[0:rows, :], op0=nl.multiply, op1=nl.maximum,
                                      imm0=gain[0:rows, :])
        nisa.dma_copy(dst=out[r0:r1, :], src=peak[0:rows, :])
    return out
