//! The nest roll: loops along a producer's own loop nest, from *marks* it records while it
//! emits, instead of loops guessed from the unrolled sequence alone ([`super::roll`]).
//!
//! # Marks
//! A producer that walks a loop nest records a [`NestMark`] where each iteration of each of
//! its loops starts: `at` is the place in the unrolled sequence of the iteration's first
//! instruction, `level` the loop's depth (0 for the outermost loop, 1 for the loop inside it,
//! ...). A mark at level `l` also starts an iteration of every loop deeper than `l`, so a
//! producer only records the shallowest level that starts at a place. Levels need not be
//! contiguous (only their order matters), and an iteration may hold other work than its
//! loop's own (a software pipeline puts the loads of step `i + 1` in step `i`'s segment: the
//! segments are what repeats, not the steps).
//!
//! # Segments
//! The marks cut the sequence into a tree of *segments*: the sequence is cut at every mark of
//! the shallowest level it holds; each piece (the piece before the first mark too, a
//! prologue) is cut again at the marks of the next level inside it, and so on. A piece with no
//! marks inside is a leaf: its instructions are rolled with the greedy [`roll_items`] (loops
//! the producer did not mark: tiles of a step, K chunks). Then, bottom up, each piece's
//! sequence of child segments is rolled into loops whose boundaries are segment boundaries.
//!
//! # Periods
//! A run of `t >= 2` consecutive groups of `p` segments (the *period*) becomes one
//! [`Loop`] `{ trips: t, body: <the p segments' items>, step }` when the groups have equal
//! shapes segment by segment (equal items with every parameter zeroed, equal inner loops) and
//! every parameter advances by the same step from one group to the next. A producer's
//! rotations (buffer slot parity, PSUM banks, snake order) make the segments repeat only
//! every few iterations: a period of 2, 4, ... Each round tries periods 1 to
//! [`SMALL_PERIODS`], the distances at which a segment's shape recurs and a few longer ones
//! ([`LONG_PERIODS`]), up to [`MAX_NEST_PERIOD`], each rolled greedily left to right (the
//! most trips at each start, unless a run starting up to one period later has more: two
//! trips take any step, so a first iteration whose edges reach back to a longer prologue
//! would otherwise pair with the second and cut the loop), and keeps the one whose result
//! prints shortest (a loop's
//! header and closing line count two); rounds repeat on the shorter sequence (loops of
//! loops of the same level) until no period shortens it. Segments that fit no run (a first
//! iteration without the edges of a previous one, the last one of a software pipeline,
//! ragged edge blocks) stay as they are: peeled iterations.
//!
//! Rolling never changes the meaning: [`expand_items`](super::expand_items) of the result is
//! the input sequence, for the same reason as [`super::roll`]'s.

use rustc_hash::FxHashMap as HashMap;
use std::hash::Hash;

use serde::{Deserialize, Serialize};

use super::roll::{roll_items, run_trips, Rolled, ShapeIds};
use super::{params, Item, Loop};

/// The longest body, in segments, a loop of segments may get.
pub const MAX_NEST_PERIOD: usize = 64;

/// Periods tried in every round.
pub const SMALL_PERIODS: usize = 8;

/// Longer periods tried in every round (as the trips allow).
pub const LONG_PERIODS: [usize; 6] = [12, 16, 24, 32, 48, 64];

/// Where one iteration of a loop of the producer's nest starts (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NestMark {
    /// The place, in the unrolled sequence, of the iteration's first instruction.
    pub at: u32,
    /// The depth of the loop: 0 outermost. The mark also starts an iteration of every
    /// deeper loop.
    pub level: u32,
}

/// Where a producer skipped iterations of a loop of its nest (see [`roll_nest_gapped`]): the
/// iteration that starts at `at` (a mark of `level`) comes `skipped` periods of `period`
/// iterations after the one before it, which were not emitted because they repeat the
/// iterations before them (every parameter advancing by the same step per period).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NestGap {
    /// The place, in the emitted sequence, of the first iteration after the gap.
    pub at: u32,
    /// The depth of the loop the iterations belong to.
    pub level: u32,
    /// Iterations per period (the skipped iterations are whole periods).
    pub period: u32,
    /// Periods skipped.
    pub skipped: u32,
}

