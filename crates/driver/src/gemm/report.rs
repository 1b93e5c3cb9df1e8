//! The report of a GEMM run: what the kernel is and what the cycle model found (the
//! `--json` report of `ntile gemm`, whose keys are stable once added).

use codegen::{AutoChoice, GemmConfig, GemmPlan, Tiling};
use penguin::{DType, HwProfile};
use serde::Serialize;

use crate::extrapolate::figures::Figures;
use crate::reference::Check;

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
    /// What `--schedule auto` chose, or the blocks searched for an explicit blocked schedule
    /// without block sizes (null when nothing was searched).
    pub auto: Option<AutoReport>,
    /// How the program was extrapolated from reduced GEMMs (null when it was planned whole).
    pub extrapolated: Option<ExtrapolatedReport>,
    /// Wall-clock milliseconds of each phase.
    pub wall_ms: WallMs,
    /// The cores of a GEMM run on a logical NeuronCore of two (`--lnc 2`; absent for one
    /// core): how C was divided and each core's figures. The figures above are then the
    /// chip's: the time to the last core's end, FLOPs over both cores' peak, the cores' HBM
    /// bytes, matmuls and instructions added up, engine busy fractions averaged over them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lnc: Option<LncReport>,
}

/// How a GEMM was divided between the cores of a logical NeuronCore, and what each did.
#[derive(Clone, Debug, Serialize)]
pub struct LncReport {
    /// Physical cores.
    pub cores: u32,
    /// The dimension of C divided between them (`m` or `n`).
    pub split: String,
    /// Whether the split was weighed by the cycle model (`false`: given with `--split`).
    pub searched: bool,
    /// Each split weighed, with its modeled time in microseconds.
    pub weighed: indexmap::IndexMap<String, f64>,
    /// Fraction of the modeled time the cores' shared HBM budget was busy.
    pub hbm_shared_busy: f64,
    /// The shared HBM budget (the profile's `hbm_shared_bytes_per_ns`), GB/s.
    pub hbm_shared_gb_per_s: f64,
    /// Whether the cores were modeled apart (a GEMM too large to unroll: each core's share
    /// extrapolated alone, the chip's time the slower core's or the shared budget's for both
    /// cores' HBM bytes) rather than replayed together; absent from the JSON when `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub modeled_apart: bool,
    /// Each core's share and figures.
    pub per_core: Vec<CoreReport>,
}

/// One core's share of the GEMM and what the cycle model found for it.
#[derive(Clone, Debug, Serialize)]
pub struct CoreReport {
    /// Its window of C.
    pub share: codegen::Share,
    /// Its loop nest (auto's choice for its share, when searched).
    pub schedule: String,
    /// Its blocks, for a blocked schedule.
    pub blocks: Option<Blocks>,
    /// When its last instruction ends, in microseconds.
    pub modeled_time_us: f64,
    /// Its FLOPs over its own peak for the chip's modeled time.
    pub hfu: f64,
    /// Its engines' busy fractions over the chip's modeled time.
    pub engine_busy: sim::EngineBusy,
    /// Its HBM bytes.
    pub hbm_bytes: u64,
    /// Its matmuls.
    pub matmuls: u64,
    /// Its BIR instructions.
    pub bir_instructions: u64,
    /// Its highest SBUF byte per partition.
    pub sbuf_peak_bytes_per_partition: u64,
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

/// What a search chose, in [`AutoReport::searched`] (`schedule` or `blocks` in JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Searched {
    /// `auto`: the schedule, blocks, loop order and transpose method.
    Schedule,
    /// An explicit blocked schedule given without block sizes: its blocks and, unless fixed,
    /// its loop order and transpose method.
    Blocks,
}

