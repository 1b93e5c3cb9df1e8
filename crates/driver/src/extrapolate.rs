//! GEMMs too large to unroll: their looped BIR program extrapolated exactly from a few
//! smaller GEMMs of the same structure.
//!
//! # Method
//! The planner stays the single source of truth. Its rotations (PSUM banks, evacuation
//! engines, DMA queues, buffer slots) are functions of the position inside the loop they live
//! in (`codegen`'s `rotation` module), so the rolled program of a GEMM (`bir::roll` of its
//! lowering, origins dropped) has the same *structure* (op kinds, engines, access-pattern
//! dims, semaphores, loop nesting) for GEMMs that differ by a whole number of *periods* in
//! each dimension: two blocks of the inner block loop of a blocked schedule (its snake order
//! runs it forwards and backwards in turn), one or two blocks of the outer one, two tiles of
//! M or N for the unblocked schedules, [`K_PERIOD_CHUNKS`] K chunks (for `blocked-mnk`, the
//! least common multiple of that and two K blocks). Every *number* in it (trip counts, byte
//! offsets and steps, semaphore wait values, HBM addresses and shapes, the header's sizes) is
//! then a multilinear polynomial in the number of periods added in each dimension: degree at
//! most 1 in each (a wait value after three nested loops is `c*x*y*z + ...`).
//!
//! So [`extrapolate`] picks, for each large dimension, a base size `B = r + 3d` that keeps the
//! full size's remainder `r` modulo the period `d` (so the edge tiles are the same; with fewer
//! trips the roll forms other loops), plans, lowers and rolls the `2^D` *corner* GEMMs
//! (`B` or `B + d` in each of the `D` reduced dimensions) and one *check* GEMM per reduced
//! dimension (`B + 2d` in it), on several threads; serializes each rolled program to JSON;
//! fits every number through the corners by exact integer multilinear interpolation
//! ([`fit`]); checks that the fit reproduces each check GEMM exactly; and evaluates it at the
//! full GEMM. The plan's figures (instruction counts, matmuls, PSUM groups, SBUF peak, HBM
//! bytes) are fitted the same way. When the reduced GEMMs do not fit, it tries again with
//! a period of two outer blocks, then with the *nests* ([`NEST_REDUCTION`]: four periods per
//! base), then with larger bases ([`REDUCTIONS`]); a dimension with fewer than three periods
//! beyond its base is kept whole.
//!
//! The nests are the reduced functions rolled along the schedule's loop nest
//! (`GemmPlan::looped_nest`), fitted the same way and lowered loop by loop once fitted
//! (`bir::lower_looped_native`), so every engine stream of the result keeps the schedule's
//! loops. The rolled lowerings are tried first because they need the smallest reduced GEMMs.
//!
//! # Why it is exact where it succeeds
//! A multilinear polynomial of degree <= 1 per variable is determined by its values at the
//! corners of a unit box; a number that is one is predicted exactly everywhere. The checks
//! refuse numbers that are not (a quadratic count, a rotation whose phase drifts with the
//! shape), and any difference in structure is refused outright. SBUF decisions are kept
//! equal to the full GEMM's: block sizes are decided once (shrunk to fit SBUF as
//! [`Planning::Fitting`] does, on a reduced GEMM with at least as many blocks of each kind) and
//! every reduced GEMM is planned with them; the stripe schedules (`hoisted`, `blocked-mn`),
//! whose SBUF footprint grows with K, are never reduced in K; every reduced dimension keeps
//! at least three periods, so no block is lone. What the checks cannot see is a structure
//! that changes again only beyond the check GEMMs; the tests compare extrapolated and whole
//! programs of every schedule for that.
//!
//! # What it refuses
//! A GEMM whose reduced programs differ in structure or in a number that is not multilinear
//! under every reduction ([`ExtrapolateError::Fit`], naming the field and the GEMMs), and a
//! fitted number past its field's range (a loop trip count or a start partition past `u32`:
//! [`ExtrapolateError::Limit`]).

#[path = "extrapolate/figures.rs"]
pub(crate) mod figures;
#[path = "extrapolate/fit.rs"]
pub mod fit;
#[path = "extrapolate/reduced.rs"]
mod reduced;

pub use figures::Figures;

use reduced::{run_all, Job, Level, NestDoc, Reduced};

use codegen::{k_chunks, GemmConfig, GemmPlan, Planning, Schedule, M_TILE, N_TILE};
use serde_json::Value;

