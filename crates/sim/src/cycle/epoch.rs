//! What the steady-state jumps of the looped cycle model skipped: time, busy time and FLOPs,
//! held apart from the replay's own figures in double-double precision.
//!
//! A jump does not move the replay's times: the state after `k` periods is the state before
//! them with every time `k x T` later, so the jump adds `k x T` to an *epoch* and leaves the
//! replay's (local) times alone. Local times then only grow with what is replayed, and stay
//! small: their rounding, and so the tolerance of the steady-state comparisons, is that of a
//! short replay, however long the modeled program. The epoch and the other skipped tallies
//! are sums of many products `k x delta` of very different sizes, kept as [`Dd`] pairs so that
//! the difference of two of them (the period of an outer loop whose iterations hold inner
//! jumps) is as exact as the local figures.
//!
//! Also here: what a finished replay reports besides its figures ([`Ran`]), and the limit of
//! a semaphore's count that only a looped program can reach.

use bir::SemId;

use super::{CycleReport, Replay, SemLog};
use crate::error::{InstRef, SimError};

/// A number held as the unevaluated sum `hi + lo` with `|lo| <= ulp(hi) / 2` (a
/// double-double): about 106 bits of precision.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Dd {
    hi: f64,
    lo: f64,
}

impl Dd {
    /// `self + x`, keeping the rounding error of the sum.
    pub(super) fn add(self, x: f64) -> Dd {
        // Knuth's two-sum, then a fast two-sum to renormalize.
        let s = self.hi + x;
        let b = s - self.hi;
        let err = (self.hi - (s - b)) + (x - b);
        let lo = self.lo + err;
        let hi = s + lo;
        Dd { hi, lo: lo - (hi - s) }
    }

    /// `self + k x x`, the product's rounding error kept (exact for `k < 2^53`).
    pub(super) fn add_times(self, k: u64, x: f64) -> Dd {
        let kf = k as f64;
        let p = kf * x;
        let err = kf.mul_add(x, -p);
        self.add(p).add(err)
    }

    /// `self + other`.
    pub(super) fn add_dd(self, other: Dd) -> Dd {
        self.add(other.hi).add(other.lo)
    }

    /// `self - other`, rounded to an `f64`.
    pub(super) fn minus(self, other: Dd) -> f64 {
        (self.hi - other.hi) + (self.lo - other.lo)
    }

    /// The value, rounded to an `f64`.
    pub(super) fn value(self) -> f64 {
        self.hi + self.lo
    }
}

/// The tallies of every jump so far (all zero for a replay without jumps).
#[derive(Clone, Debug, Default)]
pub(super) struct Jumped {
    /// Time skipped: every local time of the replay is this much later in the program.
    pub(super) epoch: Dd,
    /// Busy time skipped per engine.
    pub(super) busy: Vec<Dd>,
    /// FLOPs skipped per matmul flavour (as [`super::pe::PeState`] counts them).
    pub(super) flops: [Dd; 4],
    /// Instructions skipped.
    pub(super) insts: u64,
    /// Jumps made.
    pub(super) jumps: u64,
}

impl Jumped {
    pub(super) fn new(engines: usize) -> Self {
        Jumped { busy: vec![Dd::default(); engines], ..Jumped::default() }
    }
}

/// A finished replay: its report, and how it got there.
pub(super) struct Ran {
    pub(super) report: CycleReport,
    /// Instructions committed one by one.
    pub(super) replayed: u64,
    /// Instructions jumped over, and the jumps.
    pub(super) skipped: u64,
    pub(super) jumps: u64,
    /// Each core's report, for a chip of several cores (empty otherwise).
    pub(super) cores: Vec<CycleReport>,
    /// Time the cores' shared HBM budget was busy (0 for one core).
    pub(super) shared_busy_ns: f64,
    /// The critical path, when the replay followed it.
    pub(super) critical: Option<crate::CriticalPath>,
}

impl<S> Replay<S> {
    /// A semaphore counts at most [`bir::MAX_SEMAPHORE_COUNT`] signals (the largest wait a looped
    /// program can express): a signal past it is an error at the instruction that gave it
    /// (engine `e`'s last committed one). (An unrolled program cannot hold that many signals.)
    pub(super) fn check_count(&self, e: usize, sem: SemId) -> Result<(), SimError> {
        let count = self.signals.get(sem.0 as usize).map_or(0, SemLog::count);
        if count <= bir::MAX_SEMAPHORE_COUNT {
            return Ok(());
        }
        let at = InstRef { engine: self.engines[e], index: self.cursors[e].next.saturating_sub(1) };
        Err(SimError::BadOperand {
            at,
            detail: format!(
                "semaphore {sem} is signalled for the {count}th time, past the {} signals a semaphore counts",
                bir::MAX_SEMAPHORE_COUNT
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_keep_what_an_f64_would_round_away() {
        // 2^60 + 1 - 2^60: an f64 sum gives 0.
        let big = 2f64.powi(60);
        let d = Dd::default().add(big).add(1.0);
        assert_eq!(d.minus(Dd::default().add(big)), 1.0);
        // 3 x 0.1 kept with its product's rounding error: 0.30000000000000004 - 0.3 in f64
        // terms, but the pair holds 3 x fl(0.1) exactly.
        let t = Dd::default().add_times(3, 0.1);
        assert_eq!(t.minus(Dd::default().add(0.1).add(0.1).add(0.1)), 0.0);
        assert_eq!(t.value(), 3.0 * 0.1);
        // A billion periods of 0.1 ns on top of 1e13 ns, then the difference back.
        let e = Dd::default().add(1e13);
        let f = e.add_times(1_000_000_000, 0.1);
        assert_eq!(f.minus(e), 1e8);
        assert_eq!(f.add_dd(e).minus(e), f.value());
    }
}
