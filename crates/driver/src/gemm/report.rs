//! The `ntile gemm` report: what the kernel is and what the cycle model found (`--json`), and
//! the short human summary.

use codegen::{AutoChoice, GemmConfig, GemmPlan, Schedule};
use penguin::{DType, HwProfile, Target};
use serde::Serialize;

use crate::error::CliError;
use crate::extrapolate::Figures;
use crate::reference::Check;

use super::lhs_transpose_name;

/// The `--json` report (keys are stable once added).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Target name.
    pub target: String,
    /// Rows of C.
    pub m: u64,
    /// Contraction length.
    pub k: u64,
    /// Columns of C.
    pub n: u64,
    /// Matmul dtype of A.
    pub lhs_dtype: String,
    /// Matmul dtype of B.
    pub rhs_dtype: String,
    /// Dtype of C.
    pub out_dtype: String,
    /// PE perf mode.
    pub perf_mode: String,
    /// Structured sparsity pattern, if any.
    pub sparsity: Option<String>,
    /// Loop nest.
    pub schedule: String,
    /// How A reaches its `[K, M]` stationary layout: `none` (given as `[K, M]`), `dma` (a
    /// transposing DMA) or `pe` (a PE transpose through PSUM).
    pub lhs_transpose: String,
    /// Dtype of A and B in HBM (cast to the matmul dtypes on load when they differ).
    pub hbm_dtype: String,
    /// Output tiles along M and N.
    pub output_tiles: [u64; 2],
    /// Rows x columns of a full output tile (smaller than 128x512 when C is).
    pub tile_shape: [u64; 2],
    /// Rows x columns of the last (bottom-right) output tile, the ragged edge.
    pub edge_tile_shape: [u64; 2],
    /// K steps (matmuls per output tile) and the contraction rows of a full one.
    pub k_steps: u64,
    /// Contraction rows of a full K step (256 in `double_row`).
    pub k_step_rows: u64,
    /// Block sizes in elements (`blocked-mn`, `blocked-mnk`; null for the other schedules).
    pub blocks: Option<Blocks>,
    /// Outer block loop (`m-outer` or `n-outer`; null for unblocked schedules).
    pub loop_order: Option<String>,
    /// Penguin instruction count.
    pub penguin_instructions: u64,
    /// BIR instruction count.
    pub bir_instructions: u64,
    /// Matmul count.
    pub matmuls: u64,
    /// Accumulation groups.
    pub psum_groups: u64,
    /// Most accumulation groups (PSUM banks) live at once.
    pub max_live_psum_banks: u32,
    /// Highest SBUF byte used per partition.
    pub sbuf_peak_bytes_per_partition: u64,
    /// Refilled blocks given one slot instead of two because two do not fit SBUF
    /// (`a_block`, `b_block`, `result`).
    pub single_buffered: Vec<String>,
    /// Bytes moved to or from HBM.
    pub hbm_bytes: u64,
    /// The check against the fp64 reference, or null with `--no-sim` or `--no-check`.
    pub check: Option<Check>,
    /// Modeled time of the lowered program (cycle model), in microseconds.
    pub modeled_time_us: f64,
    /// Hardware matmul FLOPs / (peak x modeled time).
    pub hfu: f64,
    /// Busy fraction of each engine class over the modeled time (dma: mean of the 16 queues).
    pub engine_busy: sim::EngineBusy,
    /// The I/O lower bound: `2*M*N*K/sqrt(S)` words of A and B for an SBUF of S words of the
    /// matmul dtype, in bytes of their HBM dtype, plus C once in its dtype; never below
    /// `hbm_read_once_bytes`.
    pub io_lower_bound_bytes: f64,
    /// Every HBM tensor moved once: each input read once, C written once, each in its own
    /// dtype (a sparse A with its tags).
    pub hbm_read_once_bytes: u64,
    /// What bounds the modeled time: the critical path's time per engine class.
    pub bottleneck: Option<Bottleneck>,
    /// PE time if every matmul ran back to back at `max(N, 64)` cycles, in microseconds.
    pub tile_quantized_ideal_us: f64,
    /// What `--schedule auto` chose (null for an explicit schedule).
    pub auto: Option<AutoReport>,
    /// How the program was extrapolated from reduced GEMMs (null when it was planned whole).
    pub extrapolated: Option<ExtrapolatedReport>,
    /// Wall-clock milliseconds of each phase.
    pub wall_ms: WallMs,
}

