"""The NKI tracer core shared by both API generations (``ntile.nki`` and ``ntile.neuronxcc.nki``).

A kernel is traced by running its Python once with placeholder tensors: every ``nl``/``nisa``
call appends a record (the trace format ``ntile-nki-trace`` version 1) with the kernel's own
source location. Everything here is pure Python plus numpy; nothing imports ``ntile._native``
(the ``ntile nki`` command runs a copy of this package with a bare ``python3``).

Modules: ``dtypes`` (names and promotion), ``errors`` (errors raised at the kernel's line),
``trace`` (the trace being built: files, tensors, sites, records, JSON), ``view`` (storages and
strided views in the trace's ``.ap()`` convention), ``index`` (legacy affine index algebra and
masks), ``ops`` (one record builder per instruction), ``values`` (tile-returning calls, operators
and assignment), ``loops`` (loop ranges and their markers), ``run`` (tracing a kernel and the entry
points), ``hook`` (the import hook).
"""
