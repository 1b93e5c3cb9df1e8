//! BIR programs: engines, semaphores, hardware access patterns and instructions.

use std::fmt;

use serde::{Deserialize, Serialize};

use penguin::{
    pe_attributes as pe_attrs, CastMode, DType, Dim, EngineAccumulationType, InstId, Memory, PerfMode, SparsityPattern,
    Target, TensorTensorOp, TilePosition, TileSize,
};

/// Number of engine streams: PE, ACT, DVE, POOL, SP and 16 DMA queues.
pub const NUM_ENGINES: usize = 5 + penguin::target::NUM_DMA_QUEUES as usize;

/// An engine with its own instruction stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Engine {
    /// TensorE, the 128x128 PE array.
    Pe,
    /// ScalarE (activation).
    Act,
    /// VectorE.
    Dve,
    /// GpSimd.
    Pool,
    /// The sync engine (issues nothing in generated programs; kept for hand-written ones).
    Sp,
    /// DMA queue 0..16.
    Dma(u8),
}

impl Engine {
    /// Every engine, in stream order.
    pub fn all() -> impl Iterator<Item = Engine> {
        [Engine::Pe, Engine::Act, Engine::Dve, Engine::Pool, Engine::Sp]
            .into_iter()
            .chain((0..penguin::target::NUM_DMA_QUEUES as u8).map(Engine::Dma))
    }

    /// Dense index: PE 0, ACT 1, DVE 2, POOL 3, SP 4, DMA q at 5 + q.
    pub fn index(self) -> usize {
        match self {
            Engine::Pe => 0,
            Engine::Act => 1,
            Engine::Dve => 2,
            Engine::Pool => 3,
            Engine::Sp => 4,
            Engine::Dma(q) => 5 + usize::from(q),
        }
    }

    /// The engine with a dense index.
    pub fn from_index(i: usize) -> Option<Engine> {
        Engine::all().nth(i)
    }

    /// Whether this is a compute engine (subject to the partition start rule).
    pub fn is_compute(self) -> bool {
        matches!(self, Engine::Pe | Engine::Act | Engine::Dve | Engine::Pool)
    }

    /// The most free dimensions one access pattern may have on this engine.
    pub fn max_free_dims(self) -> usize {
        match self {
            Engine::Pe | Engine::Act | Engine::Dve | Engine::Pool | Engine::Sp => 3,
            Engine::Dma(_) => 4,
        }
    }

