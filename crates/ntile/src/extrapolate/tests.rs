//! Tests of the extrapolation: exact against the rolled program of the full GEMM.

use codegen::{plan_gemm, AutoPlanning, BlockSizes, GemmConfig, Schedule};
use penguin::{DType, Target};

use super::*;

fn cfg(m: u64, k: u64, n: u64, schedule: Schedule) -> GemmConfig {
    let mut c = GemmConfig::new(m, k, n, DType::Bf16, Target::Trn2);
    c.schedule = schedule;
    c.input_dtype = DType::Bf16;
    c.blocks = BlockSizes::for_schedule(schedule);
    c
}

/// The full GEMM's rolled program and figures, as the extrapolation should give them.
fn full(cfg: &GemmConfig) -> (bir::LoopedProgram, Figures) {
    let plan = plan_gemm(cfg).unwrap();
    let program = crate::gemm::lower(&plan).unwrap();
    (crate::looped::rolled(&program), Figures::of(&plan, &program))
}

#[test]
fn explore() {
    for c in [
        cfg(128 * 21, 128, 512 * 21, Schedule::Naive),
        cfg(128 * 21 + 5, 128 * 40 + 3, 512 * 21 + 7, Schedule::Naive),
        cfg(128 * 9, 128 * 80, 512 * 9, Schedule::Naive),
        cfg(128 * 9, 1000, 512 * 9, Schedule::Hoisted),
        cfg(128 * 40, 1000, 512 * 20, Schedule::BlockedMn),
        cfg(128 * 80, 128 * 40, 512 * 40, Schedule::BlockedMnk),
    ] {
        let e = extrapolate(&c, AutoPlanning::Fixed, 2);
        match e {
            Ok(e) => {
                let (p, f) = full(&c);
                eprintln!(
                    "{}x{}x{} {}: plans {} axes {:?} program eq {} figures eq {}",
                    c.m,
                    c.k,
                    c.n,
                    c.schedule,
                    e.plans,
                    e.axes,
                    p == e.program,
                    f == e.figures
                );
            }
            Err(err) => eprintln!("{}x{}x{} {}: {err}", c.m, c.k, c.n, c.schedule),
        }
    }
}
