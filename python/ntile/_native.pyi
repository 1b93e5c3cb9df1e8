"""The Rust half of ntile's Python module (use the functions of ``ntile`` instead)."""

from typing import List, Optional, Tuple

import numpy as np

__version__: str

Operand = Tuple[np.ndarray, str, int, int]
"""A flat C-contiguous array (float32, or uint8 bit patterns), its ntile dtype, rows, cols."""

def gemm(
    argv: List[str], a: Optional[Operand] = None, b: Optional[Operand] = None
) -> Tuple[str, Optional[np.ndarray]]:
    """``ntile gemm`` with ``argv``: the ``--json`` report text and C as flat float32."""

def cli(argv: List[str]) -> Tuple[str, int]:
    """Any ``ntile`` command line: its stdout text and exit code."""

def model_kernel(path: str, target: Optional[str] = None) -> str:
    """The cycle model and HBM tensors of a kernel file, as JSON text."""
