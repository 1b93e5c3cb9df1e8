//! The randomized product check (Freivalds) that chooses which rows and columns of C to
//! compare exactly.
//!
//! For `P` random sign vectors `x` weighted by `1 / sum_k |B[k, j]|` it computes the row
//! residuals `C x - A (B x)`, and for sign vectors `y` weighted by `1 / sum_k |A[i, k]|` the
//! column residuals `y^T C - (y^T A) B`, all in f64 in `O(MK + KN + MN)` per probe. With `E`
//! the error of C, a row residual is `sum_j E[i, j] x_j`: an element outside its bound moves
//! it by more than its own weighted bound, while correct elements' rounding errors, far below
//! theirs, largely cancel. A row (column) is flagged when a residual exceeds half the mean
//! weighted per-element bound of that row (column), or is not a number.

use std::ops::Range;

use rand::rngs::StdRng;
use rand::Rng;

use penguin::Cancel;

use super::bound::{Bound, Matrix};
use super::simd;

/// Random probes per side (one f64 vector register).
const PROBES: usize = 4;

/// Residuals above this fraction of the mean weighted bound are flagged.
const THETA: f64 = 0.5;

/// Matrices below this many elements are swept on one thread.
const PARALLEL_ELEMS: usize = 1 << 18;

type Probe = [f64; PROBES];

/// Rows and columns to compare exactly, most suspicious first.
pub(super) struct Flags {
    pub rows: Vec<usize>,
    pub cols: Vec<usize>,
}

/// Elements a piece of [`par_rows`] sweeps between two polls of the run's flag (about a
/// millisecond of work).
const POLL_ELEMS: usize = 1 << 20;

/// Split `0..rows` (each `cols` long) into one chunk per core and run `f` on each, in
/// parallel when large; the results come in row order. Each chunk runs in pieces of about
/// [`POLL_ELEMS`] elements (at least 64 rows), the flag polled before each: once it is set
/// no piece starts and the results come back short, for the caller to discard (the driver
/// checks the flag after the check).
pub(super) fn par_rows<R: Send>(
    rows: usize,
    cols: usize,
    cancel: Option<&Cancel>,
    f: impl Fn(Range<usize>) -> R + Sync,
) -> Vec<R> {
    let piece = (POLL_ELEMS / cols.max(1)).max(64);
    let run = |range: Range<usize>| {
        let mut out = Vec::new();
        let mut r0 = range.start;
        while r0 < range.end && !penguin::cancel::stopped(cancel) {
            let r1 = (r0 + piece).min(range.end);
            out.push(f(r0..r1));
            r0 = r1;
        }
        out
    };
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(8);
    if threads == 1 || rows.saturating_mul(cols) < PARALLEL_ELEMS || rows < 2 * threads {
        return run(0..rows);
    }
    let chunk = rows.div_ceil(threads);
    let parts: Vec<Option<Vec<R>>> = std::thread::scope(|s| {
        let run = &run;
        let handles: Vec<_> =
            (0..rows).step_by(chunk).map(|r0| s.spawn(move || run(r0..(r0 + chunk).min(rows)))).collect();
        handles.into_iter().map(|h| h.join().ok()).collect()
    });
    match parts.into_iter().collect::<Option<Vec<Vec<R>>>>() {
        Some(parts) => parts.into_iter().flatten().collect(),
        // A chunk that failed is redone whole on this thread, as if there were one core.
        None => run(0..rows),
    }
}

/// Sum per-chunk accumulators elementwise.
fn sum_chunks<T: Copy + Default + std::ops::AddAssign>(chunks: Vec<Vec<T>>, len: usize) -> Vec<T> {
    let mut out = vec![T::default(); len];
    for part in chunks {
        for (o, v) in out.iter_mut().zip(part) {
            *o += v;
        }
    }
    out
}

fn add(acc: &mut Probe, v: f64, x: &Probe) {
    for (a, x) in acc.iter_mut().zip(x) {
        *a += v * x;
    }
}

/// Partial sums per dot product: independent chains, so that a row runs at the adder's
/// throughput instead of its latency (one chain made every sweep latency-bound).
const CHAINS: usize = 4;

