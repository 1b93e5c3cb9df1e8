//! The bir crate's errors.

use penguin::InstId;

use crate::program::Engine;

/// The message the seed gives for an access pattern with more dimensions than the engine
/// supports.
pub const TOO_MANY_STRIDES: &str = "Too many strides!";

/// Errors of lowering and of the BIR verifier.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BirError {
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
    /// User error: the BIR verifier rejected the program (each line is one error).
    #[error("BIR verifier: {}", .0.join("; "))]
    Verify(Vec<String>),
}
