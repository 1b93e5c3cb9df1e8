//! Running the `ntile` binary (only ntile's tests have it; every other helper is in the
//! `test-support` crate).

use std::process::{Command, Output};

/// Run the `ntile` binary with `args`.
pub fn ntile(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ntile")).args(args).output().expect("the ntile binary runs")
}

/// The exit code of a finished run.
pub fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally, not by a signal")
}

/// The run's stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The run's stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
