//! The roll pass: find the loops in a fully unrolled [`Program`].
//!
//! The algorithm is Penguin's generic one ([`penguin::looped::roll`]), run on each engine
//! stream on its own, bottom up. An item's *shape* is everything but
//! its parameters (see [`super`]): for an instruction, the instruction with every byte offset,
//! start partition and wait value set to 0; for a loop, its trip count, its step and the
//! shapes of its body. A run of `T >= 2` consecutive blocks of `P` items is rolled into one
//! [`Loop`](super::Loop) when the blocks have the same shapes item by item and every parameter advances by
//! the same amount from one block to the next (that amount is the loop's step).
//!
//! Rounds try periods in increasing order (1 to 8, then every distance at which an item's
//! shape next recurs, up to [`MAX_PERIOD`]) and roll, left to right and greedily (the most
//! trips at each start), every run of the first period that has one; then a new round
//! starts on the shorter stream. Short periods first makes inner loops form before the loops
//! around them, which then roll as items of their own (loops of loops). Items that fit no
//! run (irregular prologues and epilogues, a block whose step breaks) stay as they are.
//!
//! Rolling never changes the meaning: `roll(p).expand() == p` for every program. An
//! instruction whose byte offset does not fit an `i64` parameter never joins a loop.
//!
//! Cost: a round is linear in the items for each period it tries, and there are about as
//! many rounds as distinct (nesting level, period) pairs, so the pass is about linear in the
//! instruction count.

use std::hash::{Hash, Hasher};

use penguin::looped::roll::{zeroed, Roller};
use penguin::looped::Rolled;

#[cfg(test)]
use super::Loop;
use super::{Item, LoopedProgram};
use crate::program::{BirInst, Program};

pub use penguin::looped::roll::MAX_PERIOD;

/// Roll every stream of `p` (see the module doc).
pub fn roll(p: &Program) -> LoopedProgram {
    let mut lp = LoopedProgram::from_program(p);
    let mut roller = Roller::default();
    for s in &mut lp.streams {
        let items: Vec<Item> = std::mem::take(s);
        *s = roller.roll(items);
    }
    lp
}

/// The shape of a BIR instruction: the instruction with every byte offset, start partition
/// and wait value set to 0. Hashes its op name, access patterns, waits, signal and origin.
#[derive(Clone, Debug)]
pub struct BirShape(pub BirInst);

impl PartialEq for BirShape {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Hash for BirShape {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let zero = &self.0;
        zero.op.name().hash(h);
        for (name, ap) in zero.op.aps() {
            name.hash(h);
            ap.hash(h);
        }
        zero.waits.hash(h);
        zero.signal.hash(h);
        zero.origin.hash(h);
    }
}

impl Rolled for BirInst {
    type Shape = BirShape;

    fn shape(&self) -> Option<BirShape> {
        // A parameter that does not round-trip through i64 cannot be stepped.
        if self.op.aps().iter().any(|(_, ap)| i64::try_from(ap.byte_offset).is_err()) {
            return None;
        }
        zeroed(self).map(BirShape)
    }
}

#[cfg(test)]
#[path = "roll_tests.rs"]
mod tests;
