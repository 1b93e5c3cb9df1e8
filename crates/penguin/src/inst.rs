//! Penguin instructions (`NeuronInst`) and their payloads.

use std::fmt;
use std::str::FromStr;

use bitflags::bitflags;
use serde::{Deserialize, Serialize};

use crate::dtype::CastMode;
use crate::entity::InstId;
use crate::tile::InstTile;

bitflags! {
    /// PSUM accumulation state of a matmul (the seed's `EngineAccumulationType`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub struct EngineAccumulationType: u8 {
        /// Zero the accumulator, then write: opens a group.
        const START = 0b001;
        /// Add into the accumulator.
        const ACCU = 0b010;
        /// Close the group: the result becomes readable.
        const STOP = 0b100;
    }
}

impl EngineAccumulationType {
    /// The flags of K sub-tile `index` out of `count` in one group.
    pub fn for_position(index: usize, count: usize) -> Self {
        let mut flags = if index == 0 { Self::START } else { Self::ACCU };
        if index + 1 == count {
            flags |= Self::STOP;
        }
        flags
    }
}

impl fmt::Display for EngineAccumulationType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = [(Self::START, "start"), (Self::ACCU, "accu"), (Self::STOP, "stop")]
            .into_iter()
            .filter(|(flag, _)| self.contains(*flag))
            .map(|(_, name)| name)
            .collect();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join("|"))
        }
    }
}

/// PE performance mode of a matmul.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerfMode {
    /// One contraction row per partition.
    #[default]
    None,
    /// Two contraction rows per partition (k and k+128): K up to 256 per pass; trn2/trn3.
    DoubleRow,
    /// A later generation's double row; exists as a value and is refused.
    DoubleRowGen3,
}

impl PerfMode {
    /// The text name.
    pub fn name(self) -> &'static str {
        match self {
            PerfMode::None => "none",
            PerfMode::DoubleRow => "double_row",
            PerfMode::DoubleRowGen3 => "double_row_gen3",
        }
    }
}

impl fmt::Display for PerfMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for an unknown perf mode name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown perf mode `{0}` (expected none, double_row or double_row_gen3)")]
pub struct UnknownPerfMode(pub String);

impl FromStr for PerfMode {
    type Err = UnknownPerfMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [PerfMode::None, PerfMode::DoubleRow, PerfMode::DoubleRowGen3]
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownPerfMode(s.to_string()))
    }
}

/// Where a matmul sits on the PE array: `(row, column)` of its first PE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TilePosition {
    /// First PE row (a multiple of the tile's row count).
    pub row: u32,
    /// First PE column (a multiple of the tile's column count).
    pub col: u32,
}

/// How much of the PE array a matmul uses: `(rows, columns)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TileSize {
    /// PE rows (128, 64 or 32).
    pub rows: u32,
    /// PE columns (128, 64 or 32).
    pub cols: u32,
}

impl Default for TileSize {
    fn default() -> Self {
        TileSize { rows: 128, cols: 128 }
    }
}

/// `dst[M, N] (+)= stationary[K, M]^T @ moving[K, N]`, accumulated in PSUM fp32.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatMultData {
    /// PSUM result, `M` partitions x `N` fp32.
    pub dst: InstTile,
    /// Stationary operand (weights), `K` partitions x `M`.
    pub stationary: InstTile,
    /// Moving operand, `K` partitions x `N`.
    pub moving: InstTile,
    /// PE performance mode.
    pub perf_mode: PerfMode,
    /// Position on the PE array.
    pub tile_position: TilePosition,
    /// Size on the PE array.
    pub tile_size: TileSize,
    /// Accumulation flags; `None` behaves as `START | STOP`.
    pub acc: Option<EngineAccumulationType>,
}

impl MatMultData {
    /// The effective flags (`None` is a complete single-pass group).
    pub fn flags(&self) -> EngineAccumulationType {
        self.acc.unwrap_or(EngineAccumulationType::START | EngineAccumulationType::STOP)
    }
}

/// A DMA transfer from `src` to `dst`, converting the dtype when they differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DmaCopyData {
    /// Destination.
    pub dst: InstTile,
    /// Source.
    pub src: InstTile,
    /// How a narrowing conversion rounds.
    pub cast: CastMode,
}

/// The compute engine that runs an elementwise instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComputeEngine {
    /// ScalarE (activation engine).
    Act,
    /// VectorE.
    Dve,
    /// GpSimd.
    Pool,
}

impl ComputeEngine {
    /// The text name.
    pub fn name(self) -> &'static str {
        match self {
            ComputeEngine::Act => "act",
            ComputeEngine::Dve => "dve",
            ComputeEngine::Pool => "pool",
        }
    }
}

impl fmt::Display for ComputeEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An on-chip copy (typically PSUM -> SBUF), converting the dtype when they differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorCopyData {
    /// The engine.
    pub engine: ComputeEngine,
    /// Destination.
    pub dst: InstTile,
    /// Source.
    pub src: InstTile,
}

/// Fill an on-chip tile with one value (converted to the tile's dtype).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemsetData {
    /// The engine.
    pub engine: ComputeEngine,
    /// Destination.
    pub dst: InstTile,
    /// The value.
    pub value: f64,
}

/// A Penguin instruction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum InstData {
    /// PE matmul into PSUM.
    MatMult(MatMultData),
    /// DMA copy with optional cast.
    DmaCopy(DmaCopyData),
    /// On-chip copy on ACT/DVE/POOL with optional cast.
    TensorCopy(TensorCopyData),
    /// Fill.
    Memset(MemsetData),
}

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

impl InstData {
    /// The instruction's opcode name in the text format.
    pub fn opcode(&self) -> &'static str {
        match self {
            InstData::MatMult(_) => "matmult",
            InstData::DmaCopy(_) => "dma_copy",
            InstData::TensorCopy(_) => "tensor_copy",
            InstData::Memset(_) => "memset",
        }
    }

    /// Every operand with what the instruction does to it, destination first.
    pub fn operands(&self) -> Vec<(&InstTile, Access)> {
        match self {
            InstData::MatMult(m) => {
                let dst_access =
                    if m.flags().contains(EngineAccumulationType::START) { Access::Write } else { Access::ReadWrite };
                vec![(&m.dst, dst_access), (&m.stationary, Access::Read), (&m.moving, Access::Read)]
            }
            InstData::DmaCopy(d) => vec![(&d.dst, Access::Write), (&d.src, Access::Read)],
            InstData::TensorCopy(c) => vec![(&c.dst, Access::Write), (&c.src, Access::Read)],
            InstData::Memset(m) => vec![(&m.dst, Access::Write)],
        }
    }

    /// Mutable access to every operand, destination first.
    pub fn operands_mut(&mut self) -> Vec<&mut InstTile> {
        match self {
            InstData::MatMult(m) => vec![&mut m.dst, &mut m.stationary, &mut m.moving],
            InstData::DmaCopy(d) => vec![&mut d.dst, &mut d.src],
            InstData::TensorCopy(c) => vec![&mut c.dst, &mut c.src],
            InstData::Memset(m) => vec![&mut m.dst],
        }
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
