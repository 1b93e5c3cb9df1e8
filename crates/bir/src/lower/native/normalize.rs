//! Reshaping a looped Penguin function so that every iteration of every loop lowers to the
//! same engines: loops whose DMA queues drift are unrolled, and loops whose first iteration
//! waits differently are peeled (the caller decides which; see `super::deps`).
//!
//! A DMA queue depends on an instruction's place only through its queue hint (`hint mod
//! class`) or, without a hint, through the round-robin cursor of its class. In a loop, the
//! hint of iteration `k` is `hint + k * s`, so the queues repeat with period
//! `class / gcd(s, class)`; the cursor advances by the loop body's consumption `c` per
//! iteration, so the queues repeat with period `class / gcd(c, class)`. Unrolling the loop by
//! the least common multiple `p` of those periods (`Loop { trips / p, body x p, step x p }`
//! then the `trips mod p` leftover iterations inline) makes every iteration start on the same
//! queues. Unrolling and peeling keep the unrolled program order, so dependency edges (places
//! in that order) stay valid.

use penguin::looped::{param_count, Item, Loop, PirInst, Stepped};
use penguin::{InstData, InstId, Memory};

use super::super::{LowerCx, STORE_QUEUES};
use super::{internal, NativeError};
use crate::error::BirError;

/// A Penguin item.
pub(super) type PItem = Item<PirInst>;

/// Normalized items, the round-robin consumption of one pass over them (per queue class),
/// and the map from each new parameter to the old one it copies.
type Normalized = (Vec<PItem>, [u32; 3], Vec<usize>);

/// The most instruction nodes an unrolled loop body may have; beyond it the loop is refused
/// ([`NativeError::QueueDrift`]) rather than blown up.
const MAX_UNROLLED_BODY: usize = 1 << 16;

/// The DMA queue classes, in cursor order: all queues (offloaded ops, gathers), plain loads,
/// plain stores.
fn classes() -> [u32; 3] {
    let all = penguin::target::NUM_DMA_QUEUES;
    [all, all - u32::from(STORE_QUEUES), u32::from(STORE_QUEUES)]
}

/// `items` with every parameter advanced by `delta` (one entry per parameter of `items`).
pub(super) fn advance_items(items: &[PItem], delta: &[i64]) -> Option<Vec<PItem>> {
    let mut at = 0;
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        match it {
            Item::Inst(i) => {
                let n = i.param_count();
                out.push(Item::Inst(i.advance(delta.get(at..at + n)?)?));
                at += n;
            }
            Item::Loop(l) => {
                let n = param_count(&l.body);
                let body = advance_items(&l.body, delta.get(at..at + n)?)?;
                out.push(Item::Loop(Loop { trips: l.trips, body, step: l.step.clone() }));
                at += n;
            }
        }
    }
    Some(out)
}

fn scaled(step: &[i64], k: i64) -> Option<Vec<i64>> {
    step.iter().map(|s| s.checked_mul(k)).collect()
}

/// Iterations `from..to` of `l`, inline.
fn inline(l: &Loop<PirInst>, from: u32, to: u32) -> Option<Vec<PItem>> {
    let mut out = Vec::new();
    for k in from..to {
        out.extend(advance_items(&l.body, &scaled(&l.step, i64::from(k))?)?);
    }
    Some(out)
}

/// `l` unrolled by `p` (see the module doc); fully inline when it has fewer than `2 p` trips.
pub(super) fn unroll(l: &Loop<PirInst>, p: u32) -> Option<Vec<PItem>> {
    let outer = l.trips / p.max(1);
    if outer <= 1 {
        return inline(l, 0, l.trips);
    }
    let body = inline(l, 0, p)?;
    let step = scaled(&l.step, i64::from(p))?.repeat(p as usize);
    let mut out = vec![Item::Loop(Loop { trips: outer, body, step })];
    out.extend(inline(l, outer * p, l.trips)?);
    Some(out)
}

/// `l` with its first `n` iterations peeled off in front of it (all of it, when at most one
/// would be left).
pub(super) fn peel(l: &Loop<PirInst>, n: u32) -> Option<Vec<PItem>> {
    let n = n.max(1);
    if l.trips <= n.saturating_add(1) {
        return inline(l, 0, l.trips);
    }
    let mut out = inline(l, 0, n)?;
    let body = advance_items(&l.body, &scaled(&l.step, i64::from(n))?)?;
    out.push(Item::Loop(Loop { trips: l.trips - n, body, step: l.step.clone() }));
    Some(out)
}

