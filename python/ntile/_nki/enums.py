"""The ``nki.isa`` enumerations (both APIs spell them alike)."""

from enum import Enum, IntEnum


class engine(IntEnum):
    """NeuronCore engines (``engine`` arguments; ``unknown`` lets the builder choose)."""

    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    dma = 4
    vector = 5
    sync = 6


class reduce_cmd(IntEnum):
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(IntEnum):
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(IntEnum):
    error = 0
    skip = 1


class nc_version(IntEnum):
    gen2 = 2
    gen3 = 3
    gen4 = 4


class matmul_perf_mode(Enum):
    none = "none"
    double_row = "double_row"


class dma_engine(IntEnum):
    dma = 1
    gpsimd_dma = 2


def nc_version_of(target: str) -> nc_version:
    return {"trn1": nc_version.gen2, "trn2": nc_version.gen3, "trn3": nc_version.gen4}[target]
