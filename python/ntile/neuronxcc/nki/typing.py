"""``neuronxcc.nki.typing``: ``nt.tensor[[8192, 4096], nl.bfloat16]`` shape placeholders."""

from ...nki.typing import tensor  # noqa: F401
