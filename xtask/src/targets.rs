//! The speed targets of issues 13 and 28, each measured with the release `ntile` and printed
//! beside its target: simulation against numpy's float32 matmul of the same shape measured in
//! the same run the same way (the same thread count, the first call of a fresh process for
//! "cold", the median of later ones for "warm"), the whole process, planning and modeling,
//! `auto`, and `--no-sim` on huge shapes under a memory guard (peak memory from
//! `/usr/bin/time -v`).

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
/// guard and a limit of `guard` seconds when given, on `threads` threads (`NTILE_THREADS`;
/// `None`: every core).
fn run(ntile: &Path, args: &str, guard: Option<u32>, threads: Option<u32>) -> Result<Run> {
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
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(&line);
    if let Some(t) = threads {
        cmd.env("NTILE_THREADS", t.to_string());
    }
    let t = Instant::now();
    let o = cmd.output().with_context(|| format!("running {line}"))?;
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

/// numpy's float32 matmul of one shape in a fresh process: its first call, the median of
/// the later ones, and which BLAS kernel ran.
struct Numpy {
    cold_ms: f64,
    warm_ms: f64,
    kernel: String,
}

/// The child of [`numpy`]: `M K N REPS` as arguments; prints the first call's ms, the
/// median of `REPS` more, and the OpenBLAS kernel read from the library numpy loaded (found in
/// the process's mappings; its `get_corename` / `get_config` entry points under the prefixes
/// numpy's wheels use), without threadpoolctl.
const NUMPY_SCRIPT: &str = r#"
import ctypes, sys, time
import numpy as np

def kernel():
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "openblas" in path.lower() and ".so" in path:
                libs.add(path)
    for path in sorted(libs):
        lib = ctypes.CDLL(path)
        for prefix in ("scipy_openblas_", "scipy_openblas64_", "openblas_"):
            for suffix in ("", "64_"):
                name = getattr(lib, prefix + "get_corename" + suffix, None)
                config = getattr(lib, prefix + "get_config" + suffix, None)
                if name is not None:
                    name.restype = ctypes.c_char_p
                    text = "OpenBLAS kernel " + name().decode()
                    if config is not None:
                        config.restype = ctypes.c_char_p
                        text += " (" + config().decode().strip() + ")"
                    return text
    return "a BLAS other than OpenBLAS (numpy " + np.__version__ + ")"

m, k, n, reps = (int(v) for v in sys.argv[1:5])
r = np.random.default_rng(0)
a = r.standard_normal((m, k), dtype=np.float32)
b = r.standard_normal((k, n), dtype=np.float32)
t = time.perf_counter(); a @ b; cold = time.perf_counter() - t
ts = []
for _ in range(reps):
    t = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t)
