//! The race detector: vector clocks over engines and a pruned log of memory accesses.
//!
//! Each engine ticks its own clock component once per instruction. A signal stores the
//! signaller's clock for the value the semaphore reaches (joined with the clock stored for
//! the value before, since reaching `v` implies every earlier increment happened); a wait
//! joins the clock stored for the value it waited for. An access races with an earlier one
//! on another engine when their byte boxes overlap, at least one writes, and the later
//! engine's clock has not seen the earlier access.
//!
//! The log stays small: an entry is dropped once every engine that still has instructions
//! to run has seen it (no future access can race with it), or when a later write that is
//! ordered after it covers its box (a future access racing with it races with that write),
//! or when a later read by the same engine covers an earlier read of its.

use std::fmt;

use penguin::Memory;
use serde::Serialize;

use crate::error::InstRef;
use crate::memory::ByteBox;

/// A vector clock of a one-core run: one component per engine (a chip's run has
/// [`bir::NUM_ENGINES`] per core, as slices).
#[cfg(test)]
pub(crate) type Clock = [u32; bir::NUM_ENGINES];

/// Join `other` into `clock` (component-wise maximum).
pub(crate) fn join(clock: &mut [u32], other: &[u32]) {
    for (c, o) in clock.iter_mut().zip(other) {
        *c = (*c).max(*o);
    }
}

/// Races kept per run; further races are only counted.
pub const MAX_REPORTED_RACES: usize = 1000;

/// One side of a race.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RaceAccess {
    /// The instruction.
    pub at: InstRef,
    /// Whether it writes the bytes.
    pub write: bool,
    /// The physical core whose program holds it (0 for a one-core program; absent from the
    /// JSON then).
    #[serde(skip_serializing_if = "is_zero")]
    pub core: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl fmt::Display for RaceAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rw = if self.write { "write" } else { "read" };
        match self.core {
            0 => write!(f, "{} ({rw})", self.at),
            c => write!(f, "core{c}.{} ({rw})", self.at),
        }
    }
}

/// Two accesses to overlapping bytes on different engines, at least one a write, that no
/// semaphore orders.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Race {
    /// The memory.
    pub memory: Memory,
    /// Partitions `[start, end)` both touch (HBM: `(0, 1)`).
    pub partitions: (u32, u32),
    /// The common part of the two accesses' byte ranges `[start, end)`, within a partition
    /// on chip, absolute in HBM (a bounding range: strided accesses may share only some of
    /// these bytes).
    pub bytes: (i64, i64),
    /// The access that ran first in the simulation.
    pub earlier: RaceAccess,
    /// The access that ran later.
    pub later: RaceAccess,
}

impl fmt::Display for Race {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = if self.earlier.core == self.later.core {
            "are not ordered by a semaphore"
        } else {
            "run on different cores, which nothing orders"
        };
        write!(
            f,
            "race on {} partitions {}..{} bytes {}..{}: {} and {} {why}",
            self.memory, self.partitions.0, self.partitions.1, self.bytes.0, self.bytes.1, self.earlier, self.later
        )
    }
}

#[derive(Clone, Copy, Debug)]
struct Record {
    at: InstRef,
    engine: usize,
    time: u32,
    bx: ByteBox,
    write: bool,
}

/// The access log of one run.
#[derive(Default)]
pub(crate) struct RaceLog {
    /// Live entries per memory (HBM, SBUF, PSUM).
    logs: [Vec<Record>; 3],
    /// Races found, at most [`MAX_REPORTED_RACES`].
    pub races: Vec<Race>,
    /// Races found beyond the cap.
    pub dropped: u64,
}

fn slot(m: Memory) -> usize {
    match m {
        Memory::Hbm => 0,
        Memory::Sbuf => 1,
        Memory::Psum => 2,
    }
}

