//! Stopping long work from outside: a flag the caller owns and sets ([`Cancel`]), which the
//! inner loops of every long phase poll (the planner's instructions, the lowering's, the
//! cycle model's, the simulator's, the reference's rows, the extrapolation's candidates), so
//! a run stops within milliseconds of the flag being set. It lives in the base crate so that
//! every layer polls the same flag.
//!
//! A poll is one relaxed atomic load; loops poll every [`POLL_EVERY`] items or so. For tests
//! that must stop at a known place without timing, [`Cancel::after`] makes a flag that sets
//! itself at its Nth poll.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Items (instructions, rows) an inner loop handles between two polls.
pub const POLL_EVERY: usize = 1 << 10;

/// A cancellation flag shared between the caller and a run. Once set, the run ends with its
/// layer's `Interrupted` error at its next poll.
#[derive(Clone, Debug, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    /// Polls left before the flag sets itself ([`Cancel::after`]).
    left: Option<Arc<AtomicU64>>,
}

impl Cancel {
    /// A flag that is not set.
    pub fn new() -> Self {
        Cancel::default()
    }

    /// A flag over `flag` (a signal handler's, say): set whenever `flag` is.
    pub fn from_flag(flag: Arc<AtomicBool>) -> Self {
        Cancel { flag, left: None }
    }

    /// A flag that sets itself at its `polls`-th poll (`0`: set already): a deterministic
    /// stopping point for tests.
    pub fn after(polls: u64) -> Self {
        let c = Cancel { flag: Arc::default(), left: Some(Arc::new(AtomicU64::new(polls))) };
        if polls == 0 {
            c.cancel();
        }
        c
    }

    /// The shared flag itself (for a signal handler to set).
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }

    /// Ask the runs holding this flag to stop.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether the runs holding this flag were asked to stop (a poll: it counts towards
    /// [`Cancel::after`]).
    pub fn is_cancelled(&self) -> bool {
        if let Some(left) = &self.left {
            let before = left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
            if before == Ok(1) {
                self.cancel();
            }
        }
        self.flag.load(Ordering::Relaxed)
    }

    /// Polls left before a flag from [`Cancel::after`] sets itself (`None` for another).
    pub fn polls_left(&self) -> Option<u64> {
        self.left.as_ref().map(|l| l.load(Ordering::Relaxed))
    }
}

/// Whether an optional flag was set (a poll).
pub fn stopped(cancel: Option<&Cancel>) -> bool {
    cancel.is_some_and(Cancel::is_cancelled)
}

/// A poll every [`POLL_EVERY`] calls: `i` is the loop's counter.
pub fn stopped_every(cancel: Option<&Cancel>, i: usize) -> bool {
    i.is_multiple_of(POLL_EVERY) && stopped(cancel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_set_by_the_caller_is_seen_by_every_clone() {
        let c = Cancel::new();
        let held = c.clone();
        assert!(!held.is_cancelled());
        c.cancel();
        assert!(held.is_cancelled() && stopped(Some(&held)));
        assert!(!stopped(None));
        let flag = Arc::new(AtomicBool::new(false));
        let c = Cancel::from_flag(Arc::clone(&flag));
        flag.store(true, Ordering::Relaxed);
        assert!(c.is_cancelled());
    }

    #[test]
    fn after_n_polls_the_flag_sets_itself() {
        let c = Cancel::after(3);
        assert_eq!([c.is_cancelled(), c.is_cancelled(), c.is_cancelled()], [false, false, true]);
        assert!(c.is_cancelled());
        assert_eq!(c.polls_left(), Some(0));
        assert!(Cancel::after(0).is_cancelled());
        let c = Cancel::after(1);
        assert!(!stopped_every(Some(&c), 5));
        assert!(stopped_every(Some(&c), 0));
    }
}
