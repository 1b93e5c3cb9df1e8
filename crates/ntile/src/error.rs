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

/// A clap error as a usage error: its whole message (every line of a multi-line one, such as
/// the list of missing arguments), without the `error: ` prefix and the usage footer.
#[expect(clippy::needless_pass_by_value, reason = "a map_err adapter")]
pub(crate) fn clap_error(e: clap::Error) -> CliError {
    let text = e.render().to_string();
    let body: Vec<&str> =
        text.lines().take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information")).collect();
    let joined = body.join("\n");
    let joined = joined.trim();
    CliError::usage(joined.strip_prefix("error: ").unwrap_or(joined).to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn clap_errors_keep_every_line_of_their_message() {
        let e = crate::parse(&["gemm", "--lhs", "a.npy"]).unwrap_err();
        assert_eq!(e.message, "the following required arguments were not provided:\n  --rhs <B.npy>", "{}", e.message);
        let e = crate::parse(&["gemm", "--m", "x"]).unwrap_err();
        assert!(e.message.starts_with("invalid value 'x' for '--m <M>'"), "{}", e.message);
        assert!(!e.message.contains("Usage"), "{}", e.message);
    }
}
