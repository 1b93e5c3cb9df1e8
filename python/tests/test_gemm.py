"""ntile.gemm against numpy / ml_dtypes references: dtypes, layouts, sparsity, outputs."""

import ml_dtypes
import numpy as np
import pytest

import ntile
from conftest import assert_within_bound

BF16 = ml_dtypes.bfloat16
E4M3 = ml_dtypes.float8_e4m3
E5M2 = ml_dtypes.float8_e5m2


def test_float32_operands_are_cast_to_bf16_by_the_dma(rng):
    a = rng.standard_normal((130, 300), dtype=np.float32)
    b = rng.standard_normal((300, 70), dtype=np.float32)
    r = ntile.gemm(a, b)
    assert r.c.dtype == np.float32 and r.c.shape == (130, 70)
    assert (r.report["lhs_dtype"], r.report["rhs_dtype"], r.report["out_dtype"]) == ("bf16", "bf16", "fp32")
    assert r.check["passed"] is True
    assert_within_bound(r.c, a.astype(BF16), b.astype(BF16))


def test_float16_operands_widen_exactly_then_cast(rng):
    a = rng.standard_normal((64, 96)).astype(np.float16)
    b = rng.standard_normal((96, 40)).astype(np.float16)
    r = ntile.gemm(a, b, dtype="fp16")
    assert r.report["lhs_dtype"] == "fp16"
    assert_within_bound(r.c, a, b)


