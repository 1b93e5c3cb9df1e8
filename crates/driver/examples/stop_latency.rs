//! How long a run takes to stop once its [`driver::Cancel`] is set, in each long phase: a
//! large GEMM is run, the flag is set 50 ms into the phase asked for (the driver names each
//! phase as it starts), and the time from `cancel()` to `gemm` returning `Interrupted` is
//! printed. `cargo run --release -p driver --example stop_latency`.
#![expect(clippy::print_stdout, clippy::unwrap_used, reason = "a measurement printed for people")]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codegen::Schedule;
use driver::{BlockRequest, Cancel, DriverError, GemmRequest};
use penguin::{DType, Target};

/// Run `req`, set its flag 50 ms after `phase` starts; the latency of the stop.
fn latency(mut req: GemmRequest, phase: &'static str) -> Option<Duration> {
    let cancel = Cancel::new();
    let set_at: Arc<Mutex<Option<Instant>>> = Arc::default();
    let (c, at) = (cancel.clone(), Arc::clone(&set_at));
    req.options.cancel = Some(cancel);
    req.options.progress = Some(Arc::new(move |p: &str| {
        if p.starts_with(phase) {
            let (c, at) = (c.clone(), Arc::clone(&at));
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                *at.lock().unwrap() = Some(Instant::now());
                c.cancel();
            });
        }
    }));
    let result = driver::gemm(&req, None);
    let end = Instant::now();
    let set = (*set_at.lock().unwrap())?;
    matches!(result, Err(DriverError::Interrupted)).then(|| end - set)
}

fn main() {
    let big_with = |m, k, n, schedule, simulate, phase_blocks: bool| {
        let mut r = GemmRequest::new(m, k, n, DType::Bf16, Target::Trn2);
        r.schedule = schedule;
        r.options.simulate = simulate;
        // Fixed blocks: planning, lowering and modeling are then phases of their own (with
        // its blocks searched, an explicit schedule lowers and models inside the search).
        if schedule != Schedule::Auto && phase_blocks {
            let k = (schedule == Schedule::BlockedMnk).then_some(512);
            r.blocks = BlockRequest { m: Some(512), n: Some(1024), k };
        }
        r
    };
    let big = |m, k, n, schedule, simulate| big_with(m, k, n, schedule, simulate, true);
    let cases = [
        ("plan", big(8192, 8192, 8192, Schedule::BlockedMn, false)),
        ("plan (block search)", big_with(4096, 4096, 4096, Schedule::BlockedMnk, false, false)),
        ("plan (auto search)", big(4096, 4096, 4096, Schedule::Auto, false)),
        ("lower", big(8192, 8192, 8192, Schedule::BlockedMn, false)),
        ("model", big(8192, 8192, 8192, Schedule::BlockedMn, false)),
        ("plan (extrapolated)", big(65536, 65536, 65536, Schedule::BlockedMnk, false)),
        ("plan (auto search on a proxy", big(65536, 65536, 65536, Schedule::Auto, false)),
        ("simulate", big(2048, 2048, 2048, Schedule::BlockedMn, true)),
        ("check", big(4096, 4096, 4096, Schedule::BlockedMn, true)),
    ];
    for (phase, req) in cases {
        match latency(req, phase) {
            Some(d) => println!("{phase:<32} stopped {:>8.1} ms after the flag was set", d.as_secs_f64() * 1e3),
            None => println!("{phase:<32} not reached or not interrupted"),
        }
    }
}
