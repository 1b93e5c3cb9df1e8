//! `ntile gemm`: plan, lower, simulate and check one GEMM, and report on it.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};
use codegen::{plan_gemm, plan_gemm_auto_with, AutoChoice, BlockSizes, GemmConfig, GemmPlan, LoopOrder, Schedule};
use penguin::{DType, FunctionView, HwProfile, PerfMode, SparsityPattern, Target};
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::error::CliError;
use crate::npy::{self, OutKind};
use crate::reference::{self, Check};

/// Where A is transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TransposeOn {
    /// By the DMA while loading (trn2/trn3).
    Dma,
    /// On the PE through PSUM, after a natural (contiguous) load.
    Pe,
}

/// Which IR `--emit` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// The verified Penguin function.
    Penguin,
    /// The lowered BIR program.
    Bir,
}

/// Flags of `ntile gemm`.
#[derive(Args, Clone, Debug, Default)]
#[command(after_long_help = "\
Examples:
  ntile gemm                                   1024x1024x1024 bf16 on trn2, random inputs
  ntile gemm --m 300 --k 1000 --n 777 --dtype fp16 --target trn1
  ntile gemm --lhs a.npy --rhs b.npy -o c.npy  your float32 arrays, cast to bf16 on load
  ntile gemm --m 4096 --k 4096 --n 4096 --no-sim --json
  ntile gemm --m 128 --k 256 --n 512 --emit penguin

