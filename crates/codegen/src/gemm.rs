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
//! - **structured sparsity** (`N:M` along K of A): the host compresses A into `a`
//!   (`[M, K * N / M]` kept values) and `a_tags` (`[M, K * N / M]` int16: the position of each
//!   kept value inside its group of M; see [`SparseA`]). K is cut in chunks of
//!   `floor(128 / M) * M` dense rows (`* N / M` compressed stationary partitions).
//! - **PE row tiling**: when K fits 64 rows (32 on trn2/trn3), consecutive output tiles use
//!   different row groups of the PE array (`tile_position` / `tile_size`) and their operands
//!   sit in the matching partitions, so independent matmuls can share the array.

use std::fmt;
use std::str::FromStr;

use penguin::{
    AccessPattern, ComputeEngine, DType, Dim, DmaCopyData, Function, GeneratedBuilder, InstData, InstTile, Memory,
    MemsetData, NDTile, PerfMode, SparsityPattern, Target, TensorCopyData, TensorId, TilePosition, TileSize,
};
use serde::{Deserialize, Serialize};

use crate::combine::{
    check_double_row_dtypes, combine_matmult_tiles, combine_sparse_matmult_tiles, MatMultAccumulation,
    MatMultSparseSubTile, MatMultSubTile,
};
use crate::error::CodegenError;
use crate::neuron::{CodegenStats, NeuronCodegen};

/// Rows of C per tile (PE columns / PSUM partitions).
pub const M_TILE: u64 = 128;
/// Contraction rows per matmul (SBUF partitions).
pub const K_TILE: u64 = 128;
/// Columns of C per tile (one PSUM bank of fp32).
pub const N_TILE: u64 = 512;

/// A loop nest for the GEMM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// Loop m, n, k; load both operand tiles every step.
    #[default]
    Naive,
}

impl Schedule {
    /// The text name.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Naive => "naive",
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for a schedule name that is unknown or not available yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("schedule `{0}` is not available (available: naive)")]
pub struct UnknownSchedule(pub String);

impl FromStr for Schedule {
    type Err = UnknownSchedule;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "naive" => Ok(Schedule::Naive),
            _ => Err(UnknownSchedule(s.to_string())),
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
    /// Structured sparsity of A along K; A then travels as compressed values + int16 tags.
    pub sparsity: Option<SparsityPattern>,
}

