"""ntile.hw, ntile.calibrate and hw= overrides: they mirror `ntile hw show`, `ntile calibrate`
and `--hw`, and are skipped where the CLI has no hardware profiles yet."""

import pickle

import pytest

import ntile
from ntile import _native


def _has_hw_commands():
    try:
        _native.cli(["hw", "show", "--json"])
        return True
    except ValueError:
        return False


pytestmark = pytest.mark.skipif(not _has_hw_commands(), reason="this ntile has no `hw show` / `calibrate`")


def test_hw_is_the_profile_of_hw_show():
    profile = ntile.hw("trn2")
    assert profile["target"] == "trn2"
    entries = {k: v for k, v in profile.items() if k != "target"}
    assert entries and all({"value", "unit"} <= set(v) for v in entries.values())


def test_hw_overrides_change_the_model_and_replay():
    key = "dma_fixed_ns"
    base = ntile.hw("trn2")[key]["value"]
    default = ntile.model(512, 512, 512, schedule="hoisted")
    slow = ntile.model(512, 512, 512, schedule="hoisted", hw={key: base * 4})
    assert slow.report["modeled_time_us"] > default.report["modeled_time_us"]
    assert ntile.hw("trn2", overrides={key: base * 4})[key]["value"] == base * 4
    # The override travels with the result (its timeline is modeled with it again).
    assert pickle.loads(pickle.dumps(slow)).svg() == slow.svg()


def test_calibrate_fits_rows_given_as_dicts():
    rows = []
    for m, k, n, schedule in [(128, 128, 128, "naive"), (256, 512, 512, "hoisted"), (512, 1024, 1024, "blocked-mn")]:
        us = ntile.model(m, k, n, schedule=schedule, out_dtype="bf16", flags=["--hbm-dtype", "bf16"])
        row = dict(m=m, k=k, n=n, dtype="bf16", schedule=schedule, lhs_transposed=False, target="trn2")
        rows.append({**row, "measured_us": us.report["modeled_time_us"] * 1.5})
    fitted = ntile.calibrate(rows, fit=["dma_fixed_ns"])
    assert fitted.profile["target"] == "trn2" and "dma_fixed_ns" in fitted.profile
    assert "mean absolute percentage error" in fitted.report


def test_calibrate_errors_are_value_errors():
    with pytest.raises(ValueError, match="unknown columns"):
        ntile.calibrate([{"m": 1, "color": "red"}])