def test_bf16_arrays_are_taken_as_they_are(rng):
    a = rng.standard_normal((100, 200)).astype(BF16)
    b = rng.standard_normal((200, 50)).astype(BF16)
    r = ntile.gemm(a, b)
    assert r.report["lhs_dtype"] == "bf16" and r.report["rhs_dtype"] == "bf16"
    assert_within_bound(r.c, a, b)
    # HBM holds bf16: half the operand bytes of float32 operands with the same values.
    f = ntile.gemm(a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_array_equal(r.c, f.c)
    assert r.report["hbm_bytes"] < f.report["hbm_bytes"]


@pytest.mark.parametrize("dt,name", [(E4M3, "fp8e4m3"), (E5M2, "fp8e5m2")])
def test_fp8_arrays_multiply_in_their_dtype(rng, dt, name):
    a = (rng.standard_normal((40, 256)) * 4).astype(dt)
    b = (rng.standard_normal((256, 33)) * 4).astype(dt)
    r = ntile.gemm(a, b)
    assert (r.report["lhs_dtype"], r.report["rhs_dtype"]) == (name, name)
    assert_within_bound(r.c, a, b)


def test_mixed_bf16_and_fp8_operands(rng):
    a = rng.standard_normal((50, 140)).astype(BF16)
    b = rng.standard_normal((140, 60)).astype(E4M3)
    r = ntile.gemm(a, b)
    assert (r.report["lhs_dtype"], r.report["rhs_dtype"]) == ("bf16", "fp8e4m3")
    assert_within_bound(r.c, a, b)


def test_fp8_double_row(rng):
    a = rng.standard_normal((64, 512)).astype(E4M3)
    b = rng.standard_normal((512, 64)).astype(E4M3)
    r = ntile.gemm(a, b, perf_mode="double_row")
    assert r.report["perf_mode"] == "double_row"
    assert_within_bound(r.c, a, b)


def test_bf16_output_is_an_ml_dtypes_array(rng):
    a = rng.standard_normal((70, 130), dtype=np.float32)
    b = rng.standard_normal((130, 90), dtype=np.float32)
    r = ntile.gemm(a, b, out_dtype="bf16")
    assert r.c.dtype == np.dtype(BF16)
    f = ntile.gemm(a, b)
    # The fp32 accumulator rounded once to bf16.
    np.testing.assert_array_equal(r.c, f.c.astype(BF16))


def test_transposed_lhs_gives_the_same_c(rng):
    a = rng.standard_normal((90, 200), dtype=np.float32)
    b = rng.standard_normal((200, 30), dtype=np.float32)
    plain = ntile.gemm(a, b)
    at = np.ascontiguousarray(a.T)
    t = ntile.gemm(at, b, lhs_transposed=True)
    assert t.report["lhs_transpose"] == "none"
    np.testing.assert_array_equal(plain.c, t.c)


def test_non_contiguous_operands_are_accepted(rng):
    big = rng.standard_normal((120, 400), dtype=np.float32)
    a = big[::2, ::2]  # strided view [60, 200]
    b = np.asfortranarray(rng.standard_normal((200, 45), dtype=np.float32))
    r = ntile.gemm(a, b)
    np.testing.assert_array_equal(r.c, ntile.gemm(np.ascontiguousarray(a), np.ascontiguousarray(b)).c)
    bf = big.astype(BF16)[:, 1::2]
    rb = ntile.gemm(bf[:60], np.ascontiguousarray(b).astype(BF16))
    assert_within_bound(rb.c, bf[:60], b.astype(BF16))


def prune(a, n, m):
    """Keep the n largest magnitudes of every m consecutive elements along K."""
    a = a.copy()
    rows, k = a.shape
    groups = a.reshape(rows, k // m, m)
    order = np.argsort(-np.abs(groups), axis=2, kind="stable")
    np.put_along_axis(groups, order[:, :, n:], 0, axis=2)
    return groups.reshape(rows, k)


def test_structured_sparse_a(rng):
    a = prune(rng.standard_normal((64, 256), dtype=np.float32), 2, 4)
    b = rng.standard_normal((256, 48), dtype=np.float32)
    r = ntile.gemm(a, b, sparsity="2:4")
    assert r.report["sparsity"] == "2:4"
    assert_within_bound(r.c, a.astype(BF16), b.astype(BF16))


def test_a_dense_a_is_refused_for_sparsity(rng):
    a = rng.standard_normal((16, 64), dtype=np.float32)
    b = rng.standard_normal((64, 16), dtype=np.float32)
    with pytest.raises(ValueError, match="2:4"):
        ntile.gemm(a, b, sparsity="2:4")


def test_explicit_schedule_and_blocks(rng):
    a = rng.standard_normal((300, 256), dtype=np.float32)
    b = rng.standard_normal((256, 700), dtype=np.float32)
    r = ntile.gemm(a, b, schedule="blocked-mnk", block={"m": 128, "n": 512, "k": 128})
    assert r.report["schedule"] == "blocked-mnk"
    assert_within_bound(r.c, a.astype(BF16), b.astype(BF16))
    t = ntile.gemm(a, b, schedule="blocked-mn", block=(128, 512), target="trn1")
    assert t.report["target"] == "trn1"
    np.testing.assert_array_equal(r.c, t.c)


def test_no_simulation_gives_the_model_only(rng):
    a = rng.standard_normal((32, 32), dtype=np.float32)
    r = ntile.gemm(a, a, simulate=False)
    assert r.c is None and r.check is None
    assert r.report["modeled_time_us"] > 0


def test_check_false_simulates_without_checking(rng):
    a = rng.standard_normal((64, 96), dtype=np.float32)
    b = rng.standard_normal((96, 40), dtype=np.float32)
    r = ntile.gemm(a, b, check=False)
    assert r.check is None and r.report["check"] is None
    # The product is still the simulated one.
    assert_within_bound(r.c, a.astype(BF16), b.astype(BF16))


def test_a_k_split_adds_the_cores_partial_sums(rng):
    a = rng.standard_normal((128, 2048)).astype(np.float32)
    b = rng.standard_normal((2048, 128)).astype(np.float32)
    r = ntile.gemm(a, b, lnc=2, out_dtype="bf16")
    lnc = r.report["lnc"]
    assert (lnc["split"], list(lnc["weighed"])) == ("k", ["k"])
    assert [(c["share"]["k0"], c["share"]["k"]) for c in lnc["per_core"]] == [(0, 1024), (1024, 1024)]
    assert r.check["passed"] is True and r.c.shape == (128, 128)
    want = a.astype(BF16).astype(np.float64) @ b.astype(BF16).astype(np.float64)
    assert np.abs(r.c.astype(np.float64) - want).max() <= np.abs(want).max() * 2**-7
    with pytest.raises(ValueError, match=r"unknown split `x` \(expected m, n or k\)"):
        ntile.model(256, 256, 256, lnc=2, split="x")


def test_nested_lists_are_read_as_float32():
    r = ntile.gemm([[1.0, 2.0], [3.0, 4.0]], [[1.0], [0.5]], dtype="fp32")
    np.testing.assert_array_equal(r.c, np.array([[2.0], [5.0]], dtype=np.float32))


def test_two_cores_split_c_check_it_and_report_each_core(rng):
    a = rng.standard_normal((384, 512)).astype(np.float32)
    b = rng.standard_normal((512, 640)).astype(np.float32)
    r = ntile.gemm(a, b, lnc=2, split="n")
    lnc = r.report["lnc"]
    assert (lnc["cores"], lnc["split"], lnc["searched"]) == (2, "n", False)
    assert sum(c["share"]["n"] for c in lnc["per_core"]) == 640
    assert r.check["passed"] is True
    assert_within_bound(r.c, a.astype(BF16), b.astype(BF16))
    one, two = ntile.model(2048, 2048, 2048), ntile.model(2048, 2048, 2048, lnc=2)
    assert "lnc" not in one.report and len(two.report["lnc"]["per_core"]) == 2
    assert 0.45 < two.modeled_time_us / one.modeled_time_us < 0.62
    with pytest.raises(ValueError, match="trn1"):
        ntile.model(1024, 1024, 1024, lnc=2, target="trn1")
    with pytest.raises(ValueError, match=r"--lnc 3 is not a logical NeuronCore: it groups 1 or 2 physical cores"):
        ntile.model(1024, 1024, 1024, lnc=3)
    with pytest.raises(ValueError, match=r"--lnc 4294967295 is not a logical NeuronCore"):
        ntile.model(1024, 1024, 1024, lnc=2**40)
