//! Counters over time: SBUF bytes in use per buffer, PSUM banks live, HBM bytes per ns.
//!
//! A buffer (or PSUM bank) is in use from the first write of a fill until the end of the
//! last read of it: writes that follow reads start a new fill, an instruction that reads
//! and writes the same bytes (an accumulation) extends the current one. Its bytes in use are
//! the per-partition byte span the fill wrote, clipped to the buffer, so a buffer never
//! counts more than its size. Fills of one buffer never overlap in time: a fill ends no
//! later than the next one starts. The HBM rate spreads each transfer's HBM bytes evenly
//! over its modeled duration, in bins, delivered at no more than the HBM bandwidth.

use bir::{Op, Program};
use penguin::Memory;

use super::labels::accumulates;
use super::SbufBuffer;
use crate::cycle::CycleReport;

/// Bins of the HBM rate over the whole modeled time.
pub(crate) const HBM_BINS: usize = 400;

/// A byte box: partitions `[p0, p1)`, bytes `[lo, hi)` within each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Box2 {
    pub p0: u32,
    pub p1: u32,
    pub lo: i64,
    pub hi: i64,
}

impl Box2 {
    fn overlaps(&self, o: &Box2) -> bool {
        self.p0 < o.p1 && o.p0 < self.p1 && self.lo < o.hi && o.lo < self.hi
    }
}

/// One fill of a buffer: `[start, end)` ns with `bytes` per partition in use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Fill {
    pub start: f64,
    pub end: f64,
    pub bytes: u64,
}

/// What the counters found.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Counters {
    /// Per SBUF buffer, its fills in time order.
    pub sbuf: Vec<Vec<Fill>>,
    /// Per PSUM bank, its fills in time order.
    pub psum: Vec<Vec<Fill>>,
    /// HBM bytes per ns (GB/s) per bin of `hbm_bin_ns`, from time 0.
    pub hbm: Vec<f64>,
    /// Width of one HBM bin.
    pub hbm_bin_ns: f64,
}

impl Counters {
    /// PSUM banks live over time: `(time, banks)` at every change.
    pub fn psum_live(&self) -> Vec<(f64, u32)> {
        step_sum(self.psum.iter().flatten().map(|f| (f.start, f.end, 1)))
            .into_iter()
            .map(|(t, v)| (t, u32::try_from(v).unwrap_or(u32::MAX)))
            .collect()
    }
}

/// The running sum of intervals `(start, end, value)`: `(time, sum)` at every change.
fn step_sum(intervals: impl Iterator<Item = (f64, f64, u64)>) -> Vec<(f64, u64)> {
    let mut events: Vec<(f64, bool, u64)> = Vec::new();
    for (s, e, v) in intervals {
        if e > s {
            events.push((s, true, v));
            events.push((e, false, v));
        }
    }
    // Ends before starts at the same time.
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut out: Vec<(f64, u64)> = Vec::new();
    let mut sum = 0u64;
    for (t, start, v) in events {
        sum = if start { sum.saturating_add(v) } else { sum.saturating_sub(v) };
        match out.last_mut() {
            Some(last) if last.0 == t => last.1 = sum,
            _ => out.push((t, sum)),
        }
    }
    out
}