Exit codes: 0 ok, 1 result outside the error bound, 2 bad input, 3 internal error.")]
pub struct GemmArgs {
    /// Rows of A and C [default: 1024, or taken from --lhs]
    #[arg(long)]
    pub m: Option<u64>,
    /// Contraction length [default: 1024, or taken from --lhs/--rhs]
    #[arg(long)]
    pub k: Option<u64>,
    /// Columns of B and C [default: 1024, or taken from --rhs]
    #[arg(long)]
    pub n: Option<u64>,
    /// Matmul dtype of both operands: fp32, bf16, fp16, fp8e4m3, fp8e5m2, fp8e4m3fn (trn3)
    #[arg(long, default_value = "bf16")]
    pub dtype: Option<DType>,
    /// Matmul dtype of A (overrides --dtype)
    #[arg(long)]
    pub lhs_dtype: Option<DType>,
    /// Matmul dtype of B (overrides --dtype)
    #[arg(long)]
    pub rhs_dtype: Option<DType>,
    /// Dtype of A and B in HBM: fp32 (the .npy values, cast by the DMA that loads them),
    /// or bf16, fp16 or an fp8 type (stored rounded; loaded without a cast when it is the
    /// matmul dtype)
    #[arg(long, default_value = "fp32", value_name = "DTYPE")]
    pub hbm_dtype: Option<DType>,
    /// Dtype of C: fp32, bf16 or fp16
    #[arg(long, default_value = "fp32")]
    pub out_dtype: Option<DType>,
    /// Target: trn1, trn2 or trn3
    #[arg(long, default_value = "trn2")]
    pub target: Option<Target>,
    /// PE perf mode: none, or double_row (trn2/trn3; fp8e4m3/fp8e5m2 or uint8 operands)
    #[arg(long, value_name = "MODE")]
    pub perf_mode: Option<PerfMode>,
    /// Structured sparsity of A along K: 1:2, 2:4, 4:8, 4:12 or 4:16 (random A is pruned to it;
    /// a given A must already satisfy it)
    #[arg(long, value_name = "N:M")]
    pub sparsity: Option<SparsityPattern>,
    /// Loop nest: naive, hoisted, blocked-mn, blocked-mnk, or auto (rank every schedule, block
    /// size, loop order and transpose method, cycle-model the best 8 and the blocked schedules'
    /// defaults; within 0.5% of the fastest the fewest HBM bytes wins)
    #[arg(long, default_value = "auto")]
    pub schedule: Option<Schedule>,
    /// Rows of C per block (blocked schedules), in elements [default: 512; 1024 for
    /// blocked-mnk; shrunk until the blocks fit SBUF]
    #[arg(long, value_name = "ELEMS")]
    pub block_m: Option<u64>,
    /// Columns of C per block (blocked schedules), in elements [default: 1024; 2048 for
    /// blocked-mnk]
    #[arg(long, value_name = "ELEMS")]
    pub block_n: Option<u64>,
    /// Contraction rows per block (blocked-mnk), in elements [default: 512]
    #[arg(long, value_name = "ELEMS")]
    pub block_k: Option<u64>,
    /// Outer block loop of the blocked schedules: m-outer or n-outer
    #[arg(long, value_name = "ORDER")]
    pub order: Option<LoopOrder>,
    /// How A [M, K] is transposed on load: dma (trn2/trn3) or pe (through PSUM) [default: pe
    /// on trn1, dma on trn2/trn3; auto weighs both]
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub transpose: Option<TransposeOn>,
    /// Write the modeled engine timeline as Chrome/Perfetto trace-event JSON
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Write the modeled engine timeline as a static SVG: a row per engine with its busy
    /// percentage, instructions coloured by op kind, semaphore waits, a time axis in us
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// A as a float32 (or float16) .npy of shape [M, K] ([K, M] with --lhs-transposed)
    #[arg(long, value_name = "A.npy", requires = "rhs")]
    pub lhs: Option<PathBuf>,
    /// B as a float32 (or float16) .npy of shape [K, N]
    #[arg(long, value_name = "B.npy", requires = "lhs")]
    pub rhs: Option<PathBuf>,
    /// A is given as [K, M]
    #[arg(long)]
    pub lhs_transposed: bool,
    /// Write C as .npy: float32, float16, or uint16 bf16 bit patterns, per --out-dtype
    #[arg(short = 'o', long = "output", value_name = "C.npy")]
    pub output: Option<PathBuf>,
    /// Print one JSON report instead of the summary
    #[arg(long)]
    pub json: bool,
    /// Plan and lower only; do not simulate or check
    #[arg(long)]
    pub no_sim: bool,
    /// Print the IR instead of running it
    #[arg(long, value_enum)]
    pub emit: Option<Emit>,
    /// Seed of the random inputs
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Override hardware profile keys from a JSON file (see `ntile hw show`)
    #[arg(long, value_name = "FILE.json", long_help = crate::hw::HW_HELP)]
    pub hw: Option<PathBuf>,
}

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
    /// Bytes moved to or from HBM.
    pub hbm_bytes: u64,
    /// The check against the fp64 reference, or null with `--no-sim`.
    pub check: Option<Check>,
    /// Modeled time of the lowered program (cycle model), in microseconds.
    pub modeled_time_us: f64,
    /// Hardware matmul FLOPs / (peak x modeled time).
    pub hfu: f64,
    /// Busy fraction of each engine class over the modeled time (dma: mean of the 16 queues).
    pub engine_busy: sim::EngineBusy,
    /// The I/O lower bound `2*M*N*K/sqrt(S) + M*N` words for SBUF size S, in bytes of the
    /// operand dtype.
    pub io_lower_bound_bytes: f64,
    /// PE time if every matmul ran back to back at `max(N, 64)` cycles, in microseconds.
    pub tile_quantized_ideal_us: f64,
    /// What `--schedule auto` chose (null for an explicit schedule).
    pub auto: Option<AutoReport>,
    /// Wall-clock milliseconds of each phase.
    pub wall_ms: WallMs,
}

/// The choice `--schedule auto` made.
#[derive(Clone, Debug, Serialize)]
pub struct AutoReport {
    /// Candidates modeled with the cycle model.
    pub evaluated: usize,
    /// Candidates that did not fit SBUF.
    pub rejected: usize,
    /// Chosen block sizes in elements and loop order.
    pub block_m: u64,
    /// Block columns.
    pub block_n: u64,
    /// Block contraction rows.
    pub block_k: u64,
    /// Outer block loop.
    pub order: String,
}

/// Wall-clock milliseconds of each phase.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct WallMs {
    /// Planning and verification.
    pub plan: f64,
    /// Lowering and BIR verification.
    pub lower: f64,
    /// Simulation.
    pub simulate: f64,
    /// The fp64 reference.
    pub reference: f64,
}

