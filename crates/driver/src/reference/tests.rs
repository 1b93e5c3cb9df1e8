//! Tests of the check: the bound, non-finite classes, and that one wrong element anywhere is
//! found by the sampled + randomized path.

use rand::{Rng, SeedableRng};

use super::*;

fn mat(rows: usize, cols: usize, data: &[f32]) -> Matrix<'_> {
    Matrix { rows, cols, data }
}

/// Check a single element `got` against the 1x1x1 product `want * 1`, with `k` in the bound.
fn one(got: f32, want: f32, k: u64, out: DType) -> Check {
    check(mat(1, 1, &[want]), mat(1, 1, &[1.0]), &[got], k, out, CheckOptions::default())
}

/// Options that take the sampled + randomized path at any size.
fn sampled_opts(seed: u64) -> CheckOptions {
    CheckOptions { exact_limit: 0, samples: 2, seed }
}

/// bf16-exact values in [-1, 1).
fn random(len: usize, rng: &mut rand::rngs::StdRng) -> Vec<f32> {
    (0..len).map(|_| DType::Bf16.round_trip(rng.gen_range(-1.0f32..1.0))).collect()
}

/// `a @ b` accumulated in f32 in chunks of 128 along K, as a tiled kernel would.
fn tiled_f32(m: usize, k: usize, n: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for k0 in (0..k).step_by(128) {
        for i in 0..m {
            for j in 0..n {
                let mut s = 0f32;
                for kk in k0..(k0 + 128).min(k) {
                    s += a[i * k + kk] * b[kk * n + j];
                }
                c[i * n + j] += s;
            }
        }
    }
    c
}

/// The reference and `|A| @ |B|` of one element, by a plain f64 loop.
fn naive(k: usize, n: usize, a: &[f32], b: &[f32], i: usize, j: usize) -> (f64, f64) {
    (0..k).fold((0.0, 0.0), |(s, mag), kk| {
        let p = f64::from(a[i * k + kk]) * f64::from(b[kk * n + j]);
        (s + p, mag + p.abs())
    })
}

#[test]
fn fast_rounding_agrees_with_the_dtype_rounding() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let mut values: Vec<f32> = (0..20000).map(|_| f32::from_bits(rng.gen())).collect();
    values.extend([0.0, -0.0, 1.0 + f32::EPSILON, 65520.0, 65519.0, f32::MAX, f32::INFINITY, 1e-8]);
    for dtype in [DType::Fp32, DType::Bf16, DType::Fp16, DType::Fp8e4m3] {
        for &v in &values {
            let (fast, slow) = (round_to(dtype, v), dtype.round_trip(v));
            let same = fast.to_bits() == slow.to_bits() || (fast.is_nan() && slow.is_nan());
            assert!(same, "{dtype} {v:e}: {fast:e} vs {slow:e}");
        }
    }
}

/// A product of rows and columns past the plain-loop limit goes through dgemm and agrees.
#[test]
fn many_exact_rows_and_columns_agree_with_few() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let (m, k, n) = (FEW + 6, 33, FEW + 9);
    let a = random(m * k, &mut rng);
    let b = random(k * n, &mut rng);
    let (am, bm) = (mat(m, k, &a), mat(k, n, &b));
    let (mut by_rows, mut by_cols) = (vec![(0.0, 0.0); m * n], vec![(0.0, 0.0); m * n]);
    let all_rows: Vec<usize> = (0..m).collect();
    let all_cols: Vec<usize> = (0..n).collect();
    exact_rows(am, bm, &all_rows, None, |i, j, r, g| by_rows[i * n + j] = (r, g));
    exact_cols(am, bm, &all_cols, None, |i, j, r, g| by_cols[i * n + j] = (r, g));
    exact_rows(am, bm, &all_rows[..3], None, |i, j, r, g| assert_eq!((r, g), naive(k, n, &a, &b, i, j)));
    exact_cols(am, bm, &all_cols[..3], None, |i, j, r, g| assert_eq!((r, g), naive(k, n, &a, &b, i, j)));
    for i in 0..m {
        for j in 0..n {
            let (want, mag) = naive(k, n, &a, &b, i, j);
            // Products of bf16 values are exact in f64 and the sums are short: every order agrees.
            assert_eq!(by_rows[i * n + j], (want, mag), "rows ({i}, {j})");
            assert_eq!(by_cols[i * n + j], (want, mag), "cols ({i}, {j})");
        }
    }
}

