//! Benchmark of a GEMM too large to unroll: the 65536^3 bf16 `blocked-mnk` program
//! extrapolated from its reduced GEMMs (plan, lower, roll and fit them on every core), then
//! modeled looped: what `ntile gemm --m 65536 --k 65536 --n 65536 --schedule blocked-mnk
//! --no-sim` spends. Its figures are printed once.
#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "a bench of a known-good GEMM; it prints its figures once"
)]

use std::hint::black_box;
use std::time::Duration;

use codegen::{BlockSizes, GemmConfig, Planning, Schedule};
use criterion::{criterion_group, criterion_main, Criterion};
use penguin::{DType, Target};

fn config() -> GemmConfig {
    let mut cfg = GemmConfig::new(65536, 65536, 65536, DType::Bf16, Target::Trn2);
    cfg.schedule = Schedule::BlockedMnk;
    cfg.input_dtype = DType::Bf16;
    cfg.blocks = BlockSizes::for_schedule(Schedule::BlockedMnk);
    cfg
}

fn run(threads: usize) -> (driver::extrapolate::Extrapolated, sim::CycleReport) {
    let cfg = config();
    let x = driver::extrapolate::extrapolate(&cfg, Planning::Fitting, threads).unwrap();
    let r = sim::model_looped(&x.program, &cfg.target.profile()).unwrap();
    (x, r)
}

fn bench_extrapolate(c: &mut Criterion) {
    let threads = driver::threads::threads().unwrap();
    match driver::extrapolate::extrapolate(&config(), Planning::Fitting, threads) {
        Ok(_) => {
            let (x, r) = run(threads);
            eprintln!(
                "65536^3 blocked-mnk: {} reduced plans ({} BIR instructions), {} unrolled instructions, modeled {:.1} us, hfu {:.3}",
                x.plans,
                x.reduced_instructions,
                x.figures.bir_instructions,
                r.total_us(),
                r.hfu()
            );
        }
        Err(e) => {
            eprintln!("65536^3 blocked-mnk: not extrapolated: {e}");
            return;
        }
    }
    let mut group = c.benchmark_group("extrapolate");
    group.sample_size(10).measurement_time(Duration::from_secs(10)).warm_up_time(Duration::from_secs(1));
    group.bench_function("blocked_mnk_65536", |b| b.iter(|| black_box(run(threads))));
    group.finish();
}

criterion_group!(benches, bench_extrapolate);
criterion_main!(benches);
