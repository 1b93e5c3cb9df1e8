//! The independent fp64 reference and the SPEC's error bound.
//!
//! The reference multiplies the operands *after* rounding them to their matmul dtypes, in
//! f64 with `matrixmultiply::dgemm` (through `sim::gemm_f64`): a different precision and a
//! different code path from the simulator's per-tile fp32 products. An element passes when
//! `|c - ref| <= 2 * K * eps32 * (|A| @ |B|) + u_out * (|ref| + that bound) + s_out / 2`,
//! where `eps32 = 2^-23`, `u_out` is the unit roundoff of the output dtype and `s_out` its
//! smallest subnormal (both 0 for fp32): the SPEC's bound plus the final rounding of a
//! narrower output, whose error near zero is absolute (half the subnormal spacing), not
//! relative.

use penguin::DType;
use serde::Serialize;

/// The outcome of the check.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Check {
    /// Largest `|c - ref|`.
    pub max_abs_err: f64,
    /// Largest `|c - ref| / (|A| @ |B|)` (error relative to the dot product's magnitude).
    pub max_rel_err: f64,
    /// Whether every element is within the bound.
    pub passed: bool,
    /// Elements outside the bound.
    pub failures: u64,
}

/// `C = A @ B` and `|A| @ |B|` in f64 for row-major `a` (`m x k`) and `b` (`k x n`).
pub fn reference(m: usize, k: usize, n: usize, a: &[f64], b: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let abs_a: Vec<f64> = a.iter().map(|v| v.abs()).collect();
    let abs_b: Vec<f64> = b.iter().map(|v| v.abs()).collect();
    (sim::gemm_f64(m, k, n, a, b), sim::gemm_f64(m, k, n, &abs_a, &abs_b))
}

/// Compare the simulated `c` against the reference.
pub fn check(c: &[f32], reference: &[f64], magnitude: &[f64], k: u64, out: DType) -> Check {
    let eps32 = f64::from(f32::EPSILON);
    let (u_out, half_subnormal) =
        if out == DType::Fp32 { (0.0, 0.0) } else { (out.unit_roundoff(), f64::from(out.decode(1)) / 2.0) };
    let mut result = Check { max_abs_err: 0.0, max_rel_err: 0.0, passed: true, failures: 0 };
    for ((&got, &want), &mag) in c.iter().zip(reference).zip(magnitude) {
        let err = (f64::from(got) - want).abs();
        let bound = 2.0 * k as f64 * eps32 * mag;
        let bound = bound + u_out * (want.abs() + bound) + half_subnormal;
        // NaN compares false, so a NaN result counts as a failure.
        let within = err <= bound;
        if !within {
            result.failures += 1;
            result.passed = false;
        }
        if err.is_nan() {
            result.max_abs_err = f64::NAN;
            result.max_rel_err = f64::NAN;
            continue;
        }
        result.max_abs_err = result.max_abs_err.max(err);
        if mag > 0.0 {
            result.max_rel_err = result.max_rel_err.max(err / mag);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_matches_hand_product() {
        let (c, mag) = reference(2, 2, 2, &[1.0, -2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, -8.0]);
        assert_eq!(c, vec![-9.0, 22.0, 43.0, -14.0]);
        assert_eq!(mag, vec![19.0, 22.0, 43.0, 50.0]);
    }

    #[test]
    fn bound_accepts_rounding_and_rejects_real_errors() {
        let ok = check(&[1.0 + f32::EPSILON], &[1.0], &[1.0], 1, DType::Fp32);
        assert!(ok.passed);
        let bad = check(&[1.001], &[1.0], &[1.0], 128, DType::Fp32);
        assert!(!bad.passed);
        assert_eq!(bad.failures, 1);
        // An fp16 output below the normal range is rounded to a multiple of 2^-24: absolutely,
        // not relative to its value (1.5 * 2^-24 rounds to 2 * 2^-24, a third off).
        let tiny = 1.5 * 2f64.powi(-24);
        let got = DType::Fp16.round_trip(tiny as f32);
        assert_ne!(f64::from(got), tiny);
        assert!(check(&[got], &[tiny], &[tiny], 1, DType::Fp16).passed);
        assert!(!check(&[got + 2.0 * 2f32.powi(-24)], &[tiny], &[tiny], 1, DType::Fp16).passed);
        let nan = check(&[f32::NAN], &[1.0], &[1.0], 1, DType::Fp32);
        assert!(!nan.passed);
        // A bf16 output is allowed its own rounding.
        assert!(check(&[1.0078125], &[1.0039], &[1.0], 1, DType::Bf16).passed);
    }
}
