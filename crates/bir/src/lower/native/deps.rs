//! Semaphores of a lowered nest, without expanding it.
//!
//! Every engine has one semaphore counting its signalling instructions, and a consumer
//! waits, per producer engine `e`, for `S_e`, the count of `e` at the end of its latest
//! producer (the rule of the unrolled lowering, `super::super::semaphores`). Natively:
//! - **Producers.** An edge's `from` is a place in the unrolled order, affine in the
//!   consumer's loop indices `k`. Over a box of `k`, it is resolved to one producer node at
//!   iteration `j(k) = j0 + A k`: `j0` by locating `from` at the box's first corner, each
//!   column of `A` by writing the edge's step in that loop as a multiple of a producer loop's
//!   unrolled body length, and `j(k)` staying inside the producer's loops at the box's
//!   corners. Then `pos(producer, j(k)) = from(k)` for every `k` of the box: proved, not
//!   sampled. When that fails for loop `i`, the box is split into its first iteration in `i`
//!   and the rest (at most twice per loop).
//! - **Signals.** A producer part signals if a consumer in any iteration waits for it from
//!   another engine; signals per iteration of every loop and engine are then constants
//!   `sigma`, and the count of `e` at the end of node `P` in iteration `j` is
//!   `pre0(P, e) + sig(P, e) + sum_M j_M sigma(M, e)`: affine.
//! - **Waits.** Each piece's count is affine; pieces are merged when they are one affine
//!   function (checked exactly at the split), else the loop is peeled and the whole nest is
//!   lowered again. Several edges: per engine, the maximum, which must be the same edge's
//!   over the whole box.

use super::{How, NativeError, Reshape, Tree};
use crate::error::BirError;
use crate::program::{Engine, NUM_ENGINES};

/// How many times a box may be split along one loop (an edge reaching this many iterations
/// back still resolves).
const SPLITS_PER_LOOP: u8 = 8;

/// A consumer loop of at most this many trips whose edge resolves to no single producer
/// node is unrolled completely; a longer one is refused.
const MAX_INLINED_TRIPS: i64 = 16;

/// One box of consumer iterations resolved to one producer node.
#[derive(Debug)]
struct Piece {
    lo: Vec<i64>,
    hi: Vec<i64>,
    producer: usize,
    j0: Vec<i64>,
    /// `(producer level, consumer level, delta)`: `j[producer level] += delta * k[consumer level]`.
    map: Vec<(usize, usize, i64)>,
}

/// A box of consumer iterations, resolved.
#[derive(Debug)]
enum Res {
    Leaf(Piece),
    /// Split along a consumer level: the first iterations, then the rest.
    Split {
        level: usize,
        first: Box<Res>,
        second: Box<Res>,
    },
}

/// Why a box does not resolve or merge.
enum Fail {
    /// Peeling this many first iterations of the consumer's loop at this level may help
    /// (they wait for other engines or counts than the rest).
    Peel(usize, u32),
    /// Unrolling the consumer's loop at this level by this factor may help.
    Unroll(usize, u32),
    NotAffine,
}

/// A count over a box: per engine, its value at the box's first corner and its step per
/// consumer level (`None` where the box has one iteration).
#[derive(Clone, Debug, PartialEq)]
struct Counts(Vec<(usize, i64, Vec<Option<i64>>)>);