/// Block sizes of a blocked schedule, in elements.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Blocks {
    /// Rows of C per block.
    pub m: u64,
    /// Columns of C per block.
    pub n: u64,
    /// Contraction rows per block (`blocked-mnk`; the whole K for `blocked-mn`).
    pub k: u64,
}

/// The engine class that bounds the modeled time.
#[derive(Clone, Debug, Serialize)]
pub struct Bottleneck {
    /// The class with the most time on the critical path (`pe`, `act`, `dve`, `pool`, `sp`,
    /// `dma`).
    pub engine: String,
    /// Its share of the modeled time.
    pub share: f64,
    /// Every class's share of the modeled time along the critical path (`idle`: nothing
    /// ran), largest first.
    pub critical_path: indexmap::IndexMap<String, f64>,
}

/// The choice `--schedule auto` made.
#[derive(Clone, Debug, Serialize)]
pub struct AutoReport {
    /// Candidates modeled with the cycle model.
    pub evaluated: usize,
    /// Candidates that did not fit SBUF.
    pub rejected: usize,
    /// Candidates not weighed: an extrapolated GEMM's candidates whose reduced GEMMs are too
    /// large to weigh quickly or do not fit (0 otherwise).
    pub skipped: usize,
    /// Chosen block sizes in elements and loop order.
    pub block_m: u64,
    /// Block columns.
    pub block_n: u64,
    /// Block contraction rows.
    pub block_k: u64,
    /// Outer block loop.
    pub order: String,
    /// The proxy `[m, k, n]` the candidates were weighed on, when the GEMM is too large to
    /// unroll and its choice was extrapolated (null when they were weighed at full size).
    pub weighed_on: Option<[u64; 3]>,
}

/// How an extrapolated program was obtained (see [`crate::extrapolate`]).
#[derive(Clone, Debug, Serialize)]
pub struct ExtrapolatedReport {
    /// Reduced GEMMs planned, lowered and rolled.
    pub reduced_plans: usize,
    /// Their BIR instructions, in total.
    pub reduced_instructions: u64,
    /// The base reduced GEMM `[m, k, n]`.
    pub base: [u64; 3],
    /// The period of each reduced dimension in elements (`m`, `k`, `n`; 0: not reduced).
    pub periods: [u64; 3],
    /// Whether the reduced functions rolled along the schedule's loop nest were fitted (and
    /// the result lowered loop by loop), rather than their rolled lowerings.
    pub along_nest: bool,
}

/// Wall-clock milliseconds of each phase.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct WallMs {
    /// Planning and verification.
    pub plan: f64,
    /// Lowering and BIR verification.
    pub lower: f64,
    /// The cycle model of the chosen program.
    pub model: f64,
    /// Simulation.
    pub simulate: f64,
    /// The fp64 reference.
    pub reference: f64,
}

/// The cycle model's view of the planned program.
pub(super) struct Modeled<'a> {
    pub(super) program: &'a bir::Program,
    pub(super) cycle: &'a sim::CycleReport,
    pub(super) auto: Option<&'a AutoChoice>,
    pub(super) hw: &'a HwProfile,
}