impl GemmConfig {
    /// A dense GEMM with both operands in `dtype`, fp32 inputs and output, naive schedule.
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
        match self.perf_mode {
            PerfMode::None => {}
            PerfMode::DoubleRow if self.target.info().double_row => {
                check_double_row_dtypes(self.lhs_dtype, self.rhs_dtype)?;
                if self.sparsity.is_some() {
                    return Err(CodegenError::BadGemm(
                        "structured sparsity cannot be combined with perf_mode=`double_row`".into(),
                    ));
                }
            }
            PerfMode::DoubleRow | PerfMode::DoubleRowGen3 => {
                return Err(CodegenError::BadGemm(format!(
                    "perf_mode=`{}` is not supported on {}",
                    self.perf_mode, self.target
                )));
            }
        }
        if self.sparsity.is_some_and(|p| !p.is_supported()) {
            return Err(CodegenError::BadGemm("sparsity must be one of 1:2, 2:4, 4:8, 4:12, 4:16".into()));
        }
        if (self.lhs_dtype == DType::Uint8) != (self.rhs_dtype == DType::Uint8) {
            return Err(CodegenError::DoubleRow(crate::combine::DOUBLE_ROW_UINT8_ONLY));
        }
        for (what, d) in [("lhs", self.lhs_dtype), ("rhs", self.rhs_dtype)] {
            if !d.is_float() && d != DType::Uint8 {
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
        if !matches!(self.input_dtype, DType::Fp32 | DType::Bf16 | DType::Fp16) {
            return Err(CodegenError::BadGemm(format!(
                "input dtype {} is not supported (use fp32, bf16 or fp16)",
                self.input_dtype
            )));
        }
        Ok(())
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

/// A planned GEMM kernel.
#[derive(Clone, Debug)]
pub struct GemmPlan {
    /// The verified function.
    pub function: Function,
    /// What the codegen layer counted.
    pub stats: CodegenStats,
    /// What was planned.
    pub config: GemmConfig,
}

/// `[start, start + len)` pieces of `0..total` of at most `tile` each.
fn tiles(total: u64, tile: u64) -> impl Iterator<Item = (u64, u32)> {
    (0..total.div_ceil(tile)).map(move |i| (i * tile, (tile.min(total - i * tile)) as u32))
}

/// One K sub-tile of the planned loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KChunk {
    /// First dense contraction row.
    pub k0: u64,
    /// Dense contraction rows covered, padding included.
    pub len: u32,
    /// Stationary partitions (`len`, `len / 2` in double row, `len * N / M` sparse).
    pub parts: u32,
    /// Real rows of K in the chunk (`len` minus padding).
    pub real: u32,
}

/// The K sub-tiles of a GEMM and the padded K extent of each accumulation group.
pub fn k_chunks(cfg: &GemmConfig) -> (Vec<KChunk>, u64) {
    let (total, chunk) = match (cfg.perf_mode, cfg.sparsity) {
        (PerfMode::DoubleRow, _) => (cfg.k + cfg.k % 2, 2 * K_TILE),
        (_, Some(p)) => (cfg.k.div_ceil(u64::from(p.m)) * u64::from(p.m), K_TILE / u64::from(p.m) * u64::from(p.m)),
        _ => (cfg.k, K_TILE),
    };
    let chunks = tiles(total, chunk)
        .map(|(k0, len)| {
            let parts = match (cfg.perf_mode, cfg.sparsity) {
                (PerfMode::DoubleRow, _) => len / 2,
                (_, Some(p)) => len / p.m * p.n,
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

/// A compressed `N:M`-sparse A: per row, the kept values of every group of M along K, and
/// their positions inside the group.
///
/// Layout: `values` and `tags` are row-major `[M, K' = ceil(K / M) * N]`. Group `g` of row `i`
/// (dense columns `g*M .. g*M + M`) owns compressed columns `g*N .. g*N + N`; column
/// `g*N + j` holds the `j`-th kept value (in increasing column order) and its tag is its
/// column inside the group. Groups with fewer than N non-zeros are filled with zeros tagged
/// with the first unused positions, so every tag in a group is distinct.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseA {
    /// Rows of A.
    pub rows: u64,
    /// Dense K.
    pub k: u64,
    /// The pattern.
    pub pattern: SparsityPattern,
    /// Kept values, `[rows, K']`.
    pub values: Vec<f32>,
    /// Positions inside the group, `[rows, K']`.
    pub tags: Vec<i16>,
}

impl SparseA {
    /// Compressed columns per row.
    pub fn cols(k: u64, pattern: SparsityPattern) -> u64 {
        k.div_ceil(u64::from(pattern.m)) * u64::from(pattern.n)
    }

    /// Compress a row-major `[rows, k]` A, refusing one that breaks the pattern with the first
    /// offending row and K group.
    pub fn compress(a: &[f32], rows: u64, k: u64, pattern: SparsityPattern) -> Result<SparseA, CodegenError> {
        let (n, m) = (pattern.n as usize, pattern.m as usize);
        let cols = Self::cols(k, pattern) as usize;
        let mut values = vec![0.0f32; rows as usize * cols];
        let mut tags = vec![0i16; rows as usize * cols];
        for i in 0..rows as usize {
            let row = &a[i * k as usize..(i + 1) * k as usize];
            for (g, group) in row.chunks(m).enumerate() {
                let kept: Vec<usize> = (0..group.len()).filter(|&j| group[j] != 0.0).collect();
                if kept.len() > n {
                    let first = (g * m) as u64;
                    return Err(CodegenError::NotSparse {
                        pattern,
                        row: i as u64,
                        group: g as u64,
                        first,
                        end: first + group.len() as u64,
                        nonzeros: kept.len() as u32,
                    });
                }
                let mut positions = kept.clone();
                positions.extend((0..m).filter(|j| !kept.contains(j)).take(n - kept.len()));
                positions[..].sort_unstable();
                for (j, &pos) in positions.iter().enumerate() {
                    let at = i * cols + g * n + j;
                    values[at] = group.get(pos).copied().unwrap_or(0.0);
                    tags[at] = pos as i16;
                }
            }
        }
        Ok(SparseA { rows, k, pattern, values, tags })
    }

    /// The dense `[rows, k]` matrix this represents.
    pub fn decompress(&self) -> Vec<f32> {
        let (n, m) = (self.pattern.n as usize, self.pattern.m as usize);
        let cols = Self::cols(self.k, self.pattern) as usize;
        let k = self.k as usize;
        let mut dense = vec![0.0f32; self.rows as usize * k];
        for i in 0..self.rows as usize {
            for c in 0..cols {
                let col = c / n * m + self.tags[i * cols + c] as usize;
                if col < k {
                    dense[i * k + col] += self.values[i * cols + c];
                }
            }
        }
        dense
    }
}

struct Buffers {
    lhs: [TensorId; 2],
    rhs: [TensorId; 2],
    tags: Option<[TensorId; 2]>,
    out: [TensorId; 2],
    psum: Vec<TensorId>,
}

struct Planner<'a> {
    cg: NeuronCodegen<GeneratedBuilder>,
    cfg: &'a GemmConfig,
    a: TensorId,
    a_tags: Option<TensorId>,
    b: TensorId,
    c: TensorId,
    bufs: Buffers,
    pack: u32,
    kstep: usize,
    group: usize,
}

/// Plan, emit and verify a GEMM kernel.
pub fn plan_gemm(cfg: &GemmConfig) -> Result<GemmPlan, CodegenError> {
    cfg.validate()?;
    let mut cg = NeuronCodegen::new(GeneratedBuilder::new("gemm"), cfg.target, "gemm");
    let (a, a_tags) = match cfg.sparsity {
        Some(p) => {
            let shape = vec![cfg.m, SparseA::cols(cfg.k, p)];
            (cg.add_input("a", shape.clone(), cfg.input_dtype)?, Some(cg.add_input("a_tags", shape, DType::Int16)?))
        }
        None => (cg.add_input("a", cfg.lhs_shape(), cfg.input_dtype)?, None),
    };
    let b = cg.add_input("b", vec![cfg.k, cfg.n], cfg.input_dtype)?;
    let c = cg.add_output("c", vec![cfg.m, cfg.n], cfg.out_dtype)?;
    let pack = if cfg.perf_mode == PerfMode::DoubleRow { 2 } else { 1 };
    let nd = |free: u64, dtype| NDTile { partitions: 128, free: vec![(free * u64::from(pack)) as u32], dtype };
    let two = |cg: &mut NeuronCodegen<GeneratedBuilder>, name: &str, free: u64, dtype| -> Result<[TensorId; 2], CodegenError> {
        Ok([cg.alloc_sbuf(&format!("{name}0"), &nd(free, dtype))?, cg.alloc_sbuf(&format!("{name}1"), &nd(free, dtype))?])
    };
    let lhs = two(&mut cg, "lhs_t", M_TILE, cfg.lhs_dtype)?;
    let rhs = two(&mut cg, "rhs", N_TILE, cfg.rhs_dtype)?;
    let tags = match cfg.sparsity {
        Some(_) => Some(two(&mut cg, "tags_t", M_TILE, DType::Int16)?),
        None => None,
    };
    let out_nd = NDTile { partitions: 128, free: vec![N_TILE as u32], dtype: cfg.out_dtype };
    let out = [cg.alloc_sbuf("out0", &out_nd)?, cg.alloc_sbuf("out1", &out_nd)?];
    let psum = (0..cfg.target.info().psum_num_banks)
        .map(|bank| cg.alloc_psum_bank(&format!("psum{bank}"), bank, 128))
        .collect::<Result<_, _>>()?;
    let mut p = Planner {
        cg,
        cfg,
        a,
        a_tags,
        b,
        c,
        bufs: Buffers { lhs, rhs, tags, out, psum },
        pack,
        kstep: 0,
        group: 0,
    };
    match cfg.schedule {
        Schedule::Naive => p.emit_naive()?,
    }
    let mut cg = p.cg;
    cg.finalize_kernel()?;
    let stats = cg.stats();
    let function = cg.finalize()?;
    Ok(GemmPlan { function, stats, config: cfg.clone() })
}

fn on_chip(tensor: TensorId, memory: Memory, dtype: DType, parts: u32, free: u32) -> InstTile {
    InstTile { tensor, memory, dtype, ap: AccessPattern::on_chip(0, parts, 0, free) }
}

fn hbm(tensor: TensorId, dtype: DType, ap: AccessPattern) -> InstTile {
    InstTile { tensor, memory: Memory::Hbm, dtype, ap }
}

/// PE row tiling for a contraction of `k` rows: `(rows per tile, positions)`.
fn row_tiling(cfg: &GemmConfig) -> (u32, u32) {
    let dense = cfg.perf_mode == PerfMode::None && cfg.sparsity.is_none();
    if dense && cfg.k <= 32 && cfg.target.info().pe_tile_32 {
        (32, 4)
    } else if dense && cfg.k <= 64 {
        (64, 2)
    } else {
        (128, 1)
    }
}

impl Planner<'_> {
    fn dma(&mut self, dst: InstTile, src: InstTile) -> Result<(), CodegenError> {
        self.cg.process_new_neuroninst(InstData::DmaCopy(DmaCopyData { dst, src, cast: penguin::CastMode::Rne }))?;
        Ok(())
    }

    fn memset_zero(&mut self, dst: InstTile) -> Result<(), CodegenError> {
        self.cg.process_new_neuroninst(InstData::Memset(MemsetData { engine: ComputeEngine::Pool, dst, value: 0.0 }))?;
        Ok(())
    }

    /// The A^T window of dense rows `[k0, k0 + rows)` and columns `[m0, m0 + msz)` in HBM.
    fn lhs_src(&self, m0: u64, msz: u32, k0: u64, rows: u32) -> InstTile {
        let ap = if self.cfg.lhs_transposed {
            AccessPattern::hbm_rows(self.cfg.m, k0, rows, m0, msz)
        } else {
            AccessPattern::hbm_cols(self.cfg.k, m0, msz, k0, rows)
        };
        hbm(self.a, self.cfg.input_dtype, ap)
    }

    fn rhs_src(&self, n0: u64, nsz: u32, k0: u64, rows: u32) -> InstTile {
        hbm(self.b, self.cfg.input_dtype, AccessPattern::hbm_rows(self.cfg.n, k0, rows, n0, nsz))
    }

    /// An operand buffer view: `parts` partitions from `start`, and per partition either one
    /// run of `free` elements or (double row) `[2, free]` with the slot stride `slot`.
    fn operand(&self, tensor: TensorId, dtype: DType, start: u32, parts: u32, free: u32, slot: u32) -> InstTile {
        let dims = if self.pack == 2 { vec![Dim::new(i64::from(slot), 2), Dim::new(1, free)] } else { vec![Dim::new(1, free)] };
        let ap = AccessPattern { start_partition: start, partitions: Dim::new(1, parts), offset: 0, free: dims };
        InstTile { tensor, memory: Memory::Sbuf, dtype, ap }
    }

    /// Load one operand tile: dense rows go to partitions `start..`; in double row, slot `s`
    /// of partition `p` gets row `k0 + s * P + p`, and missing rows are zeroed first.
    fn load(
        &mut self,
        tensor: TensorId,
        dtype: DType,
        start: u32,
        chunk: KChunk,
        free: u32,
        slot_stride: u32,
        src: impl Fn(&Self, u64, u32) -> InstTile,
    ) -> Result<InstTile, CodegenError> {
        if self.pack == 1 {
            let dst = InstTile { tensor, memory: Memory::Sbuf, dtype, ap: AccessPattern::on_chip(start, chunk.real, 0, free) };
            self.dma(dst, src(self, chunk.k0, chunk.real))?;
            return Ok(self.operand(tensor, dtype, start, chunk.real, free, slot_stride));
        }
        for s in 0..2u32 {
            let rows = chunk.real.saturating_sub(s * chunk.parts).min(chunk.parts);
            let at = |parts: u32| InstTile {
                tensor,
                memory: Memory::Sbuf,
                dtype,
                ap: AccessPattern::on_chip(0, parts, i64::from(s * slot_stride), free),
            };
            if rows < chunk.parts {
                self.memset_zero(at(chunk.parts))?;
            }
            if rows > 0 {
                self.dma(at(rows), src(self, chunk.k0 + u64::from(s * chunk.parts), rows))?;
            }
        }
        Ok(self.operand(tensor, dtype, 0, chunk.parts, free, slot_stride))
    }

    fn emit_naive(&mut self) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let (chunks, k_total) = k_chunks(cfg);
        let (rows, positions) = row_tiling(cfg);
        for (m0, msz) in tiles(cfg.m, M_TILE) {
            for (n0, nsz) in tiles(cfg.n, N_TILE) {
                let pos = (self.group as u32 % positions) * rows;
                let bank = self.bufs.psum[self.group % self.bufs.psum.len()];
                let psum = on_chip(bank, Memory::Psum, DType::Fp32, msz, nsz);
                let mut acc = if self.pack == 2 {
                    MatMultAccumulation::open_double_row(psum.clone(), k_total as u32)?
                } else {
                    MatMultAccumulation::open(psum.clone(), k_total as u32)?
                };
                for &chunk in &chunks {
                    let slot = self.kstep % 2;
                    self.kstep += 1;
                    self.matmul_chunk(&mut acc, &psum, slot, pos, rows, chunk, (m0, msz), (n0, nsz))?;
                }
                self.evacuate(&psum, m0, msz, n0, nsz)?;
            }
        }
        Ok(())
    }

    #[expect(clippy::too_many_arguments, reason = "one K step of one output tile: every coordinate is needed")]
    fn matmul_chunk(
        &mut self,
        acc: &mut MatMultAccumulation,
        psum: &InstTile,
        slot: usize,
        pos: u32,
        rows: u32,
        chunk: KChunk,
        (m0, msz): (u64, u32),
        (n0, nsz): (u64, u32),
    ) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let (lhs_buf, rhs_buf) = (self.bufs.lhs[slot], self.bufs.rhs[slot]);
        if let (Some(pattern), Some(tags_buf), Some(a_tags)) = (cfg.sparsity, self.bufs.tags.map(|t| t[slot]), self.a_tags) {
            let cols = SparseA::cols(cfg.k, pattern);
            let kc0 = chunk.k0 / u64::from(pattern.m) * u64::from(pattern.n);
            let st = on_chip(lhs_buf, Memory::Sbuf, cfg.lhs_dtype, chunk.parts, msz);
            self.dma(st.clone(), hbm(self.a, cfg.input_dtype, AccessPattern::hbm_cols(cols, m0, msz, kc0, chunk.parts)))?;
            let tags = on_chip(tags_buf, Memory::Sbuf, DType::Int16, chunk.parts, msz);
            self.dma(tags.clone(), hbm(a_tags, DType::Int16, AccessPattern::hbm_cols(cols, m0, msz, kc0, chunk.parts)))?;
            let mv = on_chip(rhs_buf, Memory::Sbuf, cfg.rhs_dtype, chunk.len, nsz);
            if chunk.real < chunk.len {
                self.memset_zero(mv.clone())?;
            }
            let part = on_chip(rhs_buf, Memory::Sbuf, cfg.rhs_dtype, chunk.real, nsz);
            self.dma(part, self.rhs_src(n0, nsz, chunk.k0, chunk.real))?;
            let sub = MatMultSparseSubTile {
                dst: psum.clone(),
                stationary: st,
                moving: mv,
                tags,
                pattern,
                k_start: chunk.k0 as u32,
                tile_position: vec![0, 0],
                tile_size: vec![128, 128],
            };
            let mm = combine_sparse_matmult_tiles(acc, sub)?;
            self.cg.process_new_neuroninst(InstData::MatMultSparse(mm))?;
            return Ok(());
        }
        let stationary =
            self.load(lhs_buf, cfg.lhs_dtype, pos, chunk, msz, M_TILE as u32, |p, k0, r| p.lhs_src(m0, msz, k0, r))?;
        let moving =
            self.load(rhs_buf, cfg.rhs_dtype, pos, chunk, nsz, N_TILE as u32, |p, k0, r| p.rhs_src(n0, nsz, k0, r))?;
        let sub = MatMultSubTile {
            dst: psum.clone(),
            stationary,
            moving,
            k_start: chunk.k0 as u32,
            k_len: if self.pack == 2 { chunk.len } else { chunk.real },
            perf_mode: cfg.perf_mode,
            tile_position: TilePosition { row: pos, col: 0 },
            tile_size: TileSize { rows, cols: 128 },
        };
        let mm = combine_matmult_tiles(acc, sub)?;
        self.cg.process_new_neuroninst(InstData::MatMult(mm))?;
        Ok(())
    }

    /// Copy a stopped group from PSUM to SBUF (casting to the output dtype) and store it.
    fn evacuate(&mut self, psum: &InstTile, m0: u64, msz: u32, n0: u64, nsz: u32) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let slot = self.group % 2;
        let engine = if self.group % 2 == 0 { ComputeEngine::Act } else { ComputeEngine::Dve };
        self.group += 1;
        let out = on_chip(self.bufs.out[slot], Memory::Sbuf, cfg.out_dtype, msz, nsz);
        self.cg.process_new_neuroninst(InstData::TensorCopy(TensorCopyData { engine, dst: out.clone(), src: psum.clone() }))?;
        self.dma(hbm(self.c, cfg.out_dtype, AccessPattern::hbm_rows(cfg.n, m0, msz, n0, nsz)), out)
    }
}