use crate::cancel::Cancel;
use crate::error::{DriverError, ExtrapolateError};

/// K chunks after which the planner's rotations along K repeat ([`codegen::K_PERIOD`]);
/// `blocked-mnk`'s K period is the least common multiple of this and two K blocks.
pub const K_PERIOD_CHUNKS: u64 = codegen::K_PERIOD as u64;

/// Periods kept in the base of a reduced dimension (besides its remainder): the roll pass
/// forms the same loops from about three periods on (fewer trips roll differently).
pub const BASE_PERIODS: u64 = 3;

/// How the dimensions are reduced: the periods in a base, and whether the outer block loop of
/// a blocked schedule has a period of one block (its inner loop always has two: the snake
/// order runs it forwards and backwards in turn).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reduction {
    /// Periods kept in the base of a reduced dimension, besides its remainder.
    pub base_periods: u64,
    /// The outer block dimension of a blocked schedule repeats after one block (else two).
    pub outer_single: bool,
}

/// The reductions [`extrapolate`] tries in turn until the reduced GEMMs fit: the cheapest
/// first, then a period of two outer blocks, then larger bases.
pub const REDUCTIONS: [Reduction; 4] = [
    Reduction { base_periods: BASE_PERIODS, outer_single: true },
    Reduction { base_periods: BASE_PERIODS, outer_single: false },
    Reduction { base_periods: BASE_PERIODS + 1, outer_single: false },
    Reduction { base_periods: BASE_PERIODS + 2, outer_single: false },
];

/// The reduction of the first attempt, which fits the functions rolled along their nests: the
/// nest roll forms the same loops from four periods on (with three, which runs it rolls
/// first can depend on the trips).
pub const NEST_REDUCTION: Reduction = Reduction { base_periods: BASE_PERIODS + 1, outer_single: false };

/// One dimension of the GEMM as the extrapolation sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Axis {
    /// Which one: `m`, `k` or `n`.
    pub name: &'static str,
    /// The full size.
    pub full: u64,
    /// The base (corner 0) size.
    pub base: u64,
    /// The period in elements.
    pub period: u64,
    /// Periods from the base to the full size (the fit's coordinate of the full GEMM).
    pub periods: u64,
}

/// The extrapolated GEMM.
#[derive(Clone, Debug)]
pub struct Extrapolated {
    /// The full GEMM with the block sizes every reduced GEMM was planned with.
    pub config: GemmConfig,
    /// The full GEMM's looped BIR program: its function rolled along the schedule's nest
    /// lowered natively (`bir::lower_looped_native` of `GemmPlan::looped_nest`) when `nested`,
    /// else its lowering rolled (`bir::roll`, origins dropped).
    pub program: bir::LoopedProgram,
    /// Whether the nests of the reduced GEMMs were fitted (every engine loops as the schedule
    /// does, so the looped model jumps over whole outer iterations), or their rolled lowerings.
    pub nested: bool,
    /// The full GEMM's figures.
    pub figures: Figures,
    /// The reduced dimensions.
    pub axes: Vec<Axis>,
    /// The base reduced GEMM (every reduced dimension at its base size).
    pub base: GemmConfig,
    /// Reduced GEMMs planned (corners, checks and the SBUF probe when it differs).
    pub plans: usize,
    /// Their BIR instructions, in total; when [`Self::sampled`], the Penguin instructions
    /// the planner emitted.
    pub reduced_instructions: u64,
    /// Whether the full GEMM was planned in loops ([`codegen::plan_sampled`]) instead: no
    /// reduced GEMMs, one plan (`plans` 1, no `axes`, `base` the full GEMM).
    pub sampled: bool,
}

/// The least common multiple.
fn lcm(a: u64, b: u64) -> u64 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    a / gcd(a, b).max(1) * b
}

/// Block sizes in whole tiles, at most the dimension's tiles.
fn block_tiles(block: u64, tile: u64, total: u64) -> u64 {
    block.div_ceil(tile).clamp(1, total.div_ceil(tile).max(1))
}

