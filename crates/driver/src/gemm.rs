//! The GEMM pipeline: a typed [`GemmRequest`] planned (or searched with `auto`), verified,
//! lowered, verified again, cycle-modeled, and, when asked, simulated on its inputs and
//! checked against the fp64 reference ([`gemm`]); a GEMM too large to unroll is extrapolated
//! from smaller ones and modeled looped instead (`gemm/huge.rs`).

use std::borrow::Cow;
use std::time::Instant;

use codegen::{AutoSearch, GemmConfig, GemmPlan, PlanRequest, Planning};
use penguin::HwProfile;

use crate::budget;
use crate::cancel;
use crate::error::DriverError;
use crate::lower::{auto_cost, ms, Lowered};

mod check;
mod huge;
mod inputs;
mod lnc;
mod lnc_huge;
mod outcome;
mod random;
mod reduce;
mod report;
mod request;

pub use crate::budget::MAX_UNROLLED_MATMULS;
pub use crate::lower::lower;
pub use huge::{AUTO_MAX_REDUCED_MATMULS, AUTO_PROXY_DIM, MAX_REPLAYED};
use inputs::{prune, random_inputs, transpose, Inputs};
pub use inputs::{GemmInputs, Operand};
pub use outcome::{ChipOutcome, GemmOutcome};
pub use report::{AutoReport, Blocks, Bottleneck, CoreReport, ExtrapolatedReport, LncReport, Report, Searched, WallMs};
pub use request::{BlockRequest, GemmOptions, GemmRequest, Progress};

/// Plan `cfg` as the request says (`auto`, or an explicit schedule whose blocks are
/// searched: the search, with each candidate lowered and modeled, the chosen one's kept).
pub(crate) fn plan(
    req: &GemmRequest,
    cfg: &GemmConfig,
    hw: &HwProfile,
) -> Result<(GemmPlan, Option<(codegen::AutoChoice, Lowered)>), DriverError> {
    let cancel = req.options.cancel.as_ref();
    if let Some(searched) = req.search_config(cfg) {
        let cost = |p: &GemmPlan| auto_cost(p, hw, cancel);
        let threads = crate::threads::threads()?;
        let search = AutoSearch { limits: req.limits(), hw, shortlist: codegen::AUTO_SHORTLIST, threads, cost: &cost };
        let planned = codegen::plan(&PlanRequest::new(&searched).with_search(search), &cancel::builder(cancel));
        cancel::check(cancel)?;
        let planned = planned?;
        return Ok((planned.plan, planned.auto));
    }
    // Default blocks shrink until they fit the target's SBUF.
    let planning = if req.blocks.any() { Planning::Fixed } else { Planning::Fitting };
    let planned = codegen::plan(&PlanRequest::new(cfg).with_planning(planning), &cancel::builder(cancel))?;
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
    if let Some(e) = lnc::refusal(req, &cfg) {
        return Err(e);
    }
    if opts.extrapolate || !opts.simulate && budget::too_large(&cfg, budget) {
        if req.lnc != 1 {
            return lnc_huge::run(req, &cfg, budget, &hw);
        }
        // Too large to unroll: extrapolated from smaller GEMMs and modeled looped.
        return huge::run(req, &cfg, budget, &hw);
    }
    budget::check(&cfg, opts.simulate, budget)?;
    // Modeled only, with nothing that needs every instruction: planned in loops when the
    // schedule can be and its loops skip at least half of its nest; a search over a GEMM of
    // more matmuls than `auto`'s largest proxy (8192^3) weighs its candidates on a proxy and
    // plans its choice in loops, as it does for a GEMM too large to unroll (planning every
    // candidate whole would cost seconds and gigabytes at 16384^3).
    let modeled_only = opts.plan_in_loops && !opts.simulate && !opts.unrolled && opts.model_extrapolated;
    let is_search = req.search_config(&cfg).is_some();
    let proxy_matmuls = budget::matmuls(AUTO_PROXY_DIM, AUTO_PROXY_DIM, AUTO_PROXY_DIM);
    if modeled_only && req.lnc == 1 && is_search && budget::matmuls(m, k, n) > proxy_matmuls {
        return huge::run(req, &cfg, budget, &hw);
    }
    if modeled_only && req.lnc == 1 && !is_search && codegen::plans_in_loops(&cfg) {
        if let Some(outcome) = huge::run_in_loops(req, &cfg, &hw)? {
            return Ok(outcome);
        }
    }
    // A large single-core GEMM's drawn inputs go straight into HBM when it is simulated;
    // any other's are drawn while the kernel is planned.
    let stream = req.lnc == 1 && given.is_none() && check::streams_inputs(opts, &cfg);
    let early = if stream { None } else { draw_early(opts, &cfg, given.is_none()) };
    if req.lnc != 1 {
        return lnc::run(req, &cfg, given, early, &hw);
    }
    let mut wall = WallMs::default();
    opts.phase(&req.plan_phase(""));
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
            let program = crate::lower::lower_cancellable(&plan, opts.cancel.as_ref())?;
            wall.lower = ms(t);
            check_simulable(opts.simulate, &program, (m, k, n))?;
            opts.check_cancel()?;
            opts.phase("model");
            let t = Instant::now();
            let cycle = sim::model_cancellable(&program, &hw, opts.cancel.as_ref())
                .map_err(|e| cancel::model_error(e, "cycle model"))?;
            wall.model = ms(t);
            (program, cycle, None)
        }
    };
    if auto.is_some() {
        check_simulable(opts.simulate, &program, (m, k, n))?;
    }
    opts.check_cancel()?;
    let modeled = |program| report::Modeled { program, cycle: &cycle, auto: auto.as_ref(), hw: &hw };
    if !opts.simulate {
        let report = searched(req, report::report_of(&cfg, &plan, &modeled(&program), None, wall));
        return Ok(GemmOutcome::planned(report, plan, program, cycle));
    }
    let (inputs, sparse) = simulation_inputs(opts, &cfg, given, early, stream)?;
    let names = check::Names::of(&plan)?;
    // The simulator shares the program rather than copying it, and has let go of it by the
    // time the simulation returns.
    let program = std::sync::Arc::new(program);
    let done = check::simulate_and_check(opts, (&plan.config, &names), check::Kernel::One(&program), inputs, sparse)?;
    let program = std::sync::Arc::unwrap_or_clone(program);
    (wall.simulate, wall.reference) = (done.simulate_ms, done.reference_ms);
    let report = searched(req, report::report_of(&cfg, &plan, &modeled(&program), done.check, wall));
    let mut outcome = GemmOutcome::planned(report, plan, program, cycle);
    (outcome.c, outcome.c_bytes) = (Some(done.c), done.raw);
    Ok(outcome)
}

