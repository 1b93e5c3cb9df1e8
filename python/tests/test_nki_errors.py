"""Errors the NKI tracer raises, each at the kernel's own line (``file.py:LINE:`` first): control
flow on a tile, data-dependent shapes and bounds, masks that are not rectangles, unsupported
APIs (``NotImplementedError`` naming them), bad indices, views spanning blocks, bad arguments."""

import inspect
import os

import numpy as np
import pytest

import ntile.nki as cnki
import ntile.nki.isa as cisa
import ntile.nki.language as cnl
import ntile.neuronxcc.nki as lnki
import ntile.neuronxcc.nki.isa as lisa
import ntile.neuronxcc.nki.language as lnl
from ntile.nki.typing import tensor

# Kernel files are shown relative to the working directory when inside it.
HERE = os.path.relpath(os.path.abspath(__file__)) if os.path.abspath(__file__).startswith(os.getcwd() + os.sep) \
    else os.path.abspath(__file__)
X = tensor[[128, 64], lnl.float32]


def line_of(fn, text):
    lines, start = inspect.getsourcelines(getattr(fn, "func", fn))
    hits = [start + i for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, f"{text!r} is on {len(hits)} lines"
    return hits[0]


def raises_at(exc, kernel, marker, match, *args):
    """Tracing ``kernel(*args)`` raises ``exc`` at the kernel's line holding ``marker``."""
    with pytest.raises(exc) as info:
        cnki.trace(kernel, *(args or (X,)))
    msg = str(info.value)
    assert msg.startswith(f"{HERE}:{line_of(kernel, marker)}: "), msg
    assert match in msg, msg
    return info.value


def test_if_on_a_tile_is_control_flow_on_a_tile_value():
    @lnki.jit
    def k(x):
        t = lnl.load(x)
        if t:
            pass

    e = raises_at(TypeError, k, "if t:", "control flow on a tile value")
    assert (e.file, e.line) == (HERE, line_of(k, "if t:"))


def test_while_and_and_on_tiles_are_refused_too():
    @lnki.jit
    def k(x):
        t = lnl.load(x)
        while t > 0:
            break

    raises_at(TypeError, k, "while t > 0", "control flow on a tile value")

    @cnki.jit
    def c(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32)
        ok = t and True

    raises_at(TypeError, c, "ok = t and True", "control flow on a tile value")


def test_a_tile_as_a_shape_is_a_data_dependent_shape():
    @lnki.jit
    def k(x):
        t = lnl.load(x)
        u = lnl.ndarray((t, 64), dtype=lnl.float32, buffer=lnl.sbuf)

    raises_at(TypeError, k, "u = lnl.ndarray", "data-dependent shape")


def test_a_tile_as_a_loop_bound_or_slice_bound_is_data_dependent():
    @lnki.jit
    def k(x):
        t = lnl.load(x)
        for i in lnl.affine_range(t):
            pass

    raises_at(TypeError, k, "lnl.affine_range(t)", "data-dependent loop bound")

    @lnki.jit
    def r(x):
        t = lnl.load(x)
        for i in range(t):
            pass

    raises_at(TypeError, r, "range(t)", "data-dependent")

    @cnki.jit
    def s(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32)
        u = x[0:t, :]

    raises_at(TypeError, s, "u = x[0:t, :]", "data-dependent slice stop")


def test_a_mask_over_two_indices_is_not_a_rectangle():
    @lnki.jit
    def k(x):
        i_p, i_f = lnl.mgrid[0:128, 0:64]
        t = lnl.load(x[i_p, i_f], mask=(i_p + i_f < 100))

    raises_at(ValueError, k, "mask=(i_p + i_f < 100)", "the mask is not a rectangle")


def test_or_and_not_equal_masks_are_not_rectangles():
    @lnki.jit
    def k(x):
        i_p, i_f = lnl.mgrid[0:128, 0:64]
        t = lnl.load(x[i_p, i_f], mask=(i_p < 3) | (i_f < 5))

    raises_at(ValueError, k, "mask=(i_p < 3) | (i_f < 5)", "the mask is not a rectangle")

    @lnki.jit
    def a(x):
        i_p = lnl.arange(128)[:, None]
        t = lnl.load(x, mask=(i_p < 3) and (i_p > 1))

    raises_at(TypeError, a, "mask=(i_p < 3) and", "combine masks with '&'")


@pytest.mark.parametrize("api", ["legacy", "current"])
def test_an_unsupported_api_is_a_not_implemented_error_naming_it(api):
    if api == "legacy":
        @lnki.jit
        def k(x):
            t = lnl.load(x)
            top = lisa.sequence_bounds(segment_ids=t)

        e = raises_at(NotImplementedError, k, "top = lisa.sequence_bounds",
                      "neuronxcc.nki.isa.sequence_bounds is not supported by ntile")
    else:
        @cnki.jit
        def k(x):
            t = cnl.ndarray((128, 64), dtype=cnl.float32)
            cnl.rms_norm(t, t, 1, 1e-6)

        e = raises_at(NotImplementedError, k, "cnl.rms_norm", "nki.language.rms_norm is not supported by ntile")
    assert isinstance(e, cnki.NkiError)


def test_unsupported_forms_of_supported_calls_are_refused_by_name():
    @lnki.jit
    def k(x):
        t = lnl.load(x)
        u = lnl.prelu(t)

    raises_at(NotImplementedError, k, "lnl.prelu(t)", "nl.prelu is not supported by ntile")

    @lnki.jit
    def a(x):
        t = lnl.load(x)
        s = lnl.ndarray((128, 1), dtype=lnl.float32, buffer=lnl.sbuf)
        u = lisa.activation(lnl.exp, t, reduce_op=lnl.add, reduce_res=s, reduce_cmd=lisa.reduce_cmd.reduce)

    raises_at(NotImplementedError, a, "u = lisa.activation", "reduce_cmd=reduce")

    @cnki.jit
    def c(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32)
        cisa.activation(dst=t, op=cnl.prelu, data=t)

    raises_at(NotImplementedError, c, "cisa.activation", "the activation function 'prelu'")


def test_indexing_with_a_tile_is_dynamic_indexing():
    @lnki.jit
    def k(x):
        idx = lnl.load(x)
        t = lnl.load(x[:, idx])

    # A tile picks rows of an HBM tensor (a gather), after any leading integers; behind a
    # slice it is refused.
    raises_at(NotImplementedError, k, "t = lnl.load(x[:, idx])", "indexing a tensor with a tile")

    @lnki.jit
    def g(x):
        idx = lnl.load(x)
        t = lnl.load(x[0, idx])

    raises_at(NotImplementedError, g, "t = lnl.load(x[0, idx])", "a tile of indices shaped [128, 64]")


def test_launch_grids_ntile_cannot_place_are_refused():
    @cnki.jit
    def k(x):
        pass

    with pytest.raises(NotImplementedError, match=r"launching k on 4 NeuronCores: a logical NeuronCore of trn2 has 2"):
        k[4](np.zeros((4, 4), np.float32))

    @cnki.jit(platform_target="trn1")
    def k1(x):
        pass

    with pytest.raises(NotImplementedError, match="trn1 runs one NeuronCore per kernel"):
        k1[2](np.zeros((4, 4), np.float32))
    assert k[1] is k
    with pytest.raises(NotImplementedError, match=r"the current API launches kernel\[n\] on n NeuronCores"):
        k[2, 2]

    @lnki.jit
    def g(x):
        pass

    with pytest.raises(ValueError, match="'nc' is not a positive integer, nl.nc"):
        g[2, "nc"]
    with pytest.raises(NotImplementedError, match="places two axes on NeuronCores"):
        g[lnl.nc(2), lnl.nc(2)]
    with pytest.raises(NotImplementedError, match="two nl.nc dimensions"):
        lnl.spmd_dim(lnl.nc(2), lnl.nc(2))
    with pytest.raises(ValueError, match="the number of NeuronCores is a positive integer"):
        lnl.nc(0)


def test_indices_outside_the_tensor():
    @cnki.jit
    def k(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32)
        u = t[:, 64]

    raises_at(IndexError, k, "u = t[:, 64]", "index 64 is outside a dimension of size 64")

    @lnki.jit
    def d(x):
        u = lnl.load(x[lnl.ds(100, 64), :])

    raises_at(IndexError, d, "lnl.ds(100, 64)", "nl.ds(100, 64) is outside a dimension of size 128")

    @cnki.jit
    def p(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32)
        u = t[0:128:2, :]

    raises_at(ValueError, p, "t[0:128:2, :]", "partition dimension can only be sliced with step 1")


def test_a_view_spanning_blocks_is_refused():
    @lnki.jit
    def k(x):
        t = lnl.ndarray((4, lnl.par_dim(128), 64), dtype=lnl.float32, buffer=lnl.sbuf)
        u = lnl.exp(t)

    raises_at(ValueError, k, "u = lnl.exp(t)", "spans 4 of its blocks")


def test_a_mask_on_affine_select_must_be_one_comparison():
    @lnki.jit
    def k(x):
        t = lnl.load(x)
        i_p, i_f = lnl.mgrid[0:128, 0:64]
        u = lisa.affine_select(pred=(i_p < 4) & (i_f < 3), on_true_tile=t, on_false_value=0.0)

    raises_at(ValueError, k, "u = lisa.affine_select", "takes one comparison")


def test_a_returned_on_chip_tile_is_stored_out_but_not_from_a_grid():
    @lnki.jit
    def k(x):
        t = lnl.load(x)
        return t, lnl.multiply(t, 2.0)

    # As NKI's simulation returns a tile's values: each is stored into an HBM tensor of its own.
    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    t, u = k(x)
    np.testing.assert_array_equal(t, x)
    np.testing.assert_array_equal(u, 2 * x)
    with pytest.raises(ValueError) as info:
        k[2](x)
    assert str(info.value).startswith(f"{HERE}:{line_of(k, 't = lnl.load(x)')}: ")
    assert "returns an on-chip tile" in str(info.value)


def test_bad_arguments():
    @cnki.jit
    def k(x):
        pass

    with pytest.raises(ValueError, match="argument 'x' holds float64"):
        cnki.trace(k, np.zeros((4, 4)))
    with pytest.raises(ValueError, match="needs a dtype"):
        cnki.trace(k, tensor[4, 4])
    with pytest.raises(ValueError, match="unknown target 'trn9'"):
        cnki.trace(k, X, target="trn9")
    with pytest.raises(TypeError, match="k: missing a required argument"):
        cnki.trace(k)


def test_an_nki_call_outside_a_kernel():
    with pytest.raises(cnki.NkiError, match="outside a kernel being traced"):
        cnl.ndarray((128, 64), dtype=cnl.float32)


def test_loop_reduce_takes_a_commutative_operator_and_is_assigned_into_its_accumulator():
    @lnki.jit
    def k(x):
        acc = lnl.zeros((128, 64), dtype=lnl.float32)
        acc[...] = lnl.loop_reduce(lnl.load(x), op=np.subtract, loop_indices=[0])

    raises_at(ValueError, k, "np.subtract", "associative, commutative operator, not `subtract`")

    @lnki.jit
    def k2(x):
        out = lnl.ndarray((128, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
        r = lnl.loop_reduce(lnl.load(x), op=np.add, loop_indices=[0])
        lnl.store(out, value=r)

    raises_at(TypeError, k2, "value=r", "must be assigned into the tile that accumulates it")


def test_a_mask_keeping_part_of_a_transpose_is_refused_by_name():
    @lnki.jit
    def k(x):
        i, j = lnl.mgrid[0:128, 0:64]
        lisa.nc_transpose(lnl.load(x), mask=(i < 64))

    raises_at(NotImplementedError, k, "nc_transpose", "nisa.nc_transpose with a mask that keeps part of the tile")


def test_a_predicated_copy_copies_bit_for_bit_from_an_integer_predicate():
    @cnki.jit
    def k(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.dma_copy(dst=t, src=x)
        h = cnl.ndarray((128, 64), dtype=cnl.bfloat16, buffer=cnl.sbuf)
        m = cnl.ndarray((128, 64), dtype=cnl.uint8, buffer=cnl.sbuf)
        cisa.memset(dst=m, value=1)
        cisa.tensor_copy_predicated(dst=h, src=t, predicate=m)

    with pytest.raises(ValueError, match="copies bit for bit: its source is fp32 and its destination bf16"):
        cnki.simulate(k)(np.zeros((128, 64), np.float32))


def test_a_stream_shuffle_mask_is_32_partitions_of_one_quadrant():
    @cnki.jit
    def short(x):
        t = cnl.ndarray((32, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.nc_stream_shuffle(dst=t, src=t, shuffle_mask=[0] * 31)

    raises_at(ValueError, short, "shuffle_mask=[0] * 31", "shuffle_mask must be 32 source partitions 0..31")

    @cnki.jit
    def far(x):
        t = cnl.ndarray((32, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.nc_stream_shuffle(dst=t, src=t, shuffle_mask=[40] * 32)

    raises_at(ValueError, far, "shuffle_mask=[40] * 32", "(or 255, to keep a partition), got [40, 40")


def test_a_stream_shuffle_reads_only_partitions_its_source_has():
    @cnki.jit
    def k(x):
        out = cnl.ndarray((32, 64), dtype=cnl.float32, buffer=cnl.shared_hbm)
        src = cnl.ndarray((4, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.dma_copy(dst=src, src=x[0:4, :])
        dst = cnl.ndarray((32, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.nc_stream_shuffle(dst=dst, src=src, shuffle_mask=list(range(32)))
        cisa.dma_copy(dst=out, src=dst)
        return out

    with pytest.raises(ValueError, match="stream_shuffle reads source partition 31 of a 4-partition source"):
        cnki.simulate(k)(np.zeros((128, 64), np.float32))

    @cnki.jit
    def k2(x):
        a = cnl.ndarray((32, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        b = cnl.ndarray((32, 64), dtype=cnl.bfloat16, buffer=cnl.sbuf)
        cisa.nc_stream_shuffle(dst=b, src=a, shuffle_mask=[0] * 32)

    with pytest.raises(ValueError, match="stream_shuffle copies bit for bit: its source is fp32 and its destination bf16"):
        cnki.simulate(k2)(np.zeros((128, 64), np.float32))


def test_a_cumulative_register_kept_from_an_earlier_instruction_is_refused_by_name():
    @cnki.jit
    def k(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.tensor_scalar_cumulative(dst=t, src=t, op0=cnl.add, op1=cnl.add, imm0=0.0,
                                      reduce_cmd=cisa.reduce_cmd.reduce)

    raises_at(NotImplementedError, k, "cisa.tensor_scalar_cumulative",
              "reduce_cmd=reduce after anything but a tensor_scalar_cumulative whose fp32 result is untouched")

    @cnki.jit
    def k2(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.tensor_scalar_cumulative(dst=t, src=t, op0=cnl.add, op1=cnl.divide, imm0=0.0)

    raises_at(NotImplementedError, k2, "cisa.tensor_scalar_cumulative", "op1=divide")

    @cnki.jit
    def k3(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.tensor_scalar_cumulative(dst=t, src=t, op0=cnl.add, op1=cnl.add, imm0=0.0,
                                      reduce_cmd=cisa.reduce_cmd.load_reduce)

    raises_at(ValueError, k3, "cisa.tensor_scalar_cumulative", "load_reduce needs imm1")


def test_a_cumulative_column_is_one_value_per_partition():
    @cnki.jit
    def k2(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.dma_copy(dst=t, src=x)
        cisa.tensor_scalar_cumulative(dst=t, src=t, op0=cnl.add, op1=cnl.add, imm0=1.0, imm1=t[:, 0:2],
                                      reduce_cmd=cisa.reduce_cmd.load_reduce)

    with pytest.raises(ValueError, match=r"initial \[128, 2\] is not a \[128, 1\] column"):
        cnki.simulate(k2)(np.zeros((128, 64), np.float32))


def test_rows_named_by_a_tile_take_int32_indices_one_per_partition():
    @lnki.jit
    def k(x, idx):
        it = lnl.load(idx)
        lisa.dma_copy(dst=x[it, :], src=lnl.load(x[0:4, :]), dst_rmw_op=np.multiply)

    raises_at(NotImplementedError, k, "lisa.dma_copy(dst=x[it, :]", "a dst_rmw_op other than add",
              X, tensor[[4, 1], lnl.int32])

    @lnki.jit
    def k2(x, idx):
        it = lnl.load(idx)
        t = lnl.load(x[it, :])

    raises_at(TypeError, k2, "t = lnl.load(x[it, :])", "the indices of an indirect access are int32, not fp32",
              X, tensor[[4, 1], lnl.float32])

    @lnki.jit
    def k3(x, idx):
        it = lnl.load(idx)
        t = lnl.load(x[it, :])

    raises_at(NotImplementedError, k3, "t = lnl.load(x[it, :])", "a tile of indices shaped [4, 2]",
              X, tensor[[4, 2], lnl.int32])


def test_a_gather_index_outside_the_table_stops_the_run():
    @lnki.jit
    def k(x, idx):
        out = lnl.ndarray((4, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
        it = lnl.load(idx)
        lnl.store(out, value=lnl.load(x[it, :]))
        return out

    with pytest.raises(ValueError, match="index entry 2 is 128, outside the 128 rows of the table"):
        k(np.zeros((128, 64), np.float32), np.array([[0], [1], [128], [2]], np.int32))


def test_the_new_instructions_refuse_what_they_cannot_do_by_name():
    @cnki.jit
    def divide_across(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.dma_copy(dst=t, src=x)
        r = cnl.ndarray((1, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.tensor_partition_reduce(dst=r, op=cnl.divide, data=t)

    with pytest.raises(ValueError, match="tensor_partition_reduce by `divide`"):
        cnki.simulate(divide_across)(np.zeros((128, 64), np.float32))

    @cnki.jit
    def two_rows(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.dma_copy(dst=t, src=x)
        r = cnl.ndarray((2, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.tensor_partition_reduce(dst=r, op=cnl.add, data=t)

    with pytest.raises(ValueError, match=r"is not one partition of src \[128, 64\]"):
        cnki.simulate(two_rows)(np.zeros((128, 64), np.float32))

    @cnki.jit
    def compare_first(x):
        t = cnl.ndarray((128, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.dma_copy(dst=t, src=x)
        cisa.tensor_scalar_cumulative(dst=t, src=t, op0=cnl.greater, op1=cnl.add, imm0=0.0)

    with pytest.raises(ValueError, match="op0 `greater` in tensor_scalar_cumulative"):
        cnki.simulate(compare_first)(np.zeros((128, 64), np.float32))

    @lnki.jit
    def into_psum(x, idx):
        it = lnl.load(idx)
        p = lnl.ndarray((4, 64), dtype=lnl.float32, buffer=lnl.psum)
        lisa.dma_copy(dst=p, src=x[it, :])

    raises_at(ValueError, into_psum, "lisa.dma_copy(dst=p", "a gather (rows named by a tile of indices) writes an SBUF tile",
              X, tensor[[4, 1], lnl.int32])

    @lnki.jit
    def wrong_rows(x, idx):
        it = lnl.load(idx)
        lnl.store(x[it, :], value=lnl.load(x[0:3, :]))

    raises_at(ValueError, wrong_rows, "lnl.store(x[it, :]", "a scatter of a tile of shape [3, 64] into [4, 64] rows",
              X, tensor[[4, 1], lnl.int32])
