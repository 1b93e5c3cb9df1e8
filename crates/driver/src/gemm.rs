//! The GEMM pipeline: a typed [`GemmRequest`] planned (or searched with `auto`), verified,
//! lowered, verified again, cycle-modeled, and, when asked, simulated on its inputs and
//! checked against the fp64 reference ([`gemm`]); a GEMM too large to unroll is extrapolated
//! from smaller ones and modeled looped instead ([`huge`]).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use codegen::{AutoCost, AutoLimits, AutoSearch, BlockSizes, GemmConfig, GemmPlan, LoopOrder, PlanRequest, Planning};
use codegen::{CodegenError, Schedule};
use penguin::{DType, HwProfile, PerfMode, SparsityPattern, Target};

use crate::cancel::{self, Cancel};
use crate::extrapolate::Extrapolated;
use crate::{budget, DriverError};

mod check;
pub(crate) mod huge;
mod inputs;
mod random;
mod report;

pub use huge::{AUTO_MAX_REDUCED_MATMULS, AUTO_PROXY_DIM, MAX_REPLAYED, MAX_UNROLLED_MATMULS};
use inputs::{prune, random_inputs, transpose, Inputs};
pub use inputs::{GemmInputs, Operand};
pub use report::{AutoReport, Blocks, Bottleneck, ExtrapolatedReport, Report, WallMs};

/// Block sizes the caller fixed, in elements; each `None` is the schedule's default (shrunk
/// until the blocks fit SBUF when none is fixed; weighed freely by `auto`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockRequest {
    /// Rows of C per block.
    pub m: Option<u64>,
    /// Columns of C per block.
    pub n: Option<u64>,
    /// Contraction rows per block (`blocked-mnk`).
    pub k: Option<u64>,
}

impl BlockRequest {
    /// Whether any block size is fixed.
    pub fn any(&self) -> bool {
        self.m.is_some() || self.n.is_some() || self.k.is_some()
    }
}

/// A phase of a run starting: `plan`, `lower`, `model`, `simulate`, `check`, ...
pub type Progress = dyn Fn(&str) + Send + Sync;

/// How a GEMM is run and what its outcome keeps.
#[derive(Clone)]
pub struct GemmOptions {
    /// Simulate the program on the inputs (given, or drawn from `seed`).
    pub simulate: bool,
    /// Check the simulated C against the fp64 reference.
    pub check: bool,
    /// Extrapolate the program from smaller GEMMs and model it looped even when it could be
    /// planned whole.
    pub extrapolate: bool,
    /// The caller needs the unrolled plan and program (a timeline, the Penguin function): a
    /// GEMM that would be extrapolated is refused ([`DriverError::NotUnrolled`]).
    pub unrolled: bool,
    /// Model an extrapolated program (without it, only its program and figures are made).
    pub model_extrapolated: bool,
    /// Keep C's bytes in its own dtype ([`GemmOutcome::c_bytes`]).
    pub c_bytes: bool,
    /// Seed of the random inputs (when none are given).
    pub seed: u64,
    /// The memory budget in bytes (default: half of physical memory).
    pub max_memory: Option<u64>,
    /// Stops the run when set.
    pub cancel: Option<Cancel>,
    /// Told the phase each time one starts.
    pub progress: Option<Arc<Progress>>,
}

impl Default for GemmOptions {
    fn default() -> Self {
        GemmOptions {
            simulate: true,
            check: true,
            extrapolate: false,
            unrolled: false,
            model_extrapolated: true,
            c_bytes: false,
            seed: 0,
            max_memory: None,
            cancel: None,
            progress: None,
        }
    }
}

