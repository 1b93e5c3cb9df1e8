//! The speed targets of issue 13, each measured with the release `ntile` and printed beside
//! its target: simulation against a one-thread numpy float32 matmul of the same shape
//! measured in the same run, the whole process, planning and modeling, `auto`, and `--no-sim`
//! on huge shapes under a memory guard (peak memory from `/usr/bin/time -v`).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};

/// Address-space limit of the runs that may grow without bound, in KiB (8 GiB).
const GUARD_KIB: u64 = 8 << 20;

/// Seconds after which a guarded run is stopped.
const GUARD_SECONDS: u32 = 120;

/// Seconds allowed to the full 8192^3 simulation and check.
const FULL_SECONDS: u32 = 900;

/// What one run of `ntile` gave.
struct Run {
    /// Wall time of the process, ms.
    wall_ms: f64,
    /// Peak resident memory, MiB (when `/usr/bin/time` is there).
    peak_mib: Option<f64>,
    /// The JSON report, if it exited 0.
    report: Option<serde_json::Value>,
    /// Why it did not, otherwise.
    failure: Option<String>,
}

/// Run `ntile gemm ARGS --json` under `/usr/bin/time -v` (when present), with the memory
/// guard and a limit of `guard` seconds when given.
fn run(ntile: &Path, args: &str, guard: Option<u32>) -> Result<Run> {
    let has_time = Path::new("/usr/bin/time").exists();
    let mut line = String::new();
    if let Some(seconds) = guard {
        line += &format!("ulimit -v {GUARD_KIB}; exec timeout {seconds} ");
    } else {
        line += "exec ";
    }
    if has_time {
        line += "/usr/bin/time -v ";
    }
    line += &format!("'{}' gemm {args} --json --quiet", ntile.display());
    let t = Instant::now();
    let o = Command::new("sh").arg("-c").arg(&line).output().with_context(|| format!("running {line}"))?;
    let wall_ms = t.elapsed().as_secs_f64() * 1e3;
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let peak_mib = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|kib| kib / 1024.0);
    if o.status.success() {
        let report = serde_json::from_slice(&o.stdout).ok();
        return Ok(Run { wall_ms, peak_mib, report, failure: None });
    }
    let first = stderr.lines().find(|l| !l.trim().is_empty() && !l.starts_with('\t')).unwrap_or("").trim();
    let limit = if guard.is_some() { format!(" under a {} GiB limit", GUARD_KIB >> 20) } else { String::new() };
    let why = match o.status.code() {
        Some(124) => format!("stopped after {} s", guard.unwrap_or(0)),
        Some(c) => format!("exit {c}{limit}: {first}"),
        None => format!("killed by a signal{limit}"),
    };
    Ok(Run { wall_ms, peak_mib, report: None, failure: Some(why) })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Median milliseconds of a one-thread numpy float32 matmul of the shape, or why not.