impl Tree {
    /// Resolve edge `q` of consumer `c` over the box `lo..=hi`.
    fn resolve(&self, c: usize, q: usize, lo: Vec<i64>, hi: Vec<i64>, budget: &[u8]) -> Result<Res, Fail> {
        let node = &self.insts[c];
        let d = node.loops.len();
        let dep = node.pir.deps.get(q).ok_or(Fail::NotAffine)?;
        let s: Vec<i64> = (0..d).map(|i| node.dep_steps[i][q]).collect();
        let x = (0..d).fold(i64::from(dep.from.0), |acc, i| acc + s[i] * lo[i]);
        let (producer, j0) = u64::try_from(x).ok().and_then(|x| self.locate(x)).ok_or(Fail::NotAffine)?;
        let ploops = &self.insts[producer].loops;
        let trips = |m: usize| i64::from(self.loops[ploops[m]].trips);
        let mut map = Vec::new();
        let mut blame = None;
        let mut unroll = None;
        // Where to split the box along the blamed loop: after its first iteration, or after
        // the longest run of iterations that stays in one producer loop.
        let mut cut = None;
        for i in 0..d {
            if hi[i] == lo[i] || s[i] == 0 {
                continue;
            }
            let ext = hi[i] - lo[i];
            let found = (0..ploops.len()).find_map(|m| {
                let len = self.loops[ploops[m]].len as i64;
                if len == 0 || s[i] % len != 0 {
                    return None;
                }
                let delta = s[i] / len;
                let end = j0[m] + delta * ext;
                (end >= 0 && end < trips(m)).then_some((m, i, delta))
            });
            match found {
                Some(f) => map.push(f),
                None => {
                    blame = Some(i);
                    cut = (0..ploops.len())
                        .filter_map(|m| {
                            let len = self.loops[ploops[m]].len as i64;
                            if len == 0 || s[i] % len != 0 {
                                return None;
                            }
                            let delta = s[i] / len;
                            let room = if delta > 0 { trips(m) - 1 - j0[m] } else { j0[m] };
                            Some(room / delta.abs())
                        })
                        .filter(|&run| run >= 1 && run < ext)
                        .max()
                        .map(|run| lo[i] + run + 1);
                    // The producer walks a loop whose body the edge's step does not divide:
                    // unrolling the consumer's loop by the quotient aligns them.
                    let u =
                        ploops.iter().rev().map(|&l| self.loops[l].len as i64).find(|&len| len > 0 && s[i] % len != 0);
                    unroll = u.map(|len| len / gcd(s[i].abs(), len)).and_then(|u| u32::try_from(u).ok());
                    break;
                }
            }
        }
        if blame.is_none() {
            for (m, &j) in j0.iter().enumerate() {
                let (mut min, mut max) = (j, j);
                for &(_, i, delta) in map.iter().filter(|(pm, _, _)| *pm == m) {
                    let v = delta * (hi[i] - lo[i]);
                    if v < 0 {
                        min += v;
                    } else {
                        max += v;
                    }
                }
                if min < 0 || max >= trips(m) {
                    blame = map.iter().find(|(pm, _, _)| *pm == m).map(|(_, i, _)| *i);
                    break;
                }
            }
        }
        let Some(i) = blame else {
            return Ok(Res::Leaf(Piece { lo, hi, producer, j0, map }));
        };
        if budget[i] == 0 {
            // Peeling would not help: the rest of the box starts just as far from its
            // producers. Unroll to align with the producer's loop, or completely.
            let trips = hi[i] + 1;
            return Err(match unroll {
                Some(u) if u > 1 && i64::from(u) <= hi[i] - lo[i] => Fail::Unroll(i, u),
                _ if trips <= MAX_INLINED_TRIPS => Fail::Unroll(i, trips as u32),
                _ => Fail::NotAffine,
            });
        }
        let mut b = budget.to_vec();
        b[i] -= 1;
        let at = cut.unwrap_or(lo[i] + 1);
        let mut first_hi = hi.clone();
        first_hi[i] = at - 1;
        let mut second_lo = lo.clone();
        second_lo[i] = at;
        let first = self.resolve(c, q, lo, first_hi, &b)?;
        let second = self.resolve(c, q, second_lo, hi, &b)?;
        Ok(Res::Split { level: i, first: Box::new(first), second: Box::new(second) })
    }

    /// The counts a resolved box waits for.
    fn counts(
        &self,
        r: &Res,
        sig: &[[i64; NUM_ENGINES]],
        sigma: &[[i64; NUM_ENGINES]],
        pre0: &[[i64; NUM_ENGINES]],
    ) -> Result<Counts, Fail> {
        match r {
            Res::Leaf(p) => {
                let ploops = &self.insts[p.producer].loops;
                let mut engines: Vec<usize> = self.insts[p.producer].parts.iter().map(|x| x.engine.index()).collect();
                engines.sort_unstable();
                engines.dedup();
                let out = engines
                    .into_iter()
                    .map(|e| {
                        let mut v = pre0[p.producer][e] + sig[p.producer][e];
                        for (m, &l) in ploops.iter().enumerate() {
                            v += p.j0[m] * sigma[l][e];
                        }
                        let coef = (0..p.lo.len())
                            .map(|i| {
                                (p.hi[i] > p.lo[i]).then(|| {
                                    p.map
                                        .iter()
                                        .filter(|(_, ci, _)| *ci == i)
                                        .map(|(m, _, d)| d * sigma[ploops[*m]][e])
                                        .sum()
                                })
                            })
                            .collect();
                        (e, v, coef)
                    })
                    .collect();
                Ok(Counts(out))
            }
            Res::Split { level, first, second } => {
                let l = *level;
                // Only a split after the first iteration can be helped by peeling it.
                let single = first_box(first).1[l] == first_box(first).0[l];
                let fail = if single { Fail::Peel(l, 1) } else { Fail::NotAffine };
                // The second piece starts `dist` iterations after the first along `l`.
                let dist = first_box(second).0[l] - first_box(first).0[l];
                let a = self.counts(first, sig, sigma, pre0)?;
                let b = match self.counts(second, sig, sigma, pre0) {
                    Ok(b) => b,
                    // The rest's own first iterations differ too (an edge reaching several
                    // iterations back): peel through them at once, not one a round.
                    Err(Fail::Peel(m, n)) if m == l && single => {
                        return Err(Fail::Peel(l, n.saturating_add(u32::try_from(dist).unwrap_or(u32::MAX))))
                    }
                    Err(e) => return Err(e),
                };
                if a.0.len() != b.0.len() {
                    return Err(fail);
                }
                let mut out = Vec::with_capacity(a.0.len());
                for ((ea, va, ca), (eb, vb, cb)) in a.0.into_iter().zip(b.0) {
                    if ea != eb {
                        return Err(fail);
                    }
                    let mut coef = Vec::with_capacity(ca.len());
                    for (k, (x, y)) in ca.into_iter().zip(cb).enumerate() {
                        match (x, y) {
                            (Some(x), Some(y)) if x != y => return Err(fail),
                            (x, y) if k == l => {
                                let c = match x.or(y) {
                                    Some(c) => c,
                                    None if (vb - va) % dist == 0 => (vb - va) / dist,
                                    None => return Err(fail),
                                };
                                if vb - va != c * dist {
                                    return Err(fail);
                                }
                                coef.push(Some(c));
                            }
                            (x, y) => coef.push(x.or(y)),
                        }
                    }
                    out.push((ea, va, coef));
                }
                Ok(Counts(out))
            }
        }
    }