/// Marks that do not fit the sequence they mark.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NestError {
    /// A mark past the end of the sequence.
    #[error("a nest mark at {at} is past the end of the sequence ({len} instructions)")]
    PastEnd {
        /// Where the mark is.
        at: u32,
        /// Instructions in the sequence.
        len: usize,
    },
    /// The iterations around a gap do not repeat as the gap says (the producer skipped
    /// iterations that differ from the ones it emitted).
    #[error("the iterations around the gap at {at} (level {level}) do not repeat with a period of {period}: {why}")]
    Gap {
        /// Where the gap is.
        at: u32,
        /// Its level.
        level: u32,
        /// Its period.
        period: u32,
        /// What differs.
        why: &'static str,
    },
    /// Marks out of order.
    #[error("nest mark {index} (at {at}) comes before the mark ahead of it")]
    Unordered {
        /// The mark's index.
        index: usize,
        /// Where it is.
        at: u32,
    },
}

/// Roll `items` along the nest its `marks` describe (see the module doc); `marks` index
/// `items` and are in increasing order of place.
pub fn roll_nest<I: Rolled>(items: Vec<Item<I>>, marks: &[NestMark]) -> Result<Vec<Item<I>>, NestError> {
    roll_nest_gapped(items, marks, &[])
}

/// [`roll_nest`] of a sequence whose producer skipped iterations (`gaps`, in increasing
/// order of place, each at one of the marks): every gap's loop is rolled over the
/// iterations on both sides of it and the skipped ones, so the result expands to the whole
/// sequence the producer would have emitted without skipping.
///
/// At a gap of period `p` the `2p` iterations before it and the `p` after it must repeat:
/// equal shapes, and the parameters of each period `s` apart, with `s * (skipped + 1)`
/// across the gap. They become one loop, extended backwards and forwards over the
/// neighbouring periods that continue it; anything else is [`NestError::Gap`].
pub fn roll_nest_gapped<I: Rolled>(
    items: Vec<Item<I>>,
    marks: &[NestMark],
    gaps: &[NestGap],
) -> Result<Vec<Item<I>>, NestError> {
    for (index, m) in marks.iter().enumerate() {
        if m.at as usize > items.len() {
            return Err(NestError::PastEnd { at: m.at, len: items.len() });
        }
        if index > 0 && marks[index - 1].at > m.at {
            return Err(NestError::Unordered { index, at: m.at });
        }
    }
    let mut shapes = Shapes::default();
    build(items, 0, marks, gaps, &mut shapes)
}

/// [`roll_nest`] with the marks as given, then with the outermost level merged into the next
/// one (its marks moved to that level): whichever prints shorter ([`printed_lines`]; ties go
/// to the nest as marked). (Merging deeper levels too was tried on the GEMM schedules: it
/// never printed shorter and tripled the time.)
///
/// Merging trades the outer loop's boundaries for fewer peeled iterations: an outer
/// iteration whose first inner iteration differs (a first use, the software pipeline's last
/// step) is peeled whole, while the merged sequence of inner iterations peels only the
/// inner iterations that differ and loops over the rest with a period of one outer
/// iteration (starting mid-way through one).
pub fn roll_nest_shortest<I: Rolled>(items: &[Item<I>], marks: &[NestMark]) -> Result<Vec<Item<I>>, NestError> {
    let mut levels: Vec<u32> = marks.iter().map(|m| m.level).collect();
    levels.sort_unstable();
    levels.dedup();
    let nested = roll_nest(items.to_vec(), marks)?;
    let Some(&next) = levels.get(1) else { return Ok(nested) };
    let merged: Vec<NestMark> = marks.iter().map(|m| NestMark { at: m.at, level: m.level.max(next) }).collect();
    let flat = roll_nest(items.to_vec(), &merged)?;
    Ok(if printed_lines(&flat) < printed_lines(&nested) { flat } else { nested })
}

/// The loops of a looped sequence, in order, with the loops inside each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopShape {
    /// Iterations.
    pub trips: u32,
    /// Items of the body (instructions and loops).
    pub body_items: usize,
    /// The unrolled instructions of one iteration.
    pub body_len: u64,
    /// The loops of the body.
    pub inner: Vec<LoopShape>,
}

