//! Running programs in the simulator on fixed inputs.

use bir::{HbmRole, Program};
use sim::{RunStats, SimError, Simulator};

use crate::value;

/// C's bytes after simulating `p` (a GEMM with HBM tensors `a`, `b`, `c`) on fixed inputs
/// of `m x k` and `k x n`, with no race.
pub fn simulate_gemm(p: &Program, m: u64, k: u64, n: u64) -> Vec<u8> {
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 23) as f32 - 11.0) / 8.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 19) as f32 - 9.0) / 4.0).collect();
    let mut sim = Simulator::new(p);
    sim.write_hbm_f32("a", &a).unwrap();
    sim.write_hbm_f32("b", &b).unwrap();
    let stats = sim.run().unwrap();
    assert!(stats.races.is_empty());
    sim.read_hbm_tensor("c").unwrap()
}

/// Every HBM tensor's bytes and the outcome of a run on `threads` threads. Float inputs get
/// [`value`]s (a different stream per tensor); integer inputs (sparsity tags, gather indices)
/// 0 and 1, valid for every pattern and table.
pub fn simulate_threads(program: &Program, threads: usize) -> (Vec<Vec<u8>>, Result<RunStats, SimError>) {
    let mut s = Simulator::new(program);
    s.set_threads(threads);
    assert_eq!(s.threads(), threads);
    for (i, t) in program.hbm.iter().enumerate() {
        if t.role == HbmRole::Input {
            let n = t.shape.iter().product::<u64>();
            let v: Vec<f32> = if t.dtype.is_float() {
                (0..n).map(|j| value((i as u64) << 40 | j)).collect()
            } else {
                (0..n).map(|j| (j % 2) as f32).collect()
            };
            s.write_hbm_f32(&t.name, &v).unwrap();
        }
    }
    let result = s.run();
    (program.hbm.iter().map(|t| s.read_hbm_tensor(&t.name).unwrap()).collect(), result)
}
