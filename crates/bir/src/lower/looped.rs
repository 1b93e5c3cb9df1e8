//! Lowering a looped Penguin function ([`penguin::LoopedFunction`]) to a looped BIR program.
//!
//! [`lower_looped`] first lowers the function loop by loop without expanding it
//! ([`super::lower_looped_native`]: the BIR streams follow the Penguin nest). Only when that
//! is impossible for a named reason ([`LowerLoopedError::NotAffine`],
//! [`LowerLoopedError::QueueDrift`], [`LowerLoopedError::NotUniform`]) and the function
//! unrolls to at most [`MAX_LOWER_UNROLLED`] instructions does it fall back to expanding: the
//! function is expanded, verified and lowered as an unrolled one would be, and the lowered
//! program is rolled again ([`crate::roll`]), with the Penguin origins dropped (an origin
//! names a different instruction in every iteration, so it is no loop parameter and would
//! keep every loop from rolling). Either way `lower_looped(lf)?.expand()` has the ops of
//! `lower` of `lf.expand()`, stream by stream in the same order.

use penguin::looped::{ExpandError, LoopError};
use penguin::{LoopedFunction, Target, VerifierErrors};

use super::lower;
use crate::error::BirError;
use crate::looped::LoopedProgram;

/// The most unrolled instructions [`lower_looped`] expands a function to: a Penguin
/// instruction and its lowering take about a KiB together, so 2^22 stay within about 4 GiB.
pub const MAX_LOWER_UNROLLED: u64 = 1 << 22;

