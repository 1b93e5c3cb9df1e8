//! What the looped verifiers of both IRs (Penguin's [`super::verify`], `bir::looped::verify`)
//! check alike, written once over any [`Stepped`] instruction: the structural walk that finds
//! malformed loops and gives each instruction the loops around it, the least and greatest value
//! of a parameter over the iteration box, the corner sequence, and the choice between checking
//! the expansion and checking the corner sequence.
//!
//! A parameter is affine in the loop indices, so its least and greatest values over the
//! iteration box (every index from 0 to its trips - 1) are at corners of the box: each loop
//! index at the end that lowers (or raises) it. [`param_range`] computes them exactly, in
//! `i128`. Each IR decides which range every parameter must stay in.
//!
//! The *corner sequence* ([`corner_items`]) runs every loop for its first and last trip only;
//! rules that are monotone in the parameters (bounds, partition ranges), or that do not depend
//! on them, hold in every iteration when they hold there. Nests of loops of 2 trips keep every
//! iteration in it, so it too can be too large to expand ([`CornerTooLarge`]).

use std::fmt;

use super::{param_count, unrolled_len, Item, Loop, Stepped};

/// Up to this many unrolled instructions, the IR's own rules are checked on the expansion
/// (larger sequences on their corner sequence). An instruction with its edges takes a few
/// hundred bytes, so 2^21 of them fit in well under a GB, and the verifiers are linear in the
/// instructions; planned GEMMs up to about 4096x4096x4096 (naive, 2^18 tiles of a few
/// instructions each) are checked exactly.
pub const MAX_EXPANDED: u64 = 1 << 21;

/// Where a loop is in a sequence (an IR may add where the sequence is: `bir` its engine).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LoopAt {
    /// The unrolled index of its first instruction.
    pub first: u64,
    /// Its depth (0 for a loop at the top of the sequence).
    pub depth: usize,
}

impl fmt::Display for LoopAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "i{} loop at depth {}", self.first, self.depth)
    }
}

/// What is wrong with a loop's structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopFault {
    /// It has no trips.
    ZeroTrips,
    /// Its body is empty.
    EmptyBody,
    /// Its step does not have one entry per body parameter.
    StepLength {
        /// Entries of the step.
        step: usize,
        /// Parameters of the body.
        params: usize,
    },
}

/// A loop around the instruction being checked.
#[derive(Clone, Copy, Debug)]
pub struct Enclosing<'a> {
    /// Its trips.
    pub trips: u32,
    /// Its step.
    step: &'a [i64],
    /// Where the instruction's parameters start in the step.
    at: usize,
    /// Unrolled instructions per iteration.
    pub stride: u64,
}

impl Enclosing<'_> {
    /// The per-iteration step of parameter `q` of the instruction being checked.
    pub fn step(&self, q: usize) -> i64 {
        self.step.get(self.at + q).copied().unwrap_or(0)
    }
}

