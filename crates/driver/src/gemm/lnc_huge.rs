//! A GEMM too large to unroll on the two cores of a logical NeuronCore (`--lnc 2` with
//! `--no-sim` past the memory budget, or `--extrapolate`).
//!
//! Each core's share (a band of C's rows or columns, [`codegen::Split`]) is a GEMM of its own,
//! extrapolated and modeled looped as one core's ([`super::huge`]). The cores are modeled
//! apart, not replayed together, so the chip's time is composed from the physics the joint
//! replay ([`sim::model_chip`]) applies: the cores run at once, each on its own engines, and
//! their HBM transfers pass through the budget they share (`hbm_shared_bytes_per_ns`), so the
//! chip takes the slower core's time, or the time the shared budget needs for both cores'
//! HBM bytes when that is longer. Where both can run, the two agree within a few percent
//! (tested against the joint replay). Without `--split`, both bands are weighed this way and
//! the faster kept. A split of K is refused here: its reduction is not extrapolated.

use codegen::{GemmConfig, Split};
use penguin::HwProfile;

use super::outcome::GemmOutcome;
use super::report::{CoreReport, LncReport, Report, WallMs};
use super::request::GemmRequest;
use crate::error::DriverError;

/// One split weighed: each core's outcome and the chip's time in microseconds.
struct Weighed {
    split: Split,
    shares: Vec<codegen::Share>,
    cores: Vec<Report>,
    chip_us: f64,
    shared_busy_us: f64,
}

/// The chip's time from its cores' (see the module docs): the slower core, or the shared
/// budget's time for every core's HBM bytes. Returns (chip us, shared budget busy us).
pub(crate) fn compose(cores: &[(f64, u64)], hw: &HwProfile) -> (f64, f64) {
    let slowest = cores.iter().map(|c| c.0).fold(0.0, f64::max);
    let bytes: u64 = cores.iter().map(|c| c.1).fold(0, u64::saturating_add);
    let shared_us = bytes as f64 / hw.hbm_shared_bytes_per_ns / 1e3;
    (slowest.max(shared_us), shared_us)
}

/// Run `req` (whose planner configuration is `whole`) on its cores, each share extrapolated.
pub(super) fn run(
    req: &GemmRequest,
    whole: &GemmConfig,
    budget: u64,
    hw: &HwProfile,
) -> Result<GemmOutcome, DriverError> {
    let opts = &req.options;
    if opts.simulate && opts.extrapolate {
        return Err(super::huge::not_simulated());
    }
    if !opts.model_extrapolated {
        return Err(DriverError::input(format!(
            "--lnc 2 of {}x{}x{}, too large to unroll (or --extrapolate): its cores are modeled apart and have no \
             program to print; --emit one core's GEMM, or a smaller shape",
            whole.m, whole.k, whole.n
        )));
    }
    if opts.unrolled {
        return Err(DriverError::NotUnrolled {
            why: format!(
                "{}x{}x{} on {} cores is too large to unroll (or --extrapolate was given), so each core's share is \
                 extrapolated and modeled apart",
                whole.m, whole.k, whole.n, req.lnc
            ),
        });
    }
    if req.split == Some(Split::K) {
        return Err(DriverError::input(format!(
            "--split k of {}x{}x{}, too large to unroll (or --extrapolate): the reduction of the partial sums is not \
             extrapolated; use --split m or n",
            whole.m, whole.k, whole.n
        )));
    }
    let cores = u64::from(req.lnc);
    let splits = req.split.map_or_else(|| vec![Split::M, Split::N], |s| vec![s]);
    let mut best: Option<Weighed> = None;
    let mut weighed = indexmap::IndexMap::new();
    let mut wall = WallMs::default();
    for split in splits {
        let Some(shares) = split.shares(whole, cores) else {
            if req.split.is_some() {
                return Err(super::lnc::too_short(split, whole, cores));
            }
            continue;
        };
        let mut reports: Vec<Report> = Vec::new();
        let mut planned: Vec<((u64, u64), Report)> = Vec::new();
        for share in &shares {
            // Cores with shares of the same shape are modeled once.
            let report = match planned.iter().find(|(mn, _)| *mn == (share.m, share.n)) {
                Some((_, r)) => r.clone(),
                None => {
                    let r = super::huge::run(req, &share.config(whole), budget, hw)?.report;
                    (wall.plan, wall.lower, wall.model) =
                        (wall.plan + r.wall_ms.plan, wall.lower + r.wall_ms.lower, wall.model + r.wall_ms.model);
                    planned.push(((share.m, share.n), r.clone()));
                    r
                }
            };
            reports.push(report);
        }
        let figures: Vec<(f64, u64)> = reports.iter().map(|r| (r.modeled_time_us, r.hbm_bytes)).collect();
        let (chip_us, shared_busy_us) = compose(&figures, hw);
        weighed.insert(split.name().to_string(), chip_us);
        if best.as_ref().is_none_or(|b| chip_us < b.chip_us) {
            best = Some(Weighed { split, shares, cores: reports, chip_us, shared_busy_us });
        }
    }
    let Some(best) = best else {
        return Err(DriverError::input(format!(
            "C is {}x{}: too small to divide between {cores} cores (each needs rows or columns of its own, cut at multiples of 128)",
            whole.m, whole.n
        )));
    };
    let mut report = chip_report(req, whole, &best, weighed, hw)
        .ok_or_else(|| DriverError::internal("a chip without cores (a bug)"))?;
    report.wall_ms = wall;
    Ok(GemmOutcome::report_only(report))
}

