"""Attention forward for one head, legacy NKI API: ntile's own kernel.

``out = softmax(q @ k.T * scale) @ v`` with ``q, k, v`` of shape ``[S, d]`` (S a multiple of
128, d <= 128), and with ``causal=True`` each query row ``r`` sees the keys ``<= r`` only.

For each tile of 128 query rows:

1. scores ``[128, S]``: the Tensor Engine contracts over ``d``, so ``q`` and ``k`` are loaded
   transposed (``[d, rows]``, a DMA with a transposed access pattern); each matmul fills one
   512-wide PSUM bank, which is scaled while it is evicted to SBUF.
2. causal: ``nisa.affine_select`` keeps ``scores[p, j]`` where ``row0 + p - j >= 0`` (a
   predicate the engine computes from the partition and free indices, no mask tensor) and puts
   a large negative number elsewhere.
3. softmax numerator: ``exp(scores - rowmax)`` with the row sums from the same instruction.
4. ``P @ v`` contracts over the keys: each ``[128, 128]`` block of ``P`` is transposed on the
   Tensor Engine so the keys are on partitions, and the S / 128 products accumulate in one
   PSUM tile; dividing by the row sums finishes the softmax.
"""

import math

from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

T = 128
W = 512


@nki.jit
def attention(q, k, v, causal=False):
    S, d = q.shape
    assert S % T == 0 and d <= T, "S must be a multiple of 128 and d at most 128"
    out = nl.ndarray((S, d), dtype=q.dtype, buffer=nl.shared_hbm)
    scale = 1.0 / math.sqrt(d)
    kT = nl.load_transpose2d(k)  # [d, S]
    v_tiles = nl.ndarray((S // T, nl.par_dim(T), d), dtype=v.dtype, buffer=nl.sbuf)
    for c in nl.affine_range(S // T):
        v_tiles[c] = nl.load(v[c * T:(c + 1) * T, :])
    ip, jf = nl.mgrid[0:T, 0:S]
    for i in nl.affine_range(S // T):
        qT = nl.load_transpose2d(q[i * T:(i + 1) * T, :])  # [d, 128]
        scores = nl.ndarray((T, S), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.affine_range((S + W - 1) // W):
            w = min(W, S - c * W)
            part = nisa.nc_matmul(qT, kT[:, c * W:c * W + w])
            scores[:, c * W:c * W + w] = nl.multiply(part, scale)
        if causal:
            scores = nisa.affine_select(pred=(i * T + ip - jf >= 0), on_true_tile=scores, on_false_value=nl.fp32.min)
        neg_max = nisa.tensor_reduce(np.max, scores, axis=[1], negate=True, keepdims=True)
        sums = nl.ndarray((T, 1), dtype=nl.float32, buffer=nl.sbuf)
        p = nisa.activation(np.exp, scores, bias=neg_max, reduce_op=np.add, reduce_res=sums, dtype=v.dtype)
        acc = nl.zeros((T, d), nl.float32, buffer=nl.psum)
        for c in nl.affine_range(S // T):
            pT = nl.copy(nisa.nc_transpose(p[:, c * T:(c + 1) * T]), dtype=v.dtype)
            acc += nisa.nc_matmul(pT, v_tiles[c])
        o = nl.multiply(acc, nl.reciprocal(sums), dtype=out.dtype)
        nl.store(out[i * T:(i + 1) * T, :], value=o)
    return out
