//! Penguin instructions (`NeuronInst`) and their payloads.
//!
//! The kinds are declared once, in the table of `kinds.rs`; [`InstData`], [`InstKind`] and
//! the mechanical functions over them (opcode, operands, operand names, attributes,
//! accumulation, [`InstData::from_parts`]) are derived from it by the macros of `table.rs`.
//! `payload.rs` holds the payload structs (`compute.rs` those of the compute-engine
//! instructions, `alu.rs` their value types: ALU operators, activation functions, scalar
//! operands, affine patterns), `pe.rs` the attributes every PE instruction shares, and
//! `attr.rs` how attribute values print and parse.

use serde::{Deserialize, Serialize};

use crate::entity::InstId;

#[macro_use]
mod table;
mod alu;
pub(crate) mod attr;
mod compute;
mod kinds;
mod payload;
mod pe;
mod shuffle;
mod top8;

pub use alu::{
    ActFunc, AffineDim, AffinePattern, AluClass, AluOp, BadPattern, ScalarOperand, ValidRange, MAX_PATTERN_DIMS,
};
pub use attr::AttrError;
pub use compute::{
    ActivationData, AffineSelectData, BnAggrData, BnStatsData, IotaData, TensorCopyPredicatedData,
    TensorPartitionReduceData, TensorReduceData, TensorScalarCumulativeData, TensorScalarData, TensorTensorScanData,
    BN_STATS_FMAX, PARTITION_REDUCE_OPS,
};
pub use kinds::{InstData, InstKind};
pub use payload::{
    sparse_tag, sparse_tag_words, ComputeEngine, DmaCopyData, DmaGatherData, DmaQueueHint, DmaScatterAddData,
    DmaScatterData, MatMultData, MatMultSparseData, MemsetData, OffloadedFmaData, OffloadedMemCastData,
    OffloadedMemCpyData, SparsityPattern, TensorCopyData, TensorTensorData, TransposeData, UnknownSparsity,
    SPARSE_GROUP_KEPT, SPARSE_TAGS_PER_WORD,
};
pub use pe::{
    parse_pe_attributes, pe_attributes, EngineAccumulationType, PerfMode, TilePosition, TileSize, UnknownPerfMode,
};
pub use shuffle::{BadShuffleMask, ShuffleMask, StreamShuffleData, SHUFFLE_KEEP, SHUFFLE_QUADRANT};
pub use top8::{Top8Data, Top8Mode, UnknownTop8Mode, TOP8_SRC_ELEMS, TOP8_VALUES};

/// What an instruction's operand does to its tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads it.
    Read,
    /// Writes it.
    Write,
    /// Reads and writes it (PSUM accumulation).
    ReadWrite,
}

/// The access of an accumulating operand: a write when `flags` opens a group, else a
/// read-modify-write.
fn acc_access(flags: EngineAccumulationType) -> Access {
    if flags.contains(EngineAccumulationType::START) {
        Access::Write
    } else {
        Access::ReadWrite
    }
}

impl InstData {
    /// The instruction's opcode name in the text format.
    pub fn opcode(&self) -> &'static str {
        self.kind().name()
    }
}

/// The kind of a dependency edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DepKind {
    /// Read after write.
    Raw,
    /// Write after read.
    War,
    /// Write after write.
    Waw,
}

impl DepKind {
    /// The text name.
    pub fn name(self) -> &'static str {
        match self {
            DepKind::Raw => "raw",
            DepKind::War => "war",
            DepKind::Waw => "waw",
        }
    }
}

/// An incoming dependency edge: this instruction must run after `from`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Dep {
    /// The earlier instruction.
    pub from: InstId,
    /// Why.
    pub kind: DepKind,
}

#[cfg(test)]
mod tests;
