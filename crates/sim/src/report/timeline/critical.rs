//! The critical path of a modeled program: which engine the modeled time was spent on.
//!
//! The walk starts at the instruction that finished last and steps back to what it had to
//! wait for: the instruction whose signal released it when a semaphore held it (see
//! [`flows`](super::flows)), otherwise the instruction of its own stream that kept the
//! engine busy (of the few before it, the one that ended last by its start: the PE overlaps
//! weight loads with matmuls), or the one just before it when that one started later than
//! any of them ended (an engine issues in order: a DMA queue with room starts a transfer once
//! the one before it started, however long ago the last one ended). Each instruction on the path is charged for the time between its
//! start and the point the walk reached (never more than its duration); time on the path
//! where nothing ran (waiting, the part of a DMA's latency not under an instruction, the
//! start) is charged to `idle`. The charges add up to the modeled time.

use bir::{Engine, Program};
use serde::Serialize;

use super::flows::{released_by, stream_of, NONE};
use crate::cycle::{CycleReport, Slice};

/// The critical path's time per engine class.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CriticalPath {
    /// Time charged per class (`pe`, `act`, `dve`, `pool`, `sp`, `dma`, `idle`), in ns,
    /// largest first; classes with no time are left out.
    pub ns: Vec<(String, f64)>,
    /// The modeled time the charges add up to, in ns.
    pub total_ns: f64,
}

impl CriticalPath {
    /// The class with the most time on the path (other than `idle`, unless nothing ran)
    /// and its share of the modeled time.
    pub fn bottleneck(&self) -> Option<(&str, f64)> {
        let total = self.total_ns;
        let top = self.ns.iter().find(|(c, _)| c != "idle").or_else(|| self.ns.first())?;
        Some((top.0.as_str(), if total > 0.0 { top.1 / total } else { 0.0 }))
    }

    /// Each class's share of the modeled time, largest first.
    pub fn shares(&self) -> Vec<(String, f64)> {
        let total = self.total_ns;
        self.ns.iter().map(|(c, ns)| (c.clone(), if total > 0.0 { ns / total } else { 0.0 })).collect()
    }
}

/// The index in [`CLASSES`] of an engine's class.
pub(crate) fn class_index(engine: Engine) -> usize {
    match engine {
        Engine::Pe => 0,
        Engine::Act => 1,
        Engine::Dve => 2,
        Engine::Pool => 3,
        Engine::Sp => 4,
        Engine::Dma(_) => 5,
    }
}

/// How far back in its stream the walk looks for what kept an engine busy.
pub(crate) const LOOKBACK: usize = 8;

/// The classes time is charged to; [`IDLE`] last.
pub(crate) const CLASSES: [&str; 7] = ["pe", "act", "dve", "pool", "sp", "dma", "idle"];

/// The index of `idle` in [`CLASSES`].
pub(crate) const IDLE: usize = CLASSES.len() - 1;

/// The path of `charged` time per class of [`CLASSES`], of a program `total_ns` long.
pub(crate) fn from_charges(charged: [f64; CLASSES.len()], total_ns: f64) -> CriticalPath {
    let mut ns: Vec<(String, f64)> =
        CLASSES.iter().zip(charged).filter(|(_, v)| *v > 0.0).map(|(c, v)| ((*c).to_string(), v)).collect();
    ns.sort_by(|a, b| b.1.total_cmp(&a.1));
    CriticalPath { ns, total_ns }
}

/// The critical path of a modeled program (`report` from [`model`](crate::model) of it).
pub fn critical_path(program: &Program, report: &CycleReport) -> CriticalPath {
    critical_path_over(program, report, None)
}

