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

/// Extrapolate `c` and compare everything with the full GEMM: the rolled program, the
/// figures, and the looped model's figures (also against the unrolled model).
fn assert_exact(c: &GemmConfig) -> Extrapolated {
    let x = extrapolate(c, AutoPlanning::Fixed, 2).unwrap_or_else(|e| panic!("{c:?}: {e}"));
    assert!(!x.axes.is_empty(), "{c:?} was not reduced");
    assert!(x.plans >= 3);
    let (program, figures) = full(c);
    assert_eq!(x.figures, figures, "{c:?}");
    assert!(x.program == program, "{c:?}: the extrapolated program differs from the full one");
    let hw = c.target.profile();
    let fitted = sim::model_looped(&x.program, &hw).unwrap();
    let unrolled = sim::model_with(&program.expand().unwrap(), &hw).unwrap();
    assert_eq!(fitted.hbm_bytes, figures.hbm_bytes);
    assert_eq!(fitted.matmul_flops, unrolled.matmul_flops);
    assert!((fitted.total_ns - unrolled.total_ns).abs() <= 1e-9 * unrolled.total_ns, "{c:?}");
    x
}

#[test]
fn naive_programs_reduced_in_k_are_extrapolated_exactly() {
    // A ragged K (25607 = 200 chunks + 7 rows), a ragged N, several dtypes and layouts.
    let base = cfg(256, 128 * 200 + 7, 600, Schedule::Naive);
    let x = assert_exact(&base);
    let k = x.axes[0];
    assert_eq!(
        (k.name, k.period, k.base),
        ("k", K_PERIOD_CHUNKS * 128, 25607 % (K_PERIOD_CHUNKS * 128) + BASE_PERIODS * K_PERIOD_CHUNKS * 128)
    );
    assert_exact(&GemmConfig { lhs_transposed: true, out_dtype: DType::Bf16, ..base });
    assert_exact(&GemmConfig { sparsity: Some("2:4".parse().unwrap()), ..base });
    assert_exact(&GemmConfig { lhs_dtype: DType::Fp32, rhs_dtype: DType::Fp32, input_dtype: DType::Fp32, ..base });
}

#[test]
fn small_dimensions_are_kept_whole() {
    let c = cfg(300, 1000, 700, Schedule::BlockedMnk);
    assert!(axes(&c, BASE_PERIODS).iter().all(|a| a.periods == 0 && a.base == a.full));
    let x = extrapolate(&c, AutoPlanning::Fixed, 1).unwrap();
    assert_eq!((x.plans, x.axes.len()), (1, 0));
    assert_eq!(x.program, full(&c).0);
    // K is never reduced for the schedules holding whole K stripes.
    let stripes = cfg(128, 1 << 20, 512, Schedule::BlockedMn);
    assert_eq!(axes(&stripes, BASE_PERIODS)[1].periods, 0);
}

#[test]
fn a_wait_value_past_u32_is_a_limit_naming_the_field() {
    let (program, _) = full(&cfg(256, 512, 512, Schedule::Naive));
    let mut doc = serde_json::to_value(&program).unwrap();
    let wait = doc["streams"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|s| s.as_array_mut().unwrap().iter_mut())
        .find_map(|item| item.pointer_mut("/Inst/waits/0/value"))
        .expect("an instruction with a wait");
    *wait = serde_json::json!(5_000_000_000u64);
    match decode::<bir::LoopedProgram>(doc) {
        Err(ExtrapolateError::Limit { path, value, .. }) => {
            assert!(path.starts_with("streams[") && path.ends_with("waits[0].value"), "{path}");
            assert_eq!(value, 5_000_000_000);
        }
        other => panic!("{other:?}"),
    }
}