/// What `ntile gemm` produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The report.
    pub report: Report,
    /// Text for stdout (summary, JSON or IR).
    pub stdout: String,
    /// The simulated C as f32, row-major.
    pub result: Option<Vec<f32>>,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

struct Inputs {
    a: Vec<f32>,
    b: Vec<f32>,
}

fn resolve_shape(args: &GemmArgs) -> Result<(u64, u64, u64, Option<Inputs>), CliError> {
    let (Some(lp), Some(rp)) = (&args.lhs, &args.rhs) else {
        let d = 1024;
        return Ok((args.m.unwrap_or(d), args.k.unwrap_or(d), args.n.unwrap_or(d), None));
    };
    let a = npy::read_f32(lp)?;
    let b = npy::read_f32(rp)?;
    let two_d = |arr: &npy::Array, path: &PathBuf| -> Result<(u64, u64), CliError> {
        match arr.shape[..] {
            [r, c] if r > 0 && c > 0 => Ok((r, c)),
            _ => Err(CliError::usage(format!(
                "{}: expected a non-empty 2-D array, got shape {:?}",
                path.display(),
                arr.shape
            ))),
        }
    };
    let (ar, ac) = two_d(&a, lp)?;
    let (br, bc) = two_d(&b, rp)?;
    let (m, k) = if args.lhs_transposed { (ac, ar) } else { (ar, ac) };
    if br != k {
        let layout = if args.lhs_transposed { "[K, M]" } else { "[M, K]" };
        return Err(CliError::usage(format!(
            "shapes do not chain: A {layout} is {:?} (K = {k}) but B [K, N] is {:?}",
            a.shape, b.shape
        )));
    }
    for (flag, given, actual) in [("--m", args.m, m), ("--k", args.k, k), ("--n", args.n, bc)] {
        if let Some(g) = given {
            if g != actual {
                return Err(CliError::usage(format!("{flag} {g} disagrees with the input arrays ({actual})")));
            }
        }
    }
    Ok((m, k, bc, Some(Inputs { a: a.data, b: b.data })))
}

/// Keep the `N` largest magnitudes of every group of `M` along K of a row-major `[m, k]` A.
fn prune(a: &mut [f32], m: u64, k: u64, p: SparsityPattern) {
    for row in a.chunks_mut(k as usize).take(m as usize) {
        for group in row.chunks_mut(p.m as usize) {
            let mut order: Vec<usize> = (0..group.len()).collect();
            order.sort_by(|&x, &y| group[y].abs().total_cmp(&group[x].abs()));
            for &j in &order[(p.n as usize).min(group.len())..] {
                group[j] = 0.0;
            }
        }
    }
}

/// Transpose a row-major `[rows, cols]` matrix.
fn transpose(a: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0; a.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = a[r * cols + c];
        }
    }
    t
}

/// Seeded uniform inputs in [-1, 1), or small integers 0..16 for uint8 operands.
fn random_inputs(m: u64, k: u64, n: u64, seed: u64, (lhs, rhs): (DType, DType)) -> Inputs {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut gen = |len: u64, dtype: DType| {
        (0..len)
            .map(
                |_| if dtype == DType::Uint8 { f32::from(rng.gen_range(0u8..16)) } else { rng.gen_range(-1.0f32..1.0) },
            )
            .collect::<Vec<f32>>()
    };
    let a = gen(m * k, lhs);
    let b = gen(k * n, rhs);
    Inputs { a, b }
}

