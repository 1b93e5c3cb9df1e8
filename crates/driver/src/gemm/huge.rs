//! GEMMs too large to unroll (modeled without a simulation): the looped program
//! is extrapolated from reduced GEMMs ([`crate::extrapolate`]) and modeled looped
//! ([`sim::model_looped`]), never unrolled; `auto` weighs its candidates on a proxy GEMM capped
//! at [`AUTO_PROXY_DIM`] planned whole, then extrapolates its choice (or, when there is no
//! proxy or the choice does not extrapolate, weighs its shortlist extrapolated).

use std::time::Instant;

use codegen::{AutoChoice, AutoCost, AutoJob, AutoSearch, CodegenError, GemmConfig, PlanRequest, Planning, Schedule};
use penguin::HwProfile;

use super::outcome::GemmOutcome;
use super::report::{report_from, ExtrapolatedReport, Facts};
use super::report::{Report, WallMs};
use super::request::GemmRequest;
use crate::budget;
use crate::cancel::{self, Cancel};
use crate::error::DriverError;
use crate::error::ExtrapolateError;
use crate::extrapolate::{extrapolate_within, Bounds, Extrapolated};
use crate::lower::{auto_cost, ms};

/// The refusal of `--extrapolate` with a simulation.
pub(super) fn not_simulated() -> DriverError {
    DriverError::input(
        "--extrapolate needs --no-sim (or --emit bir): an extrapolated program is modeled, not simulated",
    )
}

/// Why `cfg` is extrapolated rather than planned whole.
fn why_extrapolated(req: &GemmRequest, cfg: &GemmConfig) -> String {
    if req.options.extrapolate {
        "with --extrapolate its program is extrapolated from smaller GEMMs and modeled looped".to_string()
    } else {
        format!(
            "{}x{}x{} is too large to unroll ({} matmuls), so its program is extrapolated from smaller GEMMs and modeled looped",
            cfg.m,
            cfg.k,
            cfg.n,
            budget::matmuls(cfg.m, cfg.k, cfg.n)
        )
    }
}

/// Refuse when planning the reduced GEMMs of every schedule that may be planned would exceed
/// the budget (`threads` of them in flight at once).
fn check_memory(cfg: &GemmConfig, threads: usize, budget: u64) -> Result<(), DriverError> {
    let schedules: Vec<Schedule> = match cfg.schedule {
        Schedule::Auto => {
            let mut s = vec![Schedule::Naive, Schedule::BlockedMnk];
            if stripe_fits(cfg) {
                s.extend([Schedule::Hoisted, Schedule::BlockedMn]);
            }
            s
        }
        s => vec![s],
    };
    for schedule in schedules {
        let c = GemmConfig { schedule, ..cfg.clone() };
        let mut reduced: Vec<u128> = crate::extrapolate::reduced_configs(&c).iter().map(budget::plan_bytes).collect();
        reduced.sort_unstable_by(|a, b| b.cmp(a));
        let need: u128 = reduced.iter().take(threads.max(1)).sum();
        if need > u128::from(budget) {
            return Err(DriverError::Budget(format!(
                "{}x{}x{} is too large to unroll and its {schedule} program is extrapolated from smaller GEMMs, \
                 but planning them needs about {}, over the memory budget of {}; raise --max-memory BYTES if the \
                 machine has the memory, or set NTILE_THREADS=1",
                cfg.m,
                cfg.k,
                cfg.n,
                budget::human(need),
                budget::human(u128::from(budget))
            )));
        }
    }
    Ok(())
}

/// Whether one K stripe of A (one m tile, the whole K) fits SBUF twice: what `hoisted` and
/// `blocked-mn` need at the least.
fn stripe_fits(cfg: &GemmConfig) -> bool {
    let chunks = codegen::k_chunks(cfg).0.len() as u64;
    let bytes = chunks * codegen::M_TILE * u64::from(cfg.lhs_dtype.size_bytes());
    2 * bytes <= u64::from(cfg.target.info().statebuf_par_size_in_bytes)
}

/// The most instructions the looped model of an extrapolated program replays one by one
/// (about 5 s on one core): the jumps over repeating periods leave a few thousand to replay
/// per loop level, so a program that reaches its limit has a period that never repeats.
pub const MAX_REPLAYED: u64 = 1 << 26;

fn model(x: &Extrapolated, hw: &HwProfile, cancel: Option<&Cancel>) -> Result<sim::CycleReport, DriverError> {
    sim::model_looped_cancellable(&x.program, hw, LOOPED, cancel).map(|(c, _)| c).map_err(|e| model_error(x, e))
}

/// How the looped model runs here: jumping its steady state, replaying at most
/// [`MAX_REPLAYED`] instructions one by one.
const LOOPED: sim::LoopedOptions = sim::LoopedOptions { slices: false, extrapolate: true, max_replayed: MAX_REPLAYED };

