"""The tracer half of `ntile nki`: `python3 -m ntile._nki.cli FILE.py KERNEL ...` writes the
trace of an unchanged kernel file, with tensor arguments from .npy headers or shapes, and exits
2 with the kernel's file:line on a kernel error."""

import json
import os
import subprocess
import sys

import numpy as np

from conftest import ROOT

PYTHON_DIR = str(ROOT / "python")


def cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "ntile._nki.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd)


def test_traces_a_kernel_file_from_shapes_and_npy_headers(tmp_path):
    np.save(tmp_path / "q.npy", np.zeros((256, 64), np.float32))
    np.save(tmp_path / "k.npy", np.zeros((256, 64), np.uint16))
    out = tmp_path / "trace.json"
    r = cli(ROOT / "examples/nki/legacy/attention.py", "attention", "--input", f"q={tmp_path / 'q.npy'}",
            "--input", f"k={tmp_path / 'k.npy'}:bf16", "--shape", "v=256x64:fp32", "--arg", "causal=True",
            "--target", "trn1", "-o", out)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert (doc["kernel"], doc["api"], doc["target"]) == ("attention", "legacy", "trn1")
    inputs = [(t["name"], t["dtype"], t["shape"]) for t in doc["tensors"] if t["buffer"] == "input"]
    assert inputs == [("q", "fp32", [256, 64]), ("k", "bf16", [256, 64]), ("v", "fp32", [256, 64])]
    assert any(o["op"] == "affine_select" for o in doc["ops"])


def test_prints_the_trace_on_stdout():
    r = cli(ROOT / "examples/nki/current/matmul.py", "matmul_one_tile", "--shape", "lhsT=128x64:bf16",
            "--shape", "rhs=128x512:bf16")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["api"] == "current"


def test_a_kernel_error_exits_2_naming_the_kernel_line(tmp_path):
    src = tmp_path / "bad.py"
    src.write_text("import neuronxcc.nki as nki\n"
                   "import neuronxcc.nki.language as nl\n"
                   "@nki.jit\n"
                   "def k(x):\n"
                   "    t = nl.load(x)\n"
                   "    if t:\n"
                   "        pass\n")
    r = cli(src, "k", "--shape", "x=128x4:fp32")
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: {src}:6: control flow on a tile value"), r.stderr


def test_usage_errors_exit_2(tmp_path):
    r = cli(ROOT / "examples/nki/legacy/softmax.py", "nope", "--shape", "x=128x4:fp32")
    assert r.returncode == 2 and "has no kernel 'nope' (kernels: softmax)" in r.stderr
    r = cli(ROOT / "examples/nki/legacy/softmax.py", "softmax", "--shape", "x=128by4:fp32")
    assert r.returncode == 2 and "the dims must be integers joined by 'x'" in r.stderr
    r = cli(tmp_path / "missing.py", "k")
    assert r.returncode == 2 and "no such file" in r.stderr
