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

use std::fmt;

use super::{param_count, unrolled_len, ExpandError, Item, Loop, LoopedFunction, PirInst, Stepped};
use crate::error::VerifierError;

/// Up to this many unrolled instructions, the function rules are checked on the expansion.
/// An instruction with its edges takes a few hundred bytes, so 2^21 of them fit in well
/// under a GB, and the verifier is linear in the instructions; planned GEMMs up to about
/// 4096x4096x4096 (naive, 2^18 tiles of a few instructions each) are checked exactly.
pub const MAX_EXPANDED: u64 = 1 << 21;

/// Where a loop is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LoopAt {
    /// The unrolled index of its first instruction.
    pub first: u64,
    /// Its depth (0 for a loop at the top of the function).
    pub depth: usize,
}

impl fmt::Display for LoopAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "i{} loop at depth {}", self.first, self.depth)
    }
}

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
    let mut errors = Vec::new();
    let mut w = Walk { index: 0, box_: Vec::new(), errors: &mut errors };
    w.items(&lf.body);
    let n = lf.unrolled_len();
    if errors.is_empty() && n > u64::from(u32::MAX) {
        errors.push(LoopError::TooLong(n));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let f = if n <= max_expanded {
        lf.expand()
    } else {
        let corner = corner_function(lf);
        let len = corner.unrolled_len();
        if len > max_expanded.max(MAX_EXPANDED) {
            return Err(vec![LoopError::CornerTooLarge {
                unrolled: n,
                corner: len,
                max: max_expanded.max(MAX_EXPANDED),
            }]);
        }
        corner.expand()
    };
    let f = f.map_err(|e| vec![LoopError::Expand(e)])?;
    match crate::verify(&f) {
        Ok(_) => Ok(()),
        Err(e) => Err(e.0.into_iter().map(LoopError::Function).collect()),
    }
}

/// An enclosing loop during the walk.
struct Frame<'a> {
    trips: u32,
    step: &'a [i64],
    /// How far into the step the walk has come.
    at: usize,
    /// Unrolled instructions per iteration.
    stride: u64,
}

/// The structural walk.
struct Walk<'a, 'e> {
    index: u64,
    box_: Vec<Frame<'a>>,
    errors: &'e mut Vec<LoopError>,
}

