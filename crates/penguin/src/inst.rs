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

/// The text-format attributes every PE instruction shares (Penguin and BIR): `perf` (when
/// given), `pos`, `size` and `acc` (when given).
pub fn pe_attributes(
    perf: Option<PerfMode>,
    pos: TilePosition,
    size: TileSize,
    acc: Option<EngineAccumulationType>,
) -> Vec<(&'static str, String)> {
    let mut v = Vec::new();
    if let Some(p) = perf {
        v.push(("perf", p.to_string()));
    }
    v.push(("pos", format!("{},{}", pos.row, pos.col)));
    v.push(("size", format!("{},{}", size.rows, size.cols)));
    if let Some(a) = acc {
        v.push(("acc", a.to_string()));
    }
    v
}

/// The PE attributes parsed back from `attr` (a lookup of `key=value`s), with the defaults
/// `perf=none pos=0,0 size=128,128` and no `acc`.
pub fn parse_pe_attributes<'a>(
    attr: impl Fn(&str) -> Option<&'a str>,
) -> Result<(PerfMode, TilePosition, TileSize, Option<EngineAccumulationType>), String> {
    let pair = |key: &str, default: (u32, u32)| -> Result<(u32, u32), String> {
        let Some(v) = attr(key) else { return Ok(default) };
        let bad = || format!("`{key}={v}` must be two numbers `a,b`");
        let (a, b) = v.split_once(',').ok_or_else(bad)?;
        Ok((a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?))
    };
    let (pos, size) = (pair("pos", (0, 0))?, pair("size", (128, 128))?);
    let perf = attr("perf").map_or(Ok(PerfMode::None), |v| v.parse().map_err(|e: UnknownPerfMode| e.to_string()))?;
    let acc = attr("acc").map(str::parse::<EngineAccumulationType>).transpose()?;
    Ok((perf, TilePosition { row: pos.0, col: pos.1 }, TileSize { rows: size.0, cols: size.1 }, acc))
}

impl FromStr for EngineAccumulationType {
    type Err = String;

    /// `start|accu|stop` in any combination, or `none`.
    fn from_str(v: &str) -> Result<Self, Self::Err> {
        let mut flags = EngineAccumulationType::empty();
        for part in v.split('|') {
            flags |= match part {
                "start" => EngineAccumulationType::START,
                "accu" => EngineAccumulationType::ACCU,
                "stop" => EngineAccumulationType::STOP,
                "none" => EngineAccumulationType::empty(),
                other => return Err(format!("unknown accumulation flag `{other}` (expected start, accu, stop)")),
            };
        }
        Ok(flags)
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
    /// The value (NaN and infinities travel through JSON as strings).
    #[serde(with = "crate::json_f64")]
    pub value: f64,
}

/// An `N:M` structured-sparsity pattern along K: at most `n` non-zeros in every `m`
/// consecutive contraction elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SparsityPattern {
    /// Non-zeros kept per group.
    pub n: u32,
    /// Group length.
    pub m: u32,
}

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

/// A structured-sparse matmul: the stationary operand holds only the kept elements of each
/// `N:M` group along K, and `tags` (int16, same shape) gives each kept element's position
/// inside its group. `dst[m, n] (+)= sum_k' stationary[k', m] * moving[(k' / N) * M + tags[k', m], n]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatMultSparseData {
    /// PSUM result, `M` partitions x `N` fp32.
    pub dst: InstTile,
    /// Compressed stationary operand, `K * N / M` partitions x `M`.
    pub stationary: InstTile,
    /// Moving operand, `K` partitions x `N`.
    pub moving: InstTile,
    /// int16 positions of the kept elements, shaped like `stationary`.
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

/// An elementwise binary operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TensorTensorOp {
    /// `lhs + rhs`.
    Add,
    /// `lhs * rhs`.
    Mul,
    /// `max(lhs, rhs)`.
    Max,
}

impl TensorTensorOp {
    /// The text name.
    pub fn name(self) -> &'static str {
        match self {
            TensorTensorOp::Add => "add",
            TensorTensorOp::Mul => "mul",
            TensorTensorOp::Max => "max",
        }
    }
}

/// `dst = lhs op rhs` elementwise on chip, computed in fp32 and rounded once to dst's dtype.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorTensorData {
    /// The engine.
    pub engine: ComputeEngine,
    /// The operation.
    pub op: TensorTensorOp,
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
}

