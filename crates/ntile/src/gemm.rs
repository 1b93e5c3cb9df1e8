//! `ntile gemm`: its flags turned into a [`GemmRequest`] for the driver, the input files
//! read, and what the run gives printed (the summary, `--json` or `--emit`) and written
//! (`-o`, `--trace`, `--svg`, `--svg-grid`).

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use codegen::{LoopOrder, Schedule};
use driver::{BlockRequest, DriverError, GemmInputs, GemmOptions, GemmRequest, Operand, Report};
use penguin::{DType, PerfMode, SparsityPattern, Target};

use crate::budget;
use crate::error::CliError;
use crate::npy::{self, OutKind};
use crate::progress::Progress;

pub mod flags;
mod summary;
#[cfg(test)]
mod tests;

pub use summary::{json, summary};

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
  ntile gemm --m 128 --k 256 --n 512 --emit penguin -o g.pir   (then: ntile run g.pir --no-sim)

The summary:
  plan    output tiles of C (128 rows x up to 512 columns each) and K steps of up to 128 rows;
          a PSUM group is one output tile's accumulation over K, and \"(max N live)\" counts
          the groups (PSUM banks, 8 per partition) open at the same time
  loop    the schedule (auto's choice) with its blocks and outer loop
  ir      instruction counts; SBUF allocated is the highest byte the plan's buffers reach per
          partition (every slot of a double-buffered block counted); --svg's occupancy panel
          shows bytes holding live data over time, so its peak can be lower
  model   the cycle model's time; ideal PE time is every matmul back to back at max(N, 64)
          TensorE cycles per 128-row K step (tile-quantized: a 100-column edge tile costs as
          much as 64..100 columns, never less than 64 cycles), HFU = matmul FLOPs / (peak x
          modeled time)
  engines busy fraction of each engine over the modeled time: pe the TensorE (matmuls,
          transposes), act the ScalarE (activation engine), dve the VectorE, pool the GpSimd
          engine, dma the mean over the 16 DMA queues
  bottleneck  the critical path's share per engine class
  auto / blocks  what the search weighed: auto's schedule, or for an explicit blocked
          schedule without block flags, the blocks (outer loop, transpose) chosen for it

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
    #[arg(long, value_parser = operand_dtype)]
    pub dtype: Option<DType>,
    /// Matmul dtype of A (overrides --dtype)
    #[arg(long, value_parser = operand_dtype)]
    pub lhs_dtype: Option<DType>,
    /// Matmul dtype of B (overrides --dtype)
    #[arg(long, value_parser = operand_dtype)]
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
    /// unroll, or with --no-sim one of more matmuls than 8192^3, is weighed on a proxy with
    /// each dimension capped at 8192)
    #[arg(long, default_value = "auto")]
    pub schedule: Option<Schedule>,
    /// Rows of C per block (blocked schedules), in elements [default: with an explicit
    /// blocked schedule, the blocks, outer loop and transpose method the cycle model finds
    /// best for it, as auto weighs them; a block size given fixes that size only]
    #[arg(long, value_name = "ELEMS")]
    pub block_m: Option<u64>,
    /// Columns of C per block (blocked schedules), in elements [default: searched, as for
    /// --block-m]
    #[arg(long, value_name = "ELEMS")]
    pub block_n: Option<u64>,
    /// Contraction rows per block (blocked-mnk), in elements [default: searched, as for
    /// --block-m]
    #[arg(long, value_name = "ELEMS")]
    pub block_k: Option<u64>,
    /// Outer block loop of the blocked schedules: m-outer or n-outer
    #[arg(long, value_name = "ORDER")]
    pub order: Option<LoopOrder>,
    /// How A [M, K] is transposed on load: dma (trn2/trn3) or pe (through PSUM) [default: pe
    /// on trn1, dma on trn2/trn3; auto, and a blocked schedule without --block-*, weigh both]
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub transpose: Option<TransposeOn>,
    /// Physical cores the GEMM runs on: 1, or 2 for a logical NeuronCore of two (LNC=2,
    /// trn2/trn3): the GEMM is divided between the cores (see --split), each core's share planned,
    /// simulated and modeled, the cores sharing HBM and its bandwidth [default: 1]
    #[arg(long, value_name = "CORES", value_parser = clap::value_parser!(u32).range(1..=2))]
    pub lnc: Option<u32>,
    /// How --lnc 2 divides the GEMM: m (each core a band of C's rows), n (a band of columns)
    /// or k (each core half the contraction, an fp32 partial sum of all of C; the cores then
    /// add the two after a semaphore they share) [default: all three planned, the fastest by
    /// the cycle model kept]
    #[arg(long, value_name = "DIM")]
    pub split: Option<codegen::Split>,
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
    /// Write C as .npy: float32, float16, or uint16 bf16 bit patterns, per --out-dtype; with
    /// --emit, write the IR text to this file instead of stdout
    #[arg(short = 'o', long = "output", value_name = "C.npy")]
    pub output: Option<PathBuf>,
    /// Print one JSON report instead of the summary
    #[arg(long)]
    pub json: bool,
    /// Plan, lower and model only; do not simulate or check. Without --trace, --svg or --emit, an
    /// explicit schedule whose loops skip at least half of its nest is planned in loops, not
    /// unrolled (the same report, at a cost that does not grow with the GEMM)
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
    /// Seed of the random inputs [default: 0] (not with --lhs/--rhs, which are the inputs, nor
    /// with --no-sim or --emit, which draw none)
    #[arg(long, conflicts_with = "lhs")]
    pub seed: Option<u64>,
    /// Refuse a GEMM whose estimated memory (planning, modeling and simulation) exceeds this
    /// many bytes; K, M, G, T suffixes are powers of 1024 [default: half of physical memory]
    #[arg(long, value_name = "BYTES", value_parser = crate::budget::parse_bytes)]
    pub max_memory: Option<u64>,
    /// Override hardware profile keys from a JSON file (see `ntile hw show`)
    #[arg(long, value_name = "FILE.json", long_help = crate::hw::HW_HELP)]
    pub hw: Option<PathBuf>,
}

