//! The fit's solver: bounded Levenberg-Marquardt in log-parameter space with a
//! forward-difference Jacobian, and the dense linear solve of its normal equations.

use super::Param;
use crate::error::CliError;

/// Log errors of every row for a parameter vector.
type Residuals<'a> = dyn Fn(&[f64]) -> Result<Vec<f64>, CliError> + 'a;

fn cost(r: &[f64]) -> f64 {
    r.iter().map(|v| v * v).sum()
}

/// Bounded Levenberg-Marquardt in log-parameter space with a forward-difference Jacobian.
pub(super) fn levenberg_marquardt(
    params: &[Param],
    mut x: Vec<f64>,
    residuals: &Residuals<'_>,
) -> Result<(Vec<f64>, Vec<Vec<f64>>), CliError> {
    let clamp = |x: &mut [f64]| {
        for (v, p) in x.iter_mut().zip(params) {
            *v = v.clamp(p.lo, p.hi);
        }
    };
    clamp(&mut x);
    let n = x.len();
    let mut r = residuals(&x)?;
    let mut lambda = 1e-2;
    // Forward differences of 0.1% (stepping backwards at an upper bound).
    let jacobian = |x: &[f64], r: &[f64]| -> Result<Vec<Vec<f64>>, CliError> {
        let mut jac = vec![vec![0.0; n]; r.len()];
        for j in 0..n {
            let h = if x[j] + 1e-3 > params[j].hi { -1e-3 } else { 1e-3 };
            let mut xh = x.to_vec();
            xh[j] += h;
            let rh = residuals(&xh)?;
            for (row, (a, b)) in jac.iter_mut().zip(rh.iter().zip(r)) {
                row[j] = (a - b) / h;
            }
        }
        Ok(jac)
    };
    for _ in 0..60 {
        let c = cost(&r);
        if c < 1e-14 {
            break;
        }
        let jac = jacobian(&x, &r)?;
        let mut jtj = vec![vec![0.0; n]; n];
        let mut jtr = vec![0.0; n];
        for (row, ri) in jac.iter().zip(&r) {
            for a in 0..n {
                jtr[a] += row[a] * ri;
                for b in 0..n {
                    jtj[a][b] += row[a] * row[b];
                }
            }
        }
        let mut improved = false;
        while lambda < 1e12 {
            let mut m = jtj.clone();
            for (a, row) in m.iter_mut().enumerate() {
                row[a] += lambda * (row[a] + 1e-9);
            }
            let Some(step) = solve(m, jtr.iter().map(|v| -v).collect()) else {
                lambda *= 4.0;
                continue;
            };
            let mut xn: Vec<f64> = x.iter().zip(&step).map(|(a, b)| a + b).collect();
            clamp(&mut xn);
            let rn = residuals(&xn)?;
            if cost(&rn) < c {
                let moved = x.iter().zip(&xn).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                x = xn;
                r = rn;
                lambda = (lambda / 3.0).max(1e-9);
                improved = moved > 1e-9;
                break;
            }
            lambda *= 4.0;
        }
        if !improved {
            break;
        }
    }
    let jac = jacobian(&x, &r)?;
    Ok((x, jac))
}

/// Solve `a x = b` by Gaussian elimination with partial pivoting; `None` when singular.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        let (top, rest) = a.split_at_mut(col + 1);
        let pivot_row = &top[col];
        for (i, row) in rest.iter_mut().enumerate() {
            let f = row[col] / pivot_row[col];
            for (x, p) in row.iter_mut().zip(pivot_row).skip(col) {
                *x -= f * p;
            }
            b[col + 1 + i] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|j| a[i][j] * x[j]).sum();
        x[i] = (b[i] - s) / a[i][i];
    }
    Some(x)
}
