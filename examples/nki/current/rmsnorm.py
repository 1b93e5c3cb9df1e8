"""RMS normalization, current NKI API (``nki``): ntile's own kernel.

``y = x / sqrt(mean(x^2) + eps) * g`` row by row, 128 rows to a tile (the last tile may be
partial: its slices simply stop at N, as the current API writes bounds with ``min``). The
same steps as the legacy ``rmsnorm`` in ``examples/nki/legacy/norms.py``, each instruction with
its destination first:

1. ``dma_copy`` the rows in; ``dma_copy`` ``g`` once to every partition (the HBM view
   ``g.reshape((1, D)).broadcast(0, 128)`` has partition stride 0).
2. ``activation(op=square)`` with ``reduce_res``: the row sums of squares in the same pass.
3. ``tensor_scalar``: ``sum / D + eps``; ``activation(op=rsqrt)``: ``1 / rms``.
4. ``tensor_scalar`` with a ``[rows, 1]`` operand scales each row; ``tensor_tensor`` applies ``g``.
"""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def rmsnorm(x, g, eps=1e-6):
    N, D = x.shape
    out = nl.ndarray((N, D), dtype=x.dtype, buffer=nl.shared_hbm)
    gain = nl.ndarray((P, D), dtype=g.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=gain, src=g.reshape((1, D)).broadcast(0, P))
    for t in nl.affine_range((N + P - 1) // P):
        r0 = t * P
        r1 = min(N, r0 + P)
        rows = r1 - r0
        tile = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[0:rows, :], src=x[r0:r1, :])
        sq = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq[0:rows, :], op=nl.square, data=tile[0:rows, :], reduce_op=nl.add,
                        reduce_res=ss[0:rows, :], reduce_cmd=nisa.reduce_cmd.reset_reduce)
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=inv[0:rows, :], data=ss[0:rows, :], op0=nl.multiply, operand0=1.0 / D,
                           op1=nl.add, operand1=eps)
        nisa.activation(dst=inv[0:rows, :], op=nl.rsqrt, data=inv[0:rows, :])
        y = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=sq[0:rows, :], data=tile[0:rows, :], op0=nl.multiply, operand0=inv[0:rows, :])
        nisa.tensor_tensor(dst=y[0:rows, :], data1=sq[0:rows, :], data2=gain[0:rows, :], op=nl.multiply)
        nisa.dma_copy(dst=out[r0:r1, :], src=y[0:rows, :])
    return out