print(cold * 1e3, sorted(ts)[len(ts) // 2] * 1e3)
print(kernel())
"#;

/// numpy's float32 `[m, k] @ [k, n]` on `threads` threads, `reps` warm calls after the cold
/// one, or why not. OpenBLAS's own tuning variables are removed from the child's environment
/// so it picks its kernel and blocking itself.
fn numpy(python: &Path, (m, k, n): (u64, u64, u64), threads: u32, reps: u32) -> std::result::Result<Numpy, String> {
    let mut cmd = Command::new(python);
    cmd.arg("-c").arg(NUMPY_SCRIPT).args([m, k, n, u64::from(reps)].map(|v| v.to_string()));
    for var in ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"] {
        cmd.env(var, threads.to_string());
    }
    cmd.env_remove("OPENBLAS_CORETYPE").env_remove("OPENBLAS_L2_SIZE");
    let o = cmd.output().map_err(|e| format!("{} not runnable: {e}", python.display()))?;
    if !o.status.success() {
        return Err(format!("python3 with numpy failed: {}", String::from_utf8_lossy(&o.stderr).trim()));
    }
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut lines = text.lines();
    let times: Vec<f64> = lines.next().unwrap_or("").split_whitespace().filter_map(|v| v.parse().ok()).collect();
    match (times.as_slice(), lines.next()) {
        ([cold_ms, warm_ms], Some(kernel)) => {
            Ok(Numpy { cold_ms: *cold_ms, warm_ms: *warm_ms, kernel: kernel.to_string() })
        }
        _ => Err(format!("numpy output unreadable: {text}")),
    }
}

/// The interpreter with numpy: `cargo xtask ci`'s `target/py` (made when missing), else the
/// `python3` on `PATH`.
fn python() -> std::path::PathBuf {
    match crate::pyenv::prepare(&crate::workspace_root()) {
        Ok(env) => env.python(),
        Err(_) => "python3".into(),
    }
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
    let python = python();
    let mut out = String::from(
        "\n== issue 13 and 28 targets (release ntile; warm: medians of 3 runs after a first, cold one) ==\n",
    );
    out += &simulate_2048(ntile, &python)?;
    // Plan + lower + model of every explicit schedule (the target is for any of them): the
    // blocked ones with their blocks searched (as the CLI does without blocks) and given.
    for schedule in [
        "naive",
        "hoisted",
        "blocked-mn",
        "blocked-mnk",
        "blocked-mn --block-m 512 --block-n 1024",
        "blocked-mnk --block-m 1024 --block-n 2048 --block-k 512",
    ] {
        let big = format!("--m 4096 --k 8192 --n 8192 --schedule {schedule} --no-sim");
        let runs: Vec<Run> = (0..3).map(|_| run(ntile, &big, None, None)).collect::<Result<_>>()?;
        let plm = median(
            runs.iter()
                .map(|r| {
                    field(r, &["wall_ms", "plan"]) + field(r, &["wall_ms", "lower"]) + field(r, &["wall_ms", "model"])
                })
                .collect(),
        );
        out += &format!(
            "plan + lower + model 4096x8192x8192 {schedule}: {plm:.0} ms (process {:.0} ms, {}); target < 10 ms: {}\n",
            median(runs.iter().map(|r| r.wall_ms).collect()),
            peak(&runs[0]),
            verdict(plm < 10.0)
        );
    }
    // auto on 4096x8192x8192.
    let runs: Vec<Run> =
        (0..3).map(|_| run(ntile, "--m 4096 --k 8192 --n 8192 --no-sim", None, None)).collect::<Result<_>>()?;
    let plm = median(
        runs.iter()
            .map(|r| field(r, &["wall_ms", "plan"]) + field(r, &["wall_ms", "lower"]) + field(r, &["wall_ms", "model"]))
            .collect(),
    );
    out += &format!(
        "plan + lower + model 4096x8192x8192 auto: {plm:.0} ms ({}); target < 100 ms: {}\n",
        peak(&runs[0]),
        verdict(plm < 100.0)
    );
    // auto on 8192^3.
    let r = run(ntile, "--m 8192 --k 8192 --n 8192 --no-sim", Some(GUARD_SECONDS), None)?;
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
        (16384u64, 500.0, ""),
        (65536, 500.0, ""),
        (65536, 1000.0, " --schedule naive"),
        (65536, 1000.0, " --schedule blocked-mnk"),
        (1048576, 500.0, ""),
        (1048576, 2000.0, " --schedule naive"),
    ];
    for (size, ms_target, schedule) in huge {
        let args = format!("--m {size} --k {size} --n {size} --no-sim{schedule}");
        let r = run(ntile, &args, Some(GUARD_SECONDS), None)?;
        // Issue 28: auto within 100 MB at every size; the explicit schedules within 200 MB.
        let mem_mb = if schedule.is_empty() { 100.0 } else { 200.0 };
        let mem_mib = mem_mb * 1e6 / (1024.0 * 1024.0);
        let mem_target = format!(", < {mem_mb:.0} MB");
        out += &match &r.failure {
            None => format!(
                "--no-sim {size}^3{schedule}: {:.0} ms, {}; target < {:.1} s{mem_target}: {}\n",
                r.wall_ms,
                peak(&r),
                ms_target / 1000.0,
                verdict(r.wall_ms < ms_target && r.peak_mib.is_some_and(|p| p < mem_mib))
            ),
            Some(why) => format!(
                "--no-sim {size}^3{schedule}: {why} ({:.0} ms, {}); target < {:.1} s{mem_target}: NOT met\n",
                r.wall_ms,
                peak(&r),
                ms_target / 1000.0
            ),
        };
    }
    out += &sweep(ntile)?;
    out += &sparsity(ntile)?;
    out += &simulate_8192(ntile, &python)?;
    Ok(out)
}

