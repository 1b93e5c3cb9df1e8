"""NKI forms the tracer turns into several records or infers: broadcasting across partitions,
tensor_scalar_reduce, dma_transpose, masked bn_stats, `+=` into fresh PSUM, storing a number,
legacy SPMD grids; each run on the numpy trace interpreter against numpy."""

import json

import numpy as np
import pytest

import ntile.nki as cnki
import ntile.nki.isa as cisa
import ntile.nki.language as cnl
import ntile.neuronxcc.nki as lnki
import ntile.neuronxcc.nki.isa as lisa
import ntile.neuronxcc.nki.language as lnl


def ops(doc, kind):
    return [o for o in doc["ops"] if o["op"] == kind]


def test_a_one_partition_operand_is_broadcast_across_partitions(nki_ref, rng):
    @lnki.jit
    def k(a, b, c):
        ta, tb, tc = lnl.load(a), lnl.load(b), lnl.load(c)
        out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, value=(ta + tb) * tc.broadcast_to((128, 512)))
        return out

    a = rng.standard_normal((128, 512)).astype(np.float32)
    b = rng.standard_normal((1, 512)).astype(np.float32)
    c = rng.standard_normal((1, 512)).astype(np.float32)
    np.testing.assert_array_equal(k(a, b, c), (a + b) * c)
    doc = json.loads(cnki.trace(k, a, b, c))
    # Each broadcast: a row of ones times the row, one PSUM bank, evicted to SBUF.
    mm = ops(doc, "matmul")
    assert len(mm) == 2 and mm[0]["stationary"]["ap"] == [[128, 1], [1, 128]] and mm[0]["moving"]["ap"] == [[512, 1], [1, 512]]


def test_an_hbm_row_is_broadcast_by_the_dma(nki_ref, rng):
    @cnki.jit
    def k(g):
        t = cnl.ndarray((128, 64), dtype=g.dtype)
        cisa.dma_copy(dst=t, src=g.reshape((1, 64)).broadcast(0, 128))
        out = cnl.ndarray((128, 64), dtype=g.dtype, buffer=cnl.shared_hbm)
        cisa.dma_copy(dst=out, src=t)
        return out

    g = rng.standard_normal(64).astype(np.float32)
    np.testing.assert_array_equal(k(g), np.broadcast_to(g, (128, 64)))
    assert ops(json.loads(cnki.trace(k, g)), "dma_copy")[0]["src"]["ap"] == [[0, 128], [1, 64]]


@pytest.mark.parametrize("api", ["legacy", "current"])
def test_tensor_scalar_reduce_reduces_the_fp32_results(nki_ref, rng, api):
    if api == "legacy":
        @lnki.jit
        def k(x):
            t = lnl.load(x)
            mx = lnl.ndarray((128, 1), dtype=lnl.float32, buffer=lnl.sbuf)
            y = lisa.tensor_scalar_reduce(data=t, op0=lnl.multiply, operand0=3.0, reduce_op=lnl.max, reduce_res=mx,
                                          dtype=lnl.bfloat16)
            o1 = lnl.ndarray((128, 256), dtype=lnl.bfloat16, buffer=lnl.shared_hbm)
            o2 = lnl.ndarray((128, 1), dtype=lnl.float32, buffer=lnl.shared_hbm)
            lnl.store(o1, value=y)
            lnl.store(o2, value=mx)
            return o1, o2
    else:
        @cnki.jit
        def k(x):
            t = cnl.ndarray((128, 256), dtype=x.dtype)
            cisa.dma_copy(dst=t, src=x)
            y = cnl.ndarray((128, 256), dtype=cnl.bfloat16)
            mx = cnl.ndarray((128, 1), dtype=cnl.float32)
            cisa.tensor_scalar_reduce(dst=y, data=t, op0=cnl.multiply, operand0=3.0, reduce_op=cnl.maximum,
                                      reduce_res=mx)
            o1 = cnl.ndarray((128, 256), dtype=cnl.bfloat16, buffer=cnl.shared_hbm)
            o2 = cnl.ndarray((128, 1), dtype=cnl.float32, buffer=cnl.shared_hbm)
            cisa.dma_copy(dst=o1, src=y)
            cisa.dma_copy(dst=o2, src=mx)
            return o1, o2

    x = rng.standard_normal((128, 256)).astype(np.float32)
    y, mx = k(x)
    want = (x * 3.0).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(y, np.float32), want.astype(y.dtype).astype(np.float32))
    np.testing.assert_array_equal(mx[:, 0], want.max(axis=1))


def test_dma_transpose_from_hbm_and_from_sbuf(nki_ref, rng):
    @lnki.jit
    def k(x):
        a = lisa.dma_transpose(x)
        b = lisa.dma_transpose(lnl.load(x[0:128, :]))
        o1 = lnl.ndarray((64, 256), dtype=x.dtype, buffer=lnl.shared_hbm)
        o2 = lnl.ndarray((64, 128), dtype=x.dtype, buffer=lnl.shared_hbm)
        lnl.store(o1, value=a)
        lnl.store(o2, value=b)
        return o1, o2

    x = rng.standard_normal((256, 64)).astype(np.float32)
    o1, o2 = k(x)
    np.testing.assert_array_equal(o1, x.T)
    np.testing.assert_array_equal(o2, x[:128].T)


