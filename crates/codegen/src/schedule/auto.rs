//! The `auto` schedule: the candidate configurations, their modeled cost and the search.

use penguin::{DType, HwProfile, IrBuilder, PerfMode};

use crate::auto_limits::AutoLimits;
use crate::error::CodegenError;
use crate::gemm::{k_chunks, tiles, GemmConfig, GemmPlan, LoopOrder, Schedule, SparseA, M_TILE, N_TILE};

use crate::plan::{AutoCostFn, AutoSearch, Planning};

/// The candidates `auto` considers for a GEMM: every schedule with a few block sizes and
/// both loop orders.
pub fn auto_candidates(cfg: &GemmConfig) -> Vec<GemmConfig> {
    let mut out = Vec::new();
    let with = |schedule, m_tiles: u64, n_tiles: u64, k_tiles: u64, order| GemmConfig {
        schedule,
        blocks: crate::gemm::BlockSizes { m: m_tiles * M_TILE, n: n_tiles * N_TILE, k: k_tiles * 128 },
        order,
        ..cfg.clone()
    };
    out.push(with(Schedule::Naive, 1, 1, 1, LoopOrder::MOuter));
    out.push(with(Schedule::Hoisted, 1, 1, 1, LoopOrder::MOuter));
    let mt = cfg.m.div_ceil(M_TILE);
    let nt = cfg.n.div_ceil(N_TILE);
    let kt = cfg.k.div_ceil(128);
    let sizes = |max: u64, options: &[u64]| -> Vec<u64> {
        let mut v: Vec<u64> = options.iter().map(|&o| o.min(max)).collect();
        v.dedup();
        v
    };
    for order in [LoopOrder::MOuter, LoopOrder::NOuter] {
        for &bm in &sizes(mt, &[1, 2, 4, 8, 16]) {
            for &bn in &sizes(nt, &[1, 2, 4, 8]) {
                out.push(with(Schedule::BlockedMn, bm, bn, 1, order));
                for &bk in &sizes(kt, &[4, 8, 16, 32]) {
                    if bk < kt {
                        out.push(with(Schedule::BlockedMnk, bm, bn, bk, order));
                    }
                }
            }
        }
    }
    // On trn2/trn3 an A given as [M, K] may be transposed by the DMA or on the PE.
    if !cfg.lhs_transposed
        && cfg.sparsity.is_none()
        && cfg.target != penguin::Target::Trn1
        && cfg.pe_transpose.is_none()
    {
        out = out
            .into_iter()
            .flat_map(|c| {
                [GemmConfig { pe_transpose: Some(false), ..c.clone() }, GemmConfig { pe_transpose: Some(true), ..c }]
            })
            .collect();
    }
    out.dedup();
    out
}

/// What `auto` chose, and how many candidates it weighed.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoChoice {
    /// The chosen configuration (schedule, blocks, loop order).
    pub config: GemmConfig,
    /// Its modeled cost.
    pub cost: f64,
    /// The HBM bytes it moves.
    pub hbm_bytes: u64,
    /// Candidates that fit SBUF and were modeled.
    pub evaluated: usize,
    /// Candidates refused for SBUF capacity.
    pub rejected: usize,
    /// Candidates the cost of [`choose_auto`] declined to weigh (0 for the other searches).
    pub skipped: usize,
}

/// What `auto` weighs a candidate by.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoCost {
    /// Modeled time (lower is better).
    pub time: f64,
    /// HBM bytes moved.
    pub hbm_bytes: u64,
}

/// How many candidates `auto` weighs with the cycle model (the best of the estimate's
/// ranking that fit SBUF).
pub const AUTO_SHORTLIST: usize = 8;

/// Candidates whose modeled time is within this fraction of the fastest count as equally
/// fast; among them `auto` keeps the one that moves the fewest HBM bytes (the cores of a chip
/// share its HBM bandwidth, so traffic saved is bandwidth left to the others).
pub const AUTO_TIME_TOLERANCE: f64 = 0.005;

/// A quick analytic estimate of a candidate's time in ns with the target's built-in hardware
/// profile (see [`estimate_ns_with`]).
pub fn estimate_ns(cfg: &GemmConfig) -> f64 {
    estimate_ns_with(cfg, &cfg.target.profile())
}