/// The dimensions of `cfg` (blocks as given) with their periods and bases as `r` says; a
/// dimension with fewer than three periods beyond its base is kept whole (`periods == 0`,
/// `base == full`).
pub fn axes(cfg: &GemmConfig, r: Reduction) -> [Axis; 3] {
    let base_periods = r.base_periods;
    let blocked = matches!(cfg.schedule, Schedule::BlockedMn | Schedule::BlockedMnk | Schedule::Auto);
    let (bm, bn) = if blocked {
        (block_tiles(cfg.blocks.m, M_TILE, cfg.m), block_tiles(cfg.blocks.n, N_TILE, cfg.n))
    } else {
        (1, 1)
    };
    let chunk = k_chunks(cfg).0.first().map_or(128, |c| u64::from(c.len).max(1));
    // blocked-mn and hoisted hold whole K stripes: their SBUF decisions depend on K.
    let k_period = match cfg.schedule {
        Schedule::BlockedMnk => Some(lcm(2 * cfg.blocks.k.div_ceil(chunk).max(1), K_PERIOD_CHUNKS) * chunk),
        Schedule::Naive => Some(K_PERIOD_CHUNKS * chunk),
        Schedule::Hoisted | Schedule::BlockedMn | Schedule::Auto => None,
    };
    let axis = |name, full: u64, period: Option<u64>| {
        let whole = Axis { name, full, base: full, period: period.unwrap_or(0), periods: 0 };
        let Some(d) = period.filter(|&d| d > 0) else { return whole };
        let base = full % d + base_periods * d;
        match full.checked_sub(base).map(|extra| extra / d) {
            Some(periods) if periods > 2 => Axis { name, full, base, period: d, periods },
            _ => whole,
        }
    };
    let (m_blocks, n_blocks) = match (blocked && r.outer_single, cfg.order) {
        (false, _) => (2, 2),
        (true, codegen::LoopOrder::MOuter) => (1, 2),
        (true, codegen::LoopOrder::NOuter) => (2, 1),
    };
    [
        axis("m", cfg.m, Some(m_blocks * bm * M_TILE)),
        axis("k", cfg.k, k_period),
        axis("n", cfg.n, Some(n_blocks * bn * N_TILE)),
    ]
}

/// `cfg` with each axis at `base + coord * period`.
fn at(cfg: &GemmConfig, axes: &[Axis], coords: &[i64]) -> GemmConfig {
    let mut c = cfg.clone();
    for (a, &x) in axes.iter().zip(coords) {
        let v = a.base + x.unsigned_abs() * a.period;
        match a.name {
            "m" => c.m = v,
            "k" => c.k = v,
            _ => c.n = v,
        }
    }
    c
}

/// The points of the fit over `d` reduced dimensions: the `2^d` corners, then one check per
/// dimension (2 periods in it, 0 in the others).
fn points(d: usize) -> Vec<Vec<i64>> {
    let mut points: Vec<Vec<i64>> = (0..1usize << d).map(|c| (0..d).map(|i| (c >> i & 1) as i64).collect()).collect();
    points.extend((0..d).map(|i| (0..d).map(|j| if i == j { 2 } else { 0 }).collect()));
    points
}

/// The reduced GEMMs [`extrapolate`] plans first for `cfg` with its blocks as given (shrunk
/// blocks give shorter periods, so these are the largest of its first attempt).
pub fn reduced_configs(cfg: &GemmConfig) -> Vec<GemmConfig> {
    let axes: Vec<Axis> = axes(cfg, REDUCTIONS[0]).into_iter().filter(|a| a.periods > 0).collect();
    points(axes.len()).iter().map(|p| at(cfg, &axes, p)).collect()
}

/// The full GEMM's blocks: `cfg`'s unless `planning` is [`Planning::Fitting`], otherwise shrunk to fit SBUF as
/// [`Planning::Fitting`] would shrink them for the full GEMM, decided on a reduced GEMM with
/// at least as many blocks of each kind (the decision depends on the block sizes only).
/// Returns the config, the probe's plan when it is the base GEMM with those blocks, and
/// whether a probe was planned.
fn decide_blocks(
    cfg: &GemmConfig,
    planning: Planning,
    cancel: Option<&Cancel>,
) -> Result<(GemmConfig, Option<GemmPlan>, bool), ExtrapolateError> {
    if planning != Planning::Fitting || matches!(cfg.schedule, Schedule::Naive | Schedule::Hoisted) {
        return Ok((cfg.clone(), None, false));
    }
    let probe_axes: Vec<Axis> = axes(cfg, REDUCTIONS[0]).into_iter().filter(|a| a.periods > 0).collect();
    let probe = at(cfg, &probe_axes, &vec![0; probe_axes.len()]);
    let fitting = codegen::PlanRequest::new(&probe).with_planning(Planning::Fitting);
    let plan = codegen::plan(&fitting, &crate::cancel::builder(cancel)).map_err(ExtrapolateError::Plan)?.plan;
    let decided = GemmConfig { blocks: plan.config.blocks, ..cfg.clone() };
    let new_axes: Vec<Axis> = axes(&decided, REDUCTIONS[0]).into_iter().filter(|a| a.periods > 0).collect();
    let reuse = at(&decided, &new_axes, &vec![0; new_axes.len()]) == plan.config;
    Ok((decided, reuse.then_some(plan), true))
}

