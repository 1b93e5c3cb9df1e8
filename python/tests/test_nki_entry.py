"""The NKI entry points on the Python side: nki.simulate, simulate_kernel, calling a @nki.jit
kernel, nki.benchmark (both forms, placeholders, latency percentiles, trace files), baremetal,
ntile.nki.profile; with the numpy trace interpreter standing in for ntile._native.nki_run."""

import json
import sys
import types

import numpy as np
import pytest

import ntile.nki as cnki
import ntile.nki.isa as cisa
import ntile.nki.language as cnl
import ntile.neuronxcc.nki as lnki
import ntile.neuronxcc.nki.language as lnl
from ntile._nki import run
from ntile.nki.typing import tensor


@cnki.jit
def add_kernel(a, b):
    out = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.shared_hbm)
    ta = cnl.ndarray(a.shape, dtype=a.dtype)
    tb = cnl.ndarray(b.shape, dtype=b.dtype)
    cisa.dma_copy(dst=ta, src=a)
    cisa.dma_copy(dst=tb, src=b)
    cisa.tensor_tensor(dst=ta, data1=ta, data2=tb, op=cnl.add)
    cisa.dma_copy(dst=out, src=ta)
    return out


@lnki.jit
def two_outputs(a):
    t = lnl.load(a)
    s = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
    d = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
    lnl.store(s, value=t + t)
    lnl.store(d, value=t * t)
    return s, d


def in_place(a, out):
    lnl.store(out, value=lnl.exp(lnl.load(a)))


def test_simulate_returns_numpy_outputs(nki_ref, rng):
    a, b = rng.standard_normal((2, 128, 64)).astype(np.float32)
    np.testing.assert_array_equal(cnki.simulate(add_kernel)(a, b), a + b)
    np.testing.assert_array_equal(cnki.simulate(add_kernel.func)(a, b), a + b)


def test_calling_a_jit_kernel_with_arrays_runs_it(nki_ref, rng):
    a = rng.standard_normal((128, 32)).astype(np.float32)
    s, d = two_outputs(a)
    np.testing.assert_array_equal(s, a + a)
    np.testing.assert_array_equal(d, a * a)


def test_simulate_kernel_updates_written_arguments_in_place(nki_ref, rng):
    a = rng.standard_normal((128, 16)).astype(np.float32)
    out = np.zeros_like(a)
    assert lnki.simulate_kernel(in_place, a, out) is None
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)


def test_a_jit_kernel_called_inside_another_is_inlined(nki_ref, rng):
    @lnki.jit
    def outer(a):
        s, d = two_outputs(a)
        return d

    a = rng.standard_normal((128, 8)).astype(np.float32)
    np.testing.assert_array_equal(outer(a), a * a)


def test_simulate_needs_arrays(nki_ref):
    with pytest.raises(ValueError, match=r"\['a', 'b'\] are shape placeholders"):
        cnki.simulate(add_kernel)(tensor[[128, 64], cnl.float32], tensor[[128, 64], cnl.float32])


def test_benchmark_models_placeholders_and_reports_the_latency(nki_ref, capsys):
    bench = cnki.benchmark(warmup=5, iters=10)(add_kernel)
    assert bench(tensor[[128, 64], cnl.bfloat16], tensor[[128, 64], cnl.bfloat16]) is None
    lat = bench.benchmark_result.nc_latency
    # The stand-in runner models 4 instructions as 4 us: every percentile is the modeled figure.
    assert [lat.get_latency_percentile(p) for p in (0, 50, 99, 100)] == [4.0] * 4
    with pytest.raises(ValueError, match="percentile 101"):
        lat.get_latency_percentile(101)
    assert capsys.readouterr().out == ""


