"""The tracer half of ``ntile nki``: ``python3 -m ntile._nki.cli FILE.py KERNEL [options]``.

Loads the kernel file with the import hook on (so ``import neuronxcc.nki`` / ``import nki``
resolve to ntile), traces ``KERNEL`` with every tensor argument known by shape and dtype only,
and writes the trace JSON (stdout, or ``-o FILE``). The data never passes through Python: the
caller reads the ``.npy`` files itself. Needs only ``python3`` and numpy.

Arguments, by parameter name: ``--input NAME=FILE.npy[:DTYPE]`` (shape and dtype from the file's
header; ``:bf16``/``:fp8e4m3``/... for arrays stored as their bit patterns), ``--shape
NAME=8192x4096:bf16``, ``--arg NAME=VALUE`` (a Python literal: ``--arg causal=True``).
Exit codes as every ntile command: 0 done, 2 bad input (a kernel error names its file:line),
3 a bug in the tracer.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import sys
import traceback
from typing import Any, Dict, List, Optional

import numpy as np

EXIT_USAGE = 2
EXIT_BUG = 3


class UsageError(Exception):
    """Bad input to the command (exit 2)."""


def _pair(text: str, what: str) -> List[str]:
    if "=" not in text:
        raise UsageError(f"{what} {text!r}: expected NAME=VALUE")
    name, value = text.split("=", 1)
    if not name.isidentifier():
        raise UsageError(f"{what} {text!r}: {name!r} is not a parameter name")
    return [name, value]


def _npy_placeholder(value: str) -> Any:
    from .run import TensorType

    path, _, dtype = value.partition(":")
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read {path}: {e}") from None
    if dtype:
        return TensorType(arr.shape, dtype)
    return TensorType(arr.shape, arr.dtype)


def _shape_placeholder(value: str) -> Any:
    from .run import TensorType

    dims, sep, dtype = value.partition(":")
    if not sep or not dtype:
        raise UsageError(f"--shape {value!r}: expected DIMSxDIMS:DTYPE (e.g. 8192x4096:bf16)")
    try:
        shape = [int(d) for d in dims.split("x")]
    except ValueError:
        raise UsageError(f"--shape {value!r}: the dims must be integers joined by 'x'") from None
    if any(d < 1 for d in shape):
        raise UsageError(f"--shape {value!r}: every dim must be at least 1")
    return TensorType(shape, dtype)


def _literal(value: str) -> Any:
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


def _grid(text: str, kernel: Any) -> Any:
    """The kernel launched on ``--grid TEXT`` (``2``, ``nc(2), 4``, ``spmd_dim(nc(2), 2), 2``)."""
    from . import run, spmd

    names = {"nc": spmd.nc, "spmd_dim": spmd.spmd_dim, "nl": spmd}
    try:
        grid = eval(text, {"__builtins__": {}}, names)  # noqa: S307 (only nc, spmd_dim and integers are in scope)
    except Exception as e:  # noqa: BLE001 (any mistake in the text is the user's)
        raise UsageError(f"--grid {text!r}: expected integers, nc(N) and spmd_dim(...) joined by commas ({e})") from None
    fn, api = run.unwrap(kernel)
    return run.Kernel(fn, api or "current", **getattr(kernel, "options", {}))[grid]


def load_kernel(path: str, name: str) -> Any:
    from . import hook

    hook.install()
    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such file")
    directory = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location("__ntile_kernel__", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    kernel = getattr(module, name, None)
    if kernel is None or not callable(kernel):
        found = sorted(k for k, v in vars(module).items() if getattr(v, "func", None) is not None)
        raise UsageError(f"{path} has no kernel {name!r}" + (f" (kernels: {', '.join(found)})" if found else ""))
    return kernel


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="ntile nki", description="Trace an NKI kernel to an ntile-nki-trace.")
    parser.add_argument("file")
    parser.add_argument("kernel")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy[:DTYPE]")
    parser.add_argument("--shape", action="append", default=[], metavar="NAME=DIMS:DTYPE")
    parser.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--target", default=None)
    parser.add_argument("--grid", default=None)
    parser.add_argument("-o", "--output", default=None)
    args = parser.parse_args(argv)
    try:
        from . import run
        from .errors import NkiError

        kwargs: Dict[str, Any] = {}
        for text in args.input:
            name, value = _pair(text, "--input")
            kwargs[name] = _npy_placeholder(value)
        for text in args.shape:
            name, value = _pair(text, "--shape")
            kwargs[name] = _shape_placeholder(value)
        for text in args.arg:
            name, value = _pair(text, "--arg")
            kwargs[name] = _literal(value)
        kernel = load_kernel(args.file, args.kernel)
        if args.grid is not None:
            kernel = _grid(args.grid, kernel)
        fn, api = run.unwrap(kernel)
        text = run.trace_kernel(fn, (), kwargs, api or "current", args.target, run.grid_of(kernel)).json()
    except (UsageError, NkiError, ValueError, TypeError, NotImplementedError, IndexError, AssertionError,
            ImportError, SyntaxError) as e:
        msg = str(e) or type(e).__name__
        print(f"error: {msg}", file=sys.stderr)
        return EXIT_USAGE
    except Exception:  # noqa: BLE001 (anything else is a bug of the tracer)
        traceback.print_exc()
        return EXIT_BUG
    if args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, args.output)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
