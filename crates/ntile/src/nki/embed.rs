//! The Python half of `ntile nki`, embedded: the tracer's files (`python/ntile/__init__.py`,
//! `_nki/`, `nki/`, `neuronxcc/`) are compiled into the binary and written once per content
//! to a cache directory, from which `python3 -m ntile._nki.cli` runs them. So `ntile nki`
//! works where the ntile Python module is not installed: it needs python3 and numpy only.

use std::path::{Path, PathBuf};

use crate::error::CliError;

/// Every file of the tracer, by its path under the package root (`ntile/...`).
pub(crate) const FILES: &[(&str, &str)] = &[
    ("ntile/__init__.py", include_str!("../../../../python/ntile/__init__.py")),
    ("ntile/_calibrate.py", include_str!("../../../../python/ntile/_calibrate.py")),
    ("ntile/_nki/__init__.py", include_str!("../../../../python/ntile/_nki/__init__.py")),
    ("ntile/_nki/alloc.py", include_str!("../../../../python/ntile/_nki/alloc.py")),
    ("ntile/_nki/cli.py", include_str!("../../../../python/ntile/_nki/cli.py")),
    ("ntile/_nki/dtypes.py", include_str!("../../../../python/ntile/_nki/dtypes.py")),
    ("ntile/_nki/enums.py", include_str!("../../../../python/ntile/_nki/enums.py")),
    ("ntile/_nki/errors.py", include_str!("../../../../python/ntile/_nki/errors.py")),
    ("ntile/_nki/hook.py", include_str!("../../../../python/ntile/_nki/hook.py")),
    ("ntile/_nki/index.py", include_str!("../../../../python/ntile/_nki/index.py")),
    ("ntile/_nki/indirect.py", include_str!("../../../../python/ntile/_nki/indirect.py")),
    ("ntile/_nki/isa_ops.py", include_str!("../../../../python/ntile/_nki/isa_ops.py")),
    ("ntile/_nki/lang.py", include_str!("../../../../python/ntile/_nki/lang.py")),
    ("ntile/_nki/loops.py", include_str!("../../../../python/ntile/_nki/loops.py")),
    ("ntile/_nki/ops.py", include_str!("../../../../python/ntile/_nki/ops.py")),
    ("ntile/_nki/run.py", include_str!("../../../../python/ntile/_nki/run.py")),
    ("ntile/_nki/spmd.py", include_str!("../../../../python/ntile/_nki/spmd.py")),
    ("ntile/_nki/tensors.py", include_str!("../../../../python/ntile/_nki/tensors.py")),
    ("ntile/_nki/trace.py", include_str!("../../../../python/ntile/_nki/trace.py")),
    ("ntile/_nki/values.py", include_str!("../../../../python/ntile/_nki/values.py")),
    ("ntile/_nki/view.py", include_str!("../../../../python/ntile/_nki/view.py")),
    ("ntile/neuronxcc/__init__.py", include_str!("../../../../python/ntile/neuronxcc/__init__.py")),
    ("ntile/neuronxcc/nki/__init__.py", include_str!("../../../../python/ntile/neuronxcc/nki/__init__.py")),
    (
        "ntile/neuronxcc/nki/compiler/__init__.py",
        include_str!("../../../../python/ntile/neuronxcc/nki/compiler/__init__.py"),
    ),
    ("ntile/neuronxcc/nki/compiler/psum.py", include_str!("../../../../python/ntile/neuronxcc/nki/compiler/psum.py")),
    ("ntile/neuronxcc/nki/compiler/sbuf.py", include_str!("../../../../python/ntile/neuronxcc/nki/compiler/sbuf.py")),
    ("ntile/neuronxcc/nki/isa/__init__.py", include_str!("../../../../python/ntile/neuronxcc/nki/isa/__init__.py")),
    ("ntile/neuronxcc/nki/isa/constants.py", include_str!("../../../../python/ntile/neuronxcc/nki/isa/constants.py")),
    (
        "ntile/neuronxcc/nki/language/__init__.py",
        include_str!("../../../../python/ntile/neuronxcc/nki/language/__init__.py"),
    ),
    (
        "ntile/neuronxcc/nki/language/constants.py",
        include_str!("../../../../python/ntile/neuronxcc/nki/language/constants.py"),
    ),
    ("ntile/neuronxcc/nki/typing.py", include_str!("../../../../python/ntile/neuronxcc/nki/typing.py")),
    ("ntile/nki/__init__.py", include_str!("../../../../python/ntile/nki/__init__.py")),
    ("ntile/nki/isa.py", include_str!("../../../../python/ntile/nki/isa.py")),
    ("ntile/nki/language.py", include_str!("../../../../python/ntile/nki/language.py")),
    ("ntile/nki/typing.py", include_str!("../../../../python/ntile/nki/typing.py")),
];

