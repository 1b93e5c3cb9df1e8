//! The GEMM planner: `C[M, N] = A[M, K] @ B[K, N]` split into hardware-legal tiles.
//!
//! Tiles are 128 (M) x 128 (K) x 512 (N), ragged at the edges; no padding reaches the user.
//! The kernel's HBM tensors are `a` (`[M, K]`, or `[K, M]` when `lhs_transposed`), `b`
//! (`[K, N]`) in `input_dtype`, and the output `c` (`[M, N]`) in `out_dtype`. Operands are
//! cast to their matmul dtypes by the DMA that loads them; A is transposed on load by the
//! access pattern (partition = k, free = m).
//!
//! The `naive` schedule: for each m tile and n tile, for each k tile load the A^T tile and
//! the B tile into one of two SBUF buffers each, matmul into one PSUM accumulation group
//! (START on the first k tile, STOP on the last, through [`combine_matmult_tiles`]); then
//! copy PSUM to SBUF on ACT or DVE in turn (casting to the output dtype) and store to HBM.
//! Accumulation groups rotate over the 8 PSUM banks.
//!
//! Variants of the K split:
//! - **double row** (`perf_mode = double_row`, trn2/trn3): K is cut in chunks of 256 and each
//!   operand tile is `[P, 2, F]`: rows `k0 + p` and `k0 + P + p` of a chunk share partition
//!   `p` (`P = 128` for a full chunk). An odd K gets one zero row, set by a memset.
//! - **structured sparsity** (`N:M` along K of A, trn2/trn3): the PE's sparse matmul on the
//!   documented layout. The host compresses A by hardware groups of `4 x CR` dense rows
//!   (`CR` = [`SparsityPattern::compression_ratio`]; 1:2 and 2:4 run as 4:8) into `a`
//!   (`[K', M]` kept values in the stationary layout, `K' = 4 ceil(K / (4 CR))`) and
//!   `a_tags` (`[K', ceil(M / 4)]` int16 words, four 4-bit positions each; see [`SparseA`]). K is cut in chunks of
//!   `128 x CR` dense rows: one matmul takes a compressed stationary of 128 partitions, its
//!   `[128, 32]` tag words and a moving operand `[128, CR, N]` (partition `p` holds the `CR`
//!   consecutive rows from `p x CR`), so a sparse GEMM issues `1 / CR` of the dense matmuls
//!   and reads `1 / CR + 1 / (4 CR)` of dense A's bytes (2-byte values).
//! - **PE row tiling**: when K fits 64 rows (32 on trn2/trn3), consecutive output tiles use
//!   different row groups of the PE array (`tile_position` / `tile_size`) and their operands
//!   sit in the matching partitions, so independent matmuls can share the array.

use std::fmt;
use std::str::FromStr;

use penguin::looped::NestMark;
use penguin::{DType, Function, PerfMode, SparsityPattern, Target, TensorId};
use serde::{Deserialize, Serialize};

use crate::combine::check_double_row_dtypes;
use crate::error::CodegenError;
use crate::neuron::CodegenStats;

mod share;
mod sparse;
pub use share::{place_share, Share, Split};
pub use sparse::SparseA;

/// Rows of C per tile (PE columns / PSUM partitions).
pub const M_TILE: u64 = 128;
/// Contraction rows per matmul (SBUF partitions).
pub const K_TILE: u64 = 128;
/// Columns of C per tile (one PSUM bank of fp32).
pub const N_TILE: u64 = 512;

/// A loop nest for the GEMM (see the module doc of `schedule`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// Loop m, n, k; load both operand tiles every step.
    Naive,
    /// Load each m tile's K stripe of A^T once, each n tile's K stripe of B per m tile.
    Hoisted,
    /// Block M and N: load the stripes of a block once, run every pair in the block.
    BlockedMn,
    /// Block M, N and K: K-block partials accumulate in an fp32 SBUF result block.
    BlockedMnk,
    /// Search schedules, block sizes and loop orders with the cycle model.
    #[default]
    Auto,
}

