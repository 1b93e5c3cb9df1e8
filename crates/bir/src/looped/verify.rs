//! The verifier of looped programs ([`verify_looped`]).
//!
//! Rules, in order:
//! 1. **Structure**: every loop has at least one trip, a non-empty body, and one step per
//!    parameter of its body ([`LoopError::ZeroTrips`], [`LoopError::EmptyBody`],
//!    [`LoopError::StepLength`]).
//! 2. **Parameters in range in every iteration**: a parameter is affine in the loop indices,
//!    so its least and greatest values over the iteration box are at its corners, and checking
//!    them is exact: byte offsets and wait values stay in `0..2^63` (a parameter is an
//!    `i64`), start partitions in `0..2^32` ([`LoopError::ParamOutOfRange`]).
//! 3. **Semaphore counts**: no semaphore is signalled more than [`MAX_SEMAPHORE_COUNT`]
//!    times in the unrolled program (no wait could name a later count; counted exactly from
//!    the trips, a [`LoopError::Program`] naming the semaphore).
//! 4. **Engine rules** ([`crate::verify_program`]'s): when the unrolled program has at most
//!    [`MAX_EXPANDED`] instructions, on the expansion itself, so every rule is checked
//!    exactly, deadlock freedom included. A larger program is not expanded (its size could
//!    be anything up to 2^48 instructions per stream); its *corner program* is checked
//!    instead: every loop run for its first and last trip only, with the waits left out (so
//!    no deadlock is reported; the semaphores waited on are checked to exist). Bounds, shapes
//!    and engines are then checked exactly (bounds are monotone in the parameters, the rest
//!    does not change between iterations); the partition start rule only at the corners, and
//!    deadlock freedom not at all. A corner program over [`MAX_EXPANDED`] instructions (nests
//!    of loops of 2 trips keep every iteration) is refused ([`LoopError::CornerTooLarge`]).
//!
//! Positions: in the corner program's messages, instructions are named by their place in the
//! corner program. Otherwise an instruction is named by its engine and its index in the unrolled stream,
//! as in [`crate::verify_program`]'s messages (`dma0[37]`); a loop by its engine, the
//! unrolled index of its first instruction and its depth.
//!
//! The walk of rules 1 and 2, the parameter ranges, the corner program and the choice of
//! what rule 4 runs on are penguin's, shared with Penguin's looped verifier
//! ([`penguin::looped::check`]); what is BIR's is which range each parameter must stay in,
//! the semaphore counts, and the waits left out of the corner program.

use std::fmt;

use penguin::looped::check::{param_range, rules_form, walk_loops, Enclosing, LoopFault, LoopRules, RulesForm};

use super::{Item, LoopedProgram};
use crate::error::{BirError, VerifyError};
use crate::program::{BirInst, Engine, InstRef, Program, MAX_SEMAPHORE_COUNT, NUM_ENGINES};

pub use penguin::looped::check::MAX_EXPANDED;

/// Where a loop is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LoopAt {
    /// Its engine.
    pub engine: Engine,
    /// The unrolled index of its first instruction.
    pub first: u64,
    /// Its depth (0 for a loop at the top of its stream; its index is `i{depth}`).
    pub depth: usize,
}

impl fmt::Display for LoopAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}] loop i{}", self.engine, self.first, self.depth)
    }
}

/// A looped program the verifier rejects.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LoopError {
    /// A loop with no trips.
    #[error("{at}: a loop needs at least 1 trip")]
    ZeroTrips {
        /// The loop.
        at: LoopAt,
    },
    /// A loop with nothing in it.
    #[error("{at}: the body is empty")]
    EmptyBody {
        /// The loop.
        at: LoopAt,
    },
    /// A step that does not match the body.
    #[error("{at}: the step has {step} entries but the body has {params} parameters")]
    StepLength {
        /// The loop.
        at: LoopAt,
        /// Entries of the step.
        step: usize,
        /// Parameters of the body.
        params: usize,
    },
    /// A parameter that leaves its range in some iteration.
    #[error("{engine}[{index}] {op}: {param} takes values {lo}..={hi} over the loop iterations, outside 0..={max}")]
    ParamOutOfRange {
        /// The engine.
        engine: Engine,
        /// The unrolled index of the instruction's first iteration.
        index: u64,
        /// The op name.
        op: &'static str,
        /// Which parameter (`dst byte offset`, `wait 0`).
        param: String,
        /// Least value over the iterations.
        lo: i128,
        /// Greatest value.
        hi: i128,
        /// The largest the parameter may be.
        max: i128,
    },
    /// A program too large to expand whose corner program is too large as well (nested
    /// loops of 2 trips keep every iteration in it).
    #[error(
        "the program unrolls to {unrolled} instructions and its corner program (each loop's first and last \
         trip) to {corner}, more than the {MAX_EXPANDED} the verifier expands"
    )]
    CornerTooLarge {
        /// Unrolled instructions of the program.
        unrolled: u64,
        /// Instructions of the corner program.
        corner: u64,
    },
    /// The unrolled (or corner) program breaks an engine rule.
    #[error("{0}")]
    Program(BirError),
}

/// Verify a looped program (see the module doc); every structural error, or the engine
/// rules' error.
pub fn verify_looped(lp: &LoopedProgram) -> Result<(), Vec<LoopError>> {
    verify_looped_sharing(lp, &[])
}

