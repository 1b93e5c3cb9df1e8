//! The records of a trace ([`Record`]); `wire.rs` reads them.

use serde::{Deserialize, Serialize};

use super::wire::{serialize_accumulate, RawRecord};

use super::{
    Accumulate, ActivationFunc, Alu, Cmp, EngineName, Imm, Loc, LoopKind, PatternDim, Reduce, Scalar, Top8Name,
    TracePerfMode, View,
};

/// One record of the program, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", try_from = "RawRecord")]
pub enum Record {
    /// DMA `dst = src` (casting through fp32 when the dtypes differ).
    DmaCopy {
        /// Where.
        loc: Loc,
        /// Destination (HBM or SBUF).
        dst: View,
        /// Source (HBM or SBUF).
        src: View,
    },
    /// DMA gather: `dst[k, ...] = table[indices[k], ...]` (`nl.load(table[idx_tile, ...])`).
    DmaGather {
        /// Where.
        loc: Loc,
        /// Destination in SBUF, one row per index.
        dst: View,
        /// Every row of an HBM tensor (the columns the kernel picked).
        table: View,
        /// A `[K, 1]` int32 SBUF tile of row numbers.
        indices: View,
        /// An index outside the table skips its row (`oob_mode=skip`) instead of stopping.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        skip: bool,
    },
    /// DMA scatter: `table[indices[k], ...] = src[k, ...]` in index order
    /// (`nl.store(table[idx_tile, ...], value)`); rows no index names keep their values.
    DmaScatter {
        /// Where.
        loc: Loc,
        /// Every row of an HBM tensor (the columns the kernel picked).
        table: View,
        /// Rows in SBUF, one per index.
        src: View,
        /// A `[K, 1]` int32 SBUF tile of row numbers.
        indices: View,
        /// An index outside the table skips its row (`oob_mode=skip`) instead of stopping.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        skip: bool,
    },
    /// DMA scatter-add: `table[indices[k], ...] += src[k, ...]` (`nisa.dma_copy` with
    /// `dst_rmw_op=np.add` into `table[idx_tile, ...]`).
    DmaScatterAdd {
        /// Where.
        loc: Loc,
        /// Every row of an HBM tensor (the columns the kernel picked), read and written.
        table: View,
        /// Rows in SBUF, one per index.
        src: View,
        /// A `[K, 1]` int32 SBUF tile of row numbers.
        indices: View,
        /// An index outside the table skips its row (`oob_mode=skip`) instead of stopping.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        skip: bool,
    },
    /// `dst[M, N] (+)= stationary[K, M]^T @ moving[K, N]` into PSUM.
    Matmul {
        /// Where.
        loc: Loc,
        /// The PSUM result.
        dst: View,
        /// `[K, M]` in SBUF.
        stationary: View,
        /// `[K, N]` in SBUF.
        moving: View,
        /// How the result treats the region's contents.
        #[serde(serialize_with = "serialize_accumulate")]
        accumulate: Accumulate,
        /// PE performance mode.
        perf_mode: TracePerfMode,
        /// `[row, col]` on the PE array.
        tile_position: Option<[u32; 2]>,
        /// `[rows, cols]` on the PE array.
        tile_size: Option<[u32; 2]>,
    },
    /// `dst[j, i] = src[i, j]`.
    Transpose {
        /// Where.
        loc: Loc,
        /// Result.
        dst: View,
        /// Source.
        src: View,
        /// `pe` (through PSUM) or `dve`; null: the builder chooses.
        engine: Option<EngineName>,
    },
    /// An on-chip copy.
    TensorCopy {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
        /// The engine, or null.
        engine: Option<EngineName>,
    },
    /// A fill.
    Memset {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// The value.
        value: Imm,
        /// The engine, or null.
        engine: Option<EngineName>,
    },
    /// `dst = in0 ALU in1` elementwise.
    TensorTensor {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Left operand.
        in0: View,
        /// Right operand.
        in1: View,
        /// The operation.
        alu: Alu,
        /// The engine, or null.
        engine: Option<EngineName>,
    },
    /// `dst = func(src * scale + bias)`, optionally with a row reduction.
    Activation {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
        /// The function.
        func: ActivationFunc,
        /// A number or a `[P, 1]` view.
        scale: Scalar,
        /// Null, a number or a view.
        bias: Option<Scalar>,
        /// The row reduction, if any.
        reduce: Option<Reduce>,
    },
    /// `dst = (src op0 s0) op1 s1`.
    TensorScalar {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
        /// First operation.
        op0: Alu,
        /// Its scalar.
        s0: Scalar,
        /// Whether its operands are swapped.
        reverse0: bool,
        /// Second operation, if any.
        op1: Option<Alu>,
        /// Its scalar.
        s1: Option<Scalar>,
        /// Whether its operands are swapped.
        reverse1: bool,
        /// The engine, or null.
        engine: Option<EngineName>,
    },
    /// A scan along each partition: `x = initial`, then `x = op1(op0(in0[i], x), in1[i])`,
    /// `dst[i] = x` (`nki.isa.tensor_tensor_scan`, on DVE).
    TensorTensorScan {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// `data0`.
        in0: View,
        /// `data1`.
        in1: View,
        /// The operator with `in0`.
        op0: Alu,
        /// The operator with `in1`.
        op1: Alu,
        /// A number or a `[P, 1]` column.
        initial: Scalar,
    },
    /// `dst[i] = src[i]` (or the number) where `pred[i]` is nonzero (zero with `reverse`);
    /// the other elements keep their values (`nki.isa.tensor_copy_predicated`, on DVE).
    TensorCopyPredicated {
        /// Where.
        loc: Loc,
        /// Destination, read and written.
        dst: View,
        /// The predicate.
        pred: View,
        /// A view (the record's `src`) or a number (its `value`).
        src: Scalar,
        /// Copy where the predicate is zero instead.
        reverse: bool,
    },
    /// A running reduction along each partition (`nki.isa.tensor_scalar_cumulative`, on DVE):
    /// `reg = initial`, then `reg = op1(op0(src[i], s0), reg)` and `dst[i] = reg`.
    TensorScalarCumulative {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
        /// The operator with `s0`.
        op0: Alu,
        /// A number or a `[P, 1]` column.
        s0: Scalar,
        /// `s0 op0 src[i]`.
        reverse0: bool,
        /// The running operator.
        op1: Alu,
        /// The register before the first element: a number or a `[P, 1]` column.
        initial: Scalar,
    },
    /// Destination partition `q * 32 + i` takes source partition `q * 32 + shuffle_mask[i]`
    /// (255: keeps its values) (`nki.isa.nc_stream_shuffle`, on DVE).
    StreamShuffle {
        /// Where.
        loc: Loc,
        /// Destination, read and written.
        dst: View,
        /// Source.
        src: View,
        /// 32 source partitions (or 255).
        shuffle_mask: Vec<u32>,
    },
    /// Eight values per partition of `src` (`nki.isa.max8`, `nc_find_index8`,
    /// `nc_match_replace8`, on DVE): see `penguin::Top8Data`.
    Top8 {
        /// Where.
        loc: Loc,
        /// What it computes.
        mode: Top8Name,
        /// Destination: `[P, 8]` values or indices, or the replaced source.
        dst: View,
        /// The elements searched.
        src: View,
        /// The `[P, 8]` values to find (find_index8, match_replace8).
        vals: Option<View>,
        /// match_replace8's `[P, 8]` positions, when asked for.
        idx: Option<View>,
        /// match_replace8's replacement value.
        value: Option<Imm>,
    },
    /// A reduction across partitions into one partition (`nki.isa.tensor_partition_reduce`).
    TensorPartitionReduce {
        /// Where.
        loc: Loc,
        /// Destination, one partition.
        dst: View,
        /// Source.
        src: View,
        /// The reduction.
        alu: Alu,
    },
    /// A reduction along free axes.
    TensorReduce {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
        /// The reduction.
        alu: Alu,
        /// The reduced axes of the source view (>= 1).
        axes: Vec<u32>,
        /// Whether the result is negated.
        negate: bool,
        /// Whether reduced axes are kept with size 1.
        keepdims: bool,
    },
    /// `dst = (offset + channel_multiplier * p + sum(pattern) CMP 0) ? src : value`.
    AffineSelect {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
        /// The free terms.
        pattern: Vec<PatternDim>,
        /// The partition coefficient.
        channel_multiplier: i64,
        /// The constant term.
        offset: i64,
        /// The comparison.
        cmp: Cmp,
        /// The value where it fails.
        value: Imm,
    },
    /// `dst[p, f..] = offset + channel_multiplier * p + sum(pattern)`.
    Iota {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// The free terms.
        pattern: Vec<PatternDim>,
        /// The constant term.
        offset: i64,
        /// The partition coefficient.
        channel_multiplier: i64,
    },
    /// Batch-norm statistics.
    BnStats {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
    },
    /// Batch-norm aggregation.
    BnAggr {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
    },
    /// A loop of the kernel begins.
    LoopBegin {
        /// Where.
        loc: Loc,
        /// Which range.
        kind: LoopKind,
        /// Its iterations.
        trips: u64,
    },
    /// An iteration begins (before its first record).
    Iteration {
        /// Where.
        loc: Loc,
        /// Its index.
        index: u64,
    },
    /// The innermost open loop ends.
    LoopEnd {
        /// Where.
        loc: Loc,
    },
}

