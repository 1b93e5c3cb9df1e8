//! The exact part of the check: the fp64 reference `a @ b` and its magnitude `|A| @ |B|` on
//! listed rows or columns of C.
//!
//! A few rows (or columns), the usual case, run as plain f64 loops compiled with wide vectors
//! where the processor has them (see `super::simd`): the rows' accumulators side by side along
//! a block of columns of B, and the columns' along a block of rows of A, so that every step
//! is a whole-vector update and every element is still summed in k order. More go through
//! the packed, multi-threaded `dgemm` (`sim::gemm_f64`).

use std::ops::Range;

use penguin::Cancel;

use super::bound::Matrix;
use super::{screen, simd};

/// Bytes of f64 scratch per operand block (bounds the memory of the exact products).
const BLOCK_BYTES: usize = 64 << 20;

/// The f64 copy and its absolute values of the selected rows of `m`.
fn rows_f64(m: Matrix<'_>, rows: impl Iterator<Item = usize>) -> (Vec<f64>, Vec<f64>) {
    let mut v = Vec::new();
    for r in rows {
        v.extend(m.row(r).iter().map(|&x| f64::from(x)));
    }
    let abs = v.iter().map(|x| x.abs()).collect();
    (v, abs)
}

/// Rows or columns up to which the exact products run as plain f64 loops; more go through
/// the packed, multi-threaded `dgemm`.
pub(super) const FEW: usize = 64;

/// Columns of B per block of the few-rows product (one row's accumulators for a block fill
/// four 256-bit vectors).
const COL_BLOCK: usize = 16;

/// Rows of A the few-columns product carries side by side.
const ROW_LANES: usize = 16;

/// `visit(i, j, ref, mag)` for every element of the listed rows of `a @ b`.
///
/// Once `cancel` is set the sweep stops early and some elements are never visited.
pub(super) fn exact_rows(
    a: Matrix<'_>,
    b: Matrix<'_>,
    rows: &[usize],
    cancel: Option<&Cancel>,
    mut visit: impl FnMut(usize, usize, f64, f64),
) {
    let (k, n) = (a.cols, b.cols);
    // The rows widened to f64 can be all of A: not begun once the flag is set.
    if rows.is_empty() || k == 0 || n == 0 || penguin::cancel::stopped(cancel) {
        return;
    }
    let (ar, ar_abs) = rows_f64(a, rows.iter().copied());
    if rows.len() <= FEW {
        // One sweep of B, split by columns across the cores.
        let r = rows.len();
        let parts = screen::par_rows(n, k * r, cancel, |cols| (cols.clone(), few_rows_wide(b, &ar, &ar_abs, r, cols)));
        for (cols, (out, mag)) in parts {
            let w = cols.len();
            for (t, &i) in rows.iter().enumerate() {
                for (jj, j) in cols.clone().enumerate() {
                    visit(i, j, out[t * w + jj], mag[t * w + jj]);
                }
            }
        }
        return;
    }
    // Columns of B per block so that a block of B in f64 stays within BLOCK_BYTES.
    let nb = (BLOCK_BYTES / 8 / k).clamp(64, n.max(64)).min(n);
    for j0 in (0..n).step_by(nb) {
        if penguin::cancel::stopped(cancel) {
            return;
        }
        let j1 = (j0 + nb).min(n);
        let w = j1 - j0;
        let mut bb = Vec::with_capacity(k * w);
        for kk in 0..k {
            bb.extend(b.row(kk)[j0..j1].iter().map(|&x| f64::from(x)));
        }
        let bb_abs: Vec<f64> = bb.iter().map(|x| x.abs()).collect();
        let r = sim::gemm_f64(rows.len(), k, w, &ar, &bb);
        let mag = sim::gemm_f64(rows.len(), k, w, &ar_abs, &bb_abs);
        for (t, &i) in rows.iter().enumerate() {
            for j in 0..w {
                visit(i, j0 + j, r[t * w + j], mag[t * w + j]);
            }
        }
    }
}