/// The loop at `path` (item indices from the top, through loop bodies) replaced by
/// `reshape` of it (copies of its body), every enclosing loop's step following its body; the
/// map from each new parameter of `items` to the old parameter it copies.
#[cfg(test)]
pub(super) fn reshape_at(
    items: &mut Vec<PItem>,
    path: &[usize],
    reshape: &dyn Fn(&Loop<PirInst>) -> Option<Vec<PItem>>,
) -> Option<Vec<usize>> {
    let total = param_count(items);
    let (start, old, copies) = reshape_in(items, path, reshape)?;
    let mut map: Vec<usize> = (0..start).collect();
    map.extend(copies);
    map.extend(start + old..total);
    Some(map)
}

/// [`reshape_at`] as the lowering does it, at a cost of the items on the path rather than of
/// the whole nest: the replaced parameters of `items` (`old` of them from `start`) and, for
/// each parameter that replaces them, the old parameter it copies.
pub(super) fn reshape_in(
    items: &mut Vec<PItem>,
    path: &[usize],
    reshape: &dyn Fn(&Loop<PirInst>) -> Option<Vec<PItem>>,
) -> Option<(usize, usize, Vec<usize>)> {
    let (&first, rest) = path.split_first()?;
    let before = param_count(items.get(..first)?);
    let Item::Loop(l) = items.get_mut(first)? else { return None };
    let n = param_count(&l.body);
    if rest.is_empty() {
        let new = reshape(l)?;
        let copies = param_count(&new).checked_div(n).unwrap_or(0);
        items.splice(first..=first, new);
        return Some((before, n, (0..copies).flat_map(|_| before..before + n).collect()));
    }
    let (start, old, copies) = reshape_in(&mut l.body, rest, reshape)?;
    let stepped: Vec<i64> = copies.iter().map(|&o| l.step.get(o).copied()).collect::<Option<_>>()?;
    l.step.splice(start..start + old, stepped);
    Some((before + start, old, copies.into_iter().map(|o| before + o).collect()))
}

/// Instruction nodes of `items` (a loop body counted once).
pub(super) fn nodes(items: &[PItem]) -> usize {
    items
        .iter()
        .map(|it| match it {
            Item::Inst(_) => 1,
            Item::Loop(l) => 1 + nodes(&l.body),
        })
        .sum()
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: u64, b: u64) -> u64 {
    a / gcd(a, b).max(1) * b
}

/// A period of the queue of a hinted instruction whose hint steps by `s`: the queue is the
/// hint modulo its class, so `class / gcd(s, class)` iterations bring it back.
fn hint_period(data: &InstData, s: i64) -> u64 {
    let class = hint_class(data);
    class / gcd(s.rem_euclid(class as i64) as u64, class)
}

/// The queues a hinted instruction's hint is taken modulo.
fn hint_class(data: &InstData) -> u64 {
    match data {
        InstData::DmaCopy(d) if d.dst.memory == Memory::Hbm => u64::from(STORE_QUEUES),
        InstData::DmaCopy(_) => u64::from(penguin::target::DMA_LOAD_QUEUES),
        _ => u64::from(penguin::target::NUM_DMA_QUEUES),
    }
}