/// Structured sparsity on trn2 at 1024x4096x1024 (modeled): 2:4 and 4:8 against dense with
/// the same schedule, each no slower, and faster where the dense kernel is PE-bound (its PE
/// busy for most of the modeled time).
fn sparsity(ntile: &Path) -> Result<String> {
    let mut out = String::new();
    for schedule in ["naive", "blocked-mn", "blocked-mnk", "auto"] {
        let args = |sparsity: &str| {
            format!("--m 1024 --k 4096 --n 1024 --target trn2 --schedule {schedule} --no-sim{sparsity}")
        };
        let dense = run(ntile, &args(""), Some(GUARD_SECONDS), None)?;
        let time = |r: &Run| field(r, &["modeled_time_us"]);
        // PE-bound: the PE busy for at least 80% of the modeled time (`engine_busy` is the
        // share of it).
        let pe_bound = field(&dense, &["engine_busy", "pe"]) >= 0.8;
        for pattern in ["2:4", "4:8"] {
            let sparse = run(ntile, &args(&format!(" --sparsity {pattern}")), Some(GUARD_SECONDS), None)?;
            let (d, sp) = (time(&dense), time(&sparse));
            let met = if pe_bound { sp < d } else { sp <= d };
            let want = if pe_bound { "faster than dense (PE-bound)" } else { "no slower than dense" };
            out += &format!(
                "sparsity {pattern} {schedule} 1024x4096x1024 trn2: {sp:.1} us vs dense {d:.1} us ({:.2}x); target {want}: {}\n",
                sp / d,
                verdict(met)
            );
        }
    }
    Ok(out)
}

