//! Lowering a looped Penguin function loop by loop, without expanding it
//! ([`lower_looped_native`]).
//!
//! Every Penguin [`Loop`] becomes, in each engine stream that has ops in its body, a BIR loop
//! with the same trips, so all engines share the Penguin nest. Steps:
//! 1. The looped verifier ([`penguin::looped::verify_looped`]) checks the function; addresses
//!    depend only on tensors and are assigned as for an unrolled function.
//! 2. Loops whose DMA queues drift are unrolled by their queue period ([`normalize`]).
//! 3. Each instruction node is lowered once by the shared per-instruction lowering, and once
//!    per enclosing loop advanced by that loop's step: lowering is affine in the operand
//!    offsets and start partitions, so the difference is the BIR step, exactly. An
//!    instruction whose engines or op shapes differ between the two is refused
//!    ([`LowerLoopedError::NotUniform`]).
//! 4. Semaphores ([`deps`]): a body instruction signals when any iteration has a
//!    cross-engine dependent; each wait is proved affine in the loop indices. Where it is
//!    not, the loops concerned are reshaped and the nest is lowered again (a round): the
//!    first iteration of a consumer's loop is peeled (it waits for something else than the
//!    others), or the consumer's loop is unrolled so that its edge steps by whole iterations
//!    of the producer's loop (a producer loop unrolled for its queues, step 2). After
//!    [`MAX_ROUNDS`] rounds, or when the nest has grown eightfold, the wait is refused
//!    ([`LowerLoopedError::NotAffine`]).
//! 5. The streams are emitted: per engine, a loop for every Penguin loop whose body has ops
//!    on it, with the same trips; `origin` is `None` everywhere (an origin names a different
//!    instruction in every iteration).
//!
//! Signals are uniform over a loop, so the expansion may have signals the unrolled lowering
//! does not (an instruction with a cross-engine dependent in some iteration signals in all);
//! the waits count them, so the order of the ops is the same.
//!
//! Cost: O(size of the looped function x nest depth) per round, on the nest as unrolled and
//! peeled; a loop's trips never matter.

use penguin::looped::{verify_looped_within, Item, Loop, PirInst, Stepped};
use penguin::{InstId, LoopedFunction, Target};

use super::looped::LowerLoopedError;
use super::LowerCx;
use crate::error::BirError;
use crate::looped::{push_inst_params, LoopedProgram};
use crate::program::{BirInst, Engine, Op, SemId, Wait, NUM_ENGINES};

mod deps;
mod normalize;

use normalize::PItem;

/// Errors of this module are the looped lowering's.
pub(super) type NativeError = LowerLoopedError;

/// How many rounds of peeling or unrolling loops the lowering does before giving up on a
/// wait (it also gives up when they grow the nest eightfold).
const MAX_ROUNDS: usize = 64;

/// An internal error (a broken invariant of a verified function).
pub(super) fn internal(msg: &str) -> NativeError {
    LowerLoopedError::Lower(BirError::Internal(msg.to_string()))
}

/// Lower a looped function for a target without expanding its loops (see the module doc):
/// `lower_looped_native(lf)?.expand()` has, stream by stream, the ops of `lower` of
/// `lf.expand()`, in the same order, with semaphores that order them the same way.
pub fn lower_looped_native(func: &LoopedFunction, target: Target) -> Result<LoopedProgram, LowerLoopedError> {
    lower_looped_native_within(func, target, penguin::looped::MAX_EXPANDED)
}