/// A Penguin instruction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum InstData {
    /// PE matmul into PSUM.
    MatMult(MatMultData),
    /// Structured-sparse PE matmul into PSUM.
    MatMultSparse(MatMultSparseData),
    /// DMA copy with optional cast.
    DmaCopy(DmaCopyData),
    /// On-chip copy on ACT/DVE/POOL with optional cast.
    TensorCopy(TensorCopyData),
    /// Fill.
    Memset(MemsetData),
    /// Elementwise binary operation on chip.
    TensorTensor(TensorTensorData),
    /// Offloaded FMA on SBUF tiles.
    TiledOffloadedFma(OffloadedFmaData),
    /// Offloaded copy between tiles.
    TiledOffloadedMemCpy(OffloadedMemCpyData),
    /// Offloaded FMA on whole HBM tensors.
    OffloadedFma(OffloadedFmaData),
    /// Offloaded copy of whole HBM tensors.
    OffloadedMemCpy(OffloadedMemCpyData),
    /// Offloaded copy with dtype conversion.
    OffloadedMemCast(OffloadedMemCastData),
    /// PE transpose through PSUM.
    Transpose(TransposeData),
    /// DMA gather through an index tensor.
    DmaGather(DmaGatherData),
    /// DMA scatter-add through an index tensor.
    DmaScatterAdd(DmaScatterAddData),
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

fn acc_access(flags: EngineAccumulationType) -> Access {
    if flags.contains(EngineAccumulationType::START) {
        Access::Write
    } else {
        Access::ReadWrite
    }
}

impl MatMultSparseData {
    /// The effective flags (`None` is a complete single-pass group).
    pub fn flags(&self) -> EngineAccumulationType {
        self.acc.unwrap_or(EngineAccumulationType::START | EngineAccumulationType::STOP)
    }
}

