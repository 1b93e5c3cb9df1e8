//! A GEMM on the physical cores of one logical NeuronCore (`--lnc 2`, trn2 and trn3).
//!
//! C is divided between the cores by rows or by columns, or K is ([`codegen::Split`]); each core's
//! share is planned as a GEMM of its own (auto's search, or the blocks searched, on the
//! share), pointed at its window of the shared A, B and C ([`codegen::place_share`]),
//! lowered, and the programs become one [`bir::Chip`], verified and modeled with the HBM
//! bandwidth the cores share ([`sim::model_chip`]). Without `--split`, every split is
//! planned and the one the cycle model finds fastest is kept; a split of K is skipped when a
//! band split is already no slower than its lower bound (its matmuls at the PE's peak, then
//! its reduction's bytes at the shared HBM budget). The chip is simulated on one
//! HBM image (races between the cores would be a bug) and C checked against the fp64
//! reference as for one core.
//!
//! A split of K gives each core a partial sum of all of C; the cores then add them after a
//! shared semaphore ([`super::reduce`]).
//!
//! GEMMs too large to unroll are [`super::lnc_huge`]'s.

use std::time::Instant;

use codegen::{place_share, AutoChoice, GemmConfig, GemmPlan, Share, Split};
use penguin::HwProfile;

use super::check::{self, Kernel, Names};
use super::inputs::Inputs;
use super::outcome::{ChipOutcome, GemmOutcome};
use super::report::{self, ChipFacts, Modeled, Report, WallMs};
use super::request::GemmRequest;
use super::{searched, simulation_inputs, Early};
use crate::error::DriverError;
use crate::lower::{lower_cancellable, ms};

/// Why `req` cannot run on `req.lnc` cores, if it cannot.
pub(super) fn refusal(req: &GemmRequest, cfg: &GemmConfig) -> Option<DriverError> {
    let max = cfg.target.info().max_lnc;
    if req.lnc == 0 || req.lnc > 2 {
        return Some(DriverError::input(format!(
            "--lnc {} is not a logical NeuronCore: it groups 1 or 2 physical cores",
            req.lnc
        )));
    }
    if req.lnc > max {
        return Some(DriverError::input(format!(
            "--lnc {} needs a logical NeuronCore of {} physical cores, and {} has none (LNC=2 is trn2 and trn3)",
            req.lnc, req.lnc, cfg.target
        )));
    }
    if req.split.is_some() && req.lnc == 1 {
        return Some(DriverError::input("--split divides C between cores: it needs --lnc 2"));
    }
    None
}

/// The refusal of `--split` when its dimension cannot give each of `cores` a share.
pub(super) fn too_short(split: Split, whole: &GemmConfig, cores: u64) -> DriverError {
    let (dim, len) = split.dim(whole);
    DriverError::input(format!(
        "--split {split}: {dim} = {len} is too short to give each of {cores} cores a share (at least one row or column each, cut at multiples of 128)"
    ))
}

/// One split planned: every core's share, plan (placed), program, and the chip's model.
struct Planned {
    split: Split,
    shares: Vec<Share>,
    plans: Vec<GemmPlan>,
    autos: Vec<Option<AutoChoice>>,
    chip: bir::Chip,
    cycle: sim::ChipReport,
    /// Wall time of lowering the placed shares and of modeling the chip, in ms.
    lower_ms: f64,
    model_ms: f64,
}

/// Plan, place and lower every core's share of `split`, and model the chip.
fn plan_split(
    req: &GemmRequest,
    whole: &GemmConfig,
    split: Split,
    shares: Vec<Share>,
    hw: &HwProfile,
) -> Result<Planned, DriverError> {
    let cancel = req.options.cancel.as_ref();
    let mut unplaced: Vec<(Share, GemmPlan, Option<AutoChoice>)> = Vec::new();
    let (mut plans, mut autos, mut programs) = (Vec::new(), Vec::new(), Vec::new());
    let mut lower_ms = 0.0;
    for share in &shares {
        // Cores with shares of the same shape plan once.
        let twin = unplaced.iter().find(|(s, _, _)| (s.m, s.n, s.k) == (share.m, share.n, share.k));
        let (mut plan, auto) = match twin {
            Some((_, p, a)) => (p.clone(), a.clone()),
            None => {
                let (p, a) = super::plan(req, &share.config(whole), hw)?;
                let a = a.map(|(choice, _)| choice);
                unplaced.push((*share, p.clone(), a.clone()));
                (p, a)
            }
        };
        place_share(&mut plan, whole, share)?;
        req.options.check_cancel()?;
        let t = Instant::now();
        programs.push(lower_cancellable(&plan, cancel)?);
        lower_ms += ms(t);
        plans.push(plan);
        autos.push(auto);
    }
    let chip = if split == Split::K {
        let c = plans
            .first()
            .and_then(|p| penguin::FunctionView::tensor(&p.function, p.tensors.c))
            .map(|t| t.name.clone())
            .ok_or_else(|| DriverError::internal("the shares' plans have no C (a bug)"))?;
        super::reduce::chip_of_partials(programs, &c, whole.out_dtype)?
    } else {
        bir::Chip::new(programs)
    };
    bir::verify_chip(&chip)?;
    let t = Instant::now();
    let cycle =
        sim::model_chip_cancellable(&chip, hw, cancel).map_err(|e| crate::cancel::model_error(e, "cycle model"))?;
    Ok(Planned { split, shares, plans, autos, chip, cycle, lower_ms, model_ms: ms(t) })
}

