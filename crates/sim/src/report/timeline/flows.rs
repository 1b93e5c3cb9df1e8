//! Which signal released each semaphore wait, replayed exactly as the cycle model counts.
//!
//! A signal takes effect when its instruction retires, and an engine retires in order: at
//! the latest end of its instructions so far. Count `v` of a semaphore is reached by its
//! `v`-th signal in time order (ties in commit order), so a wait `s >= v` was released by
//! the instruction that gave `s` its `v`-th signal.

use bir::Program;

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

/// Every wait with a count above zero, paired with the slice whose signal reached it.
/// Waits the report cannot pair (a report of another program) are left out.
pub(crate) fn flows(program: &Program, report: &CycleReport) -> Vec<Flow> {
    let mut retired = vec![f64::NEG_INFINITY; program.streams.len()];
    // Per semaphore: (retire time, slice index), sorted by time, ties in commit order.
    let mut signals: Vec<Vec<(f64, usize)>> = vec![Vec::new(); program.semaphores.len()];
    for (i, slice) in report.slices.iter().enumerate() {
        let e = slice.engine.index();
        let Some(r) = retired.get_mut(e) else { continue };
        *r = r.max(slice.end_ns);
        let at = *r;
        let Some(sem) = program.streams.get(e).and_then(|s| s.get(slice.index)).and_then(|inst| inst.signal) else {
            continue;
        };
        if let Some(times) = signals.get_mut(sem.0 as usize) {
            let pos = times.partition_point(|&(t, _)| t <= at);
            times.insert(pos, (at, i));
        }
    }
    let mut out = Vec::new();
    for (consumer, slice) in report.slices.iter().enumerate() {
        let Some(inst) = program.streams.get(slice.engine.index()).and_then(|s| s.get(slice.index)) else {
            continue;
        };
        let first = out.len();
        let mut latest: Option<(f64, usize)> = None;
        for (wait, w) in inst.waits.iter().enumerate() {
            if w.value == 0 {
                continue;
            }
            let Some(&(t, producer)) = signals.get(w.sem.0 as usize).and_then(|s| s.get(w.value as usize - 1)) else {
                continue;
            };
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
