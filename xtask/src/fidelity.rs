//! The fidelity table of `cargo xtask suite`: the public hardware facts the cycle model was
//! built from, each beside what the model gives for it. A check, not a fit target: no model
//! parameter was tuned to any of these figures.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use bir::{BirInst, Engine, HwAp, Op, Program};
use penguin::{CastMode, DType, Dim, Memory, PerfMode, Target, TilePosition, TileSize};

fn program(target: Target) -> Program {
    let mut p = Program::new("fidelity", target);
    p.hbm_size = 1 << 32;
    p
}

fn push(p: &mut Program, e: Engine, op: Op) {
    if let Some(stream) = p.streams.get_mut(e.index()) {
        stream.push(BirInst { op, waits: Vec::new(), signal: None, origin: None });
    }
}

/// `parts` partitions of `free` bf16 from contiguous HBM rows into SBUF partitions `start..`.
fn load(start: u32, parts: u32, free: u32, offset: u64) -> Op {
    let dst = HwAp {
        memory: Memory::Sbuf,
        dtype: DType::Bf16,
        start_partition: start,
        num_partitions: parts,
        partition_stride: 1,
        byte_offset: 0,
        dims: vec![Dim::new(1, free)].into(),
    };
    let src = HwAp {
        memory: Memory::Hbm,
        dtype: DType::Bf16,
        start_partition: 0,
        num_partitions: parts,
        partition_stride: i64::from(free),
        byte_offset: offset,
        dims: vec![Dim::new(1, free)].into(),
    };
    Op::DmaCopy { dst, src, cast: CastMode::Rne }
}

fn total_ns(p: &Program) -> Result<f64> {
    Ok(sim::model(p).context("modeling a fidelity program")?.total_ns)
}

/// Achieved HBM->SBUF bandwidth (B/ns) of a steady stream of 128-partition loads with `run`
/// bytes per partition: 14 queues x 8 transfers, the first fixed latency excluded.
fn stream_bandwidth(target: Target, run: u32) -> Result<f64> {
    let mut p = program(target);
    let free = run / 2;
    let mut bytes = 0.0;
    for i in 0..14u8 {
        for j in 0..8u64 {
            push(&mut p, Engine::Dma(i), load(0, 128, free, (u64::from(i) * 8 + j) * 128 * u64::from(run)));
            bytes += 128.0 * f64::from(run);
        }
    }
    Ok(bytes / (total_ns(&p)? - target.profile().dma_fixed_ns))
}

/// Issue interval of back-to-back MultiplyMovings of `n` columns, in TensorE cycles.
fn mm_interval_cycles(target: Target, dtype: DType, n: u32) -> Result<f64> {
    let mut p = program(target);
    let pos = TilePosition { row: 0, col: 0 };
    let size = TileSize { rows: 128, cols: 128 };
    let sb = |parts: u32, free: u32| HwAp {
        memory: Memory::Sbuf,
        dtype,
        start_partition: 0,
        num_partitions: parts,
        partition_stride: 1,
        byte_offset: 0,
        dims: vec![Dim::new(1, free)].into(),
    };
    let psum = HwAp { memory: Memory::Psum, dtype: DType::Fp32, ..sb(128, n) };
    push(
        &mut p,
        Engine::Pe,
        Op::LoadStationary { src: sb(128, 128), perf_mode: PerfMode::None, tile_position: pos, tile_size: size },
    );
    let count = 100;
    for _ in 0..count {
        push(
            &mut p,
            Engine::Pe,
            Op::MultiplyMoving {
                dst: psum.clone(),
                src: sb(128, n),
                acc: penguin::EngineAccumulationType::START | penguin::EngineAccumulationType::STOP,
                perf_mode: PerfMode::None,
                tile_position: pos,
                tile_size: size,
            },
        );
    }
    let r = sim::model(&p).context("modeling matmuls")?;
    let mms: Vec<&sim::Slice> = r.slices.iter().skip(1).collect();
    let (first, last) = (mms.first().map_or(0.0, |s| s.start_ns), mms.last().map_or(0.0, |s| s.start_ns));
    Ok((last - first) / f64::from(count - 1) * target.profile().pe_ghz)
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
    let t2 = Target::Trn2;
    let hw = t2.profile();
    let mut out = String::from(
        "\n== fidelity: public facts beside the model (a check; nothing was fitted to them) ==\n\
         fact                                                             source  published        model\n",
    );
    let mut row = |fact: &str, source: &str, published: &str, model: String| {
        out += &format!("{fact:<64} {source:<7} {published:<16} {model}\n");
    };
    // One 32 KiB load on one engine: A[4, 4096] bf16.
    let mut p = program(t2);
    push(&mut p, Engine::Dma(0), load(0, 4, 4096, 0));
    let one = total_ns(&p)?;
    row(
        "32 KiB load, one DMA engine, trn2: engine time",
        "S9",
        "1416 ns",
        format!("{:.0} ns (+ {:.0} ns fixed latency = {one:.0} ns)", one - hw.dma_fixed_ns, hw.dma_fixed_ns),
    );
    // The fixed cost: a one-run transfer.
    let mut p = program(t2);
    push(&mut p, Engine::Dma(0), load(0, 1, 2, 0));
    row("fixed cost of one (tiny) transfer, trn2", "S11", "~1300 ns", format!("{:.0} ns", total_ns(&p)?));
    let peak = 16.0 * hw.dma_engine_bytes_per_ns;
    for (run, published) in [
        (256, "severely bound"),
        (512, "below peak"),
        (1024, "below peak"),
        (2048, "approaches peak"),
        (4096, "saturates"),
        (8192, "saturates"),
    ] {
        let bw = stream_bandwidth(t2, run)?;
        row(
            &format!("{run} B per partition, 128 partitions: bandwidth / 16-engine peak"),
            "S9 S11",
            published,
            format!("{:.0}% ({bw:.0} of {peak:.0} B/ns; HBM {:.0})", bw / peak * 100.0, hw.hbm_bytes_per_ns),
        );
    }
    for (target, dtype, n, published) in [
        (t2, DType::Bf16, 512, "512 cycles"),
        (t2, DType::Bf16, 128, "128 cycles"),
        (t2, DType::Bf16, 32, "64 cycles"),
        (t2, DType::Fp32, 512, "2048 cycles"),
        (Target::Trn1, DType::Bf16, 512, "512 cycles"),
    ] {
        row(
            &format!("matmul issue interval, {dtype} N={n}, {target}"),
            "S1",
            published,
            format!("{:.0} cycles", mm_interval_cycles(target, dtype, n)?),
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