/// [`model`], with the critical path followed through the loops (for the report's
/// bottleneck).
fn model_with_path(
    x: &Extrapolated,
    hw: &HwProfile,
    cancel: Option<&Cancel>,
) -> Result<(sim::CycleReport, sim::CriticalPath), DriverError> {
    sim::model_looped_critical(&x.program, hw, LOOPED, cancel).map(|(c, _, p)| (c, p)).map_err(|e| model_error(x, e))
}

/// What a failure of the looped model of `x` means to the user.
fn model_error(x: &Extrapolated, e: sim::SimError) -> DriverError {
    match e {
        sim::SimError::Interrupted => DriverError::Interrupted,
        sim::SimError::NoSteadyState { .. } => DriverError::input(format!(
            "{}x{}x{} cannot be modeled in reasonable time: {e}",
            x.config.m, x.config.k, x.config.n
        )),
        e => DriverError::internal(format!("cycle model of the extrapolated program failed (a bug): {e}")),
    }
}

/// The most matmuls the reduced GEMMs of one `auto` candidate may have in total; a candidate
/// over it is skipped (its extrapolation would take seconds).
pub const AUTO_MAX_REDUCED_MATMULS: u128 = 1 << 20;

/// The choice of [`auto_on_proxy`], extrapolated and modeled (with its critical path), with
/// the proxy's `[m, k, n]`.
type OnProxy = (Extrapolated, (sim::CycleReport, sim::CriticalPath), AutoChoice, [u64; 3]);

/// `auto` weighs the candidates of a GEMM too large to unroll on a proxy with every dimension
/// capped at this many elements, planned whole; its choice is then extrapolated.
pub const AUTO_PROXY_DIM: u64 = 8192;

/// `auto` on a proxy GEMM: `cfg` with every dimension capped at [`AUTO_PROXY_DIM`], searched
/// as a GEMM that fits is (every candidate planned whole, lowered and modeled), then the
/// choice (schedule, blocks, loop order) extrapolated to `cfg` and modeled looped. At that
/// size the largest blocks still repeat (two 4096-wide blocks per dimension), so the
/// candidates' steady states rank as they do at full size, and no candidate is skipped for
/// the size of its reduced GEMMs. `None` when there is no proxy (no dimension is capped, or
/// the proxy is itself too large to plan whole) or the choice does not extrapolate (the
/// caller then weighs every candidate extrapolated).
fn auto_on_proxy(
    req: &GemmRequest,
    cfg: &GemmConfig,
    hw: &HwProfile,
    (threads, budget): (usize, u64),
) -> Result<Option<OnProxy>, DriverError> {
    let proxy = GemmConfig {
        m: cfg.m.min(AUTO_PROXY_DIM),
        k: cfg.k.min(AUTO_PROXY_DIM),
        n: cfg.n.min(AUTO_PROXY_DIM),
        ..cfg.clone()
    };
    if proxy == *cfg || budget::too_large(&proxy, budget) {
        return Ok(None);
    }
    let cancel = req.options.cancel.as_ref();
    // Only the choice is kept: its lowering is the proxy's, not the GEMM's.
    let cost = |p: &codegen::GemmPlan| auto_cost(p, hw, cancel).map(|(c, _)| (c, ()));
    let search = AutoSearch { limits: req.limits(), hw, shortlist: codegen::AUTO_SHORTLIST, threads, cost: &cost };
    let planned = codegen::plan(&PlanRequest::new(&proxy).with_search(search), &cancel::builder(cancel));
    cancel::check(cancel)?;
    let Some((choice, ())) = planned?.auto else {
        return Err(DriverError::internal("auto planned the proxy without a choice (a bug)"));
    };
    let chosen = GemmConfig {
        schedule: choice.config.schedule,
        blocks: choice.config.blocks,
        order: choice.config.order,
        ..cfg.clone()
    };
    let bounds = Bounds { bytes: u128::from(budget), matmuls: u128::MAX };
    // Whatever keeps the choice from extrapolating, the search over extrapolated candidates
    // meets it too (and reports it) or finds another candidate.
    let Ok(x) = extrapolate_within(&chosen, Planning::Fixed, threads, bounds, cancel) else {
        cancel::check(cancel)?;
        return Ok(None);
    };
    cancel::check(cancel)?;
    let (cycle, path) = model_with_path(&x, hw, cancel)?;
    let choice = AutoChoice { config: x.config.clone(), cost: cycle.total_ns, hbm_bytes: cycle.hbm_bytes, ..choice };
    Ok(Some((x, (cycle, path), choice, [proxy.m, proxy.k, proxy.n])))
}

