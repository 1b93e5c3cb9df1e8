//! Running a [`Chip`]: the programs of the physical cores of one logical NeuronCore on one
//! shared HBM image, each core with its own SBUF, PSUM and semaphores.
//!
//! Nothing orders one core's instructions against another's, so a race-free chip computes
//! the same bytes whatever the interleaving of its cores; [`ChipSimulator::run`] runs them one
//! after the other (core 0 first), handing the HBM image on, and keeps every HBM access of
//! each core. Two accesses of different cores to a common HBM byte, at least one a write,
//! are a race: [`ChipStats::races`] lists them with the cores' own races (each side naming
//! its core).

use bir::{Chip, InstRef};
use penguin::Memory;

use crate::error::SimError;
use crate::memory::ByteBox;
use crate::race::{Race, RaceAccess, MAX_REPORTED_RACES};
use crate::simulator::{RunStats, Simulator};

/// The HBM accesses of one run of one core: each distinct box once, with the first
/// instruction that touched it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Footprint {
    reads: Vec<(ByteBox, InstRef)>,
    writes: Vec<(ByteBox, InstRef)>,
    seen: std::collections::HashSet<(bool, i64, u64, i64, i64)>,
}

impl Footprint {
    /// Record an access of `bx` by `at`.
    pub(crate) fn record(&mut self, bx: ByteBox, write: bool, at: InstRef) {
        if self.seen.insert((write, bx.start, bx.rows, bx.stride, bx.width)) {
            if write { &mut self.writes } else { &mut self.reads }.push((bx, at));
        }
    }
}

/// What one [`ChipSimulator::run`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ChipStats {
    /// Each core's run (its own races have `core` set on both sides).
    pub cores: Vec<RunStats>,
    /// Every race: each core's own, then those between cores (at most
    /// [`MAX_REPORTED_RACES`]).
    pub races: Vec<Race>,
    /// Races found beyond the reported ones.
    pub races_dropped: u64,
}

impl ChipStats {
    /// Instructions executed over every core.
    pub fn instructions(&self) -> u64 {
        self.cores.iter().map(|c| c.instructions).sum()
    }

    /// The statistics of every core added up (races: [`ChipStats::races`]).
    pub fn total(&self) -> RunStats {
        let mut t = RunStats::default();
        for c in &self.cores {
            t.instructions += c.instructions;
            t.matmuls += c.matmuls;
            t.dma_bytes += c.dma_bytes;
            t.hbm_read_bytes += c.hbm_read_bytes;
            t.hbm_write_bytes += c.hbm_write_bytes;
        }
        t.races.clone_from(&self.races);
        t.races_dropped = self.races_dropped;
        t
    }
}

/// A functional simulator of a [`Chip`]: one [`Simulator`] per core and one HBM image, which
/// core 0's simulator holds between runs.
pub struct ChipSimulator {
    cores: Vec<Simulator>,
}

