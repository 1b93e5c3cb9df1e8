//! Test support: running a built kernel through `bir` and `sim`, inputs and f64 references.
#![allow(dead_code)]

use std::collections::HashMap;

use nki::NkiKernel;
use penguin::DType;

/// A deterministic small-integer matrix (exact in bf16 and in fp32 sums).
pub fn ints(n: usize, seed: u64) -> Vec<f32> {
    (0..n as u64).map(|i| (((i * 7 + seed * 13) ^ (i >> 3)) % 9) as f32 - 4.0).collect()
}

/// Deterministic values in (-1, 1) with many mantissa bits.
pub fn floats(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// `values` rounded to `dtype` and back, as the kernel sees them.
pub fn rounded(values: &[f32], dtype: DType) -> Vec<f32> {
    values.iter().map(|&v| dtype.round_trip(v)).collect()
}

/// Lower the kernel with `bir`, simulate it with `sim` on `inputs` (by name), and return
/// every output by name. Asserts the run is race-free.
pub fn run(kernel: &NkiKernel, inputs: &[(&str, Vec<f32>)]) -> HashMap<String, Vec<f32>> {
    let verified = penguin::verify(&kernel.function).expect("built functions verify");
    let program = bir::lower(verified, kernel.target).expect("lowers");
    let mut sim = sim::Simulator::new(&program);
    for (name, values) in inputs {
        sim.write_hbm_f32(name, values).expect("input");
    }
    let stats = sim.run().expect("simulates");
    assert!(stats.races.is_empty(), "races: {:?}", stats.races);
    kernel.outputs.keys().map(|name| (name.clone(), sim.read_hbm_f32(name).expect("output"))).collect()
}

/// `C[M, N] = A^T[K, M]^T @ B[K, N]` in f64 over row-major `at` and `b`.
pub fn matmul_ref(at: &[f32], b: &[f32], k: usize, m: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for kk in 0..k {
        for i in 0..m {
            let a = f64::from(at[kk * m + i]);
            for j in 0..n {
                c[i * n + j] += a * f64::from(b[kk * n + j]);
            }
        }
    }
    c
}

/// `|A|^T @ |B|` in f64 (the scale of the error bound).
pub fn abs_ref(at: &[f32], b: &[f32], k: usize, m: usize, n: usize) -> Vec<f64> {
    let a: Vec<f32> = at.iter().map(|x| x.abs()).collect();
    let bb: Vec<f32> = b.iter().map(|x| x.abs()).collect();
    matmul_ref(&a, &bb, k, m, n)
}
