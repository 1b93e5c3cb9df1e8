//! The cycle model's figures for any program `ntile run` takes: the `--json` report, the
//! summary lines and the `--trace` / `--svg` timelines.
//!
//! The keys the report shares with `ntile gemm --json` (`bir_instructions`, `matmuls`,
//! `hbm_bytes`, `modeled_time_us`, `hfu`, `engine_busy`, `sbuf_peak_bytes_per_partition`) mean
//! the same there and here, so a generated GEMM run through `ntile run` reports the figures
//! `ntile gemm` reported for it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::CliError;
use crate::npy;

/// The `ntile run --json` report (keys are stable once added).
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// Kernel name.
    pub kernel: String,
    /// Target name.
    pub target: String,
    /// Penguin instruction count (null for a BIR program).
    pub penguin_instructions: Option<u64>,
    /// BIR instruction count.
    pub bir_instructions: u64,
    /// MultiplyMoving instructions in the program.
    pub matmuls: u64,
    /// Highest SBUF byte used per partition, as the program records it.
    pub sbuf_peak_bytes_per_partition: u64,
    /// Bytes DMA instructions move to or from HBM.
    pub hbm_bytes: u64,
    /// Whether the program was simulated on data (false with `--no-sim`).
    pub simulated: bool,
    /// Bytes the simulated DMA instructions moved (null with `--no-sim`).
    pub dma_bytes: Option<u64>,
    /// The tensors written by `--output`.
    pub outputs: Vec<Written>,
    /// Modeled time of the program (cycle model), in microseconds.
    pub modeled_time_us: f64,
    /// Hardware matmul FLOPs / (peak x modeled time); null for a program without matmuls.
    pub hfu: Option<f64>,
    /// Busy fraction of each engine class over the modeled time (dma: mean of the 16 queues).
    pub engine_busy: sim::EngineBusy,
}

/// One tensor `--output` wrote.
#[derive(Clone, Debug, Serialize)]
pub struct Written {
    /// The tensor.
    pub name: String,
    /// Its dtype.
    pub dtype: String,
    /// Its shape.
    pub shape: Vec<u64>,
    /// The file.
    pub path: PathBuf,
}

/// MultiplyMoving instructions in the program's streams.
fn count_matmuls(program: &bir::Program) -> u64 {
    program.streams.iter().flatten().filter(|i| matches!(i.op, bir::Op::MultiplyMoving { .. })).count() as u64
}

/// The report of one program and its cycle model; `dma_bytes` is what the simulation moved
/// (`None` with `--no-sim`).
pub fn report(
    program: &bir::Program,
    cycle: &sim::CycleReport,
    penguin_instructions: Option<u64>,
    dma_bytes: Option<u64>,
    outputs: Vec<Written>,
) -> RunReport {
    RunReport {
        kernel: program.kernel_name.clone(),
        target: program.target.to_string(),
        penguin_instructions,
        bir_instructions: program.num_insts() as u64,
        matmuls: count_matmuls(program),
        sbuf_peak_bytes_per_partition: program.sbuf_peak_bytes,
        hbm_bytes: program.hbm_traffic_bytes(),
        simulated: dma_bytes.is_some(),
        dma_bytes,
        outputs,
        modeled_time_us: cycle.total_us(),
        hfu: (cycle.matmul_flops > 0.0).then(|| cycle.hfu()),
        engine_busy: cycle.engine_busy_summary(),
    }
}

/// Write the `--trace` and `--svg` timelines of the model, atomically.
pub fn write_timelines(
    program: &bir::Program,
    cycle: &sim::CycleReport,
    info: &sim::KernelInfo,
    trace: Option<&Path>,
    svg: Option<&Path>,
) -> Result<(), CliError> {
    if let Some(path) = trace {
        npy::write_atomic(path, sim::chrome_trace_with(program, cycle, info).as_bytes())?;
    }
    if let Some(path) = svg {
        npy::write_atomic(path, sim::timeline_svg_with(program, cycle, info).as_bytes())?;
    }
    Ok(())
}

/// The report as one pretty-printed JSON object.
pub fn json(report: &RunReport) -> Result<String, CliError> {
    serde_json::to_string_pretty(report)
        .map(|s| s + "\n")
        .map_err(|e| CliError::internal(format!("cannot encode the report: {e}")))
}

/// The summary lines of the model: time, HFU, HBM traffic and a bar per engine class.
pub fn summary(r: &RunReport) -> String {
    let hfu = match r.hfu {
        Some(h) => format!("HFU {h:.2}"),
        None => "no matmuls".to_string(),
    };
    let mut s = format!(
        "  model   {:.1} us modeled, {hfu}; HBM traffic {:.1} KiB\n",
        r.modeled_time_us,
        r.hbm_bytes as f64 / 1024.0
    );
    let b = &r.engine_busy;
    for (name, frac) in [("pe", b.pe), ("act", b.act), ("dve", b.dve), ("pool", b.pool), ("dma", b.dma)] {
        let filled = (frac.clamp(0.0, 1.0) * 20.0).round() as usize;
        s += &format!(
            "          {name:<4} [{}{}] {:>3.0}%\n",
            "#".repeat(filled),
            ".".repeat(20 - filled),
            frac * 100.0
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report_with(hfu: Option<f64>, busy: sim::EngineBusy) -> RunReport {
        RunReport {
            kernel: "k".into(),
            target: "trn2".into(),
            penguin_instructions: None,
            bir_instructions: 3,
            matmuls: 0,
            sbuf_peak_bytes_per_partition: 0,
            hbm_bytes: 2048,
            simulated: false,
            dma_bytes: None,
            outputs: Vec::new(),
            modeled_time_us: 2.5,
            hfu,
            engine_busy: busy,
        }
    }

    #[test]
    fn summary_shows_time_traffic_and_a_bar_per_engine() {
        let busy = sim::EngineBusy { pe: 0.5, act: 0.0, dve: 0.25, pool: 0.0, dma: 1.0 };
        let s = summary(&report_with(None, busy));
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "  model   2.5 us modeled, no matmuls; HBM traffic 2.0 KiB");
        assert_eq!(lines[1], "          pe   [##########..........]  50%");
        assert_eq!(lines[3], "          dve  [#####...............]  25%");
        assert_eq!(lines[5], "          dma  [####################] 100%");
        assert!(summary(&report_with(Some(0.3), busy)).starts_with("  model   2.5 us modeled, HFU 0.30;"));
    }
}
