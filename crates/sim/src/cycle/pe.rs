//! The PE array's timing state: a 4x4 grid of 32x32 cells, each with its occupancy and a
//! shadow weight buffer, one weight-load port, and the FLOP tally.

use bir::{HwAp, Op};
use penguin::target::NUM_PARTITIONS;
use penguin::{HwProfile, PerfMode, TilePosition, TileSize};

/// PE rows (and columns) per cell of the occupancy grid: the smallest row tile (trn2+).
const CELL: u32 = 32;
/// Cells per side of the grid.
const SIDE: u32 = NUM_PARTITIONS / CELL;
/// Cells in the grid.
const CELLS: usize = (SIDE * SIDE) as usize;
/// The profile figures the PE array's timing reads.
#[derive(Clone, Copy, Debug, Default)]
struct PeTiming {
    /// TensorE clock.
    ghz: f64,
    /// A MultiplyMoving issues no faster than this many TensorE cycles.
    mm_min_cycles: f64,
    /// 4-byte (fp32) operands pass through the array this many times slower.
    fp32_factor: f64,
    /// A LoadStationary is this many times faster than an MM of the same free size.
    ls_speedup: f64,
    /// Input elements per PE row and cycle of the sparse data path.
    sparse_lanes: f64,
}

/// The weights held in (or loading into) a cell.
#[derive(Clone, Copy, Debug, Default)]
struct Weights {
    /// Contraction rows that multiply (x2 in double row).
    rows: u32,
    /// 4-byte weights.
    fp32: bool,
    /// Dense rows per moving partition: the compression ratio of a sparse LoadStationary,
    /// 1 for a dense one.
    cr: u32,
}

/// Timing state of the PE array.
#[derive(Clone, Debug, Default)]
pub(super) struct PeState {
    timing: PeTiming,
    /// Start of the latest PE instruction (the PE issues in order).
    issue: f64,
    /// When the weight-load port is free.
    port_free: f64,
    /// Per cell: when its latest MM or transpose ends.
    cell_free: [f64; CELLS],
    /// Per cell: when its shadow weight buffer may be overwritten (the start of the MM that
    /// consumed the last weights, or the end of the last LS if none has yet).
    shadow_free: [f64; CELLS],
    /// Per cell: when the latest LS into it ends.
    weights_ready: [f64; CELLS],
    /// Per cell: the latest weights loaded.
    weights: [Weights; CELLS],
    /// FLOPs issued per flavour: index `fp32 | double_row << 1`.
    flops: [f64; 4],
}

/// The cells a tile covers, as a bit mask over the grid (row-major).
fn cells(pos: TilePosition, size: TileSize) -> u16 {
    let span = |start: u32, len: u32| {
        let first = (start / CELL).min(SIDE - 1);
        let end = start.saturating_add(len).div_ceil(CELL).clamp(first + 1, SIDE);
        first..end
    };
    let mut mask = 0u16;
    for r in span(pos.row, size.rows) {
        for c in span(pos.col, size.cols) {
            mask |= 1 << (r * SIDE + c);
        }
    }
    mask
}

const ALL_CELLS: u16 = u16::MAX;

fn each(mask: u16) -> impl Iterator<Item = usize> {
    (0..CELLS).filter(move |&i| mask & (1 << i) != 0)
}

fn pack(perf_mode: PerfMode) -> u64 {
    match perf_mode {
        PerfMode::None => 1,
        PerfMode::DoubleRow | PerfMode::DoubleRowGen3 => 2,
    }
}

fn is_fp32(ap: &HwAp) -> bool {
    ap.dtype.size_bytes() == 4
}

impl PeTiming {
    /// TensorE cycles of an MM (or transpose) streaming `n` moving columns.
    fn mm_cycles(&self, n: u64, fp32: bool) -> f64 {
        let base = (n as f64).max(self.mm_min_cycles);
        if fp32 {
            base * self.fp32_factor
        } else {
            base
        }
    }

    /// How many times longer each moving column takes on the sparse data path with
    /// compression ratio `cr`: a column needs `cr` moving elements and one stationary element
    /// per PE row, `sparse_lanes` of which arrive per cycle (1 for a dense matmul).
    fn sparse_factor(&self, cr: u32) -> f64 {
        if cr <= 1 {
            return 1.0;
        }
        (f64::from(cr.saturating_add(1)) / self.sparse_lanes.max(f64::MIN_POSITIVE)).max(1.0)
    }
}

impl PeState {
    pub(super) fn new(p: &HwProfile) -> Self {
        let timing = PeTiming {
            ghz: p.pe_ghz,
            mm_min_cycles: p.mm_min_cycles,
            fp32_factor: p.mm_fp32_factor,
            ls_speedup: p.ls_speedup,
            sparse_lanes: p.pe_sparse_input_lanes,
        };
        PeState { timing, ..PeState::default() }
    }

    fn max_over(values: &[f64; CELLS], mask: u16) -> f64 {
        each(mask).map(|i| values[i]).fold(0.0, f64::max)
    }

