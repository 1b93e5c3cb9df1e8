//! The roll pass: find the loops in a fully unrolled instruction sequence, for any
//! [`Rolled`] instruction type (BIR engine streams, Penguin program order).
//!
//! A sequence is rolled bottom up. An item's *shape* is everything but its parameters (see
//! [`super`]): for an instruction, its [`Rolled::shape`]; for a loop, its trip count, its step
//! and the shapes of its body. A run of `T >= 2` consecutive blocks of `P` items is rolled
//! into one [`Loop`] when the blocks have the same shapes item by item and every parameter
//! advances by the same amount from one block to the next (that amount is the loop's step).
//!
//! Rounds try periods in increasing order (1 to 8, then every distance at which an item's
//! shape next recurs, up to [`MAX_PERIOD`]) and roll, left to right and greedily (the most
//! trips at each start), every run of the first period that has one; then a new round
//! starts on the shorter sequence. Short periods first makes inner loops form before the
//! loops around them, which then roll as items of their own (loops of loops). Items that fit
//! no run (irregular prologues and epilogues, a block whose step breaks) stay as they are.
//!
//! Rolling never changes the meaning: [`expand_items`](super::expand_items) of
//! `roll_items(s)` gives back exactly the instructions of `s`, for every sequence `s` of
//! instructions (advancing a block by the step reproduces the next block exactly, because
//! the shapes are equal and the step is the difference of the parameters). An instruction
//! whose shape is `None` never joins a loop.
//!
//! Cost: a round is linear in the items for each period it tries, and there are about as
//! many rounds as distinct (nesting level, period) pairs, so the pass is about linear in the
//! instruction count.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap as HashMap, FxHasher};

use super::{param_count, params, Item, Loop, Stepped};

/// The longest body (in items of the level being rolled) a loop may get.
pub const MAX_PERIOD: usize = 256;

/// Periods tried in every round whether or not a shape recurs at that distance.
const SMALL_PERIODS: usize = 8;

/// An instruction the roll pass can put into loops.
pub trait Rolled: Stepped {
    /// Everything about an instruction that is not a parameter. Two instructions whose
    /// shapes are equal differ in their parameters only: advancing one by the difference of
    /// their parameters gives the other. Equal shapes must hash equally.
    type Shape: Hash + PartialEq;

    /// The instruction's shape, or `None` when it must never join a loop.
    fn shape(&self) -> Option<Self::Shape>;
}

/// `inst` with every parameter set to 0, or `None` when that is out of its range (a helper
/// for [`Rolled::shape`]).
pub fn zeroed<I: Stepped>(inst: &I) -> Option<I> {
    let mut ps = Vec::with_capacity(inst.param_count());
    inst.push_params(&mut ps);
    let neg: Option<Vec<i64>> = ps.iter().map(|v| v.checked_neg()).collect();
    inst.advance(&neg?)
}

/// Roll one sequence (see the module doc).
pub fn roll_items<I: Rolled>(items: Vec<Item<I>>) -> Vec<Item<I>> {
    Roller::default().roll(items)
}

/// The roll pass with its interned shapes, to roll several sequences (BIR's engine streams)
/// without interning an instruction shape twice.
pub struct Roller<I: Rolled> {
    ids: ShapeIds<I>,
}

impl<I: Rolled> Default for Roller<I> {
    fn default() -> Self {
        Roller { ids: ShapeIds::default() }
    }
}

/// Interned shapes of instructions and loops: equal ids for equal shapes (shared with the
/// nest roll, which interns segments on top).
pub(super) struct ShapeIds<I: Rolled> {
    /// Instruction shapes, bucketed by their hash.
    insts: HashMap<u64, Vec<(I::Shape, u32)>>,
    /// Loops: trips, step and body shapes.
    loops: HashMap<(u32, Vec<i64>, Vec<u32>), u32>,
    next: u32,
}

impl<I: Rolled> Default for ShapeIds<I> {
    fn default() -> Self {
        ShapeIds { insts: HashMap::default(), loops: HashMap::default(), next: 0 }
    }
}

impl<I: Rolled> ShapeIds<I> {
    /// An id equal to no other.
    pub(super) fn fresh(&mut self) -> u32 {
        self.next += 1;
        self.next
    }

    /// The id of an instruction's shape (a fresh one when it has none).
    pub(super) fn of_inst(&mut self, inst: &I) -> u32 {
        let Some(shape) = inst.shape() else {
            return self.fresh();
        };
        let mut h = FxHasher::default();
        shape.hash(&mut h);
        let key = h.finish();
        if let Some(id) = self.insts.get(&key).and_then(|b| b.iter().find(|(s, _)| *s == shape).map(|(_, id)| *id)) {
            return id;
        }
        let id = self.fresh();
        self.insts.entry(key).or_default().push((shape, id));
        id
    }

    /// The id of a loop of `trips` with this step over a body of these ids.
    pub(super) fn of_loop(&mut self, trips: u32, step: &[i64], body: &[u32]) -> u32 {
        let key = (trips, step.to_vec(), body.to_vec());
        if let Some(&id) = self.loops.get(&key) {
            return id;
        }
        let id = self.fresh();
        self.loops.insert(key, id);
        id
    }
}