/// The operand dtypes a GEMM takes, as `--dtype` lists them.
pub const OPERAND_DTYPES: &str = "fp32, bf16, fp16, fp8e4m3, fp8e5m2, fp8e4m3fn, uint8";

/// Parse a GEMM operand dtype (`--dtype`, `--lhs-dtype`, `--rhs-dtype`): a dtype a matmul
/// takes, the error listing only those.
pub fn operand_dtype(s: &str) -> Result<DType, String> {
    match s.parse::<DType>() {
        Ok(d) if d.is_float() || d == DType::Uint8 => Ok(d),
        Ok(d) => Err(format!("{d} is not a GEMM operand dtype (expected one of {OPERAND_DTYPES})")),
        Err(_) => Err(format!("unknown dtype `{s}` (expected one of {OPERAND_DTYPES})")),
    }
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

/// The GEMM's shape and operands: those given in memory (the Python module's), the files of
/// `--lhs`/`--rhs` read, or the flags' shape with no operands (random ones are drawn).
fn resolve_shape<'a>(
    args: &GemmArgs,
    given: Option<GemmInputs<'a>>,
) -> Result<(u64, u64, u64, Option<GemmInputs<'a>>), CliError> {
    let inputs = match (given, &args.lhs, &args.rhs) {
        (Some(g), _, _) => g,
        (None, Some(lp), Some(rp)) => {
            let operand = |path: &PathBuf| -> Result<Operand<'a>, CliError> {
                let arr = npy::read_f32(path)?;
                match arr.shape[..] {
                    [r, c] if r > 0 && c > 0 => Ok(Operand { rows: r, cols: c, values: Cow::Owned(arr.data) }),
                    _ => Err(CliError::usage(format!(
                        "{}: expected a non-empty 2-D array, got shape {:?}",
                        path.display(),
                        arr.shape
                    ))),
                }
            };
            GemmInputs { a: operand(lp)?, b: operand(rp)? }
        }
        _ => {
            let d = 1024;
            return Ok((args.m.unwrap_or(d), args.k.unwrap_or(d), args.n.unwrap_or(d), None));
        }
    };
    let (m, k, n) = inputs.shape(args.lhs_transposed)?;
    for (flag, given, actual) in [("--m", args.m, m), ("--k", args.k, k), ("--n", args.n, n)] {
        if let Some(g) = given {
            if g != actual {
                return Err(CliError::usage(format!("{flag} {g} disagrees with the input arrays ({actual})")));
            }
        }
    }
    Ok((m, k, n, Some(inputs)))
}

