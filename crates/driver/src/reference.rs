//! The independent check of a simulated GEMM: an fp64 reference and the SPEC's error bound.
//!
//! The reference multiplies the operands *after* rounding them to their matmul dtypes, in
//! f64 with `matrixmultiply::dgemm` (through `sim::gemm_f64`, multi-threaded): a different
//! precision and a different code path from the simulator's per-tile fp32 products. A finite
//! reference element passes when
//! `|c - ref| <= 2 * K * eps32 * (|A| @ |B|) + u_out * (|ref| + that bound) + s_out / 2`,
//! where `eps32 = 2^-23`, `u_out` is the unit roundoff of the output dtype and `s_out` its
//! smallest subnormal (both 0 for fp32): the SPEC's bound plus the final rounding of a
//! narrower output, whose error near zero is absolute (half the subnormal spacing), not
//! relative. Non-finite elements are compared by class: NaN where the reference is NaN, an
//! infinity of the same sign where it is infinite, and an infinity of the reference's sign is
//! also accepted where a finite reference plus its bound reaches past the output dtype's range.
//!
//! Small products (at most [`CheckOptions::exact_limit`] multiply-adds) are compared element
//! by element. Larger ones are compared exactly on sampled rows and columns, and everywhere
//! through a randomized product check (Freivalds): `C x - A (B x)` and `y^T C - (y^T A) B` for
//! random sign vectors weighted by the column and row magnitudes. A row or column whose
//! residual exceeds half its mean per-element bound is then compared exactly, so an element
//! outside its bound is found unless its bound is far below its row's and column's mean.
//! FAIL therefore always rests on an exact elementwise comparison: the randomized part only
//! chooses where to look, at `O(MK + KN + MN)` cost instead of the product's `O(MKN)`.

mod bound;
mod exact;
mod screen;
mod simd;

pub use bound::{Bound, Matrix};

#[cfg(test)]
use exact::FEW;
use exact::{exact_cols, exact_rows};

use penguin::{Cancel, DType};
use rand::seq::index::sample;
use rand::SeedableRng;
use serde::Serialize;

/// `v` rounded to `dtype` and back (RNE), as `dtype.round_trip(v)`, with fast paths for the
/// common float types.
pub fn round_to(dtype: DType, v: f32) -> f32 {
    match dtype {
        DType::Fp32 => v,
        DType::Bf16 => bf16_round(v),
        DType::Fp16 => half::f16::from_f32(v).to_f32(),
        _ => dtype.round_trip(v),
    }
}

/// `v` rounded to bfloat16 (RNE) and back, as `half::bf16::from_f32(v).to_f32()` (NaN stays
/// NaN, quieted), without branches so that loops over it vectorise.
fn bf16_round(v: f32) -> f32 {
    let x = v.to_bits();
    let rounded = x.wrapping_add(0x7FFF + ((x >> 16) & 1)) & 0xFFFF_0000;
    let nan = (x & 0xFFFF_0000) | 0x0040_0000;
    f32::from_bits(if x & 0x7FFF_FFFF > 0x7F80_0000 { nan } else { rounded })
}

/// Round every value to `first`, then to `then` (each [`round_to`]); one pass when they are
/// the same dtype (rounding twice to one dtype changes nothing).
pub fn round_all(values: &mut [f32], first: DType, then: DType) {
    let pass = |values: &mut [f32], dtype: DType| match dtype {
        DType::Fp32 => {}
        DType::Bf16 => values.iter_mut().for_each(|v| *v = bf16_round(*v)),
        _ => values.iter_mut().for_each(|v| *v = round_to(dtype, *v)),
    };
    pass(values, first);
    if then != first {
        pass(values, then);
    }
}

/// The outcome of the check.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Check {
    /// Largest `|c - ref|` over the finite elements compared exactly.
    pub max_abs_err: f64,
    /// Largest `|c - ref| / (|A| @ |B|)` (error relative to the dot product's magnitude).
    pub max_rel_err: f64,
    /// Largest `|c - ref|` over the element's bound (at most 1 when everything passes).
    pub max_err_over_bound: f64,
    /// Whether every element compared is within its bound (or of its reference's class).
    pub passed: bool,
    /// Elements outside the bound among those compared exactly (when more than 64 rows or
    /// columns are flagged and the first 64 already fail, the rest are not compared, so this
    /// is then a lower bound).
    pub failures: u64,
    /// Elements compared exactly with the fp64 reference.
    pub checked: u64,
    /// Elements of C.
    pub elements: u64,
    /// Elements whose reference is non-finite, compared by class.
    pub nonfinite: u64,
    /// `exact` (every element) or `sampled+freivalds` (see the module doc).
    pub method: &'static str,
    /// The bound applied.
    pub bound: Bound,
}