/// A quick analytic estimate of a candidate's time in ns, from the same [`HwProfile`] figures
/// as the cycle model: a smooth maximum of the PE time (every matmul at
/// `max(N, mm_min_cycles)` cycles), the HBM time of the bytes the loop nest moves (in whole
/// `hbm_burst_bytes` granules per run), the DMA engines' data time (16 engines; a run costs at
/// least `dma_descriptor_ns`, a DMA transpose runs at its fraction of copy throughput) and the
/// DMA queues' fixed latency (`dma_fixed_ns` per transfer over 16 queues of
/// `dma_queue_depth` transfers in flight), the PE's transposes of A and the vector engines'
/// copies and K-block additions. `auto` ranks candidates with it and runs the cycle model on
/// the best few.
pub fn estimate_ns_with(cfg: &GemmConfig, hw: &HwProfile) -> f64 {
    let (mt, nt) = (cfg.m.div_ceil(M_TILE) as f64, cfg.n.div_ceil(N_TILE) as f64);
    let chunks = k_chunks(cfg).0.len() as f64;
    let mm = |n: f64| n.max(hw.mm_min_cycles);
    let n_cycles: f64 = tiles(cfg.n, N_TILE).map(|(_, n)| mm(f64::from(n))).sum();
    let fp32 = if cfg.lhs_dtype == DType::Fp32 || cfg.rhs_dtype == DType::Fp32 { hw.mm_fp32_factor } else { 1.0 };
    // A sparse matmul streams a column per cycle while its data path is wide enough for
    // the CR moving rows and the stationary element of each PE row (the cycle model's rule).
    let sparse =
        cfg.sparsity.map_or(1.0, |p| (f64::from(p.compression_ratio() + 1) / hw.pe_sparse_input_lanes).max(1.0));
    let pe_ns = mt * chunks * n_cycles * fp32 * sparse / hw.pe_ghz;
    let s_in = f64::from(cfg.input_dtype.size_bytes());
    // A sparse A is its kept values (`[K', M]`) and the packed tags (`[K', M / 4]` int16
    // words), both stored in the stationary layout: loaded as an A given as `[K, M]` is.
    let a = match cfg.sparsity {
        Some(p) => {
            let [cols, words] = SparseA::tags_shape(cfg.m, cfg.k, p);
            (cfg.m * cols) as f64 * s_in + (cols * words) as f64 * 2.0
        }
        None => (cfg.m * cfg.k) as f64 * s_in,
    };
    let b = (cfg.k * cfg.n) as f64 * s_in;
    let lhs_transposed = cfg.lhs_transposed || cfg.sparsity.is_some();
    let (bm, bn) = ((cfg.blocks.m.div_ceil(M_TILE) as f64).min(mt), (cfg.blocks.n.div_ceil(N_TILE) as f64).min(nt));
    // Whole-stripe natural loads of A (PE transposes) in the stripe schedules; per-chunk
    // loads otherwise.
    let stripes = matches!(cfg.schedule, Schedule::Hoisted | Schedule::BlockedMn | Schedule::Auto);
    // (A loads, B loads, B n-tiles per transfer) of each loop nest.
    let (a_times, b_times, b_wide) = match cfg.schedule {
        Schedule::Naive => (nt, mt, 1.0),
        Schedule::Hoisted => (1.0, mt, 1.0),
        Schedule::BlockedMn | Schedule::Auto => match cfg.order {
            LoopOrder::MOuter => (1.0, (mt / bm).ceil(), bn),
            LoopOrder::NOuter => ((nt / bn).ceil(), 1.0, bn),
        },
        Schedule::BlockedMnk => ((nt / bn).ceil(), (mt / bm).ceil(), bn),
    };
    // Engine time per byte relative to peak: a run shorter than the descriptor time's worth
    // of data costs the descriptor time.
    let slow = |run_bytes: f64| (hw.dma_descriptor_ns * hw.dma_engine_bytes_per_ns / run_bytes.max(1.0)).max(1.0);
    // HBM bytes per byte of a run: whole granules.
    let granules = |run_bytes: f64| {
        let run = run_bytes.max(1.0);
        let g = hw.hbm_burst_bytes.max(1.0);
        (run / g).ceil() * g / run
    };
    let dma_transposes = !lhs_transposed && !cfg.transposes_lhs_on_pe() && cfg.target != penguin::Target::Trn1;
    let (a_run, a_rate) = if lhs_transposed {
        (128.0 * s_in, 1.0)
    } else if cfg.transposes_lhs_on_pe() {
        // Natural rows: whole K stripes, K blocks, or one chunk.
        let run = match cfg.schedule {
            _ if stripes => cfg.k,
            Schedule::BlockedMnk => cfg.k.min(cfg.blocks.k),
            _ => 128,
        };
        (run as f64 * s_in, 1.0)
    } else if dma_transposes {
        (128.0 * s_in, hw.dma_transpose_hbm_fraction)
    } else {
        (s_in, 1.0)
    };
    // A transposed without a DMA transpose reads runs of 128 contiguous elements from HBM.
    let a_hbm_run = if dma_transposes || cfg.target == penguin::Target::Trn1 && !lhs_transposed {
        a_run.max(128.0 * s_in)
    } else {
        a_run
    };
    let b_run = b_wide * N_TILE as f64 * s_in;
    let out = (cfg.m * cfg.n) as f64 * f64::from(cfg.out_dtype.size_bytes());
    let out_run = N_TILE as f64 * 4.0;
    let engines = 16.0 * hw.dma_engine_bytes_per_ns;
    let data_ns = (a * a_times * slow(a_run) / a_rate + b * b_times * slow(b_run) + out * slow(out_run)) / engines;
    // K blocks of blocked-mnk: its block is a whole number of chunks.
    let chunk_len = k_chunks(cfg).0.first().map_or(128, |c| u64::from(c.len).max(1));
    let k_blocks = (chunks / cfg.blocks.k.div_ceil(chunk_len).max(1) as f64).ceil();
    // Natural loads of A for PE transposes: a whole stripe, or a K block, per m tile.
    let a_transfers = match (cfg.transposes_lhs_on_pe(), cfg.schedule) {
        (true, _) if stripes => mt,
        (true, Schedule::BlockedMnk) => mt * k_blocks,
        _ => mt * chunks * if cfg.sparsity.is_some() { 2.0 } else { 1.0 },
    } * a_times;
    let b_transfers = nt / b_wide * chunks * b_times;
    let fixed_ns = (a_transfers + b_transfers + mt * nt) * hw.dma_fixed_ns / (16.0 * hw.queue_depth() as f64);
    let hbm_ns = (a * a_times * granules(a_hbm_run) + b * b_times * granules(b_run) + out * granules(out_run))
        / hw.hbm_bytes_per_ns;
    // PE transposes of A (128 columns per 128 rows of an m tile: one per chunk, two per
    // double-row chunk; each time A is loaded), and the vector engines: evacuations take turns
    // on ACT and DVE; blocked-mnk copies the first K block's partials out on ACT and adds every
    // later one on DVE (a copy, or an add with a PSUM input, costs `max(MIN_II, N)` cycles).
    let per_chunk = if cfg.perf_mode == PerfMode::None { 1.0 } else { 2.0 };
    let transposes_ns =
        if cfg.transposes_lhs_on_pe() { mt * chunks * per_chunk * a_times * mm(128.0) / hw.pe_ghz } else { 0.0 };
    let per_tile = |ghz: f64| (N_TILE as f64).max(hw.compute_min_ii_cycles) / ghz;
    let dve_ns = match cfg.schedule {
        Schedule::BlockedMnk => mt * nt * (k_blocks - 1.0).max(0.0) * per_tile(hw.dve_ghz),
        _ => mt * nt * per_tile(hw.dve_ghz) / 2.0,
    };
    // A smooth maximum: resources that are nearly as busy as the busiest one stall it now and
    // then, so near-ties rank behind candidates with one clear bottleneck.
    let parts = [pe_ns + transposes_ns, hbm_ns, data_ns, fixed_ns, dve_ns];
    let top = parts.iter().copied().fold(0.0, f64::max).max(1.0);
    top * parts.iter().map(|t| (t / top).powi(8)).sum::<f64>().powf(1.0 / 8.0)
}