/// The choice `--schedule auto` made, or the blocks searched for an explicit blocked
/// schedule given without block sizes.
#[derive(Clone, Debug, Serialize)]
pub struct AutoReport {
    /// What was searched.
    pub searched: Searched,
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
    /// Whether nothing was reduced: the full GEMM was planned in loops (its loops emitted
    /// with gaps, then lowered loop by loop); `reduced_plans` is then 1 and
    /// `reduced_instructions` the Penguin instructions the planner emitted.
    pub planned_in_loops: bool,
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
pub(super) fn io_lower_bound_bytes(cfg: &GemmConfig, read_once: u64) -> f64 {
    let on_chip = f64::from(cfg.lhs_dtype.size_bytes().max(cfg.rhs_dtype.size_bytes()));
    let in_hbm = f64::from(cfg.input_dtype.size_bytes());
    let sbuf_words = 128.0 * f64::from(cfg.target.info().statebuf_par_size_in_bytes) / on_chip;
    let (m, k, n) = (cfg.m as f64, cfg.k as f64, cfg.n as f64);
    let bound = 2.0 * m * n * k / sbuf_words.sqrt() * in_hbm + m * n * f64::from(cfg.out_dtype.size_bytes());
    bound.max(read_once as f64)
}

/// The bottleneck of a critical path.
pub(super) fn bottleneck_of(path: &sim::CriticalPath) -> Option<Bottleneck> {
    let (engine, share) = path.bottleneck()?;
    Some(Bottleneck { engine: engine.to_string(), share, critical_path: path.shares().into_iter().collect() })
}

/// The bottleneck from the critical path of the modeled program.
fn bottleneck(program: &bir::Program, cycle: &sim::CycleReport) -> Option<Bottleneck> {
    bottleneck_of(&sim::critical_path(program, cycle))
}

/// The bottleneck from the critical path across the chip's cores.
fn chip_bottleneck(chip: &bir::Chip, cycle: &sim::ChipReport) -> Option<Bottleneck> {
    bottleneck_of(&sim::critical_path_chip(chip, cycle))
}

/// Every matmul back to back at `max(N, 64)` TensorE cycles (4x for fp32), in us.
fn tile_quantized_ideal_us(cfg: &GemmConfig, tiling: &Tiling, hw: &HwProfile) -> f64 {
    let chunks = tiling.k_chunks.len() as f64;
    let mt = tiling.tiles[0] as f64;
    let n_cycles: f64 = (0..tiling.tiles[1])
        .map(|i| ((cfg.n - i * codegen::N_TILE).min(codegen::N_TILE) as f64).max(hw.mm_min_cycles))
        .sum();
    let fp32 = if cfg.lhs_dtype == DType::Fp32 || cfg.rhs_dtype == DType::Fp32 { hw.mm_fp32_factor } else { 1.0 };
    mt * chunks * n_cycles * fp32 / hw.pe_ghz / 1e3
}

/// How A reaches its `[K, M]` stationary layout (see [`Report::lhs_transpose`]).
fn lhs_transpose_name(cfg: &GemmConfig) -> &'static str {
    if cfg.lhs_transposed && cfg.sparsity.is_none() {
        "none"
    } else if cfg.transposes_lhs_on_pe() {
        "pe"
    } else {
        "dma"
    }
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
    let facts = Facts { tiling: &plan.tiling, figures: &figures, hw: modeled.hw };
    report_from(cfg, &facts, modeled.cycle, modeled.auto, bottleneck, check, wall_ms)
}

/// What the report states of a kernel besides its model: its tiling, the plan's figures and
/// the hardware profile.
pub(super) struct Facts<'a> {
    pub(super) tiling: &'a Tiling,
    pub(super) figures: &'a Figures,
    pub(super) hw: &'a HwProfile,
}