    /// The text name (`pe`, `dma3`).
    pub fn name(self) -> String {
        match self {
            Engine::Pe => "pe".into(),
            Engine::Act => "act".into(),
            Engine::Dve => "dve".into(),
            Engine::Pool => "pool".into(),
            Engine::Sp => "sp".into(),
            Engine::Dma(q) => format!("dma{q}"),
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A semaphore; prints as `s3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SemId(pub u32);

impl fmt::Display for SemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}", self.0)
    }
}

/// Wait until a semaphore has been signalled at least `value` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Wait {
    /// The semaphore.
    pub sem: SemId,
    /// The count to reach.
    pub value: u32,
}

/// A hardware access pattern.
///
/// On chip: partitions `start_partition + i * partition_stride` for `i < num_partitions`,
/// and inside each the element offsets `byte_offset / size + sum(idx_d * stride_d)`.
/// HBM: byte-addressed from the start of HBM; the partition dimension is one more strided
/// dimension (stride in elements).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HwAp {
    /// The memory.
    pub memory: Memory,
    /// The element type.
    pub dtype: DType,
    /// First partition (0 for HBM).
    pub start_partition: u32,
    /// Partition count (rows for HBM).
    pub num_partitions: u32,
    /// Partition step (on chip) or row stride in elements (HBM).
    pub partition_stride: i64,
    /// Byte offset: within a partition on chip, absolute in HBM.
    pub byte_offset: u64,
    /// Free dimensions, element strides.
    pub dims: Vec<Dim>,
}

/// `stride * (num - 1)`, the offset of the last index of a dimension (exact: below 2^96 in
/// magnitude).
fn span(stride: i64, num: u32) -> i128 {
    i128::from(stride) * (i128::from(num.max(1)) - 1)
}

/// `v` saturated to the `i64` range.
fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

impl HwAp {
    /// Elements per partition, saturating at `u64::MAX`.
    pub fn free_elems(&self) -> u64 {
        self.dims.iter().fold(1u64, |n, d| n.saturating_mul(u64::from(d.num)))
    }

    /// Elements over all partitions, saturating at `u64::MAX`.
    pub fn num_elems(&self) -> u64 {
        u64::from(self.num_partitions).saturating_mul(self.free_elems())
    }

    /// Smallest and largest element offset of the free dims relative to the base, saturated
    /// to the `i64` range.
    pub fn free_extent(&self) -> (i64, i64) {
        let (lo, hi) = self.free_extent_wide();
        (clamp_i64(lo), clamp_i64(hi))
    }

    /// [`Self::free_extent`] without saturation.
    fn free_extent_wide(&self) -> (i128, i128) {
        self.dims.iter().fold((0, 0), |(lo, hi), d| {
            let s = span(d.stride, d.num);
            if s < 0 {
                (lo.saturating_add(s), hi)
            } else {
                (lo, hi.saturating_add(s))
            }
        })
    }

    /// The byte box this pattern touches: partitions `[p0, p1)` and bytes `[lo, hi)` within
    /// each partition (HBM: `p0 = 0, p1 = 1`, absolute bytes).
    ///
    /// Saturating: partitions are clamped to `0..=u32::MAX` and bytes to the `i64` range, so
    /// a hostile pattern gives a box that is too large, never one that wrapped around (the
    /// verifier checks the exact bounds).
    pub fn byte_region(&self) -> (u32, u32, i64, i64) {
        let [p0, p1, lo, hi] = self.byte_region_wide();
        let part = |p: i128| u32::try_from(p.max(0)).unwrap_or(u32::MAX);
        (part(p0), part(p1), clamp_i64(lo), clamp_i64(hi))
    }

    /// [`Self::byte_region`] without clamping: `p0` may be negative and any bound may lie
    /// outside the `i64` range.
    pub(crate) fn byte_region_wide(&self) -> [i128; 4] {
        let size = i128::from(self.dtype.size_bytes());
        let (mut lo, mut hi) = self.free_extent_wide();
        let pspan = span(self.partition_stride, self.num_partitions);
        let base = i128::from(self.byte_offset);
        let bytes = |lo: i128, hi: i128| {
            [
                base.saturating_add(lo.saturating_mul(size)),
                base.saturating_add(hi.saturating_add(1).saturating_mul(size)),
            ]
        };
        if self.memory == Memory::Hbm {
            if pspan < 0 {
                lo = lo.saturating_add(pspan);
            } else {
                hi = hi.saturating_add(pspan);
            }
            let [blo, bhi] = bytes(lo, hi);
            [0, 1, blo, bhi]
        } else {
            let start = i128::from(self.start_partition);
            let [blo, bhi] = bytes(lo, hi);
            [start + pspan.min(0), start + pspan.max(0) + 1, blo, bhi]
        }
    }
}

impl fmt::Display for HwAp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}[p{}:{}:{} @{}",
            self.memory, self.dtype, self.start_partition, self.num_partitions, self.partition_stride, self.byte_offset
        )?;
        for d in &self.dims {
            write!(f, " {d}")?;
        }
        f.write_str("]")
    }
}

/// A BIR operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// Load the stationary operand (`K` partitions x `M`, or `[P, 2, M]` in double row) into
    /// the PE array.
    LoadStationary {
        /// The weights.
        src: HwAp,
        /// Perf mode.
        perf_mode: PerfMode,
        /// Array position.
        tile_position: TilePosition,
        /// Array size.
        tile_size: TileSize,
    },
    /// Load a compressed structured-sparse stationary operand with its int16 tags.
    LoadStationarySparse {
        /// The kept weights, `K'` partitions x `M`.
        src: HwAp,
        /// Their positions inside each group of `pattern.m`.
        tags: HwAp,
        /// The pattern.
        pattern: SparsityPattern,
        /// Array position.
        tile_position: TilePosition,
        /// Array size.
        tile_size: TileSize,
    },
    /// Stream the moving operand through the array into PSUM.
    MultiplyMoving {
        /// PSUM result (`M` partitions x `N` fp32).
        dst: HwAp,
        /// Moving operand (`K` partitions x `N`, or `[P, 2, N]` in double row).
        src: HwAp,
        /// Accumulation flags.
        acc: EngineAccumulationType,
        /// Perf mode.
        perf_mode: PerfMode,
        /// Array position.
        tile_position: TilePosition,
        /// Array size.
        tile_size: TileSize,
    },
    /// PE transpose: `dst[j, i] = src[i, j]` into PSUM (fp32).
    Transpose {
        /// PSUM result.
        dst: HwAp,
        /// SBUF source.
        src: HwAp,
    },
    /// A DMA transfer with dtype conversion.
    DmaCopy {
        /// Destination.
        dst: HwAp,
        /// Source.
        src: HwAp,
        /// Rounding of a narrowing conversion.
        cast: CastMode,
    },
    /// Offloaded fused multiply-add on a DMA queue: `dst = src0 * src1 + dst` in fp32, rounded
    /// once to dst's dtype.
    DmaFma {
        /// Destination and addend.
        dst: HwAp,
        /// First factor.
        src0: HwAp,
        /// Second factor.
        src1: HwAp,
    },
    /// DMA gather: `dst[i, :] = table[index[i], :]`; the table's partition count is the bound.
    DmaGather {
        /// Destination rows.
        dst: HwAp,
        /// The table (one partition per table row).
        table: HwAp,
        /// int32 row indices.
        index: HwAp,
    },
    /// DMA scatter-add: `table[index[i], :] += src[i, :]`.
    DmaScatterAdd {
        /// The table.
        table: HwAp,
        /// Source rows.
        src: HwAp,
        /// int32 row indices.
        index: HwAp,
    },
    /// An on-chip copy with dtype conversion (ACT/DVE/POOL).
    TensorCopy {
        /// Destination.
        dst: HwAp,
        /// Source.
        src: HwAp,
    },
    /// Elementwise `dst = lhs op rhs` in fp32, rounded once (ACT/DVE/POOL).
    TensorTensor {
        /// The operation.
        op: TensorTensorOp,
        /// Destination.
        dst: HwAp,
        /// Left operand.
        lhs: HwAp,
        /// Right operand.
        rhs: HwAp,
    },
    /// Fill with a value (ACT/DVE/POOL/SP).
    Memset {
        /// Destination.
        dst: HwAp,
        /// The value (NaN and infinities travel through JSON as strings).
        #[serde(with = "penguin::json_f64")]
        value: f64,
    },
}

/// The engines an op may run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineClass {
    /// The PE array.
    Pe,
    /// A DMA queue.
    Dma,
    /// ACT, DVE or POOL.
    Compute,
    /// ACT, DVE, POOL or SP.
    ComputeOrSp,
}

