//! Native looped lowering ([`bir::lower_looped_native`]) of real GEMM plans: the expansion of
//! the native lowering of `plan.looped()` has, stream by stream, the ops of the lowering of
//! the unrolled plan in the same order, models to the same time and simulates to the same
//! bytes; a nest of 2^30 instructions lowers without expanding; a non-affine edge is refused
//! with its typed error and `lower_looped` falls back.

use bir::{lower, lower_looped, lower_looped_native, Engine, LoopedProgram, Op, Program};
use codegen::{BlockSizes, GemmConfig, GemmPlan, Schedule};
use penguin::{verify, DType, SparsityPattern, Target};
use test_support::plan_gemm;
use test_support::run::simulate_gemm;

const SCHEDULES: [Schedule; 4] = [Schedule::Naive, Schedule::Hoisted, Schedule::BlockedMn, Schedule::BlockedMnk];

fn config(m: u64, k: u64, n: u64, schedule: Schedule, target: Target) -> GemmConfig {
    let mut cfg = GemmConfig::new(m, k, n, DType::Bf16, target);
    cfg.schedule = schedule;
    cfg.blocks = BlockSizes::for_schedule(schedule);
    cfg
}

fn ops(p: &Program, e: Engine) -> Vec<&Op> {
    p.stream(e).iter().map(|i| &i.op).collect()
}

/// The lowering of the unrolled plan and the expansion of the native lowering of its rolled
/// form, after checking they have the same ops per stream, the same header and the same
/// modeled time.
fn check(cfg: &GemmConfig) -> (GemmPlan, Program, LoopedProgram) {
    check_with(cfg, lower_looped_native)
}

/// [`check`] with the looped lowering `lower_lf`.
fn check_with(
    cfg: &GemmConfig,
    lower_lf: fn(&penguin::LoopedFunction, Target) -> Result<LoopedProgram, bir::LowerLoopedError>,
) -> (GemmPlan, Program, LoopedProgram) {
    let plan = plan_gemm(cfg).unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
    let want = lower(verify(&plan.function).unwrap(), cfg.target).unwrap();
    let lf = plan.looped();
    let lp = lower_lf(&lf, cfg.target).unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
    assert_eq!(bir::verify_looped(&lp), Ok(()), "{cfg:?}");
    let got = lp.expand().unwrap();
    bir::verify_program(&got).unwrap();
    for e in Engine::all() {
        assert_eq!(ops(&got, e), ops(&want, e), "{cfg:?}: {}", e.name());
    }
    assert_eq!((&got.hbm, got.hbm_size, got.sbuf_peak_bytes), (&want.hbm, want.hbm_size, want.sbuf_peak_bytes));
    let (t_got, t_want) = (sim::model(&got).unwrap().total_ns, sim::model(&want).unwrap().total_ns);
    assert!((t_got - t_want).abs() <= 1e-9 * t_want, "{cfg:?}: {t_got} vs {t_want}");
    (plan, want, lp)
}

#[test]
fn every_schedule_lowers_natively_like_its_unrolled_plan() {
    for target in [Target::Trn1, Target::Trn2] {
        for schedule in SCHEDULES {
            for (m, k, n) in [(256, 512, 1024), (300, 700, 777)] {
                check(&config(m, k, n, schedule, target));
            }
        }
    }
}

#[test]
fn fp32_in_hbm_and_sparse_plans_lower_natively() {
    for schedule in SCHEDULES {
        let mut cfg = config(256, 1024, 1024, schedule, Target::Trn2);
        cfg.input_dtype = DType::Fp32;
        check(&cfg);
        let mut cfg = config(256, 512, 512, schedule, Target::Trn2);
        cfg.sparsity = Some(SparsityPattern::SUPPORTED[0]);
        check(&cfg);
    }
}

