"""Row normalizations, legacy NKI API: ntile's own kernels.

Rows go to partitions (128 at a time) and the normalized dimension D to the free dimension, so
every row is reduced by one engine lane.

- ``rmsnorm``: ``y = x / sqrt(mean(x^2) + eps) * g``. The Scalar Engine squares the tile and
  sums each row in the same instruction (``reduce_res``); the Vector Engine turns the sums into
  ``1 / rms`` and scales the rows by it (a ``[P, 1]`` column broadcast along the free dim).
  ``g`` is read once, to every partition, by a DMA whose partition stride is 0.
- ``layernorm``: ``y = (x - mean) / sqrt(var + eps) * gamma + beta``, the mean and variance from
  ``nisa.bn_stats`` (at most 512 elements per instruction, so D is cut into chunks) and one
  ``nisa.bn_aggr`` over the chunks' statistics.

The last row tile may be partial: ``mask=`` keeps its instructions to the rows that exist.
"""

from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

P = 128


@nki.jit
def rmsnorm(x, g, eps=1e-6):
    N, D = x.shape
    out = nl.ndarray((N, D), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(P)[:, None]
    jf = nl.arange(D)[None, :]
    gain = nl.load(g.reshape((1, D)).broadcast_to((P, D)))
    for t in nl.affine_range((N + P - 1) // P):
        rows = t * P + ip
        live = rows < N
        tile = nl.load(x[rows, jf], mask=live)
        sq = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(op=np.square, data=tile, reduce_op=np.add, reduce_res=sq, mask=live)
        # 1 / sqrt(sum / D + eps), in two instructions: scale-and-shift, then rsqrt.
        ms = nisa.tensor_scalar(sq, np.multiply, 1.0 / D, op1=np.add, operand1=eps, mask=live)
        inv = nl.rsqrt(ms, mask=live)
        scaled = nl.multiply(tile, inv, mask=live, dtype=nl.float32)
        y = nl.multiply(scaled, gain, mask=live, dtype=x.dtype)
        nl.store(out[rows, jf], value=y, mask=live)
    return out


@nki.jit
def layernorm(x, gamma, beta, eps=1e-5):
    N, D = x.shape
    out = nl.ndarray((N, D), dtype=x.dtype, buffer=nl.shared_hbm)
    CH = nl.tile_size.bn_stats_fmax
    chunks = (D + CH - 1) // CH
    gam = nl.load(gamma.reshape((1, D)).broadcast_to((P, D)))
    bet = nl.load(beta.reshape((1, D)).broadcast_to((P, D)))
    for t in nl.affine_range((N + P - 1) // P):
        r0 = t * P
        rows = min(P, N - r0)
        tile = nl.load(x[r0:r0 + rows, :])
        stats = nl.ndarray((rows, 6 * chunks), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.affine_range(chunks):
            w = min(CH, D - c * CH)
            stats[:, c * 6:(c + 1) * 6] = nisa.bn_stats(tile[:, c * CH:c * CH + w], dtype=nl.float32)
        mv = nisa.bn_aggr(stats)  # [rows, 2]: mean, variance
        mean = mv[:, 0:1]
        inv = nl.rsqrt(mv[:, 1:2] + eps)
        # (x - mean) * inv in one instruction: two scalar operands, both [rows, 1] columns.
        norm = nisa.tensor_scalar(tile, np.subtract, mean, op1=np.multiply, operand1=inv, dtype=nl.float32)
        y = nl.add(nl.multiply(norm, gam[0:rows, :]), bet[0:rows, :], dtype=x.dtype)
        nl.store(out[r0:r0 + rows, :], value=y)
    return out
