//! `cargo xtask`: the project's front door for checks and measurements.
//!
//! - `cargo xtask ci`: `cargo fmt --all --check`, `cargo clippy --workspace --all-targets -D
//!   warnings`, `cargo test --workspace`.
//! - `cargo xtask bench`: run the criterion benches and print the figures a reader needs.
//! - `cargo xtask golden`: regenerate the committed float-conversion golden vectors in
//!   `crates/penguin/tests/golden/` with numpy + ml_dtypes (`xtask/python/golden.py`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

fn cargo(args: &[&str]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    #[expect(clippy::print_stderr, reason = "xtask reports progress on stderr")]
    {
        eprintln!("$ cargo {}", args.join(" "));
    }
    let status =
        Command::new(&cargo).args(args).status().with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

fn ci() -> Result<()> {
    cargo(&["fmt", "--all", "--check"])?;
    cargo(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"])?;
    cargo(&["test", "--workspace"])?;
    Ok(())
}

fn bench() -> Result<()> {
    cargo(&["bench", "-p", "sim", "--bench", "sim"])?;
    Ok(())
}

/// The workspace root: xtask lives one directory below it.
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

fn golden() -> Result<()> {
    // Paths are relative to the workspace root so the command echoed is the one to rerun by hand.
    let args = ["xtask/python/golden.py", "crates/penguin/tests/golden"];
    #[expect(clippy::print_stderr, reason = "xtask reports progress on stderr")]
    {
        eprintln!("$ python3 {}", args.join(" "));
    }
    let status = Command::new("python3")
        .args(args)
        .current_dir(workspace_root())
        .status()
        .context("running python3 (the golden vectors need python3 with numpy and ml-dtypes)")?;
    if !status.success() {
        bail!("python3 {} failed ({status}); it needs `pip install numpy ml-dtypes`", args.join(" "));
    }
    Ok(())
}

fn main() -> Result<()> {
    let task = std::env::args().nth(1);
    match task.as_deref() {
        Some("ci") => ci(),
        Some("bench") => bench(),
        Some("golden") => golden(),
        Some(other) => bail!("unknown task `{other}` (available: ci, bench, golden)"),
        None => bail!("usage: cargo xtask <ci|bench|golden>"),
    }
}