/// A few rows and columns split across the cores (the blocked, wide loops on column and row
/// ranges that do not start at 0) give the bits of the plain f64 loop.
#[test]
fn few_exact_rows_and_columns_on_every_core_match_the_plain_loop() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let (m, k, n) = (401, 227, 389);
    let a = random(m * k, &mut rng);
    let b = random(k * n, &mut rng);
    let (am, bm) = (mat(m, k, &a), mat(k, n, &b));
    let (mut seen_rows, mut seen_cols) = (0, 0);
    exact_rows(am, bm, &[0, 5, 200, 400], None, |i, j, r, g| {
        assert_eq!((r, g), naive(k, n, &a, &b, i, j), "row {i}, column {j}");
        seen_rows += 1;
    });
    exact_cols(am, bm, &[0, 17, 388], None, |i, j, r, g| {
        assert_eq!((r, g), naive(k, n, &a, &b, i, j), "row {i}, column {j}");
        seen_cols += 1;
    });
    assert_eq!((seen_rows, seen_cols), (4 * n, 3 * m));
}

#[test]
fn exact_mode_matches_a_hand_product() {
    let (a, b) = ([1.0, -2.0, 3.0, 4.0], [5.0, 6.0, 7.0, -8.0]);
    let ok = check(mat(2, 2, &a), mat(2, 2, &b), &[-9.0, 22.0, 43.0, -14.0], 2, DType::Fp32, CheckOptions::default());
    assert!(ok.passed);
    assert_eq!((ok.checked, ok.elements, ok.method, ok.max_abs_err), (4, 4, "exact", 0.0));
    let bad = check(mat(2, 2, &a), mat(2, 2, &b), &[-9.0, 22.0, 43.0, -14.5], 2, DType::Fp32, CheckOptions::default());
    assert_eq!((bad.passed, bad.failures, bad.max_abs_err), (false, 1, 0.5));
}

#[test]
fn bound_accepts_rounding_and_rejects_real_errors() {
    assert!(one(1.0 + f32::EPSILON, 1.0, 1, DType::Fp32).passed);
    let bad = one(1.001, 1.0, 128, DType::Fp32);
    assert_eq!((bad.passed, bad.failures), (false, 1));
    // An fp16 output below the normal range is rounded to a multiple of 2^-24: absolutely,
    // not relative to its value (1.5 * 2^-24 rounds to 2 * 2^-24, a third off).
    let tiny = (1.5 * 2f64.powi(-24)) as f32;
    let got = DType::Fp16.round_trip(tiny);
    assert_ne!(got, tiny);
    assert!(one(got, tiny, 1, DType::Fp16).passed);
    assert!(!one(got + 2.0 * 2f32.powi(-24), tiny, 1, DType::Fp16).passed);
    assert!(!one(f32::NAN, 1.0, 1, DType::Fp32).passed);
    // A bf16 output is allowed its own rounding, and the bound says so.
    let narrow = one(1.0078125, 1.0039, 1, DType::Bf16);
    assert!(narrow.passed);
    assert!(narrow.max_err_over_bound <= 1.0 && narrow.max_err_over_bound > 0.5, "{}", narrow.max_err_over_bound);
    assert!(narrow.bound.formula().contains("u_bf16"), "{}", narrow.bound.formula());
    assert!(!one(1.0, 1.0, 4, DType::Fp32).bound.formula().contains("u_"));
}

#[test]
fn non_finite_elements_are_compared_by_class() {
    // Row 0 of A holds NaN, row 1 holds +inf at k = 1: C row 0 is NaN, row 1 is +inf where
    // B[1, j] > 0, -inf where it is < 0 and NaN where it is 0.
    let a = [1.0, f32::NAN, 0.5, f32::INFINITY, 2.0, 1.0];
    let b = [1.0, 1.0, 1.0, 2.0, -3.0, 0.0];
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    let good = [nan, nan, nan, inf, -inf, nan, 4.0, -1.0, 2.0];
    let a = mat(3, 2, &a);
    let b = mat(2, 3, &b);
    let run = |c: &[f32]| check(a, b, c, 2, DType::Fp32, CheckOptions::default());
    let ok = run(&good);
    assert!(ok.passed, "{ok:?}");
    assert_eq!(ok.nonfinite, 6);
    for (at, wrong) in [(0, 1.0), (3, -inf), (4, inf), (5, inf), (6, nan), (7, inf)] {
        let mut c = good;
        c[at] = wrong;
        let r = run(&c);
        assert_eq!((r.passed, r.failures), (false, 1), "element {at} = {wrong}");
    }
}

