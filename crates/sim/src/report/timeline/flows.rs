//! Which signal released each semaphore wait, replayed exactly as the cycle model counts.
//!
//! A signal takes effect when its instruction retires, and an engine retires in order: at
//! the latest end of its instructions so far. Count `v` of a semaphore is reached by its
//! `v`-th signal in time order (ties in commit order), so a wait `s >= v` was released by
//! the instruction that gave `s` its `v`-th signal.
//!
//! Both [`flows`] (every wait, for the trace) and [`released_by`] (only the binding one, for
//! the critical path) replay the signals once into per-semaphore logs laid out in one table
//! sized from a count of the signals first, so a large program's logs are one allocation,
//! written once and never regrown.

use bir::{BirInst, Program};

use crate::cycle::CycleReport;

/// One wait of one instruction and the instruction whose signal satisfied it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flow {
    /// The waiting instruction (index into `report.slices`).
    pub consumer: usize,
    /// Which of its waits.
    pub wait: usize,
    /// The signalling instruction (index into `report.slices`).
    pub producer: usize,
    /// The wait that held the consumer longest (the one that released it).
    pub binding: bool,
}

/// Per semaphore: (retire time, slice index) of each signal, sorted by time, ties in commit
/// order; all semaphores' logs in one table (semaphore `s` from `base[s]`, `len[s]` long).
struct SignalLog {
    base: Vec<usize>,
    len: Vec<usize>,
    entries: Vec<(f64, usize)>,
}

impl SignalLog {
    /// The entry that gave semaphore `sem` its `value`-th signal (`value >= 1`).
    fn get(&self, sem: usize, value: usize) -> Option<(f64, usize)> {
        let i = value.checked_sub(1)?;
        if i >= *self.len.get(sem)? {
            return None;
        }
        self.entries.get(self.base.get(sem)? + i).copied()
    }
}

/// The stream of `program` slice `i` of a report ran on: its engine's, or for a chip's
/// merged program, `streams[i]` (the core's streams follow the previous cores').
pub(crate) fn stream_of(streams: Option<&[usize]>, i: usize, slice: &crate::cycle::Slice) -> usize {
    streams.and_then(|s| s.get(i).copied()).unwrap_or_else(|| slice.engine.index())
}

/// The signal logs of a modeled program.
fn signal_log(program: &Program, report: &CycleReport, streams: Option<&[usize]>) -> SignalLog {
    let sems = program.semaphores.len();
    let mut base = vec![0usize; sems + 1];
    for sem in program.streams.iter().flatten().filter_map(|inst| inst.signal) {
        if let Some(n) = base.get_mut(sem.0 as usize + 1) {
            *n += 1;
        }
    }
    for s in 0..sems {
        base[s + 1] += base[s];
    }
    let mut log = SignalLog { entries: vec![(0.0, 0); base[sems]], base, len: vec![0; sems] };
    let mut retired = vec![f64::NEG_INFINITY; program.streams.len()];
    for (i, slice) in report.slices.iter().enumerate() {
        let e = stream_of(streams, i, slice);
        let Some(r) = retired.get_mut(e) else { continue };
        *r = r.max(slice.end_ns);
        let at = *r;
        let Some(sem) = program.streams.get(e).and_then(|s| s.get(slice.index)).and_then(|inst| inst.signal) else {
            continue;
        };
        let s = sem.0 as usize;
        let (Some(&start), Some(&end), Some(n)) = (log.base.get(s), log.base.get(s + 1), log.len.get_mut(s)) else {
            continue;
        };
        // A slice signals once, so a semaphore's region has room for each of its signals.
        let Some(region) = log.entries.get_mut(start..end).and_then(|r| r.get_mut(..=*n)) else { continue };
        let last = *n;
        region[last] = (at, i);
        // An engine retires in order, so the signals of one engine's semaphore append.
        if last > 0 && region[last - 1].0 > at {
            let pos = region[..last].partition_point(|&(t, _)| t <= at);
            region[pos..].rotate_right(1);
        }
        *n += 1;
    }
    log
}

/// Each wait of `inst` with a count above zero that the log can pair: (which wait, the time
/// its count was reached, the signalling slice).
fn paired<'a>(signals: &'a SignalLog, inst: &'a BirInst) -> impl Iterator<Item = (usize, f64, usize)> + 'a {
    inst.waits.iter().enumerate().filter(|(_, w)| w.value > 0).filter_map(|(wait, w)| {
        let (t, producer) = signals.get(w.sem.0 as usize, w.value as usize)?;
        Some((wait, t, producer))
    })
}

/// The instruction of `program` behind a slice (on stream `stream`).
fn inst_of<'a>(program: &'a Program, stream: usize, slice: &crate::cycle::Slice) -> Option<&'a BirInst> {
    program.streams.get(stream).and_then(|s| s.get(slice.index))
}

