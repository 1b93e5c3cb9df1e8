//! The DMA side of the cycle model: what one transfer asks of the DMA engines and HBM
//! (descriptors, bytes, the engines that serve its partitions), the queues that keep several
//! transfers in flight, and the shared servers (the 16 DMA engines and HBM).
//!
//! Every number comes from the [`HwProfile`]; see the module doc of `cycle` for the model.

use bir::{HwAp, Op};
use penguin::target::NUM_DMA_QUEUES;
use penguin::{HwProfile, Memory, Target};

/// Partitions served by one DMA engine.
const PARTITIONS_PER_ENGINE: u32 = 8;
/// DMA engines per core.
const ENGINES: usize = NUM_DMA_QUEUES as usize;

/// What one transfer asks of the DMA engines and HBM.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Transfer {
    /// Bytes the engines stream (each element at the width of its widest operand).
    pub(super) engine_bytes: f64,
    /// Bytes to or from HBM ([`Op::hbm_bytes`]).
    pub(super) hbm_bytes: u64,
    /// HBM bytes rounded up to whole access granules, run by run (what HBM's time counts).
    pub(super) hbm_granule_bytes: f64,
    /// Bytes of one contiguous run (one descriptor: per partition, per row).
    pub(super) run_bytes: f64,
    /// The engines' throughput for this kind of transfer as a fraction of a copy's.
    pub(super) rate: f64,
    /// First engine serving it.
    pub(super) first_engine: usize,
    /// Engines serving it (consecutive, wrapping).
    pub(super) engines: usize,
}

impl Transfer {
    /// Descriptors (contiguous runs) in the transfer.
    pub(super) fn descriptors(&self) -> f64 {
        (self.engine_bytes / self.run_bytes.max(1.0)).ceil()
    }

    /// Time one of its engines is busy, in ns: its share of the descriptors, each costing the
    /// larger of the descriptor time and its run's data time (the engine prepares the next
    /// descriptor while the current one's data streams).
    pub(super) fn engine_ns(&self, p: &HwProfile) -> f64 {
        let engines = self.engines.max(1) as f64;
        let per_descriptor = (self.descriptors() / engines).ceil() * p.dma_descriptor_ns;
        let data = self.engine_bytes / engines / (p.dma_engine_bytes_per_ns * self.rate);
        per_descriptor.max(data)
    }

