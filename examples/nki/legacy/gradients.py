"""Backward-pass building blocks, legacy NKI API: ntile's own kernels, written the way training
kernels are (skipping whole tiles with masks that are Python booleans of loop indices, feeding
a transpose still in PSUM to the Tensor Engine, accumulating across a loop with
``nl.loop_reduce``).

- ``softmax_backward``: ``dx = y * (dy - rowsum(dy * y))`` for rows of a softmax ``y``, the
  row sum kept in ``y``'s dtype and the rest one ``nisa.scalar_tensor_tensor`` per tile.
- ``relu_backward``: ``dx = where(x > 0, dy, 0)``: ``nl.where`` is a fill (or copy) of the
  ``else`` value, then ``nisa.tensor_copy_predicated`` of the ``then`` value under the mask.
- ``causal_linear_attention``: ``out[t] = sum over s <= t of (q[:, t] . k[:, s]) * v[s]`` in
  blocks of 128 positions. A block above the diagonal is skipped whole (``mask=i >= j``); the
  diagonal block's upper triangle is zeroed by ``nisa.affine_select``; the masked scores are
  transposed (``nisa.nc_transpose``, a PSUM result) and used as the next matmul's stationary
  operand, and each query block's sum over key blocks is ``nl.loop_reduce`` into SBUF.

Run them with ``ntile.nki.install()`` first (``import neuronxcc.nki`` then resolves to ntile).
"""

import numpy as np
from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

P = 128


@nki.jit
def softmax_backward(y, dy):
    """``y`` and ``dy`` are ``[N, D]`` (N a multiple of 128); the result has their dtype."""
    N, D = y.shape
    assert N % P == 0 and dy.shape == y.shape
    dx = nl.ndarray((N, D), dtype=y.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(N // P):
        rows = nl.ds(t * P, P)
        yt = nl.load(y[rows, :])
        gt = nl.load(dy[rows, :])
        dot = nl.sum(nl.multiply(yt, gt, dtype=nl.float32), axis=1, dtype=y.dtype, keepdims=True)
        out = nisa.scalar_tensor_tensor(data=gt, op0=np.subtract, operand0=dot, op1=np.multiply, operand1=yt,
                                        dtype=y.dtype)
        nl.store(dx[rows, :], value=out)
    return dx


@nki.jit
def relu_backward(x, dy):
    """``x`` and ``dy`` are ``[N, D]`` (N a multiple of 128); the result has ``dy``'s dtype."""
    N, D = x.shape
    assert N % P == 0 and dy.shape == x.shape
    dx = nl.ndarray((N, D), dtype=dy.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(N // P):
        rows = nl.ds(t * P, P)
        positive = nl.greater(nl.load(x[rows, :]), 0.0)
        nl.store(dx[rows, :], value=nl.where(positive, nl.load(dy[rows, :]), 0.0))
    return dx


@nki.jit
def causal_linear_attention(q, k, v):
    """``q`` and ``k`` are ``[d, L]``, ``v`` is ``[L, e]`` (d, e <= 128, L a multiple of 128);
    the result is ``[L, e]`` in fp32."""
    d, L = q.shape
    e = v.shape[1]
    assert d <= P and e <= P and L % P == 0 and k.shape == q.shape and v.shape[0] == L
    out = nl.ndarray((L, e), dtype=nl.float32, buffer=nl.shared_hbm)
    qt = nl.load(q)
    kt = nl.load(k)
    it, js = nl.mgrid[0:P, 0:P]
    n = L // P
    for i in nl.affine_range(n):
        acc = nl.zeros((P, e), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(n):
            keep = i >= j  # key block j is visible from query block i
            scores = nisa.nc_matmul(qt[:, nl.ds(i * P, P)], kt[:, nl.ds(j * P, P)], mask=keep)
            causal = nisa.affine_select(pred=(i * P + it >= j * P + js), on_true_tile=scores, on_false_value=0.0,
                                        mask=keep)
            by_key = nisa.nc_transpose(causal, mask=keep)
            vt = nl.load(v[nl.ds(j * P, P), :], mask=keep)
            part = nisa.nc_matmul(by_key, vt, mask=keep)
            acc[...] = nl.loop_reduce(part, op=np.add, loop_indices=[j], mask=keep)
        nl.store(out[nl.ds(i * P, P), :], value=acc)
    return out