impl Record {
    /// The record's location.
    pub fn loc(&self) -> Loc {
        match self {
            Record::DmaCopy { loc, .. }
            | Record::DmaGather { loc, .. }
            | Record::DmaScatter { loc, .. }
            | Record::DmaScatterAdd { loc, .. }
            | Record::Matmul { loc, .. }
            | Record::Transpose { loc, .. }
            | Record::TensorCopy { loc, .. }
            | Record::Memset { loc, .. }
            | Record::TensorTensor { loc, .. }
            | Record::Activation { loc, .. }
            | Record::TensorScalar { loc, .. }
            | Record::TensorTensorScan { loc, .. }
            | Record::TensorCopyPredicated { loc, .. }
            | Record::StreamShuffle { loc, .. }
            | Record::Top8 { loc, .. }
            | Record::TensorScalarCumulative { loc, .. }
            | Record::TensorReduce { loc, .. }
            | Record::TensorPartitionReduce { loc, .. }
            | Record::AffineSelect { loc, .. }
            | Record::Iota { loc, .. }
            | Record::BnStats { loc, .. }
            | Record::BnAggr { loc, .. }
            | Record::LoopBegin { loc, .. }
            | Record::Iteration { loc, .. }
            | Record::LoopEnd { loc } => *loc,
        }
    }