/// `auto` over extrapolated candidates: the search of [`codegen::choose_auto`], each
/// candidate extrapolated and modeled looped. Candidates whose reduced GEMMs are too large to
/// weigh quickly, or whose reduced programs do not fit, are skipped.
fn auto(
    req: &GemmRequest,
    cfg: &GemmConfig,
    hw: &HwProfile,
    (threads, budget): (usize, u64),
) -> Result<(Extrapolated, sim::CycleReport, AutoChoice), DriverError> {
    let cancel = req.options.cancel.as_ref();
    let limits = req.limits();
    let mut failure: Option<DriverError> = None;
    let mut cost = |job: &AutoJob| -> Result<Option<(Weighed, GemmConfig, AutoCost)>, CodegenError> {
        if cancel::stopped(cancel) {
            return Err(CodegenError::Interrupted);
        }
        let c = &job.config;
        if matches!(c.schedule, Schedule::Hoisted | Schedule::BlockedMn) && !stripe_fits(c) {
            let stripe = codegen::k_chunks(c).0.len() as u64 * codegen::M_TILE * u64::from(c.lhs_dtype.size_bytes());
            return Err(CodegenError::SbufCapacity {
                tensor: "a_stripe".into(),
                needed: 2 * stripe,
                available: u64::from(c.target.info().statebuf_par_size_in_bytes),
                used: 0,
                target: c.target,
            });
        }
        let bounds = Bounds { bytes: u128::from(budget), matmuls: AUTO_MAX_REDUCED_MATMULS };
        match extrapolate_within(c, job.planning, threads, bounds, cancel) {
            Ok(x) => {
                let cycle = model(&x, hw, cancel).map_err(|e| {
                    if matches!(e, DriverError::Interrupted) {
                        return CodegenError::Interrupted;
                    }
                    let msg = e.to_string();
                    failure = Some(e);
                    CodegenError::Internal(msg)
                })?;
                let time = AutoCost { time: cycle.total_ns, hbm_bytes: cycle.hbm_bytes };
                let planned = x.config.clone();
                Ok(Some(((x, cycle), planned, time)))
            }
            Err(ExtrapolateError::Plan(e)) => Err(e),
            // Another candidate may have reduced programs that fit, or smaller ones.
            Err(ExtrapolateError::TooLarge(_)) => Ok(None),
            Err(e @ ExtrapolateError::Fit { .. }) => {
                failure = Some(e.into());
                Ok(None)
            }
            // A limit of the full GEMM (a count past u32) holds for every candidate.
            Err(e) => {
                let e = DriverError::from(e);
                let msg = e.to_string();
                failure = Some(e);
                Err(CodegenError::Unsupported(msg))
            }
        }
    };
    let chosen = codegen::choose_auto(cfg, &limits, hw, codegen::AUTO_SHORTLIST, &mut cost);
    cancel::check(cancel)?;
    match (chosen, failure) {
        (Ok(((x, cycle), choice)), _) => Ok((x, cycle, choice)),
        (Err(CodegenError::BadGemm(_) | CodegenError::Unsupported(_) | CodegenError::Internal(_)), Some(f)) => Err(f),
        (Err(CodegenError::BadGemm(_)), None) => Err(DriverError::input(format!(
            "auto found no candidate small enough to extrapolate for {}x{}x{} (each one's reduced GEMMs have more \
             than {AUTO_MAX_REDUCED_MATMULS} matmuls); choose --schedule and blocks explicitly",
            cfg.m, cfg.k, cfg.n
        ))),
        (Err(e), _) => Err(e.into()),
    }
}

/// What `auto` keeps of a weighed candidate.
type Weighed = (Extrapolated, sim::CycleReport);

/// The report of an extrapolated GEMM.
fn report(
    x: &Extrapolated,
    (cycle, path): (&sim::CycleReport, Option<&sim::CriticalPath>),
    hw: &HwProfile,
    choice: Option<&AutoChoice>,
    wall: WallMs,
) -> Report {
    let tiling = codegen::Tiling::of(&x.config);
    let facts = Facts { tiling: &tiling, figures: &x.figures, hw };
    let bottleneck = path.and_then(super::report::bottleneck_of);
    let mut report = report_from(&x.config, &facts, cycle, choice, bottleneck, None, wall);
    let period = |name: &str| x.axes.iter().find(|a| a.name == name).map_or(0, |a| a.period);
    report.extrapolated = Some(ExtrapolatedReport {
        reduced_plans: x.plans,
        reduced_instructions: x.reduced_instructions,
        base: [x.base.m, x.base.k, x.base.n],
        periods: [period("m"), period("k"), period("n")],
        along_nest: x.nested,
        planned_in_loops: x.sampled,
    });
    report
}

