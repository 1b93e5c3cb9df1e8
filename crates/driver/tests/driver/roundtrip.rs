//! Round trips of generated valid IR: GEMM functions planned by `codegen` for random shapes,
//! dtypes and schedules, and the BIR programs they lower to, through the text formats and
//! through JSON. (Arbitrary, not necessarily valid, functions and programs round-trip through
//! text in the `penguin::parse` and `bir::text` unit tests.)

use codegen::{GemmConfig, Schedule};
use penguin::{DType, Target};
use proptest::prelude::*;
use test_support::plan_gemm;

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

/// The memset values of a parsed `.pir` in line order.
fn pir_memsets(f: &penguin::Function) -> Vec<f64> {
    f.insts
        .iter()
        .filter_map(|i| match i {
            penguin::InstData::Memset(m) => Some(m.value),
            _ => None,
        })
        .collect()
}

/// The memset values of a `.bir` program in stream order.
fn bir_memsets(p: &bir::Program) -> Vec<f64> {
    p.streams
        .iter()
        .flatten()
        .filter_map(|i| match i.op {
            bir::Op::Memset { value, .. } => Some(value),
            _ => None,
        })
        .collect()
}

/// NaN, both infinities and an ordinary value in the order of the `.pir`, compared by bits
/// (NaN != NaN).
fn assert_special(values: &[f64]) {
    assert_bits(values, &[f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.5]);
}

/// The same values in BIR stream order (act, then dve, then pool).
fn assert_special_bir(values: &[f64]) {
    assert_bits(values, &[f64::NEG_INFINITY, f64::NAN, f64::INFINITY, -1.5]);
}

fn assert_bits(values: &[f64], want: &[f64]) {
    let bits: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
    let want: Vec<u64> = want.iter().map(|v| v.to_bits()).collect();
    assert_eq!(bits, want, "{values:?}");
}

const SPECIAL_PIR: &str = "\
kernel k
tensor t0 \"x\" sbuf fp32 [4, 4]
i0 = memset engine=dve value=NaN dst=t0{p0[1, 4] +0 [1, 1]}
i1 = memset engine=dve value=inf dst=t0{p0[1, 4] +1 [1, 1]}
i2 = memset engine=act value=-inf dst=t0{p0[1, 4] +2 [1, 1]}
i3 = memset engine=pool value=-1.5 dst=t0{p0[1, 4] +3 [1, 1]}
";

#[test]
fn nan_and_infinities_round_trip_through_text_and_json_in_both_irs() {
    let f = penguin::parse::parse(SPECIAL_PIR).unwrap();
    assert_special(&pir_memsets(&f));
    let text = f.to_string();
    assert!(text.contains("value=NaN") && text.contains("value=-inf"), "{text}");
    assert_special(&pir_memsets(&penguin::parse::parse(&text).unwrap()));
    let json = serde_json::to_string(&f).unwrap();
    assert!(json.contains("\"value\":\"NaN\"") && json.contains("\"value\":\"inf\""), "{json}");
    assert!(json.contains("\"value\":-1.5"), "{json}");
    let back: penguin::Function = serde_json::from_str(&json).unwrap();
    assert_special(&pir_memsets(&back));
    assert_eq!(back.to_string(), text);

    let p = bir::lower(penguin::verify(&f).unwrap(), Target::Trn2).unwrap();
    assert_special_bir(&bir_memsets(&p));
    let text = p.to_string();
    assert_special_bir(&bir_memsets(&bir::text::parse(&text).unwrap()));
    let json = serde_json::to_string(&p).unwrap();
    let back: bir::Program = serde_json::from_str(&json).unwrap();
    assert_special_bir(&bir_memsets(&back));
    assert_eq!(back.to_string(), text);
}

#[test]
fn a_json_value_that_is_no_number_is_refused_by_name() {
    let f = penguin::parse::parse(SPECIAL_PIR).unwrap();
    let json = serde_json::to_string(&f).unwrap().replacen("\"NaN\"", "null", 1);
    let e = serde_json::from_str::<penguin::Function>(&json).unwrap_err().to_string();
    assert!(e.contains("expected a number, or \"NaN\", \"inf\" or \"-inf\""), "{e}");
    let json = serde_json::to_string(&f).unwrap().replacen("\"NaN\"", "\"lots\"", 1);
    let e = serde_json::from_str::<penguin::Function>(&json).unwrap_err().to_string();
    assert!(e.contains("invalid value: string \"lots\""), "{e}");
}