/// The request the flags make for an `m x k x n` GEMM (the hardware profile left to the
/// target's).
pub fn request(args: &GemmArgs, (m, k, n): (u64, u64, u64)) -> GemmRequest {
    let dtype = args.dtype.unwrap_or(DType::Bf16);
    let unrolled_ir = matches!(args.emit, Some(Emit::Penguin | Emit::PenguinUnrolled | Emit::BirUnrolled));
    GemmRequest {
        m,
        k,
        n,
        lhs_dtype: args.lhs_dtype.unwrap_or(dtype),
        rhs_dtype: args.rhs_dtype.unwrap_or(dtype),
        out_dtype: args.out_dtype.unwrap_or(DType::Fp32),
        hbm_dtype: args.hbm_dtype,
        target: args.target.unwrap_or(Target::Trn2),
        schedule: args.schedule.unwrap_or_default(),
        blocks: BlockRequest { m: args.block_m, n: args.block_n, k: args.block_k },
        order: args.order,
        pe_transpose: args.transpose.map(|t| t == TransposeOn::Pe),
        lhs_transposed: args.lhs_transposed,
        perf_mode: args.perf_mode.unwrap_or_default(),
        sparsity: args.sparsity,
        hw: None,
        lnc: args.lnc.unwrap_or(1),
        split: args.split,
        options: GemmOptions {
            simulate: !args.no_sim && args.emit.is_none(),
            check: !args.no_check,
            extrapolate: args.extrapolate,
            unrolled: args.trace.is_some() || args.svg.is_some() || args.svg_grid.is_some() || unrolled_ir,
            model_extrapolated: args.emit.is_none(),
            plan_in_loops: true,
            c_bytes: args.output.is_some(),
            seed: args.seed.unwrap_or(0),
            max_memory: args.max_memory,
            cancel: None,
            progress: None,
        },
    }
}

/// A GEMM refused for needing its unrolled program names the first flag that needs it.
pub fn refusal(args: &GemmArgs, e: DriverError) -> CliError {
    let DriverError::NotUnrolled { why } = &e else { return e.into() };
    let refuse = |flag: &str, needs: &str| CliError::usage(format!("{flag} needs {needs}, but {why}"));
    if args.trace.is_some() {
        return refuse("--trace", "every instruction's modeled time");
    }
    if args.svg.is_some() {
        return refuse("--svg", "every instruction's modeled time");
    }
    if args.svg_grid.is_some() {
        return refuse("--svg-grid", "every store's modeled time");
    }
    match args.emit {
        Some(Emit::Penguin) => refuse("--emit penguin", "the planned Penguin function (use --emit bir)"),
        Some(Emit::PenguinUnrolled) => refuse("--emit penguin-unrolled", "the planned Penguin function"),
        Some(Emit::BirUnrolled) => refuse("--emit bir-unrolled", "the unrolled program (use --emit bir)"),
        Some(Emit::Bir) | None => e.into(),
    }
}

/// The request of `args` and its operands (`given` in memory, else `--lhs`/`--rhs` read),
/// with the flags checked against each other, the shape and dtypes checked, and the
/// `--hw` profile loaded.
pub fn prepare<'a>(
    args: &GemmArgs,
    given: Option<GemmInputs<'a>>,
) -> Result<(GemmRequest, Option<GemmInputs<'a>>), CliError> {
    validate(args)?;
    if given.is_none() {
        if let (Some(a), Some(b)) = (&args.lhs, &args.rhs) {
            let budget = args.max_memory.unwrap_or_else(driver::budget::default_budget);
            budget::check_files(&[a, b], budget)?;
        }
    }
    let (m, k, n, inputs) = resolve_shape(args, given)?;
    let mut req = request(args, (m, k, n));
    // Shape and dtype limits first: their messages say more than a bad profile file's.
    req.extrapolates(inputs.is_some())?;
    req.hw = Some(crate::hw::load_profile(args.hw.as_deref(), req.target)?);
    Ok((req, inputs))
}