    /// The record's kind, as the trace names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Record::DmaCopy { .. } => "dma_copy",
            Record::DmaGather { .. } => "dma_gather",
            Record::DmaScatter { .. } => "dma_scatter",
            Record::DmaScatterAdd { .. } => "dma_scatter_add",
            Record::Matmul { .. } => "matmul",
            Record::Transpose { .. } => "transpose",
            Record::TensorCopy { .. } => "tensor_copy",
            Record::Memset { .. } => "memset",
            Record::TensorTensor { .. } => "tensor_tensor",
            Record::Activation { .. } => "activation",
            Record::TensorScalar { .. } => "tensor_scalar",
            Record::TensorTensorScan { .. } => "tensor_tensor_scan",
            Record::TensorCopyPredicated { .. } => "tensor_copy_predicated",
            Record::StreamShuffle { .. } => "stream_shuffle",
            Record::Top8 { .. } => "top8",
            Record::TensorScalarCumulative { .. } => "tensor_scalar_cumulative",
            Record::TensorReduce { .. } => "tensor_reduce",
            Record::TensorPartitionReduce { .. } => "tensor_partition_reduce",
            Record::AffineSelect { .. } => "affine_select",
            Record::Iota { .. } => "iota",
            Record::BnStats { .. } => "bn_stats",
            Record::BnAggr { .. } => "bn_aggr",
            Record::LoopBegin { .. } => "loop_begin",
            Record::Iteration { .. } => "iteration",
            Record::LoopEnd { .. } => "loop_end",
        }
    }
}
