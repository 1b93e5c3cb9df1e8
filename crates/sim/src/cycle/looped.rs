//! The cycle model of a [`LoopedProgram`], without unrolling it.
//!
//! The replay of the unrolled model reads each engine's stream through a cursor that walks
//! the loops lazily, so the model holds the looped program and a few frames per engine, not
//! one instruction (or one [`super::Slice`]) per unrolled instruction.
//!
//! # Steady state
//! The replay is deterministic: its future depends only on its state and the instructions
//! still to come. At each start of an iteration of a top-level loop (a *checkpoint*) the
//! model records its state, with every time taken relative to the current time (a time at
//! or before it is the same as the current time for everything that follows: no later
//! instruction starts earlier). When three consecutive checkpoints of the same loop show
//! the same relative state, the same period `T` and the same per-period advance of every
//! count (busy times, FLOPs, bytes, semaphore counts, loop iterations), and the instructions
//! still to come repeat with that advance (every engine inside the same loop levels, its
//! loop's wait steps equal to the semaphores' advance, no partition moving), the following
//! periods repeat the last one exactly. The model then jumps ahead by as many whole periods
//! as no engine leaves its loop and no blocked engine's wait comes true, adding `k x T` to
//! every time and `k x` the advance to every count, and replays the rest.
//!
//! Times compare within `1e-9` relative (their rounding differs from period to period), so
//! the jump is exact up to floating-point rounding. One limit of that: when two engines'
//! starts tie exactly, the unrolled replay orders them by rounding noise, which can flip
//! after many periods and settle into another steady state with the same total time but
//! different busy times; the jump keeps the order the checked periods had.

use std::collections::HashMap;

use bir::{Item, LoopedProgram, SemId};
use penguin::HwProfile;

use super::source::Looped;
use super::{CycleReport, NoObserver, Observer, Replay};
use crate::error::{InstRef, SimError};

/// How [`model_looped_with`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopedOptions {
    /// Keep one [`super::Slice`] per unrolled instruction (memory grows with the unrolled
    /// program; turns `extrapolate` off, since skipped periods have no slices).
    pub slices: bool,
    /// Jump over repeating periods of the steady state.
    pub extrapolate: bool,
}

impl Default for LoopedOptions {
    fn default() -> Self {
        LoopedOptions { slices: false, extrapolate: true }
    }
}

/// Model a looped program with its target's built-in profile, without slices; the figures
/// are those of [`super::model`] on [`LoopedProgram::expand`]. Errors as [`model_looped_with`].
pub fn model_looped_default(lp: &LoopedProgram) -> Result<CycleReport, SimError> {
    model_looped(lp, &lp.header.target.profile())
}

/// Model a looped program with the figures of `profile`, without slices, extrapolating its
/// steady state. Errors as [`model_looped_with`].
pub fn model_looped(lp: &LoopedProgram, profile: &HwProfile) -> Result<CycleReport, SimError> {
    model_looped_with(lp, profile, LoopedOptions::default())
}

/// Model a looped program: the figures of [`super::model_with`] on [`LoopedProgram::expand`]
/// (total time, busy times, HBM bytes, FLOPs; the slices when asked for), holding only the
/// looped program and a cursor per engine.
///
/// Errors: those of [`super::model_with`], and [`SimError::BadOperand`] when a loop has no
/// trips, a step that does not fit its body, or an iteration that moves a parameter out of
/// its range (at the first instruction that meets it).
pub fn model_looped_with(
    lp: &LoopedProgram,
    profile: &HwProfile,
    opts: LoopedOptions,
) -> Result<CycleReport, SimError> {
    let profile = HwProfile { target: lp.header.target, ..*profile };
    let src = Looped::new(lp)?;
    let insts = if opts.slices { usize::try_from(lp.unrolled_len()).unwrap_or(usize::MAX).min(1 << 20) } else { 0 };
    let replay = Replay::new(src, lp.header.semaphores.len(), profile, opts.slices, insts)?;
    if opts.extrapolate && !opts.slices {
        replay.run(&mut Steady::default())
    } else {
        replay.run(&mut NoObserver)
    }
}

/// The replay state at one checkpoint.
struct Snapshot {
    now: f64,
    /// Every time of the state, relative to `now` (0 for times at or before it).
    rel: Vec<f64>,
    /// Everything discrete: weights, lengths of the in-flight and pending lists, finished
    /// streams.
    key: Vec<u64>,
    /// Per engine, per open loop level: (item index, iteration).
    frames: Vec<Vec<(usize, u32)>>,
    busy: Vec<f64>,
    next: Vec<usize>,
    flops: [f64; 4],
    hbm: u64,
    counts: Vec<u64>,
}