impl Schedule {
    /// Every schedule.
    pub const ALL: [Schedule; 5] =
        [Schedule::Naive, Schedule::Hoisted, Schedule::BlockedMn, Schedule::BlockedMnk, Schedule::Auto];

    /// The text name.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Naive => "naive",
            Schedule::Hoisted => "hoisted",
            Schedule::BlockedMn => "blocked-mn",
            Schedule::BlockedMnk => "blocked-mnk",
            Schedule::Auto => "auto",
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for an unknown schedule name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown schedule `{0}` (expected naive, hoisted, blocked-mn, blocked-mnk or auto)")]
pub struct UnknownSchedule(pub String);

impl FromStr for Schedule {
    type Err = UnknownSchedule;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Schedule::ALL.into_iter().find(|x| x.name() == s).ok_or_else(|| UnknownSchedule(s.to_string()))
    }
}

/// Which operand's block loop is outermost in the blocked schedules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoopOrder {
    /// M blocks outside, N blocks inside: each A block is loaded once.
    #[default]
    MOuter,
    /// N blocks outside, M blocks inside: each B block is loaded once.
    NOuter,
}

impl LoopOrder {
    /// The text name.
    pub fn name(self) -> &'static str {
        match self {
            LoopOrder::MOuter => "m-outer",
            LoopOrder::NOuter => "n-outer",
        }
    }
}

/// The error for an unknown loop order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown loop order `{0}` (expected m-outer or n-outer)")]
pub struct UnknownLoopOrder(pub String);

impl FromStr for LoopOrder {
    type Err = UnknownLoopOrder;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [LoopOrder::MOuter, LoopOrder::NOuter]
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| UnknownLoopOrder(s.to_string()))
    }
}

/// Block sizes in elements of M, N and K (rounded up to whole tiles when planned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BlockSizes {
    /// Rows of C per block.
    pub m: u64,
    /// Columns of C per block.
    pub n: u64,
    /// Contraction rows per block (blocked-mnk).
    pub k: u64,
}

impl Default for BlockSizes {
    fn default() -> Self {
        BlockSizes { m: 4 * M_TILE, n: 2 * N_TILE, k: 8 * K_TILE }
    }
}

impl BlockSizes {
    /// The default blocks of a schedule: `blocked-mnk` keeps only K blocks of its operands,
    /// so it affords twice the M and N block of the whole-K-stripe schedules (more reuse per
    /// byte loaded) with half their K block.
    pub fn for_schedule(schedule: Schedule) -> BlockSizes {
        match schedule {
            Schedule::BlockedMnk => BlockSizes { m: 8 * M_TILE, n: 4 * N_TILE, k: 4 * K_TILE },
            Schedule::Naive | Schedule::Hoisted | Schedule::BlockedMn | Schedule::Auto => BlockSizes::default(),
        }
    }
}

/// What to plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GemmConfig {
    /// Rows of A and C.
    pub m: u64,
    /// Contraction length.
    pub k: u64,
    /// Columns of B and C.
    pub n: u64,
    /// Matmul dtype of A.
    pub lhs_dtype: DType,
    /// Matmul dtype of B.
    pub rhs_dtype: DType,
    /// Dtype of C.
    pub out_dtype: DType,
    /// Dtype of A and B in HBM (cast to the matmul dtypes on load).
    pub input_dtype: DType,
    /// The target.
    pub target: Target,
    /// The loop nest.
    pub schedule: Schedule,
    /// A is given as `[K, M]`.
    pub lhs_transposed: bool,
    /// PE perf mode: `double_row` packs two contraction rows per partition (trn2/trn3).
    pub perf_mode: PerfMode,
    /// Structured sparsity of A along K (trn2/trn3); A then travels as compressed values and
    /// packed 4-bit tags (see [`SparseA`]).
    pub sparsity: Option<SparsityPattern>,
    /// Block sizes of the blocked schedules.
    pub blocks: BlockSizes,
    /// Loop order of the blocked schedules.
    pub order: LoopOrder,
    /// How A `[M, K]` is transposed when loaded: `Some(true)` on the PE through PSUM (natural,
    /// contiguous loads), `Some(false)` by the DMA (trn2/trn3 only); `None` picks the target's
    /// default (PE on trn1, DMA on trn2/trn3). Ignored when A is given as `[K, M]` and by
    /// `naive` in double row: see [`GemmConfig::transposes_lhs_on_pe`]. `Some(true)` is
    /// refused with structured sparsity (the compressed A is always read by the DMA).
    pub pe_transpose: Option<bool>,
}