/// `auto`'s search over planned candidates: weigh with the search's cost (the cycle model
/// in practice) the blocked schedules with their default blocks and the best `shortlist`
/// candidates of [`auto_candidates`] by [`estimate_ns_with`] that fit SBUF, up to `threads`
/// at once, each planned, lowered and costed on a thread of its own. The fewest HBM bytes
/// among those within [`AUTO_TIME_TOLERANCE`] of the fastest wins. The candidates weighed,
/// and so the choice, do not depend on `threads`: a batch never holds more candidates than
/// the shortlist still needs, and its results are taken in rank order. Peak memory grows
/// with `threads` (each holds one planned candidate in flight).
pub(crate) fn search_plans<B: IrBuilder, X: Send>(
    cfg: &GemmConfig,
    s: &AutoSearch<'_, X>,
    new_base: &(dyn Fn(&str) -> B + Sync),
) -> Result<(GemmPlan, AutoChoice, X), CodegenError> {
    fn config_of<X>((p, _): &(GemmPlan, X)) -> &GemmConfig {
        &p.config
    }
    let ((plan, x), choice) = search(cfg, &s.limits, s.hw, s.shortlist, s.threads.max(1), &config_of, &mut |jobs| {
        let one = |job: &AutoJob| weigh(job.planning.plan(&job.config, new_base), s.cost);
        if jobs.len() == 1 {
            return jobs.iter().map(one).collect();
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> =
                jobs.iter().map(|job| std::thread::Builder::new().spawn_scoped(scope, move || one(job))).collect();
            handles
                .into_iter()
                .zip(jobs)
                .map(|(h, job)| match h {
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|_| Err(CodegenError::Internal("an auto candidate's thread panicked".into()))),
                    // No thread to be had: weigh it on this one.
                    Err(_) => one(job),
                })
                .collect()
        })
    })?;
    Ok((plan, choice, x))
}