/// The loops of `items` (not of their bodies: see [`LoopShape::inner`]).
pub fn loop_nest<I>(items: &[Item<I>]) -> Vec<LoopShape> {
    items
        .iter()
        .filter_map(|it| match it {
            Item::Inst(_) => None,
            Item::Loop(l) => Some(LoopShape {
                trips: l.trips,
                body_items: l.body.len(),
                body_len: super::unrolled_len(&l.body),
                inner: loop_nest(&l.body),
            }),
        })
        .collect()
}

/// The lines `items` print as: one per instruction, two per loop (header and close).
pub fn printed_lines<I>(items: &[Item<I>]) -> usize {
    items
        .iter()
        .map(|it| match it {
            Item::Inst(_) => 1,
            Item::Loop(l) => 2 + printed_lines(&l.body),
        })
        .sum()
}

/// Roll the piece `items` (starting at place `base`) with the marks and gaps inside it.
fn build<I: Rolled>(
    items: Vec<Item<I>>,
    base: usize,
    marks: &[NestMark],
    gaps: &[NestGap],
    shapes: &mut Shapes<I>,
) -> Result<Vec<Item<I>>, NestError> {
    let Some(level) = marks.iter().map(|m| m.level).min() else {
        return Ok(roll_items(items));
    };
    let end = base + items.len();
    let bounds: Vec<usize> = marks.iter().filter(|m| m.level == level).map(|m| m.at as usize).chain([end]).collect();
    let mut rest = items.into_iter();
    let mut start = base;
    let mut units = Vec::new();
    let mut starts = Vec::new();
    for b in bounds {
        if b <= start {
            continue;
        }
        let piece: Vec<Item<I>> = rest.by_ref().take(b - start).collect();
        let lo = marks.partition_point(|m| (m.at as usize) < start);
        let hi = marks.partition_point(|m| (m.at as usize) < b);
        let inner: Vec<NestMark> = marks[lo..hi].iter().filter(|m| m.level > level).copied().collect();
        let inner_gaps: Vec<NestGap> = gaps
            .iter()
            .filter(|g| (g.at as usize) > start && (g.at as usize) < b && g.level > level)
            .copied()
            .collect();
        units.push(build(piece, start, &inner, &inner_gaps, shapes)?);
        starts.push(start);
        start = b;
    }
    // Close the gaps of this level, last first (so the units' indices before it stay).
    for g in gaps.iter().rev().filter(|g| g.level == level) {
        let Some(j) = starts.iter().position(|&s| s == g.at as usize) else {
            return Err(NestError::Gap {
                at: g.at,
                level: g.level,
                period: g.period,
                why: "no iteration starts there",
            });
        };
        let (closed, first, last) = close_gap(units, j, *g, shapes)?;
        units = closed;
        let s0 = starts[first];
        starts.splice(first..last, [s0]);
    }
    Ok(roll_units(units, shapes))
}

/// The units of a level with a gap closed: the units, and the range of the old units the
/// new loop replaced.
type Closed<I> = (Vec<Vec<Item<I>>>, usize, usize);