impl GemmConfig {
    /// A dense GEMM with both operands in `dtype`, fp32 inputs and output, naive schedule
    /// (`auto` needs a cost model: see [`crate::AutoSearch`]).
    pub fn new(m: u64, k: u64, n: u64, dtype: DType, target: Target) -> Self {
        GemmConfig {
            m,
            k,
            n,
            lhs_dtype: dtype,
            rhs_dtype: dtype,
            out_dtype: DType::Fp32,
            input_dtype: DType::Fp32,
            target,
            schedule: Schedule::Naive,
            lhs_transposed: false,
            perf_mode: PerfMode::None,
            sparsity: None,
            blocks: BlockSizes::default(),
            order: LoopOrder::MOuter,
            pe_transpose: None,
        }
    }

    /// Check shapes and dtypes against the target.
    pub fn validate(&self) -> Result<(), CodegenError> {
        const LIMIT: u64 = 1 << 20;
        for (name, v) in [("m", self.m), ("k", self.k), ("n", self.n)] {
            if v == 0 || v > LIMIT {
                return Err(CodegenError::BadGemm(format!("{name} = {v} is out of range (1..={LIMIT})")));
            }
        }
        if self.pe_transpose == Some(false) && self.target == Target::Trn1 && !self.lhs_transposed {
            return Err(CodegenError::BadGemm("trn1 has no DMA transpose: A is transposed on the PE".into()));
        }
        for (name, v) in [("block-m", self.blocks.m), ("block-n", self.blocks.n), ("block-k", self.blocks.k)] {
            if v == 0 || v > LIMIT {
                return Err(CodegenError::BadGemm(format!("--{name} = {v} is out of range (1..={LIMIT})")));
            }
        }
        match self.perf_mode {
            PerfMode::None => {}
            PerfMode::DoubleRow if self.target.info().double_row => {
                if self.sparsity.is_some() {
                    return Err(CodegenError::BadGemm(
                        "structured sparsity cannot be combined with perf_mode=`double_row`".into(),
                    ));
                }
                check_double_row_dtypes(self.lhs_dtype, self.rhs_dtype)?;
            }
            PerfMode::DoubleRow | PerfMode::DoubleRowGen3 => {
                return Err(CodegenError::BadGemm(format!(
                    "perf_mode=`{}` is not supported on {}",
                    self.perf_mode, self.target
                )));
            }
        }
        if let Some(p) = self.sparsity {
            if !p.is_supported() {
                return Err(CodegenError::BadGemm("sparsity must be one of 1:2, 2:4, 4:8, 4:12, 4:16".into()));
            }
            if !self.target.info().sparse_matmul {
                return Err(CodegenError::BadGemm(format!(
                    "structured sparsity {p} needs the PE's sparse matmul (NeuronCore-v3 on: trn2, trn3); {} has none",
                    self.target
                )));
            }
            if self.pe_transpose == Some(true) {
                return Err(CodegenError::BadGemm(format!(
                    "A cannot be transposed on the PE (`--transpose pe`) with structured sparsity {p}: the host \
                     compresses A into kept values and tags, which the DMA loads in the stationary layout (use \
                     `--transpose dma` or leave it out)"
                )));
            }
        }
        if (self.lhs_dtype == DType::Uint8) != (self.rhs_dtype == DType::Uint8) {
            // (With perf_mode=double_row the seed's message was given above.)
            return Err(CodegenError::BadGemm(format!(
                "uint8 operands multiply only with uint8, but A is {} and B is {} (make both uint8 or both float)",
                self.lhs_dtype, self.rhs_dtype
            )));
        }
        if !self.input_dtype.is_float() {
            return Err(CodegenError::BadGemm(format!(
                "input dtype {} is not supported (use fp32, bf16, fp16 or an fp8 type)",
                self.input_dtype
            )));
        }
        for (what, d) in [("lhs", self.lhs_dtype), ("rhs", self.rhs_dtype), ("input", self.input_dtype)] {
            if what != "input" && !d.is_float() && d != DType::Uint8 {
                return Err(CodegenError::BadGemm(format!(
                    "{what} dtype {d} is not supported for a GEMM (use fp32, bf16, fp16, an fp8 type or uint8)"
                )));
            }
            if d == DType::Fp8e4m3fn && !self.target.info().fp8e4m3fn {
                return Err(CodegenError::BadGemm(format!(
                    "{what} dtype fp8e4m3fn (OCP, max 448) is only supported on trn3; {} uses fp8e4m3 (IEEE-like, max 240)",
                    self.target
                )));
            }
        }
        if !matches!(self.out_dtype, DType::Fp32 | DType::Bf16 | DType::Fp16) {
            return Err(CodegenError::BadGemm(format!(
                "out dtype {} is not supported (use fp32, bf16 or fp16)",
                self.out_dtype
            )));
        }
        Ok(())
    }

