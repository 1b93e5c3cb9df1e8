//! The verifier of looped Penguin functions ([`verify_looped`]).
//!
//! Rules, in order:
//! 1. **Structure**: every loop has at least one trip, a non-empty body, and one step per
//!    parameter of its body ([`LoopError::ZeroTrips`], [`LoopError::EmptyBody`],
//!    [`LoopError::StepLength`]); the unrolled function has at most `u32::MAX` instructions,
//!    so that ids can number them ([`LoopError::TooLong`]).
//! 2. **Parameters in range in every iteration**: a parameter is affine in the loop indices,
//!    and so is an instruction's own unrolled position, so their least and greatest values
//!    (and those of their difference) over the iteration box are at its corners, and
//!    checking them is exact: operand offsets stay in `i64`, start partitions in `0..2^32`
//!    and edge sources at 0 or above ([`LoopError::ParamOutOfRange`]); each edge comes from
//!    strictly before its own instruction's unrolled position ([`LoopError::ForwardEdge`]).
//! 3. **Function rules** ([`crate::verify()`]'s): when the unrolled function has at most
//!    [`MAX_EXPANDED`] instructions, on the expansion itself, so every rule is checked
//!    exactly. A larger function is not expanded (it could have up to 2^32 instructions);
//!    its *corner function* is checked instead: every loop run for its first and last trip
//!    only, with its edges left out (rule 2 has checked them exactly). Tensors, operand
//!    dtypes, memories, shapes, partition ranges and bounds are then checked exactly (bounds
//!    and partition ranges are monotone in the parameters, the rest does not change between
//!    iterations). Not checked in the middle iterations: the PSUM bank rule (an access that
//!    stays in one bank at both ends of a loop may cross a bank boundary between them) and
//!    the accumulation-group rules, which see only the corner iterations' order. A corner
//!    function over [`MAX_EXPANDED`] instructions (nests of loops of 2 trips keep every
//!    iteration) is refused ([`LoopError::CornerTooLarge`]) rather than expanded.
//!
//! Positions: a loop is named by the unrolled index of its first instruction and its depth;
//! an instruction by its unrolled index in the first iteration of its loops. A function
//! rule's error names the instruction by its index in the expansion, or in the corner
//! function when the function is too large to expand.
//!
//! The walk of rules 1 and 2, the parameter ranges, the corner function and the choice of
//! what rule 3 runs on are shared with BIR's looped verifier ([`super::check`]); what is
//! Penguin's is which range each parameter must stay in, the forward-edge rule, and the
//! edges left out of the corner function.

use super::check::{corner_items, param_range, rules_form, walk_loops, Enclosing, LoopFault, LoopRules, RulesForm};
use super::{ExpandError, LoopedFunction, PirInst};
use crate::error::VerifierError;

pub use super::check::{LoopAt, MAX_EXPANDED};

/// A looped function the verifier rejects.
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
    /// More instructions than ids.
    #[error("the unrolled function has {0} instructions, more than ids can number")]
    TooLong(u64),
    /// A parameter that leaves its range in some iteration.
    #[error("i{index} {op}: {param} takes values {lo}..={hi} over the loop iterations, outside {min}..={max}")]
    ParamOutOfRange {
        /// The unrolled index of the instruction's first iteration.
        index: u64,
        /// The opcode name.
        op: &'static str,
        /// Which parameter (`dst offset`, `src start partition`, `edge 0 from`).
        param: String,
        /// Least value over the iterations.
        lo: i128,
        /// Greatest value.
        hi: i128,
        /// The least the parameter may be.
        min: i128,
        /// The largest the parameter may be.
        max: i128,
    },
    /// An edge that does not come from before its instruction in some iteration.
    #[error("i{index} {op}: edge {edge} comes from i{from} in the iteration at i{at}, not before it")]
    ForwardEdge {
        /// The unrolled index of the instruction's first iteration.
        index: u64,
        /// The opcode name.
        op: &'static str,
        /// Which edge (its place in the instruction's edge list).
        edge: usize,
        /// The unrolled index of the iteration where the edge is furthest forward.
        at: i128,
        /// Where the edge comes from in that iteration.
        from: i128,
    },
    /// A function too large to expand whose corner function is too large as well (nested
    /// loops of 2 trips keep every iteration in it).
    #[error(
        "the function unrolls to {unrolled} instructions and its corner function (each loop's first and last \
         trip) to {corner}, more than the {max} the verifier expands"
    )]
    CornerTooLarge {
        /// Unrolled instructions of the function.
        unrolled: u64,
        /// Instructions of the corner function.
        corner: u64,
        /// The most the verifier expands.
        max: u64,
    },
    /// The unrolled (or corner) function does not expand (not expected after rules 1-2).
    #[error("{0}")]
    Expand(ExpandError),
    /// The unrolled (or corner) function breaks a function rule.
    #[error("{0}")]
    Function(VerifierError),
}