    /// Time HBM needs for its bytes, in ns.
    pub(super) fn hbm_ns(&self, p: &HwProfile) -> f64 {
        self.hbm_granule_bytes / p.hbm_bytes_per_ns
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

/// Bytes contiguous in HBM per run of an HBM operand: along the partition dimension for a
/// transposing access, the innermost free dimensions otherwise.
fn hbm_run_bytes(ap: &HwAp) -> u64 {
    let elems = if is_transposing(ap) { u64::from(ap.num_partitions) } else { contiguous_elems(ap) };
    elems.max(1).saturating_mul(size(ap))
}

/// `bytes` of an operand whose runs are `run` bytes long, rounded up to whole HBM granules.
fn in_granules(bytes: u64, run: u64, granule: f64) -> f64 {
    let run = run.max(1) as f64;
    bytes as f64 * ((run / granule).ceil() * granule / run)
}

/// Whether the target's DMA engines can transpose (NeuronCore-v3 and later).
fn has_dma_transpose(target: Target) -> bool {
    match target {
        Target::Trn1 => false,
        Target::Trn2 | Target::Trn3 => true,
    }
}

/// The cost parameters of a DMA op issued on queue `queue`.
pub(super) fn transfer(op: &Op, queue: u8, p: &HwProfile) -> Transfer {
    let rows = |index: &HwAp| u64::from(index.num_partitions).saturating_mul(index.free_elems());
    let table_bytes =
        |table: &HwAp, index: &HwAp| rows(index).saturating_mul(table.free_elems()).saturating_mul(size(table));
    // Op::hbm_bytes without its allocation: this runs once per DMA of programs with millions.
    let hbm = |ap: &HwAp, bytes: u64| if ap.memory == Memory::Hbm { bytes } else { 0 };
    let granule = p.hbm_burst_bytes.max(1.0);
    // HBM bytes of an operand moved `times` times, rounded to granules over its runs (a
    // gathered or scattered table row is one run).
    let timed = |ap: &HwAp, bytes: u64, run: u64, times: u64| {
        if ap.memory == Memory::Hbm {
            in_granules(bytes, run, granule) * times as f64
        } else {
            0.0
        }
    };
    let row = |table: &HwAp| table.free_elems().saturating_mul(size(table));
    // (elements streamed, HBM bytes, HBM granule bytes, data operands, arithmetic)
    let (elems, hbm_bytes, hbm_granule_bytes, data, compute): (u64, u64, f64, [Option<&HwAp>; 3], bool) = match op {
        Op::DmaCopy { dst, src, .. } => (
            src.num_elems(),
            sum(&[hbm(src, bytes(src)), hbm(dst, bytes(dst))]),
            timed(src, bytes(src), hbm_run_bytes(src), 1) + timed(dst, bytes(dst), hbm_run_bytes(dst), 1),
            [Some(dst), Some(src), None],
            false,
        ),
        Op::DmaFma { dst, src0, src1 } => (
            sum(&[src0.num_elems(), src1.num_elems(), dst.num_elems()]),
            sum(&[hbm(src0, bytes(src0)), hbm(src1, bytes(src1)), hbm(dst, bytes(dst)).saturating_mul(2)]),
            timed(src0, bytes(src0), hbm_run_bytes(src0), 1)
                + timed(src1, bytes(src1), hbm_run_bytes(src1), 1)
                + timed(dst, bytes(dst), hbm_run_bytes(dst), 2),
            [Some(dst), Some(src0), Some(src1)],
            true,
        ),
        // An `oob_mode=skip` entry outside the table moves nothing, but which are outside is
        // data: the model charges every row, the most the transfer can move.
        Op::DmaGather { dst, table, index, .. } => (
            sum(&[rows(index).saturating_mul(table.free_elems()), index.num_elems()]),
            sum(&[hbm(dst, bytes(dst)), hbm(table, table_bytes(table, index)), hbm(index, bytes(index))]),
            timed(dst, bytes(dst), hbm_run_bytes(dst), 1)
                + timed(table, table_bytes(table, index), row(table), 1)
                + timed(index, bytes(index), hbm_run_bytes(index), 1),
            [Some(dst), Some(table), None],
            false,
        ),
        Op::DmaScatter { table, src, index, .. } => (
            sum(&[src.num_elems(), index.num_elems()]),
            sum(&[hbm(src, bytes(src)), hbm(table, table_bytes(table, index)), hbm(index, bytes(index))]),
            timed(src, bytes(src), hbm_run_bytes(src), 1)
                + timed(table, table_bytes(table, index), row(table), 1)
                + timed(index, bytes(index), hbm_run_bytes(index), 1),
            [Some(src), Some(table), None],
            false,
        ),
        Op::DmaScatterAdd { table, src, index, .. } => (
            sum(&[src.num_elems(), index.num_elems(), rows(index).saturating_mul(table.free_elems())]),
            sum(&[
                hbm(src, bytes(src)),
                hbm(table, table_bytes(table, index)).saturating_mul(2),
                hbm(index, bytes(index)),
            ]),
            timed(src, bytes(src), hbm_run_bytes(src), 1)
                + timed(table, table_bytes(table, index), row(table), 2)
                + timed(index, bytes(index), hbm_run_bytes(index), 1),
            [Some(src), Some(table), None],
            true,
        ),
        // `Replay` keeps other ops off the DMA queues.
        Op::LoadStationary { .. }
        | Op::LoadStationarySparse { .. }
        | Op::MultiplyMoving { .. }
        | Op::Transpose { .. }
        | Op::TensorCopy { .. }
        | Op::TensorTensor { .. }
        | Op::Memset { .. }
        | Op::Activation { .. }
        | Op::TensorScalar { .. }
        | Op::TensorTensorScan { .. }
        | Op::TensorCopyPredicated { .. }
        | Op::StreamShuffle { .. }
        | Op::Top8 { .. }
        | Op::TensorScalarCumulative { .. }
        | Op::TensorReduce { .. }
        | Op::TensorPartitionReduce { .. }
        | Op::AffineSelect { .. }
        | Op::Iota { .. }
        | Op::BnStats { .. }
        | Op::BnAggr { .. } => (0, 0, 0.0, [None, None, None], false),
    };
    let writes_transposed = data[0].is_some_and(is_transposing);
    let data = data.into_iter().flatten();
    // A casting copy converts through its wider side: every element streams at that width.
    let width = data.clone().map(|ap| u64::from(ap.dtype.size_bytes())).max().unwrap_or(1);
    // A transposing read from HBM is a DMA transpose on trn2/trn3 (runs along the source's
    // contiguous partitions, at the transpose's fraction of copy throughput); a transposing
    // write, DMA arithmetic on transposed operands, or trn1 move one element per descriptor.
    let transposing = data.clone().find(|ap| is_transposing(ap));
    let dma_transpose = transposing.is_some() && has_dma_transpose(p.target) && !writes_transposed && !compute;
    let run_elems = match transposing {
        Some(t) if dma_transpose => u64::from(t.num_partitions),
        Some(_) => 1,
        None => data.clone().map(|ap| contiguous_elems(ap).min(ap.free_elems().max(1))).min().unwrap_or(1),
    };
    let rate = if compute {
        p.dma_compute_fraction
    } else if dma_transpose {
        p.dma_transpose_hbm_fraction
    } else {
        1.0
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
    Transfer {
        engine_bytes: elems as f64 * width as f64,
        hbm_bytes,
        hbm_granule_bytes,
        run_bytes: (run_elems.max(1) * width) as f64,
        rate,
        first_engine,
        engines,
    }
}

/// The shared DMA servers: when each DMA engine and HBM are free again, and the transfers
/// each queue has in flight.
#[derive(Clone, Debug)]
pub(super) struct DmaState {
    profile: HwProfile,
    engine_free: [f64; ENGINES],
    hbm_free: f64,
    /// Per queue: the ends of its transfers still in flight.
    in_flight: Vec<Vec<f64>>,
}

/// What committing one DMA op gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Committed {
    /// When its data has landed (and its semaphore may be signalled).
    pub(super) end: f64,
    /// Its HBM bytes.
    pub(super) hbm_bytes: u64,
    /// When its queue can start the next transfer.
    pub(super) queue_free: f64,
}

/// The HBM bandwidth the cores of one logical core share (`hbm_shared_bytes_per_ns`): one
/// more server every core's HBM granules pass through, after their own core's.
#[derive(Clone, Copy, Debug)]
pub(super) struct SharedHbm {
    /// When it is free again.
    pub(super) free: f64,
    /// Its rate.
    pub(super) bytes_per_ns: f64,
    /// Time it was busy.
    pub(super) busy_ns: f64,
}

impl DmaState {
    pub(super) fn new(profile: HwProfile) -> Self {
        DmaState {
            profile,
            engine_free: [0.0; ENGINES],
            hbm_free: 0.0,
            in_flight: vec![Vec::new(); NUM_DMA_QUEUES as usize],
        }
    }

    /// Run a DMA op on `queue` from `start`. Its data moves after the fixed latency, through
    /// its engines and HBM, each granted in start order; the queue takes its next transfer at
    /// once unless `dma_queue_depth` transfers are in flight, then when the first of them ends.
    /// On a chip of several cores, `shared` is the HBM bandwidth they share.
    pub(super) fn commit(&mut self, queue: u8, op: &Op, start: f64, shared: Option<&mut SharedHbm>) -> Committed {
        let p = self.profile;
        let t = transfer(op, queue, &p);
        let data_start = start + p.dma_fixed_ns;
        let mut end = data_start;
        if t.engine_bytes > 0.0 {
            let per_engine = t.engine_ns(&p);
            for k in 0..t.engines {
                let g = (t.first_engine + k) % ENGINES;
                let done = self.engine_free[g].max(data_start) + per_engine;
                self.engine_free[g] = done;
                end = end.max(done);
            }
        }
        if t.hbm_granule_bytes > 0.0 {
            self.hbm_free = self.hbm_free.max(data_start) + t.hbm_ns(&p);
            end = end.max(self.hbm_free);
            if let Some(h) = shared {
                let ns = t.hbm_granule_bytes / h.bytes_per_ns;
                h.free = h.free.max(data_start) + ns;
                h.busy_ns += ns;
                end = end.max(h.free);
            }
        }
        let queue_free = match self.in_flight.get_mut(usize::from(queue)) {
            Some(flight) => {
                flight.retain(|&e| e > start);
                flight.push(end);
                if flight.len() >= p.queue_depth() {
                    flight.iter().copied().fold(f64::INFINITY, f64::min)
                } else {
                    start
                }
            }
            None => end,
        };
        Committed { end, hbm_bytes: t.hbm_bytes, queue_free }
    }
}

impl DmaState {
    /// The DMA engines' and HBM's free times, in a fixed order (for the steady-state check).
    pub(super) fn times(&self, out: &mut Vec<f64>) {
        out.extend(self.engine_free.iter().copied());
        out.push(self.hbm_free);
    }

    /// Per queue: the ends of its transfers in flight.
    pub(super) fn in_flight(&self) -> &[Vec<f64>] {
        &self.in_flight
    }
}

/// A saturating sum of byte counts (hostile programs must not overflow the model).
fn sum(parts: &[u64]) -> u64 {
    parts.iter().fold(0u64, |a, &b| a.saturating_add(b))
}
