//! The payloads of Penguin's data-movement and PE instructions and the value types of their
//! attributes (engine, sparsity pattern); the compute-engine payloads are in `compute.rs`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::dtype::CastMode;
use crate::tile::InstTile;

use super::alu::AluOp;
use super::kinds::InstData;
use super::pe::{EngineAccumulationType, PerfMode, TilePosition, TileSize};

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
    /// Which DMA queue should run it (see [`DmaQueueHint`]); `None`: lowering chooses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<DmaQueueHint>,
}

/// A producer's choice of DMA queue for a transfer, as a number that lowering maps onto the
/// queues of the transfer's class: a plain copy into HBM (a store) runs on store queue
/// `hint mod stores`, any other plain copy on load queue `hint mod loads`; an offloaded op
/// cut into `p` pieces puts piece `i` on queue `(hint * p + i) mod 16`, so consecutive hints
/// take consecutive runs of queues. A producer that numbers its transfers by their place in
/// its loop nest (not by a count over the whole kernel) gets the same queues in every
/// iteration, so the lowered streams loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DmaQueueHint(pub u32);

impl fmt::Display for DmaQueueHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
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
    /// The value (NaN and infinities travel through JSON as strings).
    #[serde(with = "crate::json_f64")]
    pub value: f64,
}

/// An `N:M` structured-sparsity pattern along K: at most `n` non-zeros in every `m`
/// consecutive contraction elements.
///
/// The PE's sparse matmul (NeuronCore-v3 and later) works in *hardware groups* of
/// [`SPARSE_GROUP_KEPT`] kept values out of `4 x CR` dense rows, `CR` the compression ratio
/// ([`SparsityPattern::compression_ratio`]): 4:8 (CR 2), 4:12 (CR 3), 4:16 (CR 4), the
/// patterns the public Trainium2 material lists. 1:2 and 2:4 keep half of K as 4:8 does,
/// and every A they accept is also 4:8-sparse (two groups of 4 hold at most 4 non-zeros, four
/// groups of 2 at most 4), so they run as 4:8 with CR 2: the user's pattern decides what A
/// may hold, the hardware group how it is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SparsityPattern {
    /// Non-zeros kept per group.
    pub n: u32,
    /// Group length.
    pub m: u32,
}

/// Kept values per hardware group of a sparse matmul (the `4` of 4:8, 4:12 and 4:16).
pub const SPARSE_GROUP_KEPT: u32 = 4;

/// 4-bit tags packed into one 16-bit word of a sparse matmul's tag tensor.
pub const SPARSE_TAGS_PER_WORD: u32 = 4;

impl SparsityPattern {
    /// The patterns the hardware supports.
    pub const SUPPORTED: [SparsityPattern; 5] = [
        SparsityPattern { n: 1, m: 2 },
        SparsityPattern { n: 2, m: 4 },
        SparsityPattern { n: 4, m: 8 },
        SparsityPattern { n: 4, m: 12 },
        SparsityPattern { n: 4, m: 16 },
    ];

    /// Whether this pattern is one of [`Self::SUPPORTED`].
    pub fn is_supported(self) -> bool {
        Self::SUPPORTED.contains(&self)
    }

    /// The compression ratio `CR = m / n`: dense contraction rows per kept stationary row
    /// (2 for 1:2, 2:4 and 4:8, 3 for 4:12, 4 for 4:16; at least 1 for any pattern).
    pub fn compression_ratio(self) -> u32 {
        (self.m / self.n.max(1)).max(1)
    }

    /// Dense contraction rows of one hardware group: `4 x CR` (8, 12 or 16).
    pub fn group_rows(self) -> u32 {
        SPARSE_GROUP_KEPT.saturating_mul(self.compression_ratio())
    }
}

/// 16-bit words of tags per compressed stationary row of `m` columns: `ceil(m / 4)`
/// (32 for a full 128-column tile).
pub fn sparse_tag_words(m: u32) -> u32 {
    m.div_ceil(SPARSE_TAGS_PER_WORD)
}