#[cfg(test)]
mod tests {
    use penguin::{EngineAccumulationType as Acc, FunctionView};

    use super::*;

    #[test]
    fn ragged_tiles_cover_the_range() {
        let t: Vec<_> = tiles(300, 128).collect();
        assert_eq!(t, vec![(0, 128), (128, 128), (256, 44)]);
        assert_eq!(tiles(1, 128).collect::<Vec<_>>(), vec![(0, 1)]);
    }

    #[test]
    fn naive_plan_counts() {
        let plan = plan_gemm(&GemmConfig::new(300, 1000, 777, DType::Bf16, Target::Trn2)).unwrap();
        // 3 m tiles x 2 n tiles x 8 k tiles.
        assert_eq!(plan.stats.matmuls, 48);
        assert_eq!(plan.stats.psum_groups, 6);
        assert_eq!(plan.stats.max_live_psum_groups, 1);
        let f = &plan.function;
        let starts = f
            .layout()
            .iter()
            .filter_map(|&i| match f.inst(i) {
                Some(InstData::MatMult(m)) => Some(m.flags()),
                _ => None,
            })
            .filter(|fl| fl.contains(Acc::START))
            .count();
        assert_eq!(starts, 6);
        assert_eq!(f.outputs, vec![TensorId(2)]);
    }

