//! Penguin functions whose program order may loop: [`LoopedFunction`] and its instruction,
//! [`PirInst`].
//!
//! # Parameters of a Penguin instruction
//! In this order: for each operand in [`InstData::operands`] order, its access pattern's
//! element `offset` then its `start_partition`; then the `from` index of each dependency edge
//! in order; then its DMA queue hint, when it has one ([`InstData::queue_hint`]: a producer
//! that numbers its transfers by their place in a loop steps the hint with the loop, and
//! lowering takes it modulo the queues). Instructions are numbered by their place in the
//! unrolled program order, so an edge to "the same instruction one iteration back" advances
//! with the loop like an address.

use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

use super::nest::{roll_nest, roll_nest_shortest, NestError, NestMark};
use super::roll::{roll_items, Rolled};
use super::{check_steps, expand_items, unrolled_len, Item, StepError, Stepped};
use crate::entity::InstId;
use crate::function::{Function, FunctionView};
use crate::inst::{Dep, InstData};
use crate::srcloc::SourceLoc;

/// One Penguin instruction with its incoming dependency edges (each `from` is a place in
/// the unrolled program order, earlier than the instruction's own).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PirInst {
    /// The instruction.
    pub data: InstData,
    /// Its incoming edges.
    pub deps: Vec<Dep>,
    /// Its source location ([`crate::srcloc`]); the same in every iteration of a loop, as
    /// everything that is not a parameter is.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::srcloc::optional")]
    pub loc: Option<SourceLoc>,
}

impl Stepped for PirInst {
    fn param_count(&self) -> usize {
        2 * self.data.operand_count() + self.deps.len() + usize::from(self.data.queue_hint().is_some())
    }

    fn push_params(&self, out: &mut Vec<i64>) {
        self.data.for_each_operand(|tile, _| {
            out.push(tile.ap.offset);
            out.push(i64::from(tile.ap.start_partition));
        });
        out.extend(self.deps.iter().map(|d| i64::from(d.from.0)));
        out.extend(self.data.queue_hint().map(|q| i64::from(q.0)));
    }

    fn advance(&self, delta: &[i64]) -> Option<Self> {
        let mut out = self.clone();
        let mut d = delta.iter().copied();
        for tile in out.data.operands_mut() {
            tile.ap.offset = tile.ap.offset.checked_add(d.next()?)?;
            let part = i64::from(tile.ap.start_partition).checked_add(d.next()?)?;
            tile.ap.start_partition = u32::try_from(part).ok()?;
        }
        for dep in &mut out.deps {
            let from = i64::from(dep.from.0).checked_add(d.next()?)?;
            dep.from = InstId(u32::try_from(from).ok()?);
        }
        if let Some(q) = out.data.queue_hint_mut() {
            q.0 = u32::try_from(i64::from(q.0).checked_add(d.next()?)?).ok()?;
        }
        Some(out)
    }
}

/// The shape of a Penguin instruction (see [`Rolled`]): the instruction with every operand
/// offset, start partition, edge `from` and queue hint set to 0. Hashes its kind, operands
/// and edges.
#[derive(Clone, Debug)]
pub struct PirShape(pub PirInst);

impl PartialEq for PirShape {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Hash for PirShape {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.data.kind().hash(h);
        self.0.data.for_each_operand(|tile, _| tile.hash(h));
        self.0.deps.hash(h);
    }
}

impl Rolled for PirInst {
    type Shape = PirShape;

    fn shape(&self) -> Option<PirShape> {
        // `zeroed` in one clone: every parameter set to 0 in place (an offset of i64::MIN,
        // which has no negation, has no shape, as `zeroed` has no result).
        let mut unshaped = false;
        self.data.for_each_operand(|tile, _| unshaped |= tile.ap.offset == i64::MIN);
        if unshaped {
            return None;
        }
        let mut out = self.clone();
        for tile in out.data.operands_mut() {
            tile.ap.offset = 0;
            tile.ap.start_partition = 0;
        }
        for dep in &mut out.deps {
            dep.from = InstId(0);
        }
        if let Some(q) = out.data.queue_hint_mut() {
            q.0 = 0;
        }
        Some(PirShape(out))
    }
}

/// A Penguin function whose program order may loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopedFunction {
    /// Everything but the instructions (its `insts`, `layout`, `deps` and `srclocs` are
    /// empty: each instruction carries its own location).
    pub header: Function,
    /// Program order.
    pub body: Vec<Item<PirInst>>,
}

/// Why a [`LoopedFunction`] does not expand.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// A loop's trips or step are malformed, or move a parameter out of range.
    #[error(transparent)]
    Step(#[from] StepError),
    /// An edge points at the instruction itself or later.
    #[error("instruction i{at} depends on i{from}, which does not come before it")]
    ForwardEdge {
        /// The instruction's place in the unrolled order.
        at: u32,
        /// Where its edge points.
        from: u32,
    },
    /// More instructions than ids.
    #[error("the unrolled function has {0} instructions, more than ids can number")]
    TooLong(u64),
}