/// Run `ntile gemm`.
pub fn run(args: &GemmArgs) -> Result<Outcome, CliError> {
    let (m, k, n, given) = resolve_shape(args)?;
    let dtype = args.dtype.unwrap_or(DType::Bf16);
    let defaults = BlockSizes::for_schedule(args.schedule.unwrap_or_default());
    let cfg = GemmConfig {
        m,
        k,
        n,
        lhs_dtype: args.lhs_dtype.unwrap_or(dtype),
        rhs_dtype: args.rhs_dtype.unwrap_or(dtype),
        out_dtype: args.out_dtype.unwrap_or(DType::Fp32),
        input_dtype: args.hbm_dtype.unwrap_or(DType::Fp32),
        target: args.target.unwrap_or(Target::Trn2),
        schedule: args.schedule.unwrap_or_default(),
        lhs_transposed: args.lhs_transposed,
        perf_mode: args.perf_mode.unwrap_or_default(),
        sparsity: args.sparsity,
        blocks: BlockSizes {
            m: args.block_m.unwrap_or(defaults.m),
            n: args.block_n.unwrap_or(defaults.n),
            k: args.block_k.unwrap_or(defaults.k),
        },
        order: args.order.unwrap_or_default(),
        pe_transpose: args.transpose.map(|t| t == TransposeOn::Pe),
    };
    let hw = crate::hw::load_profile(args.hw.as_deref(), cfg.target)?;
    let mut wall = WallMs::default();
    let t = Instant::now();
    let (plan, auto) = if cfg.schedule == Schedule::Auto {
        let mut cost = |plan: &GemmPlan| modeled_ns(plan, &hw);
        let (plan, choice) = plan_gemm_auto_with(&cfg, &hw, codegen::AUTO_SHORTLIST, &mut cost)?;
        (plan, Some(choice))
    } else if args.block_m.is_none() && args.block_n.is_none() && args.block_k.is_none() {
        // Default blocks shrink until they fit the target's SBUF.
        (codegen::plan_gemm_fitting(&cfg)?, None)
    } else {
        (plan_gemm(&cfg)?, None)
    };
    let cfg = plan.config.clone();
    wall.plan = ms(t);
    let t = Instant::now();
    let program = lower(&plan)?;
    wall.lower = ms(t);
    let cycle =
        sim::model_with(&program, &hw).map_err(|e| CliError::internal(format!("cycle model failed (a bug): {e}")))?;
    if let Some(path) = &args.trace {
        npy::write_atomic(path, sim::chrome_trace(&program, &cycle).as_bytes())?;
    }
    if let Some(path) = &args.svg {
        npy::write_atomic(path, sim::timeline_svg(&program, &cycle).as_bytes())?;
    }
    let modeled = Modeled { program: &program, cycle: &cycle, auto: auto.as_ref(), hw: &hw };
    match args.emit {
        Some(Emit::Penguin) => {
            let report = report_of(&cfg, &plan, &modeled, None, wall);
            return Ok(Outcome { report, stdout: plan.function.to_string(), result: None });
        }
        Some(Emit::Bir) => {
            let report = report_of(&cfg, &plan, &modeled, None, wall);
            return Ok(Outcome { report, stdout: program.to_string(), result: None });
        }
        None => {}
    }
    if args.no_sim {
        let report = report_of(&cfg, &plan, &modeled, None, wall);
        let stdout = if args.json { json(&report)? } else { summary(&report) };
        return Ok(Outcome { report, stdout, result: None });
    }
    let mut inputs = match given {
        Some(i) => i,
        None => random_inputs(m, k, n, args.seed, (cfg.lhs_dtype, cfg.rhs_dtype)),
    };
    let sparse = match cfg.sparsity {
        Some(p) => {
            if cfg.lhs_transposed {
                inputs.a = transpose(&inputs.a, k as usize, m as usize);
            }
            if args.lhs.is_none() {
                prune(&mut inputs.a, m, k, p);
            }
            Some(codegen::SparseA::compress(&inputs.a, m, k, p)?)
        }
        None => None,
    };
    let t = Instant::now();
    let mut simulator = sim::Simulator::new(&program);
    match &sparse {
        Some(s) => {
            simulator.write_hbm_f32("a", &s.values).map_err(sim_error)?;
            let tags: Vec<u8> = s.tags.iter().flat_map(|t| t.to_le_bytes()).collect();
            simulator.write_hbm_tensor("a_tags", &tags).map_err(sim_error)?;
        }
        None => simulator.write_hbm_f32("a", &inputs.a).map_err(sim_error)?,
    }
    simulator.write_hbm_f32("b", &inputs.b).map_err(sim_error)?;
    let stats = simulator.run().map_err(sim_error)?;
    if let Some(race) = stats.races.first() {
        return Err(CliError::internal(format!("the simulator found a race in a generated kernel (a bug): {race}")));
    }
    let c = simulator.read_hbm_f32("c").map_err(sim_error)?;
    wall.simulate = ms(t);
    let t = Instant::now();
    // A sparse A was compressed from its [M, K] layout, so the inputs are [M, K] by now.
    let check = check_result(&cfg, cfg.lhs_transposed && sparse.is_none(), &inputs, &c);
    wall.reference = ms(t);
    if let Some(path) = &args.output {
        let raw = simulator.read_hbm_tensor("c").map_err(sim_error)?;
        let kind = match cfg.out_dtype {
            DType::Fp16 => OutKind::F16,
            DType::Bf16 => OutKind::U16Bits,
            _ => OutKind::F32,
        };
        npy::write_atomic(path, &npy::to_npy_bytes(&[m, n], kind, &raw)?)?;
    }
    let report = report_of(&cfg, &plan, &modeled, Some(check), wall);
    let stdout = if args.json { json(&report)? } else { summary(&report) };
    Ok(Outcome { report, stdout, result: Some(c) })
}