/// A digest of the files (FNV-1a, 64 bits): the cache directory's name changes with them.
fn digest() -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (path, text) in FILES {
        for b in path.bytes().chain([0]).chain(text.bytes()).chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The cache root: `$NTILE_CACHE_DIR`, else `$XDG_CACHE_HOME/ntile`, else `~/.cache/ntile`,
/// else the temporary directory's `ntile-cache`.
fn cache_root() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = var("NTILE_CACHE_DIR") {
        return d;
    }
    if let Some(d) = var("XDG_CACHE_HOME") {
        return d.join("ntile");
    }
    if let Some(h) = var("HOME") {
        return h.join(".cache").join("ntile");
    }
    std::env::temp_dir().join("ntile-cache")
}

/// The directory holding the `ntile` package of this binary, written there on first use
/// (into a fresh directory renamed into place, so a half-written copy is never used).
pub(crate) fn package_dir() -> Result<PathBuf, CliError> {
    let dir = cache_root().join(format!("py-{}-{:016x}", env!("CARGO_PKG_VERSION"), digest()));
    if dir.join("ntile").join("__init__.py").is_file() {
        return Ok(dir);
    }
    let fail = |what: &Path, e: std::io::Error| {
        CliError::usage(format!(
            "ntile nki: cannot write its Python files to {}: {e} (set NTILE_CACHE_DIR)",
            what.display()
        ))
    };
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| fail(parent, e))?;
    let tmp = parent.join(format!(".tmp-{}-{:016x}", std::process::id(), digest()));
    for (path, text) in FILES {
        let file = tmp.join(path);
        if let Some(d) = file.parent() {
            std::fs::create_dir_all(d).map_err(|e| fail(d, e))?;
        }
        std::fs::write(&file, text).map_err(|e| fail(&file, e))?;
    }
    if std::fs::rename(&tmp, &dir).is_err() {
        // Another ntile wrote it first: use theirs.
        let _ = std::fs::remove_dir_all(&tmp);
        if !dir.join("ntile").join("__init__.py").is_file() {
            return Err(CliError::usage(format!("ntile nki: cannot create {} (set NTILE_CACHE_DIR)", dir.display())));
        }
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tracer_file_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python");
        let mut on_disk = Vec::new();
        for sub in ["ntile/_nki", "ntile/nki", "ntile/neuronxcc"] {
            let mut stack = vec![root.join(sub)];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).unwrap() {
                    let p = e.unwrap().path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if p.extension().is_some_and(|x| x == "py") {
                        on_disk.push(p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/"));
                    }
                }
            }
        }
        // The package's own modules that importing `ntile` loads.
        on_disk.push("ntile/__init__.py".into());
        on_disk.push("ntile/_calibrate.py".into());
        on_disk.sort();
        let mut embedded: Vec<String> = FILES.iter().map(|(p, _)| (*p).to_string()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk, "crates/ntile/src/nki/embed.rs must list every tracer file");
    }
}