    /// Whether A is transposed on the PE (see [`GemmConfig::pe_transpose`]).
    pub fn transposes_lhs_on_pe(&self) -> bool {
        // Double row transposes whole natural stripes (the stripe schedules), two transposes
        // per 256-row chunk.
        let double_row_stripes = self.perf_mode == PerfMode::None || self.schedule != Schedule::Naive;
        !self.lhs_transposed
            && self.sparsity.is_none()
            && double_row_stripes
            && self.pe_transpose.unwrap_or(self.target == Target::Trn1)
    }

    /// Shape of the HBM tensor `a`.
    pub fn lhs_shape(&self) -> Vec<u64> {
        if self.lhs_transposed {
            vec![self.k, self.m]
        } else {
            vec![self.m, self.k]
        }
    }
}

/// A planned GEMM kernel, with the facts downstream code needs about it (its tiling, blocks
/// and loop order, and which tensor plays which role), so nothing after the planner
/// re-derives them from the configuration or looks tensors up by name.
#[derive(Clone, Debug)]
pub struct GemmPlan {
    /// The verified function.
    pub function: Function,
    /// What the codegen layer counted.
    pub stats: CodegenStats,
    /// What was planned.
    pub config: GemmConfig,
    /// Where each iteration of the schedule's loops starts in [`Self::function`]'s program
    /// order ([`NestMark`]; see the `schedule` module doc for each schedule's levels): what
    /// [`Self::looped`] rolls along.
    pub nest: Vec<NestMark>,
    /// How C and K are cut: the K chunks, the output tile grid, the edge tiles, the blocks
    /// and the loop order.
    pub tiling: Tiling,
    /// The HBM tensors of [`Self::function`] by role.
    pub tensors: GemmTensors,
}

/// The HBM tensors of a planned GEMM by role (ids in the plan's function; the tensor's name
/// is `function.tensor(id).name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmTensors {
    /// A: `[M, K]` (`[K, M]` when `lhs_transposed`), or the compressed kept values of a
    /// sparse A (`[K', M]`, see [`SparseA`]).
    pub a: TensorId,
    /// The packed 4-bit positions of a sparse A's kept values (`[K', ceil(M / 4)]` int16
    /// words), when A is sparse.
    pub a_tags: Option<TensorId>,
    /// B: `[K, N]`.
    pub b: TensorId,
    /// C: `[M, N]`, the output.
    pub c: TensorId,
}

