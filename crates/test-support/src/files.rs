//! The workspace's files (examples, filetests) and scratch directories for a test's files.

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `examples/NAME` of the workspace.
pub fn example(name: &str) -> PathBuf {
    root().join("examples").join(name)
}

/// The filetests of one layer: `tests/filetests/LAYER`.
pub fn filetests(layer: &str) -> PathBuf {
    root().join("tests/filetests").join(layer)
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