/// Inputs drawn in the background, with the dtypes they were drawn for.
type Early = random::Background<(Inputs<'static>, (penguin::DType, penguin::DType))>;

/// The inputs a GEMM is simulated on: the given ones, else those drawn while it was planned
/// (`early`, when drawn for the same dtypes), else (with `stream`, where [`check::streams_inputs`]
/// holds) the seed to draw them from straight into HBM, else drawn now; a sparse A pruned
/// (when drawn) and compressed.
fn simulation_inputs<'a>(
    opts: &GemmOptions,
    cfg: &GemmConfig,
    given: Option<Inputs<'a>>,
    early: Option<Early>,
    stream: bool,
) -> Result<(check::Operands<'a>, Option<codegen::SparseA>), DriverError> {
    let (m, k, n) = (cfg.m, cfg.k, cfg.n);
    let from_user = given.is_some();
    if stream && early.is_none() && !from_user && check::streams_inputs(opts, cfg) {
        return Ok((check::Operands::Drawn { seed: opts.seed }, None));
    }
    let mut inputs = match given {
        Some(i) => i,
        None => match early.and_then(random::Background::finish) {
            Some((drawn, dtypes)) if dtypes == (cfg.lhs_dtype, cfg.rhs_dtype) => drawn,
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
    Ok((check::Operands::Values(inputs), sparse))
}

/// Random inputs drawn on other threads while the kernel is planned and lowered (when it is
/// simulated on drawn inputs).
fn draw_early(opts: &GemmOptions, cfg: &GemmConfig, drawn: bool) -> Option<Early> {
    let (m, k, n, seed, dtypes) = (cfg.m, cfg.k, cfg.n, opts.seed, (cfg.lhs_dtype, cfg.rhs_dtype));
    (opts.simulate && drawn).then(|| random::Background::start(move || (random_inputs(m, k, n, seed, dtypes), dtypes)))
}

/// The report with what its search searched: an explicit schedule's blocks, or (`auto`) the
/// schedule.
pub(crate) fn searched(req: &GemmRequest, mut report: Report) -> Report {
    if let Some(a) = &mut report.auto {
        a.searched = if req.searches_blocks() { Searched::Blocks } else { Searched::Schedule };
    }
    report
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