    #[test]
    fn fp8e4m3fn_is_refused_before_trn3() {
        let mut cfg = GemmConfig::new(4, 4, 4, DType::Fp8e4m3fn, Target::Trn2);
        assert!(matches!(plan_gemm(&cfg), Err(CodegenError::BadGemm(m)) if m.contains("only supported on trn3")));
        cfg.target = Target::Trn3;
        assert!(plan_gemm(&cfg).is_ok());
    }

    #[test]
    fn zero_sized_gemm_is_refused() {
        let cfg = GemmConfig::new(0, 4, 4, DType::Bf16, Target::Trn2);
        assert_eq!(plan_gemm(&cfg).unwrap_err().to_string(), "m = 0 is out of range (1..=1048576)");
    }

    #[test]
    fn double_row_halves_the_matmuls_and_is_refused_on_trn1() {
        let mut cfg = GemmConfig::new(128, 1000, 512, DType::Fp8e4m3, Target::Trn2);
        cfg.perf_mode = PerfMode::DoubleRow;
        let plan = plan_gemm(&cfg).unwrap();
        assert_eq!(plan.stats.matmuls, 4);
        let (chunks, total) = k_chunks(&cfg);
        assert_eq!(total, 1000);
        assert_eq!(chunks.last(), Some(&KChunk { k0: 768, len: 232, parts: 116, real: 232 }));
        cfg.k = 7;
        assert_eq!(k_chunks(&cfg), (vec![KChunk { k0: 0, len: 8, parts: 4, real: 7 }], 8));
        plan_gemm(&cfg).unwrap();
        cfg.target = Target::Trn1;
        assert_eq!(plan_gemm(&cfg).unwrap_err().to_string(), "perf_mode=`double_row` is not supported on trn1");
        cfg.target = Target::Trn2;
        cfg.perf_mode = PerfMode::DoubleRowGen3;
        assert_eq!(plan_gemm(&cfg).unwrap_err().to_string(), "perf_mode=`double_row_gen3` is not supported on trn2");
        cfg.perf_mode = PerfMode::DoubleRow;
        cfg.lhs_dtype = DType::Bf16;
        assert_eq!(plan_gemm(&cfg).unwrap_err().to_string(), crate::combine::DOUBLE_ROW_FP8_ONLY);
    }

