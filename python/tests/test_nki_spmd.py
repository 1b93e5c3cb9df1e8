"""Kernels launched on the two physical NeuronCores of a logical core (LNC=2): ``kernel[2]`` in
the current API, ``nl.nc`` / ``nl.spmd_dim`` axes in the legacy one. Each core's programs are
traced in turn, built and simulated as one chip sharing HBM, and checked against numpy."""

import json

import ml_dtypes
import numpy as np
import pytest

import ntile.nki as cnki
import ntile.nki.isa as cisa
import ntile.nki.language as cnl
import ntile.neuronxcc.nki as lnki
import ntile.neuronxcc.nki.language as lnl
from ntile.nki.typing import tensor


def halves_add(a, b):
    """Each core adds its half of the rows (current API: program_id(0) is the core)."""
    out = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.shared_hbm)
    rows = a.shape[0] // cnl.num_programs(0)
    r0 = cnl.program_id(0) * rows
    for t in range(rows // 128):
        x = cnl.load(a[r0 + t * 128:r0 + (t + 1) * 128, :])
        y = cnl.load(b[r0 + t * 128:r0 + (t + 1) * 128, :])
        cnl.store(out[r0 + t * 128:r0 + (t + 1) * 128, :], value=cnl.add(x, y))
    return out


def test_kernel_2_runs_one_program_per_core_and_adds_exactly(rng):
    k = cnki.jit(halves_add)
    a, b = rng.standard_normal((2, 512, 256)).astype(np.float32)
    np.testing.assert_array_equal(k[2](a, b), a + b)


def test_the_trace_marks_where_each_core_begins():
    k = cnki.jit(halves_add)
    doc = json.loads(cnki.trace(k[2], np.zeros((256, 64), np.float32), np.zeros((256, 64), np.float32)))
    assert len(doc["cores"]) == 2 and doc["cores"][0] == 0
    second = doc["ops"][doc["cores"][1]:]
    stores = [o["dst"]["offset"] for o in second if o["op"] == "dma_copy" and o["dst"]["t"] == 2]
    assert stores == [128 * 64]


def test_legacy_nc_axis_puts_program_i_on_core_i_and_spmd_dim_blocks_them(rng):
    @lnki.jit
    def add(a, b):
        out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        i, j = lnl.program_id(0), lnl.program_id(1)
        rows, cols = lnl.ds(i * 128, 128), lnl.ds(j * 64, 64)
        lnl.store(out[rows, cols], value=lnl.load(a[rows, cols]) + lnl.load(b[rows, cols]))
        return out

    a, b = rng.standard_normal((2, 512, 128)).astype(np.float32)
    for grid, core_rows in [((lnl.nc(2), 2), None), ((lnl.spmd_dim(lnl.nc(2), 2), 2), [[0, 1], [2, 3]]),
                            ((lnl.spmd_dim(2, lnl.nc(2)), 2), [[0, 2], [1, 3]]),
                            # The product spellings of the two spmd_dim forms.
                            ((lnl.nc(2) * 2, 2), [[0, 1], [2, 3]]), ((2 * lnl.nc(2), 2), [[0, 2], [1, 3]])]:
        k = add[grid]
        n = 2 if core_rows is None else 4
        x, y = a[:n * 128], b[:n * 128]
        np.testing.assert_array_equal(k(x, y), x + y)
        doc = json.loads(cnki.trace(k, x, y))
        starts = doc["cores"] + [len(doc["ops"])]
        for core in range(2):
            part = doc["ops"][starts[core]:starts[core + 1]]
            stored = sorted({o["dst"]["offset"] // (128 * 128) for o in part if o["op"] == "dma_copy" and o["dst"]["t"] == 2})
            assert stored == ([core] if core_rows is None else core_rows[core]), (grid, core)


def test_a_race_between_the_cores_on_shared_hbm_is_caught():
    @cnki.jit
    def both_write_row_block_0(a):
        out = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.shared_hbm)
        x = cnl.load(a[0:128, :])
        cnl.store(out[0:128, :], value=cnl.multiply(x, cnl.program_id(0) + 1.0))
        cnl.store(out[128:256, :], value=x)
        return out

    with pytest.raises(ValueError, match=r"dma\d+\[0\] \(write\) and core1\.dma\d+\[0\] \(write\) run on different "
                                         "cores, which nothing orders"):
        both_write_row_block_0[2](np.ones((256, 64), np.float32))


def test_an_output_no_core_writes_is_refused_and_each_core_may_leave_some_to_the_other(rng):
    @cnki.jit
    def first_core_only(a):
        out = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.shared_hbm)
        if cnl.program_id(0) == 0:
            cnl.store(out, value=cnl.load(a))
        return out

    a = rng.standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_array_equal(first_core_only[2](a), a)

    @cnki.jit
    def nobody(a):
        out = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.shared_hbm)
        return out

    with pytest.raises(Exception, match="returns `out` but never writes it"):
        nobody[2](a)


