//! Reading a Chrome trace back.

use bir::Program;
use sim::{chrome_trace, CycleReport};

/// The trace of `r` as JSON.
pub fn trace_json(p: &Program, r: &CycleReport) -> serde_json::Value {
    serde_json::from_str(&chrome_trace(p, r)).expect("the trace is valid JSON")
}

/// The sorted thread (track) names of a trace.
pub fn thread_names(trace: &serde_json::Value) -> Vec<String> {
    let events = trace["traceEvents"].as_array().unwrap();
    let mut names: Vec<String> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}