/// The report of an extrapolated GEMM that was not modeled (`--emit bir`): every modeled
/// figure 0.
fn unmodeled_report(x: &Extrapolated, hw: &HwProfile, wall: WallMs) -> Report {
    let cycle = sim::CycleReport {
        total_ns: 0.0,
        engine_busy_ns: vec![0.0; bir::NUM_ENGINES],
        hbm_bytes: x.figures.hbm_bytes,
        matmul_flops: 0.0,
        peak_flops_per_ns: 0.0,
        slices: Vec::new(),
    };
    report(x, (&cycle, None), hw, None, wall)
}

/// A GEMM that fits the budget but needs no unrolled program (`--no-sim`, nothing emitted,
/// nothing that needs every instruction's time), planned in loops when its schedule can be
/// ([`crate::extrapolate::sampled`]: every explicit schedule) and its loops are long enough
/// to skip at least half of its nest's steps, lowered loop by loop and modeled looped; `None`
/// otherwise (it is then planned whole, which costs less when little is skipped).
pub(super) fn run_in_loops(
    req: &GemmRequest,
    cfg: &GemmConfig,
    hw: &HwProfile,
) -> Result<Option<GemmOutcome>, DriverError> {
    let opts = &req.options;
    opts.phase("plan (in loops)");
    let mut wall = WallMs::default();
    let t = Instant::now();
    // Default blocks shrink until they fit the target's SBUF, as a whole plan's do.
    let planning = if req.blocks.any() { Planning::Fixed } else { Planning::Fitting };
    let Some((x, lower_ms)) = crate::extrapolate::sampled_timed(cfg, planning, true, opts.cancel.as_ref())? else {
        return Ok(None);
    };
    (wall.plan, wall.lower) = ((ms(t) - lower_ms).max(0.0), lower_ms);
    opts.check_cancel()?;
    opts.phase("model");
    let t = Instant::now();
    let (cycle, path) = model_with_path(&x, hw, opts.cancel.as_ref())?;
    wall.model = ms(t);
    let report = super::searched(req, report(&x, (&cycle, Some(&path)), hw, None, wall));
    Ok(Some(GemmOutcome::extrapolated(report, x)))
}

/// Plan (by extrapolation), model and report a GEMM too large to unroll.
pub(super) fn run(
    req: &GemmRequest,
    cfg: &GemmConfig,
    budget: u64,
    hw: &HwProfile,
) -> Result<GemmOutcome, DriverError> {
    let opts = &req.options;
    if opts.extrapolate && opts.simulate {
        return Err(not_simulated());
    }
    if opts.unrolled {
        return Err(DriverError::NotUnrolled { why: why_extrapolated(req, cfg) });
    }
    let threads = crate::threads::threads()?;
    check_memory(cfg, threads, budget)?;
    let mut wall = WallMs::default();
    let t = Instant::now();
    let mut weighed_on = None;
    let (x, cycle, choice) = if let Some(searched) = req.search_config(cfg) {
        opts.phase(&req.plan_phase(" on a proxy, extrapolated"));
        let (x, cycle, choice, proxy) = match auto_on_proxy(req, &searched, hw, (threads, budget))? {
            Some((x, cycle, choice, proxy)) => (x, cycle, choice, Some(proxy)),
            None => {
                opts.phase(&req.plan_phase(", extrapolated"));
                let (x, _, choice) = auto(req, &searched, hw, (threads, budget))?;
                // The choice modeled again, following its critical path (the search did not).
                let modeled = model_with_path(&x, hw, opts.cancel.as_ref())?;
                (x, modeled, choice, None)
            }
        };
        weighed_on = proxy;
        wall.plan = ms(t);
        (x, cycle, Some(choice))
    } else {
        opts.phase("plan (extrapolated)");
        let planning = if req.blocks.any() { Planning::Fixed } else { Planning::Fitting };
        let bounds = Bounds { bytes: u128::from(budget), matmuls: u128::MAX };
        let x = extrapolate_within(cfg, planning, threads, bounds, opts.cancel.as_ref())?;
        wall.plan = ms(t);
        opts.check_cancel()?;
        if !opts.model_extrapolated {
            // Only the program is asked for: no model (the report has no modeled time).
            return Ok(GemmOutcome::extrapolated(unmodeled_report(&x, hw, wall), x));
        }
        opts.phase("model");
        let t = Instant::now();
        let modeled = model_with_path(&x, hw, opts.cancel.as_ref())?;
        wall.model = ms(t);
        (x, modeled, None)
    };
    opts.check_cancel()?;
    let (cycle, path) = cycle;
    let mut report = super::searched(req, report(&x, (&cycle, Some(&path)), hw, choice.as_ref(), wall));
    if let Some(a) = &mut report.auto {
        a.weighed_on = weighed_on;
    }
    Ok(GemmOutcome::extrapolated(report, x))
}