#[test]
fn a_finite_reference_past_the_output_range_may_round_to_an_infinity_of_its_sign() {
    assert!(one(f32::INFINITY, 70000.0, 1, DType::Fp16).passed);
    assert!(!one(f32::NEG_INFINITY, 70000.0, 1, DType::Fp16).passed);
    assert!(!one(f32::INFINITY, 60000.0, 1, DType::Fp16).passed);
    assert!(!one(f32::INFINITY, 70000.0, 1, DType::Fp32).passed);
}

#[test]
fn one_wrong_element_anywhere_is_caught_by_the_sampled_check() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let (m, k, n) = (150, 300, 170);
    let a = random(m * k, &mut rng);
    let b = random(k * n, &mut rng);
    let c = tiled_f32(m, k, n, &a, &b);
    let (am, bm) = (mat(m, k, &a), mat(k, n, &b));
    let clean = check(am, bm, &c, k as u64, DType::Fp32, sampled_opts(1));
    assert!(clean.passed, "{clean:?}");
    assert_eq!(clean.method, "sampled+freivalds");
    assert!(clean.checked < (m * n / 4) as u64, "a correct C is compared on samples only: {}", clean.checked);
    let bound = Bound::new(k as u64, DType::Fp32);
    for trial in 0..40 {
        let (i, j) = (rng.gen_range(0..m), rng.gen_range(0..n));
        let (want, mag) = naive(k, n, &a, &b, i, j);
        let limit = bound.at(want, mag);
        let mut bad = c.clone();
        // Alternate a sign flip with a nudge just past the bound.
        bad[i * n + j] = if trial % 2 == 0 { -c[i * n + j] } else { (want + 1.5 * limit) as f32 };
        let expect_fail = (f64::from(bad[i * n + j]) - want).abs() > limit;
        let r = check(am, bm, &bad, k as u64, DType::Fp32, sampled_opts(trial));
        assert_eq!(
            (r.passed, r.failures),
            (!expect_fail, u64::from(expect_fail)),
            "trial {trial}: element ({i}, {j}) = {} vs {want} (bound {limit})",
            bad[i * n + j]
        );
    }
}

#[test]
fn the_sampled_check_compares_non_finite_rows_and_columns_by_class() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let (m, k, n) = (64, 96, 80);
    let mut a = random(m * k, &mut rng);
    let mut b = random(k * n, &mut rng);
    a[5 * k + 7] = f32::NAN;
    b[11 * n + 40] = f32::NEG_INFINITY;
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = naive(k, n, &a, &b, i, j).0 as f32;
        }
    }
    assert!(c[5 * n].is_nan() && c[40].is_infinite());
    let (am, bm) = (mat(m, k, &a), mat(k, n, &b));
    let ok = check(am, bm, &c, k as u64, DType::Fp32, sampled_opts(0));
    assert!(ok.passed, "{ok:?}");
    assert_eq!(ok.nonfinite, (n + m - 1) as u64);
    let mut flipped = c.clone();
    let at = (m - 3) * n + 40;
    flipped[at] = -flipped[at];
    let r = check(am, bm, &flipped, k as u64, DType::Fp32, sampled_opts(0));
    assert_eq!((r.passed, r.failures), (false, 1));
}

#[test]
fn a_wrong_block_fails_every_element_of_it_in_the_count() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let (m, k, n) = (130, 64, 140);
    let a = random(m * k, &mut rng);
    let b = random(k * n, &mut rng);
    let mut c = tiled_f32(m, k, n, &a, &b);
    for i in 10..14 {
        for j in 20..23 {
            c[i * n + j] += 10.0;
        }
    }
    let r = check(mat(m, k, &a), mat(k, n, &b), &c, k as u64, DType::Fp32, sampled_opts(5));
    assert_eq!((r.passed, r.failures), (false, 12));
}

