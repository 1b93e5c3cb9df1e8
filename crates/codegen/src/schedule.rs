//! The GEMM loop nests: how output tiles, K sub-tiles and operand loads are ordered, and
//! which SBUF buffers hold the operands.
//!
//! Every schedule emits the same kinds of steps, so they differ only in reuse:
//! - **load**: a DMA brings an operand tile from HBM into an SBUF buffer; when it converts to
//!   the matmul dtype it is an `OffloadedMemCast` spread over the DMA queues. A^T comes from
//!   A `[M, K]` by a transposing access pattern (trn2/trn3), or by a natural-layout load and PE
//!   transposes through PSUM (trn1, or `pe_transpose` elsewhere) unless A is given as `[K, M]`;
//! - **matmul**: one K sub-tile into the output tile's PSUM accumulation group
//!   (`combine_*_matmult_tiles` gives START / ACCU / STOP);
//! - **evacuate**: copy the stopped group from PSUM to SBUF on ACT or DVE (casting to the
//!   output dtype) and DMA it to HBM.
//!
//! The loop nests:
//! - `naive`: for each m tile, n tile: for each k tile load the A^T tile and the B tile (two
//!   rotating buffers each), matmul; evacuate.
//! - `hoisted`: for each m tile load its whole K stripe of A^T once; for each n tile load its
//!   whole K stripe of B; run the K matmuls; evacuate.
//! - `blocked-mn`: for each M block load the A^T stripes of its tiles; for each N block load
//!   the B stripes of its tiles; for every (m, n) pair in the blocks run its K matmuls;
//!   evacuate. The loop order picks which block loop is outside; the inner loop runs in snake
//!   order and a block still resident in either of its two slots is not loaded again.
//! - `blocked-mnk`: blocks in all three; for each (M block, N block) keep an fp32 result
//!   block in SBUF; for each K block load the A^T and B blocks, accumulate each tile's K-block
//!   partial in PSUM and add it into the result block on VectorE and GpSimd in turn; store the
//!   block once (the store DMA casts to the output dtype).
//!
//! A buffer refilled inside a loop has two slots, so the DMA queues can fill the next slot
//! while the PE works on the other (double buffering): the dependency edges (and so the
//! semaphores) only order a refill after the last read of the same slot. The exceptions have
//! one: a lone block (loaded once), blocked-mn's outer block when two do not fit SBUF (its
//! reload waits for the last reads of the previous one), an outer A transposed on the PE,
//! blocked-mnk's result block when two do not fit, and, with explicit blocks, any refilled
//! block whose two slots do not fit SBUF (the inner block first, then the outer one; see
//! [`plan_gemm`]). A single-slot block is loaded by its step's compute, after the previous
//! step's last reads. blocked-mn emits its next inner block in K pieces between the current
//! step's m tiles (the queues run in order: a whole block queued at once would hold back loads
//! the current step still needs). A transposed on the PE is
//! transposed just before its first matmul: hoisted and blocked-mn prefetch its natural stripes
//! two ahead, blocked-mnk loads the natural K block of the next step ahead. Accumulation groups
//! rotate over the PSUM banks (one bank is kept for the PE transposes when there are any).

use penguin::{
    AccessPattern, ComputeEngine, DType, Dim, DmaCopyData, GeneratedBuilder, HwProfile, InstData, InstTile, Memory,
    MemsetData, NDTile, PerfMode, TensorCopyData, TensorId, TensorTensorData, TensorTensorOp, TilePosition, TileSize,
    TransposeData,
};

use crate::auto_limits::AutoLimits;
use crate::combine::{
    combine_matmult_tiles, combine_sparse_matmult_tiles, MatMultAccumulation, MatMultSparseSubTile, MatMultSubTile,
};
use crate::error::CodegenError;
use crate::gemm::{k_chunks, tiles, GemmConfig, GemmPlan, KChunk, LoopOrder, Schedule, SparseA, M_TILE, N_TILE};
use crate::neuron::NeuronCodegen;

/// Plan, emit and verify a GEMM kernel with the configured schedule.
///
/// `auto` needs a cost model; without one it plans `blocked-mn` (see [`plan_gemm_auto`]).
/// A blocked schedule's refilled block whose two slots do not fit SBUF gets one slot (the
/// inner block first, then the outer one), reported in [`crate::CodegenStats::single_buffered`].
pub fn plan_gemm(cfg: &GemmConfig) -> Result<GemmPlan, CodegenError> {
    plan_buffered(cfg, true)
}

/// [`plan_gemm`], single-buffering blocks that do not fit twice only when `single` is set
/// (otherwise they fail with [`CodegenError::SbufCapacity`], as shrinking the blocks wants).
fn plan_buffered(cfg: &GemmConfig, single: bool) -> Result<GemmPlan, CodegenError> {
    cfg.validate()?;
    let mut p = Planner::new(cfg)?;
    p.allow_single = single;
    match cfg.schedule {
        Schedule::Naive => p.naive()?,
        Schedule::Hoisted => p.hoisted()?,
        Schedule::BlockedMn | Schedule::Auto => p.blocked_mn()?,
        Schedule::BlockedMnk => p.blocked_mnk()?,
    }
    let single_buffered = p.single_buffered;
    let mut cg = p.cg;
    cg.finalize_kernel()?;
    let stats = crate::CodegenStats { single_buffered, ..cg.stats() };
    let function = cg.finalize()?;
    Ok(GemmPlan { function, stats, config: cfg.clone() })
}

/// Plan with the configured blocks, or, when they do not fit SBUF, with the largest smaller
/// blocks that do (halving N, then M, then K blocks): what default block sizes should do.
/// Blocks are single-buffered only when no blocking fits with two slots.
pub fn plan_gemm_fitting(cfg: &GemmConfig) -> Result<GemmPlan, CodegenError> {
    match plan_shrinking(cfg, false) {
        Err(CodegenError::SbufCapacity { .. }) => plan_shrinking(cfg, true),
        other => other,
    }
}

/// [`plan_gemm_fitting`] with or without single buffering.
fn plan_shrinking(cfg: &GemmConfig, single: bool) -> Result<GemmPlan, CodegenError> {
    let mut c = cfg.clone();
    loop {
        match plan_buffered(&c, single) {
            Err(e @ CodegenError::SbufCapacity { .. }) => {
                let b = &mut c.blocks;
                if b.n > N_TILE {
                    b.n = (b.n / 2).max(N_TILE);
                } else if b.m > M_TILE {
                    b.m = (b.m / 2).max(M_TILE);
                } else if b.k > 128 && c.schedule == Schedule::BlockedMnk {
                    b.k = (b.k / 2).max(128);
                } else {
                    return Err(e);
                }
            }
            other => return other,
        }
    }
}

/// The candidates `auto` considers for a GEMM: every schedule with a few block sizes and
/// both loop orders.
pub fn auto_candidates(cfg: &GemmConfig) -> Vec<GemmConfig> {
    let mut out = Vec::new();
    let with = |schedule, m_tiles: u64, n_tiles: u64, k_tiles: u64, order| GemmConfig {
        schedule,
        blocks: crate::gemm::BlockSizes { m: m_tiles * M_TILE, n: n_tiles * N_TILE, k: k_tiles * 128 },
        order,
        ..cfg.clone()
    };
    out.push(with(Schedule::Naive, 1, 1, 1, LoopOrder::MOuter));
    out.push(with(Schedule::Hoisted, 1, 1, 1, LoopOrder::MOuter));
    let mt = cfg.m.div_ceil(M_TILE);
    let nt = cfg.n.div_ceil(N_TILE);
    let kt = cfg.k.div_ceil(128);
    let sizes = |max: u64, options: &[u64]| -> Vec<u64> {
        let mut v: Vec<u64> = options.iter().map(|&o| o.min(max)).collect();
        v.dedup();
        v
    };
    for order in [LoopOrder::MOuter, LoopOrder::NOuter] {
        for &bm in &sizes(mt, &[1, 2, 4, 8, 16]) {
            for &bn in &sizes(nt, &[1, 2, 4, 8]) {
                out.push(with(Schedule::BlockedMn, bm, bn, 1, order));
                for &bk in &sizes(kt, &[4, 8, 16, 32]) {
                    if bk < kt {
                        out.push(with(Schedule::BlockedMnk, bm, bn, bk, order));
                    }
                }
            }
        }
    }
    // On trn2/trn3 an A given as [M, K] may be transposed by the DMA or on the PE.
    if !cfg.lhs_transposed
        && cfg.sparsity.is_none()
        && cfg.target != penguin::Target::Trn1
        && cfg.pe_transpose.is_none()
    {
        out = out
            .into_iter()
            .flat_map(|c| {
                [GemmConfig { pe_transpose: Some(false), ..c.clone() }, GemmConfig { pe_transpose: Some(true), ..c }]
            })
            .collect();
    }
    out.dedup();
    out
}

/// What `auto` chose, and how many candidates it weighed.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoChoice {
    /// The chosen configuration (schedule, blocks, loop order).
    pub config: GemmConfig,
    /// Its modeled cost.
    pub cost: f64,
    /// The HBM bytes it moves.
    pub hbm_bytes: u64,
    /// Candidates that fit SBUF and were modeled.
    pub evaluated: usize,
    /// Candidates refused for SBUF capacity.
    pub rejected: usize,
}

/// What `auto` weighs a candidate by.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoCost {
    /// Modeled time (lower is better).
    pub time: f64,
    /// HBM bytes moved.
    pub hbm_bytes: u64,
}

/// How many candidates `auto` weighs with the cycle model (the best of the estimate's
/// ranking that fit SBUF).
pub const AUTO_SHORTLIST: usize = 8;

