"""The NKI entry points on ntile's own runner (ntile._native.nki_run): nki.simulate, calling a
kernel, simulate_kernel with an argument written in place, nki.benchmark's modeled latency,
profile's report (allocations, times), timelines and emitted text, and errors at the kernel's line."""

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

from conftest import load_example
from test_nki_entry import add_kernel, in_place, two_outputs


def test_simulate_and_a_direct_call_run_on_the_simulator(rng):
    a, b = rng.standard_normal((2, 128, 64)).astype(np.float32)
    np.testing.assert_array_equal(cnki.simulate(add_kernel)(a, b), a + b)
    np.testing.assert_array_equal(add_kernel(a, b), a + b)
    s, d = lnki.simulate_kernel(two_outputs, a)
    np.testing.assert_array_equal(s, a + a)
    np.testing.assert_array_equal(d, a * a)


def test_simulate_kernel_writes_an_argument_in_place(rng):
    a = rng.standard_normal((128, 32)).astype(np.float32)
    out = np.zeros_like(a)
    lnki.simulate_kernel(in_place, a, out)
    np.testing.assert_allclose(out, np.exp(a.astype(np.float64)), rtol=1e-6)


def test_bf16_arrays_in_and_out(rng):
    a, b = rng.standard_normal((2, 128, 64)).astype(ml_dtypes.bfloat16)
    c = cnki.simulate(add_kernel)(a, b)
    assert c.dtype == ml_dtypes.bfloat16
    want = (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(c.astype(np.float32), want.astype(np.float32))


def test_benchmark_reports_the_modeled_latency_of_profile(nki_hook):
    mod = load_example("matmul", "legacy")
    shapes = (tensor[[512, 256], lnl.bfloat16], tensor[[512, 1024], lnl.bfloat16])
    bench = lnki.benchmark(warmup=5, iters=10)(mod.matmul_hoisted)
    bench(*shapes)
    us = bench.benchmark_result.nc_latency.get_latency_percentile(99)
    prof = cnki.profile(mod.matmul_hoisted, *shapes)
    assert us > 0 and us == prof.modeled_time_us
    r = prof.report
    for key in ("kernel", "target", "bir_instructions", "matmuls", "hbm_bytes", "modeled_time_us", "hfu",
                "engine_busy", "allocations", "times"):
        assert key in r, key
    assert r["kernel"] == "matmul_hoisted" and r["matmuls"] == 2 * 2 * 4 and not r["simulated"]
    sites = {a["name"]: a for a in r["allocations"]}
    assert set(a["buffer"] for a in sites.values()) == {"sbuf", "psum"}
    assert all(a["loc"].endswith(".py:" + a["loc"].rsplit(":", 1)[1]) for a in sites.values())
    assert all(a["buffers"] >= 1 and len(a["ranges"]) == a["buffers"] for a in sites.values())
    assert r["times"]["build_s"] >= 0


def test_profile_timeline_and_emitted_text(nki_hook, rng, tmp_path):
    mod = load_example("matmul", "current")
    a = rng.standard_normal((1024, 128)).astype(np.float32)
    b = rng.standard_normal((1024, 2048)).astype(np.float32)
    prof = cnki.profile(mod.matmul_tiled, a, b)
    np.testing.assert_allclose(prof.outputs, a.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    prof.trace(tmp_path / "t.json")
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert any(e.get("name", "").startswith("MultiplyMoving") or "matmul" in json.dumps(e).lower() for e in events)
    assert prof.svg().startswith("<svg")
    penguin = prof.emit("penguin")
    assert "loop" in penguin and "matmult" in penguin and "matmul.py:" in penguin
    assert "program" in prof.emit("bir")
    with pytest.raises(ValueError, match="emit form `x`"):
        prof.emit("x")


def test_a_kernel_error_names_the_kernels_line(rng):
    @cnki.jit
    def not_psum(a):
        out = cnl.ndarray((128, 128), dtype=a.dtype, buffer=cnl.shared_hbm)
        t = cnl.ndarray((128, 128), dtype=a.dtype, buffer=cnl.sbuf)
        r = cnl.ndarray((128, 128), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.dma_copy(dst=t, src=a)
        cisa.nc_matmul(dst=r, stationary=t, moving=t)
        cisa.dma_copy(dst=out, src=r)
        return out

    line = not_psum.func.__code__.co_firstlineno + 6
    with pytest.raises(ValueError, match=rf"test_nki_native\.py:{line}: Result buffer of matmult must be psum!"):
        not_psum(rng.standard_normal((128, 128)).astype(np.float32))


def k_partitions(a):
    t = cnl.ndarray((256, 4), dtype=cnl.float32, buffer=cnl.sbuf)  # line +1
    cisa.memset(dst=t, value=0.0)


def k_psum_tile(a):
    out = cnl.ndarray((128, 1024), dtype=a.dtype, buffer=cnl.shared_hbm)
    p = cnl.ndarray((128, 1024), dtype=cnl.float32, buffer=cnl.psum)  # line +2
    t = cnl.ndarray((128, 1024), dtype=cnl.float32, buffer=cnl.sbuf)
    cisa.dma_copy(dst=t, src=a)
    cisa.tensor_copy(dst=p, src=t)
    cisa.dma_copy(dst=out, src=p)
    return out


def k_moving_free(a):
    out = cnl.ndarray((128, 1024), dtype=a.dtype, buffer=cnl.shared_hbm)
    s = cnl.ndarray((128, 128), dtype=cnl.float32, buffer=cnl.sbuf)
    m = cnl.ndarray((128, 1024), dtype=cnl.float32, buffer=cnl.sbuf)
    p = cnl.ndarray((128, 1024), dtype=cnl.float32, buffer=cnl.psum)
    cisa.dma_copy(dst=s, src=a[:, 0:128])
    cisa.dma_copy(dst=m, src=a)
    cisa.nc_matmul(dst=p, stationary=s, moving=m)  # line +7
    cisa.dma_copy(dst=out, src=p)
    return out


def k_stationary_free(a):
    out = cnl.ndarray((128, 512), dtype=a.dtype, buffer=cnl.shared_hbm)
    s = cnl.ndarray((128, 256), dtype=cnl.float32, buffer=cnl.sbuf)
    m = cnl.ndarray((128, 512), dtype=cnl.float32, buffer=cnl.sbuf)
    p = cnl.ndarray((128, 512), dtype=cnl.float32, buffer=cnl.psum)
    cisa.dma_copy(dst=s, src=a[:, 0:256])
    cisa.dma_copy(dst=m, src=a[:, 0:512])
    cisa.nc_matmul(dst=p, stationary=s, moving=m)  # line +7
    cisa.dma_copy(dst=out, src=p)
    return out


def k_sbuf_capacity(a):
    out = cnl.ndarray((128, 1024), dtype=a.dtype, buffer=cnl.shared_hbm)
    big = cnl.ndarray((128, 60000), dtype=cnl.float32, buffer=cnl.sbuf)  # line +2
    other = cnl.ndarray((128, 1024), dtype=cnl.float32, buffer=cnl.sbuf)
    cisa.dma_copy(dst=big[:, 0:1024], src=a)
    cisa.dma_copy(dst=other, src=a)
    cisa.tensor_tensor(dst=other, data1=other, data2=big[:, 0:1024], op=cnl.add)
    cisa.dma_copy(dst=out, src=other)
    return out


def k_never_written(a):
    out = cnl.ndarray((128, 1024), dtype=a.dtype, buffer=cnl.shared_hbm)  # line +1
    return out


@pytest.mark.parametrize("kernel,offset,message,target", [
    (k_partitions, 1, r"tensor `t` has 256 partitions, more than the 128 of the hardware", "trn2"),
    (k_psum_tile, 2, r"PSUM tile `p` needs 4096 bytes per partition, more than the 2048 of a PSUM tile on trn2 \(512 fp32\)", "trn2"),
    (k_moving_free, 7, r"matmul moving free size 1024 is over the limit of 512", "trn3"),
    (k_stationary_free, 7, r"matmul stationary free size 256 is over the limit of 128", "trn2"),
    (k_sbuf_capacity, 2, r"sbuf capacity exceeded allocating `big` \(240000 bytes per partition\): live there .*, and trn2 has \d+ bytes per partition", "trn2"),
    (k_never_written, 1, r"returns `out` but never writes it", "trn2"),
])
def test_builder_errors_name_the_kernels_line(rng, kernel, offset, message, target):
    a = rng.standard_normal((128, 1024)).astype(np.float32)
    line = kernel.__code__.co_firstlineno + offset
    with pytest.raises(ValueError, match=rf"test_nki_native\.py:{line}: .*(" + message + ")"):
        cnki.simulate(cnki.jit(kernel, platform_target=target))(a)
