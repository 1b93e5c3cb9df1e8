//! The NKI table of `cargo xtask suite` (issue 27, item 7): the five matmul steps of
//! `examples/nki/legacy/matmul.py` on 4096x8192x8192 bf16 (`lhsT` given), traced and modeled
//! by `ntile nki --shape ... --json` on trn1 and trn2, beside `ntile gemm`'s schedule of the
//! same shape and loop structure, with the time tracing and building took. It shells out to the
//! built `ntile` (whose tracer runs with the `python3` of `target/py` when that exists).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};

/// Each step of the tutorial and the `ntile gemm` schedule with its loop structure.
const STEPS: [(&str, &str); 5] = [
    ("matmul_one_tile", "naive"),
    ("matmul_tiled", "naive"),
    ("matmul_hoisted", "hoisted"),
    ("matmul_blocked_free", "blocked-mn"),
    ("matmul_blocked_all", "blocked-mnk"),
];

/// `ntile ARGS` with `path` first in PATH; its JSON report or the first line of its error.
fn json(ntile: &Path, path: &std::ffi::OsStr, args: &[&str]) -> Result<Result<serde_json::Value, String>> {
    let o = Command::new(ntile)
        .args(args)
        .env("PATH", path)
        .output()
        .with_context(|| format!("running ntile {}", args.join(" ")))?;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        let line = err.lines().next().unwrap_or("").trim_start_matches("error: ").to_string();
        return Ok(Err(line));
    }
    Ok(Ok(serde_json::from_slice(&o.stdout)?))
}

/// The table (see the module doc).
pub fn table(ntile: &Path, root: &Path) -> Result<String> {
    let venv = root.join("target/py/bin");
    let rest = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(std::iter::once(venv).chain(std::env::split_paths(&rest)))?;
    let file = root.join("examples/nki/legacy/matmul.py");
    let file = file.to_string_lossy();
    let mut out = String::from(
        "\n== NKI kernels: the five matmul steps, 4096x8192x8192 bf16, lhsT given (ntile nki --shape ... ) ==\n\
         step                  target  modeled_us   HFU  trace_s  build_s | ntile gemm schedule  modeled_us   HFU\n",
    );
    for target in ["trn1", "trn2"] {
        for (step, schedule) in STEPS {
            let nki = json(
                ntile,
                &path,
                &[
                    "nki",
                    &file,
                    step,
                    "--shape",
                    "lhsT=8192x4096:bf16",
                    "--shape",
                    "rhs=8192x8192:bf16",
                    "--target",
                    target,
                    "--json",
                ],
            )?;
            let gemm = json(
                ntile,
                &path,
                &[
                    "gemm",
                    "--m",
                    "4096",
                    "--k",
                    "8192",
                    "--n",
                    "8192",
                    "--lhs-transposed",
                    "--hbm-dtype",
                    "bf16",
                    "--out-dtype",
                    "bf16",
                    "--schedule",
                    schedule,
                    "--target",
                    target,
                    "--no-sim",
                    "--json",
                ],
            )?;
            let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
            let left = match &nki {
                Ok(v) => format!(
                    "{:>10.1} {:>5.2} {:>8.2} {:>8.2}",
                    f(v, "modeled_time_us"),
                    f(v, "hfu"),
                    f(&v["times"], "tracing_s"),
                    f(&v["times"], "read_s") + f(&v["times"], "build_s")
                ),
                // The error's text after its `file:line: `, cut to the columns it replaces.
                Err(e) => {
                    let what = e.splitn(3, ": ").last().unwrap_or(e);
                    format!("{:<35}", format!("n/a: {what}").chars().take(35).collect::<String>())
                }
            };
            let right = match &gemm {
                Ok(v) => format!("{:<19} {:>10.1} {:>5.2}", schedule, f(v, "modeled_time_us"), f(v, "hfu")),
                Err(e) => format!("{schedule:<19} failed: {e}"),
            };
            out += &format!("{step:<21} {target:<6} {left} | {right}\n");
        }
    }
    Ok(out)
}