impl<F: penguin::FunctionView + ?Sized> LowerCx<'_, F> {
    /// The round-robin cursors (all queues, loads, stores).
    pub(super) fn cursors(&self) -> [u8; 3] {
        [self.next_dma_queue, self.next_load_queue, self.next_store_queue]
    }

    /// Set the round-robin cursors.
    pub(super) fn set_cursors(&mut self, c: [u8; 3]) {
        [self.next_dma_queue, self.next_load_queue, self.next_store_queue] = c;
    }

    /// The engines `data` lowers to, in order (the cursors are left as they were).
    fn engines(&mut self, data: &InstData) -> Result<Vec<crate::program::Engine>, BirError> {
        let before = self.cursors();
        let r = self.lower_inst(InstId(0), data);
        self.set_cursors(before);
        Ok(r?.into_iter().map(|(e, _)| e).collect())
    }

    /// The least period of the queues of a hinted instruction whose hint steps by `s`: the
    /// least divisor `p` of [`hint_period`] with the same engines at every iteration `k` and
    /// `k + p` (an offloaded op's pieces take `pieces` queues per hint, so a hint step of 2
    /// with 8 pieces keeps the queues).
    fn least_hint_period(&mut self, data: &InstData, s: i64) -> Result<u64, BirError> {
        let most = hint_period(data, s);
        if most == 1 {
            return Ok(1);
        }
        let mut engines = Vec::with_capacity(most as usize);
        for k in 0..most {
            let mut d = data.clone();
            let h = d.queue_hint_mut().ok_or_else(|| BirError::Internal("a hint vanished".into()))?;
            // The queues depend on the hint modulo the class only.
            let class = i128::from(hint_class(data));
            h.0 = (i128::from(h.0) + i128::from(k) * i128::from(s)).rem_euclid(class) as u32;
            engines.push(self.engines(&d)?);
        }
        Ok((1..most)
            .filter(|p| most.is_multiple_of(*p))
            .find(|&p| (0..most).all(|k| engines[k as usize] == engines[((k + p) % most) as usize]))
            .unwrap_or(most))
    }

    /// The least common multiple of the queue periods of the hinted instructions in `items`
    /// under a loop whose step (over `items`' parameters) is `step`.
    fn hint_periods(&mut self, items: &[PItem], step: &[i64], at: &mut usize) -> Result<u64, BirError> {
        let mut p = 1;
        for it in items {
            match it {
                Item::Inst(i) => {
                    let n = i.param_count();
                    if i.data.queue_hint().is_some() {
                        let s = step.get(*at + n - 1).copied().unwrap_or(0);
                        p = lcm(p, self.least_hint_period(&i.data, s)?);
                    }
                    *at += n;
                }
                Item::Loop(l) => p = lcm(p, self.hint_periods(&l.body, step, at)?),
            }
        }
        Ok(p)
    }

    /// How far lowering `data` moves each round-robin cursor (modulo its class); the
    /// cursors are left as they were.
    fn consumption(&mut self, data: &InstData) -> Result<[u32; 3], BirError> {
        let before = self.cursors();
        let r = self.lower_inst(InstId(0), data);
        let after = self.cursors();
        self.set_cursors(before);
        r?;
        let mut out = [0; 3];
        for (k, class) in classes().into_iter().enumerate() {
            out[k] = (u32::from(after[k]) + class - u32::from(before[k])) % class;
        }
        Ok(out)
    }

    /// `items` with every loop whose queues drift unrolled (see the module doc), the
    /// round-robin consumption of one pass over them, and the map from each new parameter
    /// to the old one it copies (so that an enclosing loop's step follows).
    pub(super) fn normalize(&mut self, items: Vec<PItem>, first: u64) -> Result<Normalized, NativeError> {
        let mut out = Vec::with_capacity(items.len());
        let mut total = [0u32; 3];
        let mut map = Vec::new();
        let (mut pos, mut at) = (first, 0usize);
        for it in items {
            match it {
                Item::Inst(i) => {
                    let c = self.consumption(&i.data)?;
                    add(&mut total, c, 1);
                    pos += 1;
                    let n = i.param_count();
                    map.extend(at..at + n);
                    at += n;
                    out.push(Item::Inst(i));
                }
                Item::Loop(l) => {
                    let old = param_count(&l.body);
                    let (body, c, bmap) = self.normalize(l.body, pos)?;
                    let step = bmap.iter().map(|&o| l.step.get(o).copied()).collect::<Option<Vec<i64>>>();
                    let step = step.ok_or_else(|| internal("a step shorter than its body"))?;
                    let l = Loop { trips: l.trips, body, step };
                    let len = penguin::looped::unrolled_len(&l.body);
                    let trips = l.trips;
                    add(&mut total, c, trips);
                    let mut p = self.hint_periods(&l.body, &l.step, &mut 0)?;
                    for (k, class) in classes().into_iter().enumerate() {
                        p = lcm(p, u64::from(class / gcd(u64::from(c[k]), u64::from(class)) as u32));
                    }
                    let mut copies = 1;
                    if p > 1 && trips > 1 {
                        let n = (p as usize).min(trips as usize);
                        if nodes(&l.body).saturating_mul(n) > MAX_UNROLLED_BODY {
                            return Err(NativeError::QueueDrift { first: pos, period: p });
                        }
                        let p = u32::try_from(p).map_err(|_| NativeError::QueueDrift { first: pos, period: p })?;
                        let items = unroll(&l, p).ok_or_else(|| internal("a loop does not unroll"))?;
                        let n = param_count(&l.body);
                        copies = param_count(&items).checked_div(n).unwrap_or(0);
                        out.extend(items);
                    } else {
                        out.push(Item::Loop(l));
                    }
                    for _ in 0..copies {
                        map.extend(bmap.iter().map(|o| at + o));
                    }
                    at += old;
                    pos += len.saturating_mul(u64::from(trips));
                }
            }
        }
        Ok((out, total, map))
    }
}

/// `total += times * c`, modulo each class.
fn add(total: &mut [u32; 3], c: [u32; 3], times: u32) {
    for (k, class) in classes().into_iter().enumerate() {
        let t = (u64::from(total[k]) + u64::from(c[k]) * u64::from(times)) % u64::from(class);
        total[k] = t as u32;
    }
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;