def test_benchmark_call_form_writes_ntiles_trace_never_a_neff_or_ntff(nki_ref, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    bench = lnki.benchmark(two_outputs, save_neff_name="file.neff", save_trace_name="profile.ntff")
    bench(np.zeros((128, 8), np.float32))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.trace.json"]
    assert json.loads((tmp_path / "profile.trace.json").read_text()) == {"traceEvents": []}
    out = capsys.readouterr().out
    assert "wrote the modeled timeline of two_outputs (Chrome/Perfetto trace JSON, not an NTFF) to profile.trace.json" in out
    assert "no NEFF is produced for two_outputs (ntile models the kernel; 'file.neff' was not written)" in out
    assert bench.benchmark_result.nc_latency.get_latency_percentile(50) == 5.0


def test_the_runner_gets_the_trace_the_inputs_and_the_options(monkeypatch, rng):
    calls = []

    class Handle:
        def outputs(self):
            return {"out": np.ones((128, 64), np.float32)}

        def report(self):
            return {"modeled_time_us": 12.5}

    def fake(trace_json, inputs, options):
        calls.append((json.loads(trace_json), inputs, options))
        return Handle()

    monkeypatch.setattr(run, "RUNNER", fake)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")
    a, b = rng.standard_normal((2, 128, 64)).astype(np.float32)
    np.testing.assert_array_equal(cnki.simulate(add_kernel)(a, b), np.ones((128, 64), np.float32))
    doc, inputs, options = calls[0]
    assert doc["kernel"] == "add_kernel" and doc["target"] == "trn1"
    assert sorted(inputs) == ["a", "b"] and inputs["a"] is a
    assert options == {"target": "trn1", "simulate": True, "race_check": True}
    cnki.benchmark(add_kernel)(tensor[[128, 64], "float32"], b)
    assert calls[1][1] is None and calls[1][2]["simulate"] is False


def test_profile_gives_outputs_report_and_timeline(nki_ref, rng, tmp_path):
    a, b = rng.standard_normal((2, 128, 64)).astype(np.float32)
    prof = cnki.profile(add_kernel, a, b, target="trn3")
    np.testing.assert_array_equal(prof.outputs, a + b)
    assert prof.report["target"] == "trn3" and prof.modeled_time_us == 4.0
    assert prof.svg().startswith("<svg") and prof._repr_svg_() == prof.svg()
    prof.trace(tmp_path / "t.json")
    assert (tmp_path / "t.json").exists()
    assert "add_kernel" in prof.emit("penguin")
    assert json.loads(prof.nki_trace)["kernel"] == "add_kernel"
    assert "4.000 us modeled" in repr(prof)
    modeled = cnki.profile(add_kernel, tensor[[128, 64], "float32"], b)
    assert modeled.outputs is None and modeled.modeled_time_us == 4.0


def test_baremetal_runs_and_saves_the_trace(nki_ref, tmp_path, monkeypatch, rng):
    monkeypatch.chdir(tmp_path)
    k = lnki.baremetal(save_trace_name="run.ntff")(two_outputs)
    a = rng.standard_normal((128, 8)).astype(np.float32)
    s, d = k(a)
    np.testing.assert_array_equal(s, a + a)
    assert (tmp_path / "run.trace.json").exists() and not (tmp_path / "run.ntff").exists()


def test_legacy_profile_decorator_writes_into_its_directory(nki_ref, tmp_path):
    k = lnki.profile(working_directory=str(tmp_path / "prof"), save_trace_name="p.ntff")(two_outputs)
    k(tensor[[128, 8], lnl.float32])
    assert (tmp_path / "prof" / "p.trace.json").exists()


def test_without_the_native_runner_running_names_what_is_missing(monkeypatch):
    monkeypatch.setattr(run, "RUNNER", None)
    fake = types.ModuleType("ntile._native")
    monkeypatch.setitem(sys.modules, "ntile._native", fake)
    import ntile

    monkeypatch.setattr(ntile, "_native", fake, raising=False)
    with pytest.raises(NotImplementedError, match=r"ntile._native.nki_run"):
        cnki.simulate(add_kernel)(np.zeros((128, 4), np.float32), np.zeros((128, 4), np.float32))
