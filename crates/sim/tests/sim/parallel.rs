//! Runs with PE products on worker threads give the bytes, statistics, races and errors of a
//! one-thread run: race-free GEMMs of several shapes and dtypes, the same GEMM with its PSUM
//! drains unsynchronised (races reported identically), and a run that fails part-way.

use bir::{Engine, Program};
use penguin::DType;
use sim::{RunStats, SimError};
use test_support::hand_gemm::{gemm_program, GemmSpec};
use test_support::run::simulate_threads;

/// One thread against 2 and 5: identical everything.
fn same_on_all_thread_counts(program: &Program) -> (Vec<Vec<u8>>, Result<RunStats, SimError>) {
    let serial = simulate_threads(program, 1);
    for threads in [2, 5] {
        let parallel = simulate_threads(program, threads);
        assert!(parallel.0 == serial.0, "{threads} threads: different HBM bytes");
        assert_eq!(parallel.1, serial.1, "{threads} threads");
    }
    serial
}

#[test]
fn race_free_gemms_give_identical_bytes() {
    for spec in [
        GemmSpec { m: 200, k: 300, n: 600, in_dtype: DType::Bf16, rows_per_dma: 16 },
        GemmSpec { m: 256, k: 640, n: 1024, in_dtype: DType::Fp32, rows_per_dma: 128 },
        GemmSpec { m: 130, k: 129, n: 513, in_dtype: DType::Fp8e4m3, rows_per_dma: 64 },
    ] {
        let (bytes, stats) = same_on_all_thread_counts(&gemm_program(spec));
        let stats = stats.unwrap();
        assert!(stats.races.is_empty());
        assert_eq!(stats.matmuls as usize, spec.m.div_ceil(128) * spec.n.div_ceil(512) * spec.k.div_ceil(128));
        // C was written: no NaN left from the fresh PSUM / SBUF.
        let c = bytes.last().unwrap();
        assert!(c.chunks_exact(4).all(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]).is_finite()));
    }
}

#[test]
fn unsynchronised_psum_reuse_races_identically() {
    let mut program = gemm_program(GemmSpec { m: 256, k: 384, n: 1024, in_dtype: DType::Bf16, rows_per_dma: 128 });
    // The PE starts a new group in a PSUM bank without waiting for ACT to copy the last one
    // out: a race on the bank that the detector must report the same way.
    for inst in &mut program.streams[Engine::Pe.index()] {
        inst.waits.retain(|w| w.sem.0 as usize != Engine::Act.index());
    }
    let (_, stats) = same_on_all_thread_counts(&program);
    let races = stats.unwrap().races;
    assert!(
        races.iter().any(|r| r.memory == penguin::Memory::Psum
            && [r.earlier.at.engine, r.later.at.engine].contains(&Engine::Pe)
            && [r.earlier.at.engine, r.later.at.engine].contains(&Engine::Act)),
        "{races:?}"
    );
}

#[test]
fn a_run_that_fails_part_way_leaves_the_same_state() {
    let mut program = gemm_program(GemmSpec { m: 256, k: 256, n: 1024, in_dtype: DType::Bf16, rows_per_dma: 128 });
    // The last matmul accumulates into PSUM without a stationary of the right shape.
    let pe = &mut program.streams[Engine::Pe.index()];
    let last = pe.iter().rposition(|i| matches!(i.op, bir::Op::MultiplyMoving { .. })).unwrap();
    if let bir::Op::MultiplyMoving { src, .. } = &mut pe[last].op {
        src.num_partitions = 7;
    }
    let (_, result) = same_on_all_thread_counts(&program);
    assert!(matches!(result, Err(SimError::MatmulShape { .. })), "{result:?}");
}