impl EngineClass {
    /// Whether `e` belongs to the class.
    pub fn contains(self, e: Engine) -> bool {
        match self {
            EngineClass::Pe => e == Engine::Pe,
            EngineClass::Dma => matches!(e, Engine::Dma(_)),
            EngineClass::Compute => matches!(e, Engine::Act | Engine::Dve | Engine::Pool),
            EngineClass::ComputeOrSp => matches!(e, Engine::Act | Engine::Dve | Engine::Pool | Engine::Sp),
        }
    }
}

impl Op {
    /// Bytes this op moves to or from HBM: every HBM element read or written (a
    /// read-modify-write twice); a gather or scatter-add moves only the indexed table rows.
    ///
    /// Saturates at `u64::MAX` instead of overflowing.
    pub fn hbm_bytes(&self) -> u64 {
        let size = |ap: &HwAp| u64::from(ap.dtype.size_bytes());
        let indexed = match self {
            Op::DmaGather { index, .. } | Op::DmaScatterAdd { index, .. } => Some(index.num_elems()),
            _ => None,
        };
        self.aps()
            .into_iter()
            .filter(|(_, ap)| ap.memory == Memory::Hbm)
            .map(|(name, ap)| {
                let moved = match (name, indexed) {
                    ("table", Some(rows)) => rows.saturating_mul(ap.free_elems()),
                    _ => ap.num_elems(),
                };
                let rmw = matches!((self, name), (Op::DmaFma { .. }, "dst") | (Op::DmaScatterAdd { .. }, "table"));
                moved.saturating_mul(size(ap)).saturating_mul(if rmw { 2 } else { 1 })
            })
            .fold(0, u64::saturating_add)
    }

