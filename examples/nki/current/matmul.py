"""Matrix multiplication in five steps, current NKI API (``nki``): ntile's own kernels.

The same five steps as ``examples/nki/legacy/matmul.py`` (read its header first), written the
current way: every instruction names its destination first, tiles are ``nl.ndarray`` views
sliced with ``[a:b]``, several tiles live in Python lists instead of block dimensions, and
``nisa.nc_matmul`` accumulates into a PSUM tile on its own: with ``accumulate=None`` the first
matmul into a region since it was read overwrites it and the following ones add to it.
"""

import nki
import nki.isa as nisa
import nki.language as nl

TK, TM, TN = 128, 128, 512


@nki.jit
def matmul_one_tile(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray((K, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    b = nl.ndarray((K, N), dtype=rhs.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=lhsT)
    nisa.dma_copy(dst=b, src=rhs)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=a, moving=b)
    out = nl.ndarray((M, N), dtype=result.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=out, src=acc)
    nisa.dma_copy(dst=result, src=out)
    return result


@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                a = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                nisa.dma_copy(dst=b, src=rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            out = nl.ndarray((TM, TN), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=acc)
            nisa.dma_copy(dst=result[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], src=out)
    return result


@nki.jit
def matmul_hoisted(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // TK
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        a_col = []
        for k in nl.affine_range(KT):
            a = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=a, src=lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
            a_col.append(a)
        for n in nl.affine_range(N // TN):
            # The whole [K, TN] column of rhs in one tile: K // TK blocks side by side, so the
            # k-th [TK, TN] operand is a strided view ([:, k, :]) of it.
            b_col = nl.ndarray((TK, KT, TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(KT):
                nisa.dma_copy(dst=b_col[:, k, :], src=rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                nisa.nc_matmul(dst=acc, stationary=a_col[k], moving=b_col[:, k, :], accumulate=(k > 0))
            out = nl.ndarray((TM, TN), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=acc)
            nisa.dma_copy(dst=result[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], src=out)
    return result


@nki.jit
def matmul_blocked_free(lhsT, rhs, BM=2, BN=2):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // TK
    assert M % (BM * TM) == 0 and N % (BN * TN) == 0
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mb in nl.affine_range(M // (BM * TM)):
        # [TK, KT, BM*TM]: for each K tile, the BM stationary tiles of the block side by side.
        a_blk = nl.ndarray((TK, KT, BM * TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            nisa.dma_copy(dst=a_blk[:, k, :], src=lhsT[k * TK:(k + 1) * TK, mb * BM * TM:(mb + 1) * BM * TM])
        for nb in nl.affine_range(N // (BN * TN)):
            b_blk = nl.ndarray((TK, KT, BN * TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(KT):
                nisa.dma_copy(dst=b_blk[:, k, :], src=rhs[k * TK:(k + 1) * TK, nb * BN * TN:(nb + 1) * BN * TN])
            for i in nl.affine_range(BM):
                for j in nl.affine_range(BN):
                    acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(KT):
                        nisa.nc_matmul(dst=acc, stationary=a_blk[:, k, i * TM:(i + 1) * TM],
                                       moving=b_blk[:, k, j * TN:(j + 1) * TN])
                    out = nl.ndarray((TM, TN), dtype=result.dtype, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=out, src=acc)
                    row, col = (mb * BM + i) * TM, (nb * BN + j) * TN
                    nisa.dma_copy(dst=result[row:row + TM, col:col + TN], src=out)
    return result


@nki.jit
def matmul_blocked_all(lhsT, rhs, BM=2, BN=2, BK=4):
    K, M = lhsT.shape
    _, N = rhs.shape
    assert M % (BM * TM) == 0 and N % (BN * TN) == 0 and K % (BK * TK) == 0
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mb in nl.affine_range(M // (BM * TM)):
        for nb in nl.affine_range(N // (BN * TN)):
            # fp32 sums of the K blocks' partial products, one [TM, TN] tile per (i, j).
            total = nl.ndarray((TM, BM * BN, TN), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=total, value=0.0)
            for kb in nl.sequential_range(K // (BK * TK)):
                a_blk = nl.ndarray((TK, BK, BM * TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                b_blk = nl.ndarray((TK, BK, BN * TN), dtype=rhs.dtype, buffer=nl.sbuf)
                for k in nl.affine_range(BK):
                    r0 = (kb * BK + k) * TK
                    nisa.dma_copy(dst=a_blk[:, k, :], src=lhsT[r0:r0 + TK, mb * BM * TM:(mb + 1) * BM * TM])
                    nisa.dma_copy(dst=b_blk[:, k, :], src=rhs[r0:r0 + TK, nb * BN * TN:(nb + 1) * BN * TN])
                for i in nl.affine_range(BM):
                    for j in nl.affine_range(BN):
                        part = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                        for k in nl.affine_range(BK):
                            nisa.nc_matmul(dst=part, stationary=a_blk[:, k, i * TM:(i + 1) * TM],
                                           moving=b_blk[:, k, j * TN:(j + 1) * TN], accumulate=(k > 0))
                        slot = total[:, i * BN + j, :]
                        nisa.tensor_tensor(dst=slot, data1=slot, data2=part, op=nl.add)
            for i in nl.affine_range(BM):
                out = nl.ndarray((TM, BN * TN), dtype=result.dtype, buffer=nl.sbuf)
                # One copy casts the BN tiles of row block i: `total` holds them contiguously.
                nisa.tensor_copy(dst=out, src=total[:, i * BN:(i + 1) * BN, :])
                row = (mb * BM + i) * TM
                nisa.dma_copy(dst=result[row:row + TM, nb * BN * TN:(nb + 1) * BN * TN], src=out)
    return result