/// Verify, lower and verify the BIR of a plan.
pub fn lower(plan: &GemmPlan) -> Result<bir::Program, CliError> {
    let verified = penguin::verify(&plan.function)
        .map_err(|e| CliError::internal(format!("generated kernel failed verification (a bug): {e}")))?;
    let program = bir::lower(verified, plan.config.target)?;
    bir::verify_program(&program)?;
    Ok(program)
}

/// How A is transposed (see [`Report::lhs_transpose`]).
fn lhs_transpose_name(cfg: &GemmConfig) -> &'static str {
    if cfg.lhs_transposed && cfg.sparsity.is_none() {
        "none"
    } else if cfg.transposes_lhs_on_pe() {
        "pe"
    } else {
        "dma"
    }
}

/// `auto`'s cost: the cycle model's time and HBM bytes of the lowered candidate.
pub fn modeled_ns(plan: &GemmPlan, hw: &HwProfile) -> Result<codegen::AutoCost, codegen::CodegenError> {
    let program = lower(plan).map_err(|e| codegen::CodegenError::Unsupported(e.message))?;
    let report = sim::model_with(&program, hw).map_err(|e| codegen::CodegenError::Unsupported(e.to_string()))?;
    Ok(codegen::AutoCost { time: report.total_ns, hbm_bytes: report.hbm_bytes })
}

/// The cycle model's view of the planned program.
struct Modeled<'a> {
    program: &'a bir::Program,
    cycle: &'a sim::CycleReport,
    auto: Option<&'a AutoChoice>,
    hw: &'a HwProfile,
}

/// `2*M*N*K/sqrt(S) + M*N` words for an SBUF of S words of the operand dtype, in bytes.
fn io_lower_bound_bytes(cfg: &GemmConfig) -> f64 {
    let size = f64::from(cfg.lhs_dtype.size_bytes().max(cfg.rhs_dtype.size_bytes()));
    let sbuf_words = 128.0 * f64::from(cfg.target.info().statebuf_par_size_in_bytes) / size;
    let (m, k, n) = (cfg.m as f64, cfg.k as f64, cfg.n as f64);
    (2.0 * m * n * k / sbuf_words.sqrt() + m * n) * size
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

#[expect(clippy::needless_pass_by_value, reason = "a map_err adapter")]
fn sim_error(e: sim::SimError) -> CliError {
    CliError::internal(format!("simulation failed: {e}"))
}

fn check_result(cfg: &GemmConfig, lhs_transposed: bool, inputs: &Inputs, c: &[f32]) -> Check {
    let (m, k, n) = (cfg.m as usize, cfg.k as usize, cfg.n as usize);
    let mut a = vec![0.0f64; m * k];
    for (idx, &v) in inputs.a.iter().enumerate() {
        // Stored [K, M] when transposed.
        let (i, kk) = if lhs_transposed { (idx % m, idx / m) } else { (idx / k, idx % k) };
        a[i * k + kk] = f64::from(cfg.lhs_dtype.round_trip(cfg.input_dtype.round_trip(v)));
    }
    let b: Vec<f64> =
        inputs.b.iter().map(|&v| f64::from(cfg.rhs_dtype.round_trip(cfg.input_dtype.round_trip(v)))).collect();
    let (r, mag) = reference::reference(m, k, n, &a, &b);
    reference::check(c, &r, &mag, cfg.k, cfg.out_dtype)
}

fn report_of(
    cfg: &GemmConfig,
    plan: &GemmPlan,
    modeled: &Modeled<'_>,
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
        penguin_instructions: plan.function.layout().len() as u64,
        bir_instructions: modeled.program.num_insts() as u64,
        matmuls: plan.stats.matmuls,
        psum_groups: plan.stats.psum_groups,
        max_live_psum_banks: plan.stats.max_live_psum_groups,
        sbuf_peak_bytes_per_partition: plan.stats.sbuf_peak_bytes_per_partition,
        hbm_bytes: modeled.program.hbm_traffic_bytes(),
        check,
        modeled_time_us: modeled.cycle.total_us(),
        hfu: modeled.cycle.hfu(),
        engine_busy: modeled.cycle.engine_busy_summary(),
        io_lower_bound_bytes: io_lower_bound_bytes(cfg),
        tile_quantized_ideal_us: tile_quantized_ideal_us(cfg, modeled.hw),
        auto: modeled.auto.map(|a| AutoReport {
            evaluated: a.evaluated,
            rejected: a.rejected,
            block_m: a.config.blocks.m,
            block_n: a.config.blocks.n,
            block_k: a.config.blocks.k,
            order: a.config.order.name().to_string(),
        }),
        wall_ms,
    }
}