impl std::fmt::Debug for GemmOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GemmOptions")
            .field("simulate", &self.simulate)
            .field("check", &self.check)
            .field("extrapolate", &self.extrapolate)
            .field("unrolled", &self.unrolled)
            .field("model_extrapolated", &self.model_extrapolated)
            .field("c_bytes", &self.c_bytes)
            .field("seed", &self.seed)
            .field("max_memory", &self.max_memory)
            .field("cancel", &self.cancel)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl GemmOptions {
    pub(crate) fn phase(&self, name: &str) {
        if let Some(p) = &self.progress {
            p(name);
        }
    }

    pub(crate) fn check_cancel(&self) -> Result<(), DriverError> {
        cancel::check(self.cancel.as_ref())
    }
}

/// A GEMM to run: `C[M, N] = A[M, K] @ B[K, N]` with everything that decides its kernel.
#[derive(Clone, Debug)]
pub struct GemmRequest {
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
    /// Dtype of A and B in HBM; `None`: the matmul dtype (as a real kernel keeps them), except
    /// for operands given as data, mixed operand dtypes and uint8, which are fp32 in HBM and
    /// cast on load.
    pub hbm_dtype: Option<DType>,
    /// The target.
    pub target: Target,
    /// The loop nest (`auto` searches).
    pub schedule: Schedule,
    /// Block sizes fixed by the caller.
    pub blocks: BlockRequest,
    /// The outer block loop, if fixed.
    pub order: Option<LoopOrder>,
    /// How A `[M, K]` is transposed: `Some(true)` on the PE, `Some(false)` by the DMA, `None`
    /// the target's default (`auto` weighs both).
    pub pe_transpose: Option<bool>,
    /// A is given as `[K, M]`.
    pub lhs_transposed: bool,
    /// PE perf mode.
    pub perf_mode: PerfMode,
    /// Structured sparsity of A along K.
    pub sparsity: Option<SparsityPattern>,
    /// The hardware profile of the planner's estimate and the cycle model (`None`: the
    /// target's built-in one).
    pub hw: Option<HwProfile>,
    /// How it is run.
    pub options: GemmOptions,
}

impl GemmRequest {
    /// A GEMM with both operands in `dtype`, C in fp32, `auto`'s schedule and every other
    /// choice left to its default.
    pub fn new(m: u64, k: u64, n: u64, dtype: DType, target: Target) -> Self {
        GemmRequest {
            m,
            k,
            n,
            lhs_dtype: dtype,
            rhs_dtype: dtype,
            out_dtype: DType::Fp32,
            hbm_dtype: None,
            target,
            schedule: Schedule::Auto,
            blocks: BlockRequest::default(),
            order: None,
            pe_transpose: None,
            lhs_transposed: false,
            perf_mode: PerfMode::None,
            sparsity: None,
            hw: None,
            options: GemmOptions::default(),
        }
    }

    /// The planner's configuration (`data_given`: A and B are given as data).
    pub fn config(&self, data_given: bool) -> GemmConfig {
        let defaults = BlockSizes::for_schedule(self.schedule);
        GemmConfig {
            m: self.m,
            k: self.k,
            n: self.n,
            lhs_dtype: self.lhs_dtype,
            rhs_dtype: self.rhs_dtype,
            out_dtype: self.out_dtype,
            input_dtype: self.hbm_dtype.unwrap_or_else(|| self.default_hbm_dtype(data_given)),
            target: self.target,
            schedule: self.schedule,
            lhs_transposed: self.lhs_transposed,
            perf_mode: self.perf_mode,
            sparsity: self.sparsity,
            blocks: BlockSizes {
                m: self.blocks.m.unwrap_or(defaults.m),
                n: self.blocks.n.unwrap_or(defaults.n),
                k: self.blocks.k.unwrap_or(defaults.k),
            },
            order: self.order.unwrap_or_default(),
            pe_transpose: self.pe_transpose,
        }
    }

    /// A and B's HBM dtype when none is given: the matmul dtype, except for operands given as
    /// data, mixed operand dtypes and uint8 (fp32 in HBM, cast on load).
    fn default_hbm_dtype(&self, data_given: bool) -> DType {
        if !data_given && self.lhs_dtype == self.rhs_dtype && self.lhs_dtype.is_float() {
            self.lhs_dtype
        } else {
            DType::Fp32
        }
    }