/// `visit(i, j, ref, mag)` for every element of the listed columns of `a @ b`.
///
/// Once `cancel` is set the sweep stops early and some elements are never visited.
pub(super) fn exact_cols(
    a: Matrix<'_>,
    b: Matrix<'_>,
    cols: &[usize],
    cancel: Option<&Cancel>,
    mut visit: impl FnMut(usize, usize, f64, f64),
) {
    let (m, k) = (a.rows, a.cols);
    if cols.is_empty() || k == 0 || m == 0 || penguin::cancel::stopped(cancel) {
        return;
    }
    let s = cols.len();
    if s <= FEW {
        // The listed columns of B one after the other (`[s, k]`).
        let mut bs = vec![0f64; s * k];
        for (kk, row) in (0..k).map(|kk| (kk, b.row(kk))) {
            for (t, &j) in cols.iter().enumerate() {
                bs[t * k + kk] = f64::from(row[j]);
            }
        }
        let parts = screen::par_rows(m, k * s, cancel, |rows| few_cols_wide(a, &bs, s, rows)).concat();
        for i in 0..m {
            for (t, &j) in cols.iter().enumerate() {
                let (o, g) = out_at(&parts, i * s + t);
                visit(i, j, o, g);
            }
        }
        return;
    }
    let mut bs = Vec::with_capacity(k * s);
    for kk in 0..k {
        let row = b.row(kk);
        bs.extend(cols.iter().map(|&j| f64::from(row[j])));
    }
    let bs_abs: Vec<f64> = bs.iter().map(|x| x.abs()).collect();
    let mb = (BLOCK_BYTES / 8 / k).clamp(64, m.max(64)).min(m);
    for i0 in (0..m).step_by(mb) {
        if penguin::cancel::stopped(cancel) {
            return;
        }
        let i1 = (i0 + mb).min(m);
        let (ab, ab_abs) = rows_f64(a, i0..i1);
        let r = sim::gemm_f64(i1 - i0, k, s, &ab, &bs);
        let mag = sim::gemm_f64(i1 - i0, k, s, &ab_abs, &bs_abs);
        for i in 0..i1 - i0 {
            for (t, &j) in cols.iter().enumerate() {
                visit(i0 + i, j, r[i * s + t], mag[i * s + t]);
            }
        }
    }
}

