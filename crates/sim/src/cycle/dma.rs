//! The DMA side of the cycle model: per-transfer cost (fixed latency, run efficiency, the
//! engines that serve its partitions) and the shared servers (the 16 DMA engines and HBM).

use bir::{HwAp, Op};
use penguin::target::NUM_DMA_QUEUES;
use penguin::{Memory, Target};

/// Fixed end-to-end cost of one transfer, in ns.
const FIXED_NS: f64 = 1300.0;
/// A contiguous run per partition of this many bytes saturates a DMA engine.
const SATURATING_RUN_BYTES: f64 = 4096.0;
/// Partitions served by one DMA engine.
const PARTITIONS_PER_ENGINE: u32 = 8;
/// DMA engines per core.
const ENGINES: usize = NUM_DMA_QUEUES as usize;

/// What one transfer asks of the DMA engines and HBM.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Transfer {
    /// Bytes the engines read (and so stream).
    pub(super) read_bytes: u64,
    /// Bytes to or from HBM ([`Op::hbm_bytes`]).
    pub(super) hbm_bytes: u64,
    /// Bytes of one contiguous run (per partition, per descriptor).
    pub(super) run_bytes: f64,
    /// First engine serving it.
    pub(super) first_engine: usize,
    /// Engines serving it (consecutive, wrapping).
    pub(super) engines: usize,
}

impl Transfer {
    /// Rate efficiency of its runs: linear up to the saturating run.
    pub(super) fn efficiency(&self) -> f64 {
        (self.run_bytes / SATURATING_RUN_BYTES).clamp(1.0 / SATURATING_RUN_BYTES, 1.0)
    }
}

fn size(ap: &HwAp) -> u64 {
    u64::from(ap.dtype.size_bytes())
}

fn bytes(ap: &HwAp) -> u64 {
    u64::from(ap.num_partitions).saturating_mul(ap.free_elems()).saturating_mul(size(ap))
}

/// Elements that are contiguous in memory at the innermost end of `ap`'s free dimensions.
fn contiguous_elems(ap: &HwAp) -> u64 {
    let mut run = 1u64;
    for d in ap.dims.iter().rev().filter(|d| d.num > 1) {
        if d.stride == run as i64 {
            run = run.saturating_mul(u64::from(d.num));
        } else {
            break;
        }
    }
    run
}

/// An HBM operand read or written transposed: partitions adjacent in memory, free dimension
/// strided.
fn is_transposing(ap: &HwAp) -> bool {
    let inner = ap.dims.iter().rev().find(|d| d.num > 1);
    ap.memory == Memory::Hbm
        && ap.num_partitions > 1
        && ap.partition_stride == 1
        && inner.is_some_and(|d| d.stride != 1)
}

/// Whether the target's DMA engines can transpose (NeuronCore-v3 and later).
fn has_dma_transpose(target: Target) -> bool {
    match target {
        Target::Trn1 => false,
        Target::Trn2 | Target::Trn3 => true,
    }
}

