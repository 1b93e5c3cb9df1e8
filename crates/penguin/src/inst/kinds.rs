//! Penguin's instruction table: every kind is declared here once, with its payload, its
//! opcode name and its fields (operands with their role, attributes with their key), in
//! the order the text parser reads them. See [`table`](super::table) for what is derived.
//!
//! To add a kind: a payload struct in `payload.rs` (or `compute.rs`), a row here, and the
//! semantic rules that the compiler then asks for (the verifier's memory and shape rules,
//! codegen's `process_new_neuroninst`, bir's lowering).

use super::compute::{
    ActivationData, AffineSelectData, BnAggrData, BnStatsData, IotaData, TensorCopyPredicatedData,
    TensorPartitionReduceData, TensorReduceData, TensorScalarCumulativeData, TensorScalarData, TensorTensorScanData,
};
use super::payload::{
    DmaCopyData, DmaGatherData, DmaScatterAddData, DmaScatterData, MatMultData, MatMultSparseData, MemsetData,
    OffloadedFmaData, OffloadedMemCastData, OffloadedMemCpyData, TensorCopyData, TensorTensorData, TransposeData,
};
use super::shuffle::StreamShuffleData;
use super::top8::Top8Data;

inst_kinds! {
    /// PE matmul into PSUM.
    MatMult(MatMultData) = "matmult" {
        dst: operand(Accumulate),
        stationary: operand(Read),
        moving: operand(Read),
        perf_mode: attr("perf"),
        tile_position: attr("pos"),
        tile_size: attr("size"),
        acc: attr("acc"),
    },
    /// Structured-sparse PE matmul into PSUM (boxed: four operands).
    MatMultSparse(MatMultSparseData) in Box = "matmult_sparse" {
        dst: operand(Accumulate),
        stationary: operand(Read),
        moving: operand(Read),
        tags: operand(Read),
        pattern: attr("pattern"),
        tile_position: attr("pos"),
        tile_size: attr("size"),
        acc: attr("acc"),
    },
    /// DMA copy with optional cast.
    DmaCopy(DmaCopyData) = "dma_copy" {
        dst: operand(Write),
        src: operand(Read),
        cast: attr("cast"),
        queue: attr("queue"),
    },
    /// On-chip copy on ACT/DVE/POOL with optional cast.
    TensorCopy(TensorCopyData) = "tensor_copy" {
        engine: attr("engine"),
        dst: operand(Write),
        src: operand(Read),
    },
    /// Fill.
    Memset(MemsetData) = "memset" {
        engine: attr("engine"),
        dst: operand(Write),
        value: attr("value"),
    },
    /// Elementwise binary operation on chip.
    TensorTensor(TensorTensorData) = "tensor_tensor" {
        engine: attr("engine"),
        op: attr("op"),
        dst: operand(Write),
        lhs: operand(Read),
        rhs: operand(Read),
    },
    /// Offloaded FMA on SBUF tiles.
    TiledOffloadedFma(OffloadedFmaData) = "tiled_offloaded_fma" {
        dst: operand(ReadWrite),
        src0: operand(Read),
        src1: operand(Read),
    },
    /// Offloaded copy between tiles.
    TiledOffloadedMemCpy(OffloadedMemCpyData) = "tiled_offloaded_memcpy" {
        dst: operand(Write),
        src: operand(Read),
    },
    /// Offloaded FMA on whole HBM tensors.
    OffloadedFma(OffloadedFmaData) = "offloaded_fma" {
        dst: operand(ReadWrite),
        src0: operand(Read),
        src1: operand(Read),
    },
    /// Offloaded copy of whole HBM tensors.
    OffloadedMemCpy(OffloadedMemCpyData) = "offloaded_memcpy" {
        dst: operand(Write),
        src: operand(Read),
    },
    /// Offloaded copy with dtype conversion.
    OffloadedMemCast(OffloadedMemCastData) = "offloaded_memcast" {
        dst: operand(Write),
        src: operand(Read),
        cast: attr("cast"),
        queue: attr("queue"),
    },
    /// PE transpose through PSUM.
    Transpose(TransposeData) = "transpose" {
        dst: operand(Write),
        src: operand(Read),
    },
    /// DMA gather through an index tensor.
    DmaGather(DmaGatherData) = "dma_gather" {
        dst: operand(Write),
        table: operand(Read),
        index: operand(Read),
        skip: attr("skip"),
    },
    /// DMA scatter through an index tensor.
    DmaScatter(DmaScatterData) = "dma_scatter" {
        table: operand(ReadWrite),
        src: operand(Read),
        index: operand(Read),
        skip: attr("skip"),
    },
    /// DMA scatter-add through an index tensor.
    DmaScatterAdd(DmaScatterAddData) = "dma_scatter_add" {
        table: operand(ReadWrite),
        src: operand(Read),
        index: operand(Read),
        skip: attr("skip"),
    },
    /// ScalarE activation `dst = func(src * scale + bias)`, optionally summing each row.
    Activation(ActivationData) in Box = "activation" {
        func: attr("func"),
        dst: operand(Write),
        src: operand(Read),
        scale: scalar(1.0),
        bias: scalar(0.0),
        reduce: operand(Write),
    },
    /// `dst = (src op0 operand0) op1 operand1` with immediates or `[P, 1]` columns.
    TensorScalar(TensorScalarData) in Box = "tensor_scalar" {
        engine: attr("engine"),
        op0: attr("op0"),
        reverse0: attr("reverse0"),
        op1: attr("op1"),
        reverse1: attr("reverse1"),
        dst: operand(Write),
        src: operand(Read),
        operand0: scalar(),
        operand1: scalar(0.0),
    },
    /// VectorE scan: `x = (x op0 data0[i]) op1 data1[i]` along each partition.
    TensorTensorScan(TensorTensorScanData) in Box = "tensor_tensor_scan" {
        op0: attr("op0"),
        op1: attr("op1"),
        dst: operand(Write),
        data0: operand(Read),
        data1: operand(Read),
        initial: scalar(),
    },
    /// VectorE copy where a predicate tile is nonzero.
    TensorCopyPredicated(TensorCopyPredicatedData) in Box = "tensor_copy_predicated" {
        reverse: attr("reverse"),
        dst: operand(ReadWrite),
        predicate: operand(Read),
        src: scalar(),
    },
    /// VectorE running reduction: `reg = op1(op0(src[i], operand0), reg)`, `dst[i] = reg`.
    TensorScalarCumulative(TensorScalarCumulativeData) in Box = "tensor_scalar_cumulative" {
        op0: attr("op0"),
        op1: attr("op1"),
        reverse0: attr("reverse0"),
        dst: operand(Write),
        src: operand(Read),
        operand0: scalar(),
        initial: scalar(),
    },
    /// VectorE search for eight values per partition (max8, find_index8, match_replace8).
    Top8(Top8Data) in Box = "top8" {
        mode: attr("mode"),
        value: attr("value"),
        dst: operand(Write),
        src: operand(Read),
        vals: operand(Read),
        idx: operand(Write),
    },
    /// VectorE cross-partition copy within each quadrant of 32 partitions.
    StreamShuffle(StreamShuffleData) in Box = "stream_shuffle" {
        mask: attr("mask"),
        dst: operand(ReadWrite),
        src: operand(Read),
    },
    /// VectorE reduction over the trailing free elements.
    TensorReduce(TensorReduceData) = "tensor_reduce" {
        op: attr("op"),
        negate: attr("negate"),
        dst: operand(Write),
        src: operand(Read),
    },
    /// GpSimd reduction across partitions.
    TensorPartitionReduce(TensorPartitionReduceData) = "tensor_partition_reduce" {
        op: attr("op"),
        dst: operand(Write),
        src: operand(Read),
    },
    /// GpSimd select by an affine predicate (the causal mask).
    AffineSelect(AffineSelectData) = "affine_select" {
        cmp: attr("cmp"),
        offset: attr("offset"),
        channel_multiplier: attr("channel_multiplier"),
        pattern: attr("pattern"),
        value: attr("value"),
        dst: operand(Write),
        src: operand(Read),
    },
    /// GpSimd affine index values.
    Iota(IotaData) = "iota" {
        offset: attr("offset"),
        channel_multiplier: attr("channel_multiplier"),
        pattern: attr("pattern"),
        dst: operand(Write),
    },
    /// VectorE per-partition count, mean and variance * count of even and odd elements.
    BnStats(BnStatsData) = "bn_stats" {
        dst: operand(Write),
        src: operand(Read),
    },
    /// VectorE mean and variance from `bn_stats` triples.
    BnAggr(BnAggrData) = "bn_aggr" {
        dst: operand(Write),
        src: operand(Read),
    },
}
