//! The fidelity table of `cargo xtask suite`: the public hardware facts the cycle model was
//! built from, each beside what the model gives for it. A check, not a fit target: no model
//! parameter was tuned to any of these figures.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Hand-written BIR programs modeled by the `ntile` binary (`ntile run FILE.bir --no-sim
/// --json`), so that xtask stays a small program of its own (it links none of ntile's crates).
struct Model<'a> {
    ntile: &'a Path,
    dir: PathBuf,
    runs: u32,
}

impl<'a> Model<'a> {
    fn new(ntile: &'a Path) -> Result<Self> {
        let dir = std::env::temp_dir().join(format!("ntile-fidelity-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Model { ntile, dir, runs: 0 })
    }

    /// The modeled time (ns) of a program of `streams` (`(engine, instructions)`) on `target`
    /// over an HBM tensor of `hbm_bytes` bytes.
    fn total_ns(&mut self, target: &str, hbm_bytes: u64, streams: &[(String, Vec<String>)]) -> Result<f64> {
        let mut text = format!("program fidelity target={target}\nhbm \"x\" bf16 [{}] @0 input\n", hbm_bytes / 2);
        for (engine, insts) in streams {
            let _ = writeln!(text, "stream {engine}:");
            for (i, inst) in insts.iter().enumerate() {
                let _ = writeln!(text, "  {i}: {inst}");
            }
        }
        self.runs += 1;
        let file = self.dir.join(format!("p{}.bir", self.runs));
        std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
        let o = Command::new(self.ntile)
            .arg("run")
            .arg(&file)
            .args(["--no-sim", "--json"])
            .output()
            .with_context(|| format!("running {} run {}", self.ntile.display(), file.display()))?;
        if !o.status.success() {
            bail!("ntile run {} --no-sim failed: {}", file.display(), String::from_utf8_lossy(&o.stderr).trim());
        }
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).context("reading ntile run --json")?;
        let us = v["modeled_time_us"].as_f64().context("ntile run --json gave no modeled_time_us")?;
        Ok(us * 1e3)
    }
}

impl Drop for Model<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One profile value of `ntile hw show --target TARGET --json`.
fn profile(ntile: &Path, target: &str) -> Result<impl Fn(&str) -> Result<f64>> {
    let o = Command::new(ntile)
        .args(["hw", "show", "--target", target, "--json"])
        .output()
        .context("running ntile hw show")?;
    if !o.status.success() {
        bail!("ntile hw show --target {target} failed: {}", String::from_utf8_lossy(&o.stderr).trim());
    }
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).context("reading ntile hw show --json")?;
    let target = target.to_string();
    Ok(move |key: &str| v[key]["value"].as_f64().with_context(|| format!("{target}'s profile has no `{key}`")))
}

/// `parts` partitions of `free` bf16 from contiguous HBM rows at byte `offset` into SBUF
/// partitions `start..`.
fn load(start: u32, parts: u32, free: u32, offset: u64) -> String {
    format!(
        "dma_copy cast=rne dst=sbuf.bf16[p{start}:{parts}:1 @0 [1, {free}]] src=hbm.bf16[p0:{parts}:{free} @{offset} [1, {free}]]"
    )
}

/// Achieved HBM->SBUF bandwidth (B/ns) of a steady stream of 128-partition loads with `run`
/// bytes per partition: 14 queues x 8 transfers, the first fixed latency excluded.
fn stream_bandwidth(m: &mut Model<'_>, target: &str, dma_fixed_ns: f64, run: u32) -> Result<f64> {
    let free = run / 2;
    let mut bytes = 0.0;
    let mut streams = Vec::new();
    for i in 0..14u64 {
        let loads = (0..8u64).map(|j| load(0, 128, free, (i * 8 + j) * 128 * u64::from(run))).collect();
        bytes += 8.0 * 128.0 * f64::from(run);
        streams.push((format!("dma{i}"), loads));
    }
    let hbm = 14 * 8 * 128 * u64::from(run);
    Ok(bytes / (m.total_ns(target, hbm, &streams)? - dma_fixed_ns))
}

/// Issue interval of back-to-back MultiplyMovings of `n` columns, in TensorE cycles: the
/// modeled time `count` of them add over one.
fn mm_interval_cycles(m: &mut Model<'_>, target: &str, pe_ghz: f64, dtype: &str, n: u32) -> Result<f64> {
    let sb = |parts: u32, free: u32| format!("sbuf.{dtype}[p0:{parts}:1 @0 [1, {free}]]");
    let tile = "perf=none pos=0,0 size=128,128";
    let mm = format!("multiply_moving {tile} acc=start|stop dst=psum.fp32[p0:128:1 @0 [1, {n}]] src={}", sb(128, n));
    let mut time = |count: usize| {
        let mut pe = vec![format!("load_stationary {tile} src={}", sb(128, 128))];
        pe.extend(std::iter::repeat_n(mm.clone(), count));
        m.total_ns(target, 2, &[("pe".to_string(), pe)])
    };
    let count = 100;
    let (one, many) = (time(1)?, time(count)?);
    Ok((many - one) / (count - 1) as f64 * pe_ghz)
}