/// The 4-bit tag of column `j` in a compressed row's packed tag words: nibble `j % 4`
/// (least significant first) of word `j / 4`. `None` when `words` is too short.
pub fn sparse_tag(words: &[u16], j: usize) -> Option<u16> {
    let w = words.get(j / SPARSE_TAGS_PER_WORD as usize)?;
    Some(w >> (4 * (j % SPARSE_TAGS_PER_WORD as usize)) & 0xf)
}

impl fmt::Display for SparsityPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.n, self.m)
    }
}

/// The error for a malformed sparsity pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sparsity pattern `{0}` (expected one of 1:2, 2:4, 4:8, 4:12, 4:16)")]
pub struct UnknownSparsity(pub String);

impl FromStr for SparsityPattern {
    type Err = UnknownSparsity;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || UnknownSparsity(s.to_string());
        let (n, m) = s.split_once(':').ok_or_else(bad)?;
        let p = SparsityPattern { n: n.trim().parse().map_err(|_| bad())?, m: m.trim().parse().map_err(|_| bad())? };
        if p.is_supported() {
            Ok(p)
        } else {
            Err(bad())
        }
    }
}

/// A structured-sparse matmul on the layout the public Trainium2 material documents for the
/// PE's sparse mode (`CR` the pattern's [`SparsityPattern::compression_ratio`]):
///
/// - `stationary`: the *compressed* weights, `K'` partitions (at most 128, a multiple of 4)
///   x `M` (at most 128). Row `k'` holds a kept value of hardware group `g = k' / 4`, which
///   covers the `4 x CR` dense contraction rows `g*4*CR .. (g+1)*4*CR` of the tile.
/// - `moving`: `[K', CR, N]`, `N` at most 512: slot `c` of partition `p` is dense row
///   `p * CR + c`, so a tile covers `K' x CR` dense rows (512 for a full 4:16 tile) and
///   each partition holds `CR` consecutive rows.
/// - `tags`: int16 words `[K', ceil(M / 4)]` (the 16-bit pattern is what counts): four
///   4-bit tags per word, column `j`'s in nibble `j % 4` of word `j / 4`, least significant
///   first ([`sparse_tag`]). A tag `t` in `0 .. 4 x CR` is the position of the kept value
///   inside its hardware group. A full 128 x 128 tile has 128 x 128 tags of 4 bits
///   = 128 x 32 words = 8 KiB, a quarter of its 32 KiB of 2-byte values.
///
/// `dst[m, n] (+)= sum_k' stationary[k', m] * moving[r / CR, r % CR, n]` with
/// `r = (k' / 4) * 4 * CR + tag(k', m)`. The packing of tags into words is ntile's
/// choice: the hardware's physical tag order is not public.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatMultSparseData {
    /// PSUM result, `M` partitions x `N` fp32.
    pub dst: InstTile,
    /// Compressed stationary operand, `K'` partitions x `M`.
    pub stationary: InstTile,
    /// Moving operand, `K'` partitions x `[CR, N]`.
    pub moving: InstTile,
    /// Packed 4-bit positions of the kept values, `K'` partitions x `ceil(M / 4)` int16 words.
    pub tags: InstTile,
    /// The pattern.
    pub pattern: SparsityPattern,
    /// Position on the PE array.
    pub tile_position: TilePosition,
    /// Size on the PE array.
    pub tile_size: TileSize,
    /// Accumulation flags; `None` behaves as `START | STOP`.
    pub acc: Option<EngineAccumulationType>,
}

/// `dst = lhs op rhs` elementwise on chip, computed in fp32 and rounded once to dst's dtype.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorTensorData {
    /// The engine.
    pub engine: ComputeEngine,
    /// The operation (binary: arithmetic, comparison or bitvec).
    pub op: AluOp,
    /// Destination.
    pub dst: InstTile,
    /// Left operand.
    pub lhs: InstTile,
    /// Right operand.
    pub rhs: InstTile,
}

