"""Stencils and pooling, legacy NKI API: ntile's own kernels, each a statement that one
engine instruction cannot take as written.

- ``max_pool2``: ``out[c, i, j] = max(x[c, 2i + a, 2j + b])`` over the 2 x 2 window. The window
  read is four free dimensions that do not merge (rows of windows, columns of windows, then
  the window's row and column), one more than a compute engine walks, so ntile issues it as
  one instruction per row of windows.
- ``five_tap``: a 1-4-6-4-1 smoothing filter along each row, ``nl.affine_range`` over tiles of
  128 rows. Its expression makes nine temporaries per tile, too many to keep side by side with
  double buffering in SBUF; each lives only within its statement, so they take turns in
  shared bytes.
- ``gram``: ``x.T @ x`` with ``nl.matmul``, the PSUM result stored straight to HBM (the copy
  to SBUF the DMA needs is added), and ``pairs_t``: ``nl.matmul`` of a tile and a transpose
  still in PSUM (copied to SBUF for the Tensor Engine).

Run them with ``ntile.nki.install()`` first (``import neuronxcc.nki`` then resolves to ntile).
"""

from neuronxcc import nki
import neuronxcc.nki.language as nl

P = 128


@nki.jit
def max_pool2(x):
    """``x`` is ``[C <= 128, H, W]`` with even ``H`` and ``W``; the result is ``[C, H/2, W/2]``."""
    C, H, W = x.shape
    assert C <= P and H % 2 == 0 and W % 2 == 0
    out = nl.ndarray((C, H // 2, W // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.load(x)
    ic = nl.arange(C)[:, None, None, None, None]
    ii = nl.arange(H // 2)[None, :, None, None, None]
    ij = nl.arange(W // 2)[None, None, :, None, None]
    ia = nl.arange(2)[None, None, None, :, None]
    ib = nl.arange(2)[None, None, None, None, :]
    # Window (i, j) in axes 1, 2; its element (a, b) in axes 3, 4, which the max reduces.
    nl.store(out, value=nl.max(tile[ic, 2 * ii + ia, 2 * ij + ib], axis=[3, 4]))
    return out


@nki.jit
def five_tap(x):
    """``x`` is ``[R, W]`` (R a multiple of 128); the result is ``[R, W - 4]``."""
    R, W = x.shape
    assert R % P == 0 and W > 4
    n = W - 4
    out = nl.ndarray((R, n), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(R // P):
        rows = nl.ds(t * P, P)
        v = nl.load(x[rows, :])
        y = (
            (v[:, 0:n] + v[:, 4:W]) * 0.0625
            + (v[:, 1:n + 1] + v[:, 3:n + 3]) * 0.25
            + v[:, 2:n + 2] * 0.375
        )
        nl.store(out[rows, :], value=y)
    return out


@nki.jit
def gram(x):
    """``x`` is ``[K <= 128, N <= 128]``; the result is ``x.T @ x``, ``[N, N]`` fp32."""
    K, N = x.shape
    out = nl.ndarray((N, N), dtype=nl.float32, buffer=nl.shared_hbm)
    tile = nl.load(x)
    nl.store(out, value=nl.matmul(tile, tile, transpose_x=True))
    return out


@nki.jit
def pairs_t(a, b):
    """``a`` is ``[M <= 128, K <= 128]``, ``b`` is ``[N <= 128, K]``; the result is ``a @ b.T``."""
    M, K = a.shape
    N, _ = b.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.load(a)
    bt = nl.transpose(nl.load(b))  # [K, N], in PSUM
    nl.store(out, value=nl.matmul(at, bt))
    return out
