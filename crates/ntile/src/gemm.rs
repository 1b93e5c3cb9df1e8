//! `ntile gemm`: plan, lower, simulate and check one GEMM, and report on it.

use std::borrow::Cow;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};
use codegen::{plan_gemm, plan_gemm_auto_parallel, AutoLimits, BlockSizes, GemmConfig, GemmPlan, LoopOrder, Schedule};
use penguin::{DType, HwProfile, PerfMode, SparsityPattern, Target};
use rand::{Rng, SeedableRng};

use crate::api::{GemmInputs, Operand, Watch};
use crate::budget;
use crate::error::CliError;
use crate::npy::{self, OutKind};
use crate::progress::Progress;

mod check;
mod huge;
mod random;
mod report;

pub use huge::{AUTO_PROXY_DIM, MAX_UNROLLED_MATMULS};
use report::{json, report_of, Modeled};
pub use report::{summary, AutoReport, Blocks, Bottleneck, ExtrapolatedReport, Report, WallMs};

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
    /// The verified Penguin function rolled along the schedule's loop nest
    /// (`GemmPlan::looped`: offsets, edges and queue hints stepping per trip).
    Penguin,
    /// The verified Penguin function, one line per instruction.
    PenguinUnrolled,
    /// The lowered BIR program with its repeated bodies rolled into loops (`bir::roll`;
    /// without the `origin(iN)` of each instruction, which changes every iteration).
    Bir,
    /// The lowered BIR program, one line per instruction, with origins.
    BirUnrolled,
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
    /// Matmul dtype of both operands: fp32, bf16, fp16, fp8e4m3, fp8e5m2, fp8e4m3fn (trn3), or
    /// uint8 (integer operands, both sides) [default: bf16]
    #[arg(long)]
    pub dtype: Option<DType>,
    /// Matmul dtype of A (overrides --dtype)
    #[arg(long)]
    pub lhs_dtype: Option<DType>,
    /// Matmul dtype of B (overrides --dtype)
    #[arg(long)]
    pub rhs_dtype: Option<DType>,
    /// Dtype of A and B in HBM: fp32 (cast by the DMA that loads them), or bf16, fp16 or an
    /// fp8 type (stored rounded; loaded without a cast when it is the matmul dtype)
    /// [default: the matmul dtype, as in a real kernel; fp32 with --lhs/--rhs float32 arrays,
    /// mixed operand dtypes or uint8]
    #[arg(long, value_name = "DTYPE")]
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
    /// defaults; within 0.5% of the fastest the fewest HBM bytes wins; a GEMM too large to
    /// unroll is weighed on a proxy with each dimension capped at 8192)
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
    /// percentage, instructions coloured by kind (A/B loads, stores, casts, transposes, ...),
    /// semaphore waits, a time axis in us; then SBUF occupancy over time and the tile grid
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write the tile-grid picture alone as SVG: C's output tiles coloured by the time each
    /// was stored, with the block boundaries
    #[arg(long, value_name = "FILE")]
    pub svg_grid: Option<PathBuf>,
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
    /// Extrapolate the program from smaller GEMMs and model it looped, as GEMMs too large to
    /// unroll always are, even when this one could be planned whole (with --no-sim or --emit bir)
    #[arg(long)]
    pub extrapolate: bool,
    /// Simulate but skip the check against the fp64 reference (the report's check is null)
    #[arg(long)]
    pub no_check: bool,
    /// Show no progress on stderr (shown only when stderr is a terminal and work runs long)
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Print the IR instead of running it
    #[arg(long, value_enum)]
    pub emit: Option<Emit>,
    /// Seed of the random inputs (not with --lhs/--rhs, which are the inputs)
    #[arg(long, default_value_t = 0, conflicts_with = "lhs")]
    pub seed: u64,
    /// Refuse a GEMM whose estimated memory (planning, modeling and simulation) exceeds this
    /// many bytes; K, M, G, T suffixes are powers of 1024 [default: half of physical memory]
    #[arg(long, value_name = "BYTES", value_parser = crate::budget::parse_bytes)]
    pub max_memory: Option<u64>,
    /// Override hardware profile keys from a JSON file (see `ntile hw show`)
    #[arg(long, value_name = "FILE.json", long_help = crate::hw::HW_HELP)]
    pub hw: Option<PathBuf>,
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

struct Inputs<'a> {
    a: Cow<'a, [f32]>,
    b: Cow<'a, [f32]>,
}