/// The chip's report: core 0's with the chip's figures, and each core's own scaled to the
/// chip's time.
fn chip_report(
    req: &GemmRequest,
    whole: &GemmConfig,
    w: &Weighed,
    weighed: indexmap::IndexMap<String, f64>,
    hw: &HwProfile,
) -> Option<Report> {
    let first = w.cores.first()?;
    let t = w.chip_us;
    let over = |x: f64, own: f64| if t > 0.0 { x * own / t } else { 0.0 };
    let per_core: Vec<CoreReport> = w
        .cores
        .iter()
        .zip(&w.shares)
        .map(|(r, share)| {
            let own = r.modeled_time_us;
            let b = &r.engine_busy;
            CoreReport {
                share: *share,
                schedule: r.schedule.clone(),
                blocks: r.blocks,
                modeled_time_us: own,
                hfu: over(r.hfu, own),
                engine_busy: sim::EngineBusy {
                    pe: over(b.pe, own),
                    act: over(b.act, own),
                    dve: over(b.dve, own),
                    pool: over(b.pool, own),
                    dma: over(b.dma, own),
                },
                hbm_bytes: r.hbm_bytes,
                matmuls: r.matmuls,
                bir_instructions: r.bir_instructions,
                sbuf_peak_bytes_per_partition: r.sbuf_peak_bytes_per_partition,
            }
        })
        .collect();
    let n = per_core.len().max(1) as f64;
    let mean = |f: fn(&sim::EngineBusy) -> f64| per_core.iter().map(|c| f(&c.engine_busy)).sum::<f64>() / n;
    let sum = |f: fn(&Report) -> u64| w.cores.iter().map(f).fold(0u64, u64::saturating_add);
    let tiles = |i: usize| w.cores.iter().map(|r| r.output_tiles[i]).sum::<u64>();
    // Every tensor of the whole GEMM once: the shares' less what they have in common (B for
    // bands of rows, A for bands of columns).
    let (inp, out) = (u64::from(whole.input_dtype.size_bytes()), u64::from(whole.out_dtype.size_bytes()));
    let read_once = match w.split {
        Split::M => sum(|r| r.hbm_read_once_bytes).saturating_sub((n as u64 - 1) * whole.k * whole.n * inp),
        Split::N | Split::K => {
            let s = w.shares.first()?;
            let a = first.hbm_read_once_bytes.saturating_sub(whole.k * s.n * inp + whole.m * s.n * out);
            a + whole.k * whole.n * inp + whole.m * whole.n * out
        }
    };
    let output_tiles = match w.split {
        Split::M => [tiles(0), first.output_tiles[1]],
        Split::N | Split::K => [first.output_tiles[0], tiles(1)],
    };
    Some(Report {
        m: whole.m,
        k: whole.k,
        n: whole.n,
        output_tiles,
        penguin_instructions: sum(|r| r.penguin_instructions),
        bir_instructions: sum(|r| r.bir_instructions),
        matmuls: sum(|r| r.matmuls),
        psum_groups: sum(|r| r.psum_groups),
        hbm_bytes: sum(|r| r.hbm_bytes),
        modeled_time_us: t,
        hfu: per_core.iter().map(|c| c.hfu).sum::<f64>() / n,
        engine_busy: sim::EngineBusy {
            pe: mean(|b| b.pe),
            act: mean(|b| b.act),
            dve: mean(|b| b.dve),
            pool: mean(|b| b.pool),
            dma: mean(|b| b.dma),
        },
        io_lower_bound_bytes: super::report::io_lower_bound_bytes(whole, read_once),
        hbm_read_once_bytes: read_once,
        tile_quantized_ideal_us: w.cores.iter().map(|r| r.tile_quantized_ideal_us).fold(0.0, f64::max),
        lnc: Some(LncReport {
            cores: per_core.len() as u32,
            split: w.split.name().to_string(),
            searched: req.split.is_none(),
            weighed,
            hbm_shared_busy: if t > 0.0 { (w.shared_busy_us / t).min(1.0) } else { 0.0 },
            hbm_shared_gb_per_s: hw.hbm_shared_bytes_per_ns,
            modeled_apart: true,
            per_core,
        }),
        ..first.clone()
    })
}