    /// The text name.
    pub fn name(&self) -> &'static str {
        match self {
            Op::LoadStationary { .. } => "load_stationary",
            Op::LoadStationarySparse { .. } => "load_stationary_sparse",
            Op::MultiplyMoving { .. } => "multiply_moving",
            Op::Transpose { .. } => "transpose",
            Op::DmaCopy { .. } => "dma_copy",
            Op::DmaFma { .. } => "dma_fma",
            Op::DmaGather { .. } => "dma_gather",
            Op::DmaScatterAdd { .. } => "dma_scatter_add",
            Op::TensorCopy { .. } => "tensor_copy",
            Op::TensorTensor { .. } => "tensor_tensor",
            Op::Memset { .. } => "memset",
        }
    }

    /// The engines that can run this op.
    pub fn engine_class(&self) -> EngineClass {
        match self {
            Op::LoadStationary { .. }
            | Op::LoadStationarySparse { .. }
            | Op::MultiplyMoving { .. }
            | Op::Transpose { .. } => EngineClass::Pe,
            Op::DmaCopy { .. } | Op::DmaFma { .. } | Op::DmaGather { .. } | Op::DmaScatterAdd { .. } => {
                EngineClass::Dma
            }
            Op::TensorCopy { .. } | Op::TensorTensor { .. } => EngineClass::Compute,
            Op::Memset { .. } => EngineClass::ComputeOrSp,
        }
    }

    /// Every access pattern with whether it is written (a read-modify-write counts as written).
    pub fn accesses(&self) -> Vec<(&HwAp, bool)> {
        self.aps().into_iter().map(|(name, ap)| (ap, self.writes(name))).collect()
    }

    fn writes(&self, name: &str) -> bool {
        match self {
            Op::DmaScatterAdd { .. } => name == "table",
            _ => name == "dst",
        }
    }

    /// The named access patterns, destination first (the text format's `name=ap` list).
    pub fn aps(&self) -> Vec<(&'static str, &HwAp)> {
        match self {
            Op::LoadStationary { src, .. } => vec![("src", src)],
            Op::LoadStationarySparse { src, tags, .. } => vec![("src", src), ("tags", tags)],
            Op::MultiplyMoving { dst, src, .. }
            | Op::Transpose { dst, src }
            | Op::DmaCopy { dst, src, .. }
            | Op::TensorCopy { dst, src } => vec![("dst", dst), ("src", src)],
            Op::DmaFma { dst, src0, src1 } => vec![("dst", dst), ("src0", src0), ("src1", src1)],
            Op::DmaGather { dst, table, index } => vec![("dst", dst), ("table", table), ("index", index)],
            Op::DmaScatterAdd { table, src, index } => vec![("table", table), ("src", src), ("index", index)],
            Op::TensorTensor { dst, lhs, rhs, .. } => vec![("dst", dst), ("lhs", lhs), ("rhs", rhs)],
            Op::Memset { dst, .. } => vec![("dst", dst)],
        }
    }

    /// The attributes other than access patterns, as text-format `key=value`s.
    pub fn attributes(&self) -> Vec<(&'static str, String)> {
        match self {
            Op::LoadStationary { perf_mode, tile_position, tile_size, .. } => {
                pe_attrs(Some(*perf_mode), *tile_position, *tile_size, None)
            }
            Op::LoadStationarySparse { pattern, tile_position, tile_size, .. } => {
                let mut v = vec![("pattern", pattern.to_string())];
                v.extend(pe_attrs(None, *tile_position, *tile_size, None));
                v
            }
            Op::MultiplyMoving { acc, perf_mode, tile_position, tile_size, .. } => {
                pe_attrs(Some(*perf_mode), *tile_position, *tile_size, Some(*acc))
            }
            Op::DmaCopy { cast, .. } => vec![("cast", cast.name().to_string())],
            Op::TensorTensor { op, .. } => vec![("op", op.name().to_string())],
            Op::Memset { value, .. } => vec![("value", value.to_string())],
            Op::Transpose { .. }
            | Op::DmaFma { .. }
            | Op::DmaGather { .. }
            | Op::DmaScatterAdd { .. }
            | Op::TensorCopy { .. } => Vec::new(),
        }
    }

    /// Build an op from its text-format parts (the inverse of [`Self::name`],
    /// [`Self::attributes`] and [`Self::aps`]); the error says what is missing or malformed.
    pub fn from_parts(name: &str, attrs: &[(String, String)], aps: Vec<(String, HwAp)>) -> Result<Op, String> {
        let attr = |key: &str| attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        let mut aps: Vec<(String, Option<HwAp>)> = aps.into_iter().map(|(n, a)| (n, Some(a))).collect();
        let mut take = |key: &str| -> Result<HwAp, String> {
            aps.iter_mut()
                .find(|(n, a)| n == key && a.is_some())
                .and_then(|(_, a)| a.take())
                .ok_or_else(|| format!("{name} needs access pattern `{key}=`"))
        };
        let (perf_mode, tile_position, tile_size, acc) = penguin::parse_pe_attributes(attr)?;
        let op = match name {
            "load_stationary" => Op::LoadStationary { src: take("src")?, perf_mode, tile_position, tile_size },
            "load_stationary_sparse" => Op::LoadStationarySparse {
                src: take("src")?,
                tags: take("tags")?,
                pattern: attr("pattern")
                    .ok_or_else(|| format!("{name} needs `pattern=`"))?
                    .parse()
                    .map_err(|e: penguin::UnknownSparsity| e.to_string())?,
                tile_position,
                tile_size,
            },
            "multiply_moving" => Op::MultiplyMoving {
                dst: take("dst")?,
                src: take("src")?,
                acc: acc.ok_or_else(|| format!("{name} needs `acc=`"))?,
                perf_mode,
                tile_position,
                tile_size,
            },
            "transpose" => Op::Transpose { dst: take("dst")?, src: take("src")? },
            "dma_copy" => {
                let cast = match attr("cast") {
                    None | Some("rne") => CastMode::Rne,
                    Some("saturate") => CastMode::Saturate,
                    Some(other) => return Err(format!("unknown cast mode `{other}` (expected rne or saturate)")),
                };
                Op::DmaCopy { dst: take("dst")?, src: take("src")?, cast }
            }
            "dma_fma" => Op::DmaFma { dst: take("dst")?, src0: take("src0")?, src1: take("src1")? },
            "dma_gather" => Op::DmaGather { dst: take("dst")?, table: take("table")?, index: take("index")? },
            "dma_scatter_add" => Op::DmaScatterAdd { table: take("table")?, src: take("src")?, index: take("index")? },
            "tensor_copy" => Op::TensorCopy { dst: take("dst")?, src: take("src")? },
            "tensor_tensor" => Op::TensorTensor {
                op: match attr("op") {
                    Some("add") => TensorTensorOp::Add,
                    Some("mul") => TensorTensorOp::Mul,
                    Some("max") => TensorTensorOp::Max,
                    Some(other) => {
                        return Err(format!("unknown tensor_tensor op `{other}` (expected add, mul or max)"))
                    }
                    None => return Err(format!("{name} needs `op=`")),
                },
                dst: take("dst")?,
                lhs: take("lhs")?,
                rhs: take("rhs")?,
            },
            "memset" => Op::Memset {
                dst: take("dst")?,
                value: attr("value")
                    .ok_or_else(|| format!("{name} needs `value=`"))?
                    .parse()
                    .map_err(|_| format!("memset value `{}` is not a number", attr("value").unwrap_or("")))?,
            },
            other => return Err(format!("unknown BIR op `{other}`")),
        };
        if let Some((n, _)) = aps.iter().find(|(_, a)| a.is_some()) {
            return Err(format!("{name} has no access pattern `{n}`"));
        }
        let known: Vec<&str> = op.attributes().iter().map(|(k, _)| *k).collect();
        if let Some((k, _)) = attrs.iter().find(|(k, _)| !known.contains(&k.as_str())) {
            return Err(format!("{name} has no attribute `{k}`"));
        }
        Ok(op)
    }
}