/// Candidates whose modeled time is within this fraction of the fastest count as equally
/// fast; among them `auto` keeps the one that moves the fewest HBM bytes (the cores of a chip
/// share its HBM bandwidth, so traffic saved is bandwidth left to the others).
pub const AUTO_TIME_TOLERANCE: f64 = 0.005;

/// A quick analytic estimate of a candidate's time in ns with the target's built-in hardware
/// profile (see [`estimate_ns_with`]).
pub fn estimate_ns(cfg: &GemmConfig) -> f64 {
    estimate_ns_with(cfg, &cfg.target.profile())
}

/// A quick analytic estimate of a candidate's time in ns, from the same [`HwProfile`] figures
/// as the cycle model: a smooth maximum of the PE time (every matmul at
/// `max(N, mm_min_cycles)` cycles), the HBM time of the bytes the loop nest moves (in whole
/// `hbm_burst_bytes` granules per run), the DMA engines' data time (16 engines; a run costs at
/// least `dma_descriptor_ns`, a DMA transpose runs at its fraction of copy throughput) and the
/// DMA queues' fixed latency (`dma_fixed_ns` per transfer over 16 queues of
/// `dma_queue_depth` transfers in flight), the PE's transposes of A and the vector engines'
/// copies and K-block additions. `auto` ranks candidates with it and runs the cycle model on
/// the best few.
pub fn estimate_ns_with(cfg: &GemmConfig, hw: &HwProfile) -> f64 {
    let (mt, nt) = (cfg.m.div_ceil(M_TILE) as f64, cfg.n.div_ceil(N_TILE) as f64);
    let chunks = k_chunks(cfg).0.len() as f64;
    let mm = |n: f64| n.max(hw.mm_min_cycles);
    let n_cycles: f64 = tiles(cfg.n, N_TILE).map(|(_, n)| mm(f64::from(n))).sum();
    let fp32 = if cfg.lhs_dtype == DType::Fp32 || cfg.rhs_dtype == DType::Fp32 { hw.mm_fp32_factor } else { 1.0 };
    let pe_ns = mt * chunks * n_cycles * fp32 / hw.pe_ghz;
    let s_in = f64::from(cfg.input_dtype.size_bytes());
    let (a, b) = ((cfg.m * cfg.k) as f64 * s_in, (cfg.k * cfg.n) as f64 * s_in);
    let (bm, bn) = ((cfg.blocks.m.div_ceil(M_TILE) as f64).min(mt), (cfg.blocks.n.div_ceil(N_TILE) as f64).min(nt));
    // Whole-stripe natural loads of A (PE transposes) in the stripe schedules; per-chunk
    // loads otherwise.
    let stripes = matches!(cfg.schedule, Schedule::Hoisted | Schedule::BlockedMn | Schedule::Auto);
    // (A loads, B loads, B n-tiles per transfer) of each loop nest.
    let (a_times, b_times, b_wide) = match cfg.schedule {
        Schedule::Naive => (nt, mt, 1.0),
        Schedule::Hoisted => (1.0, mt, 1.0),
        Schedule::BlockedMn | Schedule::Auto => match cfg.order {
            LoopOrder::MOuter => (1.0, (mt / bm).ceil(), bn),
            LoopOrder::NOuter => ((nt / bn).ceil(), 1.0, bn),
        },
        Schedule::BlockedMnk => ((nt / bn).ceil(), (mt / bm).ceil(), bn),
    };
    // Engine time per byte relative to peak: a run shorter than the descriptor time's worth
    // of data costs the descriptor time.
    let slow = |run_bytes: f64| (hw.dma_descriptor_ns * hw.dma_engine_bytes_per_ns / run_bytes.max(1.0)).max(1.0);
    // HBM bytes per byte of a run: whole granules.
    let granules = |run_bytes: f64| {
        let run = run_bytes.max(1.0);
        let g = hw.hbm_burst_bytes.max(1.0);
        (run / g).ceil() * g / run
    };
    let dma_transposes = !cfg.lhs_transposed && !cfg.transposes_lhs_on_pe() && cfg.target != penguin::Target::Trn1;
    let (a_run, a_rate) = if cfg.lhs_transposed {
        (128.0 * s_in, 1.0)
    } else if cfg.transposes_lhs_on_pe() {
        // Natural rows: whole K stripes, K blocks, or one chunk.
        let run = match cfg.schedule {
            _ if stripes => cfg.k,
            Schedule::BlockedMnk => cfg.k.min(cfg.blocks.k),
            _ => 128,
        };
        (run as f64 * s_in, 1.0)
    } else if dma_transposes {
        (128.0 * s_in, hw.dma_transpose_hbm_fraction)
    } else {
        (s_in, 1.0)
    };
    // A transposed without a DMA transpose reads runs of 128 contiguous elements from HBM.
    let a_hbm_run = if dma_transposes || cfg.target == penguin::Target::Trn1 && !cfg.lhs_transposed {
        a_run.max(128.0 * s_in)
    } else {
        a_run
    };
    let b_run = b_wide * N_TILE as f64 * s_in;
    let out = (cfg.m * cfg.n) as f64 * f64::from(cfg.out_dtype.size_bytes());
    let out_run = N_TILE as f64 * 4.0;
    let engines = 16.0 * hw.dma_engine_bytes_per_ns;
    let data_ns = (a * a_times * slow(a_run) / a_rate + b * b_times * slow(b_run) + out * slow(out_run)) / engines;
    // K blocks of blocked-mnk: its block is a whole number of chunks.
    let chunk_len = k_chunks(cfg).0.first().map_or(128, |c| u64::from(c.len).max(1));
    let k_blocks = (chunks / cfg.blocks.k.div_ceil(chunk_len).max(1) as f64).ceil();
    // Natural loads of A for PE transposes: a whole stripe, or a K block, per m tile.
    let a_transfers = match (cfg.transposes_lhs_on_pe(), cfg.schedule) {
        (true, _) if stripes => mt,
        (true, Schedule::BlockedMnk) => mt * k_blocks,
        _ => mt * chunks,
    } * a_times;
    let b_transfers = nt / b_wide * chunks * b_times;
    let fixed_ns = (a_transfers + b_transfers + mt * nt) * hw.dma_fixed_ns / (16.0 * hw.queue_depth() as f64);
    let hbm_ns = (a * a_times * granules(a_hbm_run) + b * b_times * granules(b_run) + out * granules(out_run))
        / hw.hbm_bytes_per_ns;
    // PE transposes of A (128 columns per 128 rows of an m tile: one per chunk, two per
    // double-row chunk; each time A is loaded), and the vector engines: evacuations take turns
    // on ACT and DVE; blocked-mnk adds every K block but the first into its result block on DVE
    // and POOL in turn (`compute_elems_per_cycle` elements per cycle plus the static overhead).
    let per_chunk = if cfg.perf_mode == PerfMode::None { 1.0 } else { 2.0 };
    let transposes_ns =
        if cfg.transposes_lhs_on_pe() { mt * chunks * per_chunk * a_times * mm(128.0) / hw.pe_ghz } else { 0.0 };
    let per_tile = |ghz: f64| (N_TILE as f64 / hw.compute_elems_per_cycle + hw.compute_static_cycles) / ghz;
    let dve_ns = match cfg.schedule {
        Schedule::BlockedMnk => mt * nt * (k_blocks - 1.0).max(0.0) * per_tile(hw.dve_ghz) / 2.0,
        _ => mt * nt * per_tile(hw.dve_ghz) / 2.0,
    };
    // A smooth maximum: resources that are nearly as busy as the busiest one stall it now and
    // then, so near-ties rank behind candidates with one clear bottleneck.
    let parts = [pe_ns + transposes_ns, hbm_ns, data_ns, fixed_ns, dve_ns];
    let top = parts.iter().copied().fold(0.0, f64::max).max(1.0);
    top * parts.iter().map(|t| (t / top).powi(8)).sum::<f64>().powf(1.0 / 8.0)
}

/// Plan with `auto`: weigh with `cost` (the cycle model in practice) the blocked schedules
/// with their default blocks and the best `shortlist` candidates of [`auto_candidates`] by
/// [`estimate_ns`] that fit SBUF. The fewest HBM bytes among those within
/// [`AUTO_TIME_TOLERANCE`] of the fastest wins.
pub fn plan_gemm_auto(
    cfg: &GemmConfig,
    shortlist: usize,
    cost: &mut dyn FnMut(&GemmPlan) -> Result<AutoCost, CodegenError>,
) -> Result<(GemmPlan, AutoChoice), CodegenError> {
    plan_gemm_auto_with(cfg, &cfg.target.profile(), shortlist, cost)
}

/// [`plan_gemm_auto`] ranking the candidates with [`estimate_ns_with`] under `hw` (the cost
/// closure should model with the same profile).
pub fn plan_gemm_auto_with(
    cfg: &GemmConfig,
    hw: &HwProfile,
    shortlist: usize,
    cost: &mut dyn FnMut(&GemmPlan) -> Result<AutoCost, CodegenError>,
) -> Result<(GemmPlan, AutoChoice), CodegenError> {
    plan_gemm_auto_within(cfg, &AutoLimits::default(), hw, shortlist, cost)
}