/// [`verify_looped`] of one core's program of a chip whose cores share the semaphores named
/// `shared` (see [`crate::verify_program_sharing`]).
pub fn verify_looped_sharing(lp: &LoopedProgram, shared: &[String]) -> Result<(), Vec<LoopError>> {
    let mut rules = Rules { engine: Engine::Pe, errors: Vec::new() };
    for e in Engine::all() {
        rules.engine = e;
        walk_loops(lp.stream(e), &mut rules);
    }
    if !rules.errors.is_empty() {
        return Err(rules.errors);
    }
    if let Some(e) = signal_overflow(lp) {
        return Err(vec![LoopError::Program(BirError::Verify(vec![e]))]);
    }
    let n = lp.unrolled_len();
    let corner = || {
        let c = corner_items(lp);
        let len = c.unrolled_len();
        (c, len)
    };
    let checked = match rules_form(n, MAX_EXPANDED, corner) {
        Ok(RulesForm::Expansion) => lp.expand().and_then(|p| crate::verify_program_sharing(&p, shared)),
        Ok(RulesForm::Corner(c)) => corner_program(&c).and_then(|p| crate::verify_program_sharing(&p, shared)),
        Err(e) => return Err(vec![LoopError::CornerTooLarge { unrolled: e.unrolled, corner: e.corner }]),
    };
    checked.map_err(|e| vec![LoopError::Program(e)])
}

/// BIR's side of the structural walk of one stream: rules 1 and 2.
struct Rules {
    engine: Engine,
    errors: Vec<LoopError>,
}

impl LoopRules<BirInst> for Rules {
    fn fault(&mut self, at: penguin::looped::LoopAt, fault: LoopFault) {
        let at = LoopAt { engine: self.engine, first: at.first, depth: at.depth };
        self.errors.push(match fault {
            LoopFault::ZeroTrips => LoopError::ZeroTrips { at },
            LoopFault::EmptyBody => LoopError::EmptyBody { at },
            LoopFault::StepLength { step, params } => LoopError::StepLength { at, step, params },
        });
    }

    fn inst(&mut self, index: u64, i: &BirInst, params: &[i64], loops: &[Enclosing<'_>]) {
        let aps = i.op.aps();
        for (q, &b) in params.iter().enumerate() {
            let (lo, hi) = param_range(loops, q, b);
            let max = if q >= 2 * aps.len() {
                i128::from(MAX_SEMAPHORE_COUNT)
            } else if q % 2 == 0 {
                i128::from(i64::MAX)
            } else {
                i128::from(u32::MAX)
            };
            if lo < 0 || hi > max {
                let param = if q < 2 * aps.len() {
                    let name = aps[q / 2].0;
                    if q % 2 == 0 {
                        format!("{name} byte offset")
                    } else {
                        format!("{name} start partition")
                    }
                } else {
                    format!("wait {}", q - 2 * aps.len())
                };
                let (engine, op) = (self.engine, i.op.name());
                self.errors.push(LoopError::ParamOutOfRange { engine, index, op, param, lo, hi, max });
            }
        }
    }
}

/// A semaphore signalled more than [`MAX_SEMAPHORE_COUNT`] times in the unrolled program:
/// no wait could name its later counts.
fn signal_overflow(lp: &LoopedProgram) -> Option<VerifyError> {
    fn count(items: &[Item], times: u64, out: &mut [u64]) {
        for it in items {
            match it {
                Item::Inst(i) => {
                    if let Some(c) = i.signal.and_then(|s| out.get_mut(s.0 as usize)) {
                        *c = c.saturating_add(times);
                    }
                }
                Item::Loop(l) => count(&l.body, times.saturating_mul(u64::from(l.trips)), out),
            }
        }
    }
    let mut signals = vec![0u64; lp.header.semaphores.len()];
    for items in &lp.streams {
        count(items, 1, &mut signals);
    }
    let (sem, &n) = signals.iter().enumerate().find(|(_, &n)| n > MAX_SEMAPHORE_COUNT)?;
    let name = lp.header.semaphores.get(sem).map_or("?", String::as_str);
    Some(VerifyError::program(format!(
        "semaphore s{sem} ({name}) is signalled {n} times, more than the {MAX_SEMAPHORE_COUNT} a semaphore counts"
    )))
}

/// Every loop run for its first and last trip (see the module doc).
fn corner_items(lp: &LoopedProgram) -> LoopedProgram {
    let streams = lp.streams.iter().map(|s| penguin::looped::check::corner_items(s, &BirInst::clone, None)).collect();
    LoopedProgram { header: lp.header.clone(), streams }
}

/// The corner program of `c` (from [`corner_items`]) expanded, without waits.
fn corner_program(c: &LoopedProgram) -> Result<Program, BirError> {
    let mut p = c.expand()?;
    let sems = p.semaphores.len();
    let mut missing = Vec::new();
    for (e, s) in p.streams.iter_mut().enumerate().take(NUM_ENGINES) {
        for (n, i) in s.iter_mut().enumerate() {
            if let Some(w) = i.waits.iter().find(|w| w.sem.0 as usize >= sems) {
                let msg = format!("waits on {}, which does not exist", w.sem);
                missing.push(match Engine::from_index(e) {
                    Some(engine) => VerifyError::inst(InstRef { engine, index: n }, i.op.name(), msg),
                    None => VerifyError::program(format!("stream {e}[{n}] {}: {msg}", i.op.name())),
                });
            }
            i.waits.clear();
        }
    }
    if missing.is_empty() {
        Ok(p)
    } else {
        Err(BirError::Verify(missing))
    }
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