/// One instruction of a stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BirInst {
    /// What it does.
    pub op: Op,
    /// Semaphores to wait on before starting.
    pub waits: Vec<Wait>,
    /// Semaphore to increment when done.
    pub signal: Option<SemId>,
    /// The Penguin instruction it came from.
    pub origin: Option<InstId>,
}

/// Role of an HBM tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HbmRole {
    /// Provided by the caller.
    Input,
    /// Returned to the caller.
    Output,
    /// Scratch.
    Internal,
}

/// An HBM tensor with its address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HbmTensor {
    /// Name.
    pub name: String,
    /// Shape (row-major).
    pub shape: Vec<u64>,
    /// Element type.
    pub dtype: DType,
    /// Byte address.
    pub address: u64,
    /// Role.
    pub role: HbmRole,
}

impl HbmTensor {
    /// Size in bytes, saturating at `u64::MAX`.
    pub fn num_bytes(&self) -> u64 {
        self.shape.iter().fold(u64::from(self.dtype.size_bytes()), |n, &d| n.saturating_mul(d))
    }
}

/// A BIR program: one stream per engine plus semaphores and HBM layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Program {
    /// Kernel name.
    pub kernel_name: String,
    /// Target.
    pub target: Target,
    /// HBM tensors.
    pub hbm: Vec<HbmTensor>,
    /// Total HBM bytes.
    pub hbm_size: u64,
    /// Semaphore names, indexed by `SemId`.
    pub semaphores: Vec<String>,
    /// Streams, indexed by `Engine::index`.
    pub streams: Vec<Vec<BirInst>>,
    /// Highest SBUF byte used in any partition.
    pub sbuf_peak_bytes: u64,
}