/// [`plan_gemm_auto_with`] with a fixed loop order or fixed block sizes: every candidate
/// weighed, the blocked schedules' defaults included, has them (see [`AutoLimits`]).
pub fn plan_gemm_auto_within(
    cfg: &GemmConfig,
    limits: &AutoLimits,
    hw: &HwProfile,
    shortlist: usize,
    cost: &mut dyn FnMut(&GemmPlan) -> Result<AutoCost, CodegenError>,
) -> Result<(GemmPlan, AutoChoice), CodegenError> {
    cfg.validate()?;
    let mut ranked: Vec<(f64, GemmConfig)> =
        limits.apply_all(&auto_candidates(cfg)).into_iter().map(|c| (estimate_ns_with(&c, hw), c)).collect();
    ranked.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut weighed: Vec<(GemmPlan, AutoCost)> = Vec::new();
    let mut rejected = 0;
    let mut last_err = None;
    // Weigh a planned candidate; one that does not fit SBUF is counted and skipped.
    let mut weigh = |planned: Result<GemmPlan, CodegenError>,
                     weighed: &mut Vec<(GemmPlan, AutoCost)>|
     -> Result<(), CodegenError> {
        match planned {
            Ok(plan) => {
                let c = cost(&plan)?;
                weighed.push((plan, c));
            }
            Err(e @ CodegenError::SbufCapacity { .. }) => {
                rejected += 1;
                last_err = Some(e);
            }
            Err(e) => return Err(e),
        }
        Ok(())
    };
    // The blocked schedules with their default blocks (what `--schedule blocked-mn` and
    // `--schedule blocked-mnk` plan) are always weighed, so `auto` is never slower than them
    // for want of looking.
    for schedule in [Schedule::BlockedMn, Schedule::BlockedMnk] {
        let anchor = GemmConfig { schedule, blocks: crate::gemm::BlockSizes::for_schedule(schedule), ..cfg.clone() };
        let Some(anchor) = limits.apply(&anchor) else { continue };
        // Fixed blocks are the user's: planned as given, not shrunk to fit.
        let planned = if limits.block_m.is_some() || limits.block_n.is_some() || limits.block_k.is_some() {
            plan_gemm(&anchor)
        } else {
            plan_gemm_fitting(&anchor)
        };
        weigh(planned, &mut weighed)?;
    }
    let anchors = weighed.len();
    for (_, cand) in ranked {
        if weighed.len() >= anchors.saturating_add(shortlist.max(1)) {
            break;
        }
        if weighed.iter().any(|(p, _)| p.config == cand) {
            continue;
        }
        // Candidates keep two slots per refilled block (the shortlist has smaller blocks).
        weigh(plan_buffered(&cand, false), &mut weighed)?;
    }
    let evaluated = weighed.len();
    let fastest = weighed.iter().map(|(_, c)| c.time).fold(f64::INFINITY, f64::min);
    let best = weighed
        .into_iter()
        .filter(|(_, c)| c.time <= fastest * (1.0 + AUTO_TIME_TOLERANCE))
        .min_by(|(_, x), (_, y)| x.hbm_bytes.cmp(&y.hbm_bytes).then(x.time.total_cmp(&y.time)));
    match best {
        Some((plan, c)) => {
            let choice =
                AutoChoice { config: plan.config.clone(), cost: c.time, hbm_bytes: c.hbm_bytes, evaluated, rejected };
            Ok((plan, choice))
        }
        None => Err(last_err.unwrap_or_else(|| CodegenError::BadGemm("auto found no schedule".into()))),
    }
}

/// A place in an SBUF buffer: the tensor and the element offset inside each partition.
#[derive(Clone, Copy, Debug)]
struct Slot {
    tensor: TensorId,
    offset: i64,
    /// The int16 tag twin of a sparse stationary buffer.
    tags: Option<TensorId>,
}

impl Slot {
    fn at(self, elems: i64) -> Slot {
        Slot { offset: self.offset + elems, ..self }
    }
}

/// A stationary operand ready for a matmul.
struct Lhs {
    tile: InstTile,
    tags: Option<InstTile>,
}

struct Planner<'a> {
    cg: NeuronCodegen<GeneratedBuilder>,
    cfg: &'a GemmConfig,
    a: TensorId,
    a_tags: Option<TensorId>,
    b: TensorId,
    c: TensorId,
    pack: u32,
    chunks: Vec<KChunk>,
    k_total: u64,
    /// PE rows per matmul and how many row groups rotate (row tiling for small K).
    pe_rows: u32,
    pe_positions: u32,
    psum_banks: Vec<TensorId>,
    /// A transposed on the PE (see [`GemmConfig::transposes_lhs_on_pe`]): the two
    /// natural-layout buffers and the PSUM bank for the transposes.
    pe_transpose: Option<([TensorId; 2], TensorId)>,
    out: [TensorId; 2],
    transposes: usize,
    /// The stripe schedules transpose A just in time: the m tiles in the order compute first
    /// reads them after a (re)load, how many of their natural stripes have been loaded and how
    /// many transposed.
    pe_seq: Vec<(u64, u32)>,
    pe_loaded: usize,
    pe_done: usize,
    groups: usize,
    /// Whether a refilled block whose two slots do not fit may get one.
    allow_single: bool,
    /// The blocks that got one slot for SBUF capacity.
    single_buffered: crate::SingleBuffered,
}

/// Elements per partition one K chunk of an operand occupies in a buffer.
fn chunk_width(free: u64, pack: u32) -> i64 {
    (free * u64::from(pack)) as i64
}

fn on_chip(tensor: TensorId, memory: Memory, dtype: DType, start: u32, parts: u32, offset: i64, free: u32) -> InstTile {
    InstTile { tensor, memory, dtype, ap: AccessPattern::on_chip(start, parts, offset, free) }
}

fn hbm(tensor: TensorId, dtype: DType, ap: AccessPattern) -> InstTile {
    InstTile { tensor, memory: Memory::Hbm, dtype, ap }
}

impl<'a> Planner<'a> {
    fn new(cfg: &'a GemmConfig) -> Result<Self, CodegenError> {
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
        let (chunks, k_total) = k_chunks(cfg);
        let dense = cfg.perf_mode == PerfMode::None && cfg.sparsity.is_none();
        // Row tiling rotates operands over partition groups, which the naive schedule's
        // per-step loads can follow; the stripe schedules keep operands at partition 0.
        let naive = cfg.schedule == Schedule::Naive;
        let (pe_rows, pe_positions) = if !naive {
            (128, 1)
        } else if dense && cfg.k <= 32 && cfg.target.info().pe_tile_32 {
            (32, 4)
        } else if dense && cfg.k <= 64 {
            (64, 2)
        } else {
            (128, 1)
        };
        let out_nd = NDTile { partitions: 128, free: vec![N_TILE as u32], dtype: cfg.out_dtype };
        let out = [cg.alloc_sbuf("out0", &out_nd)?, cg.alloc_sbuf("out1", &out_nd)?];
        let needs_pe_transpose = cfg.transposes_lhs_on_pe();
        let banks = cfg.target.info().psum_num_banks;
        let group_banks = if needs_pe_transpose { banks - 1 } else { banks };
        let psum_banks =
            (0..group_banks).map(|b| cg.alloc_psum_bank(&format!("psum{b}"), b, 128)).collect::<Result<_, _>>()?;
        let pe_transpose = if needs_pe_transpose {
            // The stripe schedules load a whole K stripe of A in its natural layout at once,
            // `blocked-mnk` the K block of each m tile of its M block.
            let width = match cfg.schedule {
                Schedule::Naive => 128,
                Schedule::BlockedMnk => {
                    let tiles = cfg.blocks.m.div_ceil(M_TILE).clamp(1, cfg.m.div_ceil(M_TILE));
                    (u64::from(mnk_natural_width(cfg)) * tiles) as u32
                }
                _ => cfg.k as u32,
            };
            let nd = NDTile { partitions: 128, free: vec![width], dtype: cfg.lhs_dtype };
            let nat = [cg.alloc_sbuf("a_nat0", &nd)?, cg.alloc_sbuf("a_nat1", &nd)?];
            Some((nat, cg.alloc_psum_bank("psum_transpose", banks - 1, 128)?))
        } else {
            None
        };
        Ok(Planner {
            cg,
            cfg,
            a,
            a_tags,
            b,
            c,
            pack,
            chunks,
            k_total,
            pe_rows,
            pe_positions,
            psum_banks,
            pe_transpose,
            out,
            transposes: 0,
            pe_seq: Vec::new(),
            pe_loaded: 0,
            pe_done: 0,
            groups: 0,
            allow_single: false,
            single_buffered: crate::SingleBuffered::default(),
        })
    }

    /// Bytes per partition of each allocation [`Self::buffers`] makes, in its order.
    fn buffer_sizes(&self, count: usize, chunks: usize, free: u64, dtype: DType, lhs: bool) -> Vec<u64> {
        let width = chunk_width(free, self.pack) as u64 * chunks as u64;
        let tags = lhs && self.cfg.sparsity.is_some();
        let slot = [Some(width * u64::from(dtype.size_bytes())), tags.then_some(width * 2)];
        (0..count).flat_map(|_| slot.into_iter().flatten()).collect()
    }

    /// Whether allocations of these bytes per partition, made in order after what is already
    /// allocated, fit SBUF (each allocation starts 64-byte aligned, as `alloc_sbuf` places it).
    fn fits(&self, sizes: &[u64]) -> bool {
        let capacity = u64::from(self.cfg.target.info().statebuf_par_size_in_bytes);
        let mut next = capacity.saturating_sub(self.cg.sbuf_free_bytes());
        sizes.iter().all(|&bytes| {
            let fits = next + bytes <= capacity;
            next = (next + bytes).div_ceil(64) * 64;
            fits
        })
    }

