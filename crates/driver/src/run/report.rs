//! The report of a program run: the cycle model's figures (the `--json` report of `ntile
//! run`).
//!
//! The keys the report shares with `ntile gemm --json` (`bir_instructions`, `matmuls`,
//! `hbm_bytes`, `modeled_time_us`, `hfu`, `engine_busy`, `sbuf_peak_bytes_per_partition`) mean
//! the same there and here, so a generated GEMM run through `ntile run` reports the figures
//! `ntile gemm` reported for it.

use std::path::PathBuf;

use serde::Serialize;

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
    /// The tensors written to files (the front end that writes them lists them).
    pub outputs: Vec<Written>,
    /// Modeled time of the program (cycle model), in microseconds.
    pub modeled_time_us: f64,
    /// Hardware matmul FLOPs / (peak x modeled time); null for a program without matmuls.
    pub hfu: Option<f64>,
    /// Busy fraction of each engine class over the modeled time (dma: mean of the 16 queues).
    pub engine_busy: sim::EngineBusy,
    /// A kernel on several physical cores: each core's figures and the shared HBM budget
    /// (absent for one core; then the figures above are the chip's: instructions, matmuls
    /// and HBM bytes summed, the time the last core's, busy fractions the cores' mean).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chip: Option<super::chip::ChipFigures>,
}

/// One tensor written to a file.
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
pub(super) fn count_matmuls(program: &bir::Program) -> u64 {
    program.streams.iter().flatten().filter(|i| matches!(i.op, bir::Op::MultiplyMoving { .. })).count() as u64
}

/// The report of one program and its cycle model; `dma_bytes` is what the simulation moved
/// (`None` without one).
pub(super) fn report(
    program: &bir::Program,
    cycle: &sim::CycleReport,
    penguin_instructions: Option<u64>,
    dma_bytes: Option<u64>,
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
        outputs: Vec::new(),
        modeled_time_us: cycle.total_us(),
        hfu: (cycle.matmul_flops > 0.0).then(|| cycle.hfu()),
        engine_busy: cycle.engine_busy_summary(),
        chip: None,
    }
}
