//! The tensors and the output tile / K step each instruction serves, by data flow.
//!
//! A load's tile comes from the HBM coordinates it reads (through [`GemmLayout`]: which
//! output-tile rows or columns and which K steps those are). Every on-chip write records the
//! tile of what the instruction read over the bytes it wrote; a later reader of those bytes
//! inherits it. The PE's weights carry the tile of their LoadStationary to the
//! MultiplyMovings of the same array cell, so a matmul's tile is A's `(m, k)` joined with
//! B's `(k, n)`; an accumulating matmul joins the K steps already in its PSUM bytes, so the
//! copy that evacuates a finished group serves `(m, n)` over every K step. A store's tile is
//! the C coordinates it writes.

use std::collections::HashMap;
use std::fmt;

use bir::{BirInst, HwAp, Op, Program};
use penguin::{EngineAccumulationType, Memory};

use super::{hbm_tensor_at, Axis, GemmLayout, SbufBuffer};
use crate::cycle::CycleReport;

/// An inclusive range of tile indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub lo: u32,
    pub hi: u32,
}

impl Span {
    fn join(a: Option<Span>, b: Option<Span>) -> Option<Span> {
        match (a, b) {
            (Some(a), Some(b)) => Some(Span { lo: a.lo.min(b.lo), hi: a.hi.max(b.hi) }),
            (a, b) => a.or(b),
        }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lo == self.hi {
            write!(f, "{}", self.lo)
        } else {
            write!(f, "{}-{}", self.lo, self.hi)
        }
    }
}

/// Output tile rows `m`, columns `n` and K steps `k` an instruction serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tile {
    pub m: Option<Span>,
    pub n: Option<Span>,
    pub k: Option<Span>,
}

impl Tile {
    fn join(self, o: Tile) -> Tile {
        Tile { m: Span::join(self.m, o.m), n: Span::join(self.n, o.n), k: Span::join(self.k, o.k) }
    }

    fn set(&mut self, axis: Axis, span: Span) {
        match axis {
            Axis::M => self.m = Some(span),
            Axis::N => self.n = Some(span),
            Axis::K => self.k = Some(span),
        }
    }
}

/// Something an instruction reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Name {
    /// An HBM tensor (index into `program.hbm`).
    Hbm(usize),
    /// An SBUF buffer (index into the buffer list).
    Buffer(usize),
    /// Other SBUF bytes, at this byte offset.
    Sbuf(i64),
    /// A PSUM bank.
    Psum(i64),
    /// The PE array's loaded weights.
    Weights,
}

/// What one slice moves and serves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SliceLabel {
    pub reads: Vec<Name>,
    pub writes: Option<Name>,
    pub tile: Tile,
}

/// Prints a label's names: `a -> a0`, `b1, weights -> psum bank 2`.
pub(crate) struct Names<'a> {
    pub label: &'a SliceLabel,
    pub program: &'a Program,
    pub buffers: &'a [SbufBuffer],
}

impl Names<'_> {
    fn name(&self, n: Name, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match n {
            Name::Hbm(i) => match self.program.hbm.get(i) {
                Some(t) => f.write_str(&t.name),
                None => write!(f, "hbm tensor {i}"),
            },
            Name::Buffer(i) => match self.buffers.get(i) {
                Some(b) => f.write_str(&b.name),
                None => write!(f, "buffer {i}"),
            },
            Name::Sbuf(at) => write!(f, "sbuf@{at}"),
            Name::Psum(bank) => write!(f, "psum bank {bank}"),
            Name::Weights => f.write_str("pe weights"),
        }
    }
}

impl fmt::Display for Names<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, &n) in self.label.reads.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            self.name(n, f)?;
        }
        if let Some(w) = self.label.writes {
            f.write_str(if self.label.reads.is_empty() { "-> " } else { " -> " })?;
            self.name(w, f)?;
        }
        Ok(())
    }
}