/// One candidate of the search and how it is planned.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoJob {
    /// The candidate.
    pub config: GemmConfig,
    /// How it is planned.
    pub planning: Planning,
}

/// A weighed candidate, one that does not fit SBUF (counted and skipped), or one the cost
/// declined to weigh.
enum Weighed<T> {
    Plan(Box<T>, AutoCost),
    Rejected(CodegenError),
    Skipped,
}

/// Cost a planned candidate; one that does not fit SBUF is rejected, any other error stops
/// the search.
fn weigh<X>(
    planned: Result<GemmPlan, CodegenError>,
    cost: &AutoCostFn<'_, X>,
) -> Result<Weighed<(GemmPlan, X)>, CodegenError> {
    match planned {
        Ok(plan) => {
            let (c, x) = cost(&plan)?;
            Ok(Weighed::Plan(Box::new((plan, x)), c))
        }
        Err(e @ CodegenError::SbufCapacity { .. }) => Ok(Weighed::Rejected(e)),
        Err(e) => Err(e),
    }
}

/// Weighs a batch of jobs: one result per job, in order.
type WeighAll<'a, T> = dyn FnMut(&[AutoJob]) -> Vec<Result<Weighed<T>, CodegenError>> + 'a;

/// Weighs one job of [`choose_auto`]: what it made of it, the configuration it planned, and its
/// cost; `None` declines to weigh it (counted in [`AutoChoice::skipped`]).
pub type AutoJobCost<'a, T> = dyn FnMut(&AutoJob) -> Result<Option<(T, GemmConfig, AutoCost)>, CodegenError> + 'a;