/// Every wait with a count above zero, paired with the slice whose signal reached it.
/// Waits the report cannot pair (a report of another program) are left out.
pub(crate) fn flows(program: &Program, report: &CycleReport) -> Vec<Flow> {
    let signals = signal_log(program, report, None);
    let mut out = Vec::new();
    for (consumer, slice) in report.slices.iter().enumerate() {
        let Some(inst) = inst_of(program, slice.engine.index(), slice) else { continue };
        let first = out.len();
        let mut latest: Option<(f64, usize)> = None;
        for (wait, t, producer) in paired(&signals, inst) {
            if latest.is_none_or(|(lt, _)| t > lt) {
                latest = Some((t, out.len()));
            }
            out.push(Flow { consumer, wait, producer, binding: false });
        }
        if let Some((_, at)) = latest {
            if let Some(f) = out.get_mut(at) {
                f.binding = at >= first;
            }
        }
    }
    out
}

/// No slice, in the u32 slice tables of [`released_by`] and the critical path.
pub(crate) const NONE: u32 = u32::MAX;

/// Per slice, the slice whose signal released it ([`NONE`] if none): the producer of its
/// binding wait (the [`Flow`] of [`flows`] marked `binding`), without listing every flow.
pub(crate) fn released_by(program: &Program, report: &CycleReport, streams: Option<&[usize]>) -> Vec<u32> {
    let signals = signal_log(program, report, streams);
    report
        .slices
        .iter()
        .enumerate()
        .map(|(i, slice)| {
            let Some(inst) = inst_of(program, stream_of(streams, i, slice), slice) else { return NONE };
            let mut latest: Option<(f64, usize)> = None;
            for (_, t, producer) in paired(&signals, inst) {
                if latest.is_none_or(|(lt, _)| t > lt) {
                    latest = Some((t, producer));
                }
            }
            latest.and_then(|(_, producer)| u32::try_from(producer).ok()).unwrap_or(NONE)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use bir::{Engine, HwAp, Op, SemId, Wait};
    use penguin::{DType, Dim, Memory, Target};

    use super::*;
    use crate::cycle::Slice;

    /// Two engines signal one semaphore and the later commit retires first: count 1 is the
    /// earlier retirement's, whatever the commit order.
    #[test]
    fn a_signal_that_retires_earlier_takes_the_lower_count() {
        let ap = HwAp::on_chip(Memory::Sbuf, DType::Fp32, 0, 1, 0, vec![Dim::new(1, 4)]);
        let inst = |waits: Vec<Wait>, signal| BirInst {
            op: Op::Memset { dst: ap.clone(), value: 0.0 },
            waits,
            signal,
            origin: None,
        };
        let mut program = Program::new("k", Target::Trn2);
        program.semaphores = vec!["s".into()];
        let s = Some(SemId(0));
        program.streams[Engine::Act.index()].push(inst(vec![], s));
        program.streams[Engine::Dve.index()].push(inst(vec![], s));
        let wait = |value| vec![Wait { sem: SemId(0), value }];
        program.streams[Engine::Pool.index()].extend([inst(wait(1), None), inst(wait(2), None)]);
        let slice = |engine, index, start_ns, end_ns| Slice { engine, index, start_ns, end_ns, wait_ns: 1.0 };
        let slices = vec![
            slice(Engine::Act, 0, 0.0, 10.0),
            slice(Engine::Dve, 0, 1.0, 5.0),
            slice(Engine::Pool, 0, 6.0, 7.0),
            slice(Engine::Pool, 1, 11.0, 12.0),
        ];
        let report = CycleReport {
            total_ns: 12.0,
            engine_busy_ns: vec![0.0; bir::NUM_ENGINES],
            hbm_bytes: 0,
            matmul_flops: 0.0,
            peak_flops_per_ns: 1.0,
            slices,
        };
        let pairs: Vec<(usize, usize)> = flows(&program, &report).iter().map(|f| (f.consumer, f.producer)).collect();
        assert_eq!(pairs, vec![(2, 1), (3, 0)]);
        assert_eq!(released_by(&program, &report, None), vec![NONE, NONE, 1, 0]);
    }

    /// `released_by` is `flows` reduced to the producer of each binding wait.
    #[test]
    fn released_by_is_the_producer_of_each_binding_flow() {
        let mut binding = 0;
        for src in [
            include_str!("../../../../../examples/gemm_4x16x8.pir"),
            include_str!("../../../../../examples/offloaded_memcast.pir"),
            include_str!("../../../../../examples/gather.pir"),
        ] {
            let f = penguin::parse::parse(src).unwrap();
            let program = bir::lower(penguin::verify(&f).unwrap(), Target::Trn2).unwrap();
            let report = crate::model(&program).unwrap();
            let flows = flows(&program, &report);
            let mut expected = vec![NONE; report.slices.len()];
            for f in flows.iter().filter(|f| f.binding) {
                expected[f.consumer] = f.producer as u32;
            }
            assert_eq!(released_by(&program, &report, None), expected);
            binding += flows.iter().filter(|f| f.binding).count();
        }
        assert!(binding > 0, "the GEMM has waits");
    }
}
