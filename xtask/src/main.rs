//! `cargo xtask`: the project's front door for checks and measurements.
//!
//! - `cargo xtask ci`: the rust-version check, `cargo fmt --all --check`, `cargo clippy
//!   --workspace --all-targets -D warnings`, `cargo doc --workspace --no-deps` with rustdoc
//!   warnings denied, `cargo test --workspace` (its property tests on a fixed seed, see
//!   [`CI_PROPTEST_SEED`]), then the Python module's
//!   pytest suite. The Python side needs nothing installed by hand: a virtual environment under
//!   `target/py` gets numpy, ml-dtypes, maturin and pytest from the package registry (once;
//!   reused when present), its `bin` goes first in `PATH` for `cargo test` (whose numpy
//!   cross-checks call `python3`), and `maturin develop` builds the module into it.
//! - `cargo xtask bench`: run the criterion benches and print the figures a reader needs
//!   (simulation vs plain GEMM ratio, planning and cycle-model times, the issue-6 suite).
//! - `cargo xtask suite`: only the suite table (modeled figures; no criterion run), the
//!   fidelity table (public hardware facts beside what the cycle model gives) and the NKI
//!   table (the five matmul steps of `examples/nki` through `ntile nki`, beside `ntile gemm`).
//! - `cargo xtask targets`: only the speed targets of issues 13 and 28 (also the end of
//!   `bench`): each figure beside its target, numpy's matmul on the same threads measured in
//!   the same run.
//! - `cargo xtask bless`: rewrite filetest expectations (`NTILE_BLESS=1`), the README's and
//!   docs/' console blocks (`TRYCMD=overwrite`) and its scripts' output blocks.
//! - `cargo xtask fuzz`: the byte-mutation test of the parsers at 20x its CI size.
//! - `cargo xtask msrv`: check that the workspace `rust-version` is the oldest toolchain the
//!   locked dependencies allow (also the first step of `ci`).
//! - `cargo xtask golden`: regenerate the committed float-conversion golden vectors in
//!   `crates/penguin/tests/golden/` with numpy + ml_dtypes (`xtask/python/golden.py`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

mod fidelity;
mod nki_suite;
mod pyenv;
mod targets;

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