/// `(sum_j v_j x_j, sum_j |v_j| w_j)` over a row `v` (f32), where `v_j` counts as 0 unless
/// `good[j]`; `CHAINS` partial sums each, added at the end.
#[inline(always)]
fn row_dot(row: &[f32], good: &[bool], x: &[Probe], w: &[f64]) -> (Probe, f64) {
    let mut p = [[0f64; PROBES]; CHAINS];
    let mut mag = [0f64; CHAINS];
    let (rc, gc, xc, wc) =
        (row.chunks_exact(CHAINS), good.chunks_exact(CHAINS), x.chunks_exact(CHAINS), w.chunks_exact(CHAINS));
    let tail = (rc.remainder(), gc.remainder(), xc.remainder(), wc.remainder());
    for (((r, g), x), w) in rc.zip(gc).zip(xc).zip(wc) {
        for s in 0..CHAINS {
            let v = keep(r[s], g[s]);
            add(&mut p[s], v, &x[s]);
            mag[s] += v.abs() * w[s];
        }
    }
    for (s, (((&r, &g), x), &w)) in tail.0.iter().zip(tail.1).zip(tail.2).zip(tail.3).enumerate() {
        let v = keep(r, g);
        add(&mut p[s], v, x);
        mag[s] += v.abs() * w;
    }
    let mut total = [0f64; PROBES];
    for part in &p {
        add(&mut total, 1.0, part);
    }
    (total, mag.iter().sum())
}

