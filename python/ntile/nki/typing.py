"""``nki.typing``: ``nt.tensor[shape, dtype]`` (a shape placeholder for benchmarking without data,
or an annotation)."""

from __future__ import annotations

from typing import Any

from .._nki.run import TensorType


class _TensorTypes:
    """``tensor[[8192, 4096], nl.bfloat16]`` / ``tensor[128, 512]``."""

    def __getitem__(self, key: Any) -> TensorType:
        if isinstance(key, tuple) and key and isinstance(key[0], (list, tuple)):
            return TensorType(key[0], key[1] if len(key) > 1 else None)
        if isinstance(key, tuple):
            return TensorType(key)
        if isinstance(key, list):
            return TensorType(key)
        return TensorType((key,))

    def __repr__(self) -> str:
        return "nki.typing.tensor"


tensor = _TensorTypes()
