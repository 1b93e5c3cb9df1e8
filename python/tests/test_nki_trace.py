"""The NKI tracer's traces: exact records and views for small kernels of both APIs, the index
algebra (slices, integers, ``...``, ``.ap()``, ``nl.arange``/``nl.mgrid``/``nl.ds``, masks as
smaller counts), loop markers, locations and sites, accumulation flags, redirected results,
direct allocation and the JSON itself."""

import inspect
import json
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import ntile.nki as cnki
import ntile.nki.isa as cisa
import ntile.nki.language as cnl
import ntile.neuronxcc.nki as lnki
import ntile.neuronxcc.nki.compiler as ncc
import ntile.neuronxcc.nki.isa as lisa
import ntile.neuronxcc.nki.language as lnl
from ntile.nki.typing import tensor

# Kernel files are shown relative to the working directory when inside it.
HERE = os.path.relpath(os.path.abspath(__file__)) if os.path.abspath(__file__).startswith(os.getcwd() + os.sep) \
    else os.path.abspath(__file__)


def trace(kernel, *args, **kwargs):
    return json.loads(cnki.trace(kernel, *args, **kwargs))


def line_of(fn, text):
    """The line of ``fn``'s source holding ``text`` (so expectations follow edits)."""
    lines, start = inspect.getsourcelines(getattr(fn, "func", fn))
    hits = [start + i for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, f"{text!r} is on {len(hits)} lines"
    return hits[0]


def ops(doc, *kinds):
    return [o for o in doc["ops"] if not kinds or o["op"] in kinds]


def strip(o):
    return {k: v for k, v in o.items() if k != "loc"}


@lnki.jit
def tiled(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = lnl.ndarray((M, N), dtype=lnl.float32, buffer=lnl.shared_hbm)
    acc = lnl.zeros((128, 512), lnl.float32, buffer=lnl.psum)
    for k in lnl.affine_range(K // 128):
        a = lnl.load(lhsT[k * 128:(k + 1) * 128, 0:128])
        b = lnl.load(rhs[k * 128:(k + 1) * 128, 0:512])
        acc += lnl.matmul(a, b, transpose_x=True)
    lnl.store(out, value=lnl.copy(acc))
    return out


def test_legacy_tiled_matmul_records_and_views_are_exact():
    doc = trace(tiled, tensor[[256, 128], lnl.float32], tensor[[256, 512], lnl.float32])
    assert doc["format"] == "ntile-nki-trace" and doc["version"] == 1
    assert (doc["kernel"], doc["api"], doc["target"]) == ("tiled", "legacy", "trn2")
    assert doc["files"] == [HERE]
    names = [(t["name"], t["buffer"], t["dtype"], t["shape"], t["par"], t["site"]) for t in doc["tensors"]]
    assert names == [
        ("lhsT", "input", "fp32", [256, 128], 0, 0),
        ("rhs", "input", "fp32", [256, 512], 0, 1),
        ("out", "shared_hbm", "fp32", [128, 512], 0, 2),
        ("acc", "psum", "fp32", [128, 512], 0, 3),
        ("a", "sbuf", "fp32", [128, 128], 0, 4),
        ("b", "sbuf", "fp32", [128, 512], 0, 5),
        ("a", "sbuf", "fp32", [128, 128], 0, 4),
        ("b", "sbuf", "fp32", [128, 512], 0, 5),
        ("t", "sbuf", "fp32", [128, 512], 0, 6),
    ]
    psum = {"t": 3, "offset": 0, "ap": [[512, 128], [1, 512]]}
    got = [strip(o) for o in doc["ops"]]
    assert got == [
        {"op": "memset", "dst": psum, "value": 0.0, "engine": None},
        {"op": "loop_begin", "kind": "affine", "trips": 2},
        {"op": "iteration", "index": 0},
        {"op": "dma_copy", "dst": {"t": 4, "offset": 0, "ap": [[128, 128], [1, 128]]},
         "src": {"t": 0, "offset": 0, "ap": [[128, 128], [1, 128]]}},
        {"op": "dma_copy", "dst": {"t": 5, "offset": 0, "ap": [[512, 128], [1, 512]]},
         "src": {"t": 1, "offset": 0, "ap": [[512, 128], [1, 512]]}},
        {"op": "matmul", "dst": psum, "stationary": {"t": 4, "offset": 0, "ap": [[128, 128], [1, 128]]},
         "moving": {"t": 5, "offset": 0, "ap": [[512, 128], [1, 512]]}, "accumulate": "add", "perf_mode": "none",
         "tile_position": None, "tile_size": None},
        {"op": "iteration", "index": 1},
        {"op": "dma_copy", "dst": {"t": 6, "offset": 0, "ap": [[128, 128], [1, 128]]},
         "src": {"t": 0, "offset": 16384, "ap": [[128, 128], [1, 128]]}},
        {"op": "dma_copy", "dst": {"t": 7, "offset": 0, "ap": [[512, 128], [1, 512]]},
         "src": {"t": 1, "offset": 65536, "ap": [[512, 128], [1, 512]]}},
        {"op": "matmul", "dst": psum, "stationary": {"t": 6, "offset": 0, "ap": [[128, 128], [1, 128]]},
         "moving": {"t": 7, "offset": 0, "ap": [[512, 128], [1, 512]]}, "accumulate": "add", "perf_mode": "none",
         "tile_position": None, "tile_size": None},
        {"op": "loop_end"},
        {"op": "tensor_copy", "dst": {"t": 8, "offset": 0, "ap": [[512, 128], [1, 512]]}, "src": psum, "engine": None},
        {"op": "dma_copy", "dst": {"t": 2, "offset": 0, "ap": [[512, 128], [1, 512]]},
         "src": {"t": 8, "offset": 0, "ap": [[512, 128], [1, 512]]}},
    ]
    assert doc["outputs"] == [2]
    # Every record points at the kernel's own line; the loop markers at the `for`.
    lines = {o["op"]: o["loc"] for o in doc["ops"]}
    assert lines["matmul"] == [0, line_of(tiled, "acc += lnl.matmul")]
    assert lines["loop_begin"] == lines["iteration"] == lines["loop_end"] == [0, line_of(tiled, "for k in")]
    # The PSUM temporary of each nl.matmul was redirected into acc: no tensor holds it.
    assert all(t["buffer"] != "psum" or t["name"] == "acc" for t in doc["tensors"])


@cnki.jit
def current_tiled(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = cnl.ndarray((M, N), dtype=lhsT.dtype, buffer=cnl.shared_hbm)
    acc = cnl.ndarray((M, N), dtype=cnl.float32, buffer=cnl.psum)
    for k in cnl.affine_range(K // 128):
        a = cnl.ndarray((128, M), dtype=lhsT.dtype, buffer=cnl.sbuf)
        b = cnl.ndarray((128, N), dtype=rhs.dtype, buffer=cnl.sbuf)
        cisa.dma_copy(dst=a, src=lhsT[k * 128:(k + 1) * 128, :])
        cisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, :])
        cisa.nc_matmul(dst=acc, stationary=a, moving=b)
    res = cnl.ndarray((M, N), dtype=out.dtype, buffer=cnl.sbuf)
    cisa.tensor_copy(dst=res, src=acc)
    cisa.dma_copy(dst=out, src=res)
    return out


def test_current_tiled_matmul_leaves_accumulation_to_the_builder():
    doc = trace(current_tiled, tensor[[384, 64], cnl.bfloat16], tensor[[384, 256], cnl.bfloat16])
    assert doc["api"] == "current"
    mm = ops(doc, "matmul")
    assert [m["accumulate"] for m in mm] == [None, None, None]
    assert [m["stationary"]["t"] for m in mm] == [4, 6, 8]
    assert mm[2]["dst"] == {"t": 3, "offset": 0, "ap": [[256, 64], [1, 256]]}
    src = [o["src"] for o in ops(doc, "dma_copy")][:2]
    assert src == [{"t": 0, "offset": 0, "ap": [[64, 128], [1, 64]]}, {"t": 1, "offset": 0, "ap": [[256, 128], [1, 256]]}]
    assert [t["dtype"] for t in doc["tensors"][:2]] == ["bf16", "bf16"]


def test_a_result_used_again_is_copied_not_redirected():
    @lnki.jit
    def k(x):
        t = lnl.load(x)
        e = lnl.exp(t)
        e[0:4, :] = 0.0
        u = lnl.ndarray((128, 64), dtype=lnl.float32, buffer=lnl.sbuf)
        u[...] = e
        v = lnl.ndarray((128, 64), dtype=lnl.float32, buffer=lnl.sbuf)
        v[...] = lnl.exp(t)
        return None

    doc = trace(k, tensor[[128, 64], lnl.float32])
    kinds = [o["op"] for o in doc["ops"]]
    # e was written again after its producer: u gets a copy; v's exp writes v directly.
    assert kinds == ["dma_copy", "activation", "memset", "tensor_copy", "activation"]
    names = {i: t["name"] for i, t in enumerate(doc["tensors"])}
    assert names[ops(doc, "tensor_copy")[0]["dst"]["t"]] == "u"
    assert names[ops(doc, "activation")[1]["dst"]["t"]] == "v"


def test_matmul_accumulate_flags_follow_the_kernel():
    @cnki.jit
    def k(a, b):
        acc = cnl.ndarray((128, 512), dtype=cnl.float32, buffer=cnl.psum)
        sa = cnl.ndarray((128, 128), dtype=a.dtype)
        sb = cnl.ndarray((128, 512), dtype=b.dtype)
        cisa.dma_copy(dst=sa, src=a)
        cisa.dma_copy(dst=sb, src=b)
        for i in range(3):
            cisa.nc_matmul(dst=acc, stationary=sa, moving=sb, accumulate=(i > 0))
        cisa.nc_matmul(dst=acc, stationary=sa, moving=sb)

    doc = trace(k, tensor[[128, 128], "float32"], tensor[[128, 512], "float32"])
    assert [m["accumulate"] for m in ops(doc, "matmul")] == [False, True, True, None]

    @lnki.jit
    def legacy(a, b):
        sa, sb = lnl.load(a), lnl.load(b)
        acc = lnl.ndarray((128, 512), dtype=lnl.float32, buffer=lnl.psum)
        acc[...] = lisa.nc_matmul(sa, sb)
        acc[...] += lisa.nc_matmul(sa, sb)
        fresh = lisa.nc_matmul(sa, sb)
        out = lnl.ndarray((128, 512), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(out, value=lnl.copy(acc + fresh))
        return out

    doc = trace(legacy, tensor[[128, 128], "float32"], tensor[[128, 512], "float32"])
    mm = ops(doc, "matmul")
    assert [m["accumulate"] for m in mm] == [False, "add", None]
    assert mm[0]["dst"]["t"] == mm[1]["dst"]["t"] != mm[2]["dst"]["t"]


def test_current_api_indexing_follows_the_language_guide():
    seen = {}

    @cnki.jit
    def k():
        t = cnl.ndarray((64, 64, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        seen["t[0,0,10]"] = t[0, 0, 10].shape
        seen["t[:,0]"] = t[:, 0].shape
        seen["t[:,0,10]"] = t[:, 0, 10].shape
        seen["t[0:64,0,0:64]"] = t[0:64, 0, 0:64].shape
        seen["t[:,:,::2]"] = t[:, :, ::2].shape
        seen["t[...]"] = t[...].shape
        seen["t[0,...,:]"] = t[0, ..., :].shape
        u = t[0:32, 3, 8:40]
        seen["u"] = (u.shape, u.strides, u.offset, u.get_pattern())
        h = cnl.ndarray((4, 128, 32), dtype=cnl.float32, buffer=cnl.shared_hbm)
        seen["h[0,:,:]"] = h[0, :, :].shape
        v = cnl.ndarray((128, 1024), dtype=cnl.float16, buffer=cnl.sbuf)
        w = v.ap(pattern=[(1024, 128), (2, 512)])
        seen["ap"] = (w.shape, w.get_pattern())
        r = v.reshape((128, 2, 512))
        seen["reshape"] = (r.shape, r.strides)
        p = cnl.ndarray((128, 4, 8), dtype=cnl.float32).permute((0, 2, 1))
        seen["permute"] = (p.shape, p.strides)
        seen["chain"] = cnl.ndarray((128, 4, 16), dtype=cnl.float32)[0:64, :, :].permute((0, 2, 1))[:, 0, :].shape

    trace(k)
    assert seen["t[0,0,10]"] == (1, 1)
    assert seen["t[:,0]"] == (64, 64)
    assert seen["t[:,0,10]"] == (64, 1)
    assert seen["t[0:64,0,0:64]"] == (64, 64)
    assert seen["t[:,:,::2]"] == (64, 64, 32)
    assert seen["t[...]"] == (64, 64, 64)
    assert seen["t[0,...,:]"] == (1, 64, 64)
    assert seen["u"] == ((32, 32), (4096, 1), 3 * 64 + 8, [[4096, 32], [1, 32]])
    assert seen["h[0,:,:]"] == (128, 32)
    assert seen["ap"] == ((128, 512), [[1024, 128], [2, 512]])
    assert seen["reshape"] == ((128, 2, 512), (1024, 512, 1))
    assert seen["permute"] == ((128, 8, 4), (32, 1, 8))
    assert seen["chain"] == (64, 4)


def test_legacy_affine_indices_become_views():
    @lnki.jit
    def k(x):
        t = lnl.ndarray((4, lnl.par_dim(128), 512), dtype=lnl.float32, buffer=lnl.sbuf)
        i_p = lnl.arange(128)[:, None]
        i_f = lnl.arange(512)[None, :]
        for j in lnl.affine_range(2):
            t[j + 1, i_p, i_f] = lnl.load(x[j * 128 + i_p, i_f])
        g = lnl.mgrid[0:128, 0:8, 0:64]
        a = lnl.load(x[g.p + 128, g.x * 64 + g.y])
        b = lnl.load(x[lnl.ds(256, 128), 2 * i_f + 1 - 1])
        y = lnl.ndarray((128, 512), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(y, value=t[2] + a.reshape((128, 512)) + b[:, 0:512])
        return y

    doc = trace(k, tensor[[512, 1024], lnl.float32])
    d = ops(doc, "dma_copy")
    # t[j + 1, i_p, i_f] = nl.load(...): the load writes block j + 1 of t directly.
    assert d[0]["dst"] == {"t": 1, "offset": 0, "ap": [[512, 128], [1, 512]], "block": [1]}
    assert d[0]["src"] == {"t": 0, "offset": 0, "ap": [[1024, 128], [1, 512]]}
    assert d[1]["dst"]["block"] == [2] and d[1]["src"]["offset"] == 128 * 1024
    # Two free grid axes on one tensor dim: [8 x 64] of stride 64 and 1 from row 128.
    assert d[2]["src"] == {"t": 0, "offset": 128 * 1024, "ap": [[1024, 128], [64, 8], [1, 64]]}
    # nl.ds on rows, 2*i_f on columns (stride 2).
    assert d[3]["src"] == {"t": 0, "offset": 256 * 1024, "ap": [[1024, 128], [2, 512]]}
    tt = ops(doc, "tensor_tensor")[0]
    assert tt["in0"] == {"t": 1, "offset": 0, "ap": [[512, 128], [1, 512]], "block": [2]}


def test_rectangular_masks_become_smaller_counts_and_offsets():
    @lnki.jit
    def k(x):
        n = x.shape[0]
        out = lnl.ndarray((n, 512), dtype=x.dtype, buffer=lnl.shared_hbm)
        i_p, i_f = lnl.mgrid[0:128, 0:512]
        for t in lnl.affine_range(2):
            rows = t * 128 + i_p
            tile = lnl.load(x[rows, i_f], mask=(rows < n) & (i_f >= 16) & (i_f < 272))
            lnl.store(out[rows, i_f], value=lnl.exp(tile, mask=(rows < n)), mask=(rows < n) & (100 > i_f))
        return out

    doc = trace(k, tensor[[200, 512], lnl.float32])
    d = ops(doc, "dma_copy")
    assert d[0]["src"] == {"t": 0, "offset": 16, "ap": [[512, 128], [1, 256]]}
    assert d[0]["dst"]["ap"] == [[512, 128], [1, 256]] and d[0]["dst"]["offset"] == 16
    # Second row tile: 200 - 128 = 72 rows remain.
    assert d[2]["src"] == {"t": 0, "offset": 128 * 512 + 16, "ap": [[512, 72], [1, 256]]}
    act = ops(doc, "activation")
    assert [a["src"]["ap"] for a in act] == [[[512, 128], [1, 512]], [[512, 72], [1, 512]]]
    assert d[3]["dst"] == {"t": 1, "offset": 128 * 512, "ap": [[512, 72], [1, 100]]}


def test_a_mask_that_keeps_nothing_drops_the_instruction():
    @lnki.jit
    def k(x):
        i_p = lnl.arange(128)[:, None]
        a = lnl.load(x)
        b = lnl.exp(a, mask=(i_p < 0))
        c = lnl.exp(a, mask=False)
        return None

    doc = trace(k, tensor[[128, 64], lnl.float32])
    assert [o["op"] for o in doc["ops"]] == ["dma_copy"]


def test_loops_mark_their_iterations_and_close_on_break():
    @lnki.jit
    def k(x):
        for i in lnl.sequential_range(1, 7, 2):
            for j in lnl.static_range(2):
                lnl.load(x)
            if i == 3:
                break
        for _ in lnl.affine_range(0):
            lnl.load(x)

    doc = trace(k, tensor[[4, 4], lnl.float32])
    marks = [(o["op"], o.get("kind"), o.get("trips", o.get("index"))) for o in doc["ops"] if o["op"] != "dma_copy"]
    assert marks == [
        ("loop_begin", "sequential", 3), ("iteration", None, 0),
        ("loop_begin", "static", 2), ("iteration", None, 0), ("iteration", None, 1), ("loop_end", None, None),
        ("iteration", None, 1),
        ("loop_begin", "static", 2), ("iteration", None, 0), ("iteration", None, 1), ("loop_end", None, None),
        ("loop_end", None, None),
        ("loop_begin", "affine", 0), ("loop_end", None, None),
    ]


def helper_alloc():
    return lnl.ndarray((128, 64), dtype=lnl.float32, buffer=lnl.sbuf)


def test_sites_are_the_allocation_call_chain_and_locations_the_kernel_lines():
    @lnki.jit
    def k(x):
        for i in lnl.affine_range(3):
            t = helper_alloc()
            t[...] = lnl.load(x)
            u = helper_alloc()
            u[...] = lnl.exp(t)
        return None

    doc = trace(k, tensor[[128, 64], lnl.float32])
    sb = [t for t in doc["tensors"] if t["buffer"] == "sbuf"]
    assert len(sb) == 6
    # Same call chain in every iteration: one site per helper_alloc() line of the kernel.
    assert [t["site"] for t in sb] == [1, 2, 1, 2, 1, 2]
    # A tensor's loc is the innermost kernel-side line (the allocation inside the helper).
    assert {tuple(t["loc"]) for t in sb} == {(0, line_of(helper_alloc, "lnl.ndarray"))}
    assert ops(doc, "activation")[0]["loc"] == [0, line_of(k, "lnl.exp(t)")]


def test_dtype_promotion_and_weak_scalars():
    got = {}

    @lnki.jit
    def k(a, b, c):
        ta, tb, tc = lnl.load(a), lnl.load(b), lnl.load(c)
        got["bf16+fp32"] = (ta + tb).dtype
        got["fp16+bf16"] = (tc + ta).dtype
        got["fp16*2.0"] = (tc * 2.0).dtype
        got["fp16*np.float16"] = (tc * np.float16(2)).dtype
        got["explicit"] = lnl.add(tc, ta, dtype=lnl.bfloat16).dtype
        got["less"] = (ta < 1.0).dtype

    trace(k, tensor[[8, 8], lnl.bfloat16], tensor[[8, 8], lnl.float32], tensor[[8, 8], lnl.float16])
    assert got["bf16+fp32"] == np.float32
    assert got["fp16+bf16"] == np.float32
    assert got["fp16*2.0"] == np.float32
    assert got["fp16*np.float16"] == np.float16
    assert got["explicit"] == lnl.bfloat16
    assert got["less"] == np.uint8


def test_scalar_and_column_operands_become_tensor_scalar():
    @lnki.jit
    def k(x):
        t = lnl.load(x)
        col = lnl.max(t, axis=[1], keepdims=True)
        d = t - col
        e = 1.0 - t
        return None

    doc = trace(k, tensor[[128, 64], lnl.float32])
    ts = ops(doc, "tensor_scalar")
    assert (ts[0]["op0"], ts[0]["reverse0"], ts[0]["s0"]["ap"]) == ("subtract", False, [[1, 128], [1, 1]])
    assert (ts[1]["op0"], ts[1]["reverse0"], ts[1]["s0"]) == ("subtract", True, 1.0)
    red = ops(doc, "tensor_reduce")[0]
    assert (red["alu"], red["axes"], red["keepdims"], red["dst"]["ap"]) == ("maximum", [1], True, [[1, 128], [1, 1]])


def test_numpy_functions_are_accepted_as_ops():
    @lnki.jit
    def k(x):
        t = lnl.load(x)
        a = lisa.activation(np.exp, t, scale=2.0, bias=-1.0)
        b = lisa.tensor_scalar(t, np.subtract, 1.5, op1=np.multiply, operand1=3.0)
        c = lisa.tensor_reduce(np.add, t, axis=1)
        d = lisa.tensor_tensor(t, a, np.maximum)
        return None

    doc = trace(k, tensor[[128, 64], lnl.float32])
    act, ts, red, tt = (ops(doc, n)[0] for n in ("activation", "tensor_scalar", "tensor_reduce", "tensor_tensor"))
    assert (act["func"], act["scale"], act["bias"], act["reduce"]) == ("exp", 2.0, -1.0, None)
    assert (ts["op0"], ts["s0"], ts["op1"], ts["s1"]) == ("subtract", 1.5, "multiply", 3.0)
    assert (red["alu"], red["axes"], red["dst"]["ap"]) == ("add", [1], [[1, 128], [1, 1]])
    assert tt["alu"] == "maximum"


def test_affine_select_and_iota_patterns():
    @lnki.jit
    def k(x):
        t = lnl.load(x)
        ix, iy = lnl.mgrid[0:128, 0:256]
        lisa.affine_select(pred=(5 + ix - iy >= 0), on_true_tile=t, on_false_value=lnl.fp32.min)
        lisa.iota(lnl.arange(256)[None, :] * 2 + lnl.arange(128)[:, None] * 3 + 7, dtype=lnl.int32)
        return None

    doc = trace(k, tensor[[128, 256], lnl.float32])
    sel = ops(doc, "affine_select")[0]
    assert (sel["pattern"], sel["channel_multiplier"], sel["offset"], sel["cmp"]) == ([[-1, 256]], 1, 5, "greater_equal")
    assert sel["value"] == float(np.finfo(np.float32).min)
    io = ops(doc, "iota")[0]
    assert (io["pattern"], io["channel_multiplier"], io["offset"]) == ([[2, 256]], 3, 7)


def test_legacy_mod_alloc_places_every_block():
    @lnki.jit
    def k(x):
        t = lnl.ndarray((4, lnl.par_dim(128), 512), dtype=lnl.bfloat16, buffer=ncc.sbuf.mod_alloc(base_addr=1024,
                                                                                                   num_free_tiles=(2,)))
        p = lnl.ndarray((3, lnl.par_dim(128), 512), dtype=lnl.float32, buffer=ncc.psum.mod_alloc(base_bank=1,
                                                                                                 num_bank_tiles=(2,)))
        for i in lnl.affine_range(4):
            t[i] = lnl.load(x)
        for i in lnl.affine_range(3):
            p[i] = lnl.copy(t[i])
        return None

    doc = trace(k, tensor[[128, 512], lnl.bfloat16])
    t, p = doc["tensors"][1], doc["tensors"][2]
    assert t["address"] == {"blocks": [[0, 1024], [0, 2048], [0, 1024], [0, 2048]]}
    assert p["address"] == {"blocks": [[0, 2048], [0, 4096], [0, 2048]]}


def test_an_address_computed_in_a_loop_body_is_the_first_iterations():
    """NKI traces an affine_range body once, so `addr += size` there runs once: every
    iteration's tensor of a site sits where the first iteration's does. A Python loop and a
    static_range loop in the body are unrolled, as in NKI: their tensors take addresses of
    their own."""
    @lnki.jit
    def k(x):
        state = {"addr": 0}

        def take(nbytes):
            a = state["addr"]
            state["addr"] += nbytes
            return ncc.sbuf.mod_alloc(base_addr=a)

        out = lnl.ndarray((4, 128, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
        for i in lnl.affine_range(4):
            tiles = []
            for j in range(2):
                t = lnl.ndarray((lnl.par_dim(128), 64), dtype=lnl.float32, buffer=take(256))
                t[...] = lnl.load(x)
                tiles.append(t)
            for s in lnl.static_range(2):
                u = lnl.ndarray((lnl.par_dim(128), 64), dtype=lnl.float32, buffer=take(256))
                u[...] = lnl.add(tiles[s], float(s))
                tiles[s] = u
            lnl.store(out[i], lnl.add(tiles[0], tiles[1]))
        return out

    doc = trace(k, tensor[[128, 64], lnl.float32])
    placed = [t["address"]["byte"] for t in doc["tensors"] if t.get("address")]
    # Four tensors per iteration at 0, 256 (the Python loop) and 512, 768 (the static loop),
    # in every iteration; unplaced, the second iteration's would start at 1024.
    assert placed == [0, 256, 512, 768] * 4
    x = np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_array_equal(k(x), np.broadcast_to(x + (x + np.float32(1)), (4, 128, 64)))


def test_current_address_argument():
    @cnki.jit
    def k(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32, buffer=cnl.psum, address=(0, 3 * 2048))
        cisa.memset(dst=t, value=float("nan"))
        u = cnl.ndarray((128, 64), dtype=cnl.float32, buffer=cnl.sbuf, address=(64, 4096))
        cisa.memset(dst=u[0:64, :], value=float("-inf"))

    doc = trace(k, tensor[[1, 1], cnl.float32])
    assert [t["address"] for t in doc["tensors"][1:]] == [{"partition": 0, "byte": 6144}, {"partition": 64, "byte": 4096}]
    assert [o["value"] for o in ops(doc, "memset")] == ["nan", "-inf"]


def test_outputs_are_the_returned_tensors_then_written_arguments():
    @lnki.jit
    def k(x, y):
        a = lnl.ndarray((128, 8), dtype=lnl.float32, buffer=lnl.hbm)
        b = lnl.ndarray((128, 8), dtype=lnl.float32, buffer=lnl.shared_hbm)
        t = lnl.load(x)
        lnl.store(a, value=t)
        lnl.store(b, value=t)
        lnl.store(y, value=t)
        return b, a

    doc = trace(k, tensor[[128, 8], lnl.float32], tensor[[128, 8], lnl.float32])
    by_id = {i: t["name"] for i, t in enumerate(doc["tensors"])}
    assert [by_id[i] for i in doc["outputs"]] == ["b", "a", "y"]
    # A returned private HBM tensor is an output, so it is shared HBM in the trace.
    assert [t["buffer"] for t in doc["tensors"] if t["name"] in ("a", "b")] == ["shared_hbm", "shared_hbm"]


def test_a_legacy_spmd_grid_runs_its_programs_in_turn_on_shared_outputs():
    @lnki.jit
    def add(a, b):
        out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        i, j = lnl.program_id(0), lnl.program_id(1)
        rows, cols = lnl.ds(i * 128, 128), lnl.ds(j * 64, 64)
        lnl.store(out[rows, cols], value=lnl.load(a[rows, cols]) + lnl.load(b[rows, cols]))
        assert (lnl.num_programs(0), lnl.num_programs((0, 1)), lnl.program_ndim()) == (2, 6, 2)
        return out

    doc = trace(add[2, 3], tensor[[256, 192], lnl.float32], tensor[[256, 192], lnl.float32])
    assert [t["name"] for t in doc["tensors"] if t["buffer"] == "shared_hbm"] == ["out"]
    stores = [o["dst"] for o in ops(doc, "dma_copy") if o["dst"]["t"] == 2]
    assert [d["offset"] for d in stores] == [i * 128 * 192 + j * 64 for i in range(2) for j in range(3)]
    marks = [(o["op"], o.get("trips")) for o in doc["ops"] if o["op"] in ("loop_begin", "loop_end")]
    assert marks[:2] == [("loop_begin", 2), ("loop_begin", 3)] and marks[-1] == ("loop_end", None)
    assert doc["outputs"] == [2]


def test_target_follows_the_environment(monkeypatch):
    seen = []

    @cnki.jit
    def k(x):
        seen.append((cisa.get_nc_version(), cnl.tile_size.pmax, cnl.tile_size.sbuf_fmax_bytes))

    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "gen2")
    assert trace(k, tensor[[1, 1], "float32"])["target"] == "trn1"
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE")
    assert trace(k, tensor[[1, 1], "float32"])["target"] == "trn2"
    assert trace(k, tensor[[1, 1], "float32"], target="trn3")["target"] == "trn3"
    assert seen == [(cisa.nc_version.gen2, 128, 192 * 1024), (cisa.nc_version.gen3, 128, 224 * 1024),
                    (cisa.nc_version.gen4, 128, 256 * 1024)]


def test_a_kernels_platform_target_is_its_target(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")

    @lnki.jit(mode="simulation", platform_target="trn1")
    def k(x):
        pass

    assert trace(k, tensor[[1, 1], "float32"])["target"] == "trn1"
    assert trace(k, tensor[[1, 1], "float32"], target="trn3")["target"] == "trn3"


def test_kernel_arguments_that_are_not_tensors_pass_through():
    @cnki.jit
    def k(x, scale, flags=(1, 2)):
        t = cnl.ndarray(x.shape, dtype=x.dtype)
        cisa.dma_copy(dst=t, src=x)
        cisa.tensor_scalar(dst=t, data=t, op0=cnl.multiply, operand0=scale * len(flags))

    doc = trace(k, np.zeros((4, 4), np.float32), 0.5)
    assert ops(doc, "tensor_scalar")[0]["s0"] == 1.0
    assert [t["name"] for t in doc["tensors"] if t["buffer"] == "input"] == ["x"]


def test_the_trace_is_strict_json_with_constants_carried():
    @lnki.jit
    def k(x):
        ident = lnl.shared_identity_matrix(4, dtype=lnl.float32)
        t = lnl.load(ident)
        return None

    text = cnki.trace(k, tensor[[1, 1], lnl.float32])
    doc = json.loads(text)
    const = doc["constants"][0]
    assert doc["tensors"][const["t"]]["buffer"] == "input"
    assert const["values"] == np.identity(4).reshape(-1).tolist()


def test_the_tracer_imports_without_the_native_module_or_ml_dtypes(tmp_path):
    # A bare interpreter with ml_dtypes unimportable: the tracer (both APIs) still traces.
    script = tmp_path / "bare.py"
    script.write_text(
        "import sys\n"
        "sys.modules['ml_dtypes'] = None\n"
        f"sys.path.insert(0, {str(os.path.dirname(os.path.dirname(cnki.__file__)))!r})\n"
        "import ntile.nki as nki\n"
        "nki.install()\n"
        "from neuronxcc import nki as legacy\n"
        "import neuronxcc.nki.language as nl\n"
        "@legacy.jit\n"
        "def k(x):\n"
        "    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
        "    nl.store(out, value=nl.exp(nl.load(x)))\n"
        "    return out\n"
        "import nki.typing as nt\n"
        "text = nki.trace(k, nt.tensor[[128, 64], nl.bfloat16])\n"
        "assert 'ntile._native' not in sys.modules, 'the tracer imported the native module'\n"
        "print(len(text) > 0, nl.bfloat16 == 'bfloat16')\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


def test_an_identity_matmul_with_is_transpose_is_a_transpose():
    @lnki.jit
    def k(x):
        ident = lnl.load(lnl.shared_identity_matrix(128, dtype=lnl.bfloat16))
        t = lnl.load(x)
        res = lnl.ndarray((128, 128), dtype=lnl.bfloat16, buffer=lnl.psum)
        res[...] = lisa.nc_matmul(t, ident, is_transpose=True)
        out = lnl.ndarray((128, 128), dtype=lnl.bfloat16, buffer=lnl.shared_hbm)
        lnl.store(out, value=lnl.copy(res))
        return out

    doc = trace(k, tensor[[128, 128], lnl.bfloat16])
    assert [o["op"] for o in ops(doc, "matmul", "transpose")] == ["transpose"]
    dst = ops(doc, "transpose")[0]["dst"]
    assert doc["tensors"][dst["t"]]["dtype"] == "bf16" and doc["tensors"][dst["t"]]["buffer"] == "psum"


def test_an_fp8_transpose_comes_out_of_the_pe_in_fp32():
    @lnki.jit
    def k(x):
        t = lnl.load(x)
        out = lnl.ndarray((128, 128), dtype=lnl.float8_e4m3, buffer=lnl.shared_hbm)
        lnl.store(out, value=lnl.copy(lisa.nc_transpose(t), dtype=lnl.float8_e4m3))
        return out

    doc = trace(k, tensor[[128, 128], lnl.float8_e4m3])
    dst = ops(doc, "transpose")[0]["dst"]
    assert doc["tensors"][dst["t"]]["dtype"] == "fp32"


def test_api_spellings_kernels_use_are_accepted():
    @lnki.jit
    def k(x, col, norm_dtype=lnl.float32):
        # reshape(shape=...), a dtype class as a default argument, a bf16 [P, 1] column in an
        # nl.* operation (cast to fp32 first), and perf_mode double_row_gen3.
        flat = x.reshape(shape=(128, 64))
        t = lnl.load(flat)
        c = lnl.load(col)
        y = lnl.multiply(t, c, dtype=norm_dtype)
        out = lnl.ndarray((128, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(out, value=y)
        return out

    doc = trace(k, tensor[[128, 8, 8], lnl.float32], tensor[[128, 1], lnl.bfloat16])
    ts = ops(doc, "tensor_scalar")[0]
    assert doc["tensors"][ts["s0"]["t"]]["dtype"] == "fp32"
    assert [o["op"] for o in ops(doc)[:3]] == ["dma_copy", "dma_copy", "tensor_copy"]
    from ntile._nki import ops as tops
    assert tops.perf_mode_name("double_row_gen3") == "double_row"
    with pytest.raises(Exception, match="perf_mode 'fast'"):
        tops.perf_mode_name("fast")


def test_a_psum_allocator_called_with_its_parameter_names():
    import functools

    def banks(bank_map, idx, pdim_size, fdim_size):
        return (bank_map[idx], 0, 0)

    @lnki.jit
    def k(a, b):
        res = lnl.ndarray((2, lnl.par_dim(128), 512), dtype=lnl.float32,
                          buffer=ncc.psum.alloc(functools.partial(banks, bank_map={(0,): 3, (1,): 6})))
        for i in lnl.affine_range(2):
            res[i] = lisa.nc_matmul(lnl.load(a), lnl.load(b))
        out = lnl.ndarray((128, 512), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(out, value=lnl.copy(res[1]))
        return out

    doc = trace(k, tensor[[128, 128], lnl.bfloat16], tensor[[128, 512], lnl.bfloat16])
    res = [t for t in doc["tensors"] if t["buffer"] == "psum"][0]
    assert res["address"] == {"blocks": [[0, 3 * 2048], [0, 6 * 2048]]}


def test_an_ml_dtypes_scalar_is_a_fill_value_and_a_baremetal_kernel_takes_a_grid():
    @lnki.jit
    def k(x):
        t = lnl.full((128, 4), dtype=lnl.bfloat16, buffer=lnl.sbuf, fill_value=lnl.finfo(lnl.bfloat16).min)
        out = lnl.ndarray((128, 4), dtype=lnl.bfloat16, buffer=lnl.shared_hbm)
        lnl.store(out, value=t)
        return out

    lowest = float(lnl.finfo(lnl.bfloat16).min)
    assert lowest < -3e38
    assert ops(trace(k, tensor[[1, 1], lnl.float32]), "memset")[0]["value"] == lowest

    def halves(a):
        out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        rows = lnl.ds(lnl.program_id(0) * 128, 128)
        lnl.store(out[rows, :], value=lnl.multiply(lnl.load(a[rows, :]), 2.0))
        return out

    bare = lnki.baremetal(halves)
    a = np.arange(256 * 8, dtype=np.float32).reshape(256, 8)
    np.testing.assert_array_equal(bare[2](a), 2 * a)


def test_a_scan_refuses_an_initial_column_that_is_not_fp32():
    @cnki.jit
    def k(a, h0):
        out = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.shared_hbm)
        t = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.sbuf)
        c = cnl.ndarray(h0.shape, dtype=h0.dtype, buffer=cnl.sbuf)
        cisa.dma_copy(dst=t, src=a)
        cisa.dma_copy(dst=c, src=h0)
        h = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.sbuf)
        cisa.tensor_tensor_scan(dst=h, data0=t, data1=t, initial=c, op0=cnl.multiply, op1=cnl.add)
        cisa.dma_copy(dst=out, src=h)
        return out

    a = np.ones((128, 16), np.float32)
    with pytest.raises(ValueError, match="tensor_tensor_scan initial is a bf16 column; it must be fp32"):
        cnki.profile(k, a, np.zeros((128, 1), ml_dtypes.bfloat16))

    @cnki.jit
    def swapped(a):
        t = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.sbuf)
        cisa.dma_copy(dst=t, src=a)
        h = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.sbuf)
        cisa.tensor_tensor_scan(dst=h, data0=t, data1=t, initial=0.0, op0=cnl.subtract, op1=cnl.add, reverse0=True)

    with pytest.raises(Exception, match="tensor_tensor_scan with reverse0=True for `subtract`"):
        trace(swapped, a)