/// The least and greatest value, over the iteration box of `loops`, of parameter `q` whose
/// value in the first iteration is `base`.
pub fn param_range(loops: &[Enclosing<'_>], q: usize, base: i64) -> (i128, i128) {
    let (mut lo, mut hi) = (i128::from(base), i128::from(base));
    for l in loops {
        let s = i128::from(l.step(q)) * (i128::from(l.trips) - 1);
        if s < 0 {
            lo += s;
        } else {
            hi += s;
        }
    }
    (lo, hi)
}

/// An IR's side of the structural walk ([`walk_loops`]): where its errors go, and what it
/// checks of each instruction.
pub trait LoopRules<I> {
    /// The loop at `at` is malformed (its body is then not walked when its trips or step are
    /// wrong, since no iteration box exists).
    fn fault(&mut self, at: LoopAt, fault: LoopFault);

    /// Check `inst`, whose first iteration is unrolled instruction `index`, with parameters
    /// `params` in that iteration, inside `loops` (outermost first).
    fn inst(&mut self, index: u64, inst: &I, params: &[i64], loops: &[Enclosing<'_>]);
}

/// Walk `items` in order: every malformed loop goes to [`LoopRules::fault`], every instruction
/// of a well-formed nest to [`LoopRules::inst`]. Positions are unrolled indices (saturating).
pub fn walk_loops<I: Stepped>(items: &[Item<I>], rules: &mut impl LoopRules<I>) {
    let mut w = Walk { index: 0, loops: Vec::new(), params: Vec::new(), rules };
    w.items(items);
}

/// The structural walk's state.
struct Walk<'a, 'r, R> {
    index: u64,
    loops: Vec<Enclosing<'a>>,
    /// The current instruction's parameters (a buffer reused from one to the next).
    params: Vec<i64>,
    rules: &'r mut R,
}

impl<'a, R> Walk<'a, '_, R> {
    fn items<I: Stepped>(&mut self, items: &'a [Item<I>])
    where
        R: LoopRules<I>,
    {
        for it in items {
            match it {
                Item::Inst(i) => self.inst(i),
                Item::Loop(l) => self.a_loop(l),
            }
        }
    }

    fn a_loop<I: Stepped>(&mut self, l: &'a Loop<I>)
    where
        R: LoopRules<I>,
    {
        let at = LoopAt { first: self.index, depth: self.loops.len() };
        let params = param_count(&l.body);
        let mut ok = true;
        if l.trips == 0 {
            self.rules.fault(at, LoopFault::ZeroTrips);
            ok = false;
        }
        if l.body.is_empty() {
            self.rules.fault(at, LoopFault::EmptyBody);
        }
        if l.step.len() != params {
            self.rules.fault(at, LoopFault::StepLength { step: l.step.len(), params });
            ok = false;
        }
        let start = self.index;
        let stride = unrolled_len(&l.body);
        if ok {
            self.loops.push(Enclosing { trips: l.trips, step: &l.step, at: 0, stride });
            self.items(&l.body);
            self.loops.pop();
        } else {
            // Keep the enclosing loops' step positions right.
            for e in &mut self.loops {
                e.at += params;
            }
        }
        self.index = start.saturating_add(stride.saturating_mul(u64::from(l.trips)));
    }

    fn inst<I: Stepped>(&mut self, i: &I)
    where
        R: LoopRules<I>,
    {
        self.params.clear();
        i.push_params(&mut self.params);
        self.rules.inst(self.index, i, &self.params, &self.loops);
        let n = self.params.len();
        for e in &mut self.loops {
            e.at += n;
        }
        self.index = self.index.saturating_add(1);
    }
}

/// For an instruction, pushes whether the corner sequence keeps each of its parameters (see
/// [`corner_items`]).
pub type KeptParams<'a, I> = &'a dyn Fn(&I, &mut Vec<bool>);

/// Every loop of `items` run for its first and last trip only: a loop of more than 2 trips
/// becomes one of 2 whose step is `trips - 1` times its own (saturating). Each instruction
/// is replaced by `reduce` of it; when `kept` is given, it pushes for each parameter of an
/// instruction whether `reduce` keeps it, and the steps keep only those entries.
pub fn corner_items<I: Stepped>(
    items: &[Item<I>],
    reduce: &dyn Fn(&I) -> I,
    kept: Option<KeptParams<'_, I>>,
) -> Vec<Item<I>> {
    items
        .iter()
        .map(|it| match it {
            Item::Inst(i) => Item::Inst(reduce(i)),
            Item::Loop(l) => {
                let body = corner_items(&l.body, reduce, kept);
                let step: Vec<i64> = match kept {
                    Some(kept) => {
                        let keep = kept_params(&l.body, kept);
                        l.step.iter().zip(&keep).filter(|(_, k)| **k).map(|(s, _)| *s).collect()
                    }
                    None => l.step.clone(),
                };
                if l.trips <= 2 {
                    Item::Loop(Loop { trips: l.trips, body, step })
                } else {
                    // Trips 0 and T-1: one step of (T-1) times the step.
                    let t = i64::from(l.trips - 1);
                    Item::Loop(Loop { trips: 2, body, step: step.into_iter().map(|s| s.saturating_mul(t)).collect() })
                }
            }
        })
        .collect()
}

/// For each parameter of `items`, whether `kept` keeps it.
fn kept_params<I>(items: &[Item<I>], kept: KeptParams<'_, I>) -> Vec<bool> {
    fn walk<I>(items: &[Item<I>], kept: KeptParams<'_, I>, out: &mut Vec<bool>) {
        for it in items {
            match it {
                Item::Inst(i) => kept(i, out),
                Item::Loop(l) => walk(&l.body, kept, out),
            }
        }
    }
    let mut out = Vec::new();
    walk(items, kept, &mut out);
    out
}

/// What the IR's own rules run on (see [`rules_form`]).
#[derive(Clone, Debug, PartialEq)]
pub enum RulesForm<T> {
    /// The expansion: every rule is checked exactly.
    Expansion,
    /// The corner sequence (its looped form).
    Corner(T),
}

/// A sequence too large to expand whose corner sequence is too large as well.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CornerTooLarge {
    /// Unrolled instructions of the sequence.
    pub unrolled: u64,
    /// Instructions of its corner sequence.
    pub corner: u64,
    /// The most the verifier expands.
    pub max: u64,
}

/// Whether the IR's rules run on the expansion of a sequence of `unrolled` instructions (at
/// most `max_expanded` of them) or on its corner sequence, which `corner` builds with its
/// unrolled length; that is refused past `max_expanded` or [`MAX_EXPANDED`], whichever is
/// larger.
pub fn rules_form<T>(
    unrolled: u64,
    max_expanded: u64,
    corner: impl FnOnce() -> (T, u64),
) -> Result<RulesForm<T>, CornerTooLarge> {
    if unrolled <= max_expanded {
        return Ok(RulesForm::Expansion);
    }
    let (c, len) = corner();
    let max = max_expanded.max(MAX_EXPANDED);
    if len > max {
        return Err(CornerTooLarge { unrolled, corner: len, max });
    }
    Ok(RulesForm::Corner(c))
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
