//! Chrome / Perfetto trace-event export of a [`CycleReport`](crate::CycleReport).
//!
//! The JSON object format (`{"traceEvents": [...]}`) with timestamps in microseconds: one
//! process for the kernel, one named thread (track) per engine and DMA queue that ran
//! something, each instruction an `"X"` slice named by its op with its access patterns,
//! attributes, waits and signal as args, and each semaphore wait that held an instruction
//! back an `"X"` slice `wait s3>=2` just before it on the same track.
//!
//! Trace viewers need the slices of one track to nest, and the PE overlaps work by design,
//! so the PE gets more than one track: `pe` for MMs at PE cell (0, 0) and transposes,
//! `pe.r64c0`-style tracks for MMs of row/column tiles elsewhere on the array, and
//! `pe.weights` for LoadStationary (which runs in the background of the MMs).
//!
//! Events are serialized straight into the output (no intermediate JSON tree): a trace of a
//! large GEMM has hundreds of thousands of them.

use std::fmt::{self, Display};

use bir::{BirInst, Engine, Op, Program, NUM_ENGINES};
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::cycle::{CycleReport, Slice};

/// PE array cells per side (32-row/column granularity of row and column tiles).
const PE_SIDE: u32 = 4;
/// The track of the PE's weight loads; MMs use tracks `0..PE_SIDE^2` by their cell.
const PE_WEIGHTS_TID: u32 = PE_SIDE * PE_SIDE;
/// Non-PE engine `e` has track `ENGINE_TID_BASE + e.index()`.
const ENGINE_TID_BASE: u32 = 32;
/// Track ids in use are below this.
const MAX_TID: usize = ENGINE_TID_BASE as usize + NUM_ENGINES;

/// The track (thread id) an instruction's slice goes on.
fn track(engine: Engine, op: &Op) -> u32 {
    match (engine, op) {
        (Engine::Pe, Op::LoadStationary { .. } | Op::LoadStationarySparse { .. }) => PE_WEIGHTS_TID,
        (Engine::Pe, Op::MultiplyMoving { tile_position: p, .. }) => {
            let cell = |x: u32| (x / 32).min(PE_SIDE - 1);
            cell(p.row) * PE_SIDE + cell(p.col)
        }
        (Engine::Pe, _) => 0,
        (e, _) => ENGINE_TID_BASE + e.index() as u32,
    }
}

/// The name of a track.
fn track_name(tid: u32) -> String {
    match tid {
        0 => "pe".to_string(),
        t if t < PE_WEIGHTS_TID => format!("pe.r{}c{}", t / PE_SIDE * 32, t % PE_SIDE * 32),
        PE_WEIGHTS_TID => "pe.weights".to_string(),
        t => Engine::from_index((t - ENGINE_TID_BASE) as usize).map_or_else(|| format!("track{t}"), Engine::name),
    }
}

/// Serializes a `Display` value as a JSON string without an intermediate `String`.
struct Text<T>(T);

impl<T: Display> Serialize for Text<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// An instruction's waits: `s3>=2, s5>=1`.
struct Waits<'a>(&'a BirInst);

impl Display for Waits<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, w) in self.0.waits.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{}>={}", w.sem, w.value)?;
        }
        Ok(())
    }
}

/// The name of a wait slice: `wait s3>=2`.
struct WaitName<'a>(&'a BirInst);

impl Display for WaitName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "wait {}", Waits(self.0))
    }
}

/// The instruction slice's args: stream index, access patterns, attributes, waits, signal,
/// origin.
struct Args<'a> {
    slice: &'a Slice,
    inst: &'a BirInst,
}

impl Serialize for Args<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let inst = self.inst;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("index", &self.slice.index)?;
        for (name, ap) in inst.op.aps() {
            map.serialize_entry(name, &Text(ap))?;
        }
        for (key, value) in inst.op.attributes() {
            map.serialize_entry(key, &value)?;
        }
        if !inst.waits.is_empty() {
            map.serialize_entry("waits", &Text(Waits(inst)))?;
        }
        if let Some(sem) = inst.signal {
            map.serialize_entry("signal", &Text(sem))?;
        }
        if let Some(origin) = inst.origin {
            map.serialize_entry("origin", &Text(origin))?;
        }
        map.end()
    }
}

