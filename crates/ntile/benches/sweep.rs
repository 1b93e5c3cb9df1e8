//! Benchmark of a whole-model sweep: `ntile sweep examples/llama7b.csv` (LLaMA-7B at
//! sequence 2048, 32 layers x 7 GEMMs = 224 rows, 3 distinct GEMMs) planned, lowered and
//! modeled with `auto` on trn2. Its distinct count and total are printed once.
#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "a bench of a known-good sweep; it prints its figures once"
)]

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use codegen::Schedule;
use criterion::{criterion_group, criterion_main, Criterion};
use ntile::progress::Progress;
use ntile::sweep::{self, SweepArgs};
use penguin::{DType, Target};

fn args() -> SweepArgs {
    SweepArgs {
        layers: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/llama7b.csv"),
        target: Target::Trn2,
        dtype: DType::Bf16,
        schedule: Schedule::Auto,
        hbm_dtype: None,
        out_dtype: DType::Fp32,
        json: false,
        quiet: true,
    }
}

fn bench_sweep(c: &mut Criterion) {
    let args = args();
    let text = std::fs::read_to_string(&args.layers).unwrap();
    let layers = sweep::parse(&text).unwrap();
    let swept = sweep::sweep(&args, &layers, &Progress::hidden(), None).unwrap();
    let totals = sweep::totals(&swept.rows);
    eprintln!(
        "llama7b sweep: {} rows, {} distinct GEMMs modeled, total {:.1} us, hfu {:.3}",
        swept.rows.len(),
        swept.models,
        totals.modeled_time_us,
        totals.hfu
    );
    let mut group = c.benchmark_group("sweep");
    group.sample_size(10).measurement_time(Duration::from_secs(10)).warm_up_time(Duration::from_secs(1));
    group.bench_function("llama7b", |b| b.iter(|| black_box(sweep::run(&args, None).unwrap())));
    group.finish();
}

criterion_group!(benches, bench_sweep);
criterion_main!(benches);