/// The critical path of a modeled chip, across its cores: a wait on a semaphore the cores
/// share steps back to the other core's signal that released it.
pub fn critical_path_chip(chip: &bir::Chip, report: &crate::ChipReport) -> CriticalPath {
    let merged = crate::cycle::merge_chip(chip);
    let mut slices: Vec<Slice> = Vec::new();
    let mut streams: Vec<usize> = Vec::new();
    for (core, r) in report.cores.iter().enumerate() {
        slices.extend_from_slice(&r.slices);
        streams.extend(r.slices.iter().map(|s| core * bir::NUM_ENGINES + s.engine.index()));
    }
    let whole = CycleReport {
        total_ns: report.total_ns,
        engine_busy_ns: Vec::new(),
        hbm_bytes: 0,
        matmul_flops: 0.0,
        peak_flops_per_ns: 0.0,
        slices,
    };
    critical_path_over(&merged, &whole, Some(&streams))
}

/// The critical path of a program whose slice `i` ran on stream `streams[i]` (each slice's
/// engine's when `None`).
fn critical_path_over(program: &Program, report: &CycleReport, streams: Option<&[usize]>) -> CriticalPath {
    let mut charged = [0.0f64; CLASSES.len()];
    let idle = IDLE;
    // The slice that released each slice, and each slice's predecessor in its stream.
    let released_by = released_by(program, report, streams);
    // The slice of each (engine, stream index), densely: a walk step looks up a few of them.
    // Slice indices are u32 (`NONE` for none) in one table for all streams (stream `e` from
    // `base[e]`), to keep this per-instruction table small.
    let mut base = Vec::with_capacity(program.streams.len() + 1);
    base.push(0usize);
    for s in &program.streams {
        base.push(base.last().copied().unwrap_or(0) + s.len());
    }
    let mut slice_of = vec![NONE; base.last().copied().unwrap_or(0)];
    let slot = |e: usize, index: usize| {
        let (start, end) = (*base.get(e)?, *base.get(e + 1)?);
        let at = start.checked_add(index)?;
        (at < end).then_some(at)
    };
    for (i, s) in report.slices.iter().enumerate() {
        if let Some(at) = slot(stream_of(streams, i, s), s.index) {
            slice_of[at] = u32::try_from(i).unwrap_or(NONE);
        }
    }
    let at = |e: usize, index: usize| slot(e, index).map(|at| slice_of[at]).filter(|&i| i != NONE).map(|i| i as usize);
    let last = report.slices.iter().enumerate().max_by(|a, b| a.1.end_ns.total_cmp(&b.1.end_ns)).map(|(i, _)| i);
    let mut t = report.total_ns;
    let mut cur = last;
    // Every step moves to an earlier-starting slice, so the walk ends; the bound is a guard.
    let mut steps = 0usize;
    while let Some(i) = cur {
        steps += 1;
        if steps > report.slices.len() + 1 {
            break;
        }
        let s = &report.slices[i];
        let end = s.end_ns.min(t);
        if end < t {
            charged[idle] += t - end;
        }
        let start = s.start_ns.min(end);
        charged[class_index(s.engine)] += end - start;
        t = start;
        cur = if s.wait_ns > 0.0 {
            released_by.get(i).copied().filter(|&p| p != NONE).map(|p| p as usize)
        } else {
            // What the engine was busy with: of the few instructions before it in its stream
            // (the PE overlaps weight loads with matmuls), the one that ended last by its start;
            // the one just before it if that one started later (in-order issue held it).
            let stream = stream_of(streams, i, s);
            let previous = s.index.checked_sub(1).and_then(|p| at(stream, p));
            let ended = (1..=LOOKBACK)
                .filter_map(|back| at(stream, s.index.checked_sub(back)?))
                .filter(|&j| report.slices[j].end_ns <= s.start_ns + 1e-6)
                .max_by(|&a, &b| report.slices[a].end_ns.total_cmp(&report.slices[b].end_ns));
            match (ended, previous) {
                (Some(j), Some(p)) if report.slices[p].start_ns > report.slices[j].end_ns => Some(p),
                (Some(j), _) => Some(j),
                (None, p) => p,
            }
        };
        if let Some(next) = cur {
            if report.slices[next].start_ns > s.start_ns {
                cur = None;
            }
        }
    }
    charged[idle] += t.max(0.0);
    from_charges(charged, report.total_ns)
}