/// How a GEMM is cut into tiles and blocks: what the planner plans along, and what a report,
/// a timeline or an extrapolation needs to know of it. [`Tiling::of`] gives it for any
/// configuration (an extrapolated GEMM has no plan of its own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tiling {
    /// The K sub-tiles of every accumulation group ([`k_chunks`]).
    pub k_chunks: Vec<KChunk>,
    /// K padded as the chunks cover it (even in double row, whole hardware groups of
    /// `4 x CR` rows when sparse).
    pub k_total: u64,
    /// Output tiles along M and N.
    pub tiles: [u64; 2],
    /// Rows x columns of a full output tile (smaller than [`M_TILE`] x [`N_TILE`] when C is).
    pub tile_shape: [u64; 2],
    /// Rows x columns of the last (bottom-right) output tile, the ragged edge.
    pub edge_tile_shape: [u64; 2],
    /// Block sizes in elements of the blocked schedules (`blocked-mn` blocks the whole K:
    /// its `k` is K); `None` for the others.
    pub blocks: Option<BlockSizes>,
    /// The outer block loop of the blocked schedules; `None` for the others.
    pub loop_order: Option<LoopOrder>,
}

impl Tiling {
    /// The tiling of `cfg` as planned.
    pub fn of(cfg: &GemmConfig) -> Tiling {
        let (k_chunks, k_total) = k_chunks(cfg);
        let edge = |total: u64, tile: u64| match total % tile {
            0 => total.min(tile),
            r => r,
        };
        let blocked = matches!(cfg.schedule, Schedule::BlockedMn | Schedule::BlockedMnk);
        let k = if cfg.schedule == Schedule::BlockedMnk { cfg.blocks.k } else { cfg.k };
        Tiling {
            k_chunks,
            k_total,
            tiles: [cfg.m.div_ceil(M_TILE), cfg.n.div_ceil(N_TILE)],
            tile_shape: [cfg.m.min(M_TILE), cfg.n.min(N_TILE)],
            edge_tile_shape: [edge(cfg.m, M_TILE), edge(cfg.n, N_TILE)],
            blocks: blocked.then_some(BlockSizes { k, ..cfg.blocks }),
            loop_order: blocked.then_some(cfg.order),
        }
    }

    /// Contraction rows of a full K step (256 in double row); 0 without K steps.
    pub fn k_step_rows(&self) -> u64 {
        self.k_chunks.first().map_or(0, |c| u64::from(c.len))
    }
}

impl GemmPlan {
    /// The function rolled along the schedule's own loop nest ([`Self::nest`]; see
    /// `penguin::looped::nest`): a short prologue, loops over the schedule's iterations whose
    /// bodies hold the inner loops, the peeled iterations that differ. Outer levels are merged
    /// into deeper ones when that prints shorter
    /// ([`penguin::LoopedFunction::roll_nest_shortest`]; [`Self::looped_nest`] keeps every
    /// level). Without marks (or with marks that do not fit the function) the greedy
    /// [`penguin::LoopedFunction::roll`]. Expanding it gives [`Self::function`] back exactly.
    pub fn looped(&self) -> penguin::LoopedFunction {
        if self.nest.is_empty() {
            return penguin::LoopedFunction::roll(&self.function);
        }
        penguin::LoopedFunction::roll_nest_shortest(&self.function, &self.nest)
            .unwrap_or_else(|_| penguin::LoopedFunction::roll(&self.function))
    }

    /// The function rolled along every level of the schedule's nest
    /// ([`penguin::LoopedFunction::roll_nest`]; the greedy roll without marks).
    pub fn looped_nest(&self) -> penguin::LoopedFunction {
        penguin::LoopedFunction::roll_nest(&self.function, &self.nest)
            .unwrap_or_else(|_| penguin::LoopedFunction::roll(&self.function))
    }
}

/// `[start, start + len)` pieces of `0..total` of at most `tile` each.
pub(crate) fn tiles(total: u64, tile: u64) -> impl Iterator<Item = (u64, u32)> {
    (0..total.div_ceil(tile)).map(move |i| tile_at(total, tile, i as usize))
}