simd::wide! {
    /// [`dots`], with wider vectors where the processor has them.
    fn dots_wide(mat: Matrix<'_>, rows: Range<usize>, skip: &[bool], good: &[bool], x: &[Probe], w: &[f64]) -> Vec<(Probe, f64)> => dots
}

/// [`row_dot`] of each of `rows` of `mat` (zeros for a row in `skip`).
#[inline(always)]
fn dots(
    mat: Matrix<'_>,
    rows: Range<usize>,
    skip: &[bool],
    good: &[bool],
    x: &[Probe],
    w: &[f64],
) -> Vec<(Probe, f64)> {
    // A plain loop (not `map().collect()`, whose fold is not inlined here) keeps the row
    // loop inside the wide function.
    let mut out = Vec::with_capacity(rows.len());
    for i in rows {
        out.push(if skip[i] { ([0f64; PROBES], 0f64) } else { row_dot(mat.row(i), good, x, w) });
    }
    out
}

simd::wide! {
    /// [`scatter`], with wider vectors where the processor has them.
    fn scatter_wide(mat: Matrix<'_>, rows: Range<usize>, skip: &[bool], good: &[bool], y: &[Probe], wy: &[f64]) -> (Vec<Probe>, Vec<f64>) => scatter
}

/// `(sum_i v_i y_i, sum_i |v_i| wy_i)` for every column of `mat` over `rows` (each row `v_i`
/// counted as 0 where not `good`), leaving out the rows in `skip`. Four rows at a time are
/// added into each column's sums (in row order, as one at a time would), so that the sums are
/// loaded and stored once per four rows.
#[inline(always)]
fn scatter(
    mat: Matrix<'_>,
    rows: Range<usize>,
    skip: &[bool],
    good: &[bool],
    y: &[Probe],
    wy: &[f64],
) -> (Vec<Probe>, Vec<f64>) {
    let n = mat.cols;
    let (mut acc, mut mag) = (vec![[0f64; PROBES]; n], vec![0f64; n]);
    let (acc_n, mag_n, good) = (&mut acc[..n], &mut mag[..n], &good[..n]);
    let kept: Vec<usize> = rows.filter(|&i| !skip[i]).collect();
    let quads = kept.chunks_exact(4);
    let single = quads.remainder();
    for q in quads {
        let r: [&[f32]; 4] = std::array::from_fn(|t| &mat.row(q[t])[..n]);
        let (ys, ws): ([Probe; 4], [f64; 4]) = (std::array::from_fn(|t| y[q[t]]), std::array::from_fn(|t| wy[q[t]]));
        for j in 0..n {
            let (mut a, mut u) = (acc_n[j], mag_n[j]);
            for t in 0..4 {
                let v = keep(r[t][j], good[j]);
                add(&mut a, v, &ys[t]);
                u += v.abs() * ws[t];
            }
            (acc_n[j], mag_n[j]) = (a, u);
        }
    }
    for &i in single {
        for (((a, u), &v), &g) in acc_n.iter_mut().zip(mag_n.iter_mut()).zip(mat.row(i)).zip(good) {
            let v = keep(v, g);
            add(a, v, &y[i]);
            *u += v.abs() * wy[i];
        }
    }
    (acc, mag)
}

simd::wide! {
    /// [`abs_sums`], with wider vectors where the processor has them.
    fn abs_sums_wide(mat: Matrix<'_>, rows: Range<usize>) -> Vec<f64> => abs_sums
}

/// `sum_j |v_j|` of each of `rows` of `mat`, in `CHAINS` partial sums.
#[inline(always)]
fn abs_sums(mat: Matrix<'_>, rows: Range<usize>) -> Vec<f64> {
    let mut out = Vec::with_capacity(rows.len());
    for i in rows {
        let row = mat.row(i);
        let mut part = [0f64; CHAINS];
        let chunks = row.chunks_exact(CHAINS);
        let tail: f64 = chunks.remainder().iter().map(|v| f64::from(v.abs())).sum();
        for c in chunks {
            for s in 0..CHAINS {
                part[s] += f64::from(c[s].abs());
            }
        }
        out.push(tail + part.iter().sum::<f64>());
    }
    out
}

/// The value of a matrix element, or 0 where its column (or row) is left out.
fn keep(v: f32, good: bool) -> f64 {
    if good {
        f64::from(v)
    } else {
        0.0
    }
}

/// Random sign vectors scaled by `1 / sums[i]` (0 where `bad[i]`).
fn probes(sums: &[f64], bad: &[bool], rng: &mut StdRng) -> (Vec<Probe>, Vec<f64>) {
    let positive: Vec<f64> = sums.iter().zip(bad).filter(|(s, b)| !**b && **s > 0.0).map(|(s, _)| *s).collect();
    let fallback = if positive.is_empty() { 1.0 } else { positive.iter().sum::<f64>() / positive.len() as f64 };
    let weights: Vec<f64> = sums
        .iter()
        .zip(bad)
        .map(|(&s, &b)| {
            if b {
                0.0
            } else if s > 0.0 && s.is_finite() {
                1.0 / s
            } else {
                1.0 / fallback
            }
        })
        .collect();
    let xs = weights
        .iter()
        .map(|&w| {
            let bits: u8 = rng.gen();
            std::array::from_fn(|l| if bits >> l & 1 == 1 { w } else { -w })
        })
        .collect();
    (xs, weights)
}

/// Indices whose residual is above its threshold (or NaN), most suspicious first.
fn flagged(residuals: &[Probe], thresholds: &[f64], bad: &[bool]) -> Vec<usize> {
    let mut out: Vec<(f64, usize)> = Vec::new();
    for (i, (r, &t)) in residuals.iter().zip(thresholds).enumerate() {
        if bad[i] {
            continue;
        }
        let worst = r.iter().fold(0f64, |w, v| if v.is_nan() || w.is_nan() { f64::NAN } else { w.max(v.abs()) });
        // NaN (from a NaN in C or a NaN threshold) is flagged too.
        if worst.is_nan() || t.is_nan() || worst > t {
            let score = if worst.is_nan() || t <= 0.0 { f64::INFINITY } else { worst / t };
            out.push((score, i));
        }
    }
    out.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
    out.into_iter().map(|(_, i)| i).collect()
}

/// The probes and the products of A and B with them: everything the screen needs but C, so
/// that it can be computed while C is being made.
pub(super) struct Probes {
    x: Vec<Probe>,
    wx: Vec<f64>,
    y: Vec<Probe>,
    wy: Vec<f64>,
    /// `A (B x)` and `|A| (|B| wx)` per row of A.
    abx: Vec<(Probe, f64)>,
    /// `(y^T A) B` and `(wy^T |A|) |B|` per column of B.
    yab: Vec<Probe>,
    col_mag: Vec<f64>,
    /// Whether every sweep finished (a chunk that failed leaves a result short).
    complete: bool,
    good_col: Vec<bool>,
    /// Rows of A and columns of B.
    m: usize,
    n: usize,
}

/// Draw the probes and multiply A and B with them. Rows of A and columns of B in `bad`
/// (holding non-finite values) are left out.
pub(super) fn probe(
    a: Matrix<'_>,
    b: Matrix<'_>,
    (bad_rows, bad_cols): (&[bool], &[bool]),
    rng: &mut StdRng,
    cancel: Option<&Cancel>,
) -> Probes {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let good_col: Vec<bool> = bad_cols.iter().map(|b| !b).collect();
    let (no_rows_k, all_cols) = (vec![false; k], vec![true; n.max(k)]);
    let ones = vec![[1f64; PROBES]; k];
    let unit = vec![1f64; k];
    // Column sums of |B| and row sums of |A| weigh the probes.
    let col_sums =
        sum_chunks(par_rows(k, n, cancel, |rows| scatter_wide(b, rows, &no_rows_k, &all_cols[..n], &ones, &unit).1), n);
    let row_sums: Vec<f64> = par_rows(m, k, cancel, |rows| abs_sums_wide(a, rows)).concat();
    let (x, wx) = probes(&col_sums, bad_cols, rng);
    let (y, wy) = probes(&row_sums, bad_rows, rng);

    // B x and |B| wx, row by row.
    let bx: Vec<(Probe, f64)> =
        par_rows(k, n, cancel, |rows| dots_wide(b, rows, &no_rows_k, &good_col, &x, &wx)).concat();
    let (bxp, bxm): (Vec<Probe>, Vec<f64>) = bx.iter().copied().unzip();

    // A (B x) and |A| (|B| wx) per row (zeros for the bad rows); y^T A and wy^T |A| over the
    // good rows.
    let abx: Vec<(Probe, f64)> =
        par_rows(m, k, cancel, |rows| dots_wide(a, rows, bad_rows, &all_cols[..k], &bxp, &bxm)).concat();
    let parts = par_rows(m, k, cancel, |rows| scatter_wide(a, rows, bad_rows, &all_cols[..k], &y, &wy));
    let (mut ya, mut ua) = (vec![[0f64; PROBES]; k], vec![0f64; k]);
    for (pya, pua) in parts {
        for (acc, v) in ya.iter_mut().zip(pya) {
            add(acc, 1.0, &v);
        }
        for (acc, v) in ua.iter_mut().zip(pua) {
            *acc += v;
        }
    }

    // (y^T A) B and (wy^T |A|) |B| per column.
    let parts = par_rows(k, n, cancel, |rows| scatter_wide(b, rows, &no_rows_k, &good_col, &ya, &ua));
    let (mut yab, mut col_mag) = (vec![[0f64; PROBES]; n], vec![0f64; n]);
    for (pyab, pmag) in parts {
        for (acc, v) in yab.iter_mut().zip(pyab) {
            add(acc, 1.0, &v);
        }
        for (acc, v) in col_mag.iter_mut().zip(pmag) {
            *acc += v;
        }
    }
    let complete = abx.len() == m && bx.len() == k;
    Probes { x, wx, y, wy, abx, yab, col_mag, complete, good_col, m, n }
}

/// Flag the rows and columns of `c` whose randomized residuals exceed their thresholds.
pub(super) fn screen(
    p: &Probes,
    c: &[f32],
    bound: &Bound,
    (bad_rows, bad_cols): (&[bool], &[bool]),
    cancel: Option<&Cancel>,
) -> Flags {
    let Probes { x, wx, y, wy, abx, yab, col_mag, complete, good_col, m, n } = p;
    let (m, n) = (*m, *n);

    // C x per row and y^T C per column.
    let cm = Matrix { rows: m, cols: n, data: c };
    let all_cols = vec![true; n];
    let no_rows = vec![false; m];
    let cx: Vec<Probe> = par_rows(m, n, cancel, |rows| dots_wide(cm, rows, &no_rows, good_col, x, wx))
        .concat()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    let mut yc = vec![[0f64; PROBES]; n];
    for (pyc, _) in par_rows(m, n, cancel, |rows| scatter_wide(cm, rows, bad_rows, &all_cols, y, wy)) {
        for (acc, v) in yc.iter_mut().zip(pyc) {
            add(acc, 1.0, &v);
        }
    }
    if cx.len() != m || !complete {
        // A sweep did not finish: compare everything rather than trust a partial screen.
        return Flags { rows: (0..m).collect(), cols: Vec::new() };
    }

    let g = bound.mag_factor();
    let (good_n, good_m) =
        (good_col.iter().filter(|&&g| g).count().max(1), bad_rows.iter().filter(|&&b| !b).count().max(1));
    let (sum_wx, sum_wy): (f64, f64) = (wx.iter().sum(), wy.iter().sum());
    let row_res: Vec<Probe> =
        cx.iter().zip(abx.iter()).map(|(c, (p, _))| std::array::from_fn(|l| c[l] - p[l])).collect();
    let row_tol: Vec<f64> =
        abx.iter().map(|(_, mag)| THETA * (g * mag + bound.out_abs * sum_wx) / good_n as f64).collect();
    let col_res: Vec<Probe> = yc.iter().zip(yab.iter()).map(|(c, p)| std::array::from_fn(|l| c[l] - p[l])).collect();
    let col_tol: Vec<f64> =
        col_mag.iter().map(|mag| THETA * (g * mag + bound.out_abs * sum_wy) / good_m as f64).collect();
    Flags { rows: flagged(&row_res, &row_tol, bad_rows), cols: flagged(&col_res, &col_tol, bad_cols) }
}