    /// What `auto` may not choose freely.
    pub(crate) fn limits(&self) -> AutoLimits {
        AutoLimits { order: self.order, block_m: self.blocks.m, block_n: self.blocks.n, block_k: self.blocks.k }
    }

    /// The hardware profile (the target's unless one is given).
    pub(crate) fn profile(&self) -> HwProfile {
        self.hw.unwrap_or_else(|| self.target.profile())
    }

    /// Whether the GEMM is extrapolated from smaller ones rather than planned whole (too
    /// large to unroll without a simulation, or asked to); checks the configuration first.
    pub fn extrapolates(&self, data_given: bool) -> Result<bool, DriverError> {
        let cfg = self.config(data_given);
        cfg.validate()?;
        let budget = self.options.max_memory.unwrap_or_else(budget::default_budget);
        Ok(self.options.extrapolate || !self.options.simulate && huge::too_large(&cfg, budget))
    }
}

/// What a GEMM run produced.
#[derive(Debug)]
pub struct GemmOutcome {
    /// The report (the `--json` report of `ntile gemm`).
    pub report: Report,
    /// The plan (`None` for an extrapolated GEMM).
    pub plan: Option<GemmPlan>,
    /// The verified lowering of the plan (`None` for an extrapolated GEMM).
    pub program: Option<bir::Program>,
    /// The cycle model of [`Self::program`].
    pub cycle: Option<sim::CycleReport>,
    /// The extrapolated GEMM (its looped program and figures), when it was not planned whole.
    pub extrapolated: Option<Extrapolated>,
    /// The simulated C as f32, row-major.
    pub c: Option<Vec<f32>>,
    /// C's bytes in its own dtype, when [`GemmOptions::c_bytes`] asked for them.
    pub c_bytes: Option<Vec<u8>>,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Verify, lower and verify the BIR of a plan.
pub fn lower(plan: &GemmPlan) -> Result<bir::Program, DriverError> {
    let verified = penguin::verify(&plan.function)
        .map_err(|e| DriverError::internal(format!("generated kernel failed verification (a bug): {e}")))?;
    let program = bir::lower(verified, plan.config.target)?;
    bir::verify_program(&program)?;
    Ok(program)
}

/// Lower and cycle-model a plan (what `auto` weighs a candidate by, keeping both for the
/// candidate it chooses), with the time each took in ms.
fn lower_and_model(plan: &GemmPlan, hw: &HwProfile) -> Result<Lowered, CodegenError> {
    // A candidate that cannot be lowered or modeled is a bug in ntile, not the user's input.
    let t = Instant::now();
    let program = lower(plan).map_err(|e| match e.kind() {
        crate::ErrorKind::Bug => CodegenError::Internal(e.to_string()),
        _ => CodegenError::Unsupported(e.to_string()),
    })?;
    let lower_ms = ms(t);
    let t = Instant::now();
    let cycle =
        sim::model_with(&program, hw).map_err(|e| CodegenError::Internal(format!("cycle model failed: {e}")))?;
    Ok(Lowered { program, cycle, lower_ms, model_ms: ms(t) })
}

/// A lowered and modeled plan.
pub(crate) struct Lowered {
    program: bir::Program,
    cycle: sim::CycleReport,
    lower_ms: f64,
    model_ms: f64,
}

/// `auto`'s cost of a candidate: the cycle model's time and HBM bytes of its lowering.
pub(crate) fn auto_cost(
    plan: &GemmPlan,
    hw: &HwProfile,
    cancel: Option<&Cancel>,
) -> Result<(AutoCost, Lowered), CodegenError> {
    if cancel::stopped(cancel) {
        return Err(CodegenError::Unsupported("interrupted".into()));
    }
    let lowered = lower_and_model(plan, hw)?;
    Ok((AutoCost { time: lowered.cycle.total_ns, hbm_bytes: lowered.cycle.hbm_bytes }, lowered))
}

/// Plan `cfg` as the request says (`auto`: the search, with each candidate lowered and
/// modeled, the chosen one's kept).
pub(crate) fn plan(
    req: &GemmRequest,
    cfg: &GemmConfig,
    hw: &HwProfile,
) -> Result<(GemmPlan, Option<(codegen::AutoChoice, Lowered)>), DriverError> {
    let cancel = req.options.cancel.as_ref();
    if cfg.schedule == Schedule::Auto {
        let cost = |p: &GemmPlan| auto_cost(p, hw, cancel);
        let threads = crate::threads::threads()?;
        let search = AutoSearch { limits: req.limits(), hw, shortlist: codegen::AUTO_SHORTLIST, threads, cost: &cost };
        let planned = codegen::plan(&PlanRequest::new(cfg).with_search(search), &codegen::default_builder);
        cancel::check(cancel)?;
        let planned = planned?;
        return Ok((planned.plan, planned.auto));
    }
    // Default blocks shrink until they fit the target's SBUF.
    let planning = if req.blocks.any() { Planning::Fixed } else { Planning::Fitting };
    let planned = codegen::plan(&PlanRequest::new(cfg).with_planning(planning), &codegen::default_builder)?;
    Ok((planned.plan, None))
}

/// Run a GEMM: plan, lower, model and (as the options say) simulate and check it, on
/// `inputs` when given (their shape must be the request's), else on seeded random inputs.
pub fn gemm(req: &GemmRequest, inputs: Option<GemmInputs<'_>>) -> Result<GemmOutcome, DriverError> {
    let opts = &req.options;
    let budget = opts.max_memory.unwrap_or_else(budget::default_budget);
    let given = match inputs {
        Some(i) => {
            let shape = i.shape(req.lhs_transposed)?;
            if shape != (req.m, req.k, req.n) {
                return Err(DriverError::input(format!(
                    "the inputs are a {}x{}x{} GEMM, but the request is for {}x{}x{}",
                    shape.0, shape.1, shape.2, req.m, req.k, req.n
                )));
            }
            Some(Inputs { a: i.a.values, b: i.b.values })
        }
        None => None,
    };
    let cfg = req.config(given.is_some());
    let (m, k, n) = (cfg.m, cfg.k, cfg.n);
    // Shape and dtype limits first: their messages say more than a memory estimate.
    cfg.validate()?;
    let hw = req.profile();
    if opts.extrapolate || !opts.simulate && huge::too_large(&cfg, budget) {
        // Too large to unroll: extrapolated from smaller GEMMs and modeled looped.
        return huge::run(req, &cfg, budget, &hw);
    }
    budget::check(&cfg, opts.simulate, budget)?;
    // Random inputs are drawn on other threads while the kernel is planned and lowered.
    let early_dtypes = (cfg.lhs_dtype, cfg.rhs_dtype);
    let early = (opts.simulate && given.is_none()).then(|| {
        let seed = opts.seed;
        random::Background::start(move || random_inputs(m, k, n, seed, early_dtypes))
    });
    let mut wall = WallMs::default();
    opts.phase(if cfg.schedule == Schedule::Auto { "plan (auto search)" } else { "plan" });
    let t = Instant::now();
    let (plan, auto) = plan(req, &cfg, &hw)?;
    let cfg = plan.config.clone();
    opts.check_cancel()?;
    let (program, cycle, auto) = match auto {
        // `auto` lowered and modeled its choice while weighing it.
        Some((choice, lowered)) => {
            wall.plan = (ms(t) - lowered.lower_ms - lowered.model_ms).max(0.0);
            (wall.lower, wall.model) = (lowered.lower_ms, lowered.model_ms);
            (lowered.program, lowered.cycle, Some(choice))
        }
        None => {
            wall.plan = ms(t);
            let t = Instant::now();
            opts.phase("lower");
            let program = lower(&plan)?;
            wall.lower = ms(t);
            check_simulable(opts.simulate, &program, (m, k, n))?;
            opts.check_cancel()?;
            opts.phase("model");
            let t = Instant::now();
            let cycle = sim::model_with(&program, &hw)
                .map_err(|e| DriverError::internal(format!("cycle model failed (a bug): {e}")))?;
            wall.model = ms(t);
            (program, cycle, None)
        }
    };
    if auto.is_some() {
        check_simulable(opts.simulate, &program, (m, k, n))?;
    }
    opts.check_cancel()?;
    let modeled = report::Modeled { program: &program, cycle: &cycle, auto: auto.as_ref(), hw: &hw };
    if !opts.simulate {
        let report = report::report_of(&cfg, &plan, &modeled, None, wall);
        return Ok(GemmOutcome::planned(report, plan, program, cycle));
    }
    let from_user = given.is_some();
    let mut inputs = match given {
        Some(i) => i,
        None => match early.and_then(random::Background::finish) {
            Some(drawn) if early_dtypes == (cfg.lhs_dtype, cfg.rhs_dtype) => drawn,
            _ => random_inputs(m, k, n, opts.seed, (cfg.lhs_dtype, cfg.rhs_dtype)),
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
    let done = check::simulate_and_check(opts, &plan, &program, inputs, sparse)?;
    (wall.simulate, wall.reference) = (done.simulate_ms, done.reference_ms);
    let report = report::report_of(&cfg, &plan, &modeled, done.check, wall);
    let mut outcome = GemmOutcome::planned(report, plan, program, cycle);
    (outcome.c, outcome.c_bytes) = (Some(done.c), done.raw);
    Ok(outcome)
}

/// Refuse to simulate a program whose HBM the simulator cannot hold.
fn check_simulable(simulate: bool, program: &bir::Program, (m, k, n): (u64, u64, u64)) -> Result<(), DriverError> {
    if simulate && program.hbm_size > sim::MAX_HBM_BYTES {
        return Err(DriverError::Budget(format!(
            "{m}x{k}x{n} is too large to simulate: its HBM tensors need {} bytes, more than the simulator's {} bytes; \
             --no-sim plans and models it without simulating",
            program.hbm_size,
            sim::MAX_HBM_BYTES
        )));
    }
    Ok(())
}

impl GemmOutcome {
    fn planned(report: Report, plan: GemmPlan, program: bir::Program, cycle: sim::CycleReport) -> Self {
        GemmOutcome {
            report,
            plan: Some(plan),
            program: Some(program),
            cycle: Some(cycle),
            extrapolated: None,
            c: None,
            c_bytes: None,
        }
    }

    /// What the timelines say of the kernel (title, buffers, the tile grid), when it was
    /// planned whole.
    pub fn kernel_info(&self) -> Option<sim::KernelInfo> {
        self.plan.as_ref().map(crate::timeline::kernel_info)
    }

    /// The modeled engine timeline as Chrome/Perfetto trace-event JSON (`None` for an
    /// extrapolated GEMM, which has no per-instruction timeline).
    pub fn trace(&self) -> Option<String> {
        let (program, cycle, info) = (self.program.as_ref()?, self.cycle.as_ref()?, self.kernel_info()?);
        Some(sim::chrome_trace_with(program, cycle, &info))
    }

    /// The modeled engine timeline as SVG, with SBUF occupancy and the tile grid.
    pub fn timeline_svg(&self) -> Option<String> {
        let (program, cycle, info) = (self.program.as_ref()?, self.cycle.as_ref()?, self.kernel_info()?);
        Some(sim::timeline_svg_with(program, cycle, &info))
    }

    /// The tile grid alone as SVG.
    pub fn tile_grid_svg(&self) -> Option<String> {
        let (program, cycle, info) = (self.program.as_ref()?, self.cycle.as_ref()?, self.kernel_info()?);
        sim::tile_grid_svg(program, cycle, &info)
    }
}
