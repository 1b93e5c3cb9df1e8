//! The roll pass: find the loops in a fully unrolled [`Program`].
//!
//! The algorithm is Penguin's generic one ([`penguin::looped::roll`], which documents its
//! periods, rounds, [`MAX_PERIOD`] and cost), run on each engine stream on its own with one
//! [`Roller`] interning the shapes of every stream. A BIR instruction's shape ([`BirShape`])
//! is the instruction with every byte offset, start partition and wait value set to 0 (see
//! [`super`] for its parameters).
//!
//! Rolling never changes the meaning: `roll(p).expand() == p` for every program. An
//! instruction whose byte offset does not fit an `i64` parameter never joins a loop.

use std::hash::{Hash, Hasher};

use penguin::looped::roll::{zeroed, Roller};
use penguin::looped::Rolled;

// The tests build the loops they expect through `super::*`.
#[cfg(test)]
use super::Loop;
use super::{Item, LoopedProgram};
use crate::program::{BirInst, Program};

pub use penguin::looped::roll::MAX_PERIOD;

/// Roll every stream of `p` (see the module doc).
pub fn roll(p: &Program) -> LoopedProgram {
    roll_looped(LoopedProgram::from_program(p))
}

/// [`roll`], consuming the program (its instructions move into the loops).
pub fn roll_owned(p: Program) -> LoopedProgram {
    roll_looped(LoopedProgram::from_program_owned(p))
}

fn roll_looped(mut lp: LoopedProgram) -> LoopedProgram {
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