/// The cost parameters of a DMA op issued on queue `queue`.
pub(super) fn transfer(op: &Op, queue: u8, target: Target) -> Transfer {
    let rows = |index: &HwAp| u64::from(index.num_partitions).saturating_mul(index.free_elems());
    let table_bytes =
        |table: &HwAp, index: &HwAp| rows(index).saturating_mul(table.free_elems()).saturating_mul(size(table));
    // Op::hbm_bytes without its allocation: this runs once per DMA of programs with millions.
    let hbm = |ap: &HwAp, bytes: u64| if ap.memory == Memory::Hbm { bytes } else { 0 };
    let (read_bytes, hbm_bytes, data): (u64, u64, [Option<&HwAp>; 3]) = match op {
        Op::DmaCopy { dst, src, .. } => {
            (bytes(src), sum(&[hbm(src, bytes(src)), hbm(dst, bytes(dst))]), [Some(dst), Some(src), None])
        }
        Op::DmaFma { dst, src0, src1 } => (
            sum(&[bytes(src0), bytes(src1), bytes(dst)]),
            sum(&[hbm(src0, bytes(src0)), hbm(src1, bytes(src1)), hbm(dst, bytes(dst)).saturating_mul(2)]),
            [Some(dst), Some(src0), Some(src1)],
        ),
        Op::DmaGather { dst, table, index } => (
            sum(&[table_bytes(table, index), bytes(index)]),
            sum(&[hbm(dst, bytes(dst)), hbm(table, table_bytes(table, index)), hbm(index, bytes(index))]),
            [Some(dst), Some(table), None],
        ),
        Op::DmaScatterAdd { table, src, index } => (
            sum(&[bytes(src), bytes(index), table_bytes(table, index)]),
            sum(&[
                hbm(src, bytes(src)),
                hbm(table, table_bytes(table, index)).saturating_mul(2),
                hbm(index, bytes(index)),
            ]),
            [Some(src), Some(table), None],
        ),
        // `Replay` keeps other ops off the DMA queues.
        Op::LoadStationary { .. }
        | Op::LoadStationarySparse { .. }
        | Op::MultiplyMoving { .. }
        | Op::Transpose { .. }
        | Op::TensorCopy { .. }
        | Op::TensorTensor { .. }
        | Op::Memset { .. } => (0, 0, [None, None, None]),
    };
    let data = data.into_iter().flatten();
    let width = data.clone().map(|ap| u64::from(ap.dtype.size_bytes())).max().unwrap_or(1);
    let run_elems = match data.clone().find(|ap| is_transposing(ap)) {
        Some(t) if has_dma_transpose(target) => u64::from(t.num_partitions),
        Some(_) => 1,
        None => data.clone().map(|ap| contiguous_elems(ap).min(ap.free_elems().max(1))).min().unwrap_or(1),
    };
    let (first_engine, engines) = match data.clone().find(|ap| ap.memory != Memory::Hbm) {
        Some(on_chip) => {
            let (p0, p1, _, _) = on_chip.byte_region();
            let g0 = (p0 / PARTITIONS_PER_ENGINE) as usize;
            let g1 = (p1.max(p0.saturating_add(1)) - 1) as usize / PARTITIONS_PER_ENGINE as usize;
            let g0 = g0.min(ENGINES - 1);
            (g0, (g1.min(ENGINES - 1) - g0) + 1)
        }
        None => {
            let rows = data.map(|ap| ap.num_partitions).max().unwrap_or(1);
            let engines = rows.div_ceil(PARTITIONS_PER_ENGINE).clamp(1, ENGINES as u32) as usize;
            (usize::from(queue) % ENGINES, engines)
        }
    };
    Transfer { read_bytes, hbm_bytes, run_bytes: (run_elems.max(1) * width) as f64, first_engine, engines }
}

/// The shared DMA servers: when each DMA engine and HBM are free again.
#[derive(Clone, Debug)]
pub(super) struct DmaState {
    target: Target,
    engine_free: [f64; ENGINES],
    hbm_free: f64,
}

impl DmaState {
    pub(super) fn new(target: Target) -> Self {
        DmaState { target, engine_free: [0.0; ENGINES], hbm_free: 0.0 }
    }

    /// Run a DMA op on `queue` from `start`; returns its end and its HBM bytes. Its data
    /// moves after the fixed cost, through its engines and HBM, each granted in start order.
    pub(super) fn commit(&mut self, queue: u8, op: &Op, start: f64) -> (f64, u64) {
        let info = self.target.info();
        let t = transfer(op, queue, self.target);
        let data_start = start + FIXED_NS;
        let mut end = data_start;
        if t.read_bytes > 0 {
            let per_engine = t.read_bytes as f64 / t.engines as f64 / (info.dma_bytes_per_ns * t.efficiency());
            for k in 0..t.engines {
                let g = (t.first_engine + k) % ENGINES;
                let done = self.engine_free[g].max(data_start) + per_engine;
                self.engine_free[g] = done;
                end = end.max(done);
            }
        }
        if t.hbm_bytes > 0 {
            self.hbm_free = self.hbm_free.max(data_start) + t.hbm_bytes as f64 / info.hbm_bytes_per_ns;
            end = end.max(self.hbm_free);
        }
        (end, t.hbm_bytes)
    }
}

/// A saturating sum of byte counts (hostile programs must not overflow the model).
fn sum(parts: &[u64]) -> u64 {
    parts.iter().fold(0u64, |a, &b| a.saturating_add(b))
}
