"""ntile's own kernels for the engine instructions and access forms public kernels use beyond
matmuls and normalizations: partition shuffles, running reductions, rows picked by a tile of
indices (gather, scatter, scatter-add), narrow and unsigned integer tiles, and the legacy
forms of grids, masks and arguments; on ntile's simulator and on the numpy trace interpreter."""

import ml_dtypes
import numpy as np
import pytest

from conftest import load_example


def f64(x):
    return np.asarray(x, dtype=np.float64)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_a_partition_broadcast_by_stream_shuffle(nki_hook, nki_runner, rng, dtype):
    mod = load_example("shuffle", "current")
    x = rng.standard_normal((256, 96)).astype(dtype)
    g = rng.standard_normal((1, 96)).astype(dtype)
    out = mod.scale_rows(x, g)
    assert out.dtype == dtype
    # One multiply in fp32, rounded once to the tile's dtype.
    want = (f64(x).astype(np.float32) * f64(g).astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(f64(out), f64(want))


def test_stream_shuffle_swaps_partition_pairs_bit_for_bit(nki_hook, nki_runner, rng):
    mod = load_example("shuffle", "current")
    x = rng.standard_normal((384, 40)).astype(np.float32)
    np.testing.assert_array_equal(mod.swap_pairs(x), x[np.arange(384) ^ 1])


def test_stream_shuffle_keeps_the_partitions_its_mask_marks_255(nki_hook, nki_runner, rng):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.isa as lisa
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def reverse_odd(a, b):
        out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        ta = lnl.load(a)
        tb = lnl.load(b)
        # Odd partitions of each quadrant take a's mirrored partition; even ones keep b.
        lisa.nc_stream_shuffle(src=ta, dst=tb, shuffle_mask=[31 - i if i % 2 else 255 for i in range(32)])
        lnl.store(out, tb)
        return out

    a, b = (rng.standard_normal((64, 16)).astype(np.float32) for _ in range(2))
    want = b.copy()
    for j in range(64):
        if j % 2:
            want[j] = a[(j // 32) * 32 + 31 - j % 32]
    np.testing.assert_array_equal(reverse_odd(a, b), want)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_prefix_sums_chain_chunks_through_load_reduce(nki_hook, nki_runner, rng, dtype):
    mod = load_example("scan", "current")
    x = rng.standard_normal((200, 1100)).astype(dtype)
    out = mod.cumsum(x)
    assert out.dtype == np.float32
    # Left to right in fp32, the register carried across the chunks of 512 unrounded.
    np.testing.assert_array_equal(out, np.cumsum(f64(x).astype(np.float32), axis=1, dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_a_running_maximum_of_rows_scaled_by_a_column(nki_hook, nki_runner, rng, dtype):
    mod = load_example("scan", "current")
    x = rng.standard_normal((130, 96)).astype(dtype)
    g = rng.standard_normal((130, 1)).astype(np.float32)
    out = mod.running_peak(x, g)
    assert out.dtype == dtype
    want = np.maximum.accumulate(f64(x).astype(np.float32) * g, axis=1).astype(dtype)
    np.testing.assert_array_equal(f64(out), f64(want))


def test_cumulative_operators_and_the_reversed_operand(nki_hook, nki_runner, rng):
    import ntile.nki as nki
    import ntile.nki.isa as nisa
    import ntile.nki.language as nl

    @nki.jit
    def k(x):
        out = nl.ndarray((3,) + tuple(x.shape), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        r = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        # reg = (2 - x) * reg from 1: a running product of (2 - x[i]).
        nisa.tensor_scalar_cumulative(dst=r, src=t, op0=nl.subtract, op1=nl.multiply, imm0=2.0, reverse0=True)
        nisa.dma_copy(dst=out[0], src=r)
        # reg = min(x + 0.5, reg) from +inf.
        nisa.tensor_scalar_cumulative(dst=r, src=t, op0=nl.add, op1=nl.minimum, imm0=0.5)
        nisa.dma_copy(dst=out[1], src=r)
        # reg = x - reg from 3 (op1(x, reg), as the ISA writes it).
        nisa.tensor_scalar_cumulative(dst=r, src=t, op0=nl.multiply, op1=nl.subtract, imm0=1.0, imm1=3.0,
                                      reduce_cmd=nisa.reduce_cmd.load_reduce)
        nisa.dma_copy(dst=out[2], src=r)
        return out

    x = rng.uniform(0.5, 1.5, (64, 20)).astype(np.float32)
    out = k(x)
    np.testing.assert_array_equal(out[0], np.multiply.accumulate(np.float32(2) - x, axis=1, dtype=np.float32))
    np.testing.assert_array_equal(out[1], np.minimum.accumulate(x + np.float32(0.5), axis=1))
    want = np.empty_like(x)
    reg = np.full(64, 3.0, np.float32)
    for i in range(20):
        reg = x[:, i] - reg
        want[:, i] = reg
    np.testing.assert_array_equal(out[2], want)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_an_embedding_lookup_gathers_the_rows_its_ids_name(nki_hook, nki_runner, rng, dtype):
    mod = load_example("embedding", "legacy")
    table = rng.standard_normal((1000, 96)).astype(dtype)
    ids = rng.integers(0, 1000, (256, 1)).astype(np.int32)
    ids[:3, 0] = [0, 999, 0]
    out = mod.embed(table, ids)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, table[ids[:, 0]])


def test_a_store_through_ids_replaces_the_rows_in_index_order(nki_hook, nki_runner, rng):
    mod = load_example("embedding", "legacy")
    table = rng.standard_normal((256, 48)).astype(np.float32)
    ids = np.array([[5], [200], [5], [0]], dtype=np.int32)
    rows = rng.standard_normal((4, 48)).astype(np.float32)
    out = mod.put_rows(table, ids, rows)
    want = table.copy()
    want[200], want[5], want[0] = rows[1], rows[2], rows[3]  # row 5 is named twice: the later wins
    np.testing.assert_array_equal(out, want)


def test_the_embedding_gradient_adds_every_row_a_repeated_id_names(nki_hook, nki_runner, rng):
    mod = load_example("embedding", "legacy")
    ids = rng.integers(0, 40, (384, 1)).astype(np.int32)  # every id many times over
    dout = rng.standard_normal((384, 64)).astype(np.float32)
    grad = mod.embed_backward(dout, ids, 256)
    # One addition after the other in fp32, in token order.
    want = np.zeros((256, 64), np.float32)
    for t, v in enumerate(ids[:, 0]):
        want[v] += dout[t]
    np.testing.assert_array_equal(grad, want)
    assert not grad[40:].any()


def test_a_gather_in_the_current_api_casts_into_its_tile(nki_hook, nki_runner, rng):
    import ntile.nki as nki
    import ntile.nki.isa as nisa
    import ntile.nki.language as nl

    @nki.jit
    def pick(data, idx):
        out = nl.ndarray((idx.shape[0], data.shape[1]), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        it = nl.ndarray(idx.shape, dtype=idx.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=it, src=idx)
        t = nl.ndarray((idx.shape[0], data.shape[1]), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=data[it, :])
        nisa.dma_copy(dst=out, src=t)
        return out

    data = rng.standard_normal((500, 200)).astype(np.float32)
    idx = np.array([[7], [499], [7], [0]], dtype=np.int32)
    np.testing.assert_array_equal(f64(pick(data, idx)), f64(data[idx[:, 0]].astype(ml_dtypes.bfloat16)))


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.uint32])
def test_narrow_and_unsigned_integer_tiles_keep_their_values(nki_hook, nki_runner, dtype):
    import ntile.nki as nki
    import ntile.nki.isa as nisa
    import ntile.nki.language as nl

    @nki.jit
    def k(x):
        out = nl.ndarray((3,) + tuple(x.shape), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=out[0], src=t)  # bit for bit through SBUF
        wide = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=wide, src=t)
        back = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=back, data=wide, op0=nl.add, operand0=1.0)  # rounds and clamps on the way in
        nisa.dma_copy(dst=out[1], src=back)
        # A predicate of this dtype: nonzero elements select.
        sel = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.memset(dst=sel, value=7)
        nisa.tensor_copy_predicated(dst=sel, src=t, predicate=t)
        nisa.dma_copy(dst=out[2], src=sel)
        return out

    info = np.iinfo(dtype)
    x = np.array([[info.min, info.max, 0, 1, 2, 100, info.max - 1, 3]] * 4, dtype=dtype)
    out = k(x)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out[0], x)
    np.testing.assert_array_equal(out[1], np.clip(x.astype(np.float64) + 1, info.min, info.max).astype(dtype))
    np.testing.assert_array_equal(out[2], np.where(x != 0, x, 7).astype(dtype))


def test_a_cumulative_continues_the_register_the_previous_one_left(nki_hook, nki_runner, rng):
    import ntile.neuronxcc.nki as nki
    import ntile.neuronxcc.nki.isa as nisa
    import ntile.neuronxcc.nki.language as nl

    @nki.jit
    def twice(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        r = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_cumulative(dst=r, src=t, op0=nl.add, op1=nl.add, imm0=0.0)
        # reduce_cmd.reduce: the register goes on from the first pass's last sum.
        nisa.tensor_scalar_cumulative(dst=r, src=t, op0=nl.add, op1=nl.add, imm0=0.0,
                                      reduce_cmd=nisa.reduce_cmd.reduce)
        nl.store(out, value=r)
        return out

    x = rng.standard_normal((64, 40)).astype(np.float32)
    first = np.cumsum(x, axis=1, dtype=np.float32)
    want = np.cumsum(np.concatenate([x, x], axis=1), axis=1, dtype=np.float32)[:, 40:]
    assert not np.array_equal(first, want)
    np.testing.assert_array_equal(twice(x), want)


def test_legacy_forms_public_kernels_use(nki_hook, nki_runner, rng):
    import ntile.neuronxcc.nki as nki
    import ntile.neuronxcc.nki.isa as nisa
    import ntile.neuronxcc.nki.language as nl

    @nki.jit
    def k(a, idx, bias=None):
        # A grid of ones still numbers its axes; an optional HBM argument is tested with `if`.
        assert nl.program_ndim() == 2 and nl.program_id(1) == 0
        out = nl.ndarray((64, 128), dtype=a.dtype, buffer=nl.shared_hbm)
        ix, iy = nl.mgrid[0:64, 0:128]
        it = nl.load(idx)
        # An mgrid column index beside a tile of row numbers.
        rows = nl.ndarray((64, 128), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows[ix, iy], src=a[it, iy])
        if bias:
            rows = nl.add(rows, nl.load(bias))
        # A mask joined with a Python condition of loop indices: kept, or nothing at all.
        for j in nl.affine_range(2):
            nl.store(out[ix, j * 64 + iy], value=rows[ix, j * 64 + iy], mask=(iy < 64) & (j == 0))
        for j in nl.affine_range(2):
            nl.store(out[ix, 64 + iy], value=rows[ix, 64 + iy], mask=(iy < 64) & (j == 1))
        return out

    a = rng.standard_normal((300, 128)).astype(np.float32)
    idx = rng.integers(0, 300, (64, 1)).astype(np.int32)
    bias = rng.standard_normal((64, 128)).astype(np.float32)
    np.testing.assert_array_equal(k[1, 1](a, idx), a[idx[:, 0]])
    np.testing.assert_array_equal(k[1, 1](a, idx, bias), a[idx[:, 0]] + bias)


def test_a_vector_engine_transpose_of_a_small_tile(nki_hook, nki_runner, rng):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.isa as lisa
    import ntile.neuronxcc.nki.language as lnl
    import ntile.nki as nki
    import ntile.nki.isa as nisa
    import ntile.nki.language as nl

    @lnki.jit
    def legacy(b):
        out = lnl.ndarray((b.shape[1], b.shape[0]), dtype=b.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, value=lisa.nc_transpose(lnl.load(b), engine=lisa.vector_engine))
        return out

    @nki.jit
    def current(b):
        out = nl.ndarray((b.shape[1], b.shape[0]), dtype=b.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=b)
        bt = nl.ndarray((b.shape[1], b.shape[0]), dtype=b.dtype, buffer=nl.sbuf)
        nisa.nc_transpose(dst=bt, data=t, engine=nisa.vector_engine)
        nisa.dma_copy(dst=out, src=bt)
        return out

    b = rng.standard_normal((32, 5)).astype(np.float32)
    np.testing.assert_array_equal(legacy(b), b.T)
    np.testing.assert_array_equal(current(b), b.T)
    with pytest.raises(ValueError, match="at most 32 x 32 elements, not 64 x 5"):
        legacy(rng.standard_normal((64, 5)).astype(np.float32))


@pytest.mark.parametrize("op", ["add", "maximum", "bitwise_or"])
def test_a_reduction_across_partitions(nki_hook, nki_runner, rng, op):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.isa as lisa
    import ntile.neuronxcc.nki.language as lnl
    import ntile.nki as nki
    import ntile.nki.isa as nisa
    import ntile.nki.language as nl

    npop = {"add": np.add, "maximum": np.maximum, "bitwise_or": np.bitwise_or}[op]

    @lnki.jit
    def legacy(a):
        out = lnl.ndarray((1,) + tuple(a.shape[1:]), dtype=a.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, value=lisa.tensor_partition_reduce(npop, lnl.load(a)))
        return out

    @nki.jit
    def current(a):
        out = nl.ndarray((1,) + tuple(a.shape[1:]), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        r = nl.ndarray(out.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_partition_reduce(dst=r, op=getattr(nl, op), data=t)
        nisa.dma_copy(dst=out, src=r)
        return out

    if op == "bitwise_or":
        a = rng.integers(0, 1 << 20, (128, 8, 4)).astype(np.int32)
        want = np.bitwise_or.reduce(a, axis=0, keepdims=True)
    else:
        a = rng.standard_normal((100, 8, 4)).astype(np.float32)
        want = a[:1].copy()
        for p in range(1, 100):  # partition 0 first, in fp32
            want = npop(want, a[p:p + 1]).astype(np.float32)
    np.testing.assert_array_equal(legacy(a), want)
    np.testing.assert_array_equal(current(a), want)


def test_static_cast_converts_by_value_on_the_host_and_in_a_kernel(nki_hook, nki_runner, rng):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.language as lnl

    x = rng.standard_normal((64, 48)).astype(np.float32)
    # Test code preparing inputs outside any kernel: a numpy array of the dtype.
    h = lnl.static_cast(x, lnl.bfloat16)
    assert h.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(f64(h), f64(x.astype(ml_dtypes.bfloat16)))

    @lnki.jit
    def k(a):
        out = lnl.ndarray(a.shape, dtype=lnl.bfloat16, buffer=lnl.shared_hbm)
        lnl.store(out, value=lnl.static_cast(lnl.load(a), lnl.bfloat16))
        return out

    np.testing.assert_array_equal(f64(k(x)), f64(h))


def test_a_benchmark_takes_a_launch_grid(nki_hook):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.language as lnl
    from ntile.nki.typing import tensor

    def add(a, b):
        out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        i = lnl.program_id(0)
        lnl.store(out[i * 128:(i + 1) * 128, :], value=lnl.add(lnl.load(a[i * 128:(i + 1) * 128, :]),
                                                               lnl.load(b[i * 128:(i + 1) * 128, :])))
        return out

    bench = lnki.benchmark(warmup=5, iters=20)(add)
    spec = tensor[[512, 256], lnl.float32]
    one, four = bench[1], bench[4]
    one(spec, spec)
    four(spec, spec)
    t1 = one.benchmark_result.nc_latency.get_latency_percentile(50)
    t4 = four.benchmark_result.nc_latency.get_latency_percentile(50)
    # Four programs move four times the data: more modeled time, and the grid was not dropped.
    assert t4 > t1 > 0


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# The functions added to the Scalar Engine's table beyond the first eighteen, with numpy float64
# definitions written from the docs' descriptions (the sigmoid gelu is x * sigmoid(1.702 x)).
NEW_FUNCTIONS = {
    "gelu_dx": lambda x: 0.5 * (1.0 + np.vectorize(__import__("math").erf)(x / np.sqrt(2.0)))
    + x * np.exp(-x * x / 2.0) / np.sqrt(2.0 * np.pi),
    "gelu_apprx_sigmoid": lambda x: x * _sigmoid(1.702 * x),
    "gelu_apprx_sigmoid_dx": lambda x: _sigmoid(1.702 * x) + 1.702 * x * _sigmoid(1.702 * x) * _sigmoid(-1.702 * x),
    "silu_dx": lambda x: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x))),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "erf_dx": lambda x: 2.0 / np.sqrt(np.pi) * np.exp(-x * x),
    "arctan": np.arctan,
    "cos": np.cos,
    "tan": np.tan,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
}


@pytest.mark.parametrize("name", sorted(NEW_FUNCTIONS))
def test_each_new_activation_function_in_both_apis_matches_numpy(nki_hook, nki_runner, rng, name):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.language as lnl
    import ntile.nki as nki
    import ntile.nki.isa as nisa
    import ntile.nki.language as nl

    @lnki.jit
    def legacy(x):
        out = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(out, getattr(lnl, name)(lnl.load(x)))
        return out

    @nki.jit
    def current(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        y = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=y, op=getattr(nl, name), data=t)
        nisa.dma_copy(dst=out, src=y)
        return out

    # arctan is valid on [-pi/2, pi/2]; the others on every number. Whole and half numbers
    # and their neighbours test the roundings.
    hi = 1.5 if name == "arctan" else 4.0
    x = rng.uniform(-hi, hi, (128, 64)).astype(np.float32)
    x[:, :8] = np.array([-1.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 1.5], dtype=np.float32)
    x[:, 8] = np.nextafter(np.float32(1.0), np.float32(0.0))
    want = NEW_FUNCTIONS[name](f64(x))
    for run in (legacy, current):
        got = run(x)
        if name in ("floor", "ceil", "trunc"):
            np.testing.assert_array_equal(got, want.astype(np.float32))
        else:
            # One rounding of the float64 value (a few ulps of fp32 where numpy's order differs).
            np.testing.assert_allclose(got, want, rtol=4e-7, atol=1e-7)


def test_arctan_outside_its_valid_range_stops_the_simulation(nki_hook):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def k(x):
        out = lnl.ndarray(x.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(out, lnl.arctan(lnl.load(x)))
        return out

    with pytest.raises(ValueError, match=r"arctan input 2 .* outside its valid range \[-pi/2, pi/2\]"):
        k(np.full((4, 4), 2.0, dtype=np.float32))


@pytest.mark.parametrize("name,ref", [
    ("mod", np.mod), ("fmod", np.fmod), ("abs_max", lambda a, b: np.maximum(np.abs(a), np.abs(b))),
    ("abs_min", lambda a, b: np.minimum(np.abs(a), np.abs(b))),
    ("logical_and", lambda a, b: np.logical_and(a, b)), ("logical_or", lambda a, b: np.logical_or(a, b)),
    ("logical_xor", lambda a, b: np.logical_xor(a, b))])
def test_remainders_logical_and_absolute_operators_of_two_tiles(nki_hook, nki_runner, rng, name, ref):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def k(a, b):
        out = lnl.ndarray(a.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(out, getattr(lnl, name)(lnl.load(a), lnl.load(b), dtype=lnl.float32))
        return out

    a = np.round(rng.uniform(-9, 9, (64, 48)), 1).astype(np.float32)
    b = np.round(rng.uniform(-4, 4, (64, 48)), 1).astype(np.float32)
    a[:, 0], b[:, 1] = 0.0, 0.0
    b[:, 0] = 0.0
    with np.errstate(invalid="ignore"):
        want = ref(a, b).astype(np.float32)
        got = k(a, b)
    ok = (got == want) | (np.isnan(got) & np.isnan(want))
    assert ok.all(), (a[~ok][:3], b[~ok][:3], got[~ok][:3], want[~ok][:3])


def test_a_masked_gather_of_rows_picked_by_computed_indices(nki_hook, nki_runner, rng):
    """Nearest-neighbour doubling of the rows of each image: output row r takes input row
    floor(r / 2), the row numbers computed in the kernel (an integer tile divided by 2 is a
    float quotient, floored back to int32); the last tile's rows past the end are masked."""
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.isa as lisa
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def double_rows(x):
        batch, rows, cols = x.shape
        out = lnl.ndarray((batch, 2 * rows, cols), dtype=x.dtype, buffer=lnl.shared_hbm)
        for b in lnl.affine_range(batch):
            for t in lnl.affine_range((2 * rows + 127) // 128):
                i_p = lnl.arange(128)[:, None]
                i_f = lnl.arange(cols)[None, :]
                pos = t * 128 + i_p
                src = lnl.floor(lisa.iota(pos, dtype=lnl.int32) / 2, dtype=lnl.int32)
                keep = pos < 2 * rows
                tile = lnl.load(x[b, src, i_f], mask=keep)
                lnl.store(out[b, pos, i_f], value=tile, mask=keep)
        return out

    x = rng.standard_normal((2, 100, 24)).astype(np.float32)
    np.testing.assert_array_equal(double_rows(x), np.repeat(x, 2, axis=1))


def test_a_masked_scatter_writes_only_the_rows_its_mask_keeps(nki_hook, nki_runner, rng):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def put_rows(table, ids, rows):
        out = lnl.ndarray(table.shape, dtype=table.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, lnl.load(table))
        idx = lnl.load(ids)
        i_p = lnl.arange(ids.shape[0])[:, None]
        i_f = lnl.arange(table.shape[1])[None, :]
        # Only the first five rows and the first 8 columns are written.
        lnl.store(out[idx[i_p, 0], i_f], value=lnl.load(rows), mask=(i_p < 5) & (i_f < 8))
        return out

    table = rng.standard_normal((40, 16)).astype(np.float32)
    ids = np.array([[3], [17], [0], [39], [8], [9], [10], [11]], dtype=np.int32)
    rows = rng.standard_normal((8, 16)).astype(np.float32)
    want = table.copy()
    want[ids[:5, 0], :8] = rows[:5, :8]
    np.testing.assert_array_equal(put_rows(table, ids, rows), want)


@pytest.mark.parametrize("api", ["legacy", "current"])
def test_var_all_logical_not_and_invert(nki_hook, nki_runner, rng, api):
    if api == "legacy":
        import ntile.neuronxcc.nki as knki
        import ntile.neuronxcc.nki.language as knl
    else:
        import ntile.nki as knki
        import ntile.nki.language as knl

    @knki.jit
    def k(x, y):
        v = knl.ndarray((x.shape[0], 1), dtype=knl.float32, buffer=knl.shared_hbm)
        a = knl.ndarray((x.shape[0], 1), dtype=knl.uint8, buffer=knl.shared_hbm)
        n = knl.ndarray(y.shape, dtype=y.dtype, buffer=knl.shared_hbm)
        z = knl.ndarray(x.shape, dtype=knl.uint8, buffer=knl.shared_hbm)
        t = knl.load(x)
        knl.store(v, knl.var(t, axis=1, keepdims=True))
        knl.store(a, knl.all(t, axis=1, keepdims=True))
        knl.store(n, knl.invert(knl.load(y)))
        knl.store(z, knl.logical_not(t))
        return v, a, n, z

    x = rng.standard_normal((64, 40)).astype(np.float32)
    x[3, 5], x[7, :] = 0.0, 0.0
    y = rng.integers(-1000, 1000, (64, 8)).astype(np.int32)
    v, a, n, z = k(x, y)
    # fp32 mean and squared deviations summed in fp32: a few ulps of the float64 variance.
    np.testing.assert_allclose(v[:, 0], f64(x).var(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(a[:, 0], np.all(x != 0, axis=1))
    np.testing.assert_array_equal(n, ~y)
    np.testing.assert_array_equal(z, x == 0)


def test_invert_of_a_float_tile_is_refused(nki_hook):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def k(x):
        lnl.invert(lnl.load(x))

    with pytest.raises(TypeError, match="nl.invert takes an integer tile"):
        k(np.zeros((4, 4), np.float32))


def _top8_reference(x):
    """The 8 largest of each row, descending, and each one's first position."""
    order = np.argsort(-x, axis=1, kind="stable")[:, :8]
    return np.take_along_axis(x, order, axis=1), order


def test_max8_find_index8_and_match_replace8_in_the_legacy_api(nki_hook, nki_runner, rng):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.isa as lisa
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def top8(x):
        n, m = x.shape
        vals = lnl.ndarray((n, 8), dtype=x.dtype, buffer=lnl.shared_hbm)
        where = lnl.ndarray((n, 8), dtype=lnl.uint32, buffer=lnl.shared_hbm)
        rest = lnl.ndarray((n, m), dtype=x.dtype, buffer=lnl.shared_hbm)
        idx = lnl.ndarray((n, 8), dtype=lnl.uint16, buffer=lnl.sbuf)
        t = lnl.load(x)
        best = lisa.max8(src=t)
        lnl.store(vals, best)
        lnl.store(where, lisa.nc_find_index8(data=t, vals=best))
        # Knocking the 8 largest out leaves the next 8 for another max8 (a top-16).
        lnl.store(rest, lisa.nc_match_replace8(data=t, vals=best, imm=float("-inf"), dst_idx=idx))
        return vals, where, rest

    x = rng.permutation(128 * 300).reshape(128, 300).astype(np.float32)
    vals, where, rest = top8(x)
    want_vals, want_pos = _top8_reference(x)
    np.testing.assert_array_equal(vals, want_vals)
    np.testing.assert_array_equal(where, want_pos.astype(np.uint32))
    want_rest = x.copy()
    np.put_along_axis(want_rest, want_pos, -np.inf, axis=1)
    np.testing.assert_array_equal(rest, want_rest)


def test_the_current_api_writes_indices_and_marks_absent_values(nki_hook, nki_runner, rng):
    import ntile.nki as nki
    import ntile.nki.isa as nisa
    import ntile.nki.language as nl

    @nki.jit
    def k(x, v):
        n = x.shape[0]
        out = nl.ndarray((n, 8), dtype=nl.uint16, buffer=nl.shared_hbm)
        rep = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        rep_idx = nl.ndarray((n, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        vals = nl.ndarray((n, 8), dtype=v.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=vals, src=v)
        found = nl.ndarray((n, 8), dtype=nl.uint16, buffer=nl.sbuf)
        nisa.nc_find_index8(dst=found, data=t, vals=vals)
        nisa.dma_copy(dst=out, src=found)
        r = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        ri = nl.ndarray((n, 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.nc_match_replace8(dst=r, data=t, vals=vals, imm=0.5, dst_idx=ri)
        nisa.dma_copy(dst=rep, src=r)
        nisa.dma_copy(dst=rep_idx, src=ri)
        return out, rep, rep_idx

    # Rows with a repeated value (8 twice, then 5 once) and a value that is absent (99).
    x = np.tile(np.array([1, 2, 3, 8, 8, 5, 6, 7, 8, 0], dtype=np.float32), (4, 2))
    v = np.tile(np.array([8, 8, 3, 99, 5, 8, 1, 2], dtype=np.float32), (4, 1))
    out, rep, rep_idx = k(x, v)
    # find_index8 pairs a repeated value with its occurrences in order of the values;
    # match_replace8 from the last value down (the ISA's documented tie-break).
    np.testing.assert_array_equal(out[0], [3, 4, 2, 0xFFFF, 5, 8, 0, 1])
    np.testing.assert_array_equal(rep_idx[0], [8, 4, 2, 0xFFFFFFFF, 5, 3, 0, 1])
    want = x.copy()
    want[:, [8, 4, 2, 5, 3, 0, 1]] = 0.5
    np.testing.assert_array_equal(rep, want)


def test_top8_shapes_are_checked_at_the_kernel_line(nki_hook):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.isa as lisa
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def short(x):
        lisa.max8(src=lnl.load(x))

    with pytest.raises(ValueError, match="nisa.max8 reads 8 to 16384 elements per partition, not 4"):
        short(np.zeros((16, 4), np.float32))

    @lnki.jit
    def wrong_vals(x):
        t = lnl.load(x)
        lisa.nc_find_index8(data=t, vals=t)

    with pytest.raises(ValueError, match=r"vals must be \[16, 8\]"):
        wrong_vals(np.zeros((16, 32), np.float32))


def test_the_top_k_example_finds_the_k_largest_and_their_columns(nki_hook, nki_runner, rng):
    mod = load_example("topk", "current")
    x = rng.standard_normal((256, 1000)).astype(np.float32)
    values, indices = mod.top_k(x, 24)
    order = np.argsort(-x, axis=1, kind="stable")[:, :24]
    np.testing.assert_array_equal(indices, order.astype(np.uint32))
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, axis=1))


def test_rand_draws_uniform_values_the_same_each_trace(nki_hook, nki_runner):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def k():
        out = lnl.ndarray((2, 128, 512), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(out[0], lnl.rand((128, 512)))
        lnl.store(out[1], lnl.rand((128, 512), dtype=lnl.float32))
        return out

    a, b = k(), k()
    np.testing.assert_array_equal(a, b)
    assert ((a >= 0) & (a < 1)).all()
    assert not np.array_equal(a[0], a[1])
    # 65536 uniform samples: the mean within 0.01 of 1/2, each tenth of [0, 1) near 10%.
    assert abs(a[0].mean() - 0.5) < 0.01
    assert (np.abs(np.histogram(a[0], bins=10, range=(0, 1))[0] / a[0].size - 0.1) < 0.01).all()


@pytest.mark.parametrize("api", ["legacy", "current"])
def test_dropout_zeroes_elements_at_the_rate_and_keeps_the_others_exactly(nki_hook, nki_runner, rng, api):
    if api == "legacy":
        import ntile.neuronxcc.nki as knki
        import ntile.neuronxcc.nki.isa as kisa
        import ntile.neuronxcc.nki.language as knl

        def drop(t, p):
            return kisa.dropout(t, prob=p)
    else:
        import ntile.nki as knki
        import ntile.nki.isa as kisa
        import ntile.nki.language as knl

        def drop(t, p):
            d = knl.ndarray(t.shape, dtype=t.dtype, buffer=knl.sbuf)
            kisa.dropout(dst=d, data=t, prob=p)
            return d

    @knki.jit
    def k(x, rates):
        out = knl.ndarray((3,) + tuple(x.shape), dtype=x.dtype, buffer=knl.shared_hbm)
        t = knl.load(x)
        knl.store(out[0], drop(t, 0.0))
        knl.store(out[1], drop(t, 0.25))
        knl.store(out[2], drop(t, knl.load(rates)))
        return out

    x = (rng.standard_normal((128, 512)) + 5).astype(np.float32)
    x[0, 0] = np.inf
    rates = np.where(np.arange(128) < 64, 1.0, 0.5).astype(np.float32)[:, None]
    none, quarter, per_row = k(x, rates)
    np.testing.assert_array_equal(none, x)
    for y in (quarter, per_row):
        kept = y != 0
        np.testing.assert_array_equal(y[kept], x[kept])
    assert abs((quarter == 0).mean() - 0.25) < 0.01
    assert (per_row[:64] == 0).all()
    assert abs((per_row[64:] == 0).mean() - 0.5) < 0.01


@pytest.mark.parametrize("api", ["legacy", "current"])
def test_select_reduce_selects_and_keeps_each_partitions_maximum(nki_hook, nki_runner, rng, api):
    if api == "legacy":
        import ntile.neuronxcc.nki as knki
        import ntile.neuronxcc.nki.isa as kisa
        import ntile.neuronxcc.nki.language as knl
    else:
        import ntile.nki as knki
        import ntile.nki.isa as kisa
        import ntile.nki.language as knl

    @knki.jit
    def k(x, p, fill):
        out = knl.ndarray((2,) + tuple(x.shape), dtype=x.dtype, buffer=knl.shared_hbm)
        peak = knl.ndarray((x.shape[0], 2), dtype=knl.float32, buffer=knl.shared_hbm)
        t, pred, f = knl.load(x), knl.load(p), knl.load(fill)
        d = knl.ndarray(x.shape, dtype=x.dtype, buffer=knl.sbuf)
        r = knl.ndarray((x.shape[0], 1), dtype=knl.float32, buffer=knl.sbuf)
        kisa.select_reduce(dst=d, predicate=pred, on_true=t, on_false=-7.5, reduce_res=r,
                           reduce_cmd=kisa.reduce_cmd.reset_reduce, reduce_op=knl.maximum)
        knl.store(out[0], d)
        knl.store(peak[:, 0:1], r)
        # Reversed predicate, a [P, 1] column where it is false, the registers continued.
        e = knl.ndarray(x.shape, dtype=x.dtype, buffer=knl.sbuf)
        kisa.select_reduce(dst=e, predicate=pred, on_true=t, on_false=f, reverse_pred=True, reduce_res=r,
                           reduce_cmd=kisa.reduce_cmd.reduce)
        knl.store(out[1], e)
        knl.store(peak[:, 1:2], r)
        return out, peak

    x = rng.standard_normal((96, 40)).astype(np.float32)
    p = (rng.random((96, 40)) < 0.3).astype(np.uint8)
    p[5] = 0
    fill = rng.standard_normal((96, 1)).astype(np.float32)
    out, peak = k(x, p, fill)
    first = np.where(p != 0, x, np.float32(-7.5))
    second = np.where(p == 0, x, fill)
    np.testing.assert_array_equal(out[0], first)
    np.testing.assert_array_equal(out[1], second)
    np.testing.assert_array_equal(peak[:, 0], first.max(axis=1))
    np.testing.assert_array_equal(peak[:, 1], np.maximum(first.max(axis=1), second.max(axis=1)))


def test_range_select_keeps_a_window_of_columns_per_partition(nki_hook, nki_runner, rng):
    import ntile.nki as nki
    import ntile.nki.isa as nisa
    import ntile.nki.language as nl

    @nki.jit
    def k(x, lo, hi):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        peak = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t, a, b = nl.load(x), nl.load(lo), nl.load(hi)
        d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.range_select(dst=d, on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=a, bound1=b,
                          reduce_res=r, range_start=100, on_false_value=-1e30)
        nl.store(out, d)
        nl.store(peak, r)
        return out, peak

    x = rng.standard_normal((64, 80)).astype(np.float32)
    lo = rng.integers(100, 140, (64, 1)).astype(np.float32)
    hi = lo + rng.integers(1, 40, (64, 1)).astype(np.float32)
    out, peak = k(x, lo, hi)
    col = 100 + np.arange(80)[None, :]
    want = np.where((col >= lo) & (col < hi), x, np.float32(-1e30))
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(peak[:, 0], want.max(axis=1))


def test_continuing_registers_no_instruction_started_is_refused(nki_hook):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.isa as lisa
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def k(x, p):
        t = lnl.load(x)
        d = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.sbuf)
        lisa.select_reduce(dst=d, predicate=lnl.load(p), on_true=t, on_false=0.0, reduce_cmd=lisa.reduce_cmd.reduce)

    with pytest.raises(ValueError, match="continues a reduction no earlier instruction"):
        k(np.zeros((8, 8), np.float32), np.zeros((8, 8), np.uint8))


@pytest.mark.parametrize("api", ["legacy", "current"])
def test_oob_mode_skip_leaves_the_rows_an_index_outside_the_table_names(nki_hook, nki_runner, rng, api):
    if api == "legacy":
        import ntile.neuronxcc.nki as knki
        import ntile.neuronxcc.nki.isa as kisa
        import ntile.neuronxcc.nki.language as knl
    else:
        import ntile.nki as knki
        import ntile.nki.isa as kisa
        import ntile.nki.language as knl

    def copy(dst, src, **kw):
        if api == "legacy":
            kisa.dma_copy(dst=dst, src=src, oob_mode=kisa.oob_mode.skip, **kw)
        else:
            kisa.dma_copy(dst=dst, src=src, oob_mode=kisa.oob_mode.skip)

    @knki.jit
    def k(table, ids, rows):
        n, d = table.shape
        got = knl.ndarray((ids.shape[0], d), dtype=table.dtype, buffer=knl.shared_hbm)
        put = knl.ndarray(table.shape, dtype=table.dtype, buffer=knl.shared_hbm)
        idx = knl.ndarray(ids.shape, dtype=ids.dtype, buffer=knl.sbuf)
        kisa.dma_copy(dst=idx, src=ids)
        g = knl.ndarray((ids.shape[0], d), dtype=table.dtype, buffer=knl.sbuf)
        g[...] = -1.0
        copy(g, table[idx[:, 0:1], :] if api == "current" else table[idx, :])
        kisa.dma_copy(dst=got, src=g)
        t = knl.ndarray(table.shape, dtype=table.dtype, buffer=knl.sbuf)
        kisa.dma_copy(dst=t, src=table)
        kisa.dma_copy(dst=put, src=t)
        r = knl.ndarray(rows.shape, dtype=rows.dtype, buffer=knl.sbuf)
        kisa.dma_copy(dst=r, src=rows)
        copy(put[idx[:, 0:1], :] if api == "current" else put[idx, :], r)
        return got, put

    table = rng.standard_normal((40, 16)).astype(np.float32)
    ids = np.array([[3], [40], [0], [-1], [39], [1000], [7], [3]], dtype=np.int32)
    rows = rng.standard_normal((8, 16)).astype(np.float32)
    got, put = k(table, ids, rows)
    ok = (ids[:, 0] >= 0) & (ids[:, 0] < 40)
    want_got = np.full((8, 16), -1.0, np.float32)
    want_got[ok] = table[ids[ok, 0]]
    np.testing.assert_array_equal(got, want_got)
    want_put = table.copy()
    for k_, r in enumerate(ids[:, 0]):
        if 0 <= r < 40:
            want_put[r] = rows[k_]
    np.testing.assert_array_equal(put, want_put)


def test_oob_mode_skip_on_a_plain_copy_is_refused(nki_hook):
    import ntile.nki as nki
    import ntile.nki.isa as nisa
    import ntile.nki.language as nl

    @nki.jit
    def k(x):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x, oob_mode=nisa.oob_mode.skip)

    with pytest.raises(ValueError, match="oob_mode=skip applies to rows named by a tile of indices"):
        k(np.zeros((4, 4), np.float32))


def test_a_mask_keeps_the_part_of_the_data_max8_and_match_replace8_search(nki_hook, nki_runner, rng):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.isa as lisa
    import ntile.neuronxcc.nki.language as lnl

    @lnki.jit
    def k(x):
        n, m = x.shape
        top = lnl.ndarray((n, 8), dtype=x.dtype, buffer=lnl.shared_hbm)
        rep = lnl.ndarray((n, m // 2), dtype=x.dtype, buffer=lnl.shared_hbm)
        ix, iy = lnl.mgrid[0:n, 0:m]
        t = lnl.load(x)
        best = lisa.max8(src=t[ix, iy], mask=(iy < m // 2))
        lnl.store(top, best)
        out = lisa.nc_match_replace8(data=t[ix, iy], vals=best, imm=0.0, mask=(iy < m // 2))
        lnl.store(rep, out[:, 0:m // 2])
        return top, rep

    x = rng.permutation(16 * 64).reshape(16, 64).astype(np.float32) + 1
    top, rep = k(x)
    half = x[:, :32]
    order = np.argsort(-half, axis=1, kind="stable")[:, :8]
    np.testing.assert_array_equal(top, np.take_along_axis(half, order, axis=1))
    want = half.copy()
    np.put_along_axis(want, order, 0.0, axis=1)
    np.testing.assert_array_equal(rep, want)


def test_the_new_instructions_refuse_what_they_cannot_do_at_the_kernel_line(nki_hook):
    import ntile.neuronxcc.nki as lnki
    import ntile.neuronxcc.nki.isa as lisa
    import ntile.neuronxcc.nki.language as lnl
    import ntile.nki as nki
    import ntile.nki.isa as nisa
    import ntile.nki.language as nl

    x = np.zeros((8, 16), np.float32)

    @lnki.jit
    def bad_compare(x):
        t = lnl.load(x)
        b = lnl.load(x[:, 0:1])
        lisa.range_select(on_true_tile=t, comp_op0=lnl.add, comp_op1=lnl.less, bound0=b, bound1=b)

    with pytest.raises(ValueError, match="range_select compares with equal, less"):
        bad_compare(x)

    @lnki.jit
    def loaded_registers(x):
        t = lnl.load(x)
        d = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.sbuf)
        p = lnl.ndarray(x.shape, dtype=lnl.uint8, buffer=lnl.sbuf)
        p[...] = 1
        lisa.select_reduce(dst=d, predicate=p, on_true=t, on_false=0.0, reduce_cmd=lisa.reduce_cmd.load_reduce)

    with pytest.raises(NotImplementedError, match="reduce_cmd=load_reduce"):
        loaded_registers(x)

    @lnki.jit
    def rand_in_psum(x):
        lnl.rand((8, 16), buffer=lnl.psum)

    with pytest.raises(NotImplementedError, match="nl.rand into psum"):
        rand_in_psum(x)

    @nki.jit
    def float_indices(x):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        v = nl.ndarray((8, 8), dtype=x.dtype, buffer=nl.sbuf)
        nisa.max8(dst=v, src=t)
        i = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_find_index8(dst=i, data=t, vals=v)

    with pytest.raises(TypeError, match="nisa.nc_find_index8: dst holds uint16 or uint32 indices, not fp32"):
        float_indices(x)

    @nki.jit
    def no_vals(x):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.nc_match_replace8(dst=t, data=t, vals=None, imm=0.0)

    with pytest.raises(TypeError, match="nc_match_replace8 needs vals"):
        no_vals(x)

    @nki.jit
    def bad_oob(x, ids):
        idx = nl.ndarray(ids.shape, dtype=ids.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=ids)
        t = nl.ndarray((4, 16), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[idx[:, 0:1], :], oob_mode=7)

    with pytest.raises(ValueError, match="oob_mode is nisa.oob_mode.error or nisa.oob_mode.skip, not 7"):
        bad_oob(x, np.zeros((4, 1), np.int32))
