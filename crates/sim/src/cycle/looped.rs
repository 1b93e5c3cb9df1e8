//! The cycle model of a [`LoopedProgram`], without unrolling it.
//!
//! The replay of the unrolled model reads each engine's stream through a cursor that walks
//! the loops lazily, so the model holds the looped program and a few frames per engine, not
//! one instruction (or one [`super::Slice`]) per unrolled instruction.
//!
//! # Steady state
//! The replay is deterministic: its future depends only on its state and the instructions
//! still to come. At the start of an iteration of a loop, at any depth (a *checkpoint*), the
//! model records its state, with every time taken relative to the current time (a time at
//! or before it is the same as the current time for everything that follows: no later
//! instruction starts earlier). When three consecutive checkpoints of the same loop show
//! the same relative state, the same period `T` and the same per-period advance of every
//! count (busy times, FLOPs, bytes, semaphore counts, loop iterations), and the instructions
//! still to come repeat with that advance (every engine inside the same loop levels, moving
//! in one of them, its loop's wait steps equal to the semaphores' advance, no partition
//! moving; or blocked on a wait), the following periods repeat the last one exactly. The
//! model then jumps ahead by as many whole periods as no engine leaves its loop, no blocked
//! engine's wait comes true and no semaphore count passes `i64::MAX`, adding `k x T` to
//! every time and `k x` the advance to every count, and replays the rest.
//!
//! # Which loops, and how jumps nest
//! A loop is identified by its body (its place in the program) and the engine walking it.
//! Its checkpoints are the starts of every `s`-th iteration, `s = ceil(CHECKPOINT_INSTS / L)` for a body that unrolls to `L` instructions: a period is then `s` iterations, and
//! a checkpoint (a few hundred numbers) comes at most once per `CHECKPOINT_INSTS`
//! instructions of the engine per loop level, so a 2-instruction K loop costs no more to
//! watch than a 64-instruction one. Loops with fewer than `3 s + 1` trips get none (three
//! checkpoints and one period to jump need that many). An instruction that starts an
//! iteration of several nested loops is one checkpoint of each; the outermost loop whose
//! period repeats jumps.
//!
//! A jump is the replay it stands for (up to rounding), so an outer loop's checkpoints still
//! see its repeating period when the inner loops of its iterations jumped: each of its
//! iterations replays the same prologue of the inner loop, jumps the same number of inner
//! periods and replays the same tail. Replay cost is then about `3 + 1` iterations (plus
//! the tails) per loop level, whatever the trips.
//!
//! A loop with a parameter that leaves its range in some iteration (which the verifier
//! refuses) never jumps, so the replay meets the first such instruction where it is and
//! reports it there.
//!
//! A jump does not move the replay's times: it adds `k x T` to an epoch (see the `epoch`
//! module), so the times the replay compares stay those of the short stretch it replayed
//! and keep their precision in a program of days of modeled time.
//!
//! Times compare within `1e-9` relative (their rounding differs from period to period), so
//! the jump is exact up to floating-point rounding. One limit of that: when two engines'
//! starts tie exactly, the unrolled replay orders them by rounding noise, which can flip
//! after many periods and settle into another steady state with the same total time but
//! different busy times; the jump keeps the order the checked periods had.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use bir::{Item, LoopedProgram, SemId};
use penguin::HwProfile;

use super::source::Looped;
use super::{CycleReport, NoObserver, Observer, Ran, Replay};
use crate::error::{InstRef, SimError};

mod checkpoint;

use checkpoint::{all_close, close, progress, Light, Progress, Snapshot};

/// How [`model_looped_with`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopedOptions {
    /// Keep one [`super::Slice`] per unrolled instruction (memory grows with the unrolled
    /// program; turns `extrapolate` off, since skipped periods have no slices).
    pub slices: bool,
    /// Jump over repeating periods of the steady state.
    pub extrapolate: bool,
    /// With `extrapolate`: replay at most this many instructions one by one, then stop with
    /// [`SimError::NoSteadyState`] (a program whose periods never repeat would otherwise be
    /// replayed instruction by instruction, for as long as it unrolls to).
    pub max_replayed: u64,
}