/// Verify a looped function (see the module doc); every structural and parameter error, or
/// else every function rule's error.
pub fn verify_looped(lf: &LoopedFunction) -> Result<(), Vec<LoopError>> {
    verify_looped_within(lf, MAX_EXPANDED)
}

/// [`verify_looped`] expanding only functions of at most `max_expanded` unrolled
/// instructions (larger ones are checked on their corner function; 0 always checks the
/// corner function).
pub fn verify_looped_within(lf: &LoopedFunction, max_expanded: u64) -> Result<(), Vec<LoopError>> {
    let mut rules = Rules { errors: Vec::new() };
    walk_loops(&lf.body, &mut rules);
    let mut errors = rules.errors;
    let n = lf.unrolled_len();
    if errors.is_empty() && n > u64::from(u32::MAX) {
        errors.push(LoopError::TooLong(n));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let corner = || {
        let c = corner_function(lf);
        let len = c.unrolled_len();
        (c, len)
    };
    let f = match rules_form(n, max_expanded, corner) {
        Ok(RulesForm::Expansion) => lf.expand(),
        Ok(RulesForm::Corner(c)) => c.expand(),
        Err(e) => {
            return Err(vec![LoopError::CornerTooLarge { unrolled: e.unrolled, corner: e.corner, max: e.max }]);
        }
    };
    let f = f.map_err(|e| vec![LoopError::Expand(e)])?;
    match crate::verify(&f) {
        Ok(_) => Ok(()),
        Err(e) => Err(e.0.into_iter().map(LoopError::Function).collect()),
    }
}

/// Penguin's side of the structural walk: rules 1 and 2.
struct Rules {
    errors: Vec<LoopError>,
}

impl LoopRules<PirInst> for Rules {
    fn fault(&mut self, at: LoopAt, fault: LoopFault) {
        self.errors.push(match fault {
            LoopFault::ZeroTrips => LoopError::ZeroTrips { at },
            LoopFault::EmptyBody => LoopError::EmptyBody { at },
            LoopFault::StepLength { step, params } => LoopError::StepLength { at, step, params },
        });
    }

    fn inst(&mut self, index: u64, i: &PirInst, params: &[i64], loops: &[Enclosing<'_>]) {
        let kind = i.data.kind();
        let names = kind.operand_names();
        let ops = 2 * i.data.operand_count();
        let edges = ops + i.deps.len();
        for (q, &b) in params.iter().enumerate() {
            let (lo, hi) = param_range(loops, q, b);
            let (min, max) = if q < ops && q % 2 == 0 {
                (i128::from(i64::MIN), i128::from(i64::MAX))
            } else {
                (0, i128::from(u32::MAX))
            };
            if lo < min || hi > max {
                let param = if q < ops {
                    let name = names.get(q / 2).copied().unwrap_or("operand");
                    if q % 2 == 0 {
                        format!("{name} offset")
                    } else {
                        format!("{name} start partition")
                    }
                } else if q < edges {
                    format!("edge {} from", q - ops)
                } else {
                    "queue hint".to_string()
                };
                self.errors.push(LoopError::ParamOutOfRange { index, op: kind.name(), param, lo, hi, min, max });
            }
            if (ops..edges).contains(&q) {
                // from - position is affine too: its greatest value is at the corner where
                // each loop index is at the end that raises it.
                let (mut at, mut from) = (i128::from(index), i128::from(b));
                for l in loops {
                    let (s, stride) = (i128::from(l.step(q)), i128::from(l.stride));
                    if s > stride {
                        let k = i128::from(l.trips) - 1;
                        at += k * stride;
                        from += k * s;
                    }
                }
                if from >= at {
                    let (op, edge) = (kind.name(), q - ops);
                    self.errors.push(LoopError::ForwardEdge { index, op, edge, at, from });
                }
            }
        }
    }
}

/// Every loop run for its first and last trip, without edges (see the module doc).
fn corner_function(lf: &LoopedFunction) -> LoopedFunction {
    let reduce = |i: &PirInst| PirInst { data: i.data.clone(), deps: Vec::new(), loc: None };
    // An operand's parameters and a queue hint are kept, the edges' are dropped with them.
    let kept = |i: &PirInst, out: &mut Vec<bool>| {
        out.extend(std::iter::repeat_n(true, 2 * i.data.operand_count()));
        out.extend(std::iter::repeat_n(false, i.deps.len()));
        out.extend(i.data.queue_hint().map(|_| true));
    };
    LoopedFunction { header: lf.header.clone(), body: corner_items(&lf.body, &reduce, Some(&kept)) }
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
