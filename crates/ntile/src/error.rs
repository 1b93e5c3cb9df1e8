//! CLI failures and their exit codes (SPEC section 7).

use std::fmt;

/// Exit code: the simulated result disagrees with the reference.
pub const EXIT_MISMATCH: u8 = 1;
/// Exit code: bad input or usage.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: an internal invariant failed (a bug).
pub const EXIT_INTERNAL: u8 = 3;

/// A failure with the exit code it maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// Process exit code.
    pub code: u8,
    /// What went wrong, for the user.
    pub message: String,
}

impl CliError {
    /// Bad input or usage (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError { code: EXIT_USAGE, message: message.into() }
    }

    /// A bug (exit 3).
    pub fn internal(message: impl Into<String>) -> Self {
        CliError { code: EXIT_INTERNAL, message: message.into() }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

impl From<codegen::CodegenError> for CliError {
    fn from(e: codegen::CodegenError) -> Self {
        use codegen::CodegenError as E;
        match e {
            E::Verify(_) => CliError::internal(format!("generated kernel failed verification (a bug): {e}")),
            E::Penguin(_) => CliError::internal(format!("internal error: {e}")),
            E::Internal(_) => CliError::internal(format!("{e} (a bug)")),
            E::ResultNotPsum
            | E::NotADataTile
            | E::KernelNameMismatch { .. }
            | E::UnsupportedKernelName(_)
            | E::SbufCapacity { .. }
            | E::TooManyPartitions { .. }
            | E::PsumBankOverflow { .. }
            | E::PsumGroupsExhausted(_)
            | E::IncompatibleTiles { .. }
            | E::KSliceMismatch { .. }
            | E::PsumRegionMismatch { .. }
            | E::BadOperand(_)
            | E::BadGemm(_)
            | E::DoubleRow(_)
            | E::Bundle(_)
            | E::Sparse(_)
            | E::NotSparse { .. }
            | E::Unsupported(_) => CliError::usage(e.to_string()),
        }
    }
}

impl From<bir::BirError> for CliError {
    fn from(e: bir::BirError) -> Self {
        use bir::BirError as E;
        match e {
            E::SbufCapacity { .. } | E::TooManyStrides { .. } | E::Unsupported(_) | E::ShapeMismatch { .. } => {
                CliError::usage(e.to_string())
            }
            E::Internal(_) | E::Verify(_) => CliError::internal(format!("lowering failed (a bug): {e}")),
        }
    }
}
