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

use super::{Bound, Matrix};

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

/// Split `0..rows` (each `cols` long) into one chunk per core and run `f` on each, in
/// parallel when large; the results come in row order.
pub(super) fn par_rows<R: Send>(rows: usize, cols: usize, f: impl Fn(Range<usize>) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(8);
    if threads == 1 || rows.saturating_mul(cols) < PARALLEL_ELEMS || rows < 2 * threads {
        return vec![f(0..rows)];
    }
    let chunk = rows.div_ceil(threads);
    let parts: Vec<Option<R>> = std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> =
            (0..rows).step_by(chunk).map(|r0| s.spawn(move || f(r0..(r0 + chunk).min(rows)))).collect();
        handles.into_iter().map(|h| h.join().ok()).collect()
    });
    match parts.into_iter().collect::<Option<Vec<R>>>() {
        Some(parts) => parts,
        // A chunk that failed is redone whole on this thread, as if there were one core.
        None => vec![f(0..rows)],
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
) -> Probes {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let good_col: Vec<bool> = bad_cols.iter().map(|b| !b).collect();
    // Column sums of |B| and row sums of |A| weigh the probes.
    let col_sums = sum_chunks(
        par_rows(k, n, |rows| {
            let mut acc = vec![0f64; n];
            for kk in rows {
                for (s, v) in acc.iter_mut().zip(b.row(kk)) {
                    *s += f64::from(v.abs());
                }
            }
            acc
        }),
        n,
    );
    let row_sums: Vec<f64> = (0..m).map(|i| a.row(i).iter().map(|v| f64::from(v.abs())).sum()).collect();
    let (x, wx) = probes(&col_sums, bad_cols, rng);
    let (y, wy) = probes(&row_sums, bad_rows, rng);

    // B x and |B| wx, row by row.
    let bx: Vec<(Probe, f64)> = par_rows(k, n, |rows| {
        rows.map(|kk| {
            let (mut p, mut mag) = ([0f64; PROBES], 0f64);
            for (j, &v) in b.row(kk).iter().enumerate() {
                let v = keep(v, good_col[j]);
                add(&mut p, v, &x[j]);
                mag += v.abs() * wx[j];
            }
            (p, mag)
        })
        .collect::<Vec<_>>()
    })
    .concat();

    // A (B x) and |A| (|B| wx) per row; y^T A and wy^T |A| accumulated over the good rows.
    let parts = par_rows(m, k, |rows| {
        let mut per_row = Vec::with_capacity(rows.len());
        let (mut ya, mut ua) = (vec![[0f64; PROBES]; k], vec![0f64; k]);
        for i in rows {
            let (mut p, mut mag) = ([0f64; PROBES], 0f64);
            let good = !bad_rows[i];
            for (kk, &v) in a.row(i).iter().enumerate() {
                let v = keep(v, good);
                add(&mut p, v, &bx[kk].0);
                mag += v.abs() * bx[kk].1;
                add(&mut ya[kk], v, &y[i]);
                ua[kk] += v.abs() * wy[i];
            }
            per_row.push((p, mag));
        }
        (per_row, ya, ua)
    });
    let mut abx = Vec::with_capacity(m);
    let (mut ya, mut ua) = (vec![[0f64; PROBES]; k], vec![0f64; k]);
    for (rows, pya, pua) in parts {
        abx.extend(rows);
        for (acc, v) in ya.iter_mut().zip(pya) {
            add(acc, 1.0, &v);
        }
        for (acc, v) in ua.iter_mut().zip(pua) {
            *acc += v;
        }
    }

    // (y^T A) B and (wy^T |A|) |B| per column.
    let parts = par_rows(k, n, |rows| {
        let (mut yab, mut mag) = (vec![[0f64; PROBES]; n], vec![0f64; n]);
        for kk in rows {
            for (j, &v) in b.row(kk).iter().enumerate() {
                let v = keep(v, good_col[j]);
                add(&mut yab[j], v, &ya[kk]);
                mag[j] += v.abs() * ua[kk];
            }
        }
        (yab, mag)
    });
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
pub(super) fn screen(p: &Probes, c: &[f32], bound: &Bound, (bad_rows, bad_cols): (&[bool], &[bool])) -> Flags {
    let Probes { x, wx, y, wy, abx, yab, col_mag, complete, good_col, m, n } = p;
    let (m, n) = (*m, *n);

    // C x per row and y^T C per column, in one sweep of C.
    let parts = par_rows(m, n, |rows| {
        let mut cx = Vec::with_capacity(rows.len());
        let mut yc = vec![[0f64; PROBES]; n];
        for i in rows {
            let mut p = [0f64; PROBES];
            let good = !bad_rows[i];
            for (j, &v) in c[i * n..(i + 1) * n].iter().enumerate() {
                add(&mut p, keep(v, good_col[j]), &x[j]);
                if good {
                    add(&mut yc[j], f64::from(v), &y[i]);
                }
            }
            cx.push(p);
        }
        (cx, yc)
    });
    let mut cx = Vec::with_capacity(m);
    let mut yc = vec![[0f64; PROBES]; n];
    for (pcx, pyc) in parts {
        cx.extend(pcx);
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
