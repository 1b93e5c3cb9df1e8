//! The critical path followed forward, as the replay commits: the walk of
//! [`critical_path`](crate::critical_path) without keeping a slice per instruction, so a
//! looped program's model finds its bottleneck without unrolling it.
//!
//! The backward walk steps from an instruction to the one it waited for, chosen from that
//! instruction alone: the signaller of its binding wait when semaphores held it, otherwise
//! the instruction of its stream that kept the engine busy. So the charges of the walk up to
//! an instruction's start are those up to its predecessor's start, plus the predecessor's
//! time up to that start and the idle gap between them. The replay keeps those charges for
//! the instructions a later one may step back to: the last few of each stream, and the
//! signaller of every semaphore count still in its log.
//!
//! The times are local, as the replay's are. A steady-state jump of `k` periods of `T` moves
//! every instruction a later one may step back to by `k` periods: its charges grow by `k`
//! times what they grew by per period over the last two (from its counterpart two periods
//! before, at the checkpoints that showed the period: the periods repeat, and so does the
//! path through them; two, because a path through near-ties may alternate), and by
//! idle for whatever of `k x T` that growth does not cover (an engine that did not move in
//! the period: the real walk from after the jump would cross the whole gap idle).

use bir::{BirInst, Engine, SemId};

use super::signals::SemLog;
use super::source::Source;
use super::Replay;
use crate::report::timeline::critical::{class_index, from_charges, CLASSES, IDLE, LOOKBACK};
use crate::CriticalPath;

/// Time per class of [`CLASSES`].
pub(super) type Charges = [f64; CLASSES.len()];

/// A committed instruction as the path sees it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Step {
    /// The path's charges from the program start to `start`.
    to_start: Charges,
    start: f64,
    end: f64,
    class: usize,
}

impl Step {
    /// The path's charges up to `t` (not before `start`) through this instruction: its time
    /// up to `t`, and idle from its end to `t`.
    fn charges_to(&self, t: f64) -> Charges {
        let mut c = self.to_start;
        let end = self.end.min(t);
        if end < t {
            c[IDLE] += t - end;
        }
        c[self.class] += (end - self.start).max(0.0);
        c
    }
}

/// The forward walk's state.
#[derive(Clone, Debug)]
pub(super) struct PathTrack {
    /// Per stream, its last [`LOOKBACK`] steps, the latest at `head`.
    recent: Vec<[Option<Step>; LOOKBACK]>,
    head: Vec<usize>,
    /// The step that ended last (the later commit among ties).
    last: Option<Step>,
}

impl PathTrack {
    pub(super) fn new(streams: usize) -> Self {
        PathTrack { recent: vec![[None; LOOKBACK]; streams], head: vec![0; streams], last: None }
    }

    /// The step of an instruction of stream `e` on `engine` that ran from `start` to `end`,
    /// after `released` (the signaller of its binding wait, when semaphores held it).
    pub(super) fn step(&self, e: usize, engine: Engine, start: f64, end: f64, released: Option<Option<Step>>) -> Step {
        let pred = match released {
            Some(by) => by,
            None => {
                // Of the few before it in its stream, the one that ended last by its start
                // (the oldest among ties, as the backward walk's `max_by`); the last one if it
                // started later than that one ended, or none did.
                let ring = self.recent.get(e);
                let at = |back: usize| {
                    let head = *self.head.get(e)?;
                    ring?[(head + LOOKBACK - back) % LOOKBACK]
                };
                let mut best: Option<Step> = None;
                for back in 0..LOOKBACK {
                    let Some(s) = at(back) else { break };
                    if s.end <= start + 1e-6 && best.is_none_or(|b| s.end >= b.end) {
                        best = Some(s);
                    }
                }
                match (best, at(0)) {
                    (Some(b), Some(p)) if p.start > b.end => Some(p),
                    (Some(b), _) => Some(b),
                    (None, p) => p,
                }
            }
        };
        let to_start = match pred.filter(|p| p.start <= start) {
            Some(p) => p.charges_to(start),
            None => {
                let mut c = [0.0; CLASSES.len()];
                c[IDLE] = start.max(0.0);
                c
            }
        };
        Step { to_start, start, end, class: class_index(engine) }
    }

    /// Record `step` as stream `e`'s latest.
    pub(super) fn push(&mut self, e: usize, step: Step) {
        if let (Some(ring), Some(head)) = (self.recent.get_mut(e), self.head.get_mut(e)) {
            *head = (*head + 1) % LOOKBACK;
            ring[*head] = Some(step);
        }
        if self.last.is_none_or(|l| step.end >= l.end) {
            self.last = Some(step);
        }
    }

