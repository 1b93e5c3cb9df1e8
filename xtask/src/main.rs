//! `cargo xtask`: the project's front door for checks and measurements.
//!
//! - `cargo xtask ci`: `cargo fmt --all --check`, `cargo clippy --workspace --all-targets -D
//!   warnings`, `cargo test --workspace`.
//! - `cargo xtask bench`: run the criterion benches and print the figures a reader needs.

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

fn main() -> Result<()> {
    let task = std::env::args().nth(1);
    match task.as_deref() {
        Some("ci") => ci(),
        Some("bench") => bench(),
        Some(other) => bail!("unknown task `{other}` (available: ci, bench)"),
        None => bail!("usage: cargo xtask <ci|bench>"),
    }
}
