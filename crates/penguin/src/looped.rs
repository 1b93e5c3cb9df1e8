//! Loops over instruction sequences, shared by both IRs: a body repeated `trips` times whose
//! parameters advance by a fixed step each iteration, as real instruction streams loop
//! instead of unrolling.
//!
//! The machinery here is generic over the instruction type: anything [`Stepped`] (it can
//! list its *parameters*, the integers that may change from one iteration to the next, and
//! return a copy advanced by a delta) can be looped. Penguin's instructions are looped as
//! [`PirInst`] in a [`LoopedFunction`]; BIR's engine instructions in `bir::LoopedProgram`.
//!
//! Iteration `k` of a [`Loop`] (`0 <= k < trips`) is its body with every parameter advanced
//! by `k * step[j]`. A loop's parameters are those of its body items, in order (the loop's
//! own step is fixed); [`params`] lists them. Everything that is not a parameter is the same
//! in every iteration.
//!
//! [`roll`] finds the loops in an unrolled sequence of any [`Rolled`] instruction type
//! ([`LoopedFunction::roll`] for a Penguin function); [`nest`] rolls one along the loop nest
//! its producer marked ([`LoopedFunction::roll_nest`]); [`verify`] checks a looped Penguin
//! function ([`verify_looped`]).

use serde::{Deserialize, Serialize};

pub mod check;
#[cfg(test)]
pub(crate) mod fixture;
mod function;
pub mod nest;
pub mod roll;
pub mod verify;

pub use function::{ExpandError, LoopedFunction, PirInst, PirShape};
pub use nest::{
    loop_nest, printed_lines, roll_nest, roll_nest_gapped, roll_nest_shortest, roll_segments, LoopShape, NestError,
    NestGap, NestMark,
};
pub use roll::{roll_items, Rolled};
pub use verify::{verify_looped, verify_looped_within, LoopAt, LoopError, MAX_EXPANDED};

/// An instruction whose parameters can be stepped from one loop iteration to the next.
pub trait Stepped: Clone {
    /// How many parameters it has.
    fn param_count(&self) -> usize;
    /// Append its parameters, in their fixed order, to `out`.
    fn push_params(&self, out: &mut Vec<i64>);
    /// A copy with each parameter advanced by the matching entry of `delta`
    /// (`delta.len() == self.param_count()`); `None` when one leaves its range.
    fn advance(&self, delta: &[i64]) -> Option<Self>;
}

/// One entry of a looped sequence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Item<I> {
    /// One instruction.
    Inst(I),
    /// A repeated body.
    Loop(Loop<I>),
}

/// `trips` repetitions of `body`, iteration `k` advanced by `k * step`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Loop<I> {
    /// Iterations (at least 1).
    pub trips: u32,
    /// The repeated items.
    pub body: Vec<Item<I>>,
    /// Per-iteration increment of each body parameter, in [`params`] order
    /// (`step.len() == param_count(&body)`).
    pub step: Vec<i64>,
}

/// Why a looped sequence does not expand.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// A loop with no iterations.
    #[error("a loop has 0 trips")]
    ZeroTrips,
    /// A loop whose step does not have one entry per body parameter.
    #[error("a loop's step has {got} entries but its body has {want} parameters")]
    StepLength {
        /// Entries of the step.
        got: usize,
        /// Parameters of the body.
        want: usize,
    },
    /// An iteration moves a parameter out of its range.
    #[error("a loop moves a parameter out of range")]
    OutOfRange,
}

/// The number of parameters of a sequence of items.
pub fn param_count<I: Stepped>(items: &[Item<I>]) -> usize {
    items
        .iter()
        .map(|it| match it {
            Item::Inst(i) => i.param_count(),
            Item::Loop(l) => param_count(&l.body),
        })
        .sum()
}

/// The parameters of a sequence of items, in order.
pub fn params<I: Stepped>(items: &[Item<I>]) -> Vec<i64> {
    fn walk<I: Stepped>(items: &[Item<I>], out: &mut Vec<i64>) {
        for it in items {
            match it {
                Item::Inst(i) => i.push_params(out),
                Item::Loop(l) => walk(&l.body, out),
            }
        }
    }
    let mut out = Vec::with_capacity(param_count(items));
    walk(items, &mut out);
    out
}

/// Instructions the unrolled sequence has, saturating at `u64::MAX`.
pub fn unrolled_len<I>(items: &[Item<I>]) -> u64 {
    items
        .iter()
        .map(|it| match it {
            Item::Inst(_) => 1,
            Item::Loop(l) => u64::from(l.trips).saturating_mul(unrolled_len(&l.body)),
        })
        .fold(0, u64::saturating_add)
}

/// Every loop in `items` has at least one trip and one step entry per body parameter.
pub fn check_steps<I: Stepped>(items: &[Item<I>]) -> Result<(), StepError> {
    for it in items {
        if let Item::Loop(l) = it {
            if l.trips == 0 {
                return Err(StepError::ZeroTrips);
            }
            let want = param_count(&l.body);
            if l.step.len() != want {
                return Err(StepError::StepLength { got: l.step.len(), want });
            }
            check_steps(&l.body)?;
        }
    }
    Ok(())
}