/// Why a looped function does not lower.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LowerLoopedError {
    /// The function unrolls to more instructions than the lowering expands.
    #[error("the function unrolls to {got} instructions, more than the {max} a looped lowering expands")]
    TooLong {
        /// Unrolled instructions of the function.
        got: u64,
        /// [`MAX_LOWER_UNROLLED`].
        max: u64,
    },
    /// A loop does not expand (malformed trips or steps, a parameter out of range, a
    /// forward edge).
    #[error(transparent)]
    Expand(#[from] ExpandError),
    /// The expansion breaks a Penguin verifier rule.
    #[error("Penguin verifier: {0}")]
    Verify(VerifierErrors),
    /// The lowering of the expansion failed.
    #[error(transparent)]
    Lower(#[from] BirError),
    /// The looped Penguin verifier rejects the function.
    #[error("looped Penguin verifier: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    LoopVerify(Vec<LoopError>),
    /// Native lowering: a wait of a dependency edge is not affine in the loop indices, even
    /// after peeling first iterations.
    #[error("i{consumer}: the wait of edge {edge} is not affine in its loop indices")]
    NotAffine {
        /// The consumer's unrolled index in the first iteration of its loops.
        consumer: u64,
        /// Which of its edges.
        edge: usize,
    },
    /// Native lowering: the DMA queues of a loop drift with a period too long to unroll.
    #[error("the loop at i{first}: DMA queues repeat every {period} iterations, too many to unroll")]
    QueueDrift {
        /// The unrolled index of the loop's first instruction.
        first: u64,
        /// Iterations after which the queues repeat.
        period: u64,
    },
    /// Native lowering: an instruction lowers to other engines or op shapes in another
    /// iteration.
    #[error("i{index}: the lowering changes engines or op shapes between iterations")]
    NotUniform {
        /// The instruction's unrolled index in the first iteration of its loops.
        index: u64,
    },
}

impl LowerLoopedError {
    /// Whether the native lowering failed for a reason the expanding lowering does not have
    /// (including a looped verifier that could not check the function without expanding
    /// too much, [`LoopError::CornerTooLarge`]).
    pub fn is_native_only(&self) -> bool {
        match self {
            Self::NotAffine { .. } | Self::QueueDrift { .. } | Self::NotUniform { .. } => true,
            Self::LoopVerify(e) => e.iter().all(|e| matches!(e, LoopError::CornerTooLarge { .. })),
            _ => false,
        }
    }
}

/// Lower a looped function for a target (see the module doc).
pub fn lower_looped(func: &LoopedFunction, target: Target) -> Result<LoopedProgram, LowerLoopedError> {
    match super::lower_looped_native(func, target) {
        Err(e) if e.is_native_only() && func.unrolled_len() <= MAX_LOWER_UNROLLED => {
            lower_looped_expanded(func, target)
        }
        r => r,
    }
}

/// Expand, verify, lower and roll (see the module doc).
pub fn lower_looped_expanded(func: &LoopedFunction, target: Target) -> Result<LoopedProgram, LowerLoopedError> {
    let got = func.unrolled_len();
    if got > MAX_LOWER_UNROLLED {
        return Err(LowerLoopedError::TooLong { got, max: MAX_LOWER_UNROLLED });
    }
    let f = func.expand()?;
    let verified = penguin::verify(&f).map_err(LowerLoopedError::Verify)?;
    let mut p = lower(verified, target)?;
    p.streams.iter_mut().flatten().for_each(|i| i.origin = None);
    Ok(crate::roll(&p))
}

#[cfg(test)]
mod tests {
    use penguin::looped::{Item, Loop};
    use penguin::{verify, whole_tile, ComputeEngine, DType, Function, InstData, Memory, MemsetData, TensorData};

    use super::*;

    /// A function of `n` memsets, each on the next 8 columns of one SBUF tensor.
    fn fills(n: usize) -> (Function, InstData) {
        let mut f = Function::new("fills");
        let t = TensorData {
            name: "x".into(),
            shape: vec![128, 8 * n as u64],
            dtype: DType::Fp32,
            memory: Memory::Sbuf,
            address: Some(0),
        };
        let id = f.add_tensor(t.clone()).unwrap();
        let mut tile = whole_tile(id, &t);
        tile.ap.free.last_mut().unwrap().num = 8;
        let first = InstData::Memset(MemsetData { engine: ComputeEngine::Dve, dst: tile, value: 2.0 });
        for k in 0..n {
            let mut inst = first.clone();
            inst.operands_mut()[0].ap.offset = 8 * k as i64;
            f.push_inst(inst, vec![]);
        }
        (f, first)
    }

    #[test]
    fn a_looped_function_lowers_to_the_rolled_lowering_of_its_expansion() {
        let (f, first) = fills(6);
        let mut lf = LoopedFunction::from_function(&f);
        lf.body = vec![Item::Loop(Loop {
            trips: 6,
            body: vec![Item::Inst(penguin::PirInst { data: first, deps: vec![], loc: None })],
            step: vec![8, 0],
        })];
        assert_eq!(lf.expand().unwrap(), f);
        let lp = lower_looped(&lf, Target::Trn2).unwrap();
        let dve = lp.stream(crate::Engine::Dve);
        assert!(matches!(dve, [Item::Loop(l)] if l.trips == 6), "{dve:?}");
        let mut unrolled = lower(verify(&f).unwrap(), Target::Trn2).unwrap();
        unrolled.streams.iter_mut().flatten().for_each(|i| i.origin = None);
        assert_eq!(lp.expand().unwrap(), unrolled);
    }

    #[test]
    fn a_loop_that_breaks_a_rule_is_refused_with_the_verifier_error() {
        let (f, first) = fills(6);
        let mut lf = LoopedFunction::from_function(&f);
        // Seven trips: the last memset writes past the end of the tensor.
        lf.body = vec![Item::Loop(Loop {
            trips: 7,
            body: vec![Item::Inst(penguin::PirInst { data: first, deps: vec![], loc: None })],
            step: vec![8, 0],
        })];
        let err = lower_looped(&lf, Target::Trn2).unwrap_err();
        assert!(matches!(&err, LowerLoopedError::LoopVerify(e) if e.len() == 1), "{err}");
        let err = lower_looped_expanded(&lf, Target::Trn2).unwrap_err();
        assert!(matches!(&err, LowerLoopedError::Verify(_)), "{err}");
        lf.body = vec![Item::Loop(Loop { trips: 0, body: vec![], step: vec![] })];
        let err = lower_looped(&lf, Target::Trn2).unwrap_err();
        let at = penguin::looped::LoopAt { first: 0, depth: 0 };
        assert_eq!(err, LowerLoopedError::LoopVerify(vec![LoopError::ZeroTrips { at }, LoopError::EmptyBody { at }]));
        let err = lower_looped_expanded(&lf, Target::Trn2).unwrap_err();
        assert_eq!(err, LowerLoopedError::Expand(ExpandError::Step(penguin::looped::StepError::ZeroTrips)));
    }

    #[test]
    fn a_function_too_long_to_expand_lowers_natively_and_is_refused_by_the_expanding_path() {
        let (f, first) = fills(1);
        let mut lf = LoopedFunction::from_function(&f);
        let inner = Item::Loop(Loop {
            trips: 1 << 13,
            body: vec![Item::Inst(penguin::PirInst { data: first, deps: vec![], loc: None })],
            step: vec![0, 0],
        });
        lf.body = vec![Item::Loop(Loop { trips: 1 << 12, body: vec![inner], step: vec![0, 0] })];
        let err = lower_looped_expanded(&lf, Target::Trn2).unwrap_err();
        assert_eq!(err, LowerLoopedError::TooLong { got: 1 << 25, max: MAX_LOWER_UNROLLED });
        let lp = lower_looped(&lf, Target::Trn2).unwrap();
        let dve = lp.stream(crate::Engine::Dve);
        let [Item::Loop(outer)] = dve else { panic!("{dve:?}") };
        assert!(matches!(outer.body.as_slice(), [Item::Loop(l)] if l.trips == 1 << 13 && l.step == vec![0, 0]));
        assert_eq!((outer.trips, outer.step.clone(), lp.unrolled_len()), (1 << 12, vec![0, 0], 1 << 25));
    }

    #[test]
    fn only_native_reasons_fall_back() {
        let corner = LoopError::CornerTooLarge { unrolled: 1 << 22, corner: 1 << 22, max: 1 << 21 };
        assert!(LowerLoopedError::LoopVerify(vec![corner]).is_native_only());
        assert!(LowerLoopedError::NotAffine { consumer: 3, edge: 1 }.is_native_only());
        assert!(LowerLoopedError::QueueDrift { first: 0, period: 48 }.is_native_only());
        assert!(LowerLoopedError::NotUniform { index: 0 }.is_native_only());
        let at = penguin::looped::LoopAt { first: 0, depth: 0 };
        assert!(!LowerLoopedError::LoopVerify(vec![LoopError::ZeroTrips { at }]).is_native_only());
        assert!(!LowerLoopedError::TooLong { got: 1, max: 0 }.is_native_only());
    }
}