/// Extrapolate the looped program and figures of `cfg` (an explicit schedule, planned as
/// `planning` says: its blocks shrunk to fit SBUF, as given, or as given with two slots per
/// refilled block) from reduced GEMMs planned on up to `threads` threads. See the module doc.
pub fn extrapolate(cfg: &GemmConfig, planning: Planning, threads: usize) -> Result<Extrapolated, ExtrapolateError> {
    extrapolate_within(cfg, planning, threads, Bounds::NONE, None)
}

/// What the reduced GEMMs of one attempt may cost: an attempt over either bound is refused
/// with [`ExtrapolateError::TooLarge`] before anything is planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Memory for the reduced plans in flight at once (`threads` of them), estimated as
    /// [`crate::budget::plan_bytes`] does.
    pub bytes: u128,
    /// Matmuls of all the reduced GEMMs together (their planning time).
    pub matmuls: u128,
}

impl Bounds {
    /// No bounds.
    pub const NONE: Bounds = Bounds { bytes: u128::MAX, matmuls: u128::MAX };

    /// Refuse the reduced GEMMs `configs` when they exceed a bound.
    fn admit(&self, configs: &[GemmConfig], threads: usize) -> Result<(), ExtrapolateError> {
        let matmuls: u128 = configs.iter().map(|c| crate::budget::matmuls(c.m, c.k, c.n)).sum();
        let mut bytes: Vec<u128> = configs.iter().map(crate::budget::plan_bytes).collect();
        bytes.sort_unstable_by(|a, b| b.cmp(a));
        let in_flight: u128 = bytes.iter().take(threads.max(1)).sum();
        if matmuls > self.matmuls {
            return Err(ExtrapolateError::TooLarge(format!(
                "its reduced GEMMs have {matmuls} matmuls, more than the {} allowed",
                self.matmuls
            )));
        }
        if in_flight > self.bytes {
            return Err(ExtrapolateError::TooLarge(format!(
                "planning its reduced GEMMs needs about {}, over the memory budget of {}",
                crate::budget::human(in_flight),
                crate::budget::human(self.bytes)
            )));
        }
        Ok(())
    }
}

/// [`extrapolate`] refusing reduced GEMMs over `bounds` ([`ExtrapolateError::TooLarge`]),
/// stopped by `cancel` (every reduced GEMM's planning and lowering polls it).
pub fn extrapolate_within(
    cfg: &GemmConfig,
    planning: Planning,
    threads: usize,
    bounds: Bounds,
    cancel: Option<&Cancel>,
) -> Result<Extrapolated, ExtrapolateError> {
    cfg.validate().map_err(ExtrapolateError::Plan)?;
    if let Some(x) = sampled(cfg, planning, cancel)? {
        return Ok(x);
    }
    let blocked = matches!(cfg.schedule, Schedule::BlockedMn | Schedule::BlockedMnk | Schedule::Auto);
    extrapolate_trying(cfg, planning, (threads, bounds, cancel), &attempts(blocked))
}

/// What [`extrapolate`] tries, in turn: the rolled lowerings at three periods (the cheapest
/// reduced GEMMs; the outer period matters only to the blocked schedules), then the nests at
/// four periods, then the rolled lowerings at larger bases.
fn attempts(blocked: bool) -> Vec<(Reduction, Level)> {
    let rolled = REDUCTIONS.into_iter().filter(|r| blocked || !r.outer_single).map(|r| (r, Level::Rolled));
    let (small, large): (Vec<_>, Vec<_>) = rolled.partition(|(r, _)| r.base_periods == BASE_PERIODS);
    small.into_iter().chain([(NEST_REDUCTION, Level::Nest)]).chain(large).collect()
}