fn json(report: &Report) -> Result<String, CliError> {
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
    let mt = r.m.div_ceil(codegen::M_TILE);
    let nt = r.n.div_ceil(codegen::N_TILE);
    let kt = r.matmuls / (mt * nt).max(1);
    let mut s = format!(
        "ntile gemm {}x{}x{}  {} x {} -> {}  on {}  (schedule {})\n",
        r.m, r.k, r.n, r.lhs_dtype, r.rhs_dtype, r.out_dtype, r.target, r.schedule
    );
    s += &format!(
        "  plan    {mt}x{nt} output tiles of 128x512, {kt} K sub-tiles each: {} matmuls in {} PSUM groups (max {} live)\n",
        r.matmuls, r.psum_groups, r.max_live_psum_banks
    );
    s += &format!(
        "  ir      {} penguin / {} BIR instructions; SBUF {} of {} per partition; HBM traffic {}\n",
        r.penguin_instructions,
        r.bir_instructions,
        kib(r.sbuf_peak_bytes_per_partition),
        kib(cap),
        mib(r.hbm_bytes)
    );
    s += &format!(
        "  model   {:.1} us modeled (ideal PE time {:.1} us), HFU {:.2}; HBM {:.2}x the I/O lower bound\n",
        r.modeled_time_us,
        r.tile_quantized_ideal_us,
        r.hfu,
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
    if let Some(a) = &r.auto {
        s += &format!(
            "  auto    chose {} (blocks m {} n {} k {}, {}, A transposed by {}) of {} modeled candidates ({} did not fit SBUF)\n",
            r.schedule, a.block_m, a.block_n, a.block_k, a.order, r.lhs_transpose, a.evaluated, a.rejected
        );
    }
    match &r.check {
        Some(c) => {
            let verdict =
                if c.passed { "PASS".to_string() } else { format!("FAIL ({} elements outside the bound)", c.failures) };
            s += &format!(
                "  check   {verdict}: max |err| {:.3e}, max |err|/(|A|@|B|) {:.3e} vs fp64 of the rounded inputs (bound 2*K*eps32 = {:.3e})\n",
                c.max_abs_err,
                c.max_rel_err,
                2.0 * r.k as f64 * f64::from(f32::EPSILON)
            );
        }
        None => s += "  check   skipped (--no-sim)\n",
    }
    s += &format!(
        "  time    plan {:.1} ms, lower {:.1} ms, simulate {:.1} ms, reference {:.1} ms\n",
        r.wall_ms.plan, r.wall_ms.lower, r.wall_ms.simulate, r.wall_ms.reference
    );
    s
}