    /// The earliest time the array can start `op`, semaphores aside.
    pub(super) fn ready(&self, op: &Op) -> f64 {
        let own = match op {
            Op::LoadStationary { tile_position, tile_size, .. }
            | Op::LoadStationarySparse { tile_position, tile_size, .. } => {
                self.port_free.max(Self::max_over(&self.shadow_free, cells(*tile_position, *tile_size)))
            }
            Op::MultiplyMoving { tile_position, tile_size, .. } => {
                let mask = cells(*tile_position, *tile_size);
                Self::max_over(&self.cell_free, mask).max(Self::max_over(&self.weights_ready, mask))
            }
            Op::Transpose { .. } => Self::max_over(&self.cell_free, ALL_CELLS),
            // `Replay::new` keeps other ops off the PE.
            Op::DmaCopy { .. }
            | Op::DmaFma { .. }
            | Op::DmaGather { .. }
            | Op::DmaScatterAdd { .. }
            | Op::DmaScatter { .. }
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
            | Op::BnAggr { .. } => 0.0,
        };
        own.max(self.issue)
    }

    /// Run `op` from `start` (at least [`Self::ready`]); returns its end.
    pub(super) fn commit(&mut self, op: &Op, start: f64) -> f64 {
        let ghz = self.timing.ghz;
        self.issue = start;
        match op {
            Op::LoadStationary { src, perf_mode, tile_position, tile_size } => {
                let rows = src.num_partitions.saturating_mul(pack(*perf_mode) as u32);
                let w = Weights { rows, fp32: is_fp32(src), cr: 1 };
                self.load(src.free_elems() / pack(*perf_mode), w, cells(*tile_position, *tile_size), start, ghz)
            }
            Op::LoadStationarySparse { src, pattern, tile_position, tile_size, .. } => {
                let w = Weights { rows: src.num_partitions, fp32: is_fp32(src), cr: pattern.compression_ratio() };
                self.load(src.free_elems(), w, cells(*tile_position, *tile_size), start, ghz)
            }
            Op::MultiplyMoving { dst, src, perf_mode, tile_position, tile_size, .. } => {
                let mask = cells(*tile_position, *tile_size);
                let p = pack(*perf_mode);
                let first = each(mask).next().unwrap_or(0);
                let w = self.weights[first];
                // After a sparse stationary the moving operand is `[K', CR, N]`.
                let n = src.free_elems() / p / u64::from(w.cr.max(1));
                let fp32 = is_fp32(src) || w.fp32;
                let end = start + self.timing.mm_cycles(n, fp32) * self.timing.sparse_factor(w.cr) / ghz;
                for i in each(mask) {
                    self.cell_free[i] = end;
                    self.shadow_free[i] = start;
                }
                let k = if w.cr > 1 { u64::from(w.rows) } else { u64::from(src.num_partitions) * p };
                let flavour = usize::from(fp32) | usize::from(p == 2) << 1;
                self.flops[flavour] += 2.0 * k as f64 * f64::from(dst.num_partitions) * n as f64;
                end
            }
            Op::Transpose { src, .. } => {
                let end = start + self.timing.mm_cycles(src.free_elems(), is_fp32(src)) / ghz;
                self.cell_free = [end; CELLS];
                end
            }
            Op::DmaCopy { .. }
            | Op::DmaFma { .. }
            | Op::DmaGather { .. }
            | Op::DmaScatterAdd { .. }
            | Op::DmaScatter { .. }
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
            | Op::BnAggr { .. } => start,
        }
    }

    /// A LoadStationary of free size `m` into the cells of `mask`.
    fn load(&mut self, m: u64, w: Weights, mask: u16, start: f64, ghz: f64) -> f64 {
        let end = start + self.timing.mm_cycles(m, w.fp32) / self.timing.ls_speedup / ghz;
        self.port_free = end;
        for i in each(mask) {
            self.weights_ready[i] = end;
            self.shadow_free[i] = end;
            self.weights[i] = w;
        }
        end
    }

    /// Every time of the state, in a fixed order (for the steady-state check).
    pub(super) fn times(&self, out: &mut Vec<f64>) {
        out.extend([self.issue, self.port_free]);
        out.extend(self.cell_free.iter().chain(&self.shadow_free).chain(&self.weights_ready));
    }

    /// The loaded weights of every cell, as numbers (for the steady-state check).
    pub(super) fn weights_key(&self, out: &mut Vec<u64>) {
        out.extend(
            self.weights
                .iter()
                .map(|w| u64::from(w.rows) << 40 | u64::from(w.cr.min(1 << 30)) << 1 | u64::from(w.fp32)),
        );
    }

    /// FLOPs issued so far per flavour.
    pub(super) fn flops_parts(&self) -> [f64; 4] {
        self.flops
    }

    /// Peak FLOP/ns of the flavour with the most FLOPs in `flops` (per flavour, as
    /// [`PeState::flops_parts`]; bf16 dense if all are 0).
    pub(super) fn peak_flops_per_ns(&self, flops: &[f64; 4]) -> f64 {
        let mut flavour = 0;
        for (i, &f) in flops.iter().enumerate() {
            if f > flops[flavour] {
                flavour = i;
            }
        }
        let side = f64::from(NUM_PARTITIONS);
        let dense = 2.0 * side * side * self.timing.ghz;
        let dtype = if flavour & 1 != 0 { 1.0 / self.timing.fp32_factor } else { 1.0 };
        let rows = if flavour & 2 != 0 { 2.0 } else { 1.0 };
        dense * dtype * rows
    }
}
