//! A whole hand-built GEMM program (many DMA queues, semaphores, PSUM groups) against an
//! independent f64 reference, with the race detector watching.

use penguin::DType;
use sim::Simulator;
use test_support::hand_gemm::{gemm_program, GemmSpec};
use test_support::value;

#[expect(clippy::unwrap_used, reason = "a test helper: unwrapping is how it asserts")]
fn check(spec: GemmSpec) {
    let GemmSpec { m, k, n, in_dtype, .. } = spec;
    let program = gemm_program(spec);
    bir::verify_program(&program).unwrap();
    let a_t: Vec<f32> = (0..k * m).map(|i| in_dtype.round_trip(value(i as u64))).collect();
    let b: Vec<f32> = (0..k * n).map(|i| in_dtype.round_trip(value(7 << 32 | i as u64))).collect();
    let mut s = Simulator::new(&program);
    s.write_hbm_f32("at", &a_t).unwrap();
    s.write_hbm_f32("b", &b).unwrap();
    let stats = s.run().unwrap();
    assert!(stats.races.is_empty(), "{}", stats.races.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"));
    assert_eq!(stats.matmuls as usize, m.div_ceil(128) * n.div_ceil(512) * k.div_ceil(128));
    assert_eq!(stats.instructions as usize, program.num_insts());
    assert_eq!(stats.hbm_write_bytes as usize, m * n * 4);
    let c = s.read_hbm_f32("c").unwrap();
    let eps32 = DType::Fp32.unit_roundoff();
    for i in 0..m {
        for j in 0..n {
            let (mut exact, mut abs) = (0f64, 0f64);
            for kk in 0..k {
                let (x, y) = (f64::from(a_t[kk * m + i]), f64::from(b[kk * n + j]));
                exact += x * y;
                abs += (x * y).abs();
            }
            let got = f64::from(c[i * n + j]);
            assert!((got - exact).abs() <= 2.0 * k as f64 * eps32 * abs, "{spec:?} ({i}, {j}): {got} vs {exact}");
        }
    }
}

#[test]
fn ragged_bf16_gemm_is_race_free_and_accurate() {
    check(GemmSpec { m: 200, k: 300, n: 600, in_dtype: DType::Bf16, rows_per_dma: 16 });
}

#[test]
fn small_fp8_and_fp32_gemms() {
    check(GemmSpec { m: 1, k: 1, n: 1, in_dtype: DType::Fp32, rows_per_dma: 1 });
    check(GemmSpec { m: 130, k: 129, n: 513, in_dtype: DType::Fp8e4m3, rows_per_dma: 128 });
}

/// A run frees its decode cache and scratch buffers at the end: a second run on the same
/// simulator, with new inputs, gives C byte for byte as a fresh simulator does, on one thread
/// and on two (and the first run's C, rerun on its own inputs, is unchanged).
#[test]
fn a_second_run_with_new_inputs_equals_a_fresh_simulator() {
    let spec = GemmSpec { m: 200, k: 300, n: 600, in_dtype: DType::Bf16, rows_per_dma: 16 };
    let program = gemm_program(spec);
    let inputs = |salt: u64| {
        let a: Vec<f32> = (0..spec.k * spec.m).map(|i| value(salt << 48 | i as u64)).collect();
        let b: Vec<f32> = (0..spec.k * spec.n).map(|i| value(salt << 48 | 7 << 32 | i as u64)).collect();
        (a, b)
    };
    let fresh = |salt: u64, threads: usize| {
        let (a, b) = inputs(salt);
        let mut s = Simulator::new(&program);
        s.set_threads(threads);
        s.write_hbm_f32("at", &a).unwrap();
        s.write_hbm_f32("b", &b).unwrap();
        s.run().unwrap();
        s.read_hbm_tensor("c").unwrap()
    };
    for threads in [1, 2] {
        let mut s = Simulator::new(&program);
        s.set_threads(threads);
        let mut c = Vec::new();
        for salt in [1, 2, 1] {
            let (a, b) = inputs(salt);
            s.write_hbm_f32("at", &a).unwrap();
            s.write_hbm_f32("b", &b).unwrap();
            assert!(s.run().unwrap().races.is_empty());
            c.push(s.read_hbm_tensor("c").unwrap());
        }
        assert!(c[0] == fresh(1, 1), "{threads} threads: first run");
        assert!(c[1] == fresh(2, 1), "{threads} threads: second run, new inputs");
        assert!(c[2] == c[0], "{threads} threads: third run, the first inputs again");
        assert!(c[0] != c[1]);
    }
}