impl InstData {
    /// The instruction's opcode name in the text format.
    pub fn opcode(&self) -> &'static str {
        match self {
            InstData::MatMult(_) => "matmult",
            InstData::MatMultSparse(_) => "matmult_sparse",
            InstData::DmaCopy(_) => "dma_copy",
            InstData::TensorCopy(_) => "tensor_copy",
            InstData::Memset(_) => "memset",
            InstData::TensorTensor(_) => "tensor_tensor",
            InstData::TiledOffloadedFma(_) => "tiled_offloaded_fma",
            InstData::TiledOffloadedMemCpy(_) => "tiled_offloaded_memcpy",
            InstData::OffloadedFma(_) => "offloaded_fma",
            InstData::OffloadedMemCpy(_) => "offloaded_memcpy",
            InstData::OffloadedMemCast(_) => "offloaded_memcast",
            InstData::Transpose(_) => "transpose",
            InstData::DmaGather(_) => "dma_gather",
            InstData::DmaScatterAdd(_) => "dma_scatter_add",
        }
    }

    /// Every operand with what the instruction does to it, destination first.
    pub fn operands(&self) -> Vec<(&InstTile, Access)> {
        use Access::{Read, ReadWrite, Write};
        match self {
            InstData::MatMult(m) => vec![(&m.dst, acc_access(m.flags())), (&m.stationary, Read), (&m.moving, Read)],
            InstData::MatMultSparse(m) => {
                vec![(&m.dst, acc_access(m.flags())), (&m.stationary, Read), (&m.moving, Read), (&m.tags, Read)]
            }
            InstData::DmaCopy(d) => vec![(&d.dst, Write), (&d.src, Read)],
            InstData::TensorCopy(c) => vec![(&c.dst, Write), (&c.src, Read)],
            InstData::Memset(m) => vec![(&m.dst, Write)],
            InstData::TensorTensor(t) => vec![(&t.dst, Write), (&t.lhs, Read), (&t.rhs, Read)],
            InstData::TiledOffloadedFma(f) | InstData::OffloadedFma(f) => {
                vec![(&f.dst, ReadWrite), (&f.src0, Read), (&f.src1, Read)]
            }
            InstData::TiledOffloadedMemCpy(c) | InstData::OffloadedMemCpy(c) => vec![(&c.dst, Write), (&c.src, Read)],
            InstData::OffloadedMemCast(c) => vec![(&c.dst, Write), (&c.src, Read)],
            InstData::Transpose(t) => vec![(&t.dst, Write), (&t.src, Read)],
            InstData::DmaGather(g) => vec![(&g.dst, Write), (&g.table, Read), (&g.index, Read)],
            InstData::DmaScatterAdd(s) => vec![(&s.table, ReadWrite), (&s.src, Read), (&s.index, Read)],
        }
    }

    /// The text-format names of the operands, in the order of [`Self::operands`].
    pub fn operand_names(&self) -> &'static [&'static str] {
        match self {
            InstData::MatMult(_) => &["dst", "stationary", "moving"],
            InstData::MatMultSparse(_) => &["dst", "stationary", "moving", "tags"],
            InstData::DmaCopy(_)
            | InstData::TensorCopy(_)
            | InstData::TiledOffloadedMemCpy(_)
            | InstData::OffloadedMemCpy(_)
            | InstData::OffloadedMemCast(_)
            | InstData::Transpose(_) => &["dst", "src"],
            InstData::Memset(_) => &["dst"],
            InstData::TensorTensor(_) => &["dst", "lhs", "rhs"],
            InstData::TiledOffloadedFma(_) | InstData::OffloadedFma(_) => &["dst", "src0", "src1"],
            InstData::DmaGather(_) => &["dst", "table", "index"],
            InstData::DmaScatterAdd(_) => &["table", "src", "index"],
        }
    }

    /// The instruction's attributes (everything but operands) as text-format `key=value`s.
    pub fn attributes(&self) -> Vec<(&'static str, String)> {
        let pe = |perf, pos: &TilePosition, size: &TileSize, acc| pe_attributes(perf, *pos, *size, acc);
        let cast = |c: CastMode| ("cast", c.name().to_string());
        match self {
            InstData::MatMult(m) => pe(Some(m.perf_mode), &m.tile_position, &m.tile_size, m.acc),
            InstData::MatMultSparse(m) => {
                let mut v = vec![("pattern", m.pattern.to_string())];
                v.extend(pe(None, &m.tile_position, &m.tile_size, m.acc));
                v
            }
            InstData::DmaCopy(d) => vec![cast(d.cast)],
            InstData::TensorCopy(c) => vec![("engine", c.engine.to_string())],
            InstData::Memset(m) => vec![("engine", m.engine.to_string()), ("value", m.value.to_string())],
            InstData::TensorTensor(t) => vec![("engine", t.engine.to_string()), ("op", t.op.name().to_string())],
            InstData::OffloadedMemCast(c) => vec![cast(c.cast)],
            InstData::TiledOffloadedFma(_)
            | InstData::OffloadedFma(_)
            | InstData::TiledOffloadedMemCpy(_)
            | InstData::OffloadedMemCpy(_)
            | InstData::Transpose(_)
            | InstData::DmaGather(_)
            | InstData::DmaScatterAdd(_) => Vec::new(),
        }
    }

    /// Build an instruction from its text-format parts: the opcode, its `key=value`
    /// attributes (as [`Self::attributes`] prints them) and its named operands (as
    /// [`Self::operand_names`] names them). The error says what is missing or malformed.
    pub fn from_parts(
        opcode: &str,
        attrs: &[(String, String)],
        operands: Vec<(String, InstTile)>,
    ) -> Result<InstData, String> {
        let attr = |key: &str| attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        let need = |key: &str| attr(key).ok_or_else(|| format!("{opcode} needs `{key}=`"));
        let mut ops: Vec<(String, Option<InstTile>)> = operands.into_iter().map(|(n, t)| (n, Some(t))).collect();
        let mut take = |name: &str| -> Result<InstTile, String> {
            ops.iter_mut()
                .find(|(n, t)| n == name && t.is_some())
                .and_then(|(_, t)| t.take())
                .ok_or_else(|| format!("{opcode} needs operand `{name}=`"))
        };
        let engine = |v: &str| match v {
            "act" => Ok(ComputeEngine::Act),
            "dve" => Ok(ComputeEngine::Dve),
            "pool" => Ok(ComputeEngine::Pool),
            _ => Err(format!("unknown engine `{v}` (expected act, dve or pool)")),
        };
        let cast = |v: Option<&str>| match v {
            None | Some("rne") => Ok(CastMode::Rne),
            Some("saturate") => Ok(CastMode::Saturate),
            Some(other) => Err(format!("unknown cast mode `{other}` (expected rne or saturate)")),
        };
        let (perf_mode, tile_position, tile_size, acc) = parse_pe_attributes(attr)?;
        let inst = match opcode {
            "matmult" => InstData::MatMult(MatMultData {
                dst: take("dst")?,
                stationary: take("stationary")?,
                moving: take("moving")?,
                perf_mode,
                tile_position,
                tile_size,
                acc,
            }),
            "matmult_sparse" => InstData::MatMultSparse(MatMultSparseData {
                dst: take("dst")?,
                stationary: take("stationary")?,
                moving: take("moving")?,
                tags: take("tags")?,
                pattern: need("pattern")?.parse().map_err(|e: UnknownSparsity| e.to_string())?,
                tile_position,
                tile_size,
                acc,
            }),
            "dma_copy" => {
                InstData::DmaCopy(DmaCopyData { dst: take("dst")?, src: take("src")?, cast: cast(attr("cast"))? })
            }
            "tensor_copy" => InstData::TensorCopy(TensorCopyData {
                engine: engine(need("engine")?)?,
                dst: take("dst")?,
                src: take("src")?,
            }),
            "memset" => InstData::Memset(MemsetData {
                engine: engine(need("engine")?)?,
                dst: take("dst")?,
                value: need("value")?
                    .parse()
                    .map_err(|_| format!("memset value `{}` is not a number", attr("value").unwrap_or("")))?,
            }),
            "tensor_tensor" => InstData::TensorTensor(TensorTensorData {
                engine: engine(need("engine")?)?,
                op: match need("op")? {
                    "add" => TensorTensorOp::Add,
                    "mul" => TensorTensorOp::Mul,
                    "max" => TensorTensorOp::Max,
                    other => return Err(format!("unknown tensor_tensor op `{other}` (expected add, mul or max)")),
                },
                dst: take("dst")?,
                lhs: take("lhs")?,
                rhs: take("rhs")?,
            }),
            "tiled_offloaded_fma" | "offloaded_fma" => {
                let f = OffloadedFmaData { dst: take("dst")?, src0: take("src0")?, src1: take("src1")? };
                if opcode == "offloaded_fma" {
                    InstData::OffloadedFma(f)
                } else {
                    InstData::TiledOffloadedFma(f)
                }
            }
            "tiled_offloaded_memcpy" | "offloaded_memcpy" => {
                let c = OffloadedMemCpyData { dst: take("dst")?, src: take("src")? };
                if opcode == "offloaded_memcpy" {
                    InstData::OffloadedMemCpy(c)
                } else {
                    InstData::TiledOffloadedMemCpy(c)
                }
            }
            "offloaded_memcast" => InstData::OffloadedMemCast(OffloadedMemCastData {
                dst: take("dst")?,
                src: take("src")?,
                cast: cast(attr("cast"))?,
            }),
            "transpose" => InstData::Transpose(TransposeData { dst: take("dst")?, src: take("src")? }),
            "dma_gather" => {
                InstData::DmaGather(DmaGatherData { dst: take("dst")?, table: take("table")?, index: take("index")? })
            }
            "dma_scatter_add" => InstData::DmaScatterAdd(DmaScatterAddData {
                table: take("table")?,
                src: take("src")?,
                index: take("index")?,
            }),
            other => return Err(format!("unknown instruction `{other}`")),
        };
        if let Some((n, _)) = ops.iter().find(|(_, t)| t.is_some()) {
            return Err(format!("{opcode} has no operand `{n}`"));
        }
        let mut known: Vec<&str> = inst.attributes().iter().map(|(k, _)| *k).collect();
        if matches!(inst, InstData::MatMult(_) | InstData::MatMultSparse(_)) {
            known.push("acc");
        }
        if let Some((k, _)) = attrs.iter().find(|(k, _)| !known.contains(&k.as_str())) {
            return Err(format!("{opcode} has no attribute `{k}`"));
        }
        Ok(inst)
    }

    /// Mutable access to every operand, in the order of [`Self::operands`].
    pub fn operands_mut(&mut self) -> Vec<&mut InstTile> {
        match self {
            InstData::MatMult(m) => vec![&mut m.dst, &mut m.stationary, &mut m.moving],
            InstData::MatMultSparse(m) => vec![&mut m.dst, &mut m.stationary, &mut m.moving, &mut m.tags],
            InstData::DmaCopy(d) => vec![&mut d.dst, &mut d.src],
            InstData::TensorCopy(c) => vec![&mut c.dst, &mut c.src],
            InstData::Memset(m) => vec![&mut m.dst],
            InstData::TensorTensor(t) => vec![&mut t.dst, &mut t.lhs, &mut t.rhs],
            InstData::TiledOffloadedFma(f) | InstData::OffloadedFma(f) => vec![&mut f.dst, &mut f.src0, &mut f.src1],
            InstData::TiledOffloadedMemCpy(c) | InstData::OffloadedMemCpy(c) => vec![&mut c.dst, &mut c.src],
            InstData::OffloadedMemCast(c) => vec![&mut c.dst, &mut c.src],
            InstData::Transpose(t) => vec![&mut t.dst, &mut t.src],
            InstData::DmaGather(g) => vec![&mut g.dst, &mut g.table, &mut g.index],
            InstData::DmaScatterAdd(s) => vec![&mut s.table, &mut s.src, &mut s.index],
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ap::AccessPattern;
    use crate::dtype::DType;
    use crate::entity::{Memory, TensorId};

    fn t(id: u32) -> InstTile {
        InstTile {
            tensor: TensorId(id),
            memory: Memory::Sbuf,
            dtype: DType::Fp32,
            ap: AccessPattern::on_chip(0, 4, 0, 8),
        }
    }

    fn every_kind() -> Vec<InstData> {
        let fma = OffloadedFmaData { dst: t(0), src0: t(1), src1: t(2) };
        let cpy = OffloadedMemCpyData { dst: t(0), src: t(1) };
        vec![
            InstData::MatMult(MatMultData {
                dst: t(0),
                stationary: t(1),
                moving: t(2),
                perf_mode: PerfMode::DoubleRow,
                tile_position: TilePosition { row: 64, col: 0 },
                tile_size: TileSize { rows: 64, cols: 128 },
                acc: Some(EngineAccumulationType::ACCU | EngineAccumulationType::STOP),
            }),
            InstData::MatMultSparse(MatMultSparseData {
                dst: t(0),
                stationary: t(1),
                moving: t(2),
                tags: t(3),
                pattern: SparsityPattern { n: 4, m: 12 },
                tile_position: TilePosition::default(),
                tile_size: TileSize::default(),
                acc: None,
            }),
            InstData::DmaCopy(DmaCopyData { dst: t(0), src: t(1), cast: CastMode::Saturate }),
            InstData::TensorCopy(TensorCopyData { engine: ComputeEngine::Dve, dst: t(0), src: t(1) }),
            InstData::Memset(MemsetData { engine: ComputeEngine::Pool, dst: t(0), value: -1.25 }),
            InstData::TensorTensor(TensorTensorData {
                engine: ComputeEngine::Act,
                op: TensorTensorOp::Max,
                dst: t(0),
                lhs: t(1),
                rhs: t(2),
            }),
            InstData::TiledOffloadedFma(fma.clone()),
            InstData::OffloadedFma(fma),
            InstData::TiledOffloadedMemCpy(cpy.clone()),
            InstData::OffloadedMemCpy(cpy),
            InstData::OffloadedMemCast(OffloadedMemCastData { dst: t(0), src: t(1), cast: CastMode::Rne }),
            InstData::Transpose(TransposeData { dst: t(0), src: t(1) }),
            InstData::DmaGather(DmaGatherData { dst: t(0), table: t(1), index: t(2) }),
            InstData::DmaScatterAdd(DmaScatterAddData { table: t(0), src: t(1), index: t(2) }),
        ]
    }

    #[test]
    fn from_parts_inverts_attributes_and_operands() {
        for inst in every_kind() {
            let attrs: Vec<(String, String)> = inst.attributes().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            let ops: Vec<(String, InstTile)> = inst
                .operands()
                .into_iter()
                .zip(inst.operand_names())
                .map(|((t, _), n)| (n.to_string(), t.clone()))
                .collect();
            assert_eq!(InstData::from_parts(inst.opcode(), &attrs, ops), Ok(inst.clone()), "{}", inst.opcode());
        }
    }

    #[test]
    fn from_parts_names_what_is_wrong() {
        let e = InstData::from_parts("matmult", &[], vec![("dst".into(), t(0))]).unwrap_err();
        assert_eq!(e, "matmult needs operand `stationary=`");
        let e = InstData::from_parts("memset", &[("engine".into(), "gpu".into())], vec![]).unwrap_err();
        assert_eq!(e, "unknown engine `gpu` (expected act, dve or pool)");
        let e = InstData::from_parts(
            "dma_copy",
            &[("speed".into(), "fast".into())],
            vec![("dst".into(), t(0)), ("src".into(), t(1))],
        )
        .unwrap_err();
        assert_eq!(e, "dma_copy has no attribute `speed`");
        assert_eq!(InstData::from_parts("jump", &[], vec![]).unwrap_err(), "unknown instruction `jump`");
    }
}