/// `2*M*N*K/sqrt(S)` words of A and B for an SBUF of S words of the matmul dtype, in bytes of
/// their HBM dtype, plus C once in its own dtype; never below the read-once minimum.
fn io_lower_bound_bytes(cfg: &GemmConfig, read_once: u64) -> f64 {
    let on_chip = f64::from(cfg.lhs_dtype.size_bytes().max(cfg.rhs_dtype.size_bytes()));
    let in_hbm = f64::from(cfg.input_dtype.size_bytes());
    let sbuf_words = 128.0 * f64::from(cfg.target.info().statebuf_par_size_in_bytes) / on_chip;
    let (m, k, n) = (cfg.m as f64, cfg.k as f64, cfg.n as f64);
    let bound = 2.0 * m * n * k / sbuf_words.sqrt() * in_hbm + m * n * f64::from(cfg.out_dtype.size_bytes());
    bound.max(read_once as f64)
}

/// The bottleneck from the critical path of the modeled program.
fn bottleneck(program: &bir::Program, cycle: &sim::CycleReport) -> Option<Bottleneck> {
    let path = sim::critical_path(program, cycle);
    let (engine, share) = path.bottleneck()?;
    Some(Bottleneck { engine: engine.to_string(), share, critical_path: path.shares().into_iter().collect() })
}

/// Every matmul back to back at `max(N, 64)` TensorE cycles (4x for fp32), in us.
fn tile_quantized_ideal_us(cfg: &GemmConfig, hw: &HwProfile) -> f64 {
    let chunks = codegen::k_chunks(cfg).0.len() as f64;
    let mt = cfg.m.div_ceil(codegen::M_TILE) as f64;
    let n_cycles: f64 = (0..cfg.n.div_ceil(codegen::N_TILE))
        .map(|i| ((cfg.n - i * codegen::N_TILE).min(codegen::N_TILE) as f64).max(hw.mm_min_cycles))
        .sum();
    let fp32 = if cfg.lhs_dtype == DType::Fp32 || cfg.rhs_dtype == DType::Fp32 { hw.mm_fp32_factor } else { 1.0 };
    mt * chunks * n_cycles * fp32 / hw.pe_ghz / 1e3
}

pub(super) fn report_of(
    cfg: &GemmConfig,
    plan: &GemmPlan,
    modeled: &Modeled<'_>,
    check: Option<Check>,
    wall_ms: WallMs,
) -> Report {
    let figures = Figures::of(plan, modeled.program);
    let bottleneck = bottleneck(modeled.program, modeled.cycle);
    report_from(cfg, &figures, modeled.cycle, modeled.hw, modeled.auto, bottleneck, check, wall_ms)
}