/// One trace event.
#[derive(serde::Serialize)]
struct Event<N, A> {
    name: N,
    ph: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    args: A,
}

/// Metadata args: `{"name": ...}` or `{"sort_index": ...}`.
#[derive(serde::Serialize)]
struct Meta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sort_index: Option<u32>,
}

impl<'a> Meta<'a> {
    fn named(name: &'a str) -> Self {
        Meta { name: Some(name), sort_index: None }
    }
}

fn category(engine: Engine) -> &'static str {
    match engine {
        Engine::Pe => "pe",
        Engine::Act => "act",
        Engine::Dve => "dve",
        Engine::Pool => "pool",
        Engine::Sp => "sp",
        Engine::Dma(_) => "dma",
    }
}

/// Appends events to a JSON array.
struct Writer {
    out: Vec<u8>,
    first: bool,
}

impl Writer {
    fn push(&mut self, event: &impl Serialize) {
        let mark = self.out.len();
        if !self.first {
            self.out.extend_from_slice(b",\n");
        }
        // Serializing into a Vec only fails if a Serialize impl does, which ours do not;
        // should one ever, the event is dropped and the JSON stays valid.
        if serde_json::to_writer(&mut self.out, event).is_ok() {
            self.first = false;
        } else {
            self.out.truncate(mark);
        }
    }
}

pub(crate) fn us(ns: f64) -> f64 {
    ns / 1e3
}

/// Chrome/Perfetto trace-event JSON of a modeled program (`report` must come from
/// [`model`](crate::model) of the same `program`; slices it does not match are skipped).
pub fn chrome_trace(program: &Program, report: &CycleReport) -> String {
    let mut w = Writer { out: Vec::with_capacity(300 * (report.slices.len() + 8)), first: true };
    w.out.extend_from_slice(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let process = format!("{} ({})", program.kernel_name, program.target);
    w.push(&Event {
        name: "process_name",
        ph: "M",
        cat: None,
        pid: 0,
        tid: 0,
        ts: None,
        dur: None,
        args: Meta::named(&process),
    });
    let mut used = [false; MAX_TID];
    for slice in &report.slices {
        let Some(inst) = program.streams.get(slice.engine.index()).and_then(|s| s.get(slice.index)) else {
            continue;
        };
        let tid = track(slice.engine, &inst.op);
        if let Some(u) = used.get_mut(tid as usize) {
            *u = true;
        }
        if slice.wait_ns > 0.0 {
            w.push(&Event {
                name: Text(WaitName(inst)),
                ph: "X",
                cat: Some("wait"),
                pid: 0,
                tid,
                ts: Some(us(slice.start_ns - slice.wait_ns)),
                dur: Some(us(slice.wait_ns)),
                args: Meta { name: None, sort_index: None },
            });
        }
        w.push(&Event {
            name: inst.op.name(),
            ph: "X",
            cat: Some(category(slice.engine)),
            pid: 0,
            tid,
            ts: Some(us(slice.start_ns)),
            dur: Some(us(slice.end_ns - slice.start_ns)),
            args: Args { slice, inst },
        });
    }
    for (tid, _) in used.iter().enumerate().filter(|(_, u)| **u) {
        let tid = tid as u32;
        let name = track_name(tid);
        w.push(&Event {
            name: "thread_name",
            ph: "M",
            cat: None,
            pid: 0,
            tid,
            ts: None,
            dur: None,
            args: Meta::named(&name),
        });
        let sort = Meta { name: None, sort_index: Some(tid) };
        w.push(&Event { name: "thread_sort_index", ph: "M", cat: None, pid: 0, tid, ts: None, dur: None, args: sort });
    }
    w.out.extend_from_slice(b"\n]}\n");
    String::from_utf8(w.out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
