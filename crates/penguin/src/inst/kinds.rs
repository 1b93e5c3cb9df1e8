//! Penguin's instruction table: every kind is declared here once, with its payload, its
//! opcode name and its fields (operands with their role, attributes with their key), in
//! the order the text parser reads them. See [`table`](super::table) for what is derived.
//!
//! To add a kind: a payload struct in `payload.rs`, a row here, and the semantic rules that
//! the compiler then asks for (the verifier's memory and shape rules, codegen's
//! `process_new_neuroninst`, bir's lowering).

use super::payload::{
    DmaCopyData, DmaGatherData, DmaScatterAddData, MatMultData, MatMultSparseData, MemsetData, OffloadedFmaData,
    OffloadedMemCastData, OffloadedMemCpyData, TensorCopyData, TensorTensorData, TransposeData,
};

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
    },
    /// DMA scatter-add through an index tensor.
    DmaScatterAdd(DmaScatterAddData) = "dma_scatter_add" {
        table: operand(ReadWrite),
        src: operand(Read),
        index: operand(Read),
    },
}