/// [`extrapolate_within`] trying the reductions and levels of `attempts` in turn.
fn extrapolate_trying(
    cfg: &GemmConfig,
    planning: Planning,
    (threads, bounds, cancel): (usize, Bounds, Option<&Cancel>),
    attempts: &[(Reduction, Level)],
) -> Result<Extrapolated, ExtrapolateError> {
    cfg.validate().map_err(ExtrapolateError::Plan)?;
    let (config, mut probe, probed) = decide_blocks(cfg, planning, cancel)?;
    // A probe that is not the first base GEMM is a plan of its own.
    let mut plans = usize::from(probed && probe.is_none());
    let mut instructions = 0;
    let mut last = None;
    for &(r, level) in attempts {
        if crate::cancel::stopped(cancel) {
            return Err(ExtrapolateError::reduced(DriverError::Interrupted));
        }
        match attempt(&config, (r, level), probe.take(), planning, (threads, bounds, cancel)) {
            Ok(mut x) => {
                x.plans += plans;
                x.reduced_instructions += instructions;
                return Ok(x);
            }
            // The nests differ, do not lower natively or are over the bounds: the rolled
            // lowerings of larger GEMMs may still fit.
            Err((e, tried, insts)) if level == Level::Nest && e.falls_back() => {
                plans += tried;
                instructions += insts;
                if !matches!(e, ExtrapolateError::TooLarge(_)) {
                    last = Some(e);
                }
            }
            Err((e @ ExtrapolateError::Fit { .. }, tried, insts)) if !e.is_overflow() => {
                plans += tried;
                instructions += insts;
                last = Some(e);
            }
            // A larger base over the bounds: the reduced GEMMs that were tried did not fit.
            Err((ExtrapolateError::TooLarge(_), _, _)) if last.is_some() && level == Level::Rolled => break,
            Err((e, _, _)) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| ExtrapolateError::reduced(DriverError::internal("no extrapolation was tried (a bug)"))))
}

/// The GEMM planned in loops ([`codegen::plan_sampled`]) and lowered loop by loop, when its
/// schedule is one the planner emits in loops (`None` otherwise, or when the loops do not
/// lower natively: the reduced GEMMs are fitted instead). Nothing is reduced: the program is
/// the full GEMM's, its figures the planner's counts.
pub(crate) fn sampled(
    cfg: &GemmConfig,
    planning: Planning,
    cancel: Option<&Cancel>,
) -> Result<Option<Extrapolated>, ExtrapolateError> {
    Ok(sampled_timed(cfg, planning, false, cancel)?.map(|(x, _)| x))
}

/// [`sampled`] with the milliseconds its lowering took; with `skipping_only`, `None` also
/// when the loops are too short to skip at least half of the nest
/// ([`codegen::plan_sampled_skipping`]).
pub(crate) fn sampled_timed(
    cfg: &GemmConfig,
    planning: Planning,
    skipping_only: bool,
    cancel: Option<&Cancel>,
) -> Result<Option<(Extrapolated, f64)>, ExtrapolateError> {
    let builder = crate::cancel::builder(cancel);
    let planned = if skipping_only {
        codegen::plan_sampled_skipping(cfg, planning, &builder)
    } else {
        codegen::plan_sampled(cfg, planning, &builder)
    };
    let plan = match planned {
        Ok(p) => p,
        Err(codegen::CodegenError::Unsupported(_)) => return Ok(None),
        Err(e) => return Err(ExtrapolateError::Plan(e)),
    };
    let t = std::time::Instant::now();
    // The expansion is the whole plan, which the tests verify: the corner function is checked.
    // A wait that is not affine in the loops, or a limit of BIR (a count past u32), leaves the
    // whole plan (or the extrapolation) to try; anything else is a bug, reported as one.
    let program = match bir::lower_looped_native_within(&plan.looped, cfg.target, 0) {
        Ok(p) => p,
        Err(bir::LowerLoopedError::NotAffine { .. } | bir::LowerLoopedError::Lower(bir::BirError::Unsupported(_))) => {
            return Ok(None)
        }
        Err(e) => {
            return Err(ExtrapolateError::Plan(codegen::CodegenError::Internal(format!(
                "the program planned in loops does not lower along its loops: {e}"
            ))))
        }
    };
    let lower_ms = t.elapsed().as_secs_f64() * 1e3;
    let counts = [plan.looped.unrolled_len(), program.unrolled_len(), program.hbm_traffic_bytes()];
    let figures = Figures::of_counts(&plan.stats, counts, &program.header.hbm);
    Ok(Some((
        Extrapolated {
            config: plan.config.clone(),
            program,
            nested: true,
            figures,
            axes: Vec::new(),
            base: plan.config.clone(),
            plans: 1,
            reduced_instructions: plan.emitted as u64,
            sampled: true,
        },
        lower_ms,
    )))
}

