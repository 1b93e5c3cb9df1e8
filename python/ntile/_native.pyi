"""The Rust half of ntile's Python module (use the functions of ``ntile`` instead)."""

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

__version__: str

Operand = Tuple[np.ndarray, str, int, int]
"""A flat C-contiguous array (float32, or uint8 bit patterns), its ntile dtype, rows, cols."""

InputArray = Tuple[np.ndarray, str, List[int]]
"""An input array's bytes (flat uint8), its numpy type string (``<f4``, ``<u2``, ...), its shape."""

def gemm(
    fields: Dict[str, Any],
    flags: Sequence[str],
    a: Optional[Operand] = None,
    b: Optional[Operand] = None,
    timeline: Optional[str] = None,
) -> Tuple[str, Optional[np.ndarray], Optional[str]]:
    """A GEMM with the flags ``fields`` sets by name (``block_m`` for ``--block-m``) and more
    ``flags`` as words: the ``--json`` report text, C as flat float32, and with
    ``timeline="svg"`` the modeled engine timeline as SVG text."""

def cli(argv: List[str]) -> Tuple[str, int]:
    """Any ``ntile`` command line: its stdout text and exit code."""

def run(
    path: Optional[str],
    text: Optional[str],
    inputs: List[Tuple[str, InputArray]],
    target: Optional[str] = None,
    outputs: Optional[List[str]] = None,
) -> Tuple[List[Tuple[str, str, List[int], bytes]], str, str]:
    """Simulate a kernel (its path, or its text) on input arrays by tensor name: each output
    as (name, dtype, shape, bytes), the report as JSON text, and what ``ntile run`` prints."""

def check_input_bytes(nbytes: int) -> None:
    """Raise ValueError when input copies of ``nbytes`` would exceed the memory budget."""

class NkiHandle:
    """An NKI kernel built and run by :func:`nki_run`."""

    def outputs(self) -> Dict[str, np.ndarray]:
        """Every result by name (returned tensors, then arguments written in place), in its dtype."""
    def report(self, tracing_s: Optional[float] = None) -> Dict[str, Any]:
        """The keys of ``ntile run --json``, ``allocations`` (per site) and ``times``."""
    def trace(self, path: str) -> None:
        """Write the modeled engine timeline (Chrome/Perfetto trace-event JSON) to ``path``."""
    def svg(self) -> str:
        """The modeled engine timeline as SVG."""
    def emit(self, form: str) -> str:
        """The kernel as ``penguin`` (loops rolled) or ``bir`` text."""
    def summary(self) -> str:
        """The results, allocation table and model lines as ``ntile nki`` prints them."""

def nki_run(trace_json: str, inputs: Optional[Dict[str, np.ndarray]], options: Dict[str, Any]) -> NkiHandle:
    """Build an NKI trace (``docs/nki-trace.md``) and simulate it on ``inputs`` (by tensor name;
    None models without data); ``options``: ``target``, ``simulate``, ``race_check``."""