impl Check {
    /// One line saying what was compared and with which bound.
    pub fn describe(&self) -> String {
        let what = if self.checked == self.elements {
            format!("all {} elements", self.elements)
        } else {
            format!("{} of {} elements exactly, all by a randomized product check", self.checked, self.elements)
        };
        let nonfinite = if self.nonfinite > 0 {
            format!(" ({} non-finite, compared by class)", self.nonfinite)
        } else {
            String::new()
        };
        format!("{what}{nonfinite}; bound {}", self.bound.formula())
    }
}

/// How thoroughly [`check`] compares.
#[derive(Clone, Copy, Debug)]
pub struct CheckOptions {
    /// Products of at most this many multiply-adds are compared element by element.
    pub exact_limit: u64,
    /// Random rows and columns compared exactly beside the first and last.
    pub samples: usize,
    /// Seed of the sampled rows and columns and of the random probes.
    pub seed: u64,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions { exact_limit: 1 << 27, samples: 8, seed: 0x6e74_696c_6521 }
    }
}

/// The running totals of the elementwise comparison.
#[derive(Default)]
struct Tally {
    max_abs: f64,
    max_rel: f64,
    max_ratio: f64,
    failures: u64,
    checked: u64,
    nonfinite: u64,
}

impl Tally {
    /// Compare one element; `false` when it is outside its bound or of the wrong class.
    fn judge(&mut self, bound: &Bound, got: f32, want: f64, mag: f64) -> bool {
        self.checked += 1;
        let got = f64::from(got);
        let ok = if !want.is_finite() {
            self.nonfinite += 1;
            // NaN where the reference is NaN, an infinity of the same sign where it is one.
            if want.is_nan() {
                got.is_nan()
            } else {
                got == want
            }
        } else if got.is_infinite() {
            // A finite reference may round past the output range to an infinity of its sign.
            got.signum() == want.signum() && want.abs() + bound.at(want, mag) >= bound.out_max
        } else {
            let err = (got - want).abs();
            let limit = bound.at(want, mag);
            // NaN compares false, so a NaN result fails.
            let within = err <= limit;
            // A NaN error makes the maxima NaN for good, whatever order elements come in.
            if err.is_nan() || self.max_abs.is_nan() {
                self.max_abs = f64::NAN;
                self.max_rel = f64::NAN;
                self.max_ratio = f64::NAN;
            } else {
                self.max_abs = self.max_abs.max(err);
                if mag > 0.0 {
                    self.max_rel = self.max_rel.max(err / mag);
                }
                if limit > 0.0 {
                    self.max_ratio = self.max_ratio.max(err / limit);
                } else if err > 0.0 {
                    self.max_ratio = f64::INFINITY;
                }
            }
            within
        };
        if !ok {
            self.failures += 1;
        }
        ok
    }
}

/// Check the simulated `c` (`m x n`) against `a @ b` for the rounded operands `a` (`m x k`)
/// and `b` (`k x n`); `k_bound` is the contraction length of the bound.
pub fn check(a: Matrix<'_>, b: Matrix<'_>, c: &[f32], k_bound: u64, out: DType, opts: CheckOptions) -> Check {
    prepare(a, b, k_bound, out, opts, None).check(a, b, c)
}

/// The part of [`check`] that does not need C: which rows and columns are sampled, the
/// randomized probes multiplied by A and B, and the fp64 reference of the sampled rows and
/// columns. It can be computed while C is being simulated; [`Prepared::check`] finishes it.
pub struct Prepared {
    bound: Bound,
    sampled: Option<Box<Sampled>>,
    /// What it was prepared for: `(m, k, n)`, `k_bound` and the options.
    dims: (usize, usize, usize),
    k_bound: u64,
    opts: CheckOptions,
    /// The run's flag, polled by the sweeps (per piece of rows, per sampled row block).
    cancel: Option<Cancel>,
}