impl RaceLog {
    /// Record an access by `at` (engine index `engine`, whose clock is `clock`) and report
    /// every earlier access it races with. `first_of_inst` is the index in `races` where
    /// the current instruction's reports begin, to report each pair once.
    #[allow(clippy::too_many_arguments)]
    pub fn access(
        &mut self,
        memory: Memory,
        bx: ByteBox,
        write: bool,
        at: InstRef,
        engine: usize,
        clock: &[u32],
        first_of_inst: usize,
    ) {
        let time = clock[engine];
        let log = &mut self.logs[slot(memory)];
        for r in log.iter() {
            if r.engine != engine && (write || r.write) && clock[r.engine] < r.time && r.bx.overlaps(&bx) {
                let (partitions, bytes) = bx.common_bounds(&r.bx);
                let race = Race {
                    memory,
                    partitions,
                    bytes,
                    earlier: RaceAccess { at: r.at, write: r.write, core: 0 },
                    later: RaceAccess { at, write, core: 0 },
                };
                let seen = self.races[first_of_inst.min(self.races.len())..]
                    .iter()
                    .any(|x| x.earlier.at == race.earlier.at && x.memory == memory);
                if seen {
                    continue;
                }
                if self.races.len() < MAX_REPORTED_RACES {
                    self.races.push(race);
                } else {
                    self.dropped += 1;
                }
            }
        }
        log.retain(|r| {
            let ordered = r.engine == engine || clock[r.engine] >= r.time;
            let superseded = if write { ordered } else { r.engine == engine && !r.write };
            !(superseded && bx.covers(&r.bx))
        });
        log.push(Record { at, engine, time, bx, write });
    }

    /// Drop every entry that all engines still running have seen (`seen[e]` is the smallest
    /// clock component for engine `e` among them).
    pub fn prune(&mut self, seen: &[u32]) {
        for log in &mut self.logs {
            log.retain(|r| r.time > seen[r.engine]);
        }
    }

    /// Live entries, for tests of the pruning.
    #[cfg(test)]
    pub fn live(&self) -> usize {
        self.logs.iter().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bir::{Engine, NUM_ENGINES};

    fn bx(lo: i64, hi: i64) -> ByteBox {
        ByteBox::new(0, 128, lo, 1, 0, hi - lo)
    }

    fn at(e: usize, index: usize) -> InstRef {
        InstRef { engine: Engine::from_index(e).unwrap(), index }
    }

    #[test]
    fn unordered_writes_race_and_ordered_ones_do_not() {
        let mut log = RaceLog::default();
        let mut a: Clock = [0; NUM_ENGINES];
        let mut b: Clock = [0; NUM_ENGINES];
        a[5] = 1;
        log.access(Memory::Sbuf, bx(0, 64), true, at(5, 0), 5, &a, 0);
        b[6] = 1;
        log.access(Memory::Sbuf, bx(32, 96), true, at(6, 0), 6, &b, 0);
        assert_eq!(log.races.len(), 1);
        assert_eq!(log.races[0].bytes, (32, 64));
        // b learns about a (as by a semaphore); a third write by b is ordered after both.
        join(&mut b, &a);
        b[6] = 2;
        let n = log.races.len();
        log.access(Memory::Sbuf, bx(0, 128), true, at(6, 1), 6, &b, n);
        assert_eq!(log.races.len(), 1);
        assert_eq!(log.live(), 1, "the covering ordered write replaces both entries");
        // Reads never race with reads.
        let mut c: Clock = [0; NUM_ENGINES];
        c[0] = 1;
        log.access(Memory::Hbm, bx(0, 8), false, at(0, 0), 0, &c, 1);
        a[5] = 2;
        log.access(Memory::Hbm, bx(0, 8), false, at(5, 1), 5, &a, 1);
        assert_eq!(log.races.len(), 1);
        let mut seen: Clock = [u32::MAX; NUM_ENGINES];
        seen[0] = 1;
        seen[5] = 1;
        log.prune(&seen);
        assert_eq!(log.live(), 1, "only the read not yet seen by everyone stays");
    }
}
