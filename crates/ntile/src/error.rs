//! CLI failures and their exit codes (SPEC section 7).

use std::fmt;

use driver::{DriverError, ErrorKind};

/// Exit code: the simulated result disagrees with the reference.
pub const EXIT_MISMATCH: u8 = 1;
/// Exit code: bad input or usage.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: an internal invariant failed (a bug).
pub const EXIT_INTERNAL: u8 = 3;
/// Exit code of an interrupted run (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;

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

impl From<DriverError> for CliError {
    /// The one place a pipeline failure becomes an exit code: the user's fault 2, a bug 3,
    /// an interruption 130.
    fn from(e: DriverError) -> Self {
        let code = match e.kind() {
            ErrorKind::Input => EXIT_USAGE,
            ErrorKind::Bug => EXIT_INTERNAL,
            ErrorKind::Interrupted => EXIT_INTERRUPTED,
        };
        CliError { code, message: e.to_string() }
    }
}

/// A clap error as a usage error: its first line, without the `error: ` prefix.
#[expect(clippy::needless_pass_by_value, reason = "a map_err adapter")]
pub(crate) fn clap_error(e: clap::Error) -> CliError {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    CliError::usage(first.strip_prefix("error: ").unwrap_or(first).trim().to_string())
}
