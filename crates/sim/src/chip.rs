//! Running a [`Chip`]: the programs of the physical cores of one logical NeuronCore on one
//! shared HBM image, each core with its own SBUF, PSUM and semaphores.
//!
//! Only the chip's shared semaphores ([`bir::Chip::shared`]) order one core's instructions
//! against another's, so a race-free chip computes the same bytes whatever the interleaving
//! of its cores. [`ChipSimulator::run`] runs each core, core 0 first, until every stream of
//! it waits, then the next, handing the HBM image and the shared semaphores on, until every
//! core is done (a chip without shared semaphores runs its cores one after the other), and
//! keeps every HBM access of each core. Two accesses of different cores to a common HBM
//! byte, at least one a write, that no shared semaphore orders are a race:
//! [`ChipStats::races`] lists them with the cores' own races (each side naming its core).

use bir::{Chip, InstRef};
use penguin::Memory;

use crate::error::SimError;
use crate::memory::ByteBox;
use crate::race::{Race, RaceAccess, MAX_REPORTED_RACES};
use crate::simulator::{with_workers, CoreRun, RunStats, Simulator, Slice};

/// One HBM access of a core: the instruction and, when the chip's cores share semaphores,
/// its clock component and the clock it ran with (what it had seen of every core).
#[derive(Clone, Debug)]
pub(crate) struct Access {
    at: InstRef,
    engine: usize,
    clock: Option<Box<[u32]>>,
}

impl Access {
    /// Whether `self` happened before `other` (or after it): one's clock has seen the other.
    fn ordered_with(&self, other: &Access) -> bool {
        let seen = |x: &Access, y: &Access| match (&x.clock, &y.clock) {
            (Some(xc), Some(yc)) => {
                yc.get(x.engine).copied().unwrap_or(0) >= xc.get(x.engine).copied().unwrap_or(u32::MAX)
            }
            _ => false,
        };
        seen(self, other) || seen(other, self)
    }
}

/// The HBM accesses of one run of one core. Without shared semaphores nothing orders them
/// against another core's, so each distinct box is kept once, with the first instruction
/// that touched it; with them, every access is kept with its clock.
#[derive(Clone, Debug, Default)]
pub(crate) struct Footprint {
    ordered: bool,
    reads: Vec<(ByteBox, Access)>,
    writes: Vec<(ByteBox, Access)>,
    seen: std::collections::HashSet<(bool, i64, u64, i64, i64)>,
}

impl Footprint {
    /// Record an access of `bx` by `at`, whose clock component is `engine` of `clock`.
    pub(crate) fn record(&mut self, bx: ByteBox, write: bool, at: InstRef, engine: usize, clock: &[u32]) {
        let access = if self.ordered {
            Access { at, engine, clock: Some(clock.into()) }
        } else if self.seen.insert((write, bx.start, bx.rows, bx.stride, bx.width)) {
            Access { at, engine, clock: None }
        } else {
            return;
        };
        if write { &mut self.writes } else { &mut self.reads }.push((bx, access));
    }

    /// Keep every access with its clock (`true`) or each box once.
    pub(crate) fn set_ordered(&mut self, ordered: bool) {
        self.ordered = ordered;
    }