#[test]
fn bf16_rounding_matches_half_bit_for_bit() {
    let edges = [
        0u32,
        0x8000_0000,
        0x0000_8000,
        0x0001_8000,
        0x0000_7FFF,
        0x0001_0000,
        0x3F80_8000,
        0x3F81_8000,
        0x7F7F_FFFF,
        0x7F7F_8000,
        0x7F80_0000,
        0xFF80_0000,
        0x7F80_0001,
        0x7FC0_0000,
        0xFFFF_FFFF,
        0x7FFF_8000,
        0x0000_0001,
        0x807F_FFFF,
    ];
    // Every 65521st bit pattern (a prime stride: all low-half bit patterns occur) and the edges.
    for x in (0..=u32::MAX).step_by(65_521).chain(edges) {
        let v = f32::from_bits(x);
        let want = half::bf16::from_f32(v).to_f32();
        assert_eq!(bf16_round(v).to_bits(), want.to_bits(), "{x:#010x}");
        assert_eq!(round_to(DType::Bf16, v).to_bits(), want.to_bits(), "{x:#010x}");
    }
    let mut v: Vec<f32> = (0..1000u32).map(|i| f32::from_bits(i.wrapping_mul(0x9E37_79B9))).collect();
    let mut twice = v.clone();
    round_all(&mut v, DType::Bf16, DType::Fp8e4m3);
    twice.iter_mut().for_each(|x| *x = DType::Fp8e4m3.round_trip(half::bf16::from_f32(*x).to_f32()));
    assert!(v.iter().zip(&twice).all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())));
}

/// The check prepared before C exists compares exactly the sampled rows and columns of a
/// correct C, each element once: `r` whole rows and, outside them, `s` whole columns.
#[test]
fn a_prepared_check_compares_each_sampled_element_once() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let (m, k, n) = (96, 200, 130);
    let a = random(m * k, &mut rng);
    let b = random(k * n, &mut rng);
    let c = tiled_f32(m, k, n, &a, &b);
    let (am, bm) = (mat(m, k, &a), mat(k, n, &b));
    let opts = sampled_opts(5);
    let prepared = prepare(am, bm, k as u64, DType::Fp32, opts, None);
    let r = prepared.check(am, bm, &c);
    assert!(r.passed, "{r:?}");
    // R sampled rows and S sampled columns (two random ones plus the first and last, fewer
    // where they coincide), none flagged: R whole rows, then S columns outside them.
    let fits: Vec<(usize, usize)> = (2..=4)
        .flat_map(|r| (2..=4).map(move |s| (r, s)))
        .filter(|&(rows, cols)| rows * n + cols * (m - rows) == r.checked as usize)
        .collect();
    assert_eq!(fits.len(), 1, "{r:?}");
    // The same as the one-call check, which prepares and finishes at once.
    assert_eq!(r, check(am, bm, &c, k as u64, DType::Fp32, opts));
    // Operands of other dimensions are prepared afresh rather than read out of bounds.
    let (a2, b2) = (mat(m / 2, k, &a[..m / 2 * k]), bm);
    assert_eq!(prepared.check(a2, b2, &c[..m / 2 * n]), check(a2, b2, &c[..m / 2 * n], k as u64, DType::Fp32, opts));
}

#[test]
fn a_sweep_stops_at_the_poll_that_sets_the_flag() {
    use penguin::Cancel;
    let (rows, cols) = (4096, 1 << 14);
    // At most 64 rows per piece (each core's chunk is at least 512): the whole sweep, in
    // order, when the flag is never set.
    let all = super::screen::par_rows(rows, cols, None, |r| r);
    assert!(all.len() >= rows / 64 && all.iter().all(|r| r.len() <= 64));
    assert!(all.windows(2).all(|w| w[0].end == w[1].start) && all[0].start == 0 && all[all.len() - 1].end == rows);
    // Set already: no piece runs. Set at the second poll: only the piece polled first runs,
    // whichever core polls first.
    assert!(super::screen::par_rows(rows, cols, Some(&Cancel::after(0)), |r| r).is_empty());
    let stopped = super::screen::par_rows(rows, cols, Some(&Cancel::after(2)), |r| r.len());
    assert_eq!(stopped, vec![64]);
}
