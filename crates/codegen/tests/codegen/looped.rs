//! Rolling planned GEMMs into looped Penguin functions: the roll is lossless for every
//! schedule, dtype and target the planner supports, the result verifies, and a multi-tile
//! plan rolls to a short body.

use codegen::{BlockSizes, GemmConfig, LoopOrder, Schedule};
use penguin::looped::{verify_looped_within, Item};
use penguin::{verify_looped, DType, FunctionView, LoopedFunction, PerfMode, SparsityPattern, Target};
use proptest::prelude::*;
use test_support::plan_gemm;

/// Matmul dtypes the planner takes.
const DTYPES: [DType; 7] =
    [DType::Fp32, DType::Bf16, DType::Fp16, DType::Fp8e4m3, DType::Fp8e4m3fn, DType::Fp8e5m2, DType::Uint8];

/// Explicit schedules (`auto` picks one of them).
const SCHEDULES: [Schedule; 4] = [Schedule::Naive, Schedule::Hoisted, Schedule::BlockedMn, Schedule::BlockedMnk];

/// The deepest loop nesting of `items`.
fn depth(items: &[Item<penguin::PirInst>]) -> usize {
    items
        .iter()
        .map(|it| match it {
            Item::Inst(_) => 0,
            Item::Loop(l) => 1 + depth(&l.body),
        })
        .max()
        .unwrap_or(0)
}

/// Roll `cfg`'s plan and check it expands back to the plan exactly and verifies; the rolled
/// function, or `None` when the planner refuses the config.
fn roll_checked(cfg: &GemmConfig) -> Result<Option<LoopedFunction>, TestCaseError> {
    if cfg.validate().is_err() {
        return Ok(None);
    }
    let Ok(plan) = plan_gemm(cfg) else { return Ok(None) };
    let f = &plan.function;
    // A planned function's arena is in program order, so the renumbering is the identity.
    prop_assert!(f.layout().iter().enumerate().all(|(i, id)| id.index() == i));
    let lf = LoopedFunction::roll(f);
    prop_assert_eq!(lf.unrolled_len(), f.insts.len() as u64);
    prop_assert!(lf.body.len() <= f.insts.len());
    let back = lf.expand();
    prop_assert_eq!(back.as_ref(), Ok(f));
    prop_assert_eq!(verify_looped(&lf), Ok(()));
    // The corner function (each loop's first and last trip), used past MAX_EXPANDED
    // instructions, passes too.
    prop_assert_eq!(verify_looped_within(&lf, 0), Ok(()));
    // The roll along the schedule's nest too.
    let nest = plan.looped();
    prop_assert!(!plan.nest.is_empty());
    let nest_back = nest.expand();
    prop_assert_eq!(nest_back.as_ref(), Ok(f));
    prop_assert_eq!(verify_looped(&nest), Ok(()));
    Ok(Some(lf))
}

#[allow(clippy::too_many_arguments, reason = "one proptest case")]
fn config(
    (m, k, n): (u64, u64, u64),
    schedule: usize,
    dtype: usize,
    target: usize,
    lhs_transposed: bool,
    variant: usize,
    order: bool,
    pe_transpose: Option<bool>,
) -> GemmConfig {
    let target = [Target::Trn1, Target::Trn2, Target::Trn3][target];
    let mut cfg = GemmConfig::new(m, k, n, DTYPES[dtype], target);
    cfg.schedule = SCHEDULES[schedule];
    cfg.blocks = BlockSizes::for_schedule(cfg.schedule);
    cfg.order = if order { LoopOrder::NOuter } else { LoopOrder::MOuter };
    cfg.lhs_transposed = lhs_transposed;
    cfg.pe_transpose = pe_transpose;
    match variant {
        0 => {}
        1 => cfg.perf_mode = PerfMode::DoubleRow,
        v => cfg.sparsity = Some(SparsityPattern::SUPPORTED[(v - 2) % SparsityPattern::SUPPORTED.len()]),
    }
    cfg
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn rolling_a_plan_is_lossless_and_verifies(
        mkn in (1u64..600, 1u64..600, 1u64..1100),
        schedule in 0usize..4,
        dtype in 0usize..7,
        target in 0usize..3,
        lhs_transposed in any::<bool>(),
        variant in 0usize..4,
        order in any::<bool>(),
        pe_transpose in proptest::option::of(any::<bool>()),
    ) {
        let cfg = config(mkn, schedule, dtype, target, lhs_transposed, variant, order, pe_transpose);
        roll_checked(&cfg)?;
    }
}