simd::wide! {
    /// [`few_rows`], with wider vectors where the processor has them.
    fn few_rows_wide(b: Matrix<'_>, ar: &[f64], ar_abs: &[f64], r: usize, cols: Range<usize>) -> (Vec<f64>, Vec<f64>) => few_rows
}

/// The reference and magnitude (`[r, w]` each, row by row) of the `r` rows of A in `ar` (their
/// absolute values in `ar_abs`, `[r, k]` f64 each) on the columns `cols` (`w` of them) of B.
/// A block of `COL_BLOCK` columns of B is widened once (`[k, COL_BLOCK]`), then each row's
/// accumulators for the block stay in registers through the whole contraction.
#[inline(always)]
fn few_rows(b: Matrix<'_>, ar: &[f64], ar_abs: &[f64], r: usize, cols: Range<usize>) -> (Vec<f64>, Vec<f64>) {
    let (k, w) = (b.rows, cols.len());
    let (mut out, mut mag) = (vec![0f64; r * w], vec![0f64; r * w]);
    let (mut v, mut va) = (vec![[0f64; COL_BLOCK]; k], vec![[0f64; COL_BLOCK]; k]);
    for c0 in (0..w).step_by(COL_BLOCK) {
        let c1 = (c0 + COL_BLOCK).min(w);
        for (kk, (v, va)) in v.iter_mut().zip(va.iter_mut()).enumerate() {
            let brow = &b.row(kk)[cols.start + c0..cols.start + c1];
            for (l, (v, va)) in v.iter_mut().zip(va.iter_mut()).enumerate() {
                *v = brow.get(l).map_or(0.0, |&x| f64::from(x));
                *va = v.abs();
            }
        }
        for t in 0..r {
            let (row, row_abs) = (&ar[t * k..(t + 1) * k], &ar_abs[t * k..(t + 1) * k]);
            let (mut o, mut g) = ([0f64; COL_BLOCK], [0f64; COL_BLOCK]);
            for (((v, va), &x), &xa) in v.iter().zip(&va).zip(row).zip(row_abs) {
                for l in 0..COL_BLOCK {
                    o[l] += x * v[l];
                    g[l] += xa * va[l];
                }
            }
            out[t * w + c0..t * w + c1].copy_from_slice(&o[..c1 - c0]);
            mag[t * w + c0..t * w + c1].copy_from_slice(&g[..c1 - c0]);
        }
    }
    (out, mag)
}

simd::wide! {
    /// [`few_cols`], with wider vectors where the processor has them.
    fn few_cols_wide(a: Matrix<'_>, bs: &[f64], s: usize, rows: Range<usize>) -> Vec<(f64, f64)> => few_cols
}

/// The reference and magnitude of the `s` listed columns (`bs`, `[s, k]` in f64) for `rows`
/// of A, row by row: `ROW_LANES` rows of A at a time, side by side (`[k, ROW_LANES]`), so
/// that each step updates a whole vector of accumulators, one per row.
#[inline(always)]
fn few_cols(a: Matrix<'_>, bs: &[f64], s: usize, rows: Range<usize>) -> Vec<(f64, f64)> {
    let k = a.cols;
    let mut out = vec![(0f64, 0f64); rows.len() * s];
    let mut at = vec![[0f64; ROW_LANES]; k];
    for i0 in rows.clone().step_by(ROW_LANES) {
        let h = (rows.end - i0).min(ROW_LANES);
        for (lane, i) in (i0..i0 + ROW_LANES).enumerate() {
            match (i < i0 + h).then(|| a.row(i)) {
                Some(row) => at.iter_mut().zip(row).for_each(|(dst, &x)| dst[lane] = f64::from(x)),
                None => at.iter_mut().for_each(|dst| dst[lane] = 0.0),
            }
        }
        for (t, col) in bs.chunks_exact(k).enumerate().take(s) {
            let (mut o, mut g) = ([0f64; ROW_LANES], [0f64; ROW_LANES]);
            for (x, &v) in at.iter().zip(col) {
                for l in 0..ROW_LANES {
                    let p = x[l] * v;
                    o[l] += p;
                    g[l] += p.abs();
                }
            }
            for lane in 0..h {
                out[(i0 - rows.start + lane) * s + t] = (o[lane], g[lane]);
            }
        }
    }
    out
}

/// An element of the concatenated per-chunk results, or NaN (compared as a failure) if a
/// chunk went missing.
fn out_at(parts: &[(f64, f64)], at: usize) -> (f64, f64) {
    parts.get(at).copied().unwrap_or((f64::NAN, f64::NAN))
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::*;

    /// Values of every magnitude, of both signs, some zero.
    fn values(len: usize, rng: &mut rand::rngs::StdRng) -> Vec<f32> {
        (0..len)
            .map(|i| if i % 7 == 3 { 0.0 } else { rng.gen_range(-1.0f32..1.0) * 2f32.powi(rng.gen_range(-60..60)) })
            .collect()
    }

    /// The wide and the plain kernels give the same bits, on shapes with ragged blocks.
    #[test]
    fn wide_kernels_give_the_plain_kernels_bits() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let (m, k, n) = (37, 29, 45);
        let (a, b) = (values(m * k, &mut rng), values(k * n, &mut rng));
        let (am, bm) = (Matrix { rows: m, cols: k, data: &a }, Matrix { rows: k, cols: n, data: &b });
        let (ar, ar_abs) = rows_f64(am, [0, 4, 36].into_iter());
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
        let plain = few_rows(bm, &ar, &ar_abs, 3, 3..n);
        let wide = few_rows_wide(bm, &ar, &ar_abs, 3, 3..n);
        assert_eq!((bits(&plain.0), bits(&plain.1)), (bits(&wide.0), bits(&wide.1)));
        let bref = &b;
        let bs: Vec<f64> = [2, 44].iter().flat_map(|&j| (0..k).map(move |kk| f64::from(bref[kk * n + j]))).collect();
        let pairs = |v: Vec<(f64, f64)>| v.into_iter().map(|(r, g)| (r.to_bits(), g.to_bits())).collect::<Vec<_>>();
        assert_eq!(pairs(few_cols(am, &bs, 2, 1..m)), pairs(few_cols_wide(am, &bs, 2, 1..m)));
    }
}
