//! The simulator gives the same bytes on one thread and on several, for the programs ntile
//! generates (shapes, dtypes, every schedule, double_row, structured sparsity, PE and DMA
//! transposes) and for the DMA-offloaded examples (FMA, casts, gather); and `NTILE_THREADS`
//! chooses the threads of the command line, a bad value exiting 2.

use std::path::Path;

use bir::{HbmRole, Program};
use codegen::Schedule;
use ntile::gemm::{self, Emit, GemmArgs, TransposeOn};
use penguin::{DType, PerfMode, SparsityPattern, Target};
use sim::{RunStats, SimError, Simulator};

/// A deterministic value in [-2, 2) (varied low bits, so products round).
fn value(seed: u64) -> f32 {
    let x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ 0x5851_F42D_4C95_7F2D;
    let x = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
    ((x >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
}

/// Every HBM tensor's bytes and the outcome of a run on `threads` threads. Integer inputs
/// (sparsity tags, gather indices) get 0 and 1, valid for every pattern and table.
fn simulate(program: &Program, threads: usize) -> (Vec<Vec<u8>>, Result<RunStats, SimError>) {
    let mut s = Simulator::new(program);
    s.set_threads(threads);
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

/// One thread against three: the same bytes, statistics and races; a race-free run.
fn assert_same(program: &Program, what: &str) {
    let (serial, stats) = simulate(program, 1);
    let (parallel, parallel_stats) = simulate(program, 3);
    assert!(serial == parallel, "{what}: different HBM bytes on 3 threads");
    assert_eq!(stats, parallel_stats, "{what}");
    let stats = stats.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(stats.races.is_empty(), "{what}: {:?}", stats.races);
}

/// The BIR ntile generates for `args`.
fn program(args: &GemmArgs) -> Program {
    let out = gemm::run(&GemmArgs { emit: Some(Emit::BirUnrolled), ..args.clone() }).unwrap();
    bir::text::parse(&out.stdout).unwrap()
}

fn args(m: u64, k: u64, n: u64, dtype: DType) -> GemmArgs {
    GemmArgs { m: Some(m), k: Some(k), n: Some(n), dtype: Some(dtype), ..GemmArgs::default() }
}

#[test]
fn generated_gemms_give_the_same_bytes_on_several_threads() {
    let mut cases: Vec<(String, GemmArgs)> = Vec::new();
    for (m, k, n) in [(300, 1000, 777), (129, 257, 513), (256, 512, 2048)] {
        for dtype in [DType::Fp32, DType::Bf16, DType::Fp8e4m3] {
            cases.push((format!("{m}x{k}x{n} {dtype}"), args(m, k, n, dtype)));
        }
    }
    for schedule in [Schedule::Naive, Schedule::Hoisted, Schedule::BlockedMn, Schedule::BlockedMnk] {
        let a = GemmArgs { schedule: Some(schedule), ..args(384, 640, 1100, DType::Bf16) };
        cases.push((format!("{schedule:?}"), a));
    }
    let a = GemmArgs { perf_mode: Some(PerfMode::DoubleRow), ..args(256, 512, 1024, DType::Fp8e4m3) };
    cases.push(("double_row".into(), a));
    for pattern in ["2:4", "1:2"] {
        let sparsity: SparsityPattern = pattern.parse().unwrap();
        let a = GemmArgs { sparsity: Some(sparsity), ..args(256, 512, 600, DType::Bf16) };
        cases.push((format!("sparse {pattern}"), a));
    }
    for transpose in [TransposeOn::Pe, TransposeOn::Dma] {
        let a = GemmArgs { transpose: Some(transpose), ..args(200, 300, 700, DType::Bf16) };
        cases.push((format!("transpose on {transpose:?}"), a));
    }
    let a = GemmArgs { target: Some(Target::Trn1), out_dtype: Some(DType::Bf16), ..args(130, 700, 520, DType::Fp16) };
    cases.push(("trn1 fp16 -> bf16".into(), a));
    for (what, a) in cases {
        assert_same(&program(&a), &what);
    }
}

#[test]
fn offloaded_examples_give_the_same_bytes_on_several_threads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for name in ["offloaded_fma.pir", "offloaded_memcast.pir", "gather.pir"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let f = penguin::text::parse::parse(&text).unwrap();
        let verified = penguin::verify(&f).unwrap();
        let program = bir::lower(verified, Target::Trn2).unwrap();
        assert_same(&program, name);
    }
}

#[test]
fn a_bad_thread_count_exits_2_naming_the_variable() {
    for bad in ["0", "two", "-1", "100000"] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_ntile"))
            .args(["gemm", "--m", "64", "--k", "64", "--n", "64"])
            .env("NTILE_THREADS", bad)
            .output()
            .unwrap();
        assert_eq!(crate::support::code(&o), 2, "{bad}");
        let err = crate::support::stderr(&o);
        assert!(err.contains(&format!("NTILE_THREADS={bad} is not a thread count")), "{bad}: {err}");
    }
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ntile"))
        .args(["gemm", "--m", "64", "--k", "64", "--n", "64"])
        .env("NTILE_THREADS", "1")
        .output()
        .unwrap();
    assert_eq!(crate::support::code(&o), 0, "{}", crate::support::stderr(&o));
}
