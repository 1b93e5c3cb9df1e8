"""Shared helpers of the ntile Python tests: seeded inputs and the fp64 reference."""

from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.fixture
def examples():
    return ROOT / "examples"


def reference(a, b):
    """fp64 product of the operands' values (already rounded to what the PE multiplies)."""
    return np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64)


def assert_within_bound(c, a, b):
    """SPEC section 7's bound: |c - ref| <= 2*K*eps32*(|A|@|B|), elementwise."""
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    ref = a64 @ b64
    mag = np.abs(a64) @ np.abs(b64)
    k = a64.shape[1]
    bound = 2 * k * np.finfo(np.float32).eps * mag
    err = np.abs(np.asarray(c, dtype=np.float64) - ref)
    assert (err <= bound).all(), f"max err {err.max()} over bound at {np.unravel_index(np.argmax(err - bound), err.shape)}"
