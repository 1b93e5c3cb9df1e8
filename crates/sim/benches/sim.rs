//! Benchmarks of the functional simulator on a 1024^3 bf16 GEMM program, with plain GEMMs of
//! the same size for scale.
//!
//! `matrixmultiply::sgemm` cannot be benched here: it is an `unsafe fn` and the workspace
//! forbids `unsafe` in every target, benches included. The `plain_sgemm_ikj_1024` baseline
//! is a straightforward safe fp32 GEMM; see the crate's report for matrixmultiply numbers
//! measured outside the workspace.
#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "a bench of a known-good program; it prints the program size once"
)]

#[path = "../tests/common/gemm.rs"]
mod gemm;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use gemm::{gemm_program, GemmSpec};
use penguin::DType;
use sim::Simulator;

const SIZE: usize = 1024;

fn inputs() -> (Vec<u8>, Vec<u8>) {
    let bytes = |seed: usize| -> Vec<u8> {
        (0..SIZE * SIZE)
            .flat_map(|i| {
                let x = ((i * 2_654_435_761 + seed) % 2001) as f32 / 1000.0 - 1.0;
                (DType::Bf16.encode(x, penguin::CastMode::Rne) as u16).to_le_bytes()
            })
            .collect()
    };
    (bytes(1), bytes(7))
}

fn bench_gemm(c: &mut Criterion) {
    let spec = GemmSpec { m: SIZE, k: SIZE, n: SIZE, in_dtype: DType::Bf16, rows_per_dma: 16 };
    let program = gemm_program(spec);
    let (a, b) = inputs();
    let mut group = c.benchmark_group("gemm_1024");
    group.sample_size(10).measurement_time(Duration::from_secs(15)).warm_up_time(Duration::from_secs(3));

    // Everything a caller pays: images, inputs, run.
    group.bench_function("simulate_bf16", |bench| {
        bench.iter(|| {
            let mut s = Simulator::new(&program);
            s.write_hbm_tensor("at", &a).unwrap();
            s.write_hbm_tensor("b", &b).unwrap();
            let stats = s.run().unwrap();
            assert!(stats.races.is_empty());
            black_box(s.read_hbm_tensor("c").unwrap())
        });
    });

    // The run alone, on a simulator that already holds the inputs.
    let mut s = Simulator::new(&program);
    s.write_hbm_tensor("at", &a).unwrap();
    s.write_hbm_tensor("b", &b).unwrap();
    group.bench_function("run_bf16", |bench| bench.iter(|| black_box(s.run().unwrap().instructions)));

    // A plain safe fp32 GEMM of the same size (i-k-j loops, vectorised inner axpy).
    let x: Vec<f32> = (0..SIZE * SIZE).map(|i| (i % 17) as f32 * 0.25).collect();
    let y: Vec<f32> = (0..SIZE * SIZE).map(|i| (i % 13) as f32 * 0.5).collect();
    let mut out = vec![0f32; SIZE * SIZE];
    group.bench_function("plain_sgemm_ikj_1024", |bench| {
        bench.iter(|| {
            out.fill(0.0);
            for (i, row) in out.chunks_exact_mut(SIZE).enumerate() {
                for (kk, yrow) in y.chunks_exact(SIZE).enumerate() {
                    let a = x[i * SIZE + kk];
                    for (o, v) in row.iter_mut().zip(yrow) {
                        *o += a * v;
                    }
                }
            }
            black_box(out[SIZE + 3])
        });
    });
    group.finish();

    let stats = Simulator::new(&program).run().unwrap();
    let dmas = program.streams.iter().skip(5).map(Vec::len).sum::<usize>();
    eprintln!(
        "gemm_1024 program: {} instructions, {} matmuls, {dmas} DMAs, {} DMA bytes",
        stats.instructions, stats.matmuls, stats.dma_bytes
    );
}

criterion_group!(benches, bench_gemm);
criterion_main!(benches);