/// The LLaMA-7B sweep (224 rows, 3 distinct GEMMs), the whole process, median of 3.
fn sweep(ntile: &Path) -> Result<String> {
    let csv = crate::workspace_root().join("examples/llama7b.csv");
    let mut walls = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let o = Command::new(ntile)
            .arg("sweep")
            .arg(&csv)
            .output()
            .with_context(|| format!("running {}", ntile.display()))?;
        if !o.status.success() {
            return Ok(format!(
                "sweep llama7b.csv: failed: {}; target < 1 s: NOT met\n",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        walls.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let wall = median(walls);
    Ok(format!(
        "sweep examples/llama7b.csv (224 rows, auto, trn2): {wall:.0} ms; target < 1 s: {}\n",
        verdict(wall < 1000.0)
    ))
}

/// Bytes of the 2048^3 bf16 GEMM's HBM tensors: A and B in bf16, C in fp32.
const TENSORS_2048_MIB: f64 = (2048.0 * 2048.0 * (2.0 + 2.0 + 4.0)) / (1024.0 * 1024.0);

/// 2048^3 bf16: the simulate phase on one and on two threads against numpy on as many, warm
/// and cold; the whole process against one-thread numpy (issue 13); peak memory against the
/// tensors' bytes.
fn simulate_2048(ntile: &Path, python: &Path) -> Result<String> {
    let gemm = "--m 2048 --k 2048 --n 2048 --dtype bf16";
    let shape = (2048, 2048, 2048);
    let mut out = String::new();
    let mut kernel = None;
    for threads in [1u32, 2] {
        // The first run is the cold one; the median of the next three is warm.
        let runs: Vec<Run> = (0..4).map(|_| run(ntile, gemm, None, Some(threads))).collect::<Result<_>>()?;
        let simulate = |r: &Run| field(r, &["wall_ms", "simulate"]);
        let cold = simulate(&runs[0]);
        let warm = median(runs[1..].iter().map(simulate).collect());
        let plural = if threads == 1 { "" } else { "s" };
        match numpy(python, shape, threads, 5) {
            Ok(np) => {
                out += &format!(
                    "2048^3 bf16 simulate, {threads} thread{plural}: warm {warm:.0} ms = {:.2}x numpy f32 warm ({:.0} ms), target <= 1.0x: {}; \
                     cold {cold:.0} ms = {:.2}x numpy's first call ({:.0} ms), target <= 1.5x: {}\n",
                    warm / np.warm_ms,
                    np.warm_ms,
                    verdict(warm <= np.warm_ms),
                    cold / np.cold_ms,
                    np.cold_ms,
                    verdict(cold <= 1.5 * np.cold_ms),
                );
                kernel = Some(np.kernel);
            }
            Err(why) => {
                out += &format!(
                    "2048^3 bf16 simulate, {threads} thread{plural}: warm {warm:.0} ms, cold {cold:.0} ms; numpy reference missing: {why}\n"
                );
            }
        }
        if threads == 2 {
            out += &format!(
                "2048^3 bf16 memory: {} for {TENSORS_2048_MIB:.0} MiB of HBM tensors (A, B bf16, C fp32), warm runs\n",
                peak(&runs[1])
            );
        }
    }
    if let Some(kernel) = kernel {
        out += &format!("numpy ran {kernel}, OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset\n");
    }
    // Issue 13: the whole process on every core against one-thread numpy.
    let runs: Vec<Run> = (0..3).map(|_| run(ntile, gemm, None, None)).collect::<Result<_>>()?;
    let check = median(runs.iter().map(|r| field(r, &["wall_ms", "reference"])).collect());
    let whole = median(runs.iter().map(|r| r.wall_ms).collect());
    out += &match numpy(python, shape, 1, 5) {
        Ok(np) => format!(
            "2048^3 bf16 whole process (plan, simulate, check {check:.0} ms): {whole:.0} ms = {:.2}x numpy one thread; target <= 2x: {}; {}\n",
            whole / np.warm_ms,
            verdict(whole <= 2.0 * np.warm_ms),
            peak(&runs[0])
        ),
        Err(why) => format!("2048^3 bf16 whole process {whole:.0} ms, check {check:.0} ms; numpy reference missing: {why}\n"),
    };
    Ok(out)
}

/// Peak memory allowed to the 8192^3 simulation and check: 1.5 GB, in MiB.
const PEAK_8192_MIB: f64 = 1.5e9 / (1024.0 * 1024.0);

/// 8192^3 bf16 simulate + check, the whole process on two threads, against numpy's two-thread
/// float32 matmul (its second call: the first one pays the fresh pages of its operands'
/// first use), and its peak memory.
fn simulate_8192(ntile: &Path, python: &Path) -> Result<String> {
    let r = run(ntile, "--m 8192 --k 8192 --n 8192 --dtype bf16 --schedule blocked-mn", Some(FULL_SECONDS), Some(2))?;
    let memory =
        |r: &Run| format!("{}; target < 1.5 GB: {}", peak(r), verdict(r.peak_mib.is_some_and(|p| p < PEAK_8192_MIB)));
    if let Some(why) = &r.failure {
        return Ok(format!(
            "8192^3 bf16 simulate + check: {why} ({:.0} s); targets < 1.0x numpy two threads, < 1.5 GB: NOT met\n",
            r.wall_ms / 1e3
        ));
    }
    let phases = format!(
        "plan {:.1} s, simulate {:.1} s, check {:.1} s",
        field(&r, &["wall_ms", "plan"]) / 1e3,
        field(&r, &["wall_ms", "simulate"]) / 1e3,
        field(&r, &["wall_ms", "reference"]) / 1e3
    );
    Ok(match numpy(python, (8192, 8192, 8192), 2, 1) {
        Ok(np) => format!(
            "8192^3 bf16 simulate + check, 2 threads: {:.1} s ({phases}) = {:.2}x numpy f32 two threads ({:.1} s), target < 1.0x: {}; {}\n",
            r.wall_ms / 1e3,
            r.wall_ms / np.warm_ms,
            np.warm_ms / 1e3,
            verdict(r.wall_ms < np.warm_ms),
            memory(&r)
        ),
        Err(why) => format!(
            "8192^3 bf16 simulate + check, 2 threads: {:.1} s ({phases}); numpy reference missing: {why}; {}\n",
            r.wall_ms / 1e3,
            memory(&r)
        ),
    })
}