    /// The charges of every step a later instruction may step back to, at `now`, in the
    /// order [`PathTrack::shift`] walks them: each stream's last steps, latest first; the
    /// latest-ending step; per semaphore, the signaller of its last count reached by `now`
    /// and those of the counts after it.
    pub(super) fn live(&self, signals: &[SemLog], now: f64) -> Vec<Option<Charges>> {
        let mut out = Vec::with_capacity(self.recent.len() * LOOKBACK + 1 + 2 * signals.len());
        for (ring, &head) in self.recent.iter().zip(&self.head) {
            out.extend((0..LOOKBACK).map(|back| ring[(head + LOOKBACK - back) % LOOKBACK].map(|s| s.to_start)));
        }
        out.push(self.last.map(|s| s.to_start));
        for log in signals {
            let reached = log.times.partition_point(|&t| t <= now);
            let steps = &log.path.steps;
            let dropped = reached.checked_sub(1).and_then(|i| steps.get(i)).copied().or(log.path.dropped);
            out.push(dropped.map(|s| s.to_start));
            out.extend(steps.iter().skip(reached).map(|s| Some(s.to_start)));
        }
        out
    }

    /// Move the steps of [`PathTrack::live`] `k` periods of `dt` ahead, after the logs were
    /// pruned at the jump's time: each by `k` times its growth per period (`before` and
    /// `after`: [`PathTrack::live`] `span` periods apart), plus idle
    /// for the rest of `k x dt`. Steps without a counterpart cross the jump idle.
    pub(super) fn shift(
        &mut self,
        signals: &mut [SemLog],
        (before, after): (&[Option<Charges>], &[Option<Charges>]),
        span: f64,
        k: u64,
        dt: f64,
    ) {
        let k = k as f64;
        let growth: Vec<Option<Charges>> = if before.len() == after.len() {
            before
                .iter()
                .zip(after)
                .map(|(b, a)| {
                    let (b, a) = (b.as_ref()?, a.as_ref()?);
                    Some(std::array::from_fn(|c| (a[c] - b[c]) / span))
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut slot = 0usize;
        let mut next = |step: Option<&mut Step>| {
            let g = growth.get(slot).copied().flatten().unwrap_or([0.0; CLASSES.len()]);
            slot += 1;
            let Some(step) = step else { return };
            for (c, g) in step.to_start.iter_mut().zip(g) {
                *c += k * g;
            }
            step.to_start[IDLE] += k * (dt - g.iter().sum::<f64>()).max(0.0);
        };
        for (ring, &head) in self.recent.iter_mut().zip(&self.head) {
            // Latest first, as `live` lists them.
            let order: [usize; LOOKBACK] = std::array::from_fn(|back| (head + LOOKBACK - back) % LOOKBACK);
            for &i in &order {
                next(ring[i].as_mut());
            }
        }
        next(self.last.as_mut());
        for log in signals {
            next(log.path.dropped.as_mut());
            for step in &mut log.path.steps {
                next(Some(step));
            }
        }
    }

    /// The critical path of a replay that ran to `local_total` (its local time) and is
    /// `total_ns` long.
    pub(super) fn finish(&self, local_total: f64, total_ns: f64) -> CriticalPath {
        let c = match self.last {
            Some(l) => l.charges_to(local_total),
            None => {
                let mut c = [0.0; CLASSES.len()];
                c[IDLE] = local_total.max(0.0);
                c
            }
        };
        from_charges(c, total_ns)
    }
}

impl<S: Source> Replay<S> {
    /// Follow the critical path as the replay commits (see the `path` module).
    pub(super) fn follow_path(mut self) -> Self {
        self.path = Some(PathTrack::new(self.engines.len()));
        self
    }

    /// What released engine `e`'s next instruction, for the path: `None` when semaphores
    /// did not hold it (`wait_ns == 0`), else the signaller of its binding wait (the one
    /// whose count was reached last, the first among ties), if any.
    pub(super) fn released(&self, inst: &BirInst, wait_ns: f64) -> Option<Option<Step>> {
        if wait_ns <= 0.0 {
            return None;
        }
        let mut latest: Option<(f64, SemId, u64)> = None;
        for w in inst.waits.iter().filter(|w| w.value > 0) {
            if let Some(t) = self.reached(w.sem, w.value) {
                if latest.is_none_or(|(lt, _, _)| t > lt) {
                    latest = Some((t, w.sem, w.value));
                }
            }
        }
        Some(latest.and_then(|(_, sem, value)| self.signals.get(sem.0 as usize)?.step_of(value)))
    }
}

/// The steps a semaphore's log keeps beside its signal times.
#[derive(Clone, Debug, Default)]
pub(super) struct SignalSteps {
    /// The step behind each time of the log, in the same order.
    pub(super) steps: Vec<Step>,
    /// The latest of those dropped with the log's front.
    pub(super) dropped: Option<Step>,
}
