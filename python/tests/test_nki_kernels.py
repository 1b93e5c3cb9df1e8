"""ntile's own NKI kernels (examples/nki) traced and run on ntile's simulator and on the numpy
trace interpreter, against numpy references: the five matmul steps in both APIs, the
transposes, rmsnorm (both APIs), layernorm, softmax and attention (plain and causal), ragged
shapes and bf16 inputs included; and the two runners against each other."""

import json

import ml_dtypes
import numpy as np
import pytest

from conftest import load_example


def f64(x):
    return np.asarray(x, dtype=np.float64)


MATMUL_SHAPES = {
    "matmul_one_tile": (128, 64, 512),
    "matmul_tiled": (256, 256, 1024),
    "matmul_hoisted": (384, 128, 1024),
    "matmul_blocked_free": (256, 512, 2048),
    "matmul_blocked_all": (1024, 512, 2048),
}


@pytest.mark.parametrize("api", ["legacy", "current"])
@pytest.mark.parametrize("name", sorted(MATMUL_SHAPES))
def test_matmul_steps_match_numpy(nki_hook, nki_runner, rng, api, name):
    mod = load_example("matmul", api)
    K, M, N = MATMUL_SHAPES[name]
    a = rng.standard_normal((K, M)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = getattr(mod, name)(a, b)
    assert c.shape == (M, N) and c.dtype == np.float32
    ref = f64(a).T @ f64(b)
    # fp32 products summed in fp32 (PSUM, and SBUF for the K blocks): the bound of SPEC 7.
    bound = 2 * K * np.finfo(np.float32).eps * (np.abs(f64(a)).T @ np.abs(f64(b)))
    assert (np.abs(c - ref) <= bound).all()


def test_matmul_bf16_inputs_give_bf16_results_of_fp32_sums(nki_hook, nki_runner, rng):
    mod = load_example("matmul", "legacy")
    a = rng.standard_normal((256, 128)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((256, 512)).astype(ml_dtypes.bfloat16)
    c = mod.matmul_tiled(a, b)
    assert c.dtype == ml_dtypes.bfloat16
    ref = (f64(a).T @ f64(b)).astype(np.float32).astype(ml_dtypes.bfloat16)
    # One rounding of a sum that is exact to fp32 accuracy: at most one bf16 ulp apart.
    assert np.abs(f64(c) - f64(ref)).max() <= np.abs(f64(ref)).max() * 2 ** -7


def test_matmul_blocked_steps_accept_their_block_parameters(nki_hook, nki_runner, rng):
    mod = load_example("matmul", "current")
    a = rng.standard_normal((512, 384)).astype(np.float32)
    b = rng.standard_normal((512, 1536)).astype(np.float32)
    c = mod.matmul_blocked_all(a, b, BM=3, BN=1, BK=2)
    np.testing.assert_allclose(c, f64(a).T @ f64(b), rtol=1e-4, atol=1e-3)


def test_transpose_2d(nki_hook, nki_runner, rng):
    mod = load_example("transpose", "legacy")
    x = rng.standard_normal((256, 384)).astype(np.float32)
    np.testing.assert_array_equal(mod.transpose_2d(x), x.T)


def test_transpose_free_dims(nki_hook, nki_runner, rng):
    mod = load_example("transpose", "legacy")
    x = rng.standard_normal((100, 12)).astype(np.float32)
    want = x.reshape(100, 3, 4).transpose(0, 2, 1).reshape(100, 12)
    np.testing.assert_array_equal(mod.transpose_free(x, 3, 4), want)


def rmsnorm_ref(x, g, eps=1e-6):
    x64 = f64(x)
    return x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + eps) * f64(g)


@pytest.mark.parametrize("api,file", [("legacy", "norms"), ("current", "rmsnorm")])
@pytest.mark.parametrize("n", [128, 300])
def test_rmsnorm(nki_hook, nki_runner, rng, api, file, n):
    mod = load_example(file, api)
    x = rng.standard_normal((n, 200)).astype(np.float32)
    g = rng.standard_normal(200).astype(np.float32)
    np.testing.assert_allclose(mod.rmsnorm(x, g), rmsnorm_ref(x, g), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n,d", [(128, 256), (300, 1100)])
def test_layernorm(nki_hook, nki_runner, rng, n, d):
    mod = load_example("norms", "legacy")
    x = rng.standard_normal((n, d)).astype(np.float32)
    gamma = rng.standard_normal(d).astype(np.float32)
    beta = rng.standard_normal(d).astype(np.float32)
    x64 = f64(x)
    ref = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5) * gamma + beta
    np.testing.assert_allclose(mod.layernorm(x, gamma, beta), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [128, 200])
def test_softmax(nki_hook, nki_runner, rng, n):
    mod = load_example("softmax", "legacy")
    x = (rng.standard_normal((n, 300)) * 4).astype(np.float32)
    e = np.exp(f64(x) - f64(x).max(1, keepdims=True))
    np.testing.assert_allclose(mod.softmax(x), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("causal", [False, True])
def test_attention(nki_hook, nki_runner, rng, causal):
    mod = load_example("attention", "legacy")
    S, d = 640, 64
    q, k, v = (rng.standard_normal((S, d)).astype(np.float32) for _ in range(3))
    s = f64(q) @ f64(k).T / np.sqrt(d)
    if causal:
        s = np.where(np.tril(np.ones((S, S), dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(1, keepdims=True))
    ref = e / e.sum(1, keepdims=True) @ f64(v)
    np.testing.assert_allclose(mod.attention(q, k, v, causal=causal), ref, rtol=1e-4, atol=1e-5)


def test_causal_attention_differs_from_plain_where_the_mask_bites(nki_hook, nki_runner, rng):
    mod = load_example("attention", "legacy")
    q, k, v = (rng.standard_normal((128, 32)).astype(np.float32) for _ in range(3))
    plain, causal = mod.attention(q, k, v), mod.attention(q, k, v, causal=True)
    # Row 0 attends to key 0 only: its output is v[0].
    np.testing.assert_allclose(causal[0], v[0], rtol=1e-6)
    # The last row sees every key either way.
    np.testing.assert_allclose(causal[-1], plain[-1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("api", ["legacy", "current"])
@pytest.mark.parametrize("name", sorted(MATMUL_SHAPES))
def test_matmul_steps_with_bf16_inputs(nki_hook, nki_runner, rng, api, name):
    mod = load_example("matmul", api)
    K, M, N = MATMUL_SHAPES[name]
    a = rng.standard_normal((K, M)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    c = getattr(mod, name)(a, b)
    assert c.shape == (M, N) and c.dtype == ml_dtypes.bfloat16
    ref = f64(a).T @ f64(b)
    # Exact bf16 products summed in fp32, then rounded once to bf16 (half an ulp: 2^-8 relative).
    bound = 2 * K * np.finfo(np.float32).eps * (np.abs(f64(a)).T @ np.abs(f64(b))) + np.abs(ref) * 2 ** -8
    assert (np.abs(f64(c) - ref) <= bound * (1 + 2 ** -7)).all()


def test_rmsnorm_with_bf16_inputs(nki_hook, nki_runner, rng):
    mod = load_example("rmsnorm", "current")
    x = rng.standard_normal((256, 200)).astype(ml_dtypes.bfloat16)
    g = rng.standard_normal(200).astype(ml_dtypes.bfloat16)
    y = mod.rmsnorm(x, g)
    assert y.dtype == ml_dtypes.bfloat16
    # fp32 arithmetic on bf16 values, one bf16 rounding at the end (plus its intermediate tiles').
    np.testing.assert_allclose(f64(y), rmsnorm_ref(x, g), rtol=2 ** -6, atol=2 ** -6)


@pytest.mark.parametrize("case", ["matmul_blocked_all", "transpose_2d", "rmsnorm", "layernorm", "softmax",
                                  "attention_causal"])
def test_the_simulator_and_the_reference_interpreter_agree(nki_hook, rng, monkeypatch, case):
    x = rng.standard_normal((256, 384)).astype(np.float32)
    g = rng.standard_normal(384).astype(np.float32)
    calls = {
        "matmul_blocked_all": lambda: load_example("matmul", "legacy").matmul_blocked_all(
            rng.standard_normal((1024, 256)).astype(np.float32), rng.standard_normal((1024, 2048)).astype(np.float32)),
        "transpose_2d": lambda: load_example("transpose", "legacy").transpose_2d(x),
        "rmsnorm": lambda: load_example("norms", "legacy").rmsnorm(x, g),
        "layernorm": lambda: load_example("norms", "legacy").layernorm(x, g, g * 0.5),
        "softmax": lambda: load_example("softmax", "legacy").softmax(x),
        "attention_causal": lambda: load_example("attention", "legacy").attention(x[:, :64], x[:, 64:128],
                                                                                  x[:, 128:192], causal=True),
    }
    state = rng.bit_generator.state
    sim = calls[case]()
    rng.bit_generator.state = state
    import nki_reference
    from ntile._nki import run

    monkeypatch.setattr(run, "RUNNER", nki_reference.runner)
    ref = calls[case]()
    # The same trace run twice: the simulator's fp32 engines and numpy's fp64-then-rounded steps
    # (a K=1024 fp32 sum in another order differs by up to K*eps32 of its magnitudes).
    atol = 1024 * np.finfo(np.float32).eps * np.abs(ref).max() if case.startswith("matmul") else 1e-6
    np.testing.assert_allclose(sim, ref, rtol=1e-5, atol=atol)


def test_a_pooling_window_too_wide_for_one_instruction_runs_as_several(nki_hook, nki_runner, rng):
    mod = load_example("stencils", "legacy")
    x = rng.standard_normal((96, 20, 30)).astype(np.float32)
    np.testing.assert_array_equal(mod.max_pool2(x), x.reshape(96, 10, 2, 15, 2).max(axis=(2, 4)))


def test_temporaries_that_take_turns_share_sbuf(nki_hook, nki_runner, rng):
    # 8000 fp32 per partition per temporary: the sites of the filter's three lines and the
    # loaded tile do not fit trn2's SBUF side by side, double buffered or not.
    mod = load_example("stencils", "legacy")
    x = rng.standard_normal((256, 8004)).astype(np.float32)
    n = x.shape[1] - 4
    want = (f64(x[:, 0:n]) + f64(x[:, 4:])) * 0.0625 + (f64(x[:, 1:n + 1]) + f64(x[:, 3:n + 3])) * 0.25
    want += f64(x[:, 2:n + 2]) * 0.375
    np.testing.assert_allclose(mod.five_tap(x), want, rtol=1e-5, atol=1e-5)


def test_nl_calls_given_psum_tiles_copy_them_to_sbuf(nki_hook, nki_runner, rng):
    mod = load_example("stencils", "legacy")
    x = rng.standard_normal((128, 96)).astype(np.float32)
    np.testing.assert_allclose(mod.gram(x), f64(x).T @ f64(x), rtol=1e-4, atol=1e-3)
    a = rng.standard_normal((64, 128)).astype(np.float32)
    b = rng.standard_normal((100, 128)).astype(np.float32)
    np.testing.assert_allclose(mod.pairs_t(a, b), f64(a) @ f64(b).T, rtol=1e-4, atol=1e-3)


def test_a_bf16_transpose_writes_bf16_psum_from_trn2_on(nki_hook, nki_runner, rng):
    import ntile.nki

    mod = load_example("transpose", "legacy")
    x = rng.standard_normal((256, 128)).astype(ml_dtypes.bfloat16)
    out = mod.transpose_2d(x)
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out.view(np.uint16), x.T.view(np.uint16))
    if nki_runner != "reference":  # the builder's rule; the numpy interpreter runs any trace
        with pytest.raises(ValueError, match="transpose result on trn1"):
            ntile.nki.profile(mod.transpose_2d, x, target="trn1")


def test_a_double_row_pair_laid_out_contiguously_is_read_as_a_pair(nki_hook, nki_runner, rng):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.isa as lisa
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def pairs(a, b):
        # a[p, j * 128 + m], b[p, j * 512 + n]: pair j of contraction row p, side by side.
        out = lnl.ndarray((128, 512), dtype=lnl.float32, buffer=lnl.shared_hbm)
        ta, tb = lnl.load(a), lnl.load(b)
        ip, ij, im = lnl.mgrid[0:128, 0:2, 0:128]
        jp, jj, jn = lnl.mgrid[0:128, 0:2, 0:512]
        res = lisa.nc_matmul(ta[ip, ij * 128 + im], tb[jp, jj * 512 + jn], perf_mode="double_row_gen3")
        lnl.store(out, value=lnl.copy(res))
        return out

    fp8 = ml_dtypes.float8_e4m3
    a = rng.standard_normal((128, 256)).astype(fp8)
    b = rng.standard_normal((128, 1024)).astype(fp8)
    want = np.einsum("pjm,pjn->mn", f64(a).reshape(128, 2, 128), f64(b).reshape(128, 2, 512))
    np.testing.assert_allclose(pairs(a, b), want, rtol=1e-5, atol=1e-4)


def recurrence_ref(a, b, h0, dtype):
    h = np.asarray(h0, dtype=np.float32)[:, 0]
    out = np.empty(a.shape)
    for t in range(a.shape[1]):
        # Each operator in fp32, each step rounded to the result's dtype (the scan reads its
        # stored result back).
        prod = a[:, t].astype(np.float32) * h
        h = (prod + b[:, t].astype(np.float32)).astype(dtype).astype(np.float32)
        out[:, t] = h
    return out


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_a_scan_carries_each_rows_state(nki_hook, nki_runner, rng, dtype):
    mod = load_example("scan", "current")
    a = rng.uniform(0.5, 1.0, (200, 96)).astype(dtype)
    b = rng.standard_normal((200, 96)).astype(dtype)
    h0 = rng.standard_normal((200, 1)).astype(np.float32)
    out = mod.recurrence(a, b, h0)
    assert out.dtype == dtype
    np.testing.assert_array_equal(f64(out), recurrence_ref(a, b, h0, dtype))


def test_the_legacy_scan_returns_its_tile(nki_hook, nki_runner, rng):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.isa as lisa
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def cumulative(x):
        out = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(x)
        ones = lnl.full(x.shape, 1.0, dtype=lnl.float32)
        # h = 1 * h + x: a running sum from 0.
        lnl.store(out, value=lisa.tensor_tensor_scan(ones, t, initial=0, op0=np.multiply, op1=np.add))
        return out

    x = rng.standard_normal((64, 40)).astype(np.float32)
    np.testing.assert_array_equal(cumulative(x), recurrence_ref(np.ones_like(x), x, np.zeros((64, 1)), np.float32))


def test_softmax_backward_keeps_the_row_sum_in_the_tiles_dtype(nki_hook, nki_runner, rng):
    mod = load_example("gradients", "legacy")
    y = rng.random((256, 96)).astype(np.float32)
    g = rng.standard_normal((256, 96)).astype(np.float32)
    want = f64(y) * (f64(g) - (f64(y) * f64(g)).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(mod.softmax_backward(y, g), want, rtol=1e-5, atol=1e-5)
    bf16 = ml_dtypes.bfloat16
    y, g = y.astype(bf16), g.astype(bf16)
    y32, g32 = y.astype(np.float32), g.astype(np.float32)
    # The row sum rounded to bf16; the scalar_tensor_tensor computes in fp32, rounding once.
    dot = (y32 * g32).sum(axis=1, keepdims=True, dtype=np.float32).astype(bf16).astype(np.float32)
    out = mod.softmax_backward(y, g)
    assert out.dtype == bf16
    np.testing.assert_array_equal(f64(out), f64(((g32 - dot) * y32).astype(bf16)))


def test_causal_blocks_skip_whole_tiles_and_accumulate_with_loop_reduce(nki_hook, nki_runner, rng):
    import ntile.nki

    mod = load_example("gradients", "legacy")
    q = rng.standard_normal((64, 384)).astype(np.float32)
    k = rng.standard_normal((64, 384)).astype(np.float32)
    v = rng.standard_normal((384, 48)).astype(np.float32)
    want = np.tril(f64(q).T @ f64(k)) @ f64(v)
    np.testing.assert_allclose(mod.causal_linear_attention(q, k, v), want, rtol=1e-4, atol=1e-3)
    ops = [r["op"] for r in json.loads(ntile.nki.profile(mod.causal_linear_attention, q, k, v).nki_trace)["ops"]]
    # 3 query blocks see 1 + 2 + 3 key blocks: 6 of the 9 run, two matmuls and a transpose each.
    assert (ops.count("matmul"), ops.count("transpose"), ops.count("affine_select")) == (12, 6, 6)


def test_masks_keeping_part_of_a_tile_number_the_kept_part_from_its_corner(nki_hook, nki_runner):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.isa as lisa
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def parts(x):
        out = lnl.ndarray((2, 64, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
        ip, jf = lnl.mgrid[0:64, 0:64]
        t = lnl.load(x)
        sel = lnl.full((64, 64), -1.0, dtype=lnl.float32)
        # Rows 32..64, columns 4..50 only: keep where the column index exceeds the row index
        # (a partition range starts at a multiple of 32).
        sel[...] = lisa.affine_select(pred=(jf + 10 - ip > 0), on_true_tile=t, on_false_value=0.0,
                                      mask=(ip >= 32) & (jf >= 4) & (jf < 50))
        lnl.store(out[0], value=sel)
        idx = lnl.full((64, 64), -1.0, dtype=lnl.float32)
        idx[...] = lisa.iota(ip * 100 + jf, dtype=lnl.float32, mask=(ip < 32) & (jf >= 24))
        lnl.store(out[1], value=idx)
        return out

    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) + 1
    out = parts(x)
    ip, jf = np.mgrid[0:64, 0:64]
    box = (ip >= 32) & (jf >= 4) & (jf < 50)
    np.testing.assert_array_equal(out[0], np.where(box, np.where(jf + 10 > ip, x, 0.0), -1.0))
    np.testing.assert_array_equal(out[1], np.where((ip < 32) & (jf >= 24), ip * 100.0 + jf, -1.0))


def test_an_instruction_its_mask_skips_leaves_its_target_as_it_was(nki_hook, nki_runner, rng):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.isa as lisa
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def skipped(x):
        out = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(x)
        acc = lnl.full(x.shape, 3.0, dtype=lnl.float32)
        for i in lnl.affine_range(2):
            acc[...] = lisa.tensor_scalar(t, np.multiply, 2.0, mask=i > 0)  # runs once (i = 1)
            acc[...] = lisa.affine_select(pred=(i > 5), on_true_tile=t, on_false_value=9.0, mask=i > 5)  # never
            acc[...] = lnl.loop_reduce(t, op=np.add, loop_indices=[i], mask=i < 1)  # runs once (i = 0)
        lnl.store(out, value=acc)
        return out

    x = rng.standard_normal((32, 16)).astype(np.float32)
    # i = 0: acc = 3 + x; i = 1: acc = 2x (the select and the reduce skipped).
    np.testing.assert_array_equal(skipped(x), x * 2)


@pytest.mark.parametrize("reverse1", [False, True])
def test_scalar_tensor_tensor_in_the_current_api(nki_hook, nki_runner, rng, reverse1):
    import ntile.nki as nki
    import ntile.nki.isa as nisa
    import ntile.nki.language as nl

    @nki.jit
    def stt(x, c, z):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        tx, tc, tz = (nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf) for a in (x, c, z))
        for t, a in ((tx, x), (tc, c), (tz, z)):
            nisa.dma_copy(dst=t, src=a)
        r = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=r, data=tx, op0=nl.multiply, operand0=tc, op1=nl.subtract, operand1=tz,
                                  reverse1=reverse1)
        nisa.dma_copy(dst=out, src=r)
        return out

    x = rng.standard_normal((96, 40)).astype(np.float32)
    c = rng.standard_normal((96, 1)).astype(np.float32)
    z = rng.standard_normal((96, 40)).astype(np.float32)
    xc = x * c
    np.testing.assert_array_equal(stt(x, c, z), z - xc if reverse1 else xc - z)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_relu_backward_selects_with_where(nki_hook, nki_runner, rng, dtype):
    mod = load_example("gradients", "legacy")
    x = rng.standard_normal((256, 70)).astype(dtype)
    x[0, :5] = 0  # zero is not positive: its gradient is 0
    g = rng.standard_normal((256, 70)).astype(dtype)
    out = mod.relu_backward(x, g)
    assert out.dtype == dtype
    np.testing.assert_array_equal(f64(out), np.where(f64(x) > 0, f64(g), 0.0))


def test_predicated_copies_and_where_in_the_current_api(nki_hook, nki_runner, rng):
    import ntile.nki as nki
    import ntile.nki.isa as nisa
    import ntile.nki.language as nl

    @nki.jit
    def select(x, y, c):
        out = nl.ndarray((3,) + tuple(x.shape), dtype=nl.float32, buffer=nl.shared_hbm)
        tx, ty, tc = (nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf) for a in (x, y, c))
        for t, a in ((tx, x), (ty, y), (tc, c)):
            nisa.dma_copy(dst=t, src=a)
        mask = nl.ndarray(x.shape, dtype=nl.uint8, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=mask, data=tc, op0=nl.greater, operand0=0.5)
        r = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=r, src=ty)
        nisa.tensor_copy_predicated(dst=r, src=tx, predicate=mask)  # x where c > 0.5, else y
        nisa.dma_copy(dst=out[0], src=r)
        nisa.tensor_copy_predicated(dst=r, src=-1.0, predicate=mask, reverse_pred=True)  # then -1 where c <= 0.5
        nisa.dma_copy(dst=out[1], src=r)
        # A float condition is true where nonzero.
        w = nl.where(tc, tx, 2.0)
        nisa.dma_copy(dst=out[2], src=w)
        return out

    x, y = (rng.standard_normal((64, 48)).astype(np.float32) for _ in range(2))
    c = rng.random((64, 48)).astype(np.float32)
    c[::3, ::4] = 0.0
    out = select(x, y, c)
    np.testing.assert_array_equal(out[0], np.where(c > 0.5, x, y))
    np.testing.assert_array_equal(out[1], np.where(c > 0.5, x, -1.0))
    np.testing.assert_array_equal(out[2], np.where(c != 0, x, 2.0))


def test_stores_interleaved_element_by_element_do_not_race(nki_hook, nki_runner, rng):
    import ntile.nki as nki
    import ntile.nki.isa as nisa
    import ntile.nki.language as nl

    @nki.jit
    def by_column(a):
        # out[:, :, d] for each d: the stores' bounding boxes overlap, their elements do not.
        P, F, D = a.shape
        out = nl.ndarray((P, F, D), dtype=a.dtype, buffer=nl.shared_hbm)
        for d in nl.affine_range(D):
            t = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=a.ap(pattern=[[F * D, P], [D, F]], offset=d))
            nisa.dma_copy(dst=out.ap(pattern=[[F * D, P], [D, F]], offset=d), src=t)
        return out

    a = rng.standard_normal((128, 64, 4)).astype(np.float32)
    np.testing.assert_array_equal(by_column(a), a)
