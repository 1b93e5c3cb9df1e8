//! Loops in BIR streams: a body repeated `trips` times whose parameters advance by a fixed
//! step each iteration, as real instruction streams loop instead of unrolling.
//!
//! A [`LoopedProgram`] has the header of a [`Program`] (HBM layout, semaphores, target) and
//! one stream of [`Item`]s per engine. An item is an instruction or a [`Loop`]; loops nest.
//!
//! # Parameters
//! What may change from one iteration to the next are an item's *parameters*, in this order
//! ([`params`]):
//! - for an instruction: for each access pattern in [`crate::Op::aps`] order, its
//!   `byte_offset` then its `start_partition`; then the `value` of each wait in order;
//! - for a loop: the parameters of its body items, in order (the loop's own step is fixed).
//!
//! Iteration `k` of a loop (`0 <= k < trips`) is its body with every parameter advanced by
//! `k * step[j]`. Everything else (op kind, attributes, dims, dtypes, memories, semaphores,
//! signals, origins) is the same in every iteration. Signals need no step: a signal adds one
//! each time its instruction completes, so a wait on "the i-th completion" grows with `k`.
//!
//! [`LoopedProgram::expand`] gives the unrolled [`Program`] (the meaning of a looped one).

use penguin::looped::StepError;
use serde::{Deserialize, Serialize};

#[cfg(test)]
pub(crate) mod fixture;
pub mod roll;
pub mod verify;

pub use roll::{roll, roll_owned};
pub use verify::{verify_looped, verify_looped_sharing, LoopAt, LoopError};

use crate::error::{BirError, VerifyError};
use crate::program::{BirInst, Engine, Program, NUM_ENGINES};

/// One entry of a looped stream (see [`penguin::looped::Item`]).
pub type Item = penguin::looped::Item<BirInst>;

/// `trips` repetitions of `body`, iteration `k` advanced by `k * step` (see
/// [`penguin::looped::Loop`]).
pub type Loop = penguin::looped::Loop<BirInst>;

impl penguin::looped::Stepped for BirInst {
    fn param_count(&self) -> usize {
        inst_param_count(self)
    }

    fn push_params(&self, out: &mut Vec<i64>) {
        push_inst_params(self, out);
    }

    fn advance(&self, delta: &[i64]) -> Option<Self> {
        advance_inst(self, delta)
    }
}

/// A program whose streams may loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopedProgram {
    /// Everything but the streams (its `streams` are empty).
    pub header: Program,
    /// Streams, indexed by [`Engine::index`].
    pub streams: Vec<Vec<Item>>,
}

/// The number of parameters of one instruction.
pub fn inst_param_count(inst: &BirInst) -> usize {
    2 * inst.op.ap_count() + inst.waits.len()
}

/// The number of parameters of a sequence of items.
pub fn param_count(items: &[Item]) -> usize {
    penguin::looped::param_count(items)
}

/// Append the parameters of one instruction to `out`.
pub fn push_inst_params(inst: &BirInst, out: &mut Vec<i64>) {
    for (_, ap) in inst.op.aps() {
        out.push(i64::try_from(ap.byte_offset).unwrap_or(i64::MAX));
        out.push(i64::from(ap.start_partition));
    }
    out.extend(inst.waits.iter().map(|w| i64::try_from(w.value).unwrap_or(i64::MAX)));
}

/// The parameters of a sequence of items, in order.
pub fn params(items: &[Item]) -> Vec<i64> {
    penguin::looped::params(items)
}

/// `inst` with its parameters advanced by `delta` (one entry per parameter); `None` when a
/// parameter leaves its range (a negative offset, a partition past `u32`, a wait value past `i64`).
pub fn advance_inst(inst: &BirInst, delta: &[i64]) -> Option<BirInst> {
    let mut out = inst.clone();
    let mut d = delta.iter().copied();
    let mut aps: Vec<&mut crate::HwAp> = out.op.aps_mut().into_iter().map(|(_, ap)| ap).collect();
    for ap in &mut aps {
        let off = i128::from(ap.byte_offset) + i128::from(d.next()?);
        ap.byte_offset = u64::try_from(off).ok()?;
        let part = i64::from(ap.start_partition).checked_add(d.next()?)?;
        ap.start_partition = u32::try_from(part).ok()?;
    }
    for w in &mut out.waits {
        let v = i64::try_from(w.value).ok()?.checked_add(d.next()?)?;
        w.value = u64::try_from(v).ok()?;
    }
    Some(out)
}

impl LoopedProgram {
    /// A looped program with no loops: every instruction of `p` as an [`Item::Inst`].
    pub fn from_program(p: &Program) -> Self {
        let header = Program {
            kernel_name: p.kernel_name.clone(),
            target: p.target,
            hbm: p.hbm.clone(),
            hbm_size: p.hbm_size,
            semaphores: p.semaphores.clone(),
            streams: vec![Vec::new(); NUM_ENGINES],
            sbuf_peak_bytes: p.sbuf_peak_bytes,
            srclocs: p.srclocs.clone(),
        };
        let streams = p.streams.iter().map(|s| s.iter().cloned().map(Item::Inst).collect()).collect();
        LoopedProgram { header, streams }
    }

