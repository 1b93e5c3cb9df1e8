//! Simulating a GEMM program on fixed inputs, shared by the tests that compare looped and
//! unrolled lowerings byte for byte.
#![allow(dead_code, reason = "each test binary uses a subset of the helpers")]
#![allow(clippy::unwrap_used, reason = "test helpers assert on values")]

/// C's bytes after simulating `p` (a GEMM with HBM tensors `a`, `b`, `c`) on fixed inputs
/// of `m x k` and `k x n`, with no race.
pub fn simulate(p: &bir::Program, m: u64, k: u64, n: u64) -> Vec<u8> {
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 23) as f32 - 11.0) / 8.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 19) as f32 - 9.0) / 4.0).collect();
    let mut sim = sim::Simulator::new(p);
    sim.write_hbm_f32("a", &a).unwrap();
    sim.write_hbm_f32("b", &b).unwrap();
    let stats = sim.run().unwrap();
    assert!(stats.races.is_empty());
    sim.read_hbm_tensor("c").unwrap()
}
