//! End-to-end GEMMs: plan, lower, simulate and check against the fp64 reference over a grid
//! of shapes (ragged ones included), dtypes and targets.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test helpers assert on values")]

use ntile::gemm::{self, GemmArgs};
use penguin::{DType, Target};

fn args(m: u64, k: u64, n: u64, dtype: DType, target: Target) -> GemmArgs {
    GemmArgs {
        m: Some(m),
        k: Some(k),
        n: Some(n),
        dtype: Some(dtype),
        target: Some(target),
        seed: m * 31 + k * 7 + n,
        ..GemmArgs::default()
    }
}

const SHAPES: [(u64, u64, u64); 7] = [
    (1, 1, 1),
    (300, 1000, 777),
    (129, 257, 513),
    (128, 128, 512),
    (64, 40, 96),     // K < 128
    (100, 130, 1100), // N > 512
    (300, 64, 64),    // M > 128
];

#[test]
fn grid_of_shapes_dtypes_and_targets_passes_the_bound() {
    for target in Target::ALL {
        for dtype in [DType::Fp32, DType::Bf16, DType::Fp16] {
            for (m, k, n) in SHAPES {
                let out = gemm::run(&args(m, k, n, dtype, target)).unwrap();
                let check = out.report.check.unwrap();
                assert!(
                    check.passed,
                    "{m}x{k}x{n} {dtype} on {target}: {} failures, max abs err {}",
                    check.failures, check.max_abs_err
                );
                assert_eq!(out.result.as_ref().map(Vec::len), Some((m * n) as usize));
                assert_eq!(out.report.matmuls, m.div_ceil(128) * n.div_ceil(512) * k.div_ceil(128));
            }
        }
    }
}

#[test]
fn bf16_output_and_pre_transposed_lhs() {
    let mut a = args(200, 300, 600, DType::Bf16, Target::Trn2);
    a.out_dtype = Some(DType::Bf16);
    assert!(gemm::run(&a).unwrap().report.check.unwrap().passed);
    let mut a = args(200, 300, 600, DType::Fp16, Target::Trn1);
    a.lhs_transposed = true;
    assert!(gemm::run(&a).unwrap().report.check.unwrap().passed);
}

#[test]
fn mixed_operand_dtypes() {
    let mut a = args(130, 260, 70, DType::Bf16, Target::Trn3);
    a.rhs_dtype = Some(DType::Fp8e4m3fn);
    let out = gemm::run(&a).unwrap();
    assert_eq!(out.report.rhs_dtype, "fp8e4m3fn");
    assert!(out.report.check.unwrap().passed);
}

#[test]
fn runs_are_deterministic_and_seeds_matter() {
    let one = gemm::run(&args(64, 256, 64, DType::Bf16, Target::Trn2)).unwrap().result.unwrap();
    let two = gemm::run(&args(64, 256, 64, DType::Bf16, Target::Trn2)).unwrap().result.unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&one), bits(&two));
    let mut other = args(64, 256, 64, DType::Bf16, Target::Trn2);
    other.seed += 1;
    assert_ne!(bits(&one), bits(&gemm::run(&other).unwrap().result.unwrap()));
}