    /// [`LoopedProgram::from_program`], moving the instructions instead of copying them.
    pub fn from_program_owned(mut p: Program) -> Self {
        let streams = std::mem::replace(&mut p.streams, vec![Vec::new(); NUM_ENGINES]);
        let streams = streams.into_iter().map(|s| s.into_iter().map(Item::Inst).collect()).collect();
        LoopedProgram { header: p, streams }
    }

    /// The items of an engine's stream.
    pub fn stream(&self, e: Engine) -> &[Item] {
        self.streams.get(e.index()).map_or(&[], Vec::as_slice)
    }

    /// Instructions the unrolled program has, saturating at `u64::MAX`.
    pub fn unrolled_len(&self) -> u64 {
        self.streams.iter().map(|s| penguin::looped::unrolled_len(s)).fold(0, u64::saturating_add)
    }

    /// Bytes the unrolled program's DMA instructions move to or from HBM (as
    /// [`Program::hbm_traffic_bytes`] counts them), over the loops without unrolling them: an
    /// instruction's bytes follow from its dims and dtypes, which no iteration changes.
    pub fn hbm_traffic_bytes(&self) -> u64 {
        fn bytes(items: &[Item]) -> u64 {
            items
                .iter()
                .map(|item| match item {
                    penguin::looped::Item::Inst(inst) => inst.op.hbm_bytes(),
                    penguin::looped::Item::Loop(l) => bytes(&l.body).saturating_mul(u64::from(l.trips)),
                })
                .fold(0, u64::saturating_add)
        }
        self.streams.iter().map(|s| bytes(s)).fold(0, u64::saturating_add)
    }

    /// The unrolled program. Fails when an iteration moves a parameter out of its range or a
    /// loop's step does not match its body.
    pub fn expand(&self) -> Result<Program, BirError> {
        let mut p = self.header.clone();
        p.streams = vec![Vec::new(); NUM_ENGINES];
        for (e, items) in self.streams.iter().enumerate() {
            p.streams[e] = penguin::looped::expand_items(items).map_err(|err| {
                let message = match err {
                    StepError::OutOfRange => format!("a loop on {} moves a parameter out of range", engine_name(e)),
                    malformed => malformed.to_string(),
                };
                BirError::Verify(vec![VerifyError::program(message)])
            })?;
        }
        Ok(p)
    }
}

fn engine_name(e: usize) -> String {
    Engine::from_index(e).map_or_else(|| format!("stream {e}"), |e| e.name())
}

#[cfg(test)]
mod tests {
    use super::fixture::{copy, program};
    use super::*;

    #[test]
    fn expand_advances_offsets_and_waits_per_iteration() {
        let mut lp = LoopedProgram::from_program(&program(Engine::Dma(0), Vec::new()));
        let body = vec![Item::Inst(copy(0, Some(1)))];
        // dst offset +32, dst partition 0, src offset +32, src partition 0, wait +1.
        lp.streams[Engine::Dma(0).index()] = vec![Item::Loop(Loop { trips: 3, body, step: vec![32, 0, 32, 0, 1] })];
        assert_eq!(lp.unrolled_len(), 3);
        let x = lp.expand().unwrap();
        let want: Vec<BirInst> = (0..3).map(|k| copy(32 * k, Some(1 + k as u32))).collect();
        assert_eq!(x.stream(Engine::Dma(0)), want.as_slice());
        // A nested loop: 2 x the 3-trip loop, the outer one moving the inner body by 96.
        let inner = lp.streams[Engine::Dma(0).index()].clone();
        lp.streams[Engine::Dma(0).index()] =
            vec![Item::Loop(Loop { trips: 2, body: inner, step: vec![96, 0, 96, 0, 3] })];
        let x = lp.expand().unwrap();
        let want: Vec<BirInst> = (0..6).map(|k| copy(32 * k, Some(1 + k as u32))).collect();
        assert_eq!(x.stream(Engine::Dma(0)), want.as_slice());
    }

    #[test]
    fn expand_refuses_bad_steps() {
        let p = Program::new("k", penguin::Target::Trn2);
        let mut lp = LoopedProgram::from_program(&p);
        let body = vec![Item::Inst(copy(0, None))];
        lp.streams[0] = vec![Item::Loop(Loop { trips: 2, body: body.clone(), step: vec![1] })];
        assert!(matches!(lp.expand(), Err(BirError::Verify(_))));
        lp.streams[0] = vec![Item::Loop(Loop { trips: 2, body, step: vec![-64, 0, 0, 0] })];
        assert!(matches!(lp.expand(), Err(BirError::Verify(_))));
    }
}
