//! Benchmarks of the functional simulator and the planner: simulating the planned 1024^3
//! bf16 GEMM beside a plain f32 GEMM of the same shape from the same GEMM crate
//! (`matrixmultiply`, through `sim::gemm_f32`), planning + lowering a 4096x8192x8192 GEMM
//! whole, and planning + lowering + modeling it in loops for every explicit schedule (the
//! planning target of issue 28: < 10 ms). `cargo xtask bench` prints the ratio and the
//! targets.
#![expect(clippy::unwrap_used, reason = "a bench of known-good programs")]

use std::hint::black_box;
use std::time::Duration;

use codegen::{GemmConfig, Schedule};
use criterion::{criterion_group, criterion_main, Criterion};
use penguin::{DType, Target};
use sim::Simulator;

/// Plan `cfg` with its blocks as given.
fn plan_gemm(cfg: &codegen::GemmConfig) -> Result<codegen::GemmPlan, codegen::CodegenError> {
    codegen::plan(&codegen::PlanRequest::new(cfg), &codegen::default_builder).map(|p| p.plan)
}

const SIZE: usize = 1024;

fn data(seed: usize) -> Vec<f32> {
    (0..SIZE * SIZE).map(|i| ((i * 2654435761 + seed) % 2001) as f32 / 1000.0 - 1.0).collect()
}

fn program(cfg: &GemmConfig) -> bir::Program {
    let plan = plan_gemm(cfg).unwrap();
    bir::lower(penguin::verify(&plan.function).unwrap(), cfg.target).unwrap()
}

fn bench_gemm(c: &mut Criterion) {
    // A bf16 GEMM: A and B are bf16 in HBM (written rounded), loaded without a cast.
    let mut cfg = GemmConfig::new(SIZE as u64, SIZE as u64, SIZE as u64, DType::Bf16, Target::Trn2);
    cfg.schedule = Schedule::BlockedMn;
    cfg.input_dtype = DType::Bf16;
    let p = program(&cfg);
    let (a, b) = (data(1), data(2));
    let mut group = c.benchmark_group("gemm_1024");
    group.sample_size(10).measurement_time(Duration::from_secs(8));
    group.bench_function("simulate_bf16", |bench| {
        bench.iter(|| {
            let mut s = Simulator::new(&p);
            s.write_hbm_f32("a", &a).unwrap();
            s.write_hbm_f32("b", &b).unwrap();
            black_box(s.run().unwrap().instructions)
        });
    });
    group.bench_function("plain_sgemm_f32", |bench| {
        bench.iter(|| black_box(sim::gemm_f32(SIZE, SIZE, SIZE, black_box(&a), black_box(&b))));
    });
    group.finish();

    let mut group = c.benchmark_group("plan_lower_4096x8192x8192");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    let mut big = GemmConfig::new(4096, 8192, 8192, DType::Bf16, Target::Trn2);
    big.schedule = Schedule::BlockedMn;
    big.blocks = codegen::BlockSizes { m: 256, n: 512, k: 1024 };
    big.lhs_transposed = true;
    group.bench_function("blocked_mn", |bench| bench.iter(|| black_box(program(&big).num_insts())));
    group.finish();

    // Planned in loops, lowered loop by loop and modeled looped, as `ntile gemm --no-sim` does
    // for `naive` and `hoisted` (the blocked schedules' nests here skip less than half of their
    // steps, so `--no-sim` plans them whole; `--extrapolate` plans them as here).
    let mut group = c.benchmark_group("plan_in_loops_4096x8192x8192");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    let blocks = |m, n, k| codegen::BlockSizes { m, n, k };
    for (name, schedule, b) in [
        ("naive", Schedule::Naive, blocks(0, 0, 0)),
        ("hoisted", Schedule::Hoisted, blocks(0, 0, 0)),
        ("blocked_mn", Schedule::BlockedMn, blocks(512, 1024, 1024)),
        ("blocked_mnk", Schedule::BlockedMnk, blocks(1024, 2048, 512)),
    ] {
        let mut cfg = GemmConfig::new(4096, 8192, 8192, DType::Bf16, Target::Trn2);
        cfg.schedule = schedule;
        if schedule != Schedule::Naive && schedule != Schedule::Hoisted {
            cfg.blocks = b;
        }
        let hw = cfg.target.profile();
        group.bench_function(name, |bench| {
            bench.iter(|| {
                let plan = codegen::plan_sampled(&cfg, codegen::Planning::Fixed, &codegen::default_builder).unwrap();
                let program = bir::lower_looped_native_within(&plan.looped, cfg.target, 0).unwrap();
                black_box(sim::model_looped(&program, &hw).unwrap().total_ns)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_gemm);
criterion_main!(benches);
