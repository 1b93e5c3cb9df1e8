"""ntile.neuronxcc: the legacy ``neuronxcc`` namespace, holding only ``neuronxcc.nki`` (the
legacy NKI API on ntile's tracer). ``ntile.nki.install()`` makes ``import neuronxcc.nki``
and ``from neuronxcc import nki`` load it."""
