//! What a timeline rectangle is coloured by: the kind of work an instruction does.

use bir::{HwAp, Op};
use penguin::Memory;

use super::Axis;

/// What an instruction's rectangle is coloured by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Matmul,
    LoadStationary,
    Transpose,
    TensorCopy,
    TensorTensor,
    Memset,
    Activation,
    TensorScalar,
    Reduce,
    Select,
    LoadA,
    LoadB,
    Store,
    Cast,
    DmaCopy,
    DmaOther,
}

impl Kind {
    pub(crate) const ALL: [Kind; 16] = [
        Kind::Matmul,
        Kind::LoadStationary,
        Kind::Transpose,
        Kind::TensorCopy,
        Kind::TensorTensor,
        Kind::Memset,
        Kind::Activation,
        Kind::TensorScalar,
        Kind::Reduce,
        Kind::Select,
        Kind::LoadA,
        Kind::LoadB,
        Kind::Store,
        Kind::Cast,
        Kind::DmaCopy,
        Kind::DmaOther,
    ];

    /// The kind of an op; a DMA copy by what it does: a transposing transfer, then a store
    /// (it writes HBM), a cast (its dtypes differ), a load of A or B (`role`: the GEMM role
    /// of the HBM tensor it reads), any other copy.
    pub(crate) fn of(op: &Op, role: Option<Axis>) -> Kind {
        match op {
            Op::MultiplyMoving { .. } => Kind::Matmul,
            Op::LoadStationary { .. } | Op::LoadStationarySparse { .. } => Kind::LoadStationary,
            Op::Transpose { .. } => Kind::Transpose,
            Op::TensorCopy { .. } | Op::TensorCopyPredicated { .. } | Op::StreamShuffle { .. } => Kind::TensorCopy,
            Op::TensorTensor { .. } | Op::TensorTensorScan { .. } => Kind::TensorTensor,
            Op::Memset { .. } => Kind::Memset,
            Op::Activation { .. } => Kind::Activation,
            Op::TensorScalar { .. } | Op::TensorScalarCumulative { .. } => Kind::TensorScalar,
            Op::TensorReduce { .. }
            | Op::TensorPartitionReduce { .. }
            | Op::Top8 { .. }
            | Op::BnStats { .. }
            | Op::BnAggr { .. } => Kind::Reduce,
            Op::AffineSelect { .. } | Op::Iota { .. } => Kind::Select,
            Op::DmaCopy { dst, src, .. } => {
                if is_transposing(src) || is_transposing(dst) {
                    Kind::Transpose
                } else if dst.memory == Memory::Hbm {
                    Kind::Store
                } else if src.dtype != dst.dtype {
                    Kind::Cast
                } else {
                    match role {
                        Some(Axis::M) => Kind::LoadA,
                        Some(Axis::N) => Kind::LoadB,
                        _ => Kind::DmaCopy,
                    }
                }
            }
            Op::DmaFma { .. } | Op::DmaGather { .. } | Op::DmaScatter { .. } | Op::DmaScatterAdd { .. } => {
                Kind::DmaOther
            }
        }
    }

    /// Position in [`Kind::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The CSS class of its rectangles.
    pub(crate) fn class(self) -> &'static str {
        match self {
            Kind::Matmul => "multiply_moving",
            Kind::LoadStationary => "load_stationary",
            Kind::Transpose => "transpose",
            Kind::TensorCopy => "tensor_copy",
            Kind::TensorTensor => "tensor_tensor",
            Kind::Memset => "memset",
            Kind::Activation => "activation",
            Kind::TensorScalar => "tensor_scalar",
            Kind::Reduce => "reduce",
            Kind::Select => "select",
            Kind::LoadA => "load_a",
            Kind::LoadB => "load_b",
            Kind::Store => "store",
            Kind::Cast => "cast",
            Kind::DmaCopy => "dma_copy",
            Kind::DmaOther => "dma_other",
        }
    }

    pub(crate) fn colour(self) -> &'static str {
        match self {
            Kind::Matmul => "#4e79a7",
            Kind::LoadStationary => "#a0cbe8",
            Kind::Transpose => "#b07aa1",
            Kind::TensorCopy => "#59a14f",
            Kind::TensorTensor => "#edc948",
            Kind::Memset => "#9c755f",
            Kind::Activation => "#76b7b2",
            Kind::TensorScalar => "#8cd17d",
            Kind::Reduce => "#b6992d",
            Kind::Select => "#d37295",
            Kind::LoadA => "#f28e2b",
            Kind::LoadB => "#ffbe7d",
            Kind::Store => "#e15759",
            Kind::Cast => "#ff9da7",
            Kind::DmaCopy => "#bab0ac",
            Kind::DmaOther => "#79706e",
        }
    }

    pub(crate) fn legend(self) -> &'static str {
        match self {
            Kind::Matmul => "matmul (multiply_moving)",
            Kind::LoadStationary => "load_stationary (pe.weights row)",
            Kind::Transpose => "transpose (PE or DMA)",
            Kind::TensorCopy => "tensor_copy",
            Kind::TensorTensor => "tensor_tensor",
            Kind::Memset => "memset",
            Kind::Activation => "activation (ScalarE function)",
            Kind::TensorScalar => "tensor_scalar",
            Kind::Reduce => "tensor_reduce / bn_stats / bn_aggr",
            Kind::Select => "affine_select / iota (GpSimd)",
            Kind::LoadA => "A load",
            Kind::LoadB => "B load",
            Kind::Store => "store (to HBM)",
            Kind::Cast => "casting load",
            Kind::DmaCopy => "other dma_copy",
            Kind::DmaOther => "dma fma / gather / scatter",
        }
    }
}

/// An HBM operand read or written transposed: partitions adjacent in memory, the free
/// dimension strided.
fn is_transposing(ap: &HwAp) -> bool {
    let inner = ap.dims.iter().rev().find(|d| d.num > 1);
    ap.memory == Memory::Hbm
        && ap.num_partitions > 1
        && ap.partition_stride == 1
        && inner.is_some_and(|d| d.stride != 1)
}
