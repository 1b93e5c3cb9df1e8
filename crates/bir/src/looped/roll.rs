//! The roll pass: find the loops in a fully unrolled [`Program`].
//!
//! Each engine stream is rolled on its own, bottom up. An item's *shape* is everything but
//! its parameters (see [`super`]): for an instruction, the instruction with every byte offset,
//! start partition and wait value set to 0; for a loop, its trip count, its step and the
//! shapes of its body. A run of `T >= 2` consecutive blocks of `P` items is rolled into one
//! [`Loop`] when the blocks have the same shapes item by item and every parameter advances by
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

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use super::{advance_inst, param_count, params, push_inst_params, Item, Loop, LoopedProgram};
use crate::program::{BirInst, Program};

/// The longest body (in items of the level being rolled) a loop may get.
pub const MAX_PERIOD: usize = 256;

/// Periods tried in every round whether or not a shape recurs at that distance.
const SMALL_PERIODS: usize = 8;

/// Roll every stream of `p` (see the module doc).
pub fn roll(p: &Program) -> LoopedProgram {
    let mut lp = LoopedProgram::from_program(p);
    let mut shapes = Shapes::default();
    for s in &mut lp.streams {
        let items = std::mem::take(s);
        *s = roll_items(items, &mut shapes);
    }
    lp
}

/// Interned shapes: equal ids mean equal shapes.
#[derive(Default)]
struct Shapes {
    /// Instructions with zeroed parameters, bucketed by a hash.
    insts: HashMap<u64, Vec<(BirInst, u32)>>,
    /// Loops: trips, step and body shapes.
    loops: HashMap<(u32, Vec<i64>, Vec<u32>), u32>,
    next: u32,
}

impl Shapes {
    fn fresh(&mut self) -> u32 {
        self.next += 1;
        self.next
    }

    fn of_inst(&mut self, inst: &BirInst) -> u32 {
        // A parameter that does not round-trip through i64 cannot be stepped.
        if inst.op.aps().iter().any(|(_, ap)| i64::try_from(ap.byte_offset).is_err()) {
            return self.fresh();
        }
        let mut ps = Vec::new();
        push_inst_params(inst, &mut ps);
        let neg: Vec<i64> = ps.iter().map(|v| -v).collect();
        let Some(zero) = advance_inst(inst, &neg) else {
            return self.fresh();
        };
        let mut h = DefaultHasher::new();
        zero.op.name().hash(&mut h);
        for (name, ap) in zero.op.aps() {
            name.hash(&mut h);
            ap.hash(&mut h);
        }
        zero.waits.hash(&mut h);
        zero.signal.hash(&mut h);
        zero.origin.hash(&mut h);
        let key = h.finish();
        if let Some(id) = self.insts.get(&key).and_then(|b| b.iter().find(|(i, _)| *i == zero).map(|(_, id)| *id)) {
            return id;
        }
        let id = self.fresh();
        self.insts.entry(key).or_default().push((zero, id));
        id
    }

    fn of_loop(&mut self, trips: u32, step: &[i64], body: &[u32]) -> u32 {
        let key = (trips, step.to_vec(), body.to_vec());
        if let Some(&id) = self.loops.get(&key) {
            return id;
        }
        let id = self.fresh();
        self.loops.insert(key, id);
        id
    }
}

/// A stream being rolled: items with their shapes and parameters.
struct Level {
    items: Vec<Item>,
    shape: Vec<u32>,
    params: Vec<Vec<i64>>,
}

fn roll_items(items: Vec<Item>, shapes: &mut Shapes) -> Vec<Item> {
    let shape = items
        .iter()
        .map(|it| match it {
            Item::Inst(i) => shapes.of_inst(i),
            Item::Loop(l) => {
                // A given loop's body is interned item by item.
                let body: Vec<u32> = l
                    .body
                    .iter()
                    .map(|b| match b {
                        Item::Inst(i) => shapes.of_inst(i),
                        Item::Loop(_) => shapes.fresh(),
                    })
                    .collect();
                shapes.of_loop(l.trips, &l.step, &body)
            }
        })
        .collect();
    let params = items.iter().map(|it| params(std::slice::from_ref(it))).collect();
    let mut level = Level { items, shape, params };
    'rounds: loop {
        for period in candidates(&level.shape) {
            if roll_period(&mut level, period, shapes) {
                continue 'rounds;
            }
        }
        break;
    }
    level.items
}

/// The periods worth trying, ascending.
fn candidates(shape: &[u32]) -> Vec<usize> {
    let n = shape.len();
    let mut want = vec![false; MAX_PERIOD.min(n / 2) + 1];
    for p in 1..want.len().min(SMALL_PERIODS + 1) {
        want[p] = true;
    }
    let mut last: HashMap<u32, usize> = HashMap::new();
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

/// Whether `b - a` fits an `i64` for every parameter.
fn steppable(a: &[i64], b: &[i64]) -> bool {
    a.iter().zip(b).all(|(x, y)| y.checked_sub(*x).is_some())
}

/// Whether `c - b == b - a` for every parameter (no overflow).
fn same_step(a: &[i64], b: &[i64], c: &[i64]) -> bool {
    a.iter().zip(b).zip(c).all(|((x, y), z)| match (y.checked_sub(*x), z.checked_sub(*y)) {
        (Some(d0), Some(d1)) => d0 == d1,
        _ => false,
    })
}

/// Roll every run of period `p`; whether any was found.
fn roll_period(level: &mut Level, p: usize, shapes: &mut Shapes) -> bool {
    let n = level.items.len();
    if p == 0 || 2 * p > n {
        return false;
    }
    let (shape, params) = (&level.shape, &level.params);
    // run_a[j]: consecutive j' >= j with equal shapes at j' and j' + p (and a step that fits).
    let mut run_a = vec![0usize; n - p + 1];
    for j in (0..n - p).rev() {
        let ok = shape[j] == shape[j + p] && steppable(&params[j], &params[j + p]);
        run_a[j] = if ok { run_a[j + 1] + 1 } else { 0 };
    }
    // run_b[j]: consecutive j' >= j whose step from block to block stays the same.
    let m = n.saturating_sub(2 * p);
    let mut run_b = vec![0usize; m + 1];
    for j in (0..m).rev() {
        let ok = run_a[j] > 0 && run_a[j + p] > 0 && same_step(&params[j], &params[j + p], &params[j + 2 * p]);
        run_b[j] = if ok { run_b[j + 1] + 1 } else { 0 };
    }
    let trips_at = |i: usize| -> usize {
        if i + 2 * p > n {
            return 1;
        }
        let by_shape = run_a[i] / p + 1;
        let by_step = run_b.get(i).map_or(0, |r| r / p) + 2;
        by_shape.min(by_step).min(u32::MAX as usize)
    };
    if !(0..n).any(|i| trips_at(i) >= 2) {
        return false;
    }
    let mut out = Level { items: Vec::with_capacity(n), shape: Vec::with_capacity(n), params: Vec::with_capacity(n) };
    let mut i = 0;
    while i < n {
        let trips = trips_at(i);
        if trips < 2 {
            out.items.push(level.items[i].clone());
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
        let body: Vec<Item> = level.items[i..i + p].to_vec();
        debug_assert_eq!(step.len(), param_count(&body));
        let trips = trips as u32;
        out.shape.push(shapes.of_loop(trips, &step, &level.shape[i..i + p]));
        out.items.push(Item::Loop(Loop { trips, body, step }));
        out.params.push(base);
        i += trips as usize * p;
    }
    *level = out;
    true
}

#[cfg(test)]
#[path = "roll_tests.rs"]
mod tests;