/// On-chip bytes written by one instruction and the tile they hold; a load from HBM also
/// keeps its instruction (`copy`, an index into the loads) so that a reader of part of
/// the bytes gets the tile of that part.
#[derive(Clone, Copy, Debug)]
struct Record {
    psum: bool,
    p0: u32,
    p1: u32,
    b0: i64,
    b1: i64,
    tile: Tile,
    copy: Option<usize>,
}

/// Where one on-chip byte of a copy's destination came from in HBM: the destination
/// element's position in iteration order (partition, then the free dims outer first), and
/// the source byte at the same position.
fn source_byte(dst: &HwAp, src: &HwAp, p: u32, byte: i64) -> Option<i64> {
    let dsize = i64::from(dst.dtype.size_bytes().max(1));
    let pstride = dst.partition_stride.max(1);
    let pi = i64::from(p.checked_sub(dst.start_partition)?) / pstride;
    let mut f = (byte - dst.byte_offset as i64) / dsize;
    let mut linear = pi.checked_mul(i64::try_from(dst.free_elems()).ok()?)?;
    let mut inner: i64 = i64::try_from(dst.free_elems()).ok()?;
    for d in &dst.dims {
        inner /= i64::from(d.num.max(1));
        if d.stride <= 0 {
            continue;
        }
        let idx = (f / d.stride).clamp(0, i64::from(d.num.max(1)) - 1);
        f -= idx * d.stride;
        linear += idx * inner;
    }
    let sfree = i64::try_from(src.free_elems()).ok()?.max(1);
    let (spi, mut rem) = (linear / sfree, linear % sfree);
    let mut off = spi * src.partition_stride;
    let mut inner = sfree;
    for d in &src.dims {
        inner /= i64::from(d.num.max(1));
        let idx = rem / inner.max(1);
        rem -= idx * inner.max(1);
        off += idx * d.stride;
    }
    Some(src.byte_offset as i64 + off * i64::from(src.dtype.size_bytes().max(1)))
}

impl Record {
    fn overlaps(&self, o: &Record) -> bool {
        self.psum == o.psum && self.p0 < o.p1 && o.p0 < self.p1 && self.b0 < o.b1 && o.b0 < self.b1
    }

    /// The parts of `self` outside `o` (which overlaps it): up to four boxes.
    fn minus(self, o: &Record) -> impl Iterator<Item = Record> {
        let (p0, p1) = (self.p0.max(o.p0), self.p1.min(o.p1));
        [
            Record { p1: p0, ..self },
            Record { p0: p1, ..self },
            Record { p0, p1, b1: o.b0.min(self.b1), ..self },
            Record { p0, p1, b0: o.b1.max(self.b0), ..self },
        ]
        .into_iter()
        .filter(|r| r.p0 < r.p1 && r.b0 < r.b1)
    }
}

/// The tile of an HBM access: the rows and columns of its first and last element.
fn hbm_tile(program: &Program, gemm: Option<&GemmLayout>, ap: &HwAp) -> (Option<usize>, Tile) {
    let (_, _, lo, hi) = ap.byte_region();
    hbm_bytes_tile(program, gemm, lo, hi)
}

/// The tile of the HBM bytes `[lo, hi)` (of one tensor).
fn hbm_bytes_tile(program: &Program, gemm: Option<&GemmLayout>, lo: i64, hi: i64) -> (Option<usize>, Tile) {
    let Some((index, tensor)) = hbm_tensor_at(program, lo) else { return (None, Tile::default()) };
    let mut tile = Tile::default();
    let axes = gemm.and_then(|g| g.tensors.iter().find(|t| t.name == tensor.name));
    if let (Some(axes), &[_, cols]) = (axes, tensor.shape.as_slice()) {
        let size = i64::from(tensor.dtype.size_bytes().max(1));
        let base = tensor.address as i64;
        let first = ((lo - base) / size).max(0) as u64;
        let last = ((hi - 1 - base) / size).max(0) as u64;
        let cols = cols.max(1);
        let (r0, r1) = (first / cols, last / cols);
        let (c0, c1) = (first % cols, last % cols);
        let span = |a: u64, b: u64, unit: u64| {
            let unit = unit.max(1);
            let (a, b) = (a.min(b) / unit, a.max(b) / unit);
            Span { lo: u32::try_from(a).unwrap_or(u32::MAX), hi: u32::try_from(b).unwrap_or(u32::MAX) }
        };
        tile.set(axes.rows.0, span(r0, r1, axes.rows.1));
        tile.set(axes.cols.0, span(c0, c1, axes.cols.1));
    }
    (Some(index), tile)
}

