//! Benchmarks of the cycle model on the lowered programs of a 4096x8192x8192 bf16 GEMM
//! (`--lhs-transposed`, trn2) under the fixed schedules, and of the trace export of the
//! blocked-mn one. Each program's size and modeled figures are printed once.
#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "a bench of known-good programs; it prints each program's size and modeled figures once"
)]

use std::hint::black_box;
use std::time::Duration;

use codegen::{plan_gemm, BlockSizes, GemmConfig, Schedule};
use criterion::{criterion_group, criterion_main, Criterion};
use penguin::{DType, Target};

/// The lowered program of the GEMM under a schedule, or why it could not be planned.
fn program(schedule: Schedule, blocks: BlockSizes) -> Result<bir::Program, String> {
    let mut cfg = GemmConfig::new(4096, 8192, 8192, DType::Bf16, Target::Trn2);
    cfg.lhs_transposed = true;
    cfg.schedule = schedule;
    cfg.blocks = blocks;
    let plan = plan_gemm(&cfg).map_err(|e| e.to_string())?;
    let verified = penguin::verify(&plan.function).map_err(|e| format!("{e:?}"))?;
    bir::lower(verified, cfg.target).map_err(|e| e.to_string())
}

fn bench_model(c: &mut Criterion) {
    let mut group = c.benchmark_group("cycle_model_4096x8192x8192");
    group.sample_size(10).measurement_time(Duration::from_secs(10)).warm_up_time(Duration::from_secs(2));
    let blocks = |m, n, k| BlockSizes { m, n, k };
    for (name, schedule, b) in [
        ("naive", Schedule::Naive, blocks(128, 512, 128)),
        ("hoisted", Schedule::Hoisted, blocks(128, 512, 128)),
        ("blocked_mn", Schedule::BlockedMn, blocks(256, 512, 128)),
        ("blocked_mnk", Schedule::BlockedMnk, blocks(512, 1024, 1024)),
    ] {
        let p = match program(schedule, b) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("{name}: not planned: {e}");
                continue;
            }
        };
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
        group.bench_function(name, |bench| bench.iter(|| black_box(sim::model(black_box(&p)).unwrap().total_ns)));
        if schedule == Schedule::BlockedMn {
            group.bench_function("trace_blocked_mn", |bench| bench.iter(|| black_box(sim::chrome_trace(&p, &r).len())));
        }
    }
    group.finish();
}

criterion_group!(benches, bench_model);
criterion_main!(benches);
