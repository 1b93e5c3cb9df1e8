//! Benchmarks of the kernel builder on the trace of the tutorial's tiled matmul at
//! 4096x8192x8192 bf16 (trn2; 32 x 16 output tiles, 64 K steps each: about 197k records and
//! 66k tensors, generated here as the Python tracer would write them): reading the JSON, and
//! building the kernel (checks, allocation, groups, emission, verification, rolling). The
//! trace's and the kernel's sizes are printed once.
#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "a bench of a known-good trace; it prints the trace's and the kernel's sizes once"
)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use penguin::{DType, Target};

#[path = "../tests/nki/tb.rs"]
mod tb;

fn bench_build(c: &mut Criterion) {
    let trace = tb::tiled_matmul(4096, 8192, 8192, DType::Bf16, Target::Trn2, tb::AccStyle::Infer);
    let json = trace.to_json();
    let kernel = nki::KernelBuilder::new(Target::Trn2).build(&trace).unwrap();
    eprintln!(
        "trace: {} records, {} tensors, {} bytes of JSON; kernel: {} instructions, {} loop lines, {} sites",
        trace.ops.len(),
        trace.tensors.len(),
        json.len(),
        kernel.function.insts.len(),
        penguin::looped::printed_lines(&kernel.looped.body),
        kernel.allocations.len()
    );
    let mut group = c.benchmark_group("nki_tiled_matmul_4096x8192x8192");
    group.sample_size(10).measurement_time(Duration::from_secs(20)).warm_up_time(Duration::from_secs(2));
    group.bench_function("from_json", |b| b.iter(|| nki::Trace::from_json(black_box(&json)).unwrap()));
    group.bench_function("build", |b| {
        b.iter(|| nki::KernelBuilder::new(Target::Trn2).build(black_box(&trace)).unwrap());
    });
    group.finish();
}

criterion_group!(benches, bench_build);
criterion_main!(benches);
