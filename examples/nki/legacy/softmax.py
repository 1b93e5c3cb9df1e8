"""Softmax along rows, legacy NKI API: ntile's own kernel.

``y[i, :] = exp(x[i, :] - max_i) / sum(exp(x[i, :] - max_i))`` for a row tile of 128 rows:
the Vector Engine finds each row's maximum (negated, so it can serve as a bias), the Scalar
Engine computes ``exp(x + bias)`` and the row sums in one instruction, and the rows are scaled
by the reciprocal of their sums. Subtracting the maximum keeps ``exp`` from overflowing.
"""

from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

P = 128


@nki.jit
def softmax(x):
    N, D = x.shape
    out = nl.ndarray((N, D), dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:P, 0:D]
    for t in nl.affine_range((N + P - 1) // P):
        live = t * P + ip < N
        tile = nl.load(x[t * P + ip, jf], mask=live)
        neg_max = nisa.tensor_reduce(np.max, tile, axis=[1], negate=True, keepdims=True, mask=live)
        sums = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        e = nisa.activation(np.exp, tile, bias=neg_max, reduce_op=np.add, reduce_res=sums, mask=live,
                            dtype=nl.float32)
        inv = nl.reciprocal(sums, mask=live)
        y = nl.multiply(e, inv, dtype=x.dtype, mask=live)
        nl.store(out[t * P + ip, jf], value=y, mask=live)
    return out
