//! The penguin crate's errors.

use std::fmt;

use crate::entity::{InstId, TensorId};

/// What a verifier error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Entity {
    /// The function as a whole.
    Function,
    /// A tensor.
    Tensor(TensorId),
    /// An instruction.
    Inst(InstId),
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entity::Function => f.write_str("function"),
            Entity::Tensor(t) => write!(f, "{t}"),
            Entity::Inst(i) => write!(f, "{i}"),
        }
    }
}

/// One broken invariant (a user error in hand-written IR, a bug in generated IR).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierError {
    /// The entity concerned.
    pub entity: Entity,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for VerifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.entity, self.message)
    }
}

/// Every broken invariant of a function.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct VerifierErrors(pub Vec<VerifierError>);

impl VerifierErrors {
    /// Whether an error with this exact message was reported.
    pub fn has_message(&self, message: &str) -> bool {
        self.0.iter().any(|e| e.message == message)
    }
}

impl fmt::Display for VerifierErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} verifier error(s):", self.0.len())?;
        for e in &self.0 {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

/// Errors of the penguin crate.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PenguinError {
    /// User error: a tensor name is used twice.
    #[error("tensor name `{0}` is already used")]
    DuplicateTensor(String),
    /// User error: the function failed verification.
    #[error(transparent)]
    Verify(#[from] VerifierErrors),
}
