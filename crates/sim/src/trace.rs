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

use std::collections::BTreeMap;

use bir::{BirInst, Engine, Op, Program};
use serde_json::{json, Value};

use crate::cycle::{CycleReport, Slice};

/// The track of the PE's weight loads.
const PE_WEIGHTS_TID: u32 = 16;
/// Non-PE engine `e` has track `ENGINE_TID_BASE + e.index()`.
const ENGINE_TID_BASE: u32 = 32;

/// The track (thread id and name) an instruction's slice goes on.
fn track(engine: Engine, op: &Op) -> (u32, String) {
    match (engine, op) {
        (Engine::Pe, Op::LoadStationary { .. } | Op::LoadStationarySparse { .. }) => {
            (PE_WEIGHTS_TID, "pe.weights".to_string())
        }
        (Engine::Pe, Op::MultiplyMoving { tile_position: p, .. }) if (p.row, p.col) != (0, 0) => {
            let cell = |x: u32| (x / 32).min(3);
            (cell(p.row) * 4 + cell(p.col), format!("pe.r{}c{}", p.row, p.col))
        }
        (Engine::Pe, _) => (0, "pe".to_string()),
        (e, _) => (ENGINE_TID_BASE + e.index() as u32, e.name()),
    }
}

fn waits_text(inst: &BirInst) -> String {
    inst.waits.iter().map(|w| format!("{}>={}", w.sem, w.value)).collect::<Vec<_>>().join(", ")
}

fn us(ns: f64) -> f64 {
    ns / 1e3
}

/// The instruction slice's args: access patterns, attributes, waits, signal, origin.
fn args(slice: &Slice, inst: &BirInst) -> Value {
    let mut args = serde_json::Map::new();
    args.insert("index".into(), json!(slice.index));
    for (name, ap) in inst.op.aps() {
        args.insert(name.into(), json!(ap.to_string()));
    }
    for (key, value) in inst.op.attributes() {
        args.insert(key.into(), json!(value));
    }
    if !inst.waits.is_empty() {
        args.insert("waits".into(), json!(waits_text(inst)));
    }
    if let Some(s) = inst.signal {
        args.insert("signal".into(), json!(s.to_string()));
    }
    if let Some(o) = inst.origin {
        args.insert("origin".into(), json!(o.to_string()));
    }
    Value::Object(args)
}

/// Chrome/Perfetto trace-event JSON of a modeled program (`report` must come from
/// [`model`](crate::model) of the same `program`; slices it does not match are skipped).
pub fn chrome_trace(program: &Program, report: &CycleReport) -> String {
    let mut out = String::with_capacity(256 * (report.slices.len() + 8));
    out.push_str("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let process = json!({
        "name": "process_name", "ph": "M", "pid": 0, "tid": 0,
        "args": { "name": format!("{} ({})", program.kernel_name, program.target) },
    });
    out.push_str(&process.to_string());
    let mut tracks: BTreeMap<u32, String> = BTreeMap::new();
    for slice in &report.slices {
        let Some(inst) = program.streams.get(slice.engine.index()).and_then(|s| s.get(slice.index)) else {
            continue;
        };
        let (tid, name) = track(slice.engine, &inst.op);
        tracks.entry(tid).or_insert(name);
        if slice.wait_ns > 0.0 {
            let wait = json!({
                "name": format!("wait {}", waits_text(inst)), "cat": "wait", "ph": "X", "pid": 0, "tid": tid,
                "ts": us(slice.start_ns - slice.wait_ns), "dur": us(slice.wait_ns),
            });
            out.push_str(",\n");
            out.push_str(&wait.to_string());
        }
        let event = json!({
            "name": inst.op.name(), "cat": slice.engine.name(), "ph": "X", "pid": 0, "tid": tid,
            "ts": us(slice.start_ns), "dur": us(slice.end_ns - slice.start_ns), "args": args(slice, inst),
        });
        out.push_str(",\n");
        out.push_str(&event.to_string());
    }
    for (tid, name) in &tracks {
        for meta in [
            json!({ "name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": { "name": name } }),
            json!({ "name": "thread_sort_index", "ph": "M", "pid": 0, "tid": tid, "args": { "sort_index": tid } }),
        ] {
            out.push_str(",\n");
            out.push_str(&meta.to_string());
        }
    }
    out.push_str("\n]}\n");
    out
}
