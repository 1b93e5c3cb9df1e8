"""Two physical NeuronCores, one kernel (LNC=2), current NKI API: ntile's own kernels.

Launched as ``kernel[2]``, a kernel runs once on each of the two physical cores of a logical
NeuronCore; ``nl.program_id(0)`` says which core an instance is on and ``nl.num_programs(0)``
how many there are. Each core has its own engines, SBUF and PSUM; HBM and its bandwidth are
shared. Launched without the grid, the same kernels run whole on one core
(``num_programs(0) == 1``).

    ntile nki examples/nki/current/two_cores.py add_halves --shape a=4096x512:fp32 --shape b=4096x512:fp32 --grid 2
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def add_halves(a, b):
    """out = a + b; each core adds its own rows, 128 at a time."""
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    share = rows // nl.num_programs(0)
    first = nl.program_id(0) * share
    for t in nl.affine_range(share // 128):
        r = first + t * 128
        x = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray((128, cols), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a[r:r + 128, :])
        nisa.dma_copy(dst=y, src=b[r:r + 128, :])
        s = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=s, data1=x, data2=y, op=nl.add)
        nisa.dma_copy(dst=out[r:r + 128, :], src=s)
    return out


@nki.jit
def matmul_columns(lhsT, rhs):
    """result[M, N] = lhsT.T @ rhs; each core computes its half of the columns of the result."""
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    share = N // nl.num_programs(0)
    first = nl.program_id(0) * share
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(share // 512):
            c = first + n * 512
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                a = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                nisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, c:c + 512])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=acc)
            nisa.dma_copy(dst=result[m * 128:(m + 1) * 128, c:c + 512], src=out)
    return result