/// Replace the units around the gap `g` (unit `j` is the first after it) by one loop over
/// them and the skipped periods (see [`roll_nest_gapped`]).
fn close_gap<I: Rolled>(
    mut units: Vec<Vec<Item<I>>>,
    j: usize,
    g: NestGap,
    shapes: &mut Shapes<I>,
) -> Result<Closed<I>, NestError> {
    let fail = |why| NestError::Gap { at: g.at, level: g.level, period: g.period, why };
    let p = g.period as usize;
    if p == 0 || j < 2 * p || j + p > units.len() {
        return Err(fail("fewer than two periods before it or one after it"));
    }
    // Each unit's shape and parameters, computed once (the walks below compare a unit with
    // its neighbours period after period).
    let ids: Vec<u32> = units.iter().map(|u| shapes.seq(u)).collect();
    let mut unit_params: Vec<Option<Vec<i64>>> = vec![None; units.len()];
    let mut params_of = |range: std::ops::Range<usize>| -> Vec<i64> {
        let mut out = Vec::new();
        for k in range {
            out.extend_from_slice(unit_params[k].get_or_insert_with(|| params(&units[k])));
        }
        out
    };
    let (a, b, c) = (j - 2 * p, j - p, j);
    let shape = &ids[a..b];
    if &ids[b..c] != shape || &ids[c..c + p] != shape {
        return Err(fail("the periods differ in shape"));
    }
    let (pa, pb, pc) = (params_of(a..b), params_of(b..c), params_of(c..c + p));
    let step: Vec<i64> = pa.iter().zip(&pb).map(|(x, y)| y.wrapping_sub(*x)).collect();
    let across = i64::from(g.skipped) + 1;
    let expected = |base: &[i64], k: i64| -> Option<Vec<i64>> {
        base.iter().zip(&step).map(|(x, s)| s.checked_mul(k).and_then(|d| x.checked_add(d))).collect()
    };
    if expected(&pb, across).as_deref() != Some(&pc[..]) {
        return Err(fail("the parameters do not step across it as they step before it"));
    }
    // The loop: periods a, b, the skipped ones and c; then the neighbours that continue it.
    let mut first = a;
    let mut base = pa;
    let mut trips = u64::from(g.skipped) + 3;
    while first >= p {
        let prev = first - p;
        if &ids[prev..first] != shape {
            break;
        }
        let pp = params_of(prev..first);
        if expected(&pp, 1).as_deref() != Some(&base[..]) {
            break;
        }
        first = prev;
        base = pp;
    }
    // Unit indices of periods a, b (and the ones taken before them) counted in `trips` so far:
    // the periods from `first` to c inclusive, plus the skipped ones.
    trips += ((a - first) / p) as u64;
    let mut last = c + p;
    while last + p <= units.len() {
        if &ids[last..last + p] != shape {
            break;
        }
        let k = i64::try_from(trips).unwrap_or(i64::MAX);
        if expected(&base, k).as_deref() != Some(&params_of(last..last + p)[..]) {
            break;
        }
        trips += 1;
        last += p;
    }
    let trips = u32::try_from(trips).map_err(|_| fail("more trips than a loop counts (u32)"))?;
    let tail = units.split_off(last);
    let body: Vec<Item<I>> = units.drain(first..).take(p).flatten().collect();
    units.push(vec![Item::Loop(Loop { trips, body, step })]);
    units.extend(tail);
    Ok((units, first, last))
}

/// One entry of a sequence of segments being rolled.
struct Unit<I> {
    items: Vec<Item<I>>,
    shape: u32,
    params: Vec<i64>,
    lines: usize,
}

/// Roll a sequence of segments into loops of segments (see the module doc) and flatten it:
/// one level of [`roll_nest`], the segments' own items left as they are.
pub fn roll_segments<I: Rolled>(segments: Vec<Vec<Item<I>>>) -> Vec<Item<I>> {
    roll_units(segments, &mut Shapes::default())
}

fn roll_units<I: Rolled>(segments: Vec<Vec<Item<I>>>, shapes: &mut Shapes<I>) -> Vec<Item<I>> {
    let mut level: Vec<Unit<I>> = segments
        .into_iter()
        .map(|items| Unit { shape: shapes.seq(&items), params: params(&items), lines: printed_lines(&items), items })
        .collect();
    loop {
        let now: usize = level.iter().map(|u| u.lines).sum();
        let best = candidates(&level)
            .into_iter()
            .map(|p| (runs(&level, p), p))
            .filter(|(r, _)| !r.is_empty())
            .map(|(r, p)| (lines_after(&level, p, &r), p, r))
            .min_by_key(|(lines, p, _)| (*lines, *p));
        match best {
            Some((lines, p, r)) if lines < now => level = apply(level, p, &r, shapes),
            _ => break,
        }
    }
    level.into_iter().flat_map(|u| u.items).collect()
}

/// The periods worth trying, ascending.
fn candidates<I>(level: &[Unit<I>]) -> Vec<usize> {
    let half = level.len() / 2;
    let top = MAX_NEST_PERIOD.min(half);
    let mut want = vec![false; top + 1];
    for p in (1..=SMALL_PERIODS).chain(LONG_PERIODS) {
        if let Some(w) = want.get_mut(p) {
            *w = true;
        }
    }
    let mut last: HashMap<u32, usize> = HashMap::default();
    for (i, u) in level.iter().enumerate() {
        if let Some(prev) = last.insert(u.shape, i) {
            if let Some(w) = want.get_mut(i - prev) {
                *w = true;
            }
        }
    }
    (1..want.len()).filter(|&p| want[p]).collect()
}