/// The name of the on-chip bytes an access pattern starts at.
fn on_chip_name(ap: &HwAp, buffers: &[SbufBuffer], bank_bytes: i64) -> Name {
    let (p0, p1, lo, _) = ap.byte_region();
    match ap.memory {
        Memory::Psum => Name::Psum(lo / bank_bytes.max(1)),
        _ => buffers
            .iter()
            .position(|b| {
                let (b0, b1) = (b.byte_offset as i64, (b.byte_offset + b.bytes_per_partition) as i64);
                lo >= b0 && lo < b1 && p0 < b.start_partition + b.num_partitions && b.start_partition < p1
            })
            .map_or(Name::Sbuf(lo), Name::Buffer),
    }
}

/// Whether the instruction adds into its destination instead of replacing it.
pub(crate) fn accumulates(op: &Op) -> bool {
    match op {
        Op::MultiplyMoving { acc, .. } => !acc.contains(EngineAccumulationType::START),
        Op::DmaFma { .. } | Op::DmaScatterAdd { .. } => true,
        Op::LoadStationary { .. }
        | Op::LoadStationarySparse { .. }
        | Op::Transpose { .. }
        | Op::DmaCopy { .. }
        | Op::DmaGather { .. }
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
        | Op::BnAggr { .. } => false,
    }
}

/// The PE array cell of a PE op (its tile position), for the weights it loads or uses.
fn cell(op: &Op) -> Option<(u32, u32)> {
    match op {
        Op::LoadStationary { tile_position: p, .. }
        | Op::LoadStationarySparse { tile_position: p, .. }
        | Op::MultiplyMoving { tile_position: p, .. } => Some((p.row, p.col)),
        Op::Transpose { .. }
        | Op::DmaCopy { .. }
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
        | Op::BnAggr { .. } => None,
    }
}

/// The label of every slice of `report`, in its order.
pub(crate) fn labels(
    program: &Program,
    report: &CycleReport,
    buffers: &[SbufBuffer],
    gemm: Option<&GemmLayout>,
) -> Vec<SliceLabel> {
    let bank_bytes = i64::from(program.target.info().psum_par_size_in_bytes);
    let mut records: Vec<Record> = Vec::new();
    let mut loads: Vec<(HwAp, HwAp)> = Vec::new();
    let mut weights: HashMap<(u32, u32), Tile> = HashMap::new();
    let mut out = Vec::with_capacity(report.slices.len());
    for slice in &report.slices {
        let Some(inst) = program.streams.get(slice.engine.index()).and_then(|s| s.get(slice.index)) else {
            out.push(SliceLabel::default());
            continue;
        };
        let state = State { records: &mut records, loads: &mut loads, weights: &mut weights };
        out.push(label_one(program, inst, buffers, gemm, bank_bytes, state));
    }
    out
}

/// The data-flow state carried from one instruction to the next.
struct State<'a> {
    records: &'a mut Vec<Record>,
    loads: &'a mut Vec<(HwAp, HwAp)>,
    weights: &'a mut HashMap<(u32, u32), Tile>,
}

/// The tile of the part of record `r` that `probe` reads: through the HBM coordinates of
/// the part's first and last byte when `r` came straight from HBM, else `r`'s whole tile.
fn part_tile(program: &Program, gemm: Option<&GemmLayout>, loads: &[(HwAp, HwAp)], r: &Record, probe: &Record) -> Tile {
    let Some((dst, src)) = r.copy.and_then(|c| loads.get(c)) else { return r.tile };
    let (p0, p1) = (r.p0.max(probe.p0), r.p1.min(probe.p1));
    let (b0, b1) = (r.b0.max(probe.b0), r.b1.min(probe.b1));
    let size = i64::from(dst.dtype.size_bytes().max(1));
    let first = source_byte(dst, src, p0, b0);
    let last = source_byte(dst, src, p1.saturating_sub(1), b1 - size);
    match (first, last) {
        (Some(a), Some(b)) => {
            let (lo, hi) = (a.min(b), a.max(b) + size);
            let (_, tile) = hbm_bytes_tile(program, gemm, lo, hi);
            // Keep what the record knew along axes the part does not name.
            Tile { m: tile.m.or(r.tile.m), n: tile.n.or(r.tile.n), k: tile.k.or(r.tile.k) }
        }
        _ => r.tile,
    }
}