/// One attempt of [`extrapolate`] with the reduction `r`, fitting the programs at `level`; on
/// failure, the error with the plans made and their instructions.
fn attempt(
    config: &GemmConfig,
    (r, level): (Reduction, Level),
    mut probe: Option<GemmPlan>,
    planning: Planning,
    (threads, bounds, cancel): (usize, Bounds, Option<&Cancel>),
) -> Result<Extrapolated, (ExtrapolateError, usize, u64)> {
    let axes: Vec<Axis> = axes(config, r).into_iter().filter(|a| a.periods > 0).collect();
    let d = axes.len();
    let points = points(d);
    let base = at(config, &axes, &vec![0; d]);
    let jobs: Vec<Job> = points
        .iter()
        .map(|p| {
            let c = at(config, &axes, p);
            let plan = if probe.as_ref().is_some_and(|pl| pl.config == c) { probe.take() } else { None };
            (c, plan)
        })
        .collect();
    let shapes = jobs.iter().map(|(c, _)| format!("{}x{}x{}", c.m, c.k, c.n)).collect::<Vec<_>>().join(", ");
    let configs: Vec<GemmConfig> = jobs.iter().map(|(c, _)| c.clone()).collect();
    bounds.admit(&configs, threads).map_err(|e| (e, 0, 0))?;
    let tried = jobs.len();
    let reduced: Vec<Reduced> = run_all(jobs, planning == Planning::DoubleBuffered, level, threads, cancel)
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(|e| (e, tried, 0))?;
    let reduced_instructions = reduced.iter().map(|r| r.instructions).sum();
    let fail = |e| (e, tried, reduced_instructions);
    let target: Vec<i64> = axes.iter().map(|a| i64::try_from(a.periods).unwrap_or(i64::MAX)).collect();
    let corners = 1usize << d;
    let fitted = |what: &'static str, get: &dyn Fn(&Reduced) -> &Value| -> Result<Value, ExtrapolateError> {
        let docs: Vec<&Value> = reduced.iter().map(get).collect();
        let checks: Vec<fit::Check<'_>> =
            points[corners..].iter().zip(&docs[corners..]).map(|(p, v)| fit::Check { point: p, value: v }).collect();
        fit::fit(&docs[..corners], &checks, &target).map_err(|source| ExtrapolateError::Fit {
            what,
            shapes: shapes.clone(),
            source: Box::new(source),
        })
    };
    let what = if level == Level::Nest { "the function rolled along its nest" } else { "the rolled BIR program" };
    let program_doc = fitted(what, &|r| &r.program).map_err(fail)?;
    let figures_doc = fitted("the plan's figures", &|r| &r.figures).map_err(fail)?;
    let program = match level {
        Level::Nest => {
            let function = decode::<NestDoc>(program_doc).map_err(fail)?.function();
            bir::lower_looped_native(&function, config.target)
                .map_err(|e| ExtrapolateError::Native(e.to_string()))
                .map_err(fail)?
        }
        Level::Rolled => decode::<bir::LoopedProgram>(program_doc).map_err(fail)?,
    };
    let figures = decode::<Figures>(figures_doc).map_err(fail)?;
    Ok(Extrapolated {
        config: config.clone(),
        program,
        nested: level == Level::Nest,
        figures,
        axes,
        base,
        plans: tried,
        reduced_instructions,
        sampled: false,
    })
}

/// Decode a fitted document; a number past its field's range is a limit named by its path.
fn decode<T: serde::de::DeserializeOwned>(doc: Value) -> Result<T, ExtrapolateError> {
    let limit = u64::from(u32::MAX);
    let big = fit::first_above(&doc, limit, &["trips", "start_partition", "num_partitions", "num", "from"]);
    match serde_json::from_value::<T>(doc) {
        Ok(v) => Ok(v),
        Err(e) => Err(match big {
            Some((path, value)) => {
                let limit = if path.ends_with(".trips") {
                    "4294967295, the largest loop trip count (u32)"
                } else if path.ends_with(".from") {
                    "4294967295, the most Penguin instructions a function numbers (u32)"
                } else {
                    "4294967295 (u32)"
                };
                ExtrapolateError::Limit { path, value, limit }
            }
            None => ExtrapolateError::reduced(DriverError::internal(format!(
                "the extrapolated program does not decode (a bug): {e}"
            ))),
        }),
    }
}

#[cfg(test)]
#[path = "extrapolate/tests.rs"]
mod tests;