/// The SBUF buffers a program's writes imply when none are named: each maximal run of
/// overlapping written byte ranges is one buffer over all partitions, named by its offset.
pub(crate) fn implied_buffers(program: &Program) -> Vec<SbufBuffer> {
    let mut ranges: Vec<(i64, i64)> = program
        .streams
        .iter()
        .flatten()
        .flat_map(|inst| inst.op.accesses())
        .filter(|(ap, written)| *written && ap.memory == Memory::Sbuf)
        .map(|(ap, _)| {
            let (_, _, lo, hi) = ap.byte_region();
            (lo, hi)
        })
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::new();
    for (lo, hi) in ranges {
        match merged.last_mut() {
            Some(last) if lo < last.1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    merged
        .into_iter()
        .filter(|(lo, hi)| *lo >= 0 && hi > lo)
        .map(|(lo, hi)| SbufBuffer {
            name: format!("sbuf@{lo}"),
            start_partition: 0,
            num_partitions: 128,
            byte_offset: lo as u64,
            bytes_per_partition: (hi - lo) as u64,
        })
        .collect()
}

/// The fills of each region (`regions` in one memory) over the report.
fn fills(program: &Program, report: &CycleReport, memory: Memory, regions: &[Box2]) -> Vec<Vec<Fill>> {
    #[derive(Clone, Copy)]
    struct Open {
        start: f64,
        end: f64,
        lo: i64,
        hi: i64,
        reading: bool,
    }
    let mut done: Vec<Vec<Fill>> = vec![Vec::new(); regions.len()];
    let mut open: Vec<Option<Open>> = vec![None; regions.len()];
    let close =
        |r: &Box2, o: Open| Fill { start: o.start, end: o.end, bytes: (o.hi.min(r.hi) - o.lo.max(r.lo)).max(0) as u64 };
    for slice in &report.slices {
        let Some(inst) = program.streams.get(slice.engine.index()).and_then(|s| s.get(slice.index)) else {
            continue;
        };
        let boxes: Vec<(Box2, bool)> = inst
            .op
            .accesses()
            .into_iter()
            .filter(|(ap, _)| ap.memory == memory)
            .map(|(ap, written)| {
                let (p0, p1, lo, hi) = ap.byte_region();
                (Box2 { p0, p1, lo, hi }, written)
            })
            .collect();
        if boxes.is_empty() {
            continue;
        }
        let rmw = accumulates(&inst.op) || matches!(inst.op, Op::TensorTensor { .. });
        for (ri, r) in regions.iter().enumerate() {
            let mut wrote: Option<(i64, i64)> = None;
            let mut read = false;
            for (b, written) in boxes.iter().filter(|(b, _)| b.overlaps(r)) {
                if *written {
                    wrote = Some(wrote.map_or((b.lo, b.hi), |(lo, hi)| (lo.min(b.lo), hi.max(b.hi))));
                    read |= rmw;
                } else {
                    read = true;
                }
            }
            let slot = &mut open[ri];
            match (wrote, slot.as_mut()) {
                (None, None) => {}
                (None, Some(o)) => {
                    o.reading |= read;
                    o.end = o.end.max(slice.end_ns);
                }
                (Some((lo, hi)), Some(o)) if !o.reading || read => {
                    o.lo = o.lo.min(lo);
                    o.hi = o.hi.max(hi);
                    o.end = o.end.max(slice.end_ns);
                    o.reading |= read;
                }
                (Some((lo, hi)), previous) => {
                    if let Some(o) = previous {
                        let o = *o;
                        done[ri].push(close(r, Open { end: o.end.min(slice.start_ns), ..o }));
                    }
                    *slot = Some(Open { start: slice.start_ns, end: slice.end_ns, lo, hi, reading: read });
                }
            }
        }
    }
    for (ri, o) in open.into_iter().enumerate() {
        if let (Some(o), Some(r)) = (o, regions.get(ri)) {
            done[ri].push(close(r, o));
        }
    }
    done
}

/// Every counter of a modeled program.
pub(crate) fn counters(program: &Program, report: &CycleReport, buffers: &[SbufBuffer]) -> Counters {
    let sbuf_regions: Vec<Box2> = buffers
        .iter()
        .map(|b| Box2 {
            p0: b.start_partition,
            p1: b.start_partition.saturating_add(b.num_partitions),
            lo: b.byte_offset as i64,
            hi: b.byte_offset.saturating_add(b.bytes_per_partition) as i64,
        })
        .collect();
    let info = program.target.info();
    let bank = i64::from(info.psum_par_size_in_bytes);
    let banks: Vec<Box2> = (0..i64::from(info.psum_num_banks))
        .map(|b| Box2 { p0: 0, p1: u32::MAX, lo: b * bank, hi: (b + 1) * bank })
        .collect();
    let bin_ns = if report.total_ns > 0.0 { report.total_ns / HBM_BINS as f64 } else { 1.0 };
    let mut hbm = vec![0.0f64; HBM_BINS];
    for slice in &report.slices {
        let Some(inst) = program.streams.get(slice.engine.index()).and_then(|s| s.get(slice.index)) else {
            continue;
        };
        let bytes = inst.op.hbm_bytes() as f64;
        if bytes <= 0.0 {
            continue;
        }
        let (s, e) = (slice.start_ns, slice.end_ns.max(slice.start_ns));
        let first = ((s / bin_ns).floor().max(0.0) as usize).min(HBM_BINS - 1);
        let last = ((e / bin_ns).ceil() as usize).saturating_sub(1).clamp(first, HBM_BINS - 1);
        for (b, slot) in hbm.iter_mut().enumerate().take(last + 1).skip(first) {
            let share = if e > s {
                let (b0, b1) = (b as f64 * bin_ns, (b + 1) as f64 * bin_ns);
                (e.min(b1) - s.max(b0)).max(0.0) / (e - s)
            } else {
                1.0
            };
            *slot += bytes * share / bin_ns;
        }
    }
    // Spreading a transfer over its whole slice can put more bytes in a bin than HBM moves
    // in that time. Deliver them as a channel of the HBM bandwidth would: what a bin asks
    // beyond it waits for the next bin, so the track never shows more than the bandwidth and
    // still integrates to every byte moved.
    let per_bin = program.target.profile().hbm_bytes_per_ns * bin_ns;
    let mut waiting = 0.0f64;
    for slot in &mut hbm {
        let asked = *slot * bin_ns + waiting;
        let moved = asked.min(per_bin);
        waiting = asked - moved;
        *slot = moved / bin_ns;
    }
    if let Some(last) = hbm.last_mut() {
        // Only a model that moved more bytes than the bandwidth allows in its modeled time
        // leaves bytes waiting at the end; they are shown in the last bin, not dropped.
        *last += waiting / bin_ns;
    }
    Counters {
        sbuf: fills(program, report, Memory::Sbuf, &sbuf_regions),
        psum: fills(program, report, Memory::Psum, &banks),
        hbm,
        hbm_bin_ns: bin_ns,
    }
}