/// What the sampled check prepares.
struct Sampled {
    /// Sampled rows and columns (each loop's first and last and `opts.samples` random ones),
    /// sorted.
    rows: Vec<usize>,
    cols: Vec<usize>,
    /// The reference and magnitude of every element of `rows` (row by row) and of `cols`
    /// (row by row, `cols.len()` per row of C).
    row_refs: Vec<(f64, f64)>,
    col_refs: Vec<(f64, f64)>,
    /// Rows of A and columns of B holding NaN or an infinity.
    bad_rows: Vec<bool>,
    bad_cols: Vec<bool>,
    probes: screen::Probes,
}

/// Prepare [`check`] of `a @ b` (see [`Prepared`]). The sweeps of the preparation and of
/// [`Prepared::check`] poll `cancel` about every millisecond of work and stop early once it
/// is set; what they give then is incomplete, and the caller, seeing its flag set, discards it.
pub fn prepare(
    a: Matrix<'_>,
    b: Matrix<'_>,
    k_bound: u64,
    out: DType,
    opts: CheckOptions,
    cancel: Option<&Cancel>,
) -> Prepared {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let bound = Bound::new(k_bound, out);
    let work = (m as u64).saturating_mul(k as u64).saturating_mul(n as u64);
    let sampled = (work > opts.exact_limit && m > 2 && n > 2).then(|| Box::new(prepare_sampled(a, b, opts, cancel)));
    Prepared { bound, sampled, dims: (m, k, n), k_bound, opts, cancel: cancel.cloned() }
}

impl Prepared {
    /// Check the simulated `c` against `a @ b`, with the `a` and `b` it was prepared with
    /// (operands of other dimensions are prepared afresh).
    pub fn check(&self, a: Matrix<'_>, b: Matrix<'_>, c: &[f32]) -> Check {
        if (a.rows, a.cols, b.cols) != self.dims {
            return prepare(a, b, self.k_bound, self.bound.out, self.opts, self.cancel.as_ref()).check(a, b, c);
        }
        let (m, n) = (a.rows, b.cols);
        let bound = self.bound;
        let cancel = self.cancel.as_ref();
        let mut tally = Tally::default();
        let method = match &self.sampled {
            None => {
                let rows: Vec<usize> = (0..m).collect();
                exact_rows(a, b, &rows, cancel, |i, j, want, mag| {
                    tally.judge(&bound, c[i * n + j], want, mag);
                });
                "exact"
            }
            Some(s) => {
                s.finish(a, b, c, &bound, &mut tally, cancel);
                "sampled+freivalds"
            }
        };
        Check {
            max_abs_err: tally.max_abs,
            max_rel_err: tally.max_rel,
            max_err_over_bound: tally.max_ratio,
            passed: tally.failures == 0,
            failures: tally.failures,
            checked: tally.checked,
            elements: (m * n) as u64,
            nonfinite: tally.nonfinite,
            method,
            bound,
        }
    }
}

/// Most flagged rows (and columns) compared before the rest are given up on once some fail.
const FLAGGED_FIRST: usize = 64;

/// The sampled rows and columns with their references, and the probes.
fn prepare_sampled(a: Matrix<'_>, b: Matrix<'_>, opts: CheckOptions, cancel: Option<&Cancel>) -> Sampled {
    let (m, n) = (a.rows, b.cols);
    let mut rng = rand::rngs::StdRng::seed_from_u64(opts.seed);
    let pick = |len: usize, rng: &mut rand::rngs::StdRng| {
        let mut v: Vec<usize> = sample(rng, len, opts.samples.min(len)).into_vec();
        v.extend([0, len - 1]);
        v.sort_unstable();
        v.dedup();
        v
    };
    let rows = pick(m, &mut rng);
    let cols = pick(n, &mut rng);
    // Rows of A and columns of B holding NaN or an infinity make their whole row or column
    // of C non-finite; they stay out of the probes and are compared exactly instead.
    let bad_rows: Vec<bool> = (0..m).map(|i| a.row(i).iter().any(|v| !v.is_finite())).collect();
    let mut bad_cols = vec![false; n];
    for kk in 0..b.rows {
        for (flag, v) in bad_cols.iter_mut().zip(b.row(kk)) {
            *flag |= !v.is_finite();
        }
    }
    let probes = screen::probe(a, b, (&bad_rows, &bad_cols), &mut rng, cancel);
    let mut row_refs = vec![(f64::NAN, f64::NAN); rows.len() * n];
    exact_rows(a, b, &rows, cancel, |i, j, want, mag| {
        if let Ok(t) = rows.binary_search(&i) {
            row_refs[t * n + j] = (want, mag);
        }
    });
    let mut col_refs = vec![(f64::NAN, f64::NAN); m * cols.len()];
    exact_cols(a, b, &cols, cancel, |i, j, want, mag| {
        if let Ok(t) = cols.binary_search(&j) {
            col_refs[i * cols.len() + t] = (want, mag);
        }
    });
    Sampled { rows, cols, row_refs, col_refs, bad_rows, bad_cols, probes }
}