    /// Whether blocks with these slot counts (A's and B's, then `extra` bytes) fit SBUF.
    fn blocks_fit(&self, (lslots, rslots): (usize, usize), (lchunks, rchunks): (usize, usize), extra: u64) -> bool {
        let cfg = self.cfg;
        let mut sizes = self.buffer_sizes(lslots, lchunks, M_TILE, cfg.lhs_dtype, true);
        sizes.extend(self.buffer_sizes(rslots, rchunks, N_TILE, cfg.rhs_dtype, false));
        if extra > 0 {
            sizes.push(extra);
        }
        self.fits(&sizes)
    }

    /// Allocate `count` slots of `chunks` K chunks of `free` elements each (times the pack
    /// factor), with an int16 twin for sparse stationary buffers.
    fn buffers(
        &mut self,
        name: &str,
        count: usize,
        chunks: usize,
        free: u64,
        dtype: DType,
        lhs: bool,
    ) -> Result<Vec<Slot>, CodegenError> {
        let width = chunk_width(free, self.pack) as u64 * chunks as u64;
        let nd = NDTile { partitions: 128, free: vec![width as u32], dtype };
        (0..count)
            .map(|i| {
                let tensor = self.cg.alloc_sbuf(&format!("{name}{i}"), &nd)?;
                let tags = if lhs && self.cfg.sparsity.is_some() {
                    let t = NDTile { dtype: DType::Int16, ..nd.clone() };
                    Some(self.cg.alloc_sbuf(&format!("{name}_tags{i}"), &t)?)
                } else {
                    None
                };
                Ok(Slot { tensor, offset: 0, tags })
            })
            .collect()
    }

    fn lhs_width(&self) -> i64 {
        chunk_width(M_TILE, self.pack)
    }

    fn rhs_width(&self) -> i64 {
        chunk_width(N_TILE, self.pack)
    }

    /// Move a tile; a load that converts (f32 inputs to the matmul dtype) is an
    /// `OffloadedMemCast` executed on the DMA queues.
    fn dma(&mut self, dst: InstTile, src: InstTile) -> Result<(), CodegenError> {
        if dst.dtype != src.dtype && src.memory == Memory::Hbm {
            self.cg.offloaded_memcast_inst(dst, src, penguin::CastMode::Rne)?;
        } else {
            self.cg.process_new_neuroninst(InstData::DmaCopy(DmaCopyData {
                dst,
                src,
                cast: penguin::CastMode::Rne,
            }))?;
        }
        Ok(())
    }

    fn memset_zero(&mut self, dst: InstTile) -> Result<(), CodegenError> {
        self.cg.process_new_neuroninst(InstData::Memset(MemsetData {
            engine: ComputeEngine::Pool,
            dst,
            value: 0.0,
        }))?;
        Ok(())
    }

    fn copy(&mut self, engine: ComputeEngine, dst: InstTile, src: InstTile) -> Result<(), CodegenError> {
        self.cg.process_new_neuroninst(InstData::TensorCopy(TensorCopyData { engine, dst, src }))?;
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

    /// The operand view of a loaded chunk: `parts` partitions from `start` and either one run
    /// of `free` elements or (double row) `[2, free]` with slots `width / 2` apart.
    fn view(&self, slot: Slot, dtype: DType, start: u32, parts: u32, free: u32, width: i64) -> InstTile {
        let dims =
            if self.pack == 2 { vec![Dim::new(width / 2, 2), Dim::new(1, free)] } else { vec![Dim::new(1, free)] };
        let ap =
            AccessPattern { start_partition: start, partitions: Dim::new(1, parts), offset: slot.offset, free: dims };
        InstTile { tensor: slot.tensor, memory: Memory::Sbuf, dtype, ap }
    }

    /// Load dense rows of one chunk (`src(k0, rows)`) into a slot: plain at partitions
    /// `start..`, or double row with slot `s` of partition `p` holding row `k0 + s * P + p`
    /// and missing rows zeroed first.
    #[expect(clippy::too_many_arguments, reason = "a buffer slot, the chunk and the source window")]
    fn load_rows(
        &mut self,
        slot: Slot,
        dtype: DType,
        start: u32,
        chunk: KChunk,
        free: u32,
        width: i64,
        src: &dyn Fn(&Self, u64, u32) -> InstTile,
    ) -> Result<InstTile, CodegenError> {
        if self.pack == 1 {
            let dst = on_chip(slot.tensor, Memory::Sbuf, dtype, start, chunk.real, slot.offset, free);
            self.dma(dst, src(self, chunk.k0, chunk.real))?;
            return Ok(self.view(slot, dtype, start, chunk.real, free, width));
        }
        for s in 0..2u32 {
            let rows = chunk.real.saturating_sub(s * chunk.parts).min(chunk.parts);
            let half = slot.offset + i64::from(s) * width / 2;
            if rows < chunk.parts {
                self.memset_zero(on_chip(slot.tensor, Memory::Sbuf, dtype, 0, chunk.parts, half, free))?;
            }
            if rows > 0 {
                let dst = on_chip(slot.tensor, Memory::Sbuf, dtype, 0, rows, half, free);
                self.dma(dst, src(self, chunk.k0 + u64::from(s * chunk.parts), rows))?;
            }
        }
        Ok(self.view(slot, dtype, 0, chunk.parts, free, width))
    }

    /// Load the stationary operand of one chunk of m tile `(m0, msz)`.
    fn load_lhs(&mut self, slot: Slot, start: u32, chunk: KChunk, (m0, msz): (u64, u32)) -> Result<Lhs, CodegenError> {
        let cfg = self.cfg;
        if let (Some(pattern), Some(a_tags), Some(tags_buf)) = (cfg.sparsity, self.a_tags, slot.tags) {
            let cols = SparseA::cols(cfg.k, pattern);
            let kc0 = chunk.k0 / u64::from(pattern.m) * u64::from(pattern.n);
            let src = AccessPattern::hbm_cols(cols, m0, msz, kc0, chunk.parts);
            let st = on_chip(slot.tensor, Memory::Sbuf, cfg.lhs_dtype, 0, chunk.parts, slot.offset, msz);
            self.dma(st.clone(), hbm(self.a, cfg.input_dtype, src.clone()))?;
            let tags = on_chip(tags_buf, Memory::Sbuf, DType::Int16, 0, chunk.parts, slot.offset, msz);
            self.dma(tags.clone(), hbm(a_tags, DType::Int16, src))?;
            return Ok(Lhs { tile: st, tags: Some(tags) });
        }
        if let Some((nat, bank)) = self.pe_transpose {
            return self.load_lhs_pe_transposed(slot, start, chunk, (m0, msz), nat, bank);
        }
        let width = self.lhs_width();
        let tile =
            self.load_rows(slot, cfg.lhs_dtype, start, chunk, msz, width, &|p, k0, r| p.lhs_src(m0, msz, k0, r))?;
        Ok(Lhs { tile, tags: None })
    }

    /// trn1: load A[m0.., k0..] in its natural layout (contiguous rows), transpose it on the PE
    /// into PSUM, and copy the transpose into the stationary slot.
    fn load_lhs_pe_transposed(
        &mut self,
        slot: Slot,
        start: u32,
        chunk: KChunk,
        (m0, msz): (u64, u32),
        nat: [TensorId; 2],
        bank: TensorId,
    ) -> Result<Lhs, CodegenError> {
        let cfg = self.cfg;
        let i = self.transposes;
        self.transposes += 1;
        let natural = on_chip(nat[i % 2], Memory::Sbuf, cfg.lhs_dtype, 0, msz, 0, chunk.real);
        let src = hbm(self.a, cfg.input_dtype, AccessPattern::hbm_rows(cfg.k, m0, msz, chunk.k0, chunk.real));
        self.dma(natural.clone(), src)?;
        // Four 128-column transpose slots share the bank.
        let psum = on_chip(bank, Memory::Psum, DType::Fp32, 0, chunk.real, (i % 4) as i64 * 128, msz);
        self.cg.process_new_neuroninst(InstData::Transpose(TransposeData { dst: psum.clone(), src: natural }))?;
        let dst = on_chip(slot.tensor, Memory::Sbuf, cfg.lhs_dtype, start, chunk.real, slot.offset, msz);
        self.copy(transpose_copy_engine(i), dst.clone(), psum)?;
        Ok(Lhs { tile: dst, tags: None })
    }

    /// Load the moving operand of one chunk of n tile `(n0, nsz)`; sparse chunks are zeroed
    /// first when they run past K (their tags may point at padded rows).
    fn load_rhs(
        &mut self,
        slot: Slot,
        start: u32,
        chunk: KChunk,
        (n0, nsz): (u64, u32),
    ) -> Result<InstTile, CodegenError> {
        let cfg = self.cfg;
        if cfg.sparsity.is_some() {
            let mv = on_chip(slot.tensor, Memory::Sbuf, cfg.rhs_dtype, 0, chunk.len, slot.offset, nsz);
            if chunk.real < chunk.len {
                self.memset_zero(mv.clone())?;
            }
            let part = on_chip(slot.tensor, Memory::Sbuf, cfg.rhs_dtype, 0, chunk.real, slot.offset, nsz);
            self.dma(part, self.rhs_src(n0, nsz, chunk.k0, chunk.real))?;
            return Ok(mv);
        }
        let width = self.rhs_width();
        self.load_rows(slot, cfg.rhs_dtype, start, chunk, nsz, width, &|p, k0, r| p.rhs_src(n0, nsz, k0, r))
    }

    /// Open the accumulation group of the next output tile.
    fn open_group(
        &mut self,
        msz: u32,
        nsz: u32,
        k_len: u64,
    ) -> Result<(MatMultAccumulation, InstTile, u32), CodegenError> {
        let bank = self.psum_banks[self.groups % self.psum_banks.len()];
        let pos = (self.groups as u32 % self.pe_positions) * self.pe_rows;
        self.groups += 1;
        let psum = on_chip(bank, Memory::Psum, DType::Fp32, 0, msz, 0, nsz);
        let acc = if self.pack == 2 {
            MatMultAccumulation::open_double_row(psum.clone(), k_len as u32)?
        } else {
            MatMultAccumulation::open(psum.clone(), k_len as u32)?
        };
        Ok((acc, psum, pos))
    }

    /// One K sub-tile into an open group; `k_base` is where the group's K range starts.
    #[expect(clippy::too_many_arguments, reason = "the group, both operands and the chunk's place in K")]
    fn matmul(
        &mut self,
        acc: &mut MatMultAccumulation,
        psum: &InstTile,
        lhs: Lhs,
        rhs: InstTile,
        chunk: KChunk,
        k_base: u64,
        pos: u32,
    ) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let k_start = (chunk.k0 - k_base) as u32;
        if let (Some(pattern), Some(tags)) = (cfg.sparsity, lhs.tags) {
            let sub = MatMultSparseSubTile {
                dst: psum.clone(),
                stationary: lhs.tile,
                moving: rhs,
                tags,
                pattern,
                k_start,
                tile_position: vec![0, 0],
                tile_size: vec![128, 128],
            };
            let mm = combine_sparse_matmult_tiles(acc, sub)?;
            self.cg.process_new_neuroninst(InstData::MatMultSparse(mm))?;
            return Ok(());
        }
        let sub = MatMultSubTile {
            dst: psum.clone(),
            stationary: lhs.tile,
            moving: rhs,
            k_start,
            k_len: if self.pack == 2 { chunk.len } else { chunk.real },
            perf_mode: cfg.perf_mode,
            tile_position: TilePosition { row: pos, col: 0 },
            tile_size: TileSize { rows: self.pe_rows, cols: 128 },
        };
        let mm = combine_matmult_tiles(acc, sub)?;
        self.cg.process_new_neuroninst(InstData::MatMult(mm))?;
        Ok(())
    }

