//! Benchmarks of the cycle model on the lowered program of a 4096x8192x8192 bf16 GEMM
//! (`--lhs-transposed`, trn2) under the naive and blocked-mn schedules, and of the trace
//! export of the blocked-mn one.
#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "a bench of known-good programs; it prints each program's size and modeled figures once"
)]

use std::hint::black_box;
use std::time::Duration;

use codegen::{plan_gemm, GemmConfig, Schedule};
use criterion::{criterion_group, criterion_main, Criterion};
use penguin::{DType, Target};

fn program(schedule: Schedule) -> bir::Program {
    let mut cfg = GemmConfig::new(4096, 8192, 8192, DType::Bf16, Target::Trn2);
    cfg.lhs_transposed = true;
    cfg.schedule = schedule;
    let plan = plan_gemm(&cfg).unwrap();
    bir::lower(penguin::verify(&plan.function).unwrap(), cfg.target).unwrap()
}

fn bench_model(c: &mut Criterion) {
    let mut group = c.benchmark_group("cycle_model_4096x8192x8192");
    group.sample_size(10).measurement_time(Duration::from_secs(10)).warm_up_time(Duration::from_secs(2));
    for (name, schedule) in [("naive", Schedule::Naive), ("blocked_mn", Schedule::BlockedMn)] {
        let p = program(schedule);
        let r = sim::model(&p).unwrap();
        let busy = r.engine_busy_summary();
        eprintln!(
            "{name}: {} instructions, modeled {:.1} us, hfu {:.3}, hbm {} bytes, busy pe {:.2} act {:.2} dve {:.2} pool {:.2} dma {:.2}",
            p.num_insts(),
            r.total_us(),
            r.hfu(),
            r.hbm_bytes,
            busy.pe,
            busy.act,
            busy.dve,
            busy.pool,
            busy.dma
        );
        group.bench_function(name, |b| b.iter(|| black_box(sim::model(black_box(&p)).unwrap().total_ns)));
        if schedule == Schedule::BlockedMn {
            group.bench_function("trace_blocked_mn", |b| b.iter(|| black_box(sim::chrome_trace(&p, &r).len())));
        }
    }
    group.finish();
}

criterion_group!(benches, bench_model);
criterion_main!(benches);
