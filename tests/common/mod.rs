//! Helpers shared by the workspace's end-to-end tests: running the `ntile` binary and
//! scratch directories.
#![allow(dead_code, reason = "each test binary uses a subset of the helpers")]
#![allow(clippy::expect_used, clippy::unwrap_used, reason = "test helpers assert on values")]

use std::path::{Path, PathBuf};
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

/// A fresh directory for one test's files.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ntile-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A temporary path as `&str` (they are UTF-8).
pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}