def matmul_halves(a_t, b):
    """C[M, N] = A @ B with A given as [K, M] (bf16); core p computes its half of C's columns."""
    k_dim, m_dim = a_t.shape
    n_dim = b.shape[1]
    out = cnl.ndarray((m_dim, n_dim), dtype=cnl.float32, buffer=cnl.shared_hbm)
    cols = n_dim // cnl.num_programs(0)
    c0 = cnl.program_id(0) * cols
    for m in cnl.affine_range(m_dim // 128):
        for n in cnl.affine_range(cols // 512):
            acc = cnl.ndarray((128, 512), dtype=cnl.float32, buffer=cnl.psum)
            for k in cnl.affine_range(k_dim // 128):
                lhs = cnl.ndarray((128, 128), dtype=a_t.dtype, buffer=cnl.sbuf)
                rhs = cnl.ndarray((128, 512), dtype=b.dtype, buffer=cnl.sbuf)
                cisa.dma_copy(dst=lhs, src=a_t[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                cisa.dma_copy(dst=rhs, src=b[k * 128:(k + 1) * 128, c0 + n * 512:c0 + (n + 1) * 512])
                cisa.nc_matmul(dst=acc, stationary=lhs, moving=rhs)
            res = cnl.ndarray((128, 512), dtype=cnl.float32, buffer=cnl.sbuf)
            cisa.tensor_copy(dst=res, src=acc)
            cisa.dma_copy(dst=out[m * 128:(m + 1) * 128, c0 + n * 512:c0 + (n + 1) * 512], src=res)
    return out


def test_two_cores_model_about_half_the_time_of_one_for_a_compute_bound_matmul(rng):
    k = cnki.jit(matmul_halves)
    bf16 = ml_dtypes.bfloat16
    a_t = rng.standard_normal((1024, 256)).astype(bf16)
    b = rng.standard_normal((1024, 2048)).astype(bf16)
    one = cnki.profile(k, a_t, b)
    two = cnki.profile(k[2], a_t, b)
    want = a_t.astype(np.float64).T @ b.astype(np.float64)
    for p in (one, two):
        np.testing.assert_allclose(p.outputs[0] if isinstance(p.outputs, (list, tuple)) else p.outputs, want,
                                   rtol=2e-2, atol=2e-1)
    chip = two.report["chip"]
    assert len(chip["cores"]) == 2 and "chip" not in one.report
    assert two.report["matmuls"] == one.report["matmuls"]
    ratio = two.modeled_time_us / one.modeled_time_us
    assert 0.45 < ratio < 0.65, ratio


def test_the_timeline_has_a_process_per_core(tmp_path, rng):
    k = cnki.jit(halves_add)
    a, b = rng.standard_normal((2, 256, 128)).astype(np.float32)
    p = cnki.profile(k[2], a, b)
    path = tmp_path / "t.json"
    p.trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert {0, 1} <= {e.get("pid") for e in events}
    names = sorted(e["args"]["name"] for e in events if e["name"] == "process_name")
    assert names == ["core 0: halves_add (trn2)", "core 1: halves_add (trn2)"]
    assert "core 1: halves_add (trn2)" in p.svg()
    assert p.svg().count("<svg") >= 3


def test_a_bandwidth_bound_kernel_on_two_cores_is_held_to_the_shared_hbm_budget(rng):
    k = cnki.jit(halves_add)
    a, b = rng.standard_normal((2, 2048, 512)).astype(np.float32)
    one, two = cnki.profile(k, a, b), cnki.profile(k[2], a, b)
    chip = two.report["chip"]
    # Bytes over the shared budget (GB/s = B/ns) bound the time from below; one core alone
    # draws less than the budget, so two are faster than one but not twice as fast.
    floor_us = two.report["hbm_bytes"] / chip["hbm_shared_gb_per_s"] / 1e3
    assert two.modeled_time_us >= floor_us
    assert two.modeled_time_us < one.modeled_time_us
    assert chip["hbm_shared_busy"] > 0.6


def test_benchmark_and_baremetal_keep_the_grid(tmp_path, rng, capsys):
    k = cnki.jit(halves_add)
    bench = cnki.benchmark(k[2], save_trace_name=str(tmp_path / "b.ntff"))
    bench(tensor[[512, 128], cnl.float32], tensor[[512, 128], cnl.float32])
    two = bench.benchmark_result.nc_latency.get_latency_percentile(50)
    one = cnki.benchmark(k)
    one(tensor[[512, 128], cnl.float32], tensor[[512, 128], cnl.float32])
    assert two < one.benchmark_result.nc_latency.get_latency_percentile(50)
    written = [p for p in tmp_path.iterdir()]
    assert len(written) == 1
    assert {e.get("pid") for e in json.loads(written[0].read_text())["traceEvents"]} >= {0, 1}
    a, b = rng.standard_normal((2, 256, 128)).astype(np.float32)
    np.testing.assert_array_equal(cnki.baremetal(k[2])(a, b), a + b)


def test_a_two_core_kernel_inside_another_kernel_is_refused():
    inner = cnki.jit(halves_add)

    @cnki.jit
    def outer(a, b):
        return inner[2](a, b)

    with pytest.raises(NotImplementedError, match="launched on several NeuronCores called from inside another kernel"):
        outer(np.zeros((256, 64), np.float32), np.zeros((256, 64), np.float32))


def test_a_legacy_grid_of_0_runs_the_kernel_once_as_program_0(rng):
    # Public legacy kernels launch a one-program kernel as kernel[0].
    @lnki.jit
    def scaled(x):
        out = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, lnl.multiply(lnl.load(x), float(lnl.program_id(0) + 3)))
        return out

    x = rng.standard_normal((64, 32)).astype(np.float32)
    np.testing.assert_array_equal(scaled[0](x), x * np.float32(3))
    with pytest.raises(ValueError, match="0 is not a positive integer"):
        scaled[0, 2](x)
