//! BIR programs: engines, semaphores, hardware access patterns and instructions.

use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};

use penguin::{CastMode, DType, Dim, EngineAccumulationType, InstId, Memory, PerfMode, Target, TilePosition, TileSize};

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

impl HwAp {
    /// Elements per partition.
    pub fn free_elems(&self) -> u64 {
        self.dims.iter().map(|d| u64::from(d.num)).product()
    }

    /// Smallest and largest element offset of the free dims relative to the base.
    pub fn free_extent(&self) -> (i64, i64) {
        self.dims.iter().fold((0, 0), |(lo, hi), d| {
            let span = d.stride * (i64::from(d.num.max(1)) - 1);
            if span < 0 {
                (lo + span, hi)
            } else {
                (lo, hi + span)
            }
        })
    }

    /// The byte box this pattern touches: partitions `[p0, p1)` and bytes `[lo, hi)` within
    /// each partition (HBM: `p0 = 0, p1 = 1`, absolute bytes).
    pub fn byte_region(&self) -> (u32, u32, i64, i64) {
        let size = i64::from(self.dtype.size_bytes());
        let (mut lo, mut hi) = self.free_extent();
        let pspan = self.partition_stride * (i64::from(self.num_partitions.max(1)) - 1);
        if self.memory == Memory::Hbm {
            if pspan < 0 {
                lo += pspan
            } else {
                hi += pspan
            }
            let base = self.byte_offset as i64;
            (0, 1, base + lo * size, base + (hi + 1) * size)
        } else {
            let (plo, phi) = if pspan < 0 { (pspan, 0) } else { (0, pspan) };
            let p0 = (i64::from(self.start_partition) + plo).max(0) as u32;
            let p1 = (i64::from(self.start_partition) + phi + 1).max(0) as u32;
            let base = self.byte_offset as i64;
            (p0, p1, base + lo * size, base + (hi + 1) * size)
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
    /// Load the stationary operand (`K` partitions x `M`) into the PE array.
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
    /// Stream the moving operand through the array into PSUM.
    MultiplyMoving {
        /// PSUM result (`M` partitions x `N` fp32).
        dst: HwAp,
        /// Moving operand (`K` partitions x `N`).
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
    /// A DMA transfer with dtype conversion.
    DmaCopy {
        /// Destination.
        dst: HwAp,
        /// Source.
        src: HwAp,
        /// Rounding of a narrowing conversion.
        cast: CastMode,
    },
    /// An on-chip copy with dtype conversion (ACT/DVE/POOL).
    TensorCopy {
        /// Destination.
        dst: HwAp,
        /// Source.
        src: HwAp,
    },
    /// Fill with a value (ACT/DVE/POOL).
    Memset {
        /// Destination.
        dst: HwAp,
        /// The value.
        value: f64,
    },
}

impl Op {
    /// The text name.
    pub fn name(&self) -> &'static str {
        match self {
            Op::LoadStationary { .. } => "load_stationary",
            Op::MultiplyMoving { .. } => "multiply_moving",
            Op::DmaCopy { .. } => "dma_copy",
            Op::TensorCopy { .. } => "tensor_copy",
            Op::Memset { .. } => "memset",
        }
    }

    /// Every access pattern with whether it is written.
    pub fn accesses(&self) -> Vec<(&HwAp, bool)> {
        match self {
            Op::LoadStationary { src, .. } => vec![(src, false)],
            Op::MultiplyMoving { dst, src, .. } => vec![(dst, true), (src, false)],
            Op::DmaCopy { dst, src, .. } | Op::TensorCopy { dst, src } => vec![(dst, true), (src, false)],
            Op::Memset { dst, .. } => vec![(dst, true)],
        }
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
    /// Size in bytes.
    pub fn num_bytes(&self) -> u64 {
        self.shape.iter().product::<u64>() * u64::from(self.dtype.size_bytes())
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

    /// Bytes DMA instructions move to or from HBM (each element counted at its HBM dtype).
    pub fn hbm_traffic_bytes(&self) -> u64 {
        self.streams
            .iter()
            .flatten()
            .map(|i| match &i.op {
                Op::DmaCopy { dst, src, .. } => [dst, src]
                    .into_iter()
                    .filter(|ap| ap.memory == Memory::Hbm)
                    .map(|ap| u64::from(ap.num_partitions) * ap.free_elems() * u64::from(ap.dtype.size_bytes()))
                    .sum(),
                Op::LoadStationary { .. } | Op::MultiplyMoving { .. } | Op::TensorCopy { .. } | Op::Memset { .. } => 0,
            })
            .sum()
    }

    /// The HBM tensor with this name.
    pub fn hbm_tensor(&self, name: &str) -> Option<&HbmTensor> {
        self.hbm.iter().find(|t| t.name == name)
    }
}

fn inst_text(i: &BirInst) -> String {
    let mut s = String::from(i.op.name());
    match &i.op {
        Op::LoadStationary { src, perf_mode, tile_position, tile_size } => {
            let _ = write!(
                s,
                " {src} perf={perf_mode} pos=({},{}) size=({},{})",
                tile_position.row, tile_position.col, tile_size.rows, tile_size.cols
            );
        }
        Op::MultiplyMoving { dst, src, acc, perf_mode, tile_position, tile_size } => {
            let _ = write!(
                s,
                " {dst} <- {src} acc={acc} perf={perf_mode} pos=({},{}) size=({},{})",
                tile_position.row, tile_position.col, tile_size.rows, tile_size.cols
            );
        }
        Op::DmaCopy { dst, src, cast } => {
            let cast = match cast {
                CastMode::Rne => "rne",
                CastMode::Saturate => "saturate",
            };
            let _ = write!(s, " {dst} <- {src} cast={cast}");
        }
        Op::TensorCopy { dst, src } => {
            let _ = write!(s, " {dst} <- {src}");
        }
        Op::Memset { dst, value } => {
            let _ = write!(s, " {dst} <- {value}");
        }
    }
    for w in &i.waits {
        let _ = write!(s, " wait({}>={})", w.sem, w.value);
    }
    if let Some(sig) = i.signal {
        let _ = write!(s, " signal({sig})");
    }
    if let Some(o) = i.origin {
        let _ = write!(s, " ; {o}");
    }
    s
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "program {} target={}", self.kernel_name, self.target)?;
        for t in &self.hbm {
            let role = match t.role {
                HbmRole::Input => " input",
                HbmRole::Output => " output",
                HbmRole::Internal => "",
            };
            writeln!(f, "hbm {:?} {} {:?} @{}{role}", t.name, t.dtype, t.shape, t.address)?;
        }
        for (i, name) in self.semaphores.iter().enumerate() {
            writeln!(f, "sem s{i} {name:?}")?;
        }
        for e in Engine::all() {
            let stream = self.stream(e);
            if stream.is_empty() {
                continue;
            }
            writeln!(f, "stream {e}:")?;
            for (n, i) in stream.iter().enumerate() {
                writeln!(f, "  {n}: {}", inst_text(i))?;
            }
        }
        Ok(())
    }
}
