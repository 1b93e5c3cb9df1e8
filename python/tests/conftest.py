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


@pytest.fixture
def nki_ref(monkeypatch):
    """Run NKI traces on the numpy reference interpreter instead of the native runner."""
    import nki_reference
    from ntile._nki import run

    monkeypatch.setattr(run, "RUNNER", nki_reference.runner)
    return nki_reference


@pytest.fixture(params=["sim", "reference"])
def nki_runner(request, monkeypatch):
    """Run NKI traces on ntile's simulator (the native runner) and, as a second opinion, on
    the numpy reference interpreter: every kernel test runs on both."""
    if request.param == "reference":
        import nki_reference
        from ntile._nki import run

        monkeypatch.setattr(run, "RUNNER", nki_reference.runner)
    return request.param


@pytest.fixture
def nki_hook():
    """The import hook, installed for one test (import nki / neuronxcc.nki resolve to ntile)."""
    import ntile.nki

    ntile.nki.install()
    yield
    ntile.nki.uninstall()


def load_example(name, api):
    """A kernel file of examples/nki/<api>/ imported as a fresh module (the hook must be on)."""
    import importlib.util

    path = ROOT / "examples" / "nki" / api / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"nki_example_{api}_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