/// Call `f` on every instruction of `items` in execution order, with parameters advanced by
/// `base` (one entry per parameter of `items`); stops at the first `Err`. Run
/// [`check_steps`] first: a step of the wrong length is reported as
/// [`StepError::OutOfRange`] here.
pub fn for_each_inst<I: Stepped, E: From<StepError>>(
    items: &[Item<I>],
    base: &[i64],
    f: &mut dyn FnMut(I) -> Result<(), E>,
) -> Result<(), E> {
    let mut at = 0;
    for it in items {
        let n = match it {
            Item::Inst(i) => i.param_count(),
            Item::Loop(l) => param_count(&l.body),
        };
        let delta = base.get(at..at + n).ok_or(StepError::OutOfRange)?;
        match it {
            Item::Inst(i) => f(i.advance(delta).ok_or(StepError::OutOfRange)?)?,
            Item::Loop(l) => {
                if l.step.len() != n {
                    return Err(StepError::OutOfRange.into());
                }
                let mut delta = delta.to_vec();
                for k in 0..l.trips {
                    if k > 0 {
                        for (d, s) in delta.iter_mut().zip(&l.step) {
                            *d = d.checked_add(*s).ok_or(StepError::OutOfRange)?;
                        }
                    }
                    for_each_inst(&l.body, &delta, f)?;
                }
            }
        }
        at += n;
    }
    Ok(())
}

/// The unrolled index, in the first iteration of its loops, of the instruction that unrolled
/// instruction `n` of `items` is an iteration of (where a looped text prints it); `None` past
/// the end.
pub fn first_iteration<I>(items: &[Item<I>], n: u64) -> Option<u64> {
    fn find<I>(items: &[Item<I>], start: u64, n: u64) -> Option<u64> {
        let mut at = start;
        for it in items {
            match it {
                Item::Inst(_) => {
                    if at == n {
                        return Some(at);
                    }
                    at = at.saturating_add(1);
                }
                Item::Loop(l) => {
                    let body = unrolled_len(&l.body);
                    let all = body.saturating_mul(u64::from(l.trips));
                    if n >= at && n - at < all && body > 0 {
                        return find(&l.body, at, at + (n - at) % body);
                    }
                    at = at.saturating_add(all);
                }
            }
        }
        None
    }
    find(items, 0, n)
}

/// Call `f` on every instruction of the unrolled `items`, in order, with the unrolled index of
/// the first iteration of the instruction it is an iteration of ([`first_iteration`] of each
/// unrolled index in turn, in time linear in the unrolled size).
pub fn for_each_first_iteration<I>(items: &[Item<I>], mut f: impl FnMut(u64)) {
    fn walk<I>(items: &[Item<I>], first: &mut u64, f: &mut dyn FnMut(u64)) {
        for it in items {
            match it {
                Item::Inst(_) => {
                    f(*first);
                    *first += 1;
                }
                Item::Loop(l) => {
                    let start = *first;
                    for _ in 0..l.trips {
                        *first = start;
                        walk(&l.body, first, f);
                    }
                    let body = *first - start;
                    *first = start + body * u64::from(l.trips);
                }
            }
        }
    }
    walk(items, &mut 0, &mut f);
}

/// Every instruction of `items`, unrolled (after [`check_steps`]).
pub fn expand_items<I: Stepped>(items: &[Item<I>]) -> Result<Vec<I>, StepError> {
    check_steps(items)?;
    let mut out = Vec::new();
    let zero = vec![0; param_count(items)];
    for_each_inst(items, &zero, &mut |i| {
        out.push(i);
        Ok::<(), StepError>(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::fixture::{looped, t, T};
    use super::*;

    #[test]
    fn nested_loops_expand_with_their_steps() {
        // outer x2 { a(0 + 10*i0); inner x3 { b(1 + 10*i0 + 2*i1) } }; c(99)
        let inner = looped(3, vec![t("b", &[1])], vec![2]);
        let items = vec![looped(2, vec![t("a", &[0]), inner], vec![10, 10]), t("c", &[99])];
        assert_eq!(param_count(&items), 3);
        assert_eq!(params(&items), vec![0, 1, 99]);
        assert_eq!(unrolled_len(&items), 9);
        let got = expand_items(&items).unwrap();
        let want: Vec<T> =
            [("a", 0), ("b", 1), ("b", 3), ("b", 5), ("a", 10), ("b", 11), ("b", 13), ("b", 15), ("c", 99)]
                .into_iter()
                .map(|(name, p)| T(name, vec![p]))
                .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn first_iterations_name_the_printed_instruction() {
        // a; 2 x { b; 3 x { c } }; d: unrolled a b c c c b c c c d.
        let inner = looped(3, vec![t("c", &[])], vec![]);
        let items = vec![t("a", &[]), looped(2, vec![t("b", &[]), inner], vec![]), t("d", &[])];
        let firsts: Vec<Option<u64>> = (0..11).map(|n| first_iteration(&items, n)).collect();
        let want = [0, 1, 2, 2, 2, 1, 2, 2, 2, 9];
        assert_eq!(firsts[..10], want.map(Some));
        assert_eq!(firsts[10], None);
        let mut all = Vec::new();
        for_each_first_iteration(&items, |f| all.push(f));
        assert_eq!(all, want);
    }

    #[test]
    fn bad_loops_are_refused() {
        let zero = vec![looped(0, vec![t("a", &[0])], vec![1])];
        assert_eq!(expand_items(&zero), Err(StepError::ZeroTrips));
        let short = vec![looped(2, vec![t("a", &[0])], vec![])];
        assert_eq!(expand_items(&short), Err(StepError::StepLength { got: 0, want: 1 }));
        // The third trip moves the parameter below 0.
        let far = vec![looped(3, vec![t("a", &[100])], vec![-60])];
        assert_eq!(expand_items(&far), Err(StepError::OutOfRange));
    }
}