/// `auto`'s search over candidates that `cost` weighs without the search planning them:
/// `cost` plans (or otherwise obtains) each [`AutoJob`] as its [`Planning`] says and
/// returns what it made of it, the configuration it planned (the blocks a
/// [`Planning::Fitting`] job shrank to) and its cost, or `None` to skip it (the next
/// ranked candidate takes its place); [`CodegenError::SbufCapacity`] rejects a candidate, any
/// other error stops the search. With nothing skipped, the candidates weighed and the choice
/// are those of the search [`crate::plan`] runs for `auto` with the same costs.
pub fn choose_auto<T>(
    cfg: &GemmConfig,
    limits: &AutoLimits,
    hw: &HwProfile,
    shortlist: usize,
    cost: &mut AutoJobCost<'_, T>,
) -> Result<(T, AutoChoice), CodegenError> {
    let (chosen, choice) = search(cfg, limits, hw, shortlist, 1, &|(_, c): &(T, GemmConfig)| c, &mut |jobs| {
        jobs.iter()
            .map(|job| match cost(job) {
                Ok(Some((t, planned, c))) => Ok(Weighed::Plan(Box::new((t, planned)), c)),
                Ok(None) => Ok(Weighed::Skipped),
                Err(e @ CodegenError::SbufCapacity { .. }) => Ok(Weighed::Rejected(e)),
                Err(e) => Err(e),
            })
            .collect()
    })?;
    Ok((chosen.0, choice))
}

/// The search: weigh the anchors, then the best-estimated candidates in rank order until the
/// shortlist is full, `batch` jobs at a time through `weigh_all` (which returns one result per
/// job, in order), and choose among them.
/// Drop the weighed candidates that can no longer be chosen, so the search holds a few plans
/// rather than every one it weighed: one slower than the tolerance of the fastest so far
/// (the fastest only gets faster), and one another candidate matches in time or beats and
/// also beats in HBM bytes, or ties in both and was weighed first (whenever it is within the
/// tolerance, so is the other, which the choice prefers).
fn prune<T>(weighed: &mut Vec<(T, AutoCost)>) {
    let fastest = weighed.iter().map(|(_, c)| c.time).fold(f64::INFINITY, f64::min);
    let key = |c: &AutoCost| (c.hbm_bytes, c.time);
    let beats = |(j, d): (usize, &AutoCost), (i, c): (usize, &AutoCost)| {
        d.time <= c.time && (key(d).0 < key(c).0 || key(d) == key(c) && (d.time < c.time || j < i))
    };
    let keep: Vec<bool> = weighed
        .iter()
        .enumerate()
        .map(|(i, (_, c))| {
            c.time <= fastest * (1.0 + AUTO_TIME_TOLERANCE)
                && !weighed.iter().enumerate().any(|(j, (_, d))| j != i && beats((j, d), (i, c)))
        })
        .collect();
    let mut at = 0;
    weighed.retain(|_| {
        at += 1;
        keep[at - 1]
    });
}

