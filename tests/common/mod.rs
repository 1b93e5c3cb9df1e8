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

/// A fresh directory for one test's files, removed when the guard is dropped (also when the
/// test fails), so that no run leaves `ntile-test-*` directories behind.
pub fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("ntile-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch { path: dir, remove: true }
}

/// A scratch directory that is removed on drop; it reads as its [`PathBuf`].
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
    remove: bool,
}

impl Scratch {
    /// The path, handing the removal to the caller.
    pub fn into_path(mut self) -> PathBuf {
        self.remove = false;
        std::mem::take(&mut self.path)
    }
}

impl std::ops::Deref for Scratch {
    type Target = PathBuf;

    fn deref(&self) -> &PathBuf {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// A temporary path as `&str` (they are UTF-8).
pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

/// Write a little-endian float32 `.npy` file of `shape` (version 1.0 header, C order).
pub fn write_f32_npy(path: &Path, shape: &[usize], data: &[f32]) {
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}",
        shape.iter().map(|d| format!("{d},")).collect::<String>()
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(data.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(path, bytes).unwrap();
}