impl Snapshot {
    fn take(r: &Replay<Looped<'_>>, now: f64) -> Self {
        let mut times = Vec::new();
        for c in &r.cursors {
            times.extend([c.free_at, c.retired, c.covered_until]);
        }
        r.pe.times(&mut times);
        r.dma.times(&mut times);
        let mut key = Vec::new();
        r.pe.weights_key(&mut key);
        // Lists whose entries at or before `now` no longer matter: keep the later ones.
        let mut later = |list: &[f64], key: &mut Vec<u64>| {
            let before = times.len();
            times.extend(list.iter().copied().filter(|&t| t > now));
            key.push((times.len() - before) as u64);
        };
        for flight in r.dma.in_flight() {
            later(flight, &mut key);
        }
        for log in &r.signals {
            later(&log.times, &mut key);
        }
        key.extend((0..r.cursors.len()).map(|e| u64::from(r.inst(e).is_none())));
        Snapshot {
            now,
            rel: times.iter().map(|&t| (t - now).max(0.0)).collect(),
            key,
            frames: r.src.cursors.iter().map(|c| c.frames.iter().map(|f| (f.pos, f.iter)).collect()).collect(),
            busy: r.cursors.iter().map(|c| c.busy).collect(),
            next: r.cursors.iter().map(|c| c.next).collect(),
            flops: r.pe.flops_parts(),
            hbm: r.hbm_bytes,
            counts: r.signals.iter().map(super::SemLog::count).collect(),
        }
    }
}

/// How one engine's cursor moved between two checkpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Progress {
    /// Not at all.
    Still,
    /// `iters` iterations of the loop at `level`, every other level where it was.
    Level { level: usize, iters: u32 },
}

fn progress(a: &[(usize, u32)], b: &[(usize, u32)]) -> Option<Progress> {
    if a.len() != b.len() || a.iter().zip(b).any(|(x, y)| x.0 != y.0) {
        return None;
    }
    let mut moved = a.iter().zip(b).enumerate().filter(|(_, (x, y))| x.1 != y.1);
    match (moved.next(), moved.next()) {
        (None, _) => Some(Progress::Still),
        (Some((level, (x, y))), None) if y.1 > x.1 => Some(Progress::Level { level, iters: y.1 - x.1 }),
        _ => None,
    }
}

/// Whether `a` and `b` agree within `1e-9` relative, plus the rounding of differences of
/// absolute times around `scale`.
fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-13 * scale.abs() + 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn all_close(a: &[f64], b: &[f64], scale: f64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| close(*x, *y, scale))
}

/// A verified period: jump `periods` periods of `dt` from the last checkpoint.
struct Jump {
    periods: u64,
    dt: f64,
    progress: Vec<Progress>,
    busy: Vec<f64>,
    next: Vec<usize>,
    flops: [f64; 4],
    hbm: u64,
    counts: Vec<u64>,
}

/// The kind of each parameter of `items`, in parameter order: `None` for a byte offset (no
/// cost depends on it), `Some(None)` for a start partition, `Some(Some(sem))` for a wait.
fn param_kinds(items: &[Item], out: &mut Vec<Option<Option<SemId>>>) {
    for it in items {
        match it {
            Item::Inst(i) => {
                for _ in i.op.aps() {
                    out.extend([None, Some(None)]);
                }
                out.extend(i.waits.iter().map(|w| Some(Some(w.sem))));
            }
            Item::Loop(l) => param_kinds(&l.body, out),
        }
    }
}

/// The steady-state observer: snapshots per checkpoint loop, the last three of each.
#[derive(Default)]
struct Steady {
    history: HashMap<(usize, usize), Vec<Snapshot>>,
}