fn search<T>(
    cfg: &GemmConfig,
    limits: &AutoLimits,
    hw: &HwProfile,
    shortlist: usize,
    batch: usize,
    config_of: &dyn Fn(&T) -> &GemmConfig,
    weigh_all: &mut WeighAll<'_, T>,
) -> Result<(T, AutoChoice), CodegenError> {
    cfg.validate()?;
    let mut ranked: Vec<(f64, GemmConfig)> =
        limits.apply_all(&auto_candidates(cfg)).into_iter().map(|c| (estimate_ns_with(&c, hw), c)).collect();
    ranked.sort_by(|x, y| x.0.total_cmp(&y.0));
    // The weighed candidates that may still be chosen (see `prune`), and the configs of all.
    let mut weighed: Vec<(T, AutoCost)> = Vec::new();
    let mut seen: Vec<GemmConfig> = Vec::new();
    let mut rejected = 0;
    let mut skipped = 0;
    let mut last_err = None;
    let mut take = |results: Vec<Result<Weighed<T>, CodegenError>>,
                    weighed: &mut Vec<(T, AutoCost)>,
                    seen: &mut Vec<GemmConfig>|
     -> Result<(), CodegenError> {
        for r in results {
            match r? {
                Weighed::Plan(plan, c) => {
                    seen.push(config_of(&plan).clone());
                    weighed.push((*plan, c));
                    prune(weighed);
                }
                Weighed::Rejected(e) => {
                    rejected += 1;
                    last_err = Some(e);
                }
                Weighed::Skipped => skipped += 1,
            }
        }
        Ok(())
    };
    // The blocked schedules with their default blocks (what `--schedule blocked-mn` and
    // `--schedule blocked-mnk` plan) are always weighed, so `auto` is never slower than them
    // for want of looking.
    let fixed = limits.block_m.is_some() || limits.block_n.is_some() || limits.block_k.is_some();
    let planning = if fixed { Planning::Fixed } else { Planning::Fitting };
    let anchors: Vec<AutoJob> = [Schedule::BlockedMn, Schedule::BlockedMnk]
        .into_iter()
        .filter_map(|schedule| {
            let anchor =
                GemmConfig { schedule, blocks: crate::gemm::BlockSizes::for_schedule(schedule), ..cfg.clone() };
            Some(AutoJob { config: limits.apply(&anchor)?, planning })
        })
        .collect();
    for jobs in anchors.chunks(batch.max(1)) {
        take(weigh_all(jobs), &mut weighed, &mut seen)?;
    }
    let quota = seen.len().saturating_add(shortlist.max(1));
    let mut ranked = ranked.into_iter().map(|(_, c)| c).peekable();
    while seen.len() < quota && ranked.peek().is_some() {
        // No more jobs than the shortlist still needs, so the same candidates are weighed
        // whatever the batch.
        let room = (quota - seen.len()).min(batch.max(1));
        let mut jobs = Vec::with_capacity(room);
        for cand in ranked.by_ref() {
            if !seen.contains(&cand) {
                jobs.push(AutoJob { config: cand, planning: Planning::DoubleBuffered });
                if jobs.len() == room {
                    break;
                }
            }
        }
        take(weigh_all(&jobs), &mut weighed, &mut seen)?;
    }
    let evaluated = seen.len();
    let fastest = weighed.iter().map(|(_, c)| c.time).fold(f64::INFINITY, f64::min);
    let best = weighed
        .into_iter()
        .filter(|(_, c)| c.time <= fastest * (1.0 + AUTO_TIME_TOLERANCE))
        .min_by(|(_, x), (_, y)| x.hbm_bytes.cmp(&y.hbm_bytes).then(x.time.total_cmp(&y.time)));
    match best {
        Some((plan, c)) => {
            let choice = AutoChoice {
                config: config_of(&plan).clone(),
                cost: c.time,
                hbm_bytes: c.hbm_bytes,
                evaluated,
                rejected,
                skipped,
            };
            Ok((plan, choice))
        }
        None => Err(last_err.unwrap_or_else(|| CodegenError::BadGemm("auto found no schedule".into()))),
    }
}

#[cfg(test)]
mod prune_tests {
    use proptest::prelude::*;

    use super::*;

    /// The choice the search makes among `weighed`: the fewest HBM bytes (then the least
    /// time, then the first) among those within the tolerance of the fastest.
    fn choice(weighed: &[(usize, AutoCost)]) -> Option<usize> {
        let fastest = weighed.iter().map(|(_, c)| c.time).fold(f64::INFINITY, f64::min);
        weighed
            .iter()
            .filter(|(_, c)| c.time <= fastest * (1.0 + AUTO_TIME_TOLERANCE))
            .min_by(|(_, x), (_, y)| x.hbm_bytes.cmp(&y.hbm_bytes).then(x.time.total_cmp(&y.time)))
            .map(|(i, _)| *i)
    }

    proptest! {
        /// Pruning after every candidate keeps the one the search would choose among all of
        /// them, and never more than it must (ties in time and bytes included).
        #[test]
        fn pruning_keeps_the_choice(costs in proptest::collection::vec((0u32..6, 0u64..4), 1..40)) {
            let costs: Vec<AutoCost> = costs
                .into_iter()
                .map(|(t, hbm_bytes)| AutoCost { time: 1000.0 * (1.0 + f64::from(t) * AUTO_TIME_TOLERANCE / 2.0), hbm_bytes })
                .collect();
            let all: Vec<(usize, AutoCost)> = costs.iter().copied().enumerate().collect();
            let mut kept: Vec<(usize, AutoCost)> = Vec::new();
            for (i, c) in costs.iter().enumerate() {
                kept.push((i, *c));
                prune(&mut kept);
                prop_assert_eq!(choice(&kept), choice(&all[..=i]));
            }
            prop_assert!(kept.len() <= 4, "{kept:?}");
        }
    }
}