fn resolve_shape<'a>(
    args: &GemmArgs,
    given: Option<GemmInputs<'a>>,
) -> Result<(u64, u64, u64, Option<Inputs<'a>>), CliError> {
    let (a, b, a_name, b_name) = match (given, &args.lhs, &args.rhs) {
        (Some(g), _, _) => (g.a, g.b, "a".to_string(), "b".to_string()),
        (None, Some(lp), Some(rp)) => {
            let operand = |path: &PathBuf| -> Result<(Operand<'a>, String), CliError> {
                let arr = npy::read_f32(path)?;
                let name = path.display().to_string();
                match arr.shape[..] {
                    [r, c] if r > 0 && c > 0 => Ok((Operand { rows: r, cols: c, values: Cow::Owned(arr.data) }, name)),
                    _ => Err(CliError::usage(format!(
                        "{name}: expected a non-empty 2-D array, got shape {:?}",
                        arr.shape
                    ))),
                }
            };
            let (a, a_name) = operand(lp)?;
            let (b, b_name) = operand(rp)?;
            (a, b, a_name, b_name)
        }
        _ => {
            let d = 1024;
            return Ok((args.m.unwrap_or(d), args.k.unwrap_or(d), args.n.unwrap_or(d), None));
        }
    };
    for (op, name) in [(&a, &a_name), (&b, &b_name)] {
        if op.rows == 0 || op.cols == 0 {
            return Err(CliError::usage(format!("{name}: expected a non-empty 2-D array, got shape {:?}", op.shape())));
        }
    }
    let ((ar, ac), (br, bc)) = ((a.rows, a.cols), (b.rows, b.cols));
    let (m, k) = if args.lhs_transposed { (ac, ar) } else { (ar, ac) };
    if br != k {
        let layout = if args.lhs_transposed { "[K, M]" } else { "[M, K]" };
        return Err(CliError::usage(format!(
            "shapes do not chain: A {layout} is {:?} (K = {k}) but B [K, N] is {:?}",
            a.shape(),
            b.shape()
        )));
    }
    for (flag, given, actual) in [("--m", args.m, m), ("--k", args.k, k), ("--n", args.n, bc)] {
        if let Some(g) = given {
            if g != actual {
                return Err(CliError::usage(format!("{flag} {g} disagrees with the input arrays ({actual})")));
            }
        }
    }
    Ok((m, k, bc, Some(Inputs { a: a.values, b: b.values })))
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
fn random_inputs(m: u64, k: u64, n: u64, seed: u64, (lhs, rhs): (DType, DType)) -> Inputs<'static> {
    if lhs != DType::Uint8 && rhs != DType::Uint8 {
        // The same stream, drawn on every core.
        let a = random::uniform(seed, 0, (m * k) as usize);
        let b = random::uniform(seed, m * k, (k * n) as usize);
        return Inputs { a: Cow::Owned(a), b: Cow::Owned(b) };
    }
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
    Inputs { a: Cow::Owned(a), b: Cow::Owned(b) }
}

/// Refuse flags that would be silently ignored by the others given (exit 2, naming both).
pub fn validate(args: &GemmArgs) -> Result<(), CliError> {
    let conflict = |a: &str, b: &str, why: &str| Err(CliError::usage(format!("{a} cannot be used with {b}: {why}")));
    if args.output.is_some() {
        if args.no_sim {
            return conflict("-o/--output", "--no-sim", "C is only computed by the simulation");
        }
        if args.emit.is_some() {
            return conflict("-o/--output", "--emit", "--emit prints the IR instead of running it");
        }
    }
    if args.json && args.emit.is_some() {
        return conflict("--json", "--emit", "--emit prints the IR, not a report (drop one of them)");
    }
    let schedule = args.schedule.unwrap_or_default();
    let blocked = |flag: &str| {
        conflict(
            flag,
            &format!("--schedule {schedule}"),
            "it applies to the blocked schedules (blocked-mn, blocked-mnk) and auto",
        )
    };
    if matches!(schedule, Schedule::Naive | Schedule::Hoisted) {
        for (flag, given) in [
            ("--block-m", args.block_m.is_some()),
            ("--block-n", args.block_n.is_some()),
            ("--block-k", args.block_k.is_some()),
            ("--order", args.order.is_some()),
        ] {
            if given {
                return blocked(flag);
            }
        }
    }
    if schedule == Schedule::BlockedMn && args.block_k.is_some() {
        return conflict(
            "--block-k",
            "--schedule blocked-mn",
            "blocked-mn keeps whole K stripes; use --schedule blocked-mnk (or auto) to block K",
        );
    }
    if args.dtype.is_some() && args.lhs_dtype.is_some() && args.rhs_dtype.is_some() {
        return conflict("--dtype", "--lhs-dtype and --rhs-dtype", "those two set both operands' dtypes already");
    }
    if args.transpose.is_some() && args.lhs_transposed && args.sparsity.is_none() {
        return conflict("--transpose", "--lhs-transposed", "A given as [K, M] is not transposed at all");
    }
    Ok(())
}