/// Engine busy fractions `ntile gemm --json` reports for one schedule of 4096x8192x8192, with
/// the given blocks or, when they are refused, the schedule's default blocks (the note says so).
fn tutorial_busy(ntile: &Path, schedule: &str, blocks: &[&str]) -> Result<(f64, f64, f64, &'static str)> {
    let big = "gemm --m 4096 --k 8192 --n 8192 --lhs-transposed --hbm-dtype bf16 --out-dtype bf16 --no-sim --json";
    let run = |blocks: &[&str]| -> Result<Option<serde_json::Value>> {
        let o = Command::new(ntile)
            .args(big.split_whitespace())
            .args(["--target", "trn2", "--schedule", schedule])
            .args(blocks)
            .output()
            .with_context(|| format!("running ntile gemm --schedule {schedule}"))?;
        Ok(if o.status.success() { serde_json::from_slice(&o.stdout).ok() } else { None })
    };
    let (v, note) = match run(blocks)? {
        Some(v) => (v, ""),
        None => (run(&[])?.unwrap_or_default(), " (those blocks were refused: default blocks)"),
    };
    let b = &v["engine_busy"];
    let f = |k: &str| b[k].as_f64().unwrap_or(f64::NAN) * 100.0;
    Ok((f("dma"), f("pe"), f("dve"), note))
}

/// The table.
pub fn table(ntile: &Path) -> Result<String> {
    let t2 = "trn2";
    let hw = profile(ntile, t2)?;
    let (dma_fixed_ns, pe_ghz) = (hw("dma_fixed_ns")?, hw("pe_ghz")?);
    let mut m = Model::new(ntile)?;
    let mut out = String::from(
        "\n== fidelity: public facts beside the model (a check; nothing was fitted to them) ==\n\
         fact                                                             source  published        model\n",
    );
    let mut row = |fact: &str, source: &str, published: &str, model: String| {
        out += &format!("{fact:<64} {source:<7} {published:<16} {model}\n");
    };
    // One 32 KiB load on one engine: A[4, 4096] bf16.
    let one = m.total_ns(t2, 4 * 4096 * 2, &[("dma0".into(), vec![load(0, 4, 4096, 0)])])?;
    row(
        "32 KiB load, one DMA engine, trn2: engine time",
        "S9",
        "1416 ns",
        format!("{:.0} ns (+ {dma_fixed_ns:.0} ns fixed latency = {one:.0} ns)", one - dma_fixed_ns),
    );
    // The fixed cost: a one-run transfer.
    let tiny = m.total_ns(t2, 4, &[("dma0".into(), vec![load(0, 1, 2, 0)])])?;
    row("fixed cost of one (tiny) transfer, trn2", "S11", "~1300 ns", format!("{tiny:.0} ns"));
    let peak = 16.0 * hw("dma_engine_bytes_per_ns")?;
    let hbm_bytes_per_ns = hw("hbm_bytes_per_ns")?;
    for (run, published) in [
        (256, "severely bound"),
        (512, "below peak"),
        (1024, "below peak"),
        (2048, "approaches peak"),
        (4096, "saturates"),
        (8192, "saturates"),
    ] {
        let bw = stream_bandwidth(&mut m, t2, dma_fixed_ns, run)?;
        row(
            &format!("{run} B per partition, 128 partitions: bandwidth / 16-engine peak"),
            "S9 S11",
            published,
            format!("{:.0}% ({bw:.0} of {peak:.0} B/ns; HBM {:.0})", bw / peak * 100.0, hbm_bytes_per_ns),
        );
    }
    for (target, dtype, n, published) in [
        (t2, "bf16", 512, "512 cycles"),
        (t2, "bf16", 128, "128 cycles"),
        (t2, "bf16", 32, "64 cycles"),
        (t2, "fp32", 512, "2048 cycles"),
        ("trn1", "bf16", 512, "512 cycles"),
    ] {
        let pe_ghz = if target == t2 { pe_ghz } else { profile(ntile, target)?("pe_ghz")? };
        row(
            &format!("matmul issue interval, {dtype} N={n}, {target}"),
            "S1",
            published,
            format!("{:.0} cycles", mm_interval_cycles(&mut m, target, pe_ghz, dtype, n)?),
        );
    }
    for (label, schedule, blocks, published) in [
        ("tiled", "naive", vec![], "DMA 99.93% PE 87.28%"),
        ("hoisted loads", "hoisted", vec![], "DMA 99.73% PE 99.85%"),
        ("blocked free dims 2x2", "blocked-mn", vec!["--block-m", "256", "--block-n", "1024"], "PE 99.52% DMA 95.70%"),
        (
            "blocked 16/2/8",
            "blocked-mnk",
            vec!["--block-m", "2048", "--block-n", "1024", "--block-k", "1024"],
            "DMA 21.54% PE 99.50% DVE 10.55%",
        ),
    ] {
        let (dma, pe, dve, note) = tutorial_busy(ntile, schedule, &blocks)?;
        out += &format!(
            "{:<64} {:<7} {published:<32}\n{:<73}model {schedule}: DMA {dma:.2}% PE {pe:.2}% DVE {dve:.2}% (DMA: mean of 16 queues){note}\n",
            format!("4096x8192x8192 trn2 activity, {label}"),
            "S24",
            ""
        );
    }
    Ok(out)
}
