"""Matrix multiplication in five steps, legacy NKI API (``neuronxcc.nki``): ntile's own kernels.

Every kernel computes ``result[M, N] = lhsT[K, M].T @ rhs[K, N]``. The left operand comes
transposed because the Tensor Engine contracts along the partition dimension: a matmul reads a
stationary tile ``[K <= 128, M <= 128]`` and a moving tile ``[K <= 128, N <= 512]`` from SBUF
and writes ``[M, N]`` into a PSUM bank (512 fp32 per partition).

1. ``matmul_one_tile``: one instruction, shapes that fit one tile.
2. ``matmul_tiled``: loop over output tiles; along K, ``+=`` accumulates the partial products in
   one PSUM bank (the zero fill is folded into the first matmul).
3. ``matmul_hoisted``: the same, loading each lhsT column of tiles once per M tile and each rhs
   column once per (M, N) tile instead of once per K step.
4. ``matmul_blocked_free``: block M and N so each loaded tile feeds several matmuls.
5. ``matmul_blocked_all``: block K too; each K block's partial products leave PSUM and are summed
   in SBUF, so only a K block of operands is resident at a time.

Run them with ``ntile.nki.install()`` first (``import neuronxcc.nki`` then resolves to ntile).
"""

from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

TK = 128  # contraction rows per matmul (partitions)
TM = 128  # stationary columns per matmul
TN = 512  # moving columns per matmul (one PSUM bank of fp32)


@nki.jit
def matmul_one_tile(lhsT, rhs):
    """[K, M].T @ [K, N] for K <= 128, M <= 128, N <= 512: load, multiply, evict, store."""
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    # nl.mgrid names every element of a tile: the partition index first, then the free ones.
    ik, im = nl.mgrid[0:K, 0:M]
    a = nl.load(lhsT[ik, im])
    b = nl.load(rhs)
    prod = nl.matmul(a, b, transpose_x=True)  # PSUM, fp32
    nl.store(result, value=nl.copy(prod, dtype=result.dtype))
    return result


@nki.jit
def matmul_tiled(lhsT, rhs):
    """Any multiple of (128, 128, 512): one PSUM accumulation group per output tile."""
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                a = nl.load(lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                b = nl.load(rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                acc += nl.matmul(a, b, transpose_x=True)
            nl.store(result[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], value=nl.copy(acc, dtype=result.dtype))
    return result


@nki.jit
def matmul_hoisted(lhsT, rhs):
    """Loads hoisted out of the K loop: a block dimension holds a column of K tiles."""
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // TK
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    # An index grid for a [TK, TM] and a [TK, TN] tile, shifted by the loop offsets below.
    a_p, a_f = nl.mgrid[0:TK, 0:TM]
    b_p, b_f = nl.mgrid[0:TK, 0:TN]
    for m in nl.affine_range(M // TM):
        # KT logical tiles of [TK, TM]: par_dim marks the partition dim after the block dim.
        a_col = nl.ndarray((KT, nl.par_dim(TK), TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            a_col[k, a_p, a_f] = nl.load(lhsT[k * TK + a_p, m * TM + a_f])
        for n in nl.affine_range(N // TN):
            b_col = nl.ndarray((KT, nl.par_dim(TK), TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(KT):
                b_col[k, b_p, b_f] = nl.load(rhs[k * TK + b_p, n * TN + b_f])
            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                acc[...] += nisa.nc_matmul(a_col[k], b_col[k])
            out = nl.copy(acc, dtype=result.dtype)
            nl.store(result[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], value=out)
    return result


@nki.jit
def matmul_blocked_free(lhsT, rhs, BM=2, BN=2):
    """M and N blocked by BM and BN tiles: each loaded tile serves BN (or BM) matmuls."""
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // TK
    assert M % (BM * TM) == 0 and N % (BN * TN) == 0, "M and N must be multiples of the block"
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mb in nl.affine_range(M // (BM * TM)):
        a_blk = nl.ndarray((BM, KT, nl.par_dim(TK), TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for i in nl.affine_range(BM):
            col = (mb * BM + i) * TM
            for k in nl.affine_range(KT):
                a_blk[i, k] = nl.load(lhsT[nl.ds(k * TK, TK), nl.ds(col, TM)])
        for nb in nl.affine_range(N // (BN * TN)):
            b_blk = nl.ndarray((BN, KT, nl.par_dim(TK), TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for j in nl.affine_range(BN):
                col = (nb * BN + j) * TN
                for k in nl.affine_range(KT):
                    b_blk[j, k] = nl.load(rhs[nl.ds(k * TK, TK), nl.ds(col, TN)])
            for i in nl.affine_range(BM):
                for j in nl.affine_range(BN):
                    acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(KT):
                        acc += nisa.nc_matmul(a_blk[i, k], b_blk[j, k])
                    row, col = (mb * BM + i) * TM, (nb * BN + j) * TN
                    nl.store(result[nl.ds(row, TM), nl.ds(col, TN)], value=nl.copy(acc, dtype=result.dtype))
    return result


@nki.jit
def matmul_blocked_all(lhsT, rhs, BM=2, BN=2, BK=4):
    """M, N and K blocked: the PSUM result of each K block is added into fp32 SBUF tiles, and the
    finished (M, N) block is cast and stored once."""
    K, M = lhsT.shape
    _, N = rhs.shape
    assert M % (BM * TM) == 0 and N % (BN * TN) == 0 and K % (BK * TK) == 0, "shapes must be multiples of the blocks"
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mb in nl.affine_range(M // (BM * TM)):
        for nb in nl.affine_range(N // (BN * TN)):
            total = nl.zeros((BM, BN, nl.par_dim(TM), TN), dtype=nl.float32, buffer=nl.sbuf)
            # sequential_range: each K block adds into `total`, which the next one reads.
            for kb in nl.sequential_range(K // (BK * TK)):
                a_blk = nl.ndarray((BK, nl.par_dim(TK), BM * TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                b_blk = nl.ndarray((BK, nl.par_dim(TK), BN * TN), dtype=rhs.dtype, buffer=nl.sbuf)
                for k in nl.affine_range(BK):
                    rows = nl.ds((kb * BK + k) * TK, TK)
                    # One wide DMA per block row: BM (BN) tiles side by side in the free dim.
                    a_blk[k] = nl.load(lhsT[rows, nl.ds(mb * BM * TM, BM * TM)])
                    b_blk[k] = nl.load(rhs[rows, nl.ds(nb * BN * TN, BN * TN)])
                for i in nl.affine_range(BM):
                    for j in nl.affine_range(BN):
                        part = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
                        for k in nl.affine_range(BK):
                            part += nisa.nc_matmul(a_blk[k, :, nl.ds(i * TM, TM)], b_blk[k, :, nl.ds(j * TN, TN)])
                        total[i, j] += part
            for i in nl.affine_range(BM):
                out = nl.ndarray((TM, BN * TN), dtype=result.dtype, buffer=nl.sbuf)
                for j in nl.affine_range(BN):
                    out[:, nl.ds(j * TN, TN)] = nl.copy(total[i, j], dtype=result.dtype)
                nl.store(result[nl.ds((mb * BM + i) * TM, TM), nl.ds(nb * BN * TN, BN * TN)], value=out)
    return result
