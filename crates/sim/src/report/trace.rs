//! Chrome / Perfetto trace-event export of a [`CycleReport`](crate::CycleReport).
//!
//! The JSON object format (`{"traceEvents": [...]}`) with timestamps in microseconds: one
//! process for the kernel, one named thread (track) per engine and DMA queue that ran
//! something, each instruction an `"X"` slice named by its op. Its args hold its access
//! patterns, attributes, waits and signal, the tensors it reads and writes (`a -> a0`), the
//! output tile rows `m`, columns `n` and the `k_step`s it serves (see
//! [`KernelInfo`](crate::KernelInfo)), and its source line (from the `KernelInfo`, else the
//! program's source location of its origin) or planner step.
//!
//! Each semaphore wait that held an instruction back is an `"X"` slice named `wait` just
//! before it on the same track, with the semaphores and counts in its args and the
//! instruction whose signal released it. Every wait is also a flow arrow (`"s"` / `"f"`
//! events) from the slice that gave the semaphore the awaited count to the waiting slice.
//! Counter tracks (`"C"` events) show the SBUF bytes per partition in use per buffer, the
//! PSUM banks live and the HBM rate in GB/s.
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
use crate::report::timeline::counters::{counters, Counters};
use crate::report::timeline::flows::{flows, Flow};
use crate::report::timeline::labels::{labels, Names, SliceLabel};
use crate::report::timeline::{KernelInfo, SbufBuffer};

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

/// The context every slice's args draw on.
struct Context<'a> {
    program: &'a Program,
    report: &'a CycleReport,
    info: &'a KernelInfo,
    buffers: &'a [SbufBuffer],
    labels: &'a [SliceLabel],
}

/// The instruction slice's args: stream index, access patterns, attributes, waits, signal,
/// origin, then what it serves: tensors, tile, K step and source line.
struct Args<'a> {
    at: usize,
    slice: &'a Slice,
    inst: &'a BirInst,
    cx: &'a Context<'a>,
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
        if let Some(label) = self.cx.labels.get(self.at) {
            if !label.reads.is_empty() || label.writes.is_some() {
                let names = Names { label, program: self.cx.program, buffers: self.cx.buffers };
                map.serialize_entry("tensor", &Text(names))?;
            }
            if let Some(m) = label.tile.m {
                map.serialize_entry("m", &Text(m))?;
            }
            if let Some(n) = label.tile.n {
                map.serialize_entry("n", &Text(n))?;
            }
            if let Some(k) = label.tile.k {
                map.serialize_entry("k_step", &Text(k))?;
            }
        }
        let line = self.cx.info.source.as_ref().and_then(|src| {
            let line = src.lines.get(self.slice.engine.index())?.get(self.slice.index).copied().flatten()?;
            Some((src.file.as_str(), line))
        });
        // A line the producer gave wins; else the source location that lowering carried
        // from the instruction's origin (a traced kernel's `file.py:line`); else the origin
        // is a planner step.
        match (line, self.cx.program.srcloc(inst), inst.origin) {
            (Some((file, line)), _, _) => map.serialize_entry("source", &Text(format_args!("{file}:{line}")))?,
            (None, Some(loc), _) => map.serialize_entry("source", loc)?,
            (None, None, Some(origin)) => map.serialize_entry("planner_step", &Text(origin))?,
            (None, None, None) => {}
        }
        map.end()
    }
}

/// A wait slice's args: the semaphores and counts, and who released it.
struct WaitArgs<'a> {
    inst: &'a BirInst,
    released_by: Option<&'a Slice>,
    program: &'a Program,
}

impl Serialize for WaitArgs<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("waits", &Text(Waits(self.inst)))?;
        if let Some(p) = self.released_by {
            let op =
                self.program.streams.get(p.engine.index()).and_then(|st| st.get(p.index)).map_or("?", |i| i.op.name());
            map.serialize_entry("released_by", &Text(format_args!("{} {}[{}]", op, p.engine, p.index)))?;
        }
        map.end()
    }
}

/// A flow event: one end of a wait's arrow.
#[derive(serde::Serialize)]
struct FlowEvent {
    name: String,
    cat: &'static str,
    ph: &'static str,
    id: usize,
    pid: u32,
    tid: u32,
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
}