impl ChipSimulator {
    /// A simulator for `chip` (checked by [`bir::verify_chip`] first; an unverified chip's
    /// errors surface as the simulator's): HBM zeroed, SBUF and PSUM of every core `0xFF`.
    pub fn new(chip: &Chip) -> ChipSimulator {
        let cores = chip
            .cores
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut sim = if i == 0 { Simulator::new(p) } else { Simulator::without_hbm(p) };
                if chip.cores.len() > 1 {
                    sim.keep_footprint();
                }
                sim
            })
            .collect();
        ChipSimulator { cores }
    }

    /// Core 0's simulator, which holds the shared HBM image: write the inputs and read the
    /// outputs through it.
    pub fn hbm(&mut self) -> Result<&mut Simulator, SimError> {
        self.cores.first_mut().ok_or_else(|| SimError::Internal("a chip without cores".into()))
    }

    /// Stop a run when `cancel` is set (see [`Simulator::set_cancel`]).
    pub fn set_cancel(&mut self, cancel: Option<&penguin::Cancel>) {
        for c in &mut self.cores {
            c.set_cancel(cancel.cloned());
        }
    }

    /// Compute PE products on `threads` threads (see [`Simulator::set_threads`]).
    pub fn set_threads(&mut self, threads: usize) {
        for c in &mut self.cores {
            c.set_threads(threads);
        }
    }

    /// Run every core, core 0 first, on the shared HBM image; then find the races between
    /// cores.
    pub fn run(&mut self) -> Result<ChipStats, SimError> {
        if let Some(e) = self.cores.first().and_then(Simulator::alloc_error) {
            return Err(e.clone());
        }
        let mut stats = ChipStats::default();
        let n = self.cores.len();
        let mut prints = Vec::with_capacity(n);
        // The image travels from core to core and goes back to core 0 whatever happens.
        let mut hbm = Vec::new();
        self.cores[0].swap_hbm(&mut hbm);
        let mut failed = None;
        for (i, sim) in self.cores.iter_mut().enumerate() {
            sim.swap_hbm(&mut hbm);
            let result = sim.run();
            sim.swap_hbm(&mut hbm);
            match result {
                Ok(mut run) => {
                    for r in &mut run.races {
                        r.earlier.core = i as u32;
                        r.later.core = i as u32;
                    }
                    stats.races.extend(run.races.iter().cloned());
                    stats.races_dropped += run.races_dropped;
                    stats.cores.push(run);
                    prints.push(sim.take_footprint().unwrap_or_default());
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        self.cores[0].swap_hbm(&mut hbm);
        if let Some(e) = failed {
            return Err(e);
        }
        for a in 0..n {
            for b in a + 1..n {
                cross_races(&prints[a], a as u32, &prints[b], b as u32, &mut stats);
            }
        }
        Ok(stats)
    }
}

/// The races between core `ca`'s accesses and core `cb`'s: writes of either against every
/// access of the other.
fn cross_races(a: &Footprint, ca: u32, b: &Footprint, cb: u32, stats: &mut ChipStats) {
    let side = |(_, at): &(ByteBox, InstRef), write, core| RaceAccess { at: *at, write, core };
    let mut found = |x: &(ByteBox, InstRef), xw: bool, y: &(ByteBox, InstRef), yw: bool| {
        if stats.races.len() >= MAX_REPORTED_RACES {
            stats.races_dropped += 1;
            return;
        }
        let (partitions, bytes) = x.0.common_bounds(&y.0);
        stats.races.push(Race {
            memory: Memory::Hbm,
            partitions,
            bytes,
            earlier: side(x, xw, ca),
            later: side(y, yw, cb),
        });
    };
    overlapping(&a.writes, &b.writes, &mut |x, y| found(x, true, y, true));
    overlapping(&a.writes, &b.reads, &mut |x, y| found(x, true, y, false));
    overlapping(&a.reads, &b.writes, &mut |x, y| found(x, false, y, true));
}

/// Call `f` on every pair of boxes, one from each list, that share a byte: a sweep over
/// the boxes in order of their first byte, each list keeping the boxes still open.
/// Called with each pair of boxes that overlap.
type OnOverlap<'a, T> = dyn FnMut(&(ByteBox, T), &(ByteBox, T)) + 'a;

fn overlapping<T>(xs: &[(ByteBox, T)], ys: &[(ByteBox, T)], f: &mut OnOverlap<'_, T>) {
    if xs.is_empty() || ys.is_empty() {
        return;
    }
    let mut events: Vec<(i64, bool, usize)> = xs
        .iter()
        .enumerate()
        .map(|(i, x)| (x.0.lo(), false, i))
        .chain(ys.iter().enumerate().map(|(i, y)| (y.0.lo(), true, i)))
        .collect();
    events.sort_unstable();
    // Only the list being checked against is pruned, so each box is compared with the
    // open boxes of the other list when it opens.
    let (mut open_x, mut open_y): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    for (lo, is_y, i) in events {
        if is_y {
            open_x.retain(|&k| xs[k].0.hi() > lo);
            for &k in &open_x {
                if xs[k].0.overlaps(&ys[i].0) {
                    f(&xs[k], &ys[i]);
                }
            }
            open_y.push(i);
        } else {
            open_y.retain(|&k| ys[k].0.hi() > lo);
            for &k in &open_y {
                if xs[i].0.overlaps(&ys[k].0) {
                    f(&xs[i], &ys[k]);
                }
            }
            open_x.push(i);
        }
    }
}