impl Steady {
    /// The jump the last three snapshots allow, if they show a repeating period.
    fn plan(r: &Replay<Looped<'_>>, s: &[Snapshot]) -> Option<Jump> {
        let [s0, s1, s2] = s else { return None };
        let scale = s2.now;
        let (t1, t2) = (s1.now - s0.now, s2.now - s1.now);
        if !(t2 > 0.0 && close(t1, t2, scale)) || s0.key != s1.key || s1.key != s2.key {
            return None;
        }
        if !all_close(&s0.rel, &s1.rel, scale) || !all_close(&s1.rel, &s2.rel, scale) {
            return None;
        }
        let dbusy =
            |a: &Snapshot, b: &Snapshot| -> Vec<f64> { a.busy.iter().zip(&b.busy).map(|(x, y)| y - x).collect() };
        let busy = dbusy(s1, s2);
        let dflops = |a: &Snapshot, b: &Snapshot| -> [f64; 4] { std::array::from_fn(|i| b.flops[i] - a.flops[i]) };
        let flops = dflops(s1, s2);
        if !all_close(&dbusy(s0, s1), &busy, scale) || !all_close(&dflops(s0, s1), &flops, flops.iter().sum()) {
            return None;
        }
        let dnext = |a: &Snapshot, b: &Snapshot| -> Option<Vec<usize>> {
            a.next.iter().zip(&b.next).map(|(x, y)| y.checked_sub(*x)).collect()
        };
        let dcounts = |a: &Snapshot, b: &Snapshot| -> Option<Vec<u64>> {
            a.counts.iter().zip(&b.counts).map(|(x, y)| y.checked_sub(*x)).collect()
        };
        let (next, counts) = (dnext(s1, s2)?, dcounts(s1, s2)?);
        let hbm = s2.hbm.checked_sub(s1.hbm)?;
        if dnext(s0, s1)? != next || dcounts(s0, s1)? != counts || s1.hbm.checked_sub(s0.hbm)? != hbm {
            return None;
        }
        let mut periods = u64::MAX;
        let mut prog = Vec::with_capacity(s2.frames.len());
        for (e, ((f0, f1), f2)) in s0.frames.iter().zip(&s1.frames).zip(&s2.frames).enumerate() {
            let p = progress(f1, f2)?;
            if progress(f0, f1)? != p {
                return None;
            }
            prog.push(p);
            let cursor = r.src.cursors.get(e)?;
            match p {
                Progress::Level { level, iters } => {
                    let f = cursor.frames.get(level)?;
                    periods = periods.min(u64::from(f.trips - 1 - f.iter) / u64::from(iters));
                    let (body, step) = cursor.level_body(level)?;
                    let mut kinds = Vec::with_capacity(step.len());
                    param_kinds(body, &mut kinds);
                    for (kind, &st) in kinds.iter().zip(step) {
                        let moved = i128::from(st) * i128::from(iters);
                        let ok = match kind {
                            None => true,
                            Some(None) => moved == 0,
                            Some(Some(sem)) => counts.get(sem.0 as usize).is_some_and(|&d| i128::from(d) == moved),
                        };
                        if !ok {
                            return None;
                        }
                    }
                }
                Progress::Still => {
                    let Some(inst) = r.inst(e) else { continue };
                    let mut blocked = false;
                    for w in &inst.waits {
                        match r.reached(w.sem, w.value) {
                            Some(t) if t <= s2.now => {}
                            Some(_) => return None,
                            None => {
                                blocked = true;
                                let d = *counts.get(w.sem.0 as usize)?;
                                let count = *s2.counts.get(w.sem.0 as usize)?;
                                if let Some(left) = (u64::from(w.value) - 1 - count).checked_div(d) {
                                    periods = periods.min(left);
                                }
                            }
                        }
                    }
                    if !blocked {
                        return None;
                    }
                }
            }
        }
        (periods > 0).then_some(Jump { periods, dt: t2, progress: prog, busy, next, flops, hbm, counts })
    }

    /// Move the replay `j.periods` periods ahead.
    fn apply(r: &mut Replay<Looped<'_>>, j: &Jump, now: f64) -> Result<(), SimError> {
        let k = j.periods;
        let dt = k as f64 * j.dt;
        for (e, c) in r.cursors.iter_mut().enumerate() {
            c.free_at += dt;
            c.retired += dt;
            c.covered_until += dt;
            c.busy += k as f64 * j.busy[e];
            c.next = c.next.saturating_add(usize::try_from(k).unwrap_or(usize::MAX).saturating_mul(j.next[e]));
        }
        r.total_ns = r.cursors.iter().map(|c| c.retired).fold(r.total_ns, f64::max);
        r.pe.shift(dt);
        r.pe.add_flops(&j.flops, k as f64);
        r.dma.shift(dt);
        r.hbm_bytes = r.hbm_bytes.saturating_add(j.hbm.saturating_mul(k));
        for (log, d) in r.signals.iter_mut().zip(&j.counts) {
            log.prune(now);
            log.dropped = log.dropped.saturating_add(d.saturating_mul(k));
            log.dropped_at += dt;
            for t in &mut log.times {
                *t += dt;
            }
        }
        for (e, p) in j.progress.iter().enumerate() {
            if let Progress::Level { level, iters } = *p {
                let n = u32::try_from(u64::from(iters).saturating_mul(k)).unwrap_or(u32::MAX);
                let at = InstRef { engine: r.engines[e], index: r.cursors[e].next };
                r.src.cursors[e].jump(level, n, at)?;
            }
        }
        Ok(())
    }
}

impl<'p> Observer<Looped<'p>> for Steady {
    fn before_commit(&mut self, r: &mut Replay<Looped<'p>>, e: usize, start: f64) -> Result<bool, SimError> {
        let Some(cursor) = r.src.cursors.get(e) else { return Ok(false) };
        if !cursor.at_top_iteration_start() {
            return Ok(false);
        }
        let key = (e, cursor.frames.first().map_or(0, |f| f.pos));
        let snap = Snapshot::take(r, start);
        let hist = self.history.entry(key).or_default();
        if hist.len() == 3 {
            hist.remove(0);
        }
        hist.push(snap);
        let Some(jump) = Self::plan(r, hist) else { return Ok(false) };
        Self::apply(r, &jump, start)?;
        self.history.clear();
        Ok(true)
    }
}