/// The report from the plan's figures and the cycle model (an extrapolated GEMM has no plan
/// or unrolled program, and no critical path).
pub(super) fn report_from(
    cfg: &GemmConfig,
    facts: &Facts<'_>,
    cycle: &sim::CycleReport,
    auto: Option<&AutoChoice>,
    bottleneck: Option<Bottleneck>,
    check: Option<Check>,
    wall_ms: WallMs,
) -> Report {
    let Facts { tiling, figures, hw } = *facts;
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
        output_tiles: tiling.tiles,
        tile_shape: tiling.tile_shape,
        edge_tile_shape: tiling.edge_tile_shape,
        k_steps: tiling.k_chunks.len() as u64,
        k_step_rows: tiling.k_step_rows(),
        blocks: tiling.blocks.map(|b| Blocks { m: b.m, n: b.n, k: b.k }),
        loop_order: tiling.loop_order.map(|o| o.name().to_string()),
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
        tile_quantized_ideal_us: tile_quantized_ideal_us(cfg, tiling, hw),
        auto: auto.map(|a| AutoReport {
            searched: Searched::Schedule,
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
        lnc: None,
    }
}

/// What a chip's report is made of: the whole GEMM, each core's share, plan, report and
/// model, and the chip's model.
pub(super) struct ChipFacts<'a> {
    pub(super) whole: &'a GemmConfig,
    pub(super) split: codegen::Split,
    pub(super) searched: bool,
    pub(super) weighed: indexmap::IndexMap<String, f64>,
    pub(super) shares: &'a [codegen::Share],
    pub(super) cores: Vec<Report>,
    pub(super) cycle: &'a sim::ChipReport,
    pub(super) chip: &'a bir::Chip,
}

/// The chip's report: core 0's report with the chip's figures (see [`Report::lnc`]) and
/// each core's own.
pub(super) fn chip_report(facts: ChipFacts<'_>, check: Option<Check>, wall_ms: WallMs) -> Option<Report> {
    let ChipFacts { whole, split, searched, weighed, shares, cores, cycle, chip } = facts;
    let per_core = cores
        .iter()
        .zip(shares)
        .zip(&cycle.cores)
        .map(|((r, share), c)| CoreReport {
            share: *share,
            schedule: r.schedule.clone(),
            blocks: r.blocks,
            modeled_time_us: c.total_us(),
            hfu: c.hfu_over(cycle.total_ns),
            engine_busy: c.engine_busy_over(cycle.total_ns),
            hbm_bytes: r.hbm_bytes,
            matmuls: r.matmuls,
            bir_instructions: r.bir_instructions,
            sbuf_peak_bytes_per_partition: r.sbuf_peak_bytes_per_partition,
        })
        .collect();
    let first = cores.first()?;
    let sum = |f: fn(&Report) -> u64| cores.iter().map(f).fold(0u64, u64::saturating_add);
    let tiles = |i: usize| cores.iter().map(|r| r.output_tiles[i]).sum::<u64>();
    let output_tiles = match split {
        codegen::Split::M => [tiles(0), first.output_tiles[1]],
        codegen::Split::N => [first.output_tiles[0], tiles(1)],
        codegen::Split::K => first.output_tiles,
    };
    let k_split = split == codegen::Split::K;
    Some(Report {
        m: whole.m,
        k: whole.k,
        n: whole.n,
        out_dtype: whole.out_dtype.to_string(),
        k_steps: if k_split { sum(|r| r.k_steps) } else { first.k_steps },
        output_tiles,
        penguin_instructions: sum(|r| r.penguin_instructions),
        bir_instructions: sum(|r| r.bir_instructions),
        matmuls: sum(|r| r.matmuls),
        psum_groups: sum(|r| r.psum_groups),
        max_live_psum_banks: cores.iter().map(|r| r.max_live_psum_banks).max().unwrap_or(0),
        sbuf_peak_bytes_per_partition: cores.iter().map(|r| r.sbuf_peak_bytes_per_partition).max().unwrap_or(0),
        hbm_bytes: cycle.hbm_bytes(),
        check,
        modeled_time_us: cycle.total_us(),
        hfu: cycle.hfu(),
        engine_busy: cycle.mean_busy(),
        io_lower_bound_bytes: io_lower_bound_bytes(whole, first.hbm_read_once_bytes),
        bottleneck: chip_bottleneck(chip, cycle),
        tile_quantized_ideal_us: cores.iter().map(|r| r.tile_quantized_ideal_us).fold(0.0, f64::max),
        wall_ms,
        lnc: Some(LncReport {
            cores: cores.len() as u32,
            split: split.name().to_string(),
            searched,
            weighed,
            hbm_shared_busy: cycle.hbm_shared_fraction(),
            hbm_shared_gb_per_s: cycle.hbm_shared_bytes_per_ns,
            modeled_apart: false,
            per_core,
        }),
        ..first.clone()
    })
}