/// `cargo doc --workspace --no-deps` with every rustdoc warning an error: the API docs are the
/// reference a compiler engineer reads, so a broken link fails CI like a failing test.
fn docs() -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    #[expect(clippy::print_stderr, reason = "xtask reports progress on stderr")]
    {
        eprintln!("$ RUSTDOCFLAGS='-D warnings' cargo doc --workspace --no-deps");
    }
    let status = Command::new(&cargo)
        .args(["doc", "--workspace", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings")
        .status()
        .context("running cargo doc")?;
    if !status.success() {
        bail!("cargo doc --workspace --no-deps failed ({status}): a rustdoc warning (see above)");
    }
    Ok(())
}

/// Announce a step of a task on stderr.
fn step(what: &str) {
    #[expect(clippy::print_stderr, reason = "xtask reports progress on stderr")]
    {
        eprintln!("== {what}");
    }
}

fn ci() -> Result<()> {
    step("ci: rust-version, fmt, clippy, docs, tests (cargo test --workspace), pytest");
    step("rust-version: the oldest toolchain the locked dependencies allow");
    rust_version_check()?;
    cargo(&["fmt", "--all", "--check"])?;
    cargo(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"])?;
    docs()?;
    let env = pyenv::prepare(&workspace_root())?;
    if std::env::var_os(PROPTEST_SEED_VAR).is_some() {
        env.cargo(&["test", "--workspace"])?;
    } else {
        env.cargo_with(&["test", "--workspace"], PROPTEST_SEED_VAR, CI_PROPTEST_SEED)?;
    }
    env.python_tests()?;
    Ok(())
}

/// The environment variable that seeds every property test's random cases.
const PROPTEST_SEED_VAR: &str = "PROPTEST_RNG_SEED";

/// The seed of the property tests under `cargo xtask ci` (unless `PROPTEST_RNG_SEED` is set):
/// every CI run tries the same cases, so that a red run is the change's and not the draw's (a
/// random draw once found a case that failed on a commit that had passed before). A plain
/// `cargo test` draws fresh cases on every run, which is where new ones are found; a failing
/// case is kept in the test's `proptest-regressions` file and replayed first from then on.
const CI_PROPTEST_SEED: &str = "28";

/// A `rust-version` such as `1.88` or `1.88.0`, as `(major, minor, patch)`.
fn parse_rust_version(v: &str) -> Option<(u64, u64, u64)> {
    let mut parts = v.split('.').map(|p| p.parse::<u64>().ok());
    let major = parts.next()??;
    let minor = parts.next().unwrap_or(Some(0))?;
    let patch = parts.next().unwrap_or(Some(0))?;
    Some((major, minor, patch))
}

/// The workspace's `rust-version` must be the oldest toolchain the locked dependencies allow:
/// no locked dependency may need a newer one, and the workspace must not claim a newer one
/// than they need (an over-claim hides what the code itself requires).
fn rust_version_check() -> Result<()> {
    let cargo_bin = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo_bin)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(workspace_root())
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata --locked failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).context("reading cargo metadata")?;
    let members: Vec<&str> =
        meta["workspace_members"].as_array().into_iter().flatten().filter_map(|m| m.as_str()).collect();
    let mut ours = None;
    let mut needed: Option<((u64, u64, u64), String)> = None;
    for package in meta["packages"].as_array().into_iter().flatten() {
        let Some(rv) = package["rust_version"].as_str() else { continue };
        let version = parse_rust_version(rv).with_context(|| format!("unreadable rust-version `{rv}`"))?;
        let id = package["id"].as_str().unwrap_or_default();
        let name =
            format!("{} {}", package["name"].as_str().unwrap_or("?"), package["version"].as_str().unwrap_or("?"));
        if members.contains(&id) {
            match ours {
                Some(v) if v != version => bail!("workspace members state different rust-versions ({name}: {rv})"),
                _ => ours = Some(version),
            }
        } else if needed.as_ref().is_none_or(|(v, _)| version > *v) {
            needed = Some((version, name));
        }
    }
    let Some(ours) = ours else { bail!("the workspace states no rust-version") };
    if let Some((need, name)) = needed {
        let show = |(a, b, c): (u64, u64, u64)| format!("{a}.{b}.{c}");
        if need > ours {
            bail!("rust-version is {} but the locked dependency {name} needs {}", show(ours), show(need));
        }
        if need < ours {
            bail!(
                "rust-version is {} but the locked dependencies allow {} (newest need: {name}); state the oldest",
                show(ours),
                show(need)
            );
        }
    }
    Ok(())
}

