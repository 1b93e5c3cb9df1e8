//! What the looped model records at a checkpoint: the replay's whole state relative to the
//! current time ([`Snapshot`]), the few figures that must repeat before it is taken
//! ([`Light`]), and how the engines' cursors moved between two ([`Progress`]).

use std::collections::VecDeque;

use super::super::epoch::Dd;
use super::super::path::Charges;
use super::super::source::Looped;
use super::super::Replay;

/// The replay state at one checkpoint.
pub(super) struct Snapshot {
    /// The replay's (local) time.
    pub(super) now: f64,
    /// The program's time: `now` plus the time jumped over.
    pub(super) at: Dd,
    /// Every time of the state, relative to `now` (0 for times at or before it).
    pub(super) rel: Vec<f64>,
    /// Everything discrete: weights, lengths of the in-flight and pending lists, finished
    /// streams.
    pub(super) key: Vec<u64>,
    /// Per engine, per open loop level: (item index, iteration); the engines one after
    /// the other, engine `e`'s levels ending at `ends[e]`.
    pub(super) frames: Vec<(usize, u32)>,
    pub(super) ends: Vec<usize>,
    pub(super) busy: Vec<Dd>,
    pub(super) next: Vec<usize>,
    pub(super) flops: [Dd; 4],
    pub(super) hbm: u64,
    pub(super) counts: Vec<u64>,
    /// The critical path's charges of the steps a later instruction may step back to, when
    /// the replay follows it (not compared: they only grow).
    pub(super) path: Option<Vec<Option<Charges>>>,
}

impl Snapshot {
    pub(super) fn take(r: &Replay<Looped<'_>>, now: f64) -> Self {
        let mut times = Vec::with_capacity(128);
        for c in &r.cursors {
            times.extend([c.free_at, c.retired, c.covered_until]);
        }
        r.pe.times(&mut times);
        r.dma.times(&mut times);
        let mut key = Vec::with_capacity(64);
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
        let mut frames = Vec::with_capacity(4 * r.src.cursors.len());
        let mut ends = Vec::with_capacity(r.src.cursors.len());
        for c in &r.src.cursors {
            frames.extend(c.frames.iter().map(|f| (f.pos, f.iter)));
            ends.push(frames.len());
        }
        let j = &r.jumped;
        let local = r.pe.flops_parts();
        Snapshot {
            now,
            at: j.epoch.add(now),
            rel: times.iter().map(|&t| (t - now).max(0.0)).collect(),
            key,
            frames,
            ends,
            busy: r.cursors.iter().zip(&j.busy).map(|(c, b)| b.add(c.busy)).collect(),
            next: r.cursors.iter().map(|c| c.next).collect(),
            flops: std::array::from_fn(|i| j.flops[i].add(local[i])),
            hbm: r.hbm_bytes,
            counts: r.signals.iter().map(super::super::SemLog::count).collect(),
            path: r.path.as_ref().map(|p| p.live(&r.signals, now)),
        }
    }

    /// Engine `e`'s open levels.
    pub(super) fn frames(&self, e: usize) -> &[(usize, u32)] {
        let from = e.checked_sub(1).and_then(|p| self.ends.get(p)).copied().unwrap_or(0);
        let to = self.ends.get(e).copied().unwrap_or(from);
        self.frames.get(from..to).unwrap_or(&[])
    }
}

/// How one engine's cursor moved between two checkpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Progress {
    /// Not at all.
    Still,
    /// `iters` iterations of the loop at `level`, every other level where it was.
    Level { level: usize, iters: u32 },
}

pub(super) fn progress(a: &[(usize, u32)], b: &[(usize, u32)]) -> Option<Progress> {
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
/// local times around `scale`.
pub(super) fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-13 * scale.abs() + 1e-9 * a.abs().max(b.abs()).max(1.0)
}

pub(super) fn all_close(a: &[f64], b: &[f64], scale: f64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| close(*x, *y, scale))
}

/// The few figures of a checkpoint that the full comparison needs to repeat first: a
/// period can only repeat if these advance by the same amounts.
#[derive(Clone, Copy, Debug)]
pub(super) struct Light {
    pub(super) now: f64,
    pub(super) at: Dd,
    /// Instructions committed, signals given and HBM bytes moved, over every engine.
    pub(super) next: u64,
    pub(super) counts: u64,
    pub(super) hbm: u64,
}

impl Light {
    pub(super) fn take(r: &Replay<Looped<'_>>, now: f64) -> Self {
        Light {
            now,
            at: r.jumped.epoch.add(now),
            next: r.cursors.iter().fold(0u64, |n, c| n.wrapping_add(c.next as u64)),
            counts: r.signals.iter().fold(0u64, |n, log| n.wrapping_add(log.count())),
            hbm: r.hbm_bytes,
        }
    }

    /// Whether checkpoints `n - 1 - 2p`, `n - 1 - p` and `n - 1` (the last) of `h`
    /// advanced by the same amounts: a period of `p` checkpoints.
    pub(super) fn repeats(h: &VecDeque<Light>, p: usize) -> bool {
        let Some(first) = h.len().checked_sub(2 * p + 1) else { return false };
        let (Some(a), Some(b), Some(c)) = (h.get(first), h.get(first + p), h.back()) else { return false };
        let (t1, t2) = (b.at.minus(a.at), c.at.minus(b.at));
        t2 > 0.0
            && close(t1, t2, c.now)
            && b.next.wrapping_sub(a.next) == c.next.wrapping_sub(b.next)
            && b.counts.wrapping_sub(a.counts) == c.counts.wrapping_sub(b.counts)
            && b.hbm.wrapping_sub(a.hbm) == c.hbm.wrapping_sub(b.hbm)
    }
}