impl Sampled {
    /// Sampled rows and columns, non-finite ones and those the randomized check flags,
    /// compared exactly: the sampled ones from their prepared references, the others now.
    fn finish(
        &self,
        a: Matrix<'_>,
        b: Matrix<'_>,
        c: &[f32],
        bound: &Bound,
        tally: &mut Tally,
        cancel: Option<&Cancel>,
    ) {
        let (m, n) = (a.rows, b.cols);
        let (bad_rows, bad_cols) = (&self.bad_rows, &self.bad_cols);
        let flags = screen::screen(&self.probes, c, bound, (bad_rows, bad_cols), cancel);
        if penguin::cancel::stopped(cancel) {
            // A stopped screen flags every row; what the check gives now is discarded.
            return;
        }
        let take = |list: &mut Vec<usize>, flagged: &[usize], limit: usize| {
            list.extend(flagged.iter().take(limit));
            list.sort_unstable();
            list.dedup();
        };
        let mut rows = self.rows.clone();
        let mut cols = self.cols.clone();
        rows.extend((0..m).filter(|&i| bad_rows[i]));
        cols.extend((0..n).filter(|&j| bad_cols[j]));
        take(&mut rows, &flags.rows, FLAGGED_FIRST);
        take(&mut cols, &flags.cols, FLAGGED_FIRST);
        // Every element of the rows, then of the columns outside those rows, once.
        let mut in_rows = vec![false; m];
        for &r in &rows {
            in_rows[r] = true;
        }
        for (t, &i) in self.rows.iter().enumerate() {
            for j in 0..n {
                let (want, mag) = self.row_refs[t * n + j];
                tally.judge(bound, c[i * n + j], want, mag);
            }
        }
        let fresh_rows: Vec<usize> = rows.iter().copied().filter(|r| self.rows.binary_search(r).is_err()).collect();
        exact_rows(a, b, &fresh_rows, cancel, |i, j, want, mag| {
            tally.judge(bound, c[i * n + j], want, mag);
        });
        let s = self.cols.len();
        for i in (0..m).filter(|&i| !in_rows[i]) {
            for (t, &j) in self.cols.iter().enumerate() {
                let (want, mag) = self.col_refs[i * s + t];
                tally.judge(bound, c[i * n + j], want, mag);
            }
        }
        let fresh_cols: Vec<usize> = cols.iter().copied().filter(|c| self.cols.binary_search(c).is_err()).collect();
        exact_cols(a, b, &fresh_cols, cancel, |i, j, want, mag| {
            if !in_rows[i] {
                tally.judge(bound, c[i * n + j], want, mag);
            }
        });
        if tally.failures == 0 && (flags.rows.len() > FLAGGED_FIRST || flags.cols.len() > FLAGGED_FIRST) {
            // Every flag so far was a false alarm: look at the rest too before calling it a PASS.
            let (done_rows, done_cols) = (rows.clone(), cols.clone());
            take(&mut rows, &flags.rows, usize::MAX);
            take(&mut cols, &flags.cols, usize::MAX);
            let fresh_rows: Vec<usize> = rows.iter().copied().filter(|r| done_rows.binary_search(r).is_err()).collect();
            let fresh_cols: Vec<usize> = cols.iter().copied().filter(|c| done_cols.binary_search(c).is_err()).collect();
            // Elements of the rows already done are not compared twice.
            exact_rows(a, b, &fresh_rows, cancel, |i, j, want, mag| {
                if done_cols.binary_search(&j).is_err() {
                    tally.judge(bound, c[i * n + j], want, mag);
                }
            });
            for &r in &fresh_rows {
                in_rows[r] = true;
            }
            exact_cols(a, b, &fresh_cols, cancel, |i, j, want, mag| {
                if !in_rows[i] {
                    tally.judge(bound, c[i * n + j], want, mag);
                }
            });
        }
    }
}

#[cfg(test)]
mod tests;
