"""The import hook: after ntile.nki.install(), unchanged kernel files that import
neuronxcc.nki (legacy) or nki (current) trace and run on ntile."""

import importlib
import sys
import textwrap

import numpy as np
import pytest

LEGACY = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa
from neuronxcc.nki import baremetal
from neuronxcc.nki.language import par_dim


@nki.jit
def scaled_exp(in_tensor):
    out = nl.ndarray(in_tensor.shape, dtype=in_tensor.dtype, buffer=nl.shared_hbm)
    sz_p, sz_f = in_tensor.shape
    i_f = nl.arange(sz_f)[None, :]
    for p in nl.affine_range((sz_p + 127) // 128):
        i_p = p * 128 + nl.arange(128)[:, None]
        tile = nl.ndarray((par_dim(128), sz_f), dtype=in_tensor.dtype, buffer=nl.sbuf)
        tile[...] = nl.load(in_tensor[i_p, i_f], mask=(i_p < sz_p))
        res = nisa.activation(np.exp, tile, scale=0.5, mask=(i_p < sz_p))
        nl.store(out[i_p, i_f], value=res, mask=(i_p < sz_p))
    return out
'''

FROM_IMPORT = '''
from neuronxcc import nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt


@nki.jit
def double(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x) * 2.0)
    return out


PLACEHOLDER = nt.tensor[[128, 64], nl.float32]
'''

CURRENT = '''
import nki
import nki.language as nl
import nki.isa as nisa


@nki.jit
def relu_kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.activation(dst=t, op=nl.relu, data=t)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


@pytest.fixture
def kernel_dir(tmp_path, monkeypatch):
    for name, text in (("legacy_kernel", LEGACY), ("from_import_kernel", FROM_IMPORT), ("current_kernel", CURRENT)):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("legacy_kernel", "from_import_kernel", "current_kernel"):
        sys.modules.pop(name, None)


def test_unchanged_legacy_kernel_file(nki_hook, nki_ref, kernel_dir, rng):
    mod = importlib.import_module("legacy_kernel")
    x = rng.standard_normal((200, 64)).astype(np.float32)
    np.testing.assert_allclose(mod.scaled_exp(x), np.exp(x * 0.5), rtol=1e-6)
    import neuronxcc.nki.language as nl

    assert nl.__name__ == "ntile.neuronxcc.nki.language"


def test_from_neuronxcc_import_nki(nki_hook, nki_ref, kernel_dir, rng):
    mod = importlib.import_module("from_import_kernel")
    assert mod.nki.__name__ == "ntile.neuronxcc.nki"
    x = rng.standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_array_equal(mod.double(x), 2 * x)
    assert mod.PLACEHOLDER.shape == (128, 64)


def test_unchanged_current_kernel_file(nki_hook, nki_ref, kernel_dir, rng):
    mod = importlib.import_module("current_kernel")
    assert mod.nki.__name__ == "ntile.nki"
    x = rng.standard_normal((128, 32)).astype(np.float32)
    np.testing.assert_array_equal(mod.nki.simulate(mod.relu_kernel)(x), np.maximum(x, 0))


def test_without_the_hook_the_names_do_not_resolve(kernel_dir):
    import ntile.nki

    ntile.nki.uninstall()
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("legacy_kernel")