fn bench() -> Result<()> {
    cargo(&[
        "bench",
        "-p",
        "ntile",
        "--bench",
        "sim",
        "--bench",
        "cycle",
        "--bench",
        "extrapolate",
        "--bench",
        "sweep",
    ])?;
    cargo(&["bench", "-p", "penguin", "--bench", "parse"])?;
    cargo(&["bench", "-p", "nki", "--bench", "build"])?;
    let root = workspace_root();
    let criterion = root.join("target/criterion");
    let mean_ms = |group: &str, name: &str| -> Option<f64> {
        let path = criterion.join(group).join(name).join("new/estimates.json");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
        v["mean"]["point_estimate"].as_f64().map(|ns| ns / 1e6)
    };
    let mut out = String::from("\n== criterion means ==\n");
    let sim = mean_ms("gemm_1024", "simulate_bf16");
    let plain = mean_ms("gemm_1024", "plain_sgemm_f32");
    if let (Some(s), Some(p)) = (sim, plain) {
        out += &format!(
            "simulate 1024^3 bf16 GEMM: {s:.1} ms; plain f32 GEMM (matrixmultiply): {p:.1} ms; ratio {:.2}x (goal <= 2x)\n",
            s / p
        );
    }
    if let Some(t) = mean_ms("plan_lower_4096x8192x8192", "blocked_mn") {
        out += &format!("plan + lower 4096x8192x8192 (blocked-mn): {t:.0} ms\n");
    }
    for name in ["naive", "hoisted", "blocked_mn", "blocked_mnk"] {
        if let Some(t) = mean_ms("plan_in_loops_4096x8192x8192", name) {
            out += &format!(
                "plan in loops + lower + model 4096x8192x8192 ({name}): {t:.1} ms (target < 10 ms: {})\n",
                if t < 10.0 { "met" } else { "NOT met" }
            );
        }
    }
    if let Some(t) = mean_ms("auto_search_8192", "bf16_trn2") {
        out += &format!("auto search 8192^3 (rank, then plan + lower + cycle-model the shortlist): {t:.0} ms\n");
    }
    for entry in std::fs::read_dir(criterion.join("cycle_model_4096x8192x8192")).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(t) = mean_ms("cycle_model_4096x8192x8192", &name) {
            out += &format!("cycle model 4096x8192x8192 {name}: {t:.1} ms\n");
        }
    }
    if let Some(t) = mean_ms("cycle_model_looped", "pipeline_1m_steps") {
        out += &format!("cycle model of a looped 1M-step pipeline (8M unrolled instructions): {t:.2} ms\n");
    }
    for (name, what) in [
        ("nest_65536_tiles", "512x128x512 nest (65536^3 tile loops, 1.3e8 unrolled instructions)"),
        ("nest_1e10", "1000x1000x4000 nest (1.6e10 unrolled instructions)"),
    ] {
        if let Some(t) = mean_ms("cycle_model_looped", name) {
            out += &format!("cycle model of a looped GEMM-shaped {what}: {t:.2} ms (goal: well under 1 s)\n");
            if let Some(p) = mean_ms("cycle_model_looped", &format!("{name}_critical_path")) {
                out += &format!("  following its critical path (the report's bottleneck): {p:.2} ms = {:.2}x\n", p / t);
            }
        }
    }
    if let Some(t) = mean_ms("extrapolate", "blocked_mnk_65536") {
        out += &format!(
            "extrapolate + model 65536^3 blocked-mnk (reduced GEMMs planned, lowered, rolled, fitted; looped model): {t:.0} ms (goal < 1000 ms)\n"
        );
    }
    if let Some(t) = mean_ms("sweep", "llama7b") {
        out += &format!(
            "ntile sweep examples/llama7b.csv (224 rows, 3 distinct GEMMs, auto, trn2): {t:.0} ms (goal < 1000 ms)\n"
        );
    }
    for name in ["inputs_line_10mb", "memset_lines_100k"] {
        if let Some(t) = mean_ms("parse_pir", name) {
            out += &format!("parse .pir {name}: {t:.1} ms\n");
        }
    }
    for (name, what) in [("from_json", "read the JSON trace"), ("build", "build the kernel")] {
        if let Some(t) = mean_ms("nki_tiled_matmul_4096x8192x8192", name) {
            out += &format!("nki tiled matmul 4096x8192x8192 (134k records): {what}: {t:.0} ms\n");
        }
    }
    cargo(&["build", "--release", "-p", "ntile"])?;
    out += &suite(&root.join("target/release/ntile"))?;
    out += &targets::targets(&root.join("target/release/ntile"))?;
    say(&out);
    Ok(())
}

#[expect(clippy::print_stdout, reason = "xtask bench prints its table")]
fn say(s: &str) {
    println!("{s}");
}