/// A lower bound of the modeled time of `whole` split by K over `cores` cores, in ns: the
/// reduction starts when both partial sums are stored, so it follows each core's share of the
/// matmuls at the PE's peak (`band`'s cores have the same dtypes, so its peak is theirs) and
/// then moves the two partial sums in and C out through the shared HBM budget.
fn k_split_floor_ns(whole: &GemmConfig, cores: u64, band: &sim::ChipReport, hw: &HwProfile) -> f64 {
    let peak = band.cores.first().map_or(0.0, |c| c.peak_flops_per_ns);
    let (m, n, k) = (whole.m as f64, whole.n as f64, whole.k as f64);
    let pe_ns = if peak > 0.0 { 2.0 * m * n * k / (cores as f64 * peak) } else { 0.0 };
    let reduce_bytes = m * n * (2.0 * 4.0 + f64::from(whole.out_dtype.size_bytes()));
    pe_ns + reduce_bytes / hw.hbm_shared_bytes_per_ns
}

/// Run `req` (whose planner configuration is `whole`) on `req.lnc` cores.
pub(super) fn run(
    req: &GemmRequest,
    whole: &GemmConfig,
    given: Option<Inputs<'_>>,
    early: Option<Early>,
    hw: &HwProfile,
) -> Result<GemmOutcome, DriverError> {
    if let Some(e) = refusal(req, whole) {
        return Err(e);
    }
    let opts = &req.options;
    let cores = u64::from(req.lnc);
    let splits = req.split.map_or_else(|| Split::ALL.to_vec(), |s| vec![s]);
    let mut wall = WallMs::default();
    opts.phase(&req.plan_phase(""));
    let t = Instant::now();
    let mut best: Option<Planned> = None;
    let (mut lower_ms, mut model_ms) = (0.0, 0.0);
    let mut weighed = indexmap::IndexMap::new();
    for split in splits {
        if split == Split::K && whole.sparsity.is_some() {
            if req.split.is_some() {
                return Err(DriverError::input(
                    "--split k with --sparsity: a sparse A's compressed rows are not divided by the contraction; use --split m or n",
                ));
            }
            continue;
        }
        let Some(shares) = split.shares(whole, cores) else {
            if req.split.is_some() {
                return Err(too_short(split, whole, cores));
            }
            continue;
        };
        // A split of K cannot beat a band split already faster than its floor: not planned.
        if split == Split::K
            && best.as_ref().is_some_and(|b| b.cycle.total_ns <= k_split_floor_ns(whole, cores, &b.cycle, hw))
        {
            continue;
        }
        let planned = plan_split(req, whole, split, shares, hw)?;
        (lower_ms, model_ms) = (lower_ms + planned.lower_ms, model_ms + planned.model_ms);
        weighed.insert(split.name().to_string(), planned.cycle.total_us());
        if best.as_ref().is_none_or(|b| planned.cycle.total_ns < b.cycle.total_ns) {
            best = Some(planned);
        }
    }
    let Some(best) = best else {
        return Err(DriverError::input(format!(
            "{}x{}x{} is too small to divide between {cores} cores (each needs rows, columns or contraction rows of its own, cut at multiples of 128)",
            whole.m, whole.k, whole.n
        )));
    };
    // Each split's shares were planned, lowered and modeled: the plan phase is what is left.
    (wall.lower, wall.model) = (lower_ms, model_ms);
    wall.plan = (ms(t) - lower_ms - model_ms).max(0.0);
    let core_reports = |wall: WallMs| -> Vec<Report> {
        best.plans
            .iter()
            .zip(&best.chip.cores)
            .zip(&best.cycle.cores)
            .zip(&best.autos)
            .map(|(((plan, program), cycle), auto)| {
                let modeled = Modeled { program, cycle, auto: auto.as_ref(), hw };
                searched(req, report::report_of(&plan.config, plan, &modeled, None, wall))
            })
            .collect()
    };
    let facts = |cores: Vec<Report>| ChipFacts {
        whole,
        split: best.split,
        searched: req.split.is_none(),
        weighed: weighed.clone(),
        shares: &best.shares,
        cores,
        cycle: &best.cycle,
        chip: &best.chip,
    };
    let no_report = || DriverError::internal("a chip without cores (a bug)");
    if !opts.simulate {
        let report = report::chip_report(facts(core_reports(wall)), None, wall).ok_or_else(no_report)?;
        return Ok(GemmOutcome::chip(report, chip_outcome(best)));
    }
    let (inputs, sparse) = simulation_inputs(opts, whole, given, early, false)?;
    let first = best.plans.first().ok_or_else(no_report)?;
    let names = Names::of(first)?;
    let done = check::simulate_and_check(opts, (whole, &names), Kernel::Chip(&best.chip), inputs, sparse)?;
    (wall.simulate, wall.reference) = (done.simulate_ms, done.reference_ms);
    let report = report::chip_report(facts(core_reports(wall)), done.check, wall).ok_or_else(no_report)?;
    let mut outcome = GemmOutcome::chip(report, chip_outcome(best));
    (outcome.c, outcome.c_bytes) = (Some(done.c), done.raw);
    Ok(outcome)
}

fn chip_outcome(p: Planned) -> ChipOutcome {
    ChipOutcome { split: p.split, shares: p.shares, plans: p.plans, chip: p.chip, cycle: p.cycle }
}