/// Run `ntile gemm`.
pub fn run(args: &GemmArgs) -> Result<Outcome, CliError> {
    run_with(args, None, &Watch::none())
}

/// Run `ntile gemm` on operands given in memory (instead of `--lhs`/`--rhs`), stopping with
/// [`crate::api::interrupted`] when `watch` says so.
pub fn run_with(args: &GemmArgs, inputs: Option<GemmInputs<'_>>, watch: &Watch<'_>) -> Result<Outcome, CliError> {
    validate(args)?;
    let budget = args.max_memory.unwrap_or_else(budget::default_budget);
    if let (Some(a), Some(b)) = (&args.lhs, &args.rhs) {
        budget::check_files(&[a, b], budget)?;
    }
    let (m, k, n, given) = resolve_shape(args, inputs)?;
    let dtype = args.dtype.unwrap_or(DType::Bf16);
    let defaults = BlockSizes::for_schedule(args.schedule.unwrap_or_default());
    let cfg = GemmConfig {
        m,
        k,
        n,
        lhs_dtype: args.lhs_dtype.unwrap_or(dtype),
        rhs_dtype: args.rhs_dtype.unwrap_or(dtype),
        out_dtype: args.out_dtype.unwrap_or(DType::Fp32),
        input_dtype: args.hbm_dtype.unwrap_or_else(|| default_hbm_dtype(args, dtype, given.is_some())),
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
    let simulate = !args.no_sim && args.emit.is_none();
    // Shape and dtype limits first: their messages say more than a memory estimate.
    cfg.validate()?;
    if args.extrapolate || !simulate && huge::too_large(&cfg, budget) {
        // Too large to unroll: extrapolated from smaller GEMMs and modeled looped.
        let hw = crate::hw::load_profile(args.hw.as_deref(), cfg.target)?;
        return huge::run(args, &cfg, budget, &hw, watch);
    }
    budget::check(&cfg, simulate, budget)?;
    // Random inputs are drawn on other threads while the kernel is planned and lowered.
    let early_dtypes = (cfg.lhs_dtype, cfg.rhs_dtype);
    let early = (simulate && given.is_none()).then(|| {
        let seed = args.seed;
        random::Background::start(move || random_inputs(m, k, n, seed, early_dtypes))
    });
    let hw = crate::hw::load_profile(args.hw.as_deref(), cfg.target)?;
    let mut wall = WallMs::default();
    let progress = Progress::new(args.quiet, "ntile gemm");
    progress.phase(if cfg.schedule == Schedule::Auto { "plan (auto search)" } else { "plan" });
    let t = Instant::now();
    let (plan, auto) = if cfg.schedule == Schedule::Auto {
        let limits =
            AutoLimits { order: args.order, block_m: args.block_m, block_n: args.block_n, block_k: args.block_k };
        let cost = |p: &GemmPlan| {
            if watch.stop() {
                return Err(codegen::CodegenError::Unsupported("interrupted".into()));
            }
            modeled_ns(p, &hw)
        };
        let threads = crate::threads::threads()?;
        let planned = plan_gemm_auto_parallel(&cfg, &limits, &hw, codegen::AUTO_SHORTLIST, threads, &cost);
        watch.check()?;
        let (plan, choice) = planned?;
        (plan, Some(choice))
    } else if args.block_m.is_none() && args.block_n.is_none() && args.block_k.is_none() {
        // Default blocks shrink until they fit the target's SBUF.
        (codegen::plan_gemm_fitting(&cfg)?, None)
    } else {
        (plan_gemm(&cfg)?, None)
    };
    let cfg = plan.config.clone();
    wall.plan = ms(t);
    watch.check()?;
    let t = Instant::now();
    progress.phase("lower");
    let program = lower(&plan)?;
    wall.lower = ms(t);
    if simulate && program.hbm_size > sim::MAX_HBM_BYTES {
        return Err(CliError::usage(format!(
            "{m}x{k}x{n} is too large to simulate: its HBM tensors need {} bytes, more than the simulator's {} bytes; \
             --no-sim plans and models it without simulating",
            program.hbm_size,
            sim::MAX_HBM_BYTES
        )));
    }
    watch.check()?;
    progress.phase("model");
    let t = Instant::now();
    let cycle =
        sim::model_with(&program, &hw).map_err(|e| CliError::internal(format!("cycle model failed (a bug): {e}")))?;
    wall.model = ms(t);
    watch.check()?;
    if args.trace.is_some() || args.svg.is_some() || args.svg_grid.is_some() {
        let info = crate::kernel_info::kernel_info(&plan);
        if let Some(path) = &args.trace {
            npy::write_atomic(path, sim::chrome_trace_with(&program, &cycle, &info).as_bytes())?;
        }
        if let Some(path) = &args.svg {
            npy::write_atomic(path, sim::timeline_svg_with(&program, &cycle, &info).as_bytes())?;
        }
        if let Some(path) = &args.svg_grid {
            let grid = sim::tile_grid_svg(&program, &cycle, &info)
                .ok_or_else(|| CliError::internal("a GEMM without a tile grid (a bug)"))?;
            npy::write_atomic(path, grid.as_bytes())?;
        }
    }
    let modeled = Modeled { program: &program, cycle: &cycle, auto: auto.as_ref(), hw: &hw };
    match args.emit {
        Some(Emit::Penguin) => {
            let report = report_of(&cfg, &plan, &modeled, None, wall);
            return Ok(Outcome { report, stdout: plan.looped().to_string(), result: None });
        }
        Some(Emit::PenguinUnrolled) => {
            let report = report_of(&cfg, &plan, &modeled, None, wall);
            return Ok(Outcome { report, stdout: plan.function.to_string(), result: None });
        }
        Some(Emit::Bir) => {
            let report = report_of(&cfg, &plan, &modeled, None, wall);
            return Ok(Outcome { report, stdout: crate::looped::rolled_text(&program), result: None });
        }
        Some(Emit::BirUnrolled) => {
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
    let from_user = given.is_some();
    let mut inputs = match given {
        Some(i) => i,
        None => match early.and_then(random::Background::finish) {
            Some(drawn) if early_dtypes == (cfg.lhs_dtype, cfg.rhs_dtype) => drawn,
            _ => random_inputs(m, k, n, args.seed, (cfg.lhs_dtype, cfg.rhs_dtype)),
        },
    };
    let sparse = match cfg.sparsity {
        Some(p) => {
            if cfg.lhs_transposed {
                inputs.a = Cow::Owned(transpose(&inputs.a, k as usize, m as usize));
            }
            if !from_user {
                prune(inputs.a.to_mut(), m, k, p);
            }
            Some(codegen::SparseA::compress(&inputs.a, m, k, p)?)
        }
        None => None,
    };
    let done = check::simulate_and_check(args, &cfg, &program, inputs, sparse, watch, &progress)?;
    (wall.simulate, wall.reference) = (done.simulate_ms, done.reference_ms);
    let (c, raw, check) = (done.c, done.raw, done.check);
    if let (Some(path), Some(raw)) = (&args.output, raw) {
        let kind = match cfg.out_dtype {
            DType::Fp16 => OutKind::F16,
            DType::Bf16 => OutKind::U16Bits,
            _ => OutKind::F32,
        };
        npy::write_atomic(path, &npy::to_npy_bytes(&[m, n], kind, &raw)?)?;
    }
    let report = report_of(&cfg, &plan, &modeled, check, wall);
    let stdout = if args.json { json(&report)? } else { summary(&report) };
    Ok(Outcome { report, stdout, result: Some(c) })
}

/// A and B's HBM dtype when `--hbm-dtype` is not given: the matmul dtype (as a real kernel
/// keeps them), except for float32 operands given as data (`.npy` files or in-memory arrays),
/// mixed operand dtypes and uint8, which are fp32 in HBM and cast on load.
fn default_hbm_dtype(args: &GemmArgs, dtype: DType, data_given: bool) -> DType {
    let lhs = args.lhs_dtype.unwrap_or(dtype);
    let rhs = args.rhs_dtype.unwrap_or(dtype);
    if !data_given && lhs == rhs && lhs.is_float() {
        lhs
    } else {
        DType::Fp32
    }
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
    // A candidate that cannot be lowered or modeled is a bug in ntile, not the user's input.
    let program = lower(plan).map_err(|e| match e.code {
        crate::error::EXIT_INTERNAL => codegen::CodegenError::Internal(e.message),
        _ => codegen::CodegenError::Unsupported(e.message),
    })?;
    let report = sim::model_with(&program, hw)
        .map_err(|e| codegen::CodegenError::Internal(format!("cycle model failed: {e}")))?;
    Ok(codegen::AutoCost { time: report.total_ns, hbm_bytes: report.hbm_bytes })
}