    /// Mark signals and set every part's waits; the loops to reshape (then lower again)
    /// when some wait needs it.
    pub(super) fn wire(&mut self) -> Result<Vec<Reshape>, NativeError> {
        // Pass 1: resolve every edge.
        let mut resolved: Vec<Vec<Res>> = Vec::with_capacity(self.insts.len());
        let mut reshapes: Vec<Reshape> = Vec::new();
        for c in 0..self.insts.len() {
            let node = &self.insts[c];
            let d = node.loops.len();
            let lo = vec![0; d];
            let hi: Vec<i64> = node.loops.iter().map(|&l| i64::from(self.loops[l].trips) - 1).collect();
            let budget = vec![SPLITS_PER_LOOP; d];
            let mut rs = Vec::with_capacity(node.pir.deps.len());
            for q in 0..node.pir.deps.len() {
                match self.resolve(c, q, lo.clone(), hi.clone(), &budget) {
                    Ok(r) => rs.push(r),
                    Err(Fail::Peel(i, n)) if self.loops[node.loops[i]].trips > 1 => {
                        let path = self.loops[node.loops[i]].path.clone();
                        reshapes.push(Reshape { path, how: How::Peel(n), consumer: node.pos0, edge: q });
                    }
                    Err(Fail::Unroll(i, u)) => {
                        let path = self.loops[node.loops[i]].path.clone();
                        reshapes.push(Reshape { path, how: How::Unroll(u), consumer: node.pos0, edge: q });
                    }
                    Err(_) => return Err(NativeError::NotAffine { consumer: node.pos0, edge: q }),
                }
            }
            resolved.push(rs);
        }
        if !reshapes.is_empty() {
            return Ok(reshapes);
        }
        // Signals: a producer part signals if a consumer part on another engine waits.
        for (c, rs) in resolved.iter().enumerate() {
            let consumer_engines: Vec<Engine> = self.insts[c].parts.iter().map(|p| p.engine).collect();
            let mut producers = Vec::new();
            for r in rs {
                leaves(r, &mut |p| producers.push(p.producer));
            }
            for p in producers {
                for part in &mut self.insts[p].parts {
                    if consumer_engines.iter().any(|e| *e != part.engine) {
                        part.signal = true;
                    }
                }
            }
        }
        let (sig, sigma, pre0) = self.signal_counts();
        // Pass 3: waits.
        for (c, rs) in resolved.iter().enumerate() {
            let trips: Vec<i64> = self.insts[c].loops.iter().map(|&l| i64::from(self.loops[l].trips)).collect();
            let mut best: Vec<Option<(i64, Vec<i64>)>> = vec![None; NUM_ENGINES];
            for (q, r) in rs.iter().enumerate() {
                let counts = match self.counts(r, &sig, &sigma, &pre0) {
                    Ok(x) => x,
                    Err(Fail::Peel(i, n)) if trips[i] > 1 => {
                        let path = self.loops[self.insts[c].loops[i]].path.clone();
                        reshapes.push(Reshape { path, how: How::Peel(n), consumer: self.insts[c].pos0, edge: q });
                        continue;
                    }
                    Err(_) => return Err(NativeError::NotAffine { consumer: self.insts[c].pos0, edge: q }),
                };
                for (e, v, coef) in counts.0 {
                    let coef: Vec<i64> = coef.into_iter().map(|x| x.unwrap_or(0)).collect();
                    best[e] = match best[e].take() {
                        None => Some((v, coef)),
                        Some((w, wc)) => {
                            let diff = v - w;
                            let dc: Vec<i64> = coef.iter().zip(&wc).map(|(a, b)| a - b).collect();
                            let (min, max) = extremes(diff, &dc, &trips);
                            if min >= 0 {
                                Some((v, coef))
                            } else if max <= 0 {
                                Some((w, wc))
                            } else {
                                return Err(NativeError::NotAffine { consumer: self.insts[c].pos0, edge: q });
                            }
                        }
                    };
                }
            }
            let pos0 = self.insts[c].pos0;
            for part in &mut self.insts[c].parts {
                part.waits.clear();
                for (e, b) in best.iter().enumerate() {
                    let (Some((v, coef)), Some(engine)) = (b, Engine::from_index(e)) else { continue };
                    if engine == part.engine {
                        continue;
                    }
                    let (min, max) = extremes(*v, coef, &trips);
                    if min < 1 || max > i64::from(u32::MAX) {
                        return Err(NativeError::Lower(BirError::Internal(format!(
                            "i{pos0}: a wait on {} takes values {min}..={max}",
                            engine.name()
                        ))));
                    }
                    part.waits.push((engine, *v, coef.clone()));
                }
            }
        }
        Ok(reshapes)
    }