def test_masked_bn_stats_and_aggr(nki_ref, rng):
    @lnki.jit
    def k(x):
        n, d = x.shape
        i_p = lnl.arange(128)[:, None]
        i_f = lnl.arange(512)[None, :]
        t = lnl.load(x[i_p, i_f], mask=(i_p < n) & (i_f < d))
        st = lisa.bn_stats(t[i_p, i_f], mask=(i_p < n) & (i_f < d), dtype=lnl.float32)
        mv = lisa.bn_aggr(st, mask=(i_p < n))
        out = lnl.ndarray((n, 2), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(out, value=mv[0:n, :])
        return out

    x = rng.standard_normal((100, 300)).astype(np.float32)
    mv = k(x)
    np.testing.assert_allclose(mv[:, 0], x.mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv[:, 1], x.var(axis=1), rtol=1e-5)


def test_plus_equal_into_fresh_psum_starts_the_group(nki_ref, rng):
    @lnki.jit
    def k(a, b):
        sa, sb = lnl.load(a), lnl.load(b)
        acc = lnl.ndarray((2, lnl.par_dim(128), 512), dtype=lnl.float32, buffer=lnl.psum)
        for i in lnl.affine_range(2):
            for j in lnl.affine_range(3):
                acc[i] += lisa.nc_matmul(sa, sb)
        out = lnl.ndarray((128, 512), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(out, value=lnl.copy(acc[0] + acc[1]))
        return out

    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((128, 512)).astype(np.float32)
    doc = json.loads(cnki.trace(k, a, b))
    assert [m["accumulate"] for m in ops(doc, "matmul")] == [None, "add", "add", None, "add", "add"]
    np.testing.assert_allclose(k(a, b), 6 * (a.T.astype(np.float64) @ b), rtol=1e-5, atol=1e-4)


def test_storing_a_number_fills_the_hbm_tensor(nki_ref):
    @lnki.jit
    def k(x):
        out = lnl.ndarray((300, 8), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(out, 2.5)
        return out

    np.testing.assert_array_equal(k(np.zeros((1, 1), np.float32)), np.full((300, 8), 2.5, np.float32))


def test_legacy_spmd_grid_of_a_tiled_add_runs_every_program(nki_ref, rng):
    @lnki.jit
    def add(a, b):
        out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        ix = lnl.program_id(0) * 128 + lnl.arange(128)[:, None]
        iy = lnl.program_id(1) * 512 + lnl.arange(512)[None, :]
        lnl.store(out[ix, iy], value=lnl.load(a[ix, iy]) + lnl.load(b[ix, iy]))
        return out

    a, b = rng.standard_normal((2, 256, 1024)).astype(np.float32)
    np.testing.assert_array_equal(add[2, 2](a, b), a + b)


def test_legacy_constants_modules_import():
    import ntile.neuronxcc.nki.isa.constants as c
    import ntile.neuronxcc.nki.language.constants as lc

    assert c.dge_mode.hwdge == lisa.dge_mode.hwdge
    assert lc.sizeinbytes(lnl.bfloat16) == 2 and lc.sizeinbytes(np.float32) == 4


def test_an_integer_row_is_broadcast_across_partitions_through_hbm(nki_ref):
    @lnki.jit
    def k(x):
        out = lnl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, value=lnl.broadcast_to(lnl.load(x), shape=(128, x.shape[1])))
        return out

    x = np.arange(-5, 35, dtype=np.int32).reshape(1, 40)
    out = k(x)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.broadcast_to(x, (128, 40)))
    doc = json.loads(cnki.trace(k, x))
    assert not ops(doc, "matmul") and len(ops(doc, "dma_copy")) == 4  # load, out, back, store


def test_bool_arrays_are_uint8_kernel_arguments_in_nl_hbm(nki_ref, rng):
    @cnki.jit
    def k(m, x):
        assert m.dtype == cnl.uint8 and m.buffer == cnl.hbm and x.buffer == cnl.hbm
        out = cnl.ndarray(x.shape, dtype=x.dtype, buffer=cnl.shared_hbm)
        t, p, r = (cnl.ndarray(x.shape, dtype=d, buffer=cnl.sbuf) for d in (x.dtype, cnl.uint8, x.dtype))
        cisa.dma_copy(dst=t, src=x)
        cisa.dma_copy(dst=p, src=m)
        cisa.memset(dst=r, value=0.0)
        cisa.tensor_copy_predicated(dst=r, src=t, predicate=p)
        cisa.dma_copy(dst=out, src=r)
        return out

    m = rng.random((32, 16)) > 0.5
    x = rng.standard_normal((32, 16)).astype(np.float32)
    np.testing.assert_array_equal(k(m, x), np.where(m, x, 0.0))


def test_nki_objects_take_their_plain_class_attributes_as_dataclass_fields():
    from dataclasses import dataclass

    @dataclass
    class Section(cnl.NKIObject):
        index = None
        offset = 0

    @dataclass
    class Tiles(cnl.NKIObject):
        size: int
        count: int = 2
        name = "t"

    s = Section(index=3)
    assert (s.index, s.offset, Section(offset=5).offset) == (3, 0, 5)
    assert (Tiles(128).count, Tiles(128, name="u").name) == (2, "u")
    assert isinstance(cnl.bfloat16, cnki.dtype)  # `dtype: nki.dtype = nl.bfloat16` annotates