/// [`lower_looped_native`] verifying `func` with [`verify_looped_within`] `max_expanded`: a
/// producer that checked its function otherwise (the planner's sampled plans, whose
/// expansion is a verified plan's) passes 0, so that the verifier checks the corner function
/// instead of expanding up to `MAX_EXPANDED` instructions.
pub fn lower_looped_native_within(
    func: &LoopedFunction,
    target: Target,
    max_expanded: u64,
) -> Result<LoopedProgram, LowerLoopedError> {
    verify_looped_within(func, max_expanded).map_err(LowerLoopedError::LoopVerify)?;
    let mut cx = LowerCx::new(&func.header, target);
    cx.assign_addresses()?;
    let (mut items, _, _) = cx.normalize(func.body.clone(), 0)?;
    let start = cx.cursors();
    let mut last = (0, 0);
    // Peeling and unrolling may at most grow the nest this much.
    let max_nodes = normalize::nodes(&items).saturating_mul(8).max(1 << 16);
    for _ in 0..=MAX_ROUNDS {
        cx.set_cursors(start);
        let mut tree = Tree::default();
        tree.build(&items, &mut Vec::new(), &mut Vec::new(), 0, &mut cx)?;
        let mut reshapes = tree.wire()?;
        if reshapes.is_empty() {
            let mut header = cx.program.clone();
            header.semaphores = Engine::all().map(|e| e.name()).collect();
            header.streams = vec![Vec::new(); NUM_ENGINES];
            return Ok(LoopedProgram { header, streams: tree.emit() });
        }
        // Later loops first, inner before outer: every other path stays valid. Of what one
        // loop is asked for, the largest unroll is kept over any peel, else the deepest peel.
        reshapes.sort_by(|a, b| b.path.cmp(&a.path).then(b.how.cmp(&a.how)));
        reshapes.dedup_by(|a, b| a.path == b.path);
        for r in reshapes {
            last = (r.consumer, r.edge);
            let done = match r.how {
                How::Unroll(u) => normalize::reshape_in(&mut items, &r.path, &|l| normalize::unroll(l, u)),
                How::Peel(n) => normalize::reshape_in(&mut items, &r.path, &|l| normalize::peel(l, n)),
            };
            done.ok_or_else(|| internal(&format!("reshaping the loop at {:?} ({:?})", r.path, r.how)))?;
        }
        if normalize::nodes(&items) > max_nodes {
            break;
        }
    }
    Err(LowerLoopedError::NotAffine { consumer: last.0, edge: last.1 })
}

/// How a loop is reshaped before lowering again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum How {
    /// Peel this many first iterations off in front of it.
    Peel(u32),
    /// Unroll it by this factor.
    Unroll(u32),
}

/// What to do to a loop before lowering again: peel its first iterations, or unroll it.
#[derive(Debug)]
struct Reshape {
    /// The loop (see [`LNode::path`]).
    path: Vec<usize>,
    /// Peel or unroll.
    how: How,
    /// The consumer and edge whose wait asked for it.
    consumer: u64,
    edge: usize,
}

/// An entry of a list: an instruction node or a loop.
#[derive(Clone, Copy, Debug)]
enum Entry {
    Inst(usize),
    Loop(usize),
}

/// A loop of the nest.
#[derive(Debug)]
struct LNode {
    trips: u32,
    /// Unrolled Penguin instructions per iteration.
    len: u64,
    /// Its body's list.
    body: usize,
    /// Item indices from the top to it.
    path: Vec<usize>,
}

/// An instruction node: one Penguin body instruction and its lowering.
#[derive(Debug)]
struct INode {
    pir: PirInst,
    /// Enclosing loops, outermost first.
    loops: Vec<usize>,
    /// Unrolled position in the first iteration of its loops.
    pos0: u64,
    /// Per enclosing loop, the step of each dependency edge's `from`.
    dep_steps: Vec<Vec<i64>>,
    parts: Vec<Part>,
}

/// The ops an instruction node lowers to on one engine.
#[derive(Debug)]
struct Part {
    engine: Engine,
    ops: Vec<Op>,
    /// Per enclosing loop, the steps of the ops' parameters (without waits), concatenated.
    steps: Vec<Vec<i64>>,
    signal: bool,
    /// Waits of the first op: engine, value in the first iteration, step per enclosing loop.
    waits: Vec<(Engine, i64, Vec<i64>)>,
}

/// The lowered nest.
#[derive(Debug, Default)]
struct Tree {
    insts: Vec<INode>,
    loops: Vec<LNode>,
    /// Each list's entries with their start relative to the list's start.
    lists: Vec<Vec<(u64, Entry)>>,
}

/// An enclosing loop during the build.
struct Frame<'a> {
    lid: usize,
    trips: u32,
    step: &'a [i64],
    at: usize,
}

/// The parameters of ops (byte offset and start partition per access pattern).
fn op_params(ops: &[Op]) -> Vec<i64> {
    let mut out = Vec::new();
    for op in ops {
        push_inst_params(&BirInst { op: op.clone(), waits: Vec::new(), signal: None, origin: None }, &mut out);
    }
    out
}