#[test]
fn natively_lowered_plans_simulate_to_the_same_bytes() {
    let runs = [
        (130, 300, 600, Schedule::BlockedMnk, Target::Trn2),
        (256, 384, 520, Schedule::Naive, Target::Trn2),
        (200, 300, 700, Schedule::Hoisted, Target::Trn1),
        (128, 640, 1100, Schedule::BlockedMn, Target::Trn2),
    ];
    for (m, k, n, schedule, target) in runs {
        let (_, want, lp) = check(&config(m, k, n, schedule, target));
        let got = lp.expand().unwrap();
        assert_eq!(simulate_gemm(&got, m, k, n), simulate_gemm(&want, m, k, n));
    }
}

#[test]
fn lower_looped_lowers_plans_natively() {
    let cfg = config(256, 512, 1024, Schedule::BlockedMnk, Target::Trn2);
    let lf = plan_gemm(&cfg).unwrap().looped();
    assert_eq!(lower_looped(&lf, cfg.target), lower_looped_native(&lf, cfg.target));
}

/// A large plan whose rolled form needs loops peeled and unrolled three levels deep.
#[test]
fn a_large_blocked_plan_lowers_natively_like_its_unrolled_plan() {
    let t = std::time::Instant::now();
    check(&config(4096, 8192, 8192, Schedule::BlockedMnk, Target::Trn2));
    println!("{:?}", t.elapsed());
}

mod sweep {
    use super::*;
    use codegen::LoopOrder;
    use penguin::PerfMode;
    use proptest::prelude::*;

    const DTYPES: [DType; 4] = [DType::Fp32, DType::Bf16, DType::Fp8e4m3, DType::Fp16];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Any plan: its looped lowering (native where the waits are affine, which some plans'
        /// rolled forms are not: blocked-mn on trn1 at 513^3 in fp32 has a wait that is not;
        /// expanded otherwise) has the unrolled lowering's ops and modeled time.
        #[test]
        fn any_plan_lowers_looped_like_its_unrolled_plan(
            (m, k, n) in (1u64..700, 1u64..1500, 1u64..2100),
            schedule in 0usize..4,
            dtype in 0usize..4,
            target in 0usize..3,
            lhs_transposed in any::<bool>(),
            variant in 0usize..4,
            n_outer in any::<bool>(),
        ) {
            let target = [Target::Trn1, Target::Trn2, Target::Trn3][target];
            let mut cfg = config(m, k, n, SCHEDULES[schedule], target);
            cfg.lhs_dtype = DTYPES[dtype];
            cfg.rhs_dtype = DTYPES[dtype];
            cfg.lhs_transposed = lhs_transposed;
            cfg.order = if n_outer { LoopOrder::NOuter } else { LoopOrder::MOuter };
            match variant {
                0 => {}
                1 => cfg.perf_mode = PerfMode::DoubleRow,
                2 => cfg.input_dtype = DType::Fp32,
                _ => cfg.sparsity = Some(SparsityPattern::SUPPORTED[0]),
            }
            if cfg.validate().is_err() || plan_gemm(&cfg).is_err() {
                return Ok(());
            }
            check_with(&cfg, lower_looped);
        }
    }
}

/// A plan whose rolled form has a wait that is not affine in its loop indices (blocked-mn on
/// trn1, fp32 in HBM, 513^3): the native lowering refuses it with the typed error, and
/// `lower_looped` lowers the expansion instead, with the unrolled lowering's ops.
#[test]
fn a_plan_with_a_wait_that_is_not_affine_falls_back_to_the_expansion() {
    let mut cfg = config(513, 513, 513, Schedule::BlockedMn, Target::Trn1);
    cfg.lhs_dtype = DType::Fp32;
    cfg.rhs_dtype = DType::Fp32;
    cfg.input_dtype = DType::Fp32;
    let plan = plan_gemm(&cfg).unwrap();
    let err = lower_looped_native(&plan.looped(), cfg.target).unwrap_err();
    assert!(matches!(err, bir::LowerLoopedError::NotAffine { .. }), "{err}");
    check_with(&cfg, lower_looped);
}