    #[test]
    fn double_row_positions_pair_k_and_k_plus_p() {
        assert_eq!(double_row_position(0, 256), (0, 0));
        assert_eq!(double_row_position(128, 256), (0, 1));
        assert_eq!(double_row_position(255, 256), (127, 1));
        assert_eq!(double_row_position(5, 8), (1, 1));
    }

    #[test]
    fn sparse_compression_layout_and_errors() {
        let p = SparsityPattern { n: 2, m: 4 };
        let a = [0.0, 3.0, 0.0, 5.0, 7.0, 0.0, 0.0, 0.0, 1.0, 2.0];
        let s = SparseA::compress(&a, 1, 10, p).unwrap();
        assert_eq!(s.values, vec![3.0, 5.0, 7.0, 0.0, 1.0, 2.0]);
        assert_eq!(s.tags, vec![1, 3, 0, 1, 0, 1]);
        assert_eq!(s.decompress(), a.to_vec());
        let bad = [1.0, 1.0, 1.0, 0.0];
        assert_eq!(
            SparseA::compress(&bad, 1, 4, p).unwrap_err().to_string(),
            "A does not satisfy 2:4 sparsity: row 0, K group 0 (columns 0..4) has 3 non-zeros"
        );
    }

    #[test]
    fn small_k_uses_pe_row_tiling() {
        let plan = plan_gemm(&GemmConfig::new(256, 20, 1024, DType::Bf16, Target::Trn2)).unwrap();
        let positions: Vec<(u32, u32)> = plan
            .function
            .insts
            .iter()
            .filter_map(|i| match i {
                InstData::MatMult(m) => Some((m.tile_position.row, m.tile_size.rows)),
                _ => None,
            })
            .collect();
        assert_eq!(positions, vec![(0, 32), (32, 32), (64, 32), (96, 32)]);
        let plan = plan_gemm(&GemmConfig::new(256, 20, 1024, DType::Bf16, Target::Trn1)).unwrap();
        assert!(plan.function.insts.iter().any(|i| matches!(i, InstData::MatMult(m) if m.tile_position.row == 64)));
    }
}