#[test]
fn every_schedule_and_dtype_rolls_losslessly() {
    // One multi-tile shape with ragged edges for each (schedule, dtype, variant).
    let mut planned = 0;
    for schedule in 0..4 {
        for (dtype, d) in DTYPES.iter().enumerate() {
            for variant in 0..3 {
                let target = if *d == DType::Fp8e4m3fn { 2 } else { 1 };
                let cfg = config((300, 520, 700), schedule, dtype, target, false, variant, false, None);
                if roll_checked(&cfg).unwrap().is_some() {
                    planned += 1;
                }
            }
        }
    }
    // Dense and 1:2 sparse: all 28 each; double row: fp8 e4m3/e5m2 and uint8 per schedule (12).
    assert_eq!(planned, 68);
}

#[test]
fn multi_tile_plans_roll_to_short_bodies() {
    // (m, k, n, schedule, unrolled instructions, most top-level items, nesting depth).
    // The naive plan's k loop rolls inside each output tile, and the tiles roll in pairs: the
    // evacuation engine and output buffer of a tile follow its parity (distinct engines and
    // tensors, not parameters; the PSUM bank is an offset in one tensor), and the DMA queue
    // hints step with the loops. blocked-mnk's output tiles roll inside a step (their banks
    // are parameters), so its nest is deeper.
    // 512x1024x1024 shows what a short K leaves: 8 k-tiles per output tile give only 3 trips
    // of the double-buffered (period 2) k body after its prologue.
    let cases = [
        (512, 1024, 1024, Schedule::Naive, 208, 61, 2),
        (512, 4096, 1024, Schedule::Naive, 784, 41, 2),
        (2048, 2048, 2048, Schedule::Naive, 3200, 41, 3),
        (2048, 2048, 2048, Schedule::BlockedMnk, 1408, 33, 4),
    ];
    for (m, k, n, schedule, insts, items, nest) in cases {
        let mut cfg = GemmConfig::new(m, k, n, DType::Bf16, Target::Trn2);
        cfg.schedule = schedule;
        cfg.blocks = BlockSizes::for_schedule(schedule);
        let lf = roll_checked(&cfg).unwrap().unwrap();
        let got = (lf.unrolled_len(), lf.body.len(), depth(&lf.body));
        assert_eq!(got, (insts, items, nest), "{m}x{k}x{n} {}", schedule.name());
    }
}

#[test]
fn a_step_that_leaves_a_tensor_is_caught_by_both_verifier_paths() {
    let cfg = GemmConfig::new(2048, 2048, 2048, DType::Bf16, Target::Trn2);
    let mut lf = roll_checked(&cfg).unwrap().unwrap();
    // The first top-level loop's first parameter is an operand offset: move it by 1M elements
    // a trip, past the end of every tensor from the second trip on.
    let Some(Item::Loop(l)) = lf.body.iter_mut().find(|it| matches!(it, Item::Loop(_))) else { panic!("no loop") };
    l.step[0] += 1 << 20;
    for max_expanded in [penguin::looped::verify::MAX_EXPANDED, 0] {
        let errors = verify_looped_within(&lf, max_expanded).unwrap_err();
        assert!(!errors.is_empty());
        assert!(errors.iter().all(|e| matches!(e, penguin::looped::LoopError::Function(_))), "{errors:?}");
    }
}
