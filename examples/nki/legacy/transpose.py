"""Transposes, legacy NKI API: ntile's own kernels.

- ``transpose_2d``: ``out[C, R] = x[R, C].T``. A transpose that moves data across partitions
  is not a view: each 128 x 128 tile goes through the Tensor Engine (``nisa.nc_transpose``, a
  matmul against the identity into PSUM) and is evicted to SBUF before it is stored.
- ``transpose_free``: ``out[P, F2, F1] = x[P, F1, F2]`` within each partition. Nothing crosses
  partitions, so one copy with a strided source access pattern does it: the index expressions
  of ``nl.mgrid`` say where each element comes from.
"""

from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

T = 128


@nki.jit
def transpose_2d(x):
    R, C = x.shape
    assert R % T == 0 and C % T == 0, "both sides must be multiples of 128"
    out = nl.ndarray((C, R), dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:T, 0:T]
    for r in nl.affine_range(R // T):
        for c in nl.affine_range(C // T):
            tile = nl.load(x[r * T + ip, c * T + jf])
            flipped = nisa.nc_transpose(tile)  # [T, T] in PSUM: flipped[j, i] = tile[i, j]
            nl.store(out[c * T + ip, r * T + jf], value=nl.copy(flipped, dtype=x.dtype))
    return out


@nki.jit
def transpose_free(x, F1, F2):
    """``x`` is ``[P, F1 * F2]`` (P <= 128); the result holds each row's F1 x F2 block transposed."""
    P, F = x.shape
    assert F == F1 * F2 and P <= T
    out = nl.ndarray((P, F2 * F1), dtype=x.dtype, buffer=nl.shared_hbm)
    src = nl.load(x)
    dst = nl.ndarray((P, F2 * F1), dtype=x.dtype, buffer=nl.sbuf)
    # Element (p, a, b) of the result is element (p, b, a) of the source.
    ip, ia, ib = nl.mgrid[0:P, 0:F2, 0:F1]
    dst[ip, ia * F1 + ib] = nl.copy(src[ip, ib * F2 + ia])
    nl.store(out, value=dst)
    return out