/// Piece `i` of [`tiles`]`(total, tile)`.
pub(crate) fn tile_at(total: u64, tile: u64, i: usize) -> (u64, u32) {
    let start = i as u64 * tile;
    (start, tile.min(total - start) as u32)
}

/// One K sub-tile of the planned loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KChunk {
    /// First dense contraction row.
    pub k0: u64,
    /// Dense contraction rows covered, padding included.
    pub len: u32,
    /// Stationary partitions (`len`, `len / 2` in double row, `len / CR` sparse: the
    /// compressed rows, which are also the moving operand's partitions).
    pub parts: u32,
    /// Real rows of K in the chunk (`len` minus padding).
    pub real: u32,
}

/// The K sub-tiles of a GEMM and the padded K extent of each accumulation group.
pub fn k_chunks(cfg: &GemmConfig) -> (Vec<KChunk>, u64) {
    let (total, chunk) = match (cfg.perf_mode, cfg.sparsity) {
        (PerfMode::DoubleRow, _) => (cfg.k + cfg.k % 2, 2 * K_TILE),
        (_, Some(p)) => {
            let group = u64::from(p.group_rows());
            (cfg.k.div_ceil(group) * group, K_TILE * u64::from(p.compression_ratio()))
        }
        _ => (cfg.k, K_TILE),
    };
    let chunks = tiles(total, chunk)
        .map(|(k0, len)| {
            let parts = match (cfg.perf_mode, cfg.sparsity) {
                (PerfMode::DoubleRow, _) => len / 2,
                (_, Some(p)) => len / p.compression_ratio(),
                _ => len,
            };
            KChunk { k0, len, parts, real: (cfg.k - k0).min(u64::from(len)) as u32 }
        })
        .collect();
    (chunks, total)
}

/// Where dense row `r` of a double-row chunk of `len` rows lives: `(partition, slot)`.
pub fn double_row_position(r: u32, len: u32) -> (u32, u32) {
    let parts = len.div_ceil(2);
    (r % parts, r / parts)
}

/// Pack a row-major `[k, f]` operand the way double row lays it out: one `[P, 2, f]` block
/// per K chunk of [`k_chunks`] (`P` = half the chunk, padded rows zero).
pub fn pack_double_row(op: &[f32], k: u64, f: u64) -> Vec<Vec<f32>> {
    let mut cfg = GemmConfig::new(1, k, 1, DType::Fp8e4m3, Target::Trn2);
    cfg.perf_mode = PerfMode::DoubleRow;
    let f = f as usize;
    k_chunks(&cfg)
        .0
        .iter()
        .map(|c| {
            let mut block = vec![0.0f32; c.parts as usize * 2 * f];
            for r in 0..c.real {
                let (p, s) = double_row_position(r, c.len);
                let row = (c.k0 + u64::from(r)) as usize;
                let at = (p as usize * 2 + s as usize) * f;
                block[at..at + f].copy_from_slice(&op[row * f..(row + 1) * f]);
            }
            block
        })
        .collect()
}

/// Undo [`pack_double_row`].
pub fn unpack_double_row(blocks: &[Vec<f32>], k: u64, f: u64) -> Vec<f32> {
    let mut cfg = GemmConfig::new(1, k, 1, DType::Fp8e4m3, Target::Trn2);
    cfg.perf_mode = PerfMode::DoubleRow;
    let f = f as usize;
    let mut op = vec![0.0f32; k as usize * f];
    for (c, block) in k_chunks(&cfg).0.iter().zip(blocks) {
        for r in 0..c.real {
            let (p, s) = double_row_position(r, c.len);
            let row = (c.k0 + u64::from(r)) as usize;
            let at = (p as usize * 2 + s as usize) * f;
            op[row * f..(row + 1) * f].copy_from_slice(&block[at..at + f]);
        }
    }
    op
}

#[cfg(test)]
mod tests;
