//! Round trips of generated valid IR: GEMM functions planned by `codegen` for random shapes,
//! dtypes and schedules, and the BIR programs they lower to, through the text formats and
//! through JSON. (Arbitrary, not necessarily valid, functions and programs round-trip through
//! text in the `penguin::parse` and `bir::text` unit tests.)

use codegen::{plan_gemm, GemmConfig, Schedule};
use penguin::{DType, Target};
use proptest::prelude::*;

fn config() -> impl Strategy<Value = GemmConfig> {
    let dtype = proptest::sample::select(vec![DType::Fp32, DType::Bf16, DType::Fp16, DType::Fp8e4m3, DType::Fp8e5m2]);
    let schedule =
        proptest::sample::select(vec![Schedule::Naive, Schedule::Hoisted, Schedule::BlockedMn, Schedule::BlockedMnk]);
    let target = proptest::sample::select(vec![Target::Trn1, Target::Trn2]);
    (1u64..300, 1u64..400, 1u64..700, dtype, schedule, target, any::<bool>()).prop_map(
        |(m, k, n, dtype, schedule, target, lhs_transposed)| {
            let mut cfg = GemmConfig::new(m, k, n, dtype, target);
            cfg.schedule = schedule;
            cfg.lhs_transposed = lhs_transposed;
            cfg
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn planned_functions_and_their_programs_round_trip(cfg in config()) {
        let plan = plan_gemm(&cfg).map_err(|e| TestCaseError::fail(format!("{cfg:?}: {e}")))?;
        let f = plan.function;
        let text = f.to_string();
        prop_assert_eq!(&penguin::parse::parse(&text).map_err(|e| TestCaseError::fail(e.to_string()))?, &f);
        let json = serde_json::to_string(&f).unwrap();
        prop_assert_eq!(&serde_json::from_str::<penguin::Function>(&json).unwrap(), &f);

        let program = bir::lower(penguin::verify(&f).unwrap(), cfg.target).unwrap();
        let text = program.to_string();
        prop_assert_eq!(&bir::text::parse(&text).map_err(|e| TestCaseError::fail(e.to_string()))?, &program);
        let json = serde_json::to_string(&program).unwrap();
        prop_assert_eq!(&serde_json::from_str::<bir::Program>(&json).unwrap(), &program);
    }
}