impl<'a> Walk<'a, '_> {
    fn items(&mut self, items: &'a [Item<PirInst>]) {
        for it in items {
            match it {
                Item::Inst(i) => self.inst(i),
                Item::Loop(l) => self.a_loop(l),
            }
        }
    }

    fn a_loop(&mut self, l: &'a Loop<PirInst>) {
        let at = LoopAt { first: self.index, depth: self.box_.len() };
        let params = param_count(&l.body);
        let mut ok = true;
        if l.trips == 0 {
            self.errors.push(LoopError::ZeroTrips { at });
            ok = false;
        }
        if l.body.is_empty() {
            self.errors.push(LoopError::EmptyBody { at });
        }
        if l.step.len() != params {
            self.errors.push(LoopError::StepLength { at, step: l.step.len(), params });
            ok = false;
        }
        let start = self.index;
        let stride = unrolled_len(&l.body);
        if ok {
            self.box_.push(Frame { trips: l.trips, step: &l.step, at: 0, stride });
            self.items(&l.body);
            self.box_.pop();
        } else {
            // Keep the enclosing loops' step positions right.
            for fr in &mut self.box_ {
                fr.at += params;
            }
        }
        self.index = start.saturating_add(stride.saturating_mul(u64::from(l.trips)));
    }

    fn inst(&mut self, i: &PirInst) {
        let n = i.param_count();
        let mut base = Vec::with_capacity(n);
        i.push_params(&mut base);
        let kind = i.data.kind();
        let names = kind.operand_names();
        let ops = 2 * i.data.operands().len();
        let edges = ops + i.deps.len();
        // Each parameter's step in each enclosing loop.
        let step = |fr: &Frame<'_>, q: usize| i128::from(fr.step.get(fr.at + q).copied().unwrap_or(0));
        for (q, &b) in base.iter().enumerate() {
            let (mut lo, mut hi) = (i128::from(b), i128::from(b));
            for fr in &self.box_ {
                let s = step(fr, q) * (i128::from(fr.trips) - 1);
                if s < 0 {
                    lo += s;
                } else {
                    hi += s;
                }
            }
            let (param, min, max) = if q < ops {
                let name = names.get(q / 2).copied().unwrap_or("operand");
                if q % 2 == 0 {
                    (format!("{name} offset"), i128::from(i64::MIN), i128::from(i64::MAX))
                } else {
                    (format!("{name} start partition"), 0, i128::from(u32::MAX))
                }
            } else if q < edges {
                (format!("edge {} from", q - ops), 0, i128::from(u32::MAX))
            } else {
                ("queue hint".to_string(), 0, i128::from(u32::MAX))
            };
            if lo < min || hi > max {
                self.errors.push(LoopError::ParamOutOfRange {
                    index: self.index,
                    op: kind.name(),
                    param,
                    lo,
                    hi,
                    min,
                    max,
                });
            }
            if (ops..edges).contains(&q) {
                // from - position is affine too: its greatest value is at the corner where
                // each loop index is at the end that raises it.
                let (mut at, mut from) = (i128::from(self.index), i128::from(b));
                for fr in &self.box_ {
                    let (s, stride) = (step(fr, q), i128::from(fr.stride));
                    if s > stride {
                        let k = i128::from(fr.trips) - 1;
                        at += k * stride;
                        from += k * s;
                    }
                }
                if from >= at {
                    let (index, op, edge) = (self.index, kind.name(), q - ops);
                    self.errors.push(LoopError::ForwardEdge { index, op, edge, at, from });
                }
            }
        }
        for fr in &mut self.box_ {
            fr.at += n;
        }
        self.index = self.index.saturating_add(1);
    }
}

/// Every loop run for its first and last trip, without edges (see the module doc).
fn corner_function(lf: &LoopedFunction) -> LoopedFunction {
    fn corners(items: &[Item<PirInst>]) -> Vec<Item<PirInst>> {
        items
            .iter()
            .map(|it| match it {
                Item::Inst(i) => Item::Inst(PirInst { data: i.data.clone(), deps: Vec::new(), loc: None }),
                Item::Loop(l) => {
                    let body = corners(&l.body);
                    let keep = params_kept(&l.body);
                    let step = l.step.iter().zip(&keep).filter(|(_, k)| **k).map(|(s, _)| *s);
                    if l.trips <= 2 {
                        Item::Loop(Loop { trips: l.trips, body, step: step.collect() })
                    } else {
                        // Trips 0 and T-1: one step of (T-1) times the step.
                        let t = i64::from(l.trips - 1);
                        Item::Loop(Loop { trips: 2, body, step: step.map(|s| s.saturating_mul(t)).collect() })
                    }
                }
            })
            .collect()
    }
    LoopedFunction { header: lf.header.clone(), body: corners(&lf.body) }
}

/// For each parameter of `items`, whether it is an operand's or a queue hint (kept in the corner function)
/// rather than an edge's (dropped with the edges).
fn params_kept(items: &[Item<PirInst>]) -> Vec<bool> {
    let mut out = Vec::new();
    fn walk(items: &[Item<PirInst>], out: &mut Vec<bool>) {
        for it in items {
            match it {
                Item::Inst(i) => {
                    out.extend(std::iter::repeat_n(true, 2 * i.data.operands().len()));
                    out.extend(std::iter::repeat_n(false, i.deps.len()));
                    out.extend(i.data.queue_hint().map(|_| true));
                }
                Item::Loop(l) => walk(&l.body, out),
            }
        }
    }
    walk(items, &mut out);
    out
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