/// Write what `args` asks of a run (`--trace`, `--svg`, `--svg-grid`, `-o`) and return the
/// text for stdout (the IR of `--emit`, the `--json` report or the summary).
pub fn finish(args: &GemmArgs, outcome: &driver::GemmOutcome) -> Result<String, CliError> {
    let mut wrote = Vec::new();
    if let Some(path) = &args.trace {
        npy::write_atomic(path, outcome.trace().ok_or_else(no_timeline)?.as_bytes())?;
        wrote.push(format!("wrote the modeled timeline (Chrome/Perfetto trace JSON) to {}", path.display()));
    }
    if let Some(path) = &args.svg {
        npy::write_atomic(path, outcome.timeline_svg().ok_or_else(no_timeline)?.as_bytes())?;
        wrote.push(format!("wrote the modeled timeline (SVG) to {}", path.display()));
    }
    if let Some(path) = &args.svg_grid {
        let grid = outcome.tile_grid_svg().ok_or_else(|| CliError::internal("a GEMM without a tile grid (a bug)"))?;
        npy::write_atomic(path, grid.as_bytes())?;
        wrote.push(format!("wrote the tile grid (SVG) to {}", path.display()));
    }
    let mut stdout = match (args.emit, &outcome.plan, &outcome.program, &outcome.extrapolated) {
        (Some(_), None, _, Some(x)) => x.program.to_string(),
        (Some(Emit::Penguin), Some(plan), _, _) => plan.looped().to_string(),
        (Some(Emit::PenguinUnrolled), Some(plan), _, _) => plan.function.to_string(),
        (Some(Emit::Bir), _, Some(program), _) => driver::program::bir_loops::rolled_text(program),
        (Some(Emit::BirUnrolled), _, Some(program), _) => program.to_string(),
        (Some(Emit::BirUnrolled), ..) if outcome.chip.is_some() => {
            outcome.chip.as_ref().map(|c| bir::text::print_chip(&c.chip)).unwrap_or_default()
        }
        (Some(_), ..) => return Err(CliError::internal("nothing to emit (a bug)")),
        (None, ..) if args.json => json(&outcome.report)?,
        (None, ..) => summary(&outcome.report),
    };
    if let (Some(path), Some(emit)) = (&args.output, args.emit) {
        // `-o` with `--emit` takes the IR text off stdout into the file, which is all it says.
        npy::write_atomic(path, stdout.as_bytes())?;
        return Ok(format!("wrote {} ({} lines) to {}\n", emit_what(emit), stdout.lines().count(), path.display()));
    }
    if let (Some(path), Some(raw)) = (&args.output, &outcome.c_bytes) {
        let r = &outcome.report;
        let (kind, what) = match r.out_dtype.parse().unwrap_or(DType::Fp32) {
            DType::Fp16 => (OutKind::F16, "float16"),
            DType::Bf16 => (OutKind::U16Bits, "uint16 bf16 bit patterns"),
            _ => (OutKind::F32, "float32"),
        };
        npy::write_atomic(path, &npy::to_npy_bytes(&[r.m, r.n], kind, raw)?)?;
        wrote.push(format!("wrote C [{}, {}] ({}, as {what}) to {}", r.m, r.n, r.out_dtype, path.display()));
    }
    // The summary says what was written; --json and --emit keep stdout to what they print.
    if args.emit.is_none() && !args.json {
        for line in wrote {
            stdout += &format!("{line}\n");
        }
    }
    Ok(stdout)
}

/// Run `ntile gemm`.
pub fn run(args: &GemmArgs) -> Result<Outcome, CliError> {
    run_with(args, None)
}

/// Run `ntile gemm`, stopped by `cancel` in every long phase (nothing is written then).
pub fn run_with(args: &GemmArgs, cancel: Option<&driver::Cancel>) -> Result<Outcome, CliError> {
    let (mut req, inputs) = prepare(args, None)?;
    req.options.cancel = cancel.cloned();
    let progress = Arc::new(Progress::new(args.quiet, "ntile gemm"));
    if progress.is_live() {
        let shown = Arc::clone(&progress);
        req.options.progress = Some(Arc::new(move |phase: &str| shown.phase(phase)));
    }
    let outcome = driver::gemm(&req, inputs).map_err(|e| refusal(args, e))?;
    drop(req);
    drop(progress);
    let stdout = finish(args, &outcome)?;
    Ok(Outcome { report: outcome.report, stdout, result: outcome.c })
}

/// What `--emit` prints, for the line that says where it went.
fn emit_what(emit: Emit) -> &'static str {
    match emit {
        Emit::Penguin => "the Penguin function, loops kept",
        Emit::PenguinUnrolled => "the Penguin function, unrolled",
        Emit::Bir => "the BIR program, loops kept",
        Emit::BirUnrolled => "the BIR program, unrolled",
    }
}

fn no_timeline() -> CliError {
    CliError::internal("a GEMM planned whole without a timeline (a bug)")
}

/// Refuse flags that would be silently ignored by the others given (exit 2, naming both).
pub fn validate(args: &GemmArgs) -> Result<(), CliError> {
    let conflict = |a: &str, b: &str, why: &str| Err(CliError::usage(format!("{a} cannot be used with {b}: {why}")));
    if args.output.is_some() && args.no_sim && args.emit.is_none() {
        return conflict("-o/--output", "--no-sim", "C is only computed by the simulation");
    }
    if args.seed.is_some() {
        if args.no_sim {
            return conflict("--seed", "--no-sim", "without a simulation no random input is drawn");
        }
        if args.emit.is_some() {
            return conflict("--seed", "--emit", "--emit prints the IR, and no random input is drawn");
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
    if args.lnc.unwrap_or(1) > 1 {
        let two = "--lnc 2";
        match args.emit {
            Some(Emit::Penguin | Emit::PenguinUnrolled) => {
                return conflict(
                    "--emit penguin",
                    two,
                    "each core has its own Penguin function; --emit bir-unrolled prints the two-core program",
                );
            }
            Some(Emit::Bir) => {
                return conflict("--emit bir", two, "a two-core program prints unrolled: use --emit bir-unrolled");
            }
            _ => {}
        }
        if args.svg_grid.is_some() {
            return conflict(
                "--svg-grid",
                two,
                "the tile grid is drawn for one core; --svg draws both cores' timelines",
            );
        }
    } else if args.split.is_some() {
        return conflict("--split", "one core", "it divides C between the cores of --lnc 2");
    }
    Ok(())
}