/// The runs `(start, trips)` of period `p`, greedily left to right.
fn runs<I>(level: &[Unit<I>], p: usize) -> Vec<(usize, usize)> {
    let n = level.len();
    if p == 0 || 2 * p > n {
        return Vec::new();
    }
    let trips = run_trips(n, p, &|a, b| level[a].shape == level[b].shape, &|j| &level[j].params);
    let trips_at = |i: usize| trips[i];
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let t = trips_at(i);
        // A run that starts up to one period later with more trips goes first: the first
        // iterations of a loop often differ in a step only (edges back to a longer
        // prologue), and two trips take any step.
        let later = (1..=p).take_while(|q| i + q < n).any(|q| trips_at(i + q) > t);
        if t >= 2 && !later {
            out.push((i, t));
            i += t * p;
        } else {
            i += 1;
        }
    }
    out
}

/// The lines the level prints as once the runs of period `p` are loops.
fn lines_after<I>(level: &[Unit<I>], p: usize, runs: &[(usize, usize)]) -> usize {
    let total: usize = level.iter().map(|u| u.lines).sum();
    runs.iter().fold(total, |acc, &(i, t)| {
        let body: usize = level[i..i + p].iter().map(|u| u.lines).sum();
        acc - t * body + body + 2
    })
}

/// The level with the runs of period `p` rolled into loops.
fn apply<I: Rolled>(level: Vec<Unit<I>>, p: usize, runs: &[(usize, usize)], shapes: &mut Shapes<I>) -> Vec<Unit<I>> {
    let mut out = Vec::with_capacity(level.len());
    let mut next_run = runs.iter().peekable();
    let mut level: Vec<Option<Unit<I>>> = level.into_iter().map(Some).collect();
    let mut i = 0;
    while i < level.len() {
        let Some(&&(start, trips)) = next_run.peek().filter(|r| r.0 == i) else {
            out.extend(level[i].take());
            i += 1;
            continue;
        };
        next_run.next();
        let mut step = Vec::new();
        let mut base = Vec::new();
        let mut body = Vec::new();
        for q in start..start + p {
            let (a, b) = (level[q].as_ref(), level[q + p].as_ref());
            if let (Some(a), Some(b)) = (a, b) {
                step.extend(a.params.iter().zip(&b.params).map(|(x, y)| y.wrapping_sub(*x)));
            }
            if let Some(u) = level[q].take() {
                base.extend(u.params);
                body.extend(u.items);
            }
        }
        let lines = printed_lines(&body) + 2;
        let item = Item::Loop(Loop { trips: trips as u32, body, step });
        let shape = shapes.item(&item);
        out.push(Unit { items: vec![item], shape, params: base, lines });
        i = start + trips * p;
    }
    out
}

/// Interned shapes of instructions, loops and segments: equal ids for equal shapes.
struct Shapes<I: Rolled> {
    ids: ShapeIds<I>,
    seqs: HashMap<Vec<u32>, u32>,
}

impl<I: Rolled> Default for Shapes<I> {
    fn default() -> Self {
        Shapes { ids: ShapeIds::default(), seqs: HashMap::default() }
    }
}

impl<I: Rolled> Shapes<I> {
    fn item(&mut self, it: &Item<I>) -> u32 {
        match it {
            Item::Inst(i) => self.ids.of_inst(i),
            Item::Loop(l) => {
                let body: Vec<u32> = l.body.iter().map(|b| self.item(b)).collect();
                self.ids.of_loop(l.trips, &l.step, &body)
            }
        }
    }

    fn seq(&mut self, items: &[Item<I>]) -> u32 {
        let key: Vec<u32> = items.iter().map(|it| self.item(it)).collect();
        if let Some(&id) = self.seqs.get(&key) {
            return id;
        }
        let id = self.ids.fresh();
        self.seqs.insert(key, id);
        id
    }
}

#[cfg(test)]
#[path = "nest_tests.rs"]
mod tests;