/// Ops with their parameters set to 0 (what must not change between iterations).
fn zeroed(ops: &[Op]) -> Option<Vec<Op>> {
    ops.iter()
        .map(|op| {
            let b = BirInst { op: op.clone(), waits: Vec::new(), signal: None, origin: None };
            let mut p = Vec::new();
            push_inst_params(&b, &mut p);
            let neg: Vec<i64> = p.iter().map(|v| -v).collect();
            crate::looped::advance_inst(&b, &neg).map(|z| z.op)
        })
        .collect()
}

impl Tree {
    /// Add a list for `items` (starting at unrolled position `pos`), lowering its
    /// instructions; returns the list's id.
    fn build<F: penguin::FunctionView + ?Sized>(
        &mut self,
        items: &[PItem],
        frames: &mut Vec<Frame<'_>>,
        path: &mut Vec<usize>,
        pos: u64,
        cx: &mut LowerCx<'_, F>,
    ) -> Result<usize, NativeError> {
        let id = self.lists.len();
        self.lists.push(Vec::with_capacity(items.len()));
        let mut at = pos;
        for (idx, it) in items.iter().enumerate() {
            let rel = at - pos;
            match it {
                Item::Inst(i) => {
                    let node = self.lower_node(i, frames, at, cx)?;
                    self.insts.push(node);
                    self.lists[id].push((rel, Entry::Inst(self.insts.len() - 1)));
                    for fr in frames.iter_mut() {
                        fr.at += i.param_count();
                    }
                    at += 1;
                }
                Item::Loop(l) => {
                    let lid = self.loops.len();
                    path.push(idx);
                    let len = penguin::looped::unrolled_len(&l.body);
                    self.loops.push(LNode { trips: l.trips, len, body: 0, path: path.clone() });
                    let mut inner: Vec<Frame<'_>> =
                        frames.iter().map(|f| Frame { lid: f.lid, trips: f.trips, step: f.step, at: f.at }).collect();
                    inner.push(Frame { lid, trips: l.trips, step: &l.step, at: 0 });
                    let body = self.build(&l.body, &mut inner, path, at, cx)?;
                    path.pop();
                    for (fr, done) in frames.iter_mut().zip(&inner) {
                        fr.at = done.at;
                    }
                    self.loops[lid].body = body;
                    self.lists[id].push((rel, Entry::Loop(lid)));
                    at += len.saturating_mul(u64::from(l.trips));
                }
            }
        }
        Ok(id)
    }