impl Default for LoopedOptions {
    fn default() -> Self {
        LoopedOptions { slices: false, extrapolate: true, max_replayed: u64::MAX }
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
/// trips, a step that does not fit its body, an iteration that moves a parameter out of its
/// range (a wait value past `i64::MAX` included: loop parameters advance in an `i64`), or a
/// semaphore signalled more than `i64::MAX` times (at the first instruction that meets it).
pub fn model_looped_with(
    lp: &LoopedProgram,
    profile: &HwProfile,
    opts: LoopedOptions,
) -> Result<CycleReport, SimError> {
    Ok(model_looped_stats(lp, profile, opts)?.0)
}

/// What the model of a looped program did to get its figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoopedStats {
    /// Instructions replayed one by one.
    pub replayed: u64,
    /// Instructions jumped over (`replayed + skipped` is the unrolled length).
    pub skipped: u64,
    /// Jumps made.
    pub jumps: u64,
    /// Checkpoints (loop iteration starts whose figures were recorded).
    pub checkpoints: u64,
    /// Full snapshots of the state taken at checkpoints (where the figures repeated).
    pub snapshots: u64,
}

/// [`model_looped_with`], with what it did: how many instructions it replayed and how many
/// it jumped over. Errors as [`model_looped_with`].
pub fn model_looped_stats(
    lp: &LoopedProgram,
    profile: &HwProfile,
    opts: LoopedOptions,
) -> Result<(CycleReport, LoopedStats), SimError> {
    model_looped_cancellable(lp, profile, opts, None)
}

/// [`model_looped_stats`], stopped with [`SimError::Interrupted`] within a thousand replayed
/// instructions of `cancel` being set.
pub fn model_looped_cancellable(
    lp: &LoopedProgram,
    profile: &HwProfile,
    opts: LoopedOptions,
    cancel: Option<&penguin::Cancel>,
) -> Result<(CycleReport, LoopedStats), SimError> {
    run_looped(lp, profile, opts, cancel, false).map(|(report, stats, _)| (report, stats))
}

/// [`model_looped_cancellable`], with the critical path: the walk of
/// [`critical_path`](crate::critical_path) on the unrolled program's model, followed forward
/// as the replay commits, so no slice is kept. Where the model jumps `k` periods of its
/// steady state, the path is charged `k` times what it gained per period over the last two
/// (the periods repeat, and so does the path through them); without jumps it is the path of
/// the unrolled model exactly. Errors as [`model_looped_with`].
pub fn model_looped_critical(
    lp: &LoopedProgram,
    profile: &HwProfile,
    opts: LoopedOptions,
    cancel: Option<&penguin::Cancel>,
) -> Result<(CycleReport, LoopedStats, crate::CriticalPath), SimError> {
    let (report, stats, path) = run_looped(lp, profile, opts, cancel, true)?;
    let path = path.ok_or_else(|| SimError::Internal("the replay did not follow its critical path".into()))?;
    Ok((report, stats, path))
}

/// The looped model, following the critical path when `path` is set.
fn run_looped(
    lp: &LoopedProgram,
    profile: &HwProfile,
    opts: LoopedOptions,
    cancel: Option<&penguin::Cancel>,
    path: bool,
) -> Result<(CycleReport, LoopedStats, Option<crate::CriticalPath>), SimError> {
    let profile = HwProfile { target: lp.header.target, ..*profile };
    let src = Looped::new(lp)?;
    let insts = if opts.slices { usize::try_from(lp.unrolled_len()).unwrap_or(usize::MAX).min(1 << 20) } else { 0 };
    let mut replay = Replay::new(src, lp.header.semaphores.len(), profile, opts.slices, insts)?;
    if path {
        replay = replay.follow_path();
    }
    let (ran, checkpoints, snapshots) = if opts.extrapolate && !opts.slices {
        let limit = (opts.max_replayed, lp.unrolled_len());
        let mut steady = Steady { limit, cancel: cancel.cloned(), ..Steady::default() };
        let ran = replay.run(&mut steady)?;
        (ran, steady.checkpoints, steady.snapshots)
    } else if let Some(cancel) = cancel {
        (replay.run(&mut super::Polled { cancel, commits: 0 })?, 0, 0)
    } else {
        (replay.run(&mut NoObserver)?, 0, 0)
    };
    let Ran { report, replayed, skipped, jumps, critical, .. } = ran;
    Ok((report, LoopedStats { replayed, skipped, jumps, checkpoints, snapshots }, critical))
}

/// A loop gets a checkpoint every `ceil(CHECKPOINT_INSTS / L)` iterations, `L` the
/// instructions of its body (see the module doc).
pub(super) const CHECKPOINT_INSTS: u64 = 32;

/// Iterations between two checkpoints of a loop whose body unrolls to `len` instructions.
fn checkpoint_stride(len: u64) -> u32 {
    u32::try_from(CHECKPOINT_INSTS.div_ceil(len.max(1))).unwrap_or(u32::MAX)
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
    /// The checkpoints two periods apart whose critical-path charges the jump extrapolates,
    /// when the replay follows it.
    path: Option<(Rc<Snapshot>, Rc<Snapshot>)>,
}

/// The kind of each parameter of `items`, in parameter order: `None` for a byte offset (no
/// cost depends on it), `Some(None)` for a start partition, `Some(Some(sem))` for a wait.
fn param_kinds(items: &[Item], out: &mut Vec<Option<Option<SemId>>>) {
    for it in items {
        match it {
            Item::Inst(i) => {
                for _ in 0..i.op.ap_count() {
                    out.extend([None, Some(None)]);
                }
                out.extend(i.waits.iter().map(|w| Some(Some(w.sem))));
            }
            Item::Loop(l) => param_kinds(&l.body, out),
        }
    }
}

/// Periods of up to this many checkpoints of a loop are looked for: the engines of a
/// pipeline need not all move by whole iterations of their loops in one iteration of the
/// checkpointing one (a queue that serves every fourth tile), only in some whole number.
pub(super) const MAX_LAG: usize = 8;

/// A loop whose checkpoints are this many instructions apart (or more) gets a full
/// snapshot at each: the snapshot costs little beside the replay between them, and waiting
/// for the cheap figures to repeat first would delay its jump by three periods.
const ALWAYS_FULL_INSTS: u64 = 512;

/// Checkpoints kept per loop: three, `MAX_LAG` apart.
const RING: usize = 2 * MAX_LAG + 1;

/// The checkpoints of one loop: the figures of the last [`RING`], and the full states of
/// the last consecutive ones (at most [`RING`]) taken while those figures repeated with some
/// period.
#[derive(Default)]
struct History {
    light: VecDeque<Light>,
    full: VecDeque<Rc<Snapshot>>,
}

/// The steady-state observer: the checkpoints of every loop (per engine).
#[derive(Default)]
struct Steady {
    /// Keyed by (engine, loop identity).
    history: HashMap<(usize, usize), History>,
    checkpoints: u64,
    snapshots: u64,
    /// Instructions considered for a commit (replayed, and retried after a jump), and the
    /// most allowed with the program's unrolled length ([`LoopedOptions::max_replayed`]).
    considered: u64,
    limit: (u64, u64),
    /// Stops the model when set (polled every [`penguin::cancel::POLL_EVERY`] instructions).
    cancel: Option<penguin::Cancel>,
}

impl Steady {
    /// The jump that checkpoints `n - 1 - 2p`, `n - 1 - p` and `n - 1` of `s` (consecutive
    /// checkpoints of one loop) allow, if they show a repeating period.
    fn plan(r: &Replay<Looped<'_>>, s: &VecDeque<Rc<Snapshot>>, p: usize) -> Option<Jump> {
        let first = s.len().checked_sub(2 * p + 1)?;
        let (Some(s0), Some(s1), Some(s2)) = (s.get(first), s.get(first + p), s.back()) else { return None };
        let scale = s2.now;
        let (t1, t2) = (s1.at.minus(s0.at), s2.at.minus(s1.at));
        if !(t2 > 0.0 && close(t1, t2, scale)) || s0.key != s1.key || s1.key != s2.key {
            return None;
        }
        if !all_close(&s0.rel, &s1.rel, scale) || !all_close(&s1.rel, &s2.rel, scale) {
            return None;
        }
        let dbusy =
            |a: &Snapshot, b: &Snapshot| -> Vec<f64> { a.busy.iter().zip(&b.busy).map(|(x, y)| y.minus(*x)).collect() };
        let busy = dbusy(s1, s2);
        let dflops = |a: &Snapshot, b: &Snapshot| -> [f64; 4] { std::array::from_fn(|i| b.flops[i].minus(a.flops[i])) };
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
        // No semaphore may count past bir::MAX_SEMAPHORE_COUNT within the jump (the replay reports that).
        let mut periods = u64::MAX;
        for (&d, &count) in counts.iter().zip(&s2.counts) {
            if let Some(left) = bir::MAX_SEMAPHORE_COUNT.saturating_sub(count).checked_div(d) {
                periods = periods.min(left);
            }
        }
        let mut prog = Vec::with_capacity(r.src.cursors.len());
        for (e, cursor) in r.src.cursors.iter().enumerate() {
            let p = progress(s1.frames(e), s2.frames(e))?;
            if progress(s0.frames(e), s1.frames(e))? != p {
                return None;
            }
            prog.push(p);
            match p {
                Progress::Level { level, iters } => {
                    if r.src.unsafe_loops.contains(&cursor.loop_id(level)?) {
                        return None;
                    }
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
                                if let Some(left) = (w.value - 1 - count).checked_div(d) {
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
        let path = r.path.as_ref().map(|_| (Rc::clone(s0), Rc::clone(s2)));
        (periods > 0).then_some(Jump { periods, dt: t2, progress: prog, busy, next, flops, hbm, counts, path })
    }

    /// Move the replay `j.periods` periods ahead: the epoch and every tally; the local times
    /// stay (the state after the jump is the state now, `k x T` later).
    fn apply(r: &mut Replay<Looped<'_>>, j: &Jump, now: f64) -> Result<(), SimError> {
        let k = j.periods;
        let jumped = &mut r.jumped;
        jumped.epoch = jumped.epoch.add_times(k, j.dt);
        for (b, d) in jumped.busy.iter_mut().zip(&j.busy) {
            *b = b.add_times(k, *d);
        }
        for (f, d) in jumped.flops.iter_mut().zip(&j.flops) {
            *f = f.add_times(k, *d);
        }
        let per_period = j.next.iter().fold(0u64, |n, &d| n.saturating_add(d as u64));
        jumped.insts = jumped.insts.saturating_add(per_period.saturating_mul(k));
        jumped.jumps += 1;
        let kk = usize::try_from(k).unwrap_or(usize::MAX);
        for (c, d) in r.cursors.iter_mut().zip(&j.next) {
            c.next = c.next.saturating_add(kk.saturating_mul(*d));
        }
        r.hbm_bytes = r.hbm_bytes.saturating_add(j.hbm.saturating_mul(k));
        for (log, d) in r.signals.iter_mut().zip(&j.counts) {
            log.prune(now);
            log.dropped = log.dropped.saturating_add(d.saturating_mul(k));
        }
        if let (Some(path), Some((s1, s2))) = (r.path.as_mut(), &j.path) {
            let (Some(before), Some(after)) = (&s1.path, &s2.path) else {
                return Err(SimError::Internal("a checkpoint of a replay that follows its path has no path".into()));
            };
            path.shift(&mut r.signals, (before, after), 2.0, k, j.dt);
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
        self.considered += 1;
        if penguin::cancel::stopped_every(self.cancel.as_ref(), self.considered as usize) {
            return Err(SimError::Interrupted);
        }
        if self.considered > self.limit.0 {
            let replayed = self.limit.0;
            return Err(SimError::NoSteadyState { replayed, unrolled: self.limit.1 });
        }
        let Some(cursor) = r.src.cursors.get(e) else { return Ok(false) };
        let Some(first) = cursor.iteration_start() else { return Ok(false) };
        // The loops this instruction is a checkpoint of, outermost first.
        // With whether their full snapshots wait for the cheap figures to repeat.
        let mut loops: Vec<((usize, usize), bool)> = Vec::new();
        for (level, f) in cursor.frames.iter().enumerate().skip(first) {
            let stride = checkpoint_stride(f.len);
            if f.iter % stride == 0 && u64::from(f.trips) > 3 * u64::from(stride) {
                let gated = f.len.saturating_mul(u64::from(stride)) < ALWAYS_FULL_INSTS;
                loops.extend(cursor.loop_id(level).map(|id| ((e, id), gated)));
            }
        }
        if loops.is_empty() {
            return Ok(false);
        }
        // A full snapshot (hundreds of numbers) only where the cheap figures repeat.
        self.checkpoints += 1;
        let light = Light::take(r, start);
        let mut snap: Option<Rc<Snapshot>> = None;
        let mut ready = false;
        for (key, gated) in &loops {
            let h = self.history.entry(*key).or_default();
            if h.light.len() == RING {
                h.light.pop_front();
            }
            h.light.push_back(light);
            if *gated && !(1..=MAX_LAG).any(|p| Light::repeats(&h.light, p)) {
                h.full.clear();
                continue;
            }
            let s = snap.get_or_insert_with(|| Rc::new(Snapshot::take(r, start)));
            if h.full.len() == RING {
                h.full.pop_front();
            }
            h.full.push_back(Rc::clone(s));
            ready |= h.full.len() >= 3;
        }
        if snap.is_some() {
            self.snapshots += 1;
        }
        if !ready {
            return Ok(false);
        }
        for (key, _) in &loops {
            let Some(h) = self.history.get(key) else { continue };
            let lags = (1..=MAX_LAG).filter(|&p| h.full.len() > 2 * p && Light::repeats(&h.light, p));
            let Some(jump) = lags.into_iter().find_map(|p| Self::plan(r, &h.full, p)) else { continue };
            Self::apply(r, &jump, start)?;
            self.history.remove(key);
            return Ok(true);
        }
        Ok(false)
    }
}