/// `dst = src0 * src1 + dst` on a DMA queue, computed in fp32 and rounded once to dst's dtype.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OffloadedFmaData {
    /// Destination (also the addend).
    pub dst: InstTile,
    /// First factor.
    pub src0: InstTile,
    /// Second factor.
    pub src1: InstTile,
}

/// A copy executed by a DMA queue as offloaded compute.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OffloadedMemCpyData {
    /// Destination.
    pub dst: InstTile,
    /// Source.
    pub src: InstTile,
}

/// A copy with dtype conversion executed by a DMA queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OffloadedMemCastData {
    /// Destination (its dtype is the target type).
    pub dst: InstTile,
    /// Source.
    pub src: InstTile,
    /// Rounding of the conversion.
    pub cast: CastMode,
    /// Which DMA queues should run its pieces (see [`DmaQueueHint`]); `None`: lowering
    /// chooses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<DmaQueueHint>,
}

/// A PE transpose through PSUM: `dst[j, i] = src[i, j]` (fp32 in PSUM).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransposeData {
    /// PSUM result, `F` partitions x `P`.
    pub dst: InstTile,
    /// SBUF source, `P` partitions x `F`.
    pub src: InstTile,
}

/// A DMA gather: `dst[i, :] = table[index[i], :]` (an `IndirectMemrefTileND` read).
///
/// `table`'s partition dimension spans every row of the table (its `num` is the bound an
/// index must stay below); `index` is an int32 tile with one entry per gathered row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DmaGatherData {
    /// Destination in SBUF, one partition per gathered row.
    pub dst: InstTile,
    /// The HBM table.
    pub table: InstTile,
    /// int32 row indices.
    pub index: InstTile,
    /// An index outside the table skips its row (`oob_mode=skip`) instead of stopping the run.
    #[serde(default)]
    pub skip: bool,
}

/// A DMA scatter: `table[index[i], :] = src[i, :]` (an `IndirectMemrefTileND` write), one index
/// entry after the other (a row named twice keeps the later source); rows no index names keep
/// their values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DmaScatterData {
    /// The HBM table.
    pub table: InstTile,
    /// Source rows in SBUF.
    pub src: InstTile,
    /// int32 row indices.
    pub index: InstTile,
    /// An index outside the table skips its row (`oob_mode=skip`) instead of stopping the run.
    #[serde(default)]
    pub skip: bool,
}

/// A DMA scatter-add: `table[index[i], :] += src[i, :]` (an `IndirectMemrefTileND` write).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DmaScatterAddData {
    /// The HBM table.
    pub table: InstTile,
    /// Source rows in SBUF.
    pub src: InstTile,
    /// int32 row indices.
    pub index: InstTile,
    /// An index outside the table skips its row (`oob_mode=skip`) instead of stopping the run.
    #[serde(default)]
    pub skip: bool,
}

impl InstData {
    /// The DMA queue hint of a copy or cast that has one.
    pub fn queue_hint(&self) -> Option<DmaQueueHint> {
        match self {
            InstData::DmaCopy(d) => d.queue,
            InstData::OffloadedMemCast(c) => c.queue,
            _ => None,
        }
    }

    /// Mutable access to the DMA queue hint of a copy or cast that has one.
    pub fn queue_hint_mut(&mut self) -> Option<&mut DmaQueueHint> {
        match self {
            InstData::DmaCopy(d) => d.queue.as_mut(),
            InstData::OffloadedMemCast(c) => c.queue.as_mut(),
            _ => None,
        }
    }
}

impl MatMultSparseData {
    /// The effective flags (`None` is a complete single-pass group).
    pub fn flags(&self) -> EngineAccumulationType {
        self.acc.unwrap_or(EngineAccumulationType::START | EngineAccumulationType::STOP)
    }
}