impl<I: Rolled> Roller<I> {
    /// Roll one sequence (see the module doc).
    pub fn roll(&mut self, items: Vec<Item<I>>) -> Vec<Item<I>> {
        let shape = items
            .iter()
            .map(|it| match it {
                Item::Inst(i) => self.ids.of_inst(i),
                Item::Loop(l) => {
                    // A given loop's body is interned item by item.
                    let body: Vec<u32> = l
                        .body
                        .iter()
                        .map(|b| match b {
                            Item::Inst(i) => self.ids.of_inst(i),
                            Item::Loop(_) => self.ids.fresh(),
                        })
                        .collect();
                    self.ids.of_loop(l.trips, &l.step, &body)
                }
            })
            .collect();
        let params = items.iter().map(|it| params(std::slice::from_ref(it))).collect();
        let mut level = Level { items, shape, params };
        'rounds: loop {
            for period in candidates(&level.shape) {
                if self.roll_period(&mut level, period) {
                    continue 'rounds;
                }
            }
            break;
        }
        level.items
    }

    /// Roll every run of period `p`; whether any was found.
    fn roll_period(&mut self, level: &mut Level<I>, p: usize) -> bool {
        let n = level.items.len();
        if p == 0 || 2 * p > n {
            return false;
        }
        let (shape, params) = (&level.shape, &level.params);
        let trips = run_trips(n, p, &|a, b| shape[a] == shape[b], &|j| &params[j]);
        if !trips.iter().any(|&t| t >= 2) {
            return false;
        }
        let mut out =
            Level { items: Vec::with_capacity(n), shape: Vec::with_capacity(n), params: Vec::with_capacity(n) };
        // Items move to the new level (the first block of a loop as its body); the other
        // blocks of a loop are dropped.
        let mut items = std::mem::take(&mut level.items).into_iter();
        let mut i = 0;
        while i < n {
            let t = trips[i];
            if t < 2 {
                out.items.extend(items.next());
                out.shape.push(level.shape[i]);
                out.params.push(std::mem::take(&mut level.params[i]));
                i += 1;
                continue;
            }
            let mut step = Vec::new();
            let mut base = Vec::new();
            for q in i..i + p {
                step.extend(diff(&level.params[q], &level.params[q + p]).unwrap_or_default());
                base.extend_from_slice(&level.params[q]);
            }
            let body: Vec<Item<I>> = items.by_ref().take(p).collect();
            if (t - 1) * p > 0 {
                items.nth((t - 1) * p - 1);
            }
            debug_assert_eq!(step.len(), param_count(&body));
            let trips = t as u32;
            out.shape.push(self.ids.of_loop(trips, &step, &level.shape[i..i + p]));
            out.items.push(Item::Loop(Loop { trips, body, step }));
            out.params.push(base);
            i += t * p;
        }
        *level = out;
        true
    }
}

/// A sequence being rolled: items with their shapes and parameters.
struct Level<I> {
    items: Vec<Item<I>>,
    shape: Vec<u32>,
    params: Vec<Vec<i64>>,
}

/// For a sequence of `n` items and a period `p` (`0 < 2p <= n`): at each item, the trips of
/// the longest loop of period `p` that could start there (1 when none), from whether two
/// items have equal shapes and from each item's parameters: consecutive blocks equal item by
/// item whose parameters advance by the same step from one block to the next.
pub(super) fn run_trips<'a>(
    n: usize,
    p: usize,
    same_shape: &dyn Fn(usize, usize) -> bool,
    params: &dyn Fn(usize) -> &'a [i64],
) -> Vec<usize> {
    // run_a[j]: consecutive j' >= j with equal shapes at j' and j' + p (and a step that fits).
    let mut run_a = vec![0usize; n - p + 1];
    for j in (0..n - p).rev() {
        let ok = same_shape(j, j + p) && steppable(params(j), params(j + p));
        run_a[j] = if ok { run_a[j + 1] + 1 } else { 0 };
    }
    // run_b[j]: consecutive j' >= j whose step from block to block stays the same.
    let m = n.saturating_sub(2 * p);
    let mut run_b = vec![0usize; m + 1];
    for j in (0..m).rev() {
        let ok = run_a[j] > 0 && run_a[j + p] > 0 && same_step(params(j), params(j + p), params(j + 2 * p));
        run_b[j] = if ok { run_b[j + 1] + 1 } else { 0 };
    }
    (0..n)
        .map(|i| {
            if i + 2 * p > n {
                return 1;
            }
            let by_shape = run_a[i] / p + 1;
            let by_step = run_b.get(i).map_or(0, |r| r / p) + 2;
            by_shape.min(by_step).min(u32::MAX as usize)
        })
        .collect()
}

/// The periods worth trying, ascending.
fn candidates(shape: &[u32]) -> Vec<usize> {
    let n = shape.len();
    let mut want = vec![false; MAX_PERIOD.min(n / 2) + 1];
    for p in 1..want.len().min(SMALL_PERIODS + 1) {
        want[p] = true;
    }
    let mut last: HashMap<u32, usize> = HashMap::default();
    for (i, s) in shape.iter().enumerate() {
        if let Some(prev) = last.insert(*s, i) {
            if let Some(w) = want.get_mut(i - prev) {
                *w = true;
            }
        }
    }
    (1..want.len()).filter(|&p| want[p]).collect()
}

/// `b - a` for each parameter, or `None` on overflow.
fn diff(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    a.iter().zip(b).map(|(x, y)| y.checked_sub(*x)).collect()
}

/// Whether `a` and `b` have as many parameters and `b - a` fits an `i64` for every one.
fn steppable(a: &[i64], b: &[i64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| y.checked_sub(*x).is_some())
}

/// Whether `c - b == b - a` for every parameter (no overflow).
fn same_step(a: &[i64], b: &[i64], c: &[i64]) -> bool {
    a.iter().zip(b).zip(c).all(|((x, y), z)| match (y.checked_sub(*x), z.checked_sub(*y)) {
        (Some(d0), Some(d1)) => d0 == d1,
        _ => false,
    })
}

#[cfg(test)]
#[path = "roll_tests.rs"]
mod tests;
