//! The bir crate's errors.

use std::fmt;

use penguin::InstId;

use crate::program::{Engine, InstRef};

/// The message the seed gives for an access pattern with more dimensions than the engine
/// supports.
pub const TOO_MANY_STRIDES: &str = "Too many strides!";

/// Errors of lowering and of the BIR verifier.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BirError {
    /// The caller's [`penguin::Cancel`] stopped the lowering.
    #[error("interrupted")]
    Interrupted,
    /// Limit: an access pattern has more free dimensions than its engine supports.
    #[error("Too many strides! ({inst}: {dims} free dimensions on {engine}, at most {max})")]
    TooManyStrides {
        /// The Penguin instruction.
        inst: InstId,
        /// The engine.
        engine: Engine,
        /// Dimensions given.
        dims: usize,
        /// Dimensions allowed.
        max: usize,
    },
    /// Limit: on-chip tensors do not fit the target's SBUF.
    #[error("tensor `{tensor}` needs {needed} bytes per partition of SBUF but {target} has {available}")]
    SbufCapacity {
        /// The tensor that does not fit.
        tensor: String,
        /// Bytes per partition needed up to its end.
        needed: u64,
        /// Bytes per partition available.
        available: u64,
        /// The target.
        target: penguin::Target,
    },
    /// User error: the operands of an offloaded op iterate different shapes.
    #[error("offloaded op operands have different shapes: {a:?} vs {b:?}")]
    ShapeMismatch {
        /// First operand's `[partitions, free elements]`.
        a: Vec<u32>,
        /// The other operand's.
        b: Vec<u32>,
    },
    /// Unsupported: a feature the lowering does not handle on this target.
    #[error("{0}")]
    Unsupported(String),
    /// Bug: the verified function broke an invariant the lowering relies on.
    #[error("internal error: {0}")]
    Internal(String),
    /// User error: the BIR verifier rejected the program (every broken rule).
    #[error("BIR verifier: {}", join(.0))]
    Verify(Vec<VerifyError>),
}

/// One broken rule of the BIR verifier: the instruction it is about, if any, and what is
/// wrong. Prints as `pe[3] multiply_moving: message`, or the bare message for the program as
/// a whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The instruction concerned; `None` for the program as a whole.
    pub at: Option<InstRef>,
    /// The opcode name of the instruction at `at`, printed after its position (empty when
    /// `at` is `None`).
    pub opcode: &'static str,
    /// What is wrong.
    pub message: String,
    /// The physical core whose program it is about (0 for a one-core program; printed as
    /// `core1.` before the instruction from core 1 on).
    pub core: u32,
}

impl VerifyError {
    /// An error about the instruction at `at`, whose opcode name is `opcode`.
    pub fn inst(at: InstRef, opcode: &'static str, message: impl Into<String>) -> Self {
        VerifyError { at: Some(at), opcode, message: message.into(), core: 0 }
    }

    /// An error about the program as a whole.
    pub fn program(message: impl Into<String>) -> Self {
        VerifyError { at: None, opcode: "", message: message.into(), core: 0 }
    }

    /// The same error about core `core`'s program of a [`Chip`](crate::Chip).
    pub fn on_core(self, core: u32) -> Self {
        VerifyError { core, ..self }
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.at, self.core) {
            (Some(at), 0) => write!(f, "{at} {}: {}", self.opcode, self.message),
            (Some(at), core) => write!(f, "core{core}.{at} {}: {}", self.opcode, self.message),
            (None, 0) => f.write_str(&self.message),
            (None, core) => write!(f, "core {core}: {}", self.message),
        }
    }
}

fn join(errors: &[VerifyError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}