    /// Forget every access (a new run begins), keeping whether accesses are ordered.
    pub(crate) fn clear(&mut self) {
        *self = Footprint { ordered: self.ordered, ..Footprint::default() };
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
    /// For each core, the chip-wide index of each of its semaphores (the shared ones first).
    table: Vec<Vec<usize>>,
    shared: usize,
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
                    sim.keep_footprint(!chip.shared.is_empty());
                }
                sim
            })
            .collect();
        ChipSimulator { cores, table: chip.semaphore_table().0, shared: chip.shared.len() }
    }

    /// Core 0's simulator, which holds the shared HBM image: write the inputs and read the
    /// outputs through it.
    pub fn hbm(&mut self) -> Result<&mut Simulator, SimError> {
        self.cores.first_mut().ok_or_else(|| SimError::Internal("a chip without cores".into()))
    }

    /// Core 0's simulator, which holds the shared HBM image, with the other cores' memory
    /// freed (to read the outputs with [`Simulator::into_hbm_f32`]).
    pub fn into_hbm(self) -> Result<Simulator, SimError> {
        self.cores.into_iter().next().ok_or_else(|| SimError::Internal("a chip without cores".into()))
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

    /// Run every core on the shared HBM image, each until it waits (see the module docs);
    /// then find the races between cores.
    pub fn run(&mut self) -> Result<ChipStats, SimError> {
        if let Some(e) = self.cores.first().and_then(Simulator::alloc_error) {
            return Err(e.clone());
        }
        let n = self.cores.len();
        let mut runs = self
            .cores
            .iter()
            .enumerate()
            .map(|(c, sim)| CoreRun::new(sim.program(), n, c))
            .collect::<Result<Vec<_>, _>>()?;
        let (table, shared) = (&self.table, self.shared);
        with_workers(&mut self.cores, |sims| interleave(sims, &mut runs, table, shared))?;
        let mut stats = ChipStats::default();
        let mut prints = Vec::with_capacity(n);
        for (i, (sim, run)) in self.cores.iter_mut().zip(runs).enumerate() {
            let mut run = sim.finish(run);
            for r in &mut run.races {
                r.earlier.core = i as u32;
                r.later.core = i as u32;
            }
            stats.races.extend(run.races.iter().cloned());
            stats.races_dropped += run.races_dropped;
            stats.cores.push(run);
            prints.push(sim.take_footprint().unwrap_or_default());
        }
        for a in 0..n {
            for b in a + 1..n {
                cross_races(&prints[a], a as u32, &prints[b], b as u32, &mut stats);
            }
        }
        Ok(stats)
    }
}

/// Run slices of every core in turn, core 0 first, until all are done; a round in which no
/// core moves is a deadlock. The HBM image goes to the running core and back to core 0
/// whatever happens; the shared semaphores' counts and clocks go to the running core for
/// its slice.
fn interleave(
    sims: &mut [Simulator],
    runs: &mut [CoreRun],
    table: &[Vec<usize>],
    shared: usize,
) -> Result<(), SimError> {
    let mut hbm = Vec::new();
    let first = sims.first_mut().ok_or_else(|| SimError::Internal("a chip without cores".into()))?;
    first.swap_hbm(&mut hbm);
    let mut counts = vec![0u64; shared];
    let mut clocks: Vec<Vec<u32>> = vec![Vec::new(); shared];
    let mut result = Ok(());
    let mut done = vec![false; sims.len()];
    'rounds: loop {
        let (mut progressed, mut stuck) = (false, Vec::new());
        for (c, (sim, run)) in sims.iter_mut().zip(runs.iter_mut()).enumerate() {
            if done[c] {
                continue;
            }
            let mine = table.get(c).map_or(&[][..], Vec::as_slice);
            let hand = |run: &mut CoreRun, counts: &mut [u64], clocks: &mut [Vec<u32>]| {
                for (s, &g) in mine.iter().enumerate().filter(|(_, &g)| g < shared) {
                    std::mem::swap(&mut run.sem_count[s], &mut counts[g]);
                    std::mem::swap(&mut run.sem_clock[s], &mut clocks[g]);
                }
            };
            hand(run, &mut counts, &mut clocks);
            sim.swap_hbm(&mut hbm);
            let slice = sim.run_slice(run);
            sim.swap_hbm(&mut hbm);
            hand(run, &mut counts, &mut clocks);
            match slice {
                Ok(Slice::Finished) => (done[c], progressed) = (true, true),
                Ok(Slice::Blocked { progressed: p, stuck: s }) => {
                    progressed |= p;
                    stuck.extend(s.into_iter().map(|s| crate::error::Stuck { core: c as u32, ..s }));
                }
                Err(e) => {
                    result = Err(e);
                    break 'rounds;
                }
            }
        }
        if done.iter().all(|&d| d) {
            break;
        }
        if !progressed {
            result = Err(SimError::Deadlock { stuck });
            break;
        }
    }
    if let Some(first) = sims.first_mut() {
        first.swap_hbm(&mut hbm);
    }
    result
}

/// The races between core `ca`'s accesses and core `cb`'s: writes of either against every
/// access of the other.
fn cross_races(a: &Footprint, ca: u32, b: &Footprint, cb: u32, stats: &mut ChipStats) {
    let side = |(_, x): &(ByteBox, Access), write, core| RaceAccess { at: x.at, write, core };
    let mut found = |x: &(ByteBox, Access), xw: bool, y: &(ByteBox, Access), yw: bool| {
        if x.1.ordered_with(&y.1) {
            return;
        }
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