    /// Per node and engine its signals; per loop and engine its signals per iteration; per
    /// node and engine the count before it in the first iteration of its loops.
    #[expect(clippy::type_complexity, reason = "three parallel tables")]
    fn signal_counts(&self) -> (Vec<[i64; NUM_ENGINES]>, Vec<[i64; NUM_ENGINES]>, Vec<[i64; NUM_ENGINES]>) {
        let sig: Vec<[i64; NUM_ENGINES]> = self
            .insts
            .iter()
            .map(|n| {
                let mut s = [0; NUM_ENGINES];
                for p in n.parts.iter().filter(|p| p.signal) {
                    s[p.engine.index()] += 1;
                }
                s
            })
            .collect();
        let mut sigma = vec![[0i64; NUM_ENGINES]; self.loops.len()];
        let mut pre0 = vec![[0i64; NUM_ENGINES]; self.insts.len()];
        let mut count = [0i64; NUM_ENGINES];
        self.walk_counts(0, &sig, &mut sigma, &mut pre0, &mut count);
        (sig, sigma, pre0)
    }

    fn walk_counts(
        &self,
        list: usize,
        sig: &[[i64; NUM_ENGINES]],
        sigma: &mut [[i64; NUM_ENGINES]],
        pre0: &mut [[i64; NUM_ENGINES]],
        count: &mut [i64; NUM_ENGINES],
    ) {
        for &(_, e) in &self.lists[list] {
            match e {
                super::Entry::Inst(i) => {
                    pre0[i] = *count;
                    for (c, s) in count.iter_mut().zip(&sig[i]) {
                        *c += s;
                    }
                }
                super::Entry::Loop(l) => {
                    let start = *count;
                    self.walk_counts(self.loops[l].body, sig, sigma, pre0, count);
                    let trips = i64::from(self.loops[l].trips);
                    for e in 0..NUM_ENGINES {
                        sigma[l][e] = count[e] - start[e];
                        count[e] = start[e] + trips * sigma[l][e];
                    }
                }
            }
        }
    }
}

/// The least and greatest of `v + sum coef_i k_i` over `0 <= k_i < trips_i`.
fn extremes(v: i64, coef: &[i64], trips: &[i64]) -> (i64, i64) {
    let (mut min, mut max) = (v, v);
    for (c, t) in coef.iter().zip(trips) {
        let x = c * (t - 1);
        if x < 0 {
            min += x;
        } else {
            max += x;
        }
    }
    (min, max)
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.max(1)
    } else {
        gcd(b, a % b)
    }
}

fn leaves(r: &Res, f: &mut dyn FnMut(&Piece)) {
    match r {
        Res::Leaf(p) => f(p),
        Res::Split { first, second, .. } => {
            leaves(first, f);
            leaves(second, f);
        }
    }
}

/// The box a resolved piece covers (`lo`, `hi`).
fn first_box(r: &Res) -> (Vec<i64>, Vec<i64>) {
    match r {
        Res::Leaf(p) => (p.lo.clone(), p.hi.clone()),
        Res::Split { first, second, .. } => {
            let (lo, _) = first_box(first);
            let (_, hi) = first_box(second);
            (lo, hi)
        }
    }
}