impl Program {
    /// An empty program.
    pub fn new(kernel_name: impl Into<String>, target: Target) -> Self {
        Program {
            kernel_name: kernel_name.into(),
            target,
            hbm: Vec::new(),
            hbm_size: 0,
            semaphores: Vec::new(),
            streams: vec![Vec::new(); NUM_ENGINES],
            sbuf_peak_bytes: 0,
        }
    }

    /// The stream of an engine.
    pub fn stream(&self, e: Engine) -> &[BirInst] {
        self.streams.get(e.index()).map_or(&[], Vec::as_slice)
    }

    /// Total instruction count.
    pub fn num_insts(&self) -> usize {
        self.streams.iter().map(Vec::len).sum()
    }

    /// Bytes DMA instructions move to or from HBM (each element counted at its HBM dtype),
    /// saturating at `u64::MAX`.
    pub fn hbm_traffic_bytes(&self) -> u64 {
        self.streams.iter().flatten().map(|i| i.op.hbm_bytes()).fold(0, u64::saturating_add)
    }

    /// The HBM tensor with this name.
    pub fn hbm_tensor(&self, name: &str) -> Option<&HbmTensor> {
        self.hbm.iter().find(|t| t.name == name)
    }
}

/// An fp32 access pattern for tests.
#[cfg(test)]
pub(crate) fn test_ap(memory: Memory, start: u32, parts: u32, pstride: i64, offset: u64, dims: Vec<Dim>) -> HwAp {
    HwAp {
        memory,
        dtype: DType::Fp32,
        start_partition: start,
        num_partitions: parts,
        partition_stride: pstride,
        byte_offset: offset,
        dims,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::test_ap as ap;

    #[test]
    fn byte_region_of_ordinary_patterns() {
        let a = ap(Memory::Sbuf, 2, 2, 3, 4, vec![Dim::new(4, 2), Dim::new(1, 2)]);
        assert_eq!(a.byte_region(), (2, 6, 4, 4 + 6 * 4));
        let h = ap(Memory::Hbm, 0, 3, 10, 8, vec![Dim::new(-1, 2)]);
        assert_eq!(h.byte_region(), (0, 1, 8 - 4, 8 + 21 * 4));
    }

    #[test]
    fn byte_region_saturates_for_huge_strides() {
        let huge = vec![Dim::new(i64::MAX, u32::MAX); 4];
        let tiny = vec![Dim::new(i64::MIN, u32::MAX); 4];
        // HBM: the partition and free spans and the offset reach far past i64 both ways.
        assert_eq!(ap(Memory::Hbm, 0, u32::MAX, i64::MAX, u64::MAX, huge.clone()).byte_region().3, i64::MAX);
        assert_eq!(ap(Memory::Hbm, 0, u32::MAX, i64::MIN, 0, tiny.clone()).byte_region().2, i64::MIN);
        let (p0, p1, lo, hi) = ap(Memory::Hbm, 0, 2, i64::MIN, u64::MAX, huge.clone()).byte_region();
        assert_eq!((p0, p1, hi), (0, 1, i64::MAX));
        assert!(lo < hi);
        // On chip: partitions clamp to 0..=u32::MAX instead of truncating (a stride of 2^32
        // must not come back as partition 1).
        assert_eq!(ap(Memory::Sbuf, 0, 2, 1 << 32, 0, vec![]).byte_region().1, u32::MAX);
        let (p0, p1, lo, hi) = ap(Memory::Psum, u32::MAX, u32::MAX, i64::MIN, 0, tiny).byte_region();
        assert_eq!((p0, p1, lo, hi), (0, u32::MAX, i64::MIN, 4));
        let (p0, p1, lo, hi) = ap(Memory::Sbuf, 0, u32::MAX, i64::MAX, u64::MAX, huge.clone()).byte_region();
        assert_eq!((p0, p1, hi), (0, u32::MAX, i64::MAX));
        assert!(lo > 0);
        // The exact bounds the verifier uses are not clamped.
        let [p0, _, _, hi] = ap(Memory::Sbuf, 0, 2, -1, u64::MAX, huge.clone()).byte_region_wide();
        assert_eq!(p0, -1);
        assert!(hi > i128::from(u64::MAX));
        // Counts saturate too.
        let many = ap(Memory::Hbm, 0, u32::MAX, 0, 0, vec![Dim::new(0, u32::MAX); 4]);
        assert_eq!((many.free_elems(), many.num_elems()), (u64::MAX, u64::MAX));
        assert_eq!(ap(Memory::Sbuf, 0, 1, 1, 0, huge).free_extent(), (0, i64::MAX));
    }

    #[test]
    fn byte_counts_saturate() {
        let t = HbmTensor {
            name: "t".into(),
            shape: vec![u64::MAX, 3],
            dtype: DType::Fp32,
            address: 0,
            role: HbmRole::Input,
        };
        assert_eq!(t.num_bytes(), u64::MAX);
        let big = ap(Memory::Hbm, 0, u32::MAX, 0, 0, vec![Dim::new(0, u32::MAX); 4]);
        let fma = Op::DmaFma { dst: big.clone(), src0: big.clone(), src1: big.clone() };
        assert_eq!(fma.hbm_bytes(), u64::MAX);
        let gather = Op::DmaGather { dst: big.clone(), table: big.clone(), index: big };
        assert_eq!(gather.hbm_bytes(), u64::MAX);
    }
}