fn numpy_ms(m: u64, k: u64, n: u64) -> std::result::Result<f64, String> {
    let script = format!(
        "import time, numpy as np\n\
         r = np.random.default_rng(0)\n\
         a = r.standard_normal(({m}, {k}), dtype=np.float32); b = r.standard_normal(({k}, {n}), dtype=np.float32)\n\
         a @ b\n\
         ts = []\n\
         for _ in range(5):\n    t = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t)\n\
         print(sorted(ts)[2] * 1e3)\n"
    );
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .env("OMP_NUM_THREADS", "1")
        .env("OPENBLAS_NUM_THREADS", "1")
        .env("MKL_NUM_THREADS", "1")
        .output()
        .map_err(|e| format!("python3 not runnable: {e}"))?;
    if !o.status.success() {
        return Err(format!("python3 with numpy failed: {}", String::from_utf8_lossy(&o.stderr).trim()));
    }
    String::from_utf8_lossy(&o.stdout).trim().parse().map_err(|e| format!("numpy output unreadable: {e}"))
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

fn field(r: &Run, path: &[&str]) -> f64 {
    let mut v = r.report.as_ref();
    for p in path {
        v = v.and_then(|x| x.get(p));
    }
    v.and_then(serde_json::Value::as_f64).unwrap_or(f64::NAN)
}

fn peak(r: &Run) -> String {
    r.peak_mib.map_or_else(|| "peak n/a (no /usr/bin/time)".to_string(), |p| format!("peak {p:.0} MiB"))
}

/// Measure every target; the text to print.
pub fn targets(ntile: &Path) -> Result<String> {
    let mut out = String::from("\n== issue 13 targets (release ntile, medians of 3 runs) ==\n");
    // 2048^3 bf16: simulate and whole process against numpy.
    let gemm = "--m 2048 --k 2048 --n 2048 --dtype bf16";
    let runs: Vec<Run> = (0..3).map(|_| run(ntile, gemm, None)).collect::<Result<_>>()?;
    let sim = median(runs.iter().map(|r| field(r, &["wall_ms", "simulate"])).collect());
    let check = median(runs.iter().map(|r| field(r, &["wall_ms", "reference"])).collect());
    let whole = median(runs.iter().map(|r| r.wall_ms).collect());
    match numpy_ms(2048, 2048, 2048) {
        Ok(np) => {
            out += &format!(
                "2048^3 bf16 simulate: {sim:.0} ms = {:.2}x numpy f32 one thread ({np:.0} ms); target <= 1.0x: {}\n",
                sim / np,
                verdict(sim <= np)
            );
            out += &format!(
                "2048^3 bf16 whole process (plan, simulate, check {check:.0} ms): {whole:.0} ms = {:.2}x numpy; target <= 2x: {}; {}\n",
                whole / np,
                verdict(whole <= 2.0 * np),
                peak(&runs[0])
            );
        }
        Err(why) => {
            out += &format!("2048^3 bf16 simulate: {sim:.0} ms, whole process {whole:.0} ms, check {check:.0} ms; numpy reference missing: {why}\n");
        }
    }
    // Plan + lower + model of every explicit schedule (the target is for any of them).
    for schedule in ["naive", "hoisted", "blocked-mn", "blocked-mnk"] {
        let big = format!("--m 4096 --k 8192 --n 8192 --schedule {schedule} --no-sim");
        let runs: Vec<Run> = (0..3).map(|_| run(ntile, &big, None)).collect::<Result<_>>()?;
        let plm = median(
            runs.iter()
                .map(|r| {
                    field(r, &["wall_ms", "plan"]) + field(r, &["wall_ms", "lower"]) + field(r, &["wall_ms", "model"])
                })
                .collect(),
        );
        out += &format!(
            "plan + lower + model 4096x8192x8192 {schedule}: {plm:.0} ms (process {:.0} ms, {}); target < 50 ms: {}\n",
            median(runs.iter().map(|r| r.wall_ms).collect()),
            peak(&runs[0]),
            verdict(plm < 50.0)
        );
    }
    // auto on 8192^3.
    let r = run(ntile, "--m 8192 --k 8192 --n 8192 --no-sim", Some(GUARD_SECONDS))?;
    out += &match &r.failure {
        None => format!(
            "auto 8192^3 --no-sim: process {:.0} ms (plan incl. search {:.0} ms, {}); target < 1 s: {}\n",
            r.wall_ms,
            field(&r, &["wall_ms", "plan"]),
            peak(&r),
            verdict(r.wall_ms < 1000.0)
        ),
        Some(why) => format!("auto 8192^3 --no-sim: {why} after {:.0} ms; target < 1 s: NOT met\n", r.wall_ms),
    };
    // --no-sim on huge shapes, guarded.
    // `auto` (the default) weighs its candidates on an 8192^3 proxy and extrapolates its
    // choice; an explicit schedule is extrapolated directly.
    let huge = [
        (65536u64, 1000.0, ""),
        (65536, 1000.0, " --schedule naive"),
        (65536, 1000.0, " --schedule blocked-mnk"),
        (1048576, 2000.0, ""),
        (1048576, 2000.0, " --schedule naive"),
    ];
    for (size, ms_target, schedule) in huge {
        let args = format!("--m {size} --k {size} --n {size} --no-sim{schedule}");
        let r = run(ntile, &args, Some(GUARD_SECONDS))?;
        let mem_target = if size == 65536 { ", < 200 MB" } else { "" };
        out += &match &r.failure {
            None => format!(
                "--no-sim {size}^3{schedule}: {:.0} ms, {}; target < {:.0} s{mem_target}: {}\n",
                r.wall_ms,
                peak(&r),
                ms_target / 1000.0,
                verdict(r.wall_ms < ms_target && (size != 65536 || r.peak_mib.is_some_and(|p| p < 200.0)))
            ),
            Some(why) => format!(
                "--no-sim {size}^3{schedule}: {why} ({:.0} ms, {}); target < {:.0} s{mem_target}: NOT met\n",
                r.wall_ms,
                peak(&r),
                ms_target / 1000.0
            ),
        };
    }
    // 8192^3 full simulation and check: memory.
    let r = run(ntile, "--m 8192 --k 8192 --n 8192 --dtype bf16 --schedule blocked-mn", Some(FULL_SECONDS))?;
    out += &match &r.failure {
        None => format!(
            "8192^3 bf16 simulate + check: {:.1} s (simulate {:.1} s, check {:.1} s), {}; target < 2 GB peak: {}\n",
            r.wall_ms / 1e3,
            field(&r, &["wall_ms", "simulate"]) / 1e3,
            field(&r, &["wall_ms", "reference"]) / 1e3,
            peak(&r),
            verdict(r.peak_mib.is_some_and(|p| p < 2048.0))
        ),
        Some(why) => {
            format!("8192^3 bf16 simulate + check: {why} ({:.0} s); target < 2 GB peak: NOT met\n", r.wall_ms / 1e3)
        }
    };
    Ok(out)
}