/// The suite of issue 6: modeled time, HFU and HBM bytes over the I/O lower bound per shape.
fn suite(ntile: &std::path::Path) -> Result<String> {
    let big = "--m 4096 --k 8192 --n 8192 --lhs-transposed";
    let mut runs: Vec<(String, String)> = Vec::new();
    for target in ["trn1", "trn2"] {
        let mut add =
            |label: &str, args: String| runs.push((format!("{label} {target}"), format!("{args} --target {target}")));
        add("4096^3", "--m 4096 --k 4096 --n 4096".into());
        for s in ["naive", "hoisted", "blocked-mn", "blocked-mnk", "auto"] {
            add(&format!("4096x8192x8192 A^T {s}"), format!("{big} --schedule {s}"));
        }
        add("llama mlp up 2048x4096x11008", "--m 2048 --k 4096 --n 11008".into());
        add("llama mlp down 2048x11008x4096", "--m 2048 --k 11008 --n 4096".into());
        add("decode 1x4096x11008", "--m 1 --k 4096 --n 11008".into());
        add("decode 32x4096x11008", "--m 32 --k 4096 --n 11008".into());
        add("gpt2 qk^T 1024x64x1024", "--m 1024 --k 64 --n 1024".into());
        add("resnet50 fc 1x2048x1000", "--m 1 --k 2048 --n 1000".into());
        add("35x2560x8457", "--m 35 --k 2560 --n 8457".into());
    }
    runs.push((
        "fp8 double_row 2048x4096x11008 trn2".into(),
        "--m 2048 --k 4096 --n 11008 --dtype fp8e4m3 --perf-mode double_row --target trn2".into(),
    ));
    // The lower bound counts C in operand-dtype words, so the suite writes C in bf16 too.
    let mut out = String::from(
        "\n== suite (operands and C bf16 in HBM unless named; --no-sim) ==\n\
         HBM/LB: HBM bytes over the I/O lower bound; HBM/once: over reading A and B and writing C once\n\
         shape                                       schedule      A^T by  modeled_us   HFU   HBM/LB HBM/once  plan_ms\n",
    );
    for (label, args) in runs {
        let mut cmd = Command::new(ntile);
        cmd.arg("gemm").args(args.split_whitespace()).args([
            "--hbm-dtype",
            "bf16",
            "--out-dtype",
            "bf16",
            "--no-sim",
            "--json",
        ]);
        let o = cmd.output().with_context(|| format!("running ntile gemm {args}"))?;
        if !o.status.success() {
            out += &format!("{label:<44} failed: {}\n", String::from_utf8_lossy(&o.stderr).trim());
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)?;
        let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        out += &format!(
            "{label:<44} {:<13} {:<6} {:>10.1} {:>5.2} {:>7.2} {:>8.2} {:>8.0}\n",
            v["schedule"].as_str().unwrap_or("?"),
            v["lhs_transpose"].as_str().unwrap_or("?"),
            f("modeled_time_us"),
            f("hfu"),
            f("hbm_bytes") / f("io_lower_bound_bytes"),
            // Everything in the suite is bf16 in HBM.
            f("hbm_bytes") / ((f("m") * f("k") + f("k") * f("n") + f("m") * f("n")) * 2.0),
            v["wall_ms"]["plan"].as_f64().unwrap_or(f64::NAN)
        );
    }
    out += &fidelity::table(ntile)?;
    out += &nki_suite::table(ntile, &workspace_root())?;
    Ok(out)
}

/// Rewrite the expectations of every filetest from the current output.
fn bless() -> Result<()> {
    let cargo_bin = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo_bin)
        .env("NTILE_BLESS", "1")
        .args(["test", "-p", "ntile", "--test", "ntile", "--", "filetests::"])
        .status()
        .context("running the filetests with NTILE_BLESS=1")?;
    if !status.success() {
        bail!("blessing the filetests failed ({status})");
    }
    // The console blocks of README.md and docs/ (trycmd rewrites them, masks kept), then the
    // output blocks of the Python scripts the README shows.
    let env = pyenv::prepare(&workspace_root())?;
    env.cargo_with(&["test", "-p", "ntile", "--test", "ntile", "--", "readme::"], "TRYCMD", "overwrite")?;
    env.bless_python_readme()?;
    Ok(())
}

/// The mutation test at 20x its CI size, in release.
fn fuzz() -> Result<()> {
    let cargo_bin = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo_bin)
        .env("NTILE_FUZZ_SCALE", "20")
        .args(["test", "--release", "-p", "driver", "--test", "driver", "--", "mutation::"])
        .status()
        .context("running the mutation test")?;
    if !status.success() {
        bail!("the mutation fuzz found a problem ({status})");
    }
    Ok(())
}

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
    // The venv of `cargo xtask ci` has numpy and ml-dtypes; else the python3 on PATH.
    let venv = pyenv::Env::at(&workspace_root());
    let python = if venv.ready() { venv.python() } else { PathBuf::from("python3") };
    let status = Command::new(python)
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
        Some("targets") => {
            cargo(&["build", "--release", "-p", "ntile"])?;
            say(&targets::targets(&workspace_root().join("target/release/ntile"))?);
            Ok(())
        }
        Some("suite") => {
            cargo(&["build", "--release", "-p", "ntile"])?;
            say(&suite(&workspace_root().join("target/release/ntile"))?);
            Ok(())
        }
        Some("golden") => golden(),
        Some("msrv") => rust_version_check(),
        Some("bless") => bless(),
        Some("fuzz") => fuzz(),
        Some(other) => {
            bail!("unknown task `{other}` (available: ci, bench, targets, suite, bless, fuzz, golden, msrv)")
        }
        None => bail!("usage: cargo xtask <ci|bench|targets|suite|bless|fuzz|golden|msrv>"),
    }
}