impl LoopedFunction {
    /// A looped function with no loops: every instruction of `f` in program order, edges
    /// renumbered to places in that order (edges to instructions outside it are dropped).
    pub fn from_function(f: &Function) -> Self {
        let mut place = vec![u32::MAX; f.insts.len()];
        for (at, id) in f.layout.iter().enumerate() {
            if let Some(p) = place.get_mut(id.index()) {
                *p = at as u32;
            }
        }
        let body = f
            .layout
            .iter()
            .filter_map(|&id| {
                let data = f.inst(id)?.clone();
                let deps = f
                    .deps(id)
                    .iter()
                    .filter_map(|d| {
                        let from = *place.get(d.from.index())?;
                        (from != u32::MAX).then_some(Dep { from: InstId(from), kind: d.kind })
                    })
                    .collect();
                let loc = f.srclocs.get_shared(id).cloned();
                Some(Item::Inst(PirInst { data, deps, loc }))
            })
            .collect();
        LoopedFunction { header: f.without_insts(), body }
    }

    /// `f` with its program order rolled into loops (see [`super::roll`]):
    /// `LoopedFunction::roll(f).expand()` is `f` with its instructions renumbered in program
    /// order (so `f` itself when its arena is in program order, as a planned function's is).
    pub fn roll(f: &Function) -> Self {
        let mut lf = LoopedFunction::from_function(f);
        lf.body = roll_items(std::mem::take(&mut lf.body));
        lf
    }

    /// `f` with its program order rolled along the loop nest `marks` describe (see
    /// [`super::nest`]; each mark's `at` is a place in `f`'s program order). Expands to `f`
    /// renumbered in program order, as [`Self::roll`].
    pub fn roll_nest(f: &Function, marks: &[NestMark]) -> Result<Self, NestError> {
        let mut lf = LoopedFunction::from_function(f);
        lf.body = roll_nest(std::mem::take(&mut lf.body), marks)?;
        Ok(lf)
    }

    /// [`Self::roll_nest`], outer levels merged into deeper ones when that prints shorter
    /// ([`super::nest::roll_nest_shortest`]).
    pub fn roll_nest_shortest(f: &Function, marks: &[NestMark]) -> Result<Self, NestError> {
        let mut lf = LoopedFunction::from_function(f);
        lf.body = roll_nest_shortest(&lf.body, marks)?;
        Ok(lf)
    }

    /// Instructions the unrolled function has, saturating at `u64::MAX`.
    pub fn unrolled_len(&self) -> u64 {
        unrolled_len(&self.body)
    }

    /// The unrolled function (instruction `i` is the `i`-th of the unrolled program order).
    pub fn expand(&self) -> Result<Function, ExpandError> {
        check_steps(&self.body)?;
        let n = self.unrolled_len();
        if n > u64::from(u32::MAX) {
            return Err(ExpandError::TooLong(n));
        }
        let mut f = self.header.clone();
        f.insts.clear();
        f.layout.clear();
        f.deps.clear();
        f.srclocs.clear();
        for inst in expand_items(&self.body)? {
            let at = f.insts.len() as u32;
            if let Some(d) = inst.deps.iter().find(|d| d.from.0 >= at) {
                return Err(ExpandError::ForwardEdge { at, from: d.from.0 });
            }
            let id = f.push_inst(inst.data, inst.deps);
            f.srclocs.set(id, inst.loc);
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::looped::fixture::{header, inst, looped, memset, waw};

    #[test]
    fn a_loop_steps_offsets_and_edges() {
        // memset @0; loop x3 { memset @64+64*i0 after(i0+1*i0) }
        let body =
            vec![inst(memset(0, 0.0), vec![]), looped(3, vec![inst(memset(64, 0.0), waw(&[0]))], vec![64, 0, 1])];
        let lf = LoopedFunction { header: header(), body };
        assert_eq!(lf.unrolled_len(), 4);
        let f = lf.expand().unwrap();
        let mut want = header();
        want.push_inst(memset(0, 0.0), vec![]);
        for k in 0..3u32 {
            want.push_inst(memset(64 * (i64::from(k) + 1), 0.0), waw(&[k]));
        }
        assert_eq!(f, want);
        // Wrapping an unrolled function and expanding it gives it back.
        assert_eq!(LoopedFunction::from_function(&f).expand(), Ok(f));
    }

    #[test]
    fn edges_must_point_backwards() {
        // The second trip's edge would point at itself.
        let body = vec![looped(2, vec![inst(memset(0, 0.0), waw(&[0]))], vec![64, 0, 2])];
        let lf = LoopedFunction { header: header(), body };
        assert_eq!(lf.expand(), Err(ExpandError::ForwardEdge { at: 0, from: 0 }));
    }
}
