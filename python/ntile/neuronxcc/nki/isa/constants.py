"""``neuronxcc.nki.isa.constants``: the enumerations, as the legacy API also spells them."""

from ...._nki.enums import dge_mode, engine, nc_version, oob_mode, reduce_cmd  # noqa: F401