    fn evac_engine(&self, n: usize) -> ComputeEngine {
        if n.is_multiple_of(2) {
            ComputeEngine::Act
        } else {
            ComputeEngine::Dve
        }
    }

    /// Copy a stopped group from PSUM to SBUF (casting to the output dtype) and store it.
    fn evacuate(&mut self, psum: InstTile, (m0, msz): (u64, u32), (n0, nsz): (u64, u32)) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let n = self.groups;
        let out = on_chip(self.out[n % 2], Memory::Sbuf, cfg.out_dtype, 0, msz, 0, nsz);
        self.copy(self.evac_engine(n), out.clone(), psum)?;
        self.dma(hbm(self.c, cfg.out_dtype, AccessPattern::hbm_rows(cfg.n, m0, msz, n0, nsz)), out)
    }

    /// Run every K chunk of one output tile from loaded operands.
    fn tile_group(
        &mut self,
        lhs: &dyn Fn(usize) -> Slot,
        rhs: &dyn Fn(usize) -> Slot,
        m: (u64, u32),
        n: (u64, u32),
    ) -> Result<(), CodegenError> {
        let (mut acc, psum, pos) = self.open_group(m.1, n.1, self.k_total)?;
        for (ci, chunk) in self.chunks.clone().into_iter().enumerate() {
            let (st, mv) = self.loaded_views(lhs(ci), rhs(ci), chunk, m.1, n.1)?;
            self.matmul(&mut acc, &psum, st, mv, chunk, 0, pos)?;
        }
        self.evacuate(psum, m, n)
    }

    /// Views of operands already loaded by `load_lhs` / `load_rhs` at these slots.
    fn loaded_views(
        &self,
        l: Slot,
        r: Slot,
        chunk: KChunk,
        msz: u32,
        nsz: u32,
    ) -> Result<(Lhs, InstTile), CodegenError> {
        let cfg = self.cfg;
        if cfg.sparsity.is_some() {
            let tags = l.tags.map(|t| on_chip(t, Memory::Sbuf, DType::Int16, 0, chunk.parts, l.offset, msz));
            let st = on_chip(l.tensor, Memory::Sbuf, cfg.lhs_dtype, 0, chunk.parts, l.offset, msz);
            let mv = on_chip(r.tensor, Memory::Sbuf, cfg.rhs_dtype, 0, chunk.len, r.offset, nsz);
            return Ok((Lhs { tile: st, tags }, mv));
        }
        let parts = if self.pack == 2 { chunk.parts } else { chunk.real };
        let st = self.view(l, cfg.lhs_dtype, 0, parts, msz, self.lhs_width());
        let mv = self.view(r, cfg.rhs_dtype, 0, parts, nsz, self.rhs_width());
        Ok((Lhs { tile: st, tags: None }, mv))
    }

    /// Emit `steps` software-pipelined: the loads of step `i + 1` are emitted before the
    /// compute of step `i`, so with two buffer slots the DMA queues fill one slot while the
    /// PE works on the other (the queues are in order: a load emitted after a compute step
    /// could not start before that step's stores).
    fn pipelined<S: Copy>(
        &mut self,
        steps: &[S],
        load: &mut dyn FnMut(&mut Self, usize, S) -> Result<(), CodegenError>,
        compute: &mut dyn FnMut(&mut Self, usize, S) -> Result<(), CodegenError>,
    ) -> Result<(), CodegenError> {
        if let Some(&first) = steps.first() {
            load(self, 0, first)?;
        }
        for (i, &step) in steps.iter().enumerate() {
            if let Some(&next) = steps.get(i + 1) {
                load(self, i + 1, next)?;
            }
            compute(self, i, step)?;
        }
        Ok(())
    }

    fn naive(&mut self) -> Result<(), CodegenError> {
        let lhs = self.buffers("lhs_t", 2, 1, M_TILE, self.cfg.lhs_dtype, true)?;
        let rhs = self.buffers("rhs", 2, 1, N_TILE, self.cfg.rhs_dtype, false)?;
        let chunks = self.chunks.clone();
        let nk = chunks.len();
        let mut steps = Vec::new();
        for m in tiles(self.cfg.m, M_TILE) {
            for n in tiles(self.cfg.n, N_TILE) {
                steps.extend((0..nk).map(|c| (m, n, c)));
            }
        }
        // Row tiling rotates the partitions each output tile's operands use.
        let (rows, positions) = (self.pe_rows, self.pe_positions);
        let pos_of = |i: usize| ((i / nk) as u32 % positions) * rows;
        let loaded: std::cell::RefCell<std::collections::VecDeque<(Lhs, InstTile)>> = Default::default();
        let open: std::cell::RefCell<Option<(MatMultAccumulation, InstTile, u32)>> = Default::default();
        self.pipelined(
            &steps,
            &mut |p, i, (m, n, c)| {
                let st = p.load_lhs(lhs[i % 2], pos_of(i), chunks[c], m)?;
                let mv = p.load_rhs(rhs[i % 2], pos_of(i), chunks[c], n)?;
                loaded.borrow_mut().push_back((st, mv));
                Ok(())
            },
            &mut |p, _, (m, n, c)| {
                if c == 0 {
                    *open.borrow_mut() = Some(p.open_group(m.1, n.1, p.k_total)?);
                }
                let (st, mv) =
                    loaded.borrow_mut().pop_front().ok_or_else(|| CodegenError::BadGemm("pipeline underrun".into()))?;
                let mut slot = open.borrow_mut();
                let (acc, psum, pos) = slot.as_mut().ok_or_else(|| CodegenError::BadGemm("no open group".into()))?;
                let (psum, pos) = (psum.clone(), *pos);
                p.matmul(acc, &psum, st, mv, chunks[c], 0, pos)?;
                if c + 1 == nk {
                    drop(slot);
                    open.borrow_mut().take();
                    p.evacuate(psum, m, n)?;
                }
                Ok(())
            },
        )
    }

    /// Load the K stripe of one m tile (`lhs`) or n tile (`rhs`) into a slot, chunk after
    /// chunk.
    fn load_stripe(&mut self, slot: Slot, lhs: bool, t: (u64, u32)) -> Result<(), CodegenError> {
        let chunks = self.chunks.clone();
        if lhs {
            self.load_lhs_block(slot, &chunks, &[t])
        } else {
            self.load_rhs_block(slot, &chunks, &[t])
        }
    }

    /// Transpose `chunks` of a natural stripe (held at `nat` from row `k0`) on the PE through
    /// PSUM, copying chunk `i` to `slot + i * chunk_stride`. In double row each chunk is two
    /// transposes, one per slot of the `[P, 2, M]` layout (slot `s` of partition `p` holds row
    /// `k0 + s * P + p`), a slot short of rows zeroed first.
    fn transpose_stripe(
        &mut self,
        nat: Slot,
        k0: u64,
        slot: Slot,
        chunk_stride: i64,
        msz: u32,
        chunks: &[KChunk],
    ) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let Some((_, bank)) = self.pe_transpose else { return Ok(()) };
        for (ci, chunk) in chunks.iter().enumerate() {
            let at = slot.at(ci as i64 * chunk_stride);
            for s in 0..self.pack {
                let rows = chunk.real.saturating_sub(s * chunk.parts).min(chunk.parts);
                let half = at.offset + i64::from(s) * self.lhs_width() / 2;
                if self.pack == 2 && rows < chunk.parts {
                    self.memset_zero(on_chip(at.tensor, Memory::Sbuf, cfg.lhs_dtype, 0, chunk.parts, half, msz))?;
                }
                if rows == 0 {
                    continue;
                }
                let i = self.transposes;
                self.transposes += 1;
                let col = nat.offset + (chunk.k0 + u64::from(s * chunk.parts) - k0) as i64;
                let src = on_chip(nat.tensor, Memory::Sbuf, cfg.lhs_dtype, 0, msz, col, rows);
                let psum = on_chip(bank, Memory::Psum, DType::Fp32, 0, rows, (i % 4) as i64 * 128, msz);
                self.cg.process_new_neuroninst(InstData::Transpose(TransposeData { dst: psum.clone(), src }))?;
                let dst = on_chip(at.tensor, Memory::Sbuf, cfg.lhs_dtype, 0, rows, half, msz);
                self.copy(transpose_copy_engine(i), dst, psum)?;
            }
        }
        Ok(())
    }

    /// Load the natural stripes of the next tiles of `pe_seq`, at most two ahead of the
    /// transposes (there are two natural buffers; a load is emitted after the transposes that
    /// read its buffer last, so it only waits for them).
    fn pe_prefetch(&mut self) -> Result<(), CodegenError> {
        let Some((nat, _)) = self.pe_transpose else { return Ok(()) };
        let cfg = self.cfg;
        while self.pe_loaded < self.pe_seq.len() && self.pe_loaded < self.pe_done + 2 {
            let m = self.pe_seq[self.pe_loaded];
            let at = Slot { tensor: nat[self.pe_loaded % 2], offset: 0, tags: None };
            self.load_natural(at, m, 0, cfg.k as u32)?;
            self.pe_loaded += 1;
        }
        Ok(())
    }

    /// Transpose the whole K stripe of the next tile of `pe_seq` (which must be `m`) into
    /// `slot` with chunks `chunk_stride` apart, just before its first matmul, and prefetch.
    fn pe_transpose_next(&mut self, slot: Slot, chunk_stride: i64, m: (u64, u32)) -> Result<(), CodegenError> {
        let Some((nat, _)) = self.pe_transpose else { return Ok(()) };
        if self.pe_seq.get(self.pe_done) != Some(&m) || self.pe_done >= self.pe_loaded {
            return Err(CodegenError::BadGemm(format!("PE transpose of m tile {m:?} out of sequence")));
        }
        let which = Slot { tensor: nat[self.pe_done % 2], offset: 0, tags: None };
        self.pe_done += 1;
        let chunks = self.chunks.clone();
        self.transpose_stripe(which, 0, slot, chunk_stride, m.1, &chunks)?;
        self.pe_prefetch()
    }

    /// Load the given K chunks of a block of m tiles (the stationary operand), laid out
    /// `[chunk][tile]` from `slot` (A transposed on the PE is loaded by the schedules
    /// themselves, in its natural layout).
    fn load_lhs_block(&mut self, slot: Slot, chunks: &[KChunk], block: &[(u64, u32)]) -> Result<(), CodegenError> {
        self.load_block(slot, chunks, block, true)
    }

    /// Load the natural rows `chunks` of each m tile of `block` into natural buffer `which`,
    /// tile `t` at `t * width` elements.
    fn load_lhs_natural(
        &mut self,
        which: usize,
        width: i64,
        chunks: &[KChunk],
        block: &[(u64, u32)],
    ) -> Result<(), CodegenError> {
        let (Some((nat, _)), Some(first), Some(last)) = (self.pe_transpose, chunks.first(), chunks.last()) else {
            return Ok(());
        };
        let (k0, rows) = (first.k0, (last.k0 + u64::from(last.real) - first.k0) as u32);
        for (t, &m) in block.iter().enumerate() {
            self.load_natural(Slot { tensor: nat[which], offset: t as i64 * width, tags: None }, m, k0, rows)?;
        }
        Ok(())
    }

    /// Load A's rows of m tile `(m0, msz)`, columns `[k0, k0 + cols)`, in their natural layout
    /// (contiguous runs along K) at `at`: the source of PE transposes.
    fn load_natural(&mut self, at: Slot, (m0, msz): (u64, u32), k0: u64, cols: u32) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let dst = on_chip(at.tensor, Memory::Sbuf, cfg.lhs_dtype, 0, msz, at.offset, cols);
        self.dma(dst, hbm(self.a, cfg.input_dtype, AccessPattern::hbm_rows(cfg.k, m0, msz, k0, cols)))
    }

    /// Load the given K chunks of a block of n tiles (the moving operand), laid out
    /// `[chunk][tile]` from `slot`.
    fn load_rhs_block(&mut self, slot: Slot, chunks: &[KChunk], block: &[(u64, u32)]) -> Result<(), CodegenError> {
        self.load_block(slot, chunks, block, false)
    }

    /// One DMA per chunk covering every tile of the block (longer contiguous runs per
    /// partition) when the operand is plain, one load per tile and chunk otherwise.
    fn load_block(
        &mut self,
        slot: Slot,
        chunks: &[KChunk],
        block: &[(u64, u32)],
        lhs: bool,
    ) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let (width, dtype) = if lhs { (self.lhs_width(), cfg.lhs_dtype) } else { (self.rhs_width(), cfg.rhs_dtype) };
        let wide = self.pack == 1 && cfg.sparsity.is_none() && block.len() > 1;
        for (ci, &chunk) in chunks.iter().enumerate() {
            let base = slot.at((ci * block.len()) as i64 * width);
            if wide {
                let first = block[0].0;
                let total: u32 = block.iter().map(|t| t.1).sum();
                let dst = on_chip(base.tensor, Memory::Sbuf, dtype, 0, chunk.real, base.offset, total);
                let src = if lhs {
                    self.lhs_src(first, total, chunk.k0, chunk.real)
                } else {
                    self.rhs_src(first, total, chunk.k0, chunk.real)
                };
                self.dma(dst, src)?;
            } else {
                for (t, &tile) in block.iter().enumerate() {
                    let at = base.at(t as i64 * width);
                    if lhs {
                        self.load_lhs(at, 0, chunk, tile)?;
                    } else {
                        self.load_rhs(at, 0, chunk, tile)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn hoisted(&mut self) -> Result<(), CodegenError> {
        let nk = self.chunks.len();
        let lhs = self.buffers("a_stripe", 2, nk, M_TILE, self.cfg.lhs_dtype, true)?;
        let rhs = self.buffers("b_stripe", 2, nk, N_TILE, self.cfg.rhs_dtype, false)?;
        let (lw, rw) = (self.lhs_width(), self.rhs_width());
        let mut steps = Vec::new();
        for (mi, m) in tiles(self.cfg.m, M_TILE).enumerate() {
            for (ni, n) in tiles(self.cfg.n, N_TILE).enumerate() {
                steps.push((mi, ni, m, n));
            }
        }
        let pe = self.pe_transpose.is_some();
        if pe {
            self.pe_seq = tiles(self.cfg.m, M_TILE).collect();
            self.pe_prefetch()?;
        }
        self.pipelined(
            &steps,
            &mut |p, i, (mi, ni, m, n)| {
                if ni == 0 && !pe {
                    p.load_stripe(lhs[mi % 2], true, m)?;
                }
                p.load_stripe(rhs[i % 2], false, n)
            },
            &mut |p, i, (mi, ni, m, n)| {
                let (l, r) = (lhs[mi % 2], rhs[i % 2]);
                if ni == 0 && pe {
                    p.pe_transpose_next(l, lw, m)?;
                }
                p.tile_group(&|c| l.at(c as i64 * lw), &|c| r.at(c as i64 * rw), m, n)
            },
        )
    }

    /// Block sizes in tiles: (m tiles, n tiles, k chunks).
    fn block_tiles(&self) -> (usize, usize, usize) {
        let b = self.cfg.blocks;
        let chunk = self.chunks.first().map_or(128, |c| u64::from(c.len).max(1));
        (b.m.div_ceil(M_TILE) as usize, b.n.div_ceil(N_TILE) as usize, b.k.div_ceil(chunk) as usize)
    }

    fn blocked_mn(&mut self) -> Result<(), CodegenError> {
        let nk = self.chunks.len();
        let (bm, bn, _) = self.block_tiles();
        let mtiles: Vec<_> = tiles(self.cfg.m, M_TILE).collect();
        let ntiles: Vec<_> = tiles(self.cfg.n, N_TILE).collect();
        let (bm, bn) = (bm.min(mtiles.len()), bn.min(ntiles.len()));
        let m_outer = self.cfg.order == LoopOrder::MOuter;
        let pe = self.pe_transpose.is_some();
        let mblocks: Vec<&[(u64, u32)]> = mtiles.chunks(bm).collect();
        let nblocks: Vec<&[(u64, u32)]> = ntiles.chunks(bn).collect();
        let (outer, inner) = if m_outer { (mblocks.len(), nblocks.len()) } else { (nblocks.len(), mblocks.len()) };
        let steps = snake(outer, inner);
        // The outer operand's block is loaded once per outer step, the inner one when it is
        // not still resident. The inner one has two slots; the outer one has two when they fit
        // (else its reload waits once per outer step for the last use of the previous block).
        // A lone block on either side is loaded once and needs one slot; so does an outer A
        // transposed on the PE just in time (its transposes follow the last reads of the
        // previous block in the PE's own order). When two inner slots do not fit either, the
        // inner block gets one (each reload waits for the previous step's last reads).
        let (lb, rb) = (
            (bm * nk) as u64 * self.lhs_width() as u64 * u64::from(self.cfg.lhs_dtype.size_bytes()),
            (bn * nk) as u64 * self.rhs_width() as u64 * u64::from(self.cfg.rhs_dtype.size_bytes()),
        );
        let mut inner_slots_n = if inner == 1 { 1 } else { 2 };
        let outer_fits_twice = 2 * (lb + rb) + 256 <= self.cg.sbuf_free_bytes();
        // The outer block may have two slots at all (more than one block, not A transposed on
        // the PE just in time).
        let outer_many = outer > 1 && !(m_outer && pe);
        let mut outer_slots = if outer_many && outer_fits_twice { 2 } else { 1 };
        let sides =
            |outer_slots, inner_slots| if m_outer { (outer_slots, inner_slots) } else { (inner_slots, outer_slots) };
        let chunks_per_slot = (bm * nk, bn * nk);
        if self.allow_single && inner_slots_n == 2 && !self.blocks_fit(sides(outer_slots, 2), chunks_per_slot, 0) {
            // Two inner slots do not fit: the inner block gets one (and the outer block two
            // again if that fits), then the outer block one too.
            inner_slots_n = 1;
            outer_slots = if outer_many && self.blocks_fit(sides(2, 1), chunks_per_slot, 0) { 2 } else { 1 };
        }
        let single_outer_for_space = outer_many && outer_slots == 1;
        let single_inner = inner > 1 && inner_slots_n == 1;
        (self.single_buffered.a_block, self.single_buffered.b_block) =
            if m_outer { (single_outer_for_space, single_inner) } else { (single_inner, single_outer_for_space) };
        let (lslots, rslots) = sides(outer_slots, inner_slots_n);
        let lhs = self.buffers("a_block", lslots, bm * nk, M_TILE, self.cfg.lhs_dtype, true)?;
        let rhs = self.buffers("b_block", rslots, bn * nk, N_TILE, self.cfg.rhs_dtype, false)?;
        let (inner_slot, inner_fresh) = inner_slots(&steps, inner_slots_n);
        let (lw, rw) = (self.lhs_width(), self.rhs_width());
        let outer_fresh = |i: usize| i == 0 || steps[i].0 != steps[i - 1].0;
        // (m block, n block, A slot, B slot, fresh A, fresh B) of step `i`.
        let at = |i: usize| {
            let (o, ii) = steps[i];
            let inner_s = inner_slot[i];
            if m_outer {
                (mblocks[o], nblocks[ii], lhs[o % lhs.len()], rhs[inner_s], outer_fresh(i), inner_fresh[i])
            } else {
                (mblocks[ii], nblocks[o], lhs[inner_s], rhs[o % rhs.len()], inner_fresh[i], outer_fresh(i))
            }
        };
        if pe {
            self.pe_seq = (0..steps.len()).filter(|&i| at(i).4).flat_map(|i| at(i).0.iter().copied()).collect();
            self.pe_prefetch()?;
        }
        let chunks = self.chunks.clone();
        let single_outer = outer_slots == 1;
        // A block loaded in program order by its step's compute instead of ahead: A on the PE
        // path, and a single-slot outer or refilled inner block (it may not overwrite the block
        // the previous step still reads).
        let in_compute = |lhs_side: bool| {
            let outer_side = lhs_side == m_outer;
            (lhs_side && pe) || (outer_side && single_outer) || (!outer_side && single_inner)
        };
        // The loads of step `i` that go ahead of its compute, restricted to K piece `j` of
        // `pieces` (the inner block is loaded piece by piece; an outer block with two slots
        // goes with piece 0).
        let ahead = |p: &mut Self, i: usize, (j, pieces): (usize, usize)| -> Result<(), CodegenError> {
            let (mb, nb, ls, rs, fresh_a, fresh_b) = at(i);
            let (c0, c1) = (j * nk / pieces, (j + 1) * nk / pieces);
            let part = &chunks[c0..c1];
            let outer_ahead = !single_outer && j == 0;
            if fresh_a && !in_compute(true) {
                if !m_outer {
                    p.load_lhs_block(ls.at((c0 * mb.len()) as i64 * lw), part, mb)?;
                } else if outer_ahead {
                    p.load_lhs_block(ls, &chunks, mb)?;
                }
            }
            if fresh_b && !in_compute(false) {
                if m_outer {
                    p.load_rhs_block(rs.at((c0 * nb.len()) as i64 * rw), part, nb)?;
                } else if outer_ahead {
                    p.load_rhs_block(rs, &chunks, nb)?;
                }
            }
            Ok(())
        };
        ahead(self, 0, (0, 1))?;
        for i in 0..steps.len() {
            let (mb, nb, ls, rs, fresh_a, fresh_b) = at(i);
            if fresh_a && in_compute(true) && !pe {
                self.load_lhs_block(ls, &chunks, mb)?;
            }
            if fresh_b && in_compute(false) {
                self.load_rhs_block(rs, &chunks, nb)?;
            }
            // The next step's loads are spread over this step's m tiles, each piece emitted
            // before that tile's matmuls: the DMA queues are in order, so a whole block queued
            // up front would delay the loads this step still needs (natural stripes of A) by
            // the time it takes to move.
            let pieces = mb.len().min(nk).max(1);
            let (bml, bnl) = (mb.len() as i64, nb.len() as i64);
            for (mi, &m) in mb.iter().enumerate() {
                let l = ls.at(mi as i64 * lw);
                if fresh_a && pe {
                    self.pe_transpose_next(l, bml * lw, m)?;
                }
                if i + 1 < steps.len() && mi < pieces {
                    ahead(self, i + 1, (mi, pieces))?;
                }
                for (ni, &n) in nb.iter().enumerate() {
                    let r = rs.at(ni as i64 * rw);
                    self.tile_group(&|c| l.at(c as i64 * bml * lw), &|c| r.at(c as i64 * bnl * rw), m, n)?;
                }
            }
        }
        Ok(())
    }

    fn blocked_mnk(&mut self) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let (bm, bn, bk) = self.block_tiles();
        let mtiles: Vec<_> = tiles(cfg.m, M_TILE).collect();
        let ntiles: Vec<_> = tiles(cfg.n, N_TILE).collect();
        let (bm, bn, bk) = (bm.min(mtiles.len()), bn.min(ntiles.len()), bk.min(self.chunks.len()).max(1));
        let res_nd = NDTile { partitions: 128, free: vec![(bm * bn) as u32 * N_TILE as u32], dtype: DType::Fp32 };
        // Both operand blocks are refilled every step, two slots each; when they do not fit
        // beside one result block, the inner loop's block (B in m-outer order) gets one slot,
        // then the other one too. A single-slot block is loaded by its step's compute, after
        // the previous step's last reads.
        let mut slots = (2, 2);
        let chunks_per_slot = (bm * bk, bn * bk);
        let res_bytes = res_nd.bytes_per_partition();
        if self.allow_single && !self.blocks_fit(slots, chunks_per_slot, res_bytes) {
            slots = if cfg.order == LoopOrder::MOuter { (2, 1) } else { (1, 2) };
            if !self.blocks_fit(slots, chunks_per_slot, res_bytes) {
                slots = (1, 1);
            }
        }
        self.single_buffered.a_block = slots.0 == 1;
        self.single_buffered.b_block = slots.1 == 1;
        let lhs = self.buffers("a_block", slots.0, bm * bk, M_TILE, cfg.lhs_dtype, true)?;
        let rhs = self.buffers("b_block", slots.1, bn * bk, N_TILE, cfg.rhs_dtype, false)?;
        // Two result blocks when they fit, so that the next pair's first partials do not wait
        // for the stores of the last; one otherwise (each partial then waits only for the
        // store of its own tile).
        let res_slots = if 2 * res_nd.bytes_per_partition() <= self.cg.sbuf_free_bytes() { 2 } else { 1 };
        let many_pairs = mtiles.len().div_ceil(bm) * ntiles.len().div_ceil(bn) > 1;
        self.single_buffered.result = res_slots == 1 && many_pairs;
        let res: Vec<TensorId> =
            (0..res_slots).map(|i| self.cg.alloc_sbuf(&format!("result{i}"), &res_nd)).collect::<Result<_, _>>()?;
        let (lw, rw) = (self.lhs_width(), self.rhs_width());
        let kblocks: Vec<Vec<KChunk>> = self.chunks.chunks(bk).map(<[KChunk]>::to_vec).collect();
        let mblocks: Vec<&[(u64, u32)]> = mtiles.chunks(bm).collect();
        let nblocks: Vec<&[(u64, u32)]> = ntiles.chunks(bn).collect();
        let pairs: Vec<(usize, usize)> = if cfg.order == LoopOrder::MOuter {
            (0..mblocks.len()).flat_map(|a| (0..nblocks.len()).map(move |b| (a, b))).collect()
        } else {
            (0..nblocks.len()).flat_map(|b| (0..mblocks.len()).map(move |a| (a, b))).collect()
        };
        let steps: Vec<(usize, usize)> =
            (0..pairs.len()).flat_map(|bi| (0..kblocks.len()).map(move |kbi| (bi, kbi))).collect();
        let nkb = kblocks.len();
        let pe = self.pe_transpose.is_some();
        // Output tile `i` (m-major in the pair's blocks) of a result block: fp32, 512 apart.
        let result_tile = |result: TensorId, i: usize, msz: u32, nsz: u32| {
            on_chip(result, Memory::Sbuf, DType::Fp32, 0, msz, i as i64 * N_TILE as i64, nsz)
        };
        let nat_width = i64::from(mnk_natural_width(cfg));
        self.pipelined(
            &steps,
            &mut |p, i, (bi, kbi)| {
                let (mb, nb) = (mblocks[pairs[bi].0], nblocks[pairs[bi].1]);
                let kb = &kblocks[kbi];
                if pe {
                    p.load_lhs_natural(i % 2, nat_width, kb, mb)?;
                } else if lhs.len() == 2 {
                    p.load_lhs_block(lhs[i % 2], kb, mb)?;
                }
                if rhs.len() == 2 {
                    p.load_rhs_block(rhs[i % 2], kb, nb)?;
                }
                Ok(())
            },
            &mut |p, i, (bi, kbi)| {
                let (mb, nb) = (mblocks[pairs[bi].0], nblocks[pairs[bi].1]);
                let kb = &kblocks[kbi];
                let result = res[bi % res.len()];
                let s = i % 2;
                let (ls, rs) = (lhs[i % lhs.len()], rhs[i % rhs.len()]);
                if lhs.len() == 1 && !pe {
                    p.load_lhs_block(ls, kb, mb)?;
                }
                if rhs.len() == 1 {
                    p.load_rhs_block(rs, kb, nb)?;
                }
                let k_base = kb[0].k0;
                let k_len: u64 = kb.iter().map(|c| u64::from(c.len)).sum::<u64>().min(p.k_total - k_base);
                for (t, &m) in mb.iter().enumerate() {
                    if let Some((nat, _)) = p.pe_transpose {
                        // Transposed just before its first matmul, after the PE's reads of the
                        // previous contents of the slot.
                        let src = Slot { tensor: nat[s], offset: t as i64 * nat_width, tags: None };
                        let dst = ls.at(t as i64 * lw);
                        p.transpose_stripe(src, k_base, dst, mb.len() as i64 * lw, m.1, kb)?;
                    }
                    for (j, &n) in nb.iter().enumerate() {
                        let (mut acc, psum, pos) = p.open_group(m.1, n.1, k_len)?;
                        for (ci, &chunk) in kb.iter().enumerate() {
                            let l = ls.at(((ci * mb.len() + t) as i64) * lw);
                            let r = rs.at(((ci * nb.len() + j) as i64) * rw);
                            let (st, mv) = p.loaded_views(l, r, chunk, m.1, n.1)?;
                            p.matmul(&mut acc, &psum, st, mv, chunk, k_base, pos)?;
                        }
                        let part = result_tile(result, t * bn + j, m.1, n.1);
                        if kbi == 0 {
                            p.copy(p.evac_engine(p.groups), part, psum)?;
                        } else {
                            // VectorE and GpSimd take turns adding the partials.
                            let engine = if (t * bn + j) % 2 == 0 { ComputeEngine::Dve } else { ComputeEngine::Pool };
                            p.cg.process_new_neuroninst(InstData::TensorTensor(TensorTensorData {
                                engine,
                                op: TensorTensorOp::Add,
                                dst: part.clone(),
                                lhs: part,
                                rhs: psum,
                            }))?;
                        }
                    }
                }
                if kbi + 1 < nkb {
                    return Ok(());
                }
                for (t, &m) in mb.iter().enumerate() {
                    for (j, &n) in nb.iter().enumerate() {
                        let part = result_tile(result, t * bn + j, m.1, n.1);
                        // The DMA casts to the output dtype on the way: no engine copy stands
                        // between the result block and HBM.
                        let dst = hbm(p.c, cfg.out_dtype, AccessPattern::hbm_rows(cfg.n, m.0, m.1, n.0, n.1));
                        p.dma(dst, part)?;
                    }
                }
                Ok(())
            },
        )
    }
}

/// Elements per partition of one m tile's natural K block in `blocked-mnk` (A transposed on
/// the PE).
fn mnk_natural_width(cfg: &GemmConfig) -> u32 {
    let chunk = if cfg.perf_mode == PerfMode::None { 128 } else { 256 };
    cfg.blocks.k.div_ceil(chunk).max(1).saturating_mul(chunk).min(cfg.k) as u32
}

/// The engine that copies PE transpose `i` out of PSUM: a copy takes longer than the
/// transpose, so three engines take turns.
fn transpose_copy_engine(i: usize) -> ComputeEngine {
    match i % 3 {
        0 => ComputeEngine::Dve,
        1 => ComputeEngine::Pool,
        _ => ComputeEngine::Act,
    }
}

/// The (outer, inner) steps of two nested loops in snake order: the inner loop runs backwards
/// on odd outer iterations, so the inner blocks still resident at the end of one outer
/// iteration start the next.
fn snake(outer: usize, inner: usize) -> Vec<(usize, usize)> {
    (0..outer).flat_map(|o| (0..inner).map(move |j| (o, if o % 2 == 1 { inner - 1 - j } else { j }))).collect()
}

/// The slot (of `slots`, one or two) holding each step's inner block, and whether the step
/// must load it: a block still resident in a slot is used again; otherwise it goes to the
/// slot the previous step did not use (whose last reader is the step before that), or to the
/// only slot.
fn inner_slots(steps: &[(usize, usize)], slots: usize) -> (Vec<usize>, Vec<bool>) {
    let mut resident: [Option<usize>; 2] = [None, None];
    let slots = slots.clamp(1, 2);
    let mut prev = 1;
    steps
        .iter()
        .map(|&(_, ii)| {
            let (slot, fresh) = match resident[..slots].iter().position(|r| *r == Some(ii)) {
                Some(s) => (s, false),
                None => {
                    let s = if slots == 1 { 0 } else { 1 - prev };
                    resident[s] = Some(ii);
                    (s, true)
                }
            };
            prev = slot;
            (slot, fresh)
        })
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm::BlockSizes;
    use penguin::Target;

    #[test]
    fn snake_runs_odd_outer_iterations_backwards() {
        assert_eq!(snake(3, 2), vec![(0, 0), (0, 1), (1, 1), (1, 0), (2, 0), (2, 1)]);
        assert_eq!(snake(2, 1), vec![(0, 0), (1, 0)]);
        assert!(snake(0, 4).is_empty());
    }

    #[test]
    fn resident_inner_blocks_are_not_loaded_again() {
        // Three outer x three inner: the two blocks left at the end of an outer iteration
        // start the next one.
        let (slots, fresh) = inner_slots(&snake(3, 3), 2);
        assert_eq!(slots, vec![0, 1, 0, 0, 1, 0, 0, 1, 0]);
        assert_eq!(fresh, vec![true, true, true, false, false, true, false, false, true]);
        // A single inner block is loaded once.
        let (slots, fresh) = inner_slots(&snake(4, 1), 1);
        assert_eq!((slots, fresh), (vec![0; 4], vec![true, false, false, false]));
        // One slot: only the block the previous step used is still resident.
        let (slots, fresh) = inner_slots(&snake(3, 3), 1);
        assert_eq!(slots, vec![0; 9]);
        assert_eq!(fresh, vec![true, true, true, false, true, true, false, true, true]);
    }

    /// Two candidates of equal modeled time: the one that moves fewer HBM bytes wins; a
    /// leaner one that is slower than the tolerance does not.
    #[test]
    fn auto_prefers_fewer_hbm_bytes_among_equally_fast_candidates() {
        let cfg = GemmConfig::new(512, 256, 2048, DType::Bf16, Target::Trn2);
        for (slowdown, lean_wins) in [(1.0 + AUTO_TIME_TOLERANCE / 2.0, true), (1.0 + 2.0 * AUTO_TIME_TOLERANCE, false)]
        {
            // The lean candidate (the largest M block) is `slowdown` slower.
            let mut cost = |plan: &GemmPlan| -> Result<AutoCost, CodegenError> {
                let lean = plan.config.schedule == Schedule::BlockedMn && plan.config.blocks.m >= 512;
                let time = if lean { 1000.0 * slowdown } else { 1000.0 };
                Ok(AutoCost { time, hbm_bytes: if lean { 1 } else { 2 } })
            };
            let (plan, choice) = plan_gemm_auto(&cfg, usize::MAX, &mut cost).unwrap();
            let lean = plan.config.schedule == Schedule::BlockedMn && plan.config.blocks.m >= 512;
            assert_eq!(lean, lean_wins, "slowdown {slowdown}: chose {:?}", plan.config.blocks);
            assert_eq!(choice.hbm_bytes, if lean_wins { 1 } else { 2 });
            assert!(choice.evaluated > 2);
        }
    }

    /// The blocked schedules at their default blocks are always weighed, however the
    /// estimate ranks them: a cost that only they win is found.
    #[test]
    fn auto_weighs_the_blocked_defaults() {
        let cfg = GemmConfig::new(2048, 1024, 4096, DType::Bf16, Target::Trn2);
        for schedule in [Schedule::BlockedMn, Schedule::BlockedMnk] {
            let defaults = BlockSizes::for_schedule(schedule);
            let mut cost = |plan: &GemmPlan| -> Result<AutoCost, CodegenError> {
                let wanted = plan.config.schedule == schedule && plan.config.blocks == defaults;
                Ok(AutoCost { time: if wanted { 1.0 } else { 2.0 }, hbm_bytes: 0 })
            };
            // The estimate alone would not have picked it.
            let top = auto_candidates(&cfg).into_iter().min_by(|x, y| estimate_ns(x).total_cmp(&estimate_ns(y)));
            assert!(top.is_some_and(|t| (t.schedule, t.blocks) != (schedule, defaults)));
            let (plan, choice) = plan_gemm_auto(&cfg, 1, &mut cost).unwrap();
            assert_eq!((plan.config.schedule, plan.config.blocks), (schedule, defaults));
            assert_eq!(choice.evaluated, 3, "two defaults and a shortlist of one");
        }
    }

    /// The estimate charges blocked-mnk's K-block additions: with the same blocks, more K
    /// blocks never estimate faster.
    #[test]
    fn estimate_charges_k_block_additions() {
        let mut cfg = GemmConfig::new(2048, 11008, 4096, DType::Bf16, Target::Trn2);
        cfg.schedule = Schedule::BlockedMnk;
        cfg.blocks = BlockSizes { m: 256, n: 4096, k: 128 };
        let small = estimate_ns(&cfg);
        cfg.blocks.k = 1024;
        assert!(estimate_ns(&cfg) < small);
    }
}