/// The report from the plan's figures and the cycle model (an extrapolated GEMM has no plan
/// or unrolled program, and no critical path).
#[expect(clippy::too_many_arguments, reason = "every part of the report, each from its own phase")]
pub(super) fn report_from(
    cfg: &GemmConfig,
    figures: &Figures,
    cycle: &sim::CycleReport,
    hw: &HwProfile,
    auto: Option<&AutoChoice>,
    bottleneck: Option<Bottleneck>,
    check: Option<Check>,
    wall_ms: WallMs,
) -> Report {
    Report {
        target: cfg.target.to_string(),
        m: cfg.m,
        k: cfg.k,
        n: cfg.n,
        lhs_dtype: cfg.lhs_dtype.to_string(),
        rhs_dtype: cfg.rhs_dtype.to_string(),
        out_dtype: cfg.out_dtype.to_string(),
        perf_mode: cfg.perf_mode.to_string(),
        sparsity: cfg.sparsity.map(|p| p.to_string()),
        schedule: cfg.schedule.to_string(),
        lhs_transpose: lhs_transpose_name(cfg).to_string(),
        hbm_dtype: cfg.input_dtype.to_string(),
        output_tiles: [cfg.m.div_ceil(codegen::M_TILE), cfg.n.div_ceil(codegen::N_TILE)],
        tile_shape: [cfg.m.min(codegen::M_TILE), cfg.n.min(codegen::N_TILE)],
        edge_tile_shape: [edge(cfg.m, codegen::M_TILE), edge(cfg.n, codegen::N_TILE)],
        k_steps: codegen::k_chunks(cfg).0.len() as u64,
        k_step_rows: codegen::k_chunks(cfg).0.first().map_or(0, |c| u64::from(c.len)),
        blocks: crate::kernel_info::blocks_of(cfg).map(|b| Blocks {
            m: b.m,
            n: b.n,
            k: if cfg.schedule == Schedule::BlockedMnk { b.k } else { cfg.k },
        }),
        loop_order: crate::kernel_info::blocks_of(cfg).map(|_| cfg.order.name().to_string()),
        penguin_instructions: figures.penguin_instructions,
        bir_instructions: figures.bir_instructions,
        matmuls: figures.matmuls,
        psum_groups: figures.psum_groups,
        max_live_psum_banks: figures.max_live_psum_groups,
        sbuf_peak_bytes_per_partition: figures.sbuf_peak_bytes_per_partition,
        single_buffered: figures.single_buffered().names().into_iter().map(String::from).collect(),
        hbm_bytes: figures.hbm_bytes,
        check,
        modeled_time_us: cycle.total_us(),
        hfu: cycle.hfu(),
        engine_busy: cycle.engine_busy_summary(),
        io_lower_bound_bytes: io_lower_bound_bytes(cfg, figures.hbm_read_once_bytes),
        hbm_read_once_bytes: figures.hbm_read_once_bytes,
        bottleneck,
        tile_quantized_ideal_us: tile_quantized_ideal_us(cfg, hw),
        auto: auto.map(|a| AutoReport {
            evaluated: a.evaluated,
            rejected: a.rejected,
            skipped: a.skipped,
            block_m: a.config.blocks.m,
            block_n: a.config.blocks.n,
            block_k: a.config.blocks.k,
            order: a.config.order.name().to_string(),
            weighed_on: None,
        }),
        extrapolated: None,
        wall_ms,
    }
}

/// The extent of the last tile of `total` in tiles of `tile`.
fn edge(total: u64, tile: u64) -> u64 {
    match total % tile {
        0 => total.min(tile),
        r => r,
    }
}

pub(super) fn json(report: &Report) -> Result<String, CliError> {
    serde_json::to_string_pretty(report)
        .map(|s| s + "\n")
        .map_err(|e| CliError::internal(format!("cannot encode the report: {e}")))
}

fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The short human summary.
pub fn summary(r: &Report) -> String {
    let target: Target = r.target.parse().unwrap_or(Target::Trn2);
    let cap = u64::from(target.info().statebuf_par_size_in_bytes);
    let [mt, nt] = r.output_tiles;
    let mut s = format!(
        "ntile gemm {}x{}x{}  {} x {} -> {}  on {}  (schedule {})\n",
        r.m, r.k, r.n, r.lhs_dtype, r.rhs_dtype, r.out_dtype, r.target, r.schedule
    );
    let [tm, tn] = r.tile_shape;
    let edges = if r.edge_tile_shape == r.tile_shape {
        String::new()
    } else {
        format!(" (edge {}x{})", r.edge_tile_shape[0], r.edge_tile_shape[1])
    };
    s += &format!(
        "  plan    {mt}x{nt} output tiles of {tm}x{tn}{edges}, {} K steps of {} rows: {} matmuls in {} PSUM groups (max {} live)\n",
        r.k_steps, r.k_step_rows, r.matmuls, r.psum_groups, r.max_live_psum_banks
    );
    if let Some(x) = &r.extrapolated {
        let [bm, bk, bn] = x.base;
        s += &format!(
            "          extrapolated from {} reduced plans ({} BIR instructions; base {bm}x{bk}x{bn}){}, not unrolled\n",
            x.reduced_plans,
            x.reduced_instructions,
            if x.along_nest { " along the schedule's loop nest" } else { "" }
        );
    }
    let blocks = match (&r.blocks, &r.loop_order) {
        (Some(b), Some(order)) => format!("blocks m {} n {} k {}, {order}", b.m, b.n, b.k),
        _ => "no blocks".to_string(),
    };
    s += &format!(
        "  loop    {} ({blocks}); A transposed by {}; A and B {} in HBM\n",
        r.schedule, r.lhs_transpose, r.hbm_dtype
    );
    s += &format!(
        "  ir      {} penguin / {} BIR instructions; SBUF {} of {} per partition; HBM traffic {}\n",
        r.penguin_instructions,
        r.bir_instructions,
        kib(r.sbuf_peak_bytes_per_partition),
        kib(cap),
        mib(r.hbm_bytes)
    );
    if !r.single_buffered.is_empty() {
        s += &format!(
            "  buffers {} single-buffered: two slots do not fit SBUF, so each refill waits for the last reads\n",
            r.single_buffered.join(", ")
        );
    }
    s += &format!(
        "  model   {:.1} us modeled (ideal PE time {:.1} us), HFU {:.2}; HBM {:.2}x the read-once minimum ({}), {:.2}x the I/O lower bound\n",
        r.modeled_time_us,
        r.tile_quantized_ideal_us,
        r.hfu,
        r.hbm_bytes as f64 / (r.hbm_read_once_bytes as f64).max(1.0),
        mib(r.hbm_read_once_bytes),
        r.hbm_bytes as f64 / r.io_lower_bound_bytes.max(1.0)
    );
    let b = &r.engine_busy;
    for (name, frac) in [("pe", b.pe), ("act", b.act), ("dve", b.dve), ("pool", b.pool), ("dma", b.dma)] {
        let filled = (frac.clamp(0.0, 1.0) * 20.0).round() as usize;
        s += &format!(
            "          {name:<4} [{}{}] {:>3.0}%\n",
            "#".repeat(filled),
            ".".repeat(20 - filled),
            frac * 100.0
        );
    }
    if let Some(bn) = &r.bottleneck {
        let others: Vec<String> = bn
            .critical_path
            .iter()
            .filter(|(c, _)| **c != bn.engine)
            .map(|(c, v)| format!("{c} {:.0}%", v * 100.0))
            .collect();
        let others = if others.is_empty() { String::new() } else { format!(" ({})", others.join(", ")) };
        s += &format!(
            "  bottleneck {}: {:.0}% of the modeled time on the critical path{others}\n",
            bn.engine,
            bn.share * 100.0
        );
    } else if r.extrapolated.is_some() {
        s += "  bottleneck not computed: an extrapolated program has no per-instruction timeline\n";
    }
    if let Some(a) = &r.auto {
        let skipped = if a.skipped > 0 { format!(", {} not weighed", a.skipped) } else { String::new() };
        let on = a.weighed_on.map_or(String::new(), |[m, k, n]| format!(", weighed on {m}x{k}x{n}"));
        s += &format!(
            "  auto    chose {} of {} modeled candidates ({} did not fit SBUF{skipped}){on}\n",
            r.schedule, a.evaluated, a.rejected
        );
    }
    match &r.check {
        Some(c) => {
            let verdict =
                if c.passed { "PASS".to_string() } else { format!("FAIL ({} elements outside the bound)", c.failures) };
            s += &format!(
                "  check   {verdict}: max |err| {:.3e}, max |err|/(|A|@|B|) {:.3e}, max |err|/bound {:.2e} vs fp64 of the rounded inputs\n          {}\n",
                c.max_abs_err,
                c.max_rel_err,
                c.max_err_over_bound,
                c.describe()
            );
        }
        // Only a simulated run spends time simulating.
        None if r.wall_ms.simulate > 0.0 => s += "  check   skipped (--no-check)\n",
        None => s += "  check   skipped (--no-sim)\n",
    }
    s += &format!(
        "  time    plan {:.1} ms, lower {:.1} ms, simulate {:.1} ms, reference {:.1} ms\n",
        r.wall_ms.plan, r.wall_ms.lower, r.wall_ms.simulate, r.wall_ms.reference
    );
    s
}
