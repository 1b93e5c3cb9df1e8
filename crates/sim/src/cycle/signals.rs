//! The signal log of one semaphore, as the replay keeps it.

use super::path::{SignalSteps, Step};

/// The signals of one semaphore: the times it was signalled, sorted (count `v` is reached
/// at entry `v - 1`). Without slices, entries no future start can tell apart (at or before
/// the current time) are dropped from the front, keeping their number and the latest time.
#[derive(Clone, Debug, Default)]
pub(super) struct SemLog {
    pub(super) dropped: u64,
    dropped_at: f64,
    pub(super) times: Vec<f64>,
    /// The signallers of `times`, when the replay follows the critical path.
    pub(super) path: SignalSteps,
}

impl SemLog {
    pub(super) fn count(&self) -> u64 {
        self.dropped + self.times.len() as u64
    }

    #[inline(always)]
    pub(super) fn reached(&self, value: u64) -> Option<f64> {
        match (value - 1).checked_sub(self.dropped) {
            Some(i) => self.times.get(usize::try_from(i).ok()?).copied(),
            None => Some(self.dropped_at),
        }
    }

    /// The signaller that gave count `value` (`value >= 1`), when the replay follows the
    /// critical path (the latest dropped one for a count dropped from the front).
    pub(super) fn step_of(&self, value: u64) -> Option<Step> {
        match (value - 1).checked_sub(self.dropped) {
            Some(i) => self.path.steps.get(usize::try_from(i).ok()?).copied(),
            None => self.path.dropped,
        }
    }

    /// Drop the entries at or before `now`.
    pub(super) fn prune(&mut self, now: f64) {
        let n = self.times.partition_point(|&t| t <= now);
        if n > 0 {
            self.dropped_at = self.times[n - 1];
            self.dropped += n as u64;
            self.times.drain(..n);
            if self.path.steps.len() >= n {
                self.path.dropped = Some(self.path.steps[n - 1]);
                self.path.steps.drain(..n);
            }
        }
    }
}
