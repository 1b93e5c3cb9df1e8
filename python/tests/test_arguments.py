"""Arguments validated as Python users expect: TypeError for a wrong type, ValueError naming
the argument for a bad value, no silent truncation, no flag ignored, the whole message."""

import math

import numpy as np
import pytest

import ntile


@pytest.mark.parametrize("bad", [1.5, 128.7, float("inf"), float("nan"), -1, 0])
def test_sizes_are_positive_integers_never_truncated(bad):
    with pytest.raises(ValueError, match=r"^m: expected a positive integer, got "):
        ntile.model(bad, 64, 64)


@pytest.mark.parametrize("bad", ["64", None, True, [64]])
def test_sizes_of_another_type_are_type_errors(bad):
    with pytest.raises(TypeError, match=r"^k: expected a positive integer"):
        ntile.model(64, bad, 64)


def test_numpy_integers_are_sizes():
    r = ntile.model(np.int64(128), np.uint16(128), 128, schedule="naive")
    assert (r.report["m"], r.report["k"]) == (128, 128)


def test_block_sizes_are_not_truncated():
    with pytest.raises(ValueError, match=r"^block m: expected a positive integer, got 128.7"):
        ntile.model(256, 256, 256, schedule="blocked-mn", block=(128.7, 512))
    with pytest.raises(ValueError, match=r"^block\['n'\]: expected a positive integer, got -512"):
        ntile.model(256, 256, 256, schedule="blocked-mn", block={"m": 128, "n": -512})
    with pytest.raises(TypeError, match=r"^block: expected"):
        ntile.model(256, 256, 256, schedule="blocked-mn", block="128")


def test_flags_must_be_a_sequence_of_words():
    with pytest.raises(TypeError, match=r"^flags: expected a sequence of strings such as \['--no-sim'\], got a str"):
        ntile.model(64, 64, 64, flags="--no-sim")
    with pytest.raises(TypeError, match=r"^flags: every word must be a string, got int"):
        ntile.model(64, 64, 64, flags=["--block-m", 128])


def test_flags_that_cannot_be_honoured_are_refused_by_name():
    with pytest.raises(ValueError, match=r"^flags: --emit prints the IR"):
        ntile.model(64, 64, 64, flags=["--emit", "bir"])
    # model() does not simulate: no random input is drawn, so a seed would be ignored.
    with pytest.raises(ValueError, match=r"^--seed cannot be used with --no-sim"):
        ntile.model(64, 64, 64, flags=["--seed", "3"])
    a = np.ones((4, 16), np.float32)
    b = np.ones((16, 8), np.float32)
    with pytest.raises(ValueError, match=r"^flags: --lhs/--rhs cannot be used with ntile.gemm\(a, b\)"):
        ntile.gemm(a, b, flags=["--lhs", "x.npy", "--rhs", "y.npy"])


def test_a_seed_is_honoured_when_the_model_simulates():
    one = ntile.model(64, 128, 64, simulate=True, flags=["--seed", "3"]).c
    two = ntile.model(64, 128, 64, simulate=True, flags=["--seed", "3"]).c
    other = ntile.model(64, 128, 64, simulate=True, flags=["--seed", "4"]).c
    assert np.array_equal(one.view(np.uint32), two.view(np.uint32))
    assert not np.array_equal(one.view(np.uint32), other.view(np.uint32))


def test_the_whole_clap_message_is_kept():
    with pytest.raises(ValueError) as e:
        ntile.cli("gemm", "--lhs", "a.npy")
    assert str(e.value) == "the following required arguments were not provided:\n  --rhs <B.npy>"


def test_run_arguments_are_type_checked(examples):
    a = np.ones((4, 16), np.float32)
    b = np.ones((16, 8), np.float32)
    path = examples / "gemm_4x16x8.pir"
    with pytest.raises(TypeError, match=r"^inputs: expected a mapping of tensor names to arrays, got list"):
        ntile.run(path, [a, b])
    with pytest.raises(TypeError, match=r"^inputs: expected a mapping.*got NoneType"):
        ntile.run(path, None)
    with pytest.raises(TypeError, match=r"^kernel: expected a path or the kernel's text, got int"):
        ntile.run(3, {})
    with pytest.raises(FileNotFoundError, match=r"typo.pir: no such file"):
        ntile.run("typo.pir", {})


def test_a_huge_broadcast_input_is_refused_before_it_is_copied(examples):
    # 4 TiB as a broadcast view of one element: refused by the memory estimate, not by a
    # MemoryError (or the OOM killer) while it is made contiguous.
    huge = np.broadcast_to(np.float32(1.0), (1 << 20, 1 << 20))
    with pytest.raises(ValueError, match=r"the input arrays need about 8.0 TiB to copy, over the memory budget"):
        ntile.run(examples / "gemm_4x16x8.pir", {"a": huge, "b": np.ones((16, 8), np.float32)})
    with pytest.raises(ValueError, match=r"the input arrays need about 4.0 TiB to copy"):
        ntile.gemm(huge, np.ones((1 << 20, 4), np.float32))


def test_calibrate_arguments_are_type_checked():
    row = {"m": 128, "k": 128, "n": 128, "dtype": "bf16", "schedule": "naive", "target": "trn2", "measured_us": 5}
    with pytest.raises(TypeError, match=r"^measured: expected a CSV path or a sequence of row mappings, got dict"):
        ntile.calibrate(row)
    with pytest.raises(TypeError, match=r"^measured\[1\]: expected a mapping"):
        ntile.calibrate([row, ["m", 1]])
    with pytest.raises(TypeError, match=r"^fit: expected a sequence of profile keys such as \['pe_ghz'\], got a str"):
        ntile.calibrate([row], fit="pe_ghz")


def test_calibrate_cells_cannot_add_rows_and_commas_stay_in_their_cell():
    row = {"m": 128, "k": 128, "n": 128, "dtype": "bf16", "schedule": "naive", "target": "trn2", "measured_us": 5}
    with pytest.raises(ValueError, match=r"^measured: column 'dtype': the cell .* holds a line break"):
        ntile.calibrate([dict(row, dtype="bf16\n1,1,1,bf16,naive,,,,false,trn2,1")])
    # A comma is quoted, so the whole cell reaches the reader as one (and is refused as a dtype).
    with pytest.raises(ValueError, match=r"column `dtype`: `bf16,fp32` is not a dtype"):
        ntile.calibrate([dict(row, dtype="bf16,fp32")])


def test_calibrate_refuses_block_cells_gemm_refuses():
    row = {"m": 128, "k": 128, "n": 128, "dtype": "bf16", "target": "trn2", "measured_us": 5}
    with pytest.raises(ValueError, match=r"line 2: --block-k cannot be used with --schedule blocked-mn"):
        ntile.calibrate([dict(row, schedule="blocked-mn", block_k=256)])
    with pytest.raises(ValueError, match=r"line 2: --block-m cannot be used with --schedule naive"):
        ntile.calibrate([dict(row, schedule="naive", block_m=128)])


def test_hw_values_must_be_finite_and_are_named():
    with pytest.raises(ValueError, match=r"^hw: `pe_ghz` is nan, not a finite number"):
        ntile.model(64, 64, 64, hw={"pe_ghz": math.nan})
    with pytest.raises(ValueError, match=r"^hw: `dma_fixed_ns` is inf, not a finite number"):
        ntile.model(64, 64, 64, hw={"dma_fixed_ns": {"value": math.inf, "unit": "ns"}})
    with pytest.raises(TypeError, match=r"^hw: expected a path or a mapping"):
        ntile.model(64, 64, 64, hw=3)