    /// Lower one instruction node, and find its BIR steps per enclosing loop.
    fn lower_node<F: penguin::FunctionView + ?Sized>(
        &self,
        i: &PirInst,
        frames: &[Frame<'_>],
        pos0: u64,
        cx: &mut LowerCx<'_, F>,
    ) -> Result<INode, NativeError> {
        let id = InstId(u32::try_from(pos0).map_err(|_| internal("position past u32"))?);
        let n = i.param_count();
        let ops_params = 2 * i.data.operands().len();
        let mut dep_steps = Vec::with_capacity(frames.len());
        let saved = cx.cursors();
        let mut variants = Vec::with_capacity(frames.len());
        for fr in frames {
            let step = fr.step.get(fr.at..fr.at + n).ok_or_else(|| internal("a step shorter than its body"))?;
            dep_steps.push(step[ops_params..ops_params + i.deps.len()].to_vec());
            let moves = step[..ops_params].iter().chain(&step[ops_params + i.deps.len()..]).any(|s| *s != 0);
            if fr.trips > 1 && moves {
                let adv = i.advance(step).ok_or_else(|| internal("an iteration out of range"))?;
                let lowered = cx.lower_inst(id, &adv.data);
                cx.set_cursors(saved);
                variants.push(Some(lowered?));
            } else {
                variants.push(None);
            }
        }
        let base = cx.lower_inst(id, &i.data)?;
        let base_len = base.len();
        let mut parts = Vec::with_capacity(base.len());
        for (k, (engine, ops)) in base.into_iter().enumerate() {
            let p0 = op_params(&ops);
            let z0 = zeroed(&ops);
            let mut steps = Vec::with_capacity(frames.len());
            for v in &variants {
                match v {
                    None => steps.push(vec![0; p0.len()]),
                    Some(v) => {
                        let (e1, ops1) = v.get(k).ok_or(LowerLoopedError::NotUniform { index: pos0 })?;
                        if *e1 != engine || v.len() != base_len || z0.is_none() || zeroed(ops1) != z0 {
                            return Err(LowerLoopedError::NotUniform { index: pos0 });
                        }
                        steps.push(op_params(ops1).iter().zip(&p0).map(|(a, b)| a - b).collect());
                    }
                }
            }
            parts.push(Part { engine, ops, steps, signal: false, waits: Vec::new() });
        }
        let loops = frames.iter().map(|f| f.lid).collect();
        Ok(INode { pir: i.clone(), loops, pos0, dep_steps, parts })
    }

    /// The instruction node at unrolled position `x` and its iteration vector.
    fn locate(&self, x: u64) -> Option<(usize, Vec<i64>)> {
        let (mut list, mut start, mut j) = (0usize, 0u64, Vec::new());
        loop {
            let entries = self.lists.get(list)?;
            let off = x.checked_sub(start)?;
            let k = entries.partition_point(|(rel, _)| *rel <= off).checked_sub(1)?;
            let (rel, e) = entries[k];
            match e {
                Entry::Inst(i) => return (rel == off).then_some((i, j)),
                Entry::Loop(l) => {
                    let lo = self.loops.get(l)?;
                    let jj = (off - rel) / lo.len.max(1);
                    if jj >= u64::from(lo.trips) {
                        return None;
                    }
                    j.push(jj as i64);
                    start += rel + jj * lo.len;
                    list = lo.body;
                }
            }
        }
    }

    /// The BIR streams, one per engine, with loops mirroring the nest.
    fn emit(&self) -> Vec<Vec<Item<BirInst>>> {
        let mut out: Vec<Vec<Emitted>> = (0..NUM_ENGINES).map(|_| Vec::new()).collect();
        self.emit_list(0, 0, &mut out);
        out.into_iter().map(|s| s.into_iter().map(|e| e.item).collect()).collect()
    }

    fn emit_list(&self, list: usize, depth: usize, out: &mut [Vec<Emitted>]) {
        for &(_, e) in &self.lists[list] {
            match e {
                Entry::Inst(i) => self.emit_inst(&self.insts[i], out),
                Entry::Loop(l) => {
                    let lo = &self.loops[l];
                    let mut inner: Vec<Vec<Emitted>> = (0..NUM_ENGINES).map(|_| Vec::new()).collect();
                    self.emit_list(lo.body, depth + 1, &mut inner);
                    for (e, body) in inner.into_iter().enumerate() {
                        if body.is_empty() {
                            continue;
                        }
                        let level = |d: usize| body.iter().flat_map(|b| b.steps[d].iter().copied()).collect::<Vec<_>>();
                        let step = level(depth);
                        let steps = (0..depth).map(level).collect();
                        let body = body.into_iter().map(|b| b.item).collect();
                        out[e].push(Emitted { item: Item::Loop(Loop { trips: lo.trips, body, step }), steps });
                    }
                }
            }
        }
    }

    fn emit_inst(&self, node: &INode, out: &mut [Vec<Emitted>]) {
        for part in &node.parts {
            let stream = &mut out[part.engine.index()];
            let mut at = 0;
            let last = part.ops.len().saturating_sub(1);
            for (k, op) in part.ops.iter().enumerate() {
                let n = 2 * op.ap_count();
                let mut steps: Vec<Vec<i64>> = part.steps.iter().map(|s| s[at..at + n].to_vec()).collect();
                at += n;
                let mut waits = Vec::new();
                if k == 0 {
                    for (e, v, coef) in &part.waits {
                        waits.push(Wait { sem: SemId(e.index() as u32), value: u64::try_from(*v).unwrap_or(u64::MAX) });
                        for (s, c) in steps.iter_mut().zip(coef) {
                            s.push(*c);
                        }
                    }
                }
                let signal = (k == last && part.signal).then_some(SemId(part.engine.index() as u32));
                let inst = BirInst { op: op.clone(), waits, signal, origin: None };
                stream.push(Emitted { item: Item::Inst(inst), steps });
            }
        }
    }
}

/// A BIR item with its parameter steps in each enclosing loop.
struct Emitted {
    item: Item<BirInst>,
    steps: Vec<Vec<i64>>,
}