/// A counter sample.
#[derive(serde::Serialize)]
struct CounterEvent<'a, V> {
    name: &'a str,
    ph: &'static str,
    pid: u32,
    ts: f64,
    args: V,
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
    /// The process (track group) of the events: the core, on a chip.
    pid: u32,
    /// Added to flow ids, so that the cores' arrows stay apart.
    flow_base: usize,
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
    chrome_trace_with(program, report, &KernelInfo::default())
}

/// [`chrome_trace`] in the kernel's own terms: `info` names the process, the SBUF buffers,
/// the GEMM's tiles and the source lines (see [`KernelInfo`]).
pub fn chrome_trace_with(program: &Program, report: &CycleReport, info: &KernelInfo) -> String {
    let mut w = Writer { out: Vec::with_capacity(400 * (report.slices.len() + 8)), first: true, pid: 0, flow_base: 0 };
    w.out.extend_from_slice(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    write_program(&mut w, program, report, info);
    w.out.extend_from_slice(b"\n]}\n");
    String::from_utf8(w.out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The trace of a chip: each core's timeline as its own process (track group, `pid` = the
/// core), titled by `infos[core]`; its flows and counters are the core's own. The cores'
/// HBM budget is shared: the summary of [`ChipReport`](crate::ChipReport) says how busy it was.
pub fn chrome_trace_chip(chip: &bir::Chip, report: &crate::ChipReport, infos: &[KernelInfo]) -> String {
    let slices: usize = report.cores.iter().map(|c| c.slices.len()).sum();
    let mut w = Writer { out: Vec::with_capacity(400 * (slices + 8)), first: true, pid: 0, flow_base: 0 };
    w.out.extend_from_slice(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    for (core, (program, cycle)) in chip.cores.iter().zip(&report.cores).enumerate() {
        let fallback = KernelInfo::default();
        let info = infos.get(core).unwrap_or(&fallback);
        w.pid = core as u32;
        write_program(&mut w, program, cycle, info);
        w.flow_base += cycle.slices.len() * 4 + 1;
    }
    w.out.extend_from_slice(b"\n]}\n");
    String::from_utf8(w.out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Every event of one program's timeline, as process `w.pid`.
fn write_program(w: &mut Writer, program: &Program, report: &CycleReport, info: &KernelInfo) {
    let pid = w.pid;
    let buffers = info.buffers_of(program);
    let labels = labels(program, report, &buffers, info.gemm.as_ref());
    let cx = Context { program, report, info, buffers: &buffers, labels: &labels };
    let flows = flows(program, report);
    let counters = counters(program, report, &buffers);

    let process = match &info.title {
        Some(t) => t.clone(),
        None => format!("{} ({})", program.kernel_name, program.target),
    };
    w.push(&Event {
        name: "process_name",
        ph: "M",
        cat: None,
        pid,
        tid: 0,
        ts: None,
        dur: None,
        args: Meta::named(&process),
    });
    // The flow that released each slice's wait, if any.
    let mut released_by: Vec<Option<usize>> = vec![None; report.slices.len()];
    for f in flows.iter().filter(|f| f.binding) {
        if let Some(slot) = released_by.get_mut(f.consumer) {
            *slot = Some(f.producer);
        }
    }
    let mut used = [false; MAX_TID];
    let mut tids = vec![0u32; report.slices.len()];
    for (at, slice) in report.slices.iter().enumerate() {
        let Some(inst) = program.streams.get(slice.engine.index()).and_then(|s| s.get(slice.index)) else {
            continue;
        };
        let tid = track(slice.engine, &inst.op);
        tids[at] = tid;
        if let Some(u) = used.get_mut(tid as usize) {
            *u = true;
        }
        if slice.wait_ns > 0.0 {
            let released_by = released_by[at].and_then(|p| report.slices.get(p));
            w.push(&Event {
                name: "wait",
                ph: "X",
                cat: Some("wait"),
                pid,
                tid,
                ts: Some(us(slice.start_ns - slice.wait_ns)),
                dur: Some(us(slice.wait_ns)),
                args: WaitArgs { inst, released_by, program },
            });
        }
        w.push(&Event {
            name: inst.op.name(),
            ph: "X",
            cat: Some(category(slice.engine)),
            pid,
            tid,
            ts: Some(us(slice.start_ns)),
            dur: Some(us(slice.end_ns - slice.start_ns)),
            args: Args { at, slice, inst, cx: &cx },
        });
    }
    write_flows(w, &cx, &flows, &tids);
    write_counters(w, &buffers, &counters, report.total_ns);
    for (tid, _) in used.iter().enumerate().filter(|(_, u)| **u) {
        let tid = tid as u32;
        let name = track_name(tid);
        w.push(&Event {
            name: "thread_name",
            ph: "M",
            cat: None,
            pid,
            tid,
            ts: None,
            dur: None,
            args: Meta::named(&name),
        });
        let sort = Meta { name: None, sort_index: Some(tid) };
        w.push(&Event { name: "thread_sort_index", ph: "M", cat: None, pid, tid, ts: None, dur: None, args: sort });
    }
}

/// The middle of a slice, in us: a flow end binds to the slice enclosing its time.
fn middle(slice: &Slice) -> f64 {
    us((slice.start_ns + slice.end_ns) / 2.0)
}

/// One arrow per wait, from the signalling slice to the waiting one.
fn write_flows(w: &mut Writer, cx: &Context<'_>, flows: &[Flow], tids: &[u32]) {
    let (pid, base) = (w.pid, w.flow_base);
    for (id, f) in flows.iter().enumerate() {
        let (Some(producer), Some(consumer)) = (cx.report.slices.get(f.producer), cx.report.slices.get(f.consumer))
        else {
            continue;
        };
        let Some(wait) = cx
            .program
            .streams
            .get(consumer.engine.index())
            .and_then(|s| s.get(consumer.index))
            .and_then(|i| i.waits.get(f.wait))
        else {
            continue;
        };
        let name = format!("{}>={}", wait.sem, wait.value);
        let tid = |i: usize| tids.get(i).copied().unwrap_or(0);
        w.push(&FlowEvent {
            name: name.clone(),
            cat: "semaphore",
            ph: "s",
            id: base + id,
            pid,
            tid: tid(f.producer),
            ts: middle(producer),
            bp: None,
        });
        w.push(&FlowEvent {
            name,
            cat: "semaphore",
            ph: "f",
            id: base + id,
            pid,
            tid: tid(f.consumer),
            ts: middle(consumer),
            bp: Some("e"),
        });
    }
}

/// Counter tracks: SBUF bytes per partition per buffer, PSUM banks live, HBM GB/s.
fn write_counters(w: &mut Writer, buffers: &[SbufBuffer], c: &Counters, total_ns: f64) {
    let pid = w.pid;
    #[derive(serde::Serialize)]
    struct Bytes {
        bytes_per_partition: u64,
    }
    #[derive(serde::Serialize)]
    struct Banks {
        banks: u32,
    }
    #[derive(serde::Serialize)]
    struct Rate {
        #[serde(rename = "GB/s")]
        gb_per_s: f64,
    }
    for (buffer, fills) in buffers.iter().zip(&c.sbuf) {
        if fills.is_empty() {
            continue;
        }
        let name = format!("sbuf {}", buffer.name);
        w.push(&CounterEvent { name: &name, ph: "C", pid, ts: 0.0, args: Bytes { bytes_per_partition: 0 } });
        for f in fills {
            let at = |t: f64, v: u64| CounterEvent {
                name: &name,
                ph: "C",
                pid,
                ts: us(t),
                args: Bytes { bytes_per_partition: v },
            };
            w.push(&at(f.start, f.bytes));
            w.push(&at(f.end, 0));
        }
    }
    let name = "psum banks live";
    w.push(&CounterEvent { name, ph: "C", pid, ts: 0.0, args: Banks { banks: 0 } });
    for (t, banks) in c.psum_live() {
        w.push(&CounterEvent { name, ph: "C", pid, ts: us(t), args: Banks { banks } });
    }
    let name = "hbm GB/s";
    if total_ns > 0.0 {
        for (b, rate) in c.hbm.iter().enumerate() {
            let ts = us(b as f64 * c.hbm_bin_ns);
            w.push(&CounterEvent { name, ph: "C", pid, ts, args: Rate { gb_per_s: *rate } });
        }
        w.push(&CounterEvent { name, ph: "C", pid, ts: us(total_ns), args: Rate { gb_per_s: 0.0 } });
    }
}