fn label_one(
    program: &Program,
    inst: &BirInst,
    buffers: &[SbufBuffer],
    gemm: Option<&GemmLayout>,
    bank_bytes: i64,
    state: State<'_>,
) -> SliceLabel {
    let State { records, loads, weights } = state;
    let op = &inst.op;
    let mut label = SliceLabel::default();
    let mut read = Tile::default();
    let push_read = |label: &mut SliceLabel, n: Name| {
        if !label.reads.contains(&n) {
            label.reads.push(n);
        }
    };
    for (ap, written) in op.accesses() {
        if written {
            continue;
        }
        if ap.memory == Memory::Hbm {
            let (t, tile) = hbm_tile(program, gemm, ap);
            if let Some(t) = t {
                push_read(&mut label, Name::Hbm(t));
            }
            read = read.join(tile);
        } else {
            push_read(&mut label, on_chip_name(ap, buffers, bank_bytes));
            let (p0, p1, b0, b1) = ap.byte_region();
            let probe = Record { psum: ap.memory == Memory::Psum, p0, p1, b0, b1, tile: Tile::default(), copy: None };
            for r in records.iter().filter(|r| r.overlaps(&probe)) {
                read = read.join(part_tile(program, gemm, loads, r, &probe));
            }
        }
    }
    match op {
        Op::LoadStationary { .. } | Op::LoadStationarySparse { .. } => {
            if let Some(c) = cell(op) {
                weights.insert(c, read);
            }
            label.writes = Some(Name::Weights);
        }
        Op::MultiplyMoving { .. } => {
            if let Some(w) = cell(op).and_then(|c| weights.get(&c)) {
                read = read.join(*w);
                push_read(&mut label, Name::Weights);
            }
        }
        Op::Transpose { .. }
        | Op::DmaCopy { .. }
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
        | Op::BnAggr { .. } => {}
    }
    let mut tile = read;
    for (ap, written) in op.accesses() {
        if !written {
            continue;
        }
        if ap.memory == Memory::Hbm {
            let (t, at) = hbm_tile(program, gemm, ap);
            label.writes = t.map(Name::Hbm);
            // The coordinates written are exact; the reads add the K steps.
            tile = Tile { m: at.m.or(tile.m), n: at.n.or(tile.n), k: at.k.or(tile.k) };
            continue;
        }
        label.writes = Some(on_chip_name(ap, buffers, bank_bytes));
        let (p0, p1, b0, b1) = ap.byte_region();
        let copy = match op {
            Op::DmaCopy { dst, src, .. } if src.memory == Memory::Hbm => {
                loads.push((dst.clone(), src.clone()));
                Some(loads.len() - 1)
            }
            Op::LoadStationary { .. }
            | Op::LoadStationarySparse { .. }
            | Op::MultiplyMoving { .. }
            | Op::Transpose { .. }
            | Op::DmaCopy { .. }
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
            | Op::BnAggr { .. } => None,
        };
        let mut new = Record { psum: ap.memory == Memory::Psum, p0, p1, b0, b1, tile, copy };
        if accumulates(op) {
            let probe = new;
            for r in records.iter().filter(|r| r.overlaps(&probe)) {
                new.tile = new.tile.join(r.tile);
            }
        }
        let mut kept = Vec::with_capacity(records.len() + 4);
        for r in records.drain(..) {
            if r.overlaps(&new) {
                kept.extend(r.minus(&new));
            } else {
                kept.push(r);
            }
        }
        kept.push(new);
        *records = kept;
    }
    label.tile = tile;
    label
}
