//! The PE array's arithmetic: `out[M, N] = W^T @ X` in fp32, W `[K, M]` and X `[K, N]`,
//! through `matrixmultiply` (a well-kept packed GEMM with runtime SIMD dispatch: AVX-512
//! kernels from 0.3.11 when built with Rust 1.89 or later, else AVX2/FMA or SSE), one thread
//! per product: the simulator runs independent products on several threads itself. The
//! kernel is chosen once per CPU, so the bytes of a run do not depend on its thread count.
//! (The `gemm` crate that `faer` uses builds its AVX-512 kernels only with its `nightly`
//! feature, on a nightly compiler; on stable Rust it runs AVX2 kernels: one 2048^3 f32 product
//! took 1.1 s with it against 0.6-0.7 s with `matrixmultiply` on one core of an AVX-512 Xeon.)
//!
//! `matrixmultiply`'s entry points take raw pointers, so this module holds the workspace's one
//! `unsafe` call, behind safe functions that check every slice length and stride first. The
//! summation order inside a K sub-tile is the library's; the PE's own order is not specified
//! either, and every result is checked against the `2 K eps32 (|A| @ |B|)` bound.

use std::sync::Arc;

/// A stationary operand `W [K, M]` as the PE holds it after a LoadStationary.
#[derive(Clone, Debug, Default)]
pub(crate) struct PackedStationary {
    /// Contraction length.
    pub k: usize,
    /// Output rows (stationary free size).
    pub m: usize,
    /// Row-major `[k, m]` (at least `k * m` elements), shared with the decode cache when it
    /// came from there.
    data: Arc<Vec<f32>>,
}

impl PackedStationary {
    /// Hold `w`, a row-major `[k, m]` matrix (at least `k * m` elements), shared: no copy.
    pub fn share(&mut self, k: usize, m: usize, w: &Arc<Vec<f32>>) {
        self.k = k;
        self.m = m;
        self.data = Arc::clone(w);
    }

    /// Hold `w`, a row-major `[k, m]` matrix (at least `k * m` elements), by swapping
    /// buffers with it: `w` is left with this value's previous buffer when nothing else
    /// shares it (for reuse), else empty.
    pub fn hold(&mut self, k: usize, m: usize, w: &mut Vec<f32>) {
        self.k = k;
        self.m = m;
        match Arc::get_mut(&mut self.data) {
            Some(data) => std::mem::swap(data, w),
            None => self.data = Arc::new(std::mem::take(w)),
        }
    }

    fn values(&self) -> &[f32] {
        self.data.get(..self.k * self.m).unwrap_or(&[])
    }
}

/// The longest contraction whose product `matmul_tn` sums in one pass of the GEMM kernel
/// (`matrixmultiply`'s f32 K block), so that accumulating into the output (`acc`) rounds
/// exactly as computing the product and then adding it in fp32. The PE contracts at most
/// 2 x 128 rows (double-row), so every PE product qualifies.
pub(crate) const ONE_PASS_K: usize = 256;

/// `out = W^T @ x` for `x` a row-major `[w.k, n]` matrix; `out` becomes row-major `[w.m, n]`.
/// With `acc` (and `w.k <= ONE_PASS_K`), `out` already holds `[w.m, n]` values and each
/// becomes `fl(out + product)`, the bytes of computing the product and adding it in fp32.
/// `_xpack` is kept for the callers' scratch layout.
pub(crate) fn matmul_tn(
    w: &PackedStationary,
    n: usize,
    x: &[f32],
    _xpack: &mut Vec<f32>,
    out: &mut Vec<f32>,
    acc: bool,
) {
    let (k, m) = (w.k, w.m);
    let acc = acc && out.len() == m * n;
    // With beta = 0 the GEMM writes every element of `out` without reading it, so the
    // buffer is only resized, not cleared.
    out.resize(m * n, 0.0);
    let data = w.values();
    if k == 0 || m == 0 || n == 0 || x.len() < k * n || data.len() < k * m {
        if acc {
            // Adding a zero product (`-0 + 0` is `+0`).
            out.iter_mut().for_each(|v| *v += 0.0);
        } else {
            out.fill(0.0);
        }
        return;
    }
    // A = W^T is `m x k` with row stride 1 and column stride m; B = x is `k x n` row-major.
    let beta = if acc { 1.0 } else { 0.0 };
    sgemm_checked(m, k, n, data, (1, m as isize), &x[..k * n], (n as isize, 1), out, beta);
}

/// `c = a @ b` for row-major f32 matrices (`a` is `m x k`, `b` is `k x n`) with the same
/// GEMM kernel the PE model uses: the plain-GEMM baseline of the benches.
pub fn gemm_f32(m: usize, k: usize, n: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
    let mut c = vec![0.0; m * n];
    if m > 0 && k > 0 && n > 0 && a.len() >= m * k && b.len() >= k * n {
        sgemm_checked(m, k, n, a, (k as isize, 1), b, (n as isize, 1), &mut c, 0.0);
    }
    c
}

/// Multiply-adds from which [`gemm_f64`] splits a product over threads.
const PARALLEL_F64_MACS: usize = 1 << 22;

/// `c = a @ b` for row-major f64 matrices (`a` is `m x k`, `b` is `k x n`): the fp64
/// reference product of the command-line checks. Large products are split by rows over the
/// cores (each element's summation is the same either way).
pub fn gemm_f64(m: usize, k: usize, n: usize, a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    if m == 0 || k == 0 || n == 0 || a.len() < m * k || b.len() < k * n {
        return c;
    }
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(8);
    if threads < 2 || m < 2 * threads || m * k * n < PARALLEL_F64_MACS {
        dgemm_rows(m, k, n, a, b, &mut c);
        return c;
    }
    let rows = m.div_ceil(threads);
    let started = std::thread::scope(|s| {
        a[..m * k].chunks(rows * k).zip(c.chunks_mut(rows * n)).all(|(a, c)| {
            let r = c.len() / n;
            std::thread::Builder::new().spawn_scoped(s, move || dgemm_rows(r, k, n, a, b, c)).is_ok()
        })
    });
    if !started {
        // A thread could not be started: the whole product on this one.
        dgemm_rows(m, k, n, a, b, &mut c);
    }
    c
}

/// `c = a @ b` on this thread; the extents were checked by [`gemm_f64`].
fn dgemm_rows(m: usize, k: usize, n: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    if a.len() < m * k || b.len() < k * n || c.len() < m * n {
        return;
    }
    #[expect(unsafe_code, reason = "matrixmultiply takes raw pointers; extents are checked above")]
    // SAFETY: a holds m*k, b holds k*n and c holds m*n elements, laid out row-major with the
    // strides passed, so every access the routine makes is inside the slices.
    unsafe {
        matrixmultiply::dgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

#[expect(clippy::too_many_arguments, reason = "a GEMM call: three matrices with strides")]
fn sgemm_checked(
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    (rsa, csa): (isize, isize),
    b: &[f32],
    (rsb, csb): (isize, isize),
    c: &mut [f32],
    beta: f32,
) {
    let last = |rows: usize, cols: usize, rs: isize, cs: isize| (rows as isize - 1) * rs + (cols as isize - 1) * cs;
    let in_bounds = last(m, k, rsa, csa) < a.len() as isize
        && last(k, n, rsb, csb) < b.len() as isize
        && c.len() >= m * n
        && rsa >= 0
        && csa >= 0
        && rsb >= 0
        && csb >= 0;
    if !in_bounds {
        return;
    }
    #[expect(unsafe_code, reason = "matrixmultiply takes raw pointers; extents are checked above")]
    // SAFETY: the largest offset each matrix is read or written at was checked against its
    // slice length above, and the strides are non-negative.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            rsa,
            csa,
            b.as_ptr(),
            rsb,
            csb,
            beta,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The output buffer is reused without clearing: stale contents (NaN here) never leak
    /// into a product, and a degenerate product is all zeros.
    #[test]
    fn stale_output_buffers_are_overwritten() {
        let (k, m, n) = (3, 2, 4);
        let mut p = PackedStationary::default();
        p.hold(k, m, &mut vec![1.0; k * m]);
        let x = vec![2.0; k * n];
        let (mut xp, mut out) = (Vec::new(), vec![f32::NAN; 100]);
        matmul_tn(&p, n, &x, &mut xp, &mut out, false);
        assert_eq!(out, vec![6.0; m * n]);
        out.fill(f32::NAN);
        p.hold(0, m, &mut Vec::new());
        matmul_tn(&p, n, &x, &mut xp, &mut out, false);
        assert_eq!(out, vec![0.0; m * n]);
    }

    #[test]
    fn matches_an_f64_reference_within_the_fp32_bound_on_ragged_shapes() {
        for &(k, m, n) in &[(1, 1, 1), (3, 5, 7), (128, 128, 512), (17, 9, 33), (256, 3, 2)] {
            let w: Vec<f32> = (0..k * m).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
            let x: Vec<f32> = (0..k * n).map(|i| ((i * 53 % 97) as f32 - 48.0) / 3.0).collect();
            let mut p = PackedStationary::default();
            p.hold(k, m, &mut w.clone());
            let (mut xp, mut out) = (Vec::new(), Vec::new());
            matmul_tn(&p, n, &x, &mut xp, &mut out, false);
            for i in 0..m {
                for j in 0..n {
                    let (mut s, mut mag) = (0f64, 0f64);
                    for kk in 0..k {
                        let prod = f64::from(w[kk * m + i]) * f64::from(x[kk * n + j]);
                        s += prod;
                        mag += prod.abs();
                    }
                    let err = (f64::from(out[i * n + j]) - s).abs();
                    assert!(err <= 2.0 * k as f64 * f64::from(f32::EPSILON) * mag, "({k},{m},{n}) at {i},{j}: {err}");
                }
            }
        }
    }

    /// Accumulating into the output gives the bytes of computing each product and adding it
    /// in fp32, for every contraction up to [`ONE_PASS_K`] (ragged shapes take the library's
    /// masked path), with values that cancel, overflow and round.
    #[test]
    fn accumulating_equals_product_then_fp32_add() {
        for &(k, m, n) in &[(1, 1, 1), (7, 5, 33), (128, 128, 512), (ONE_PASS_K, 17, 40), (ONE_PASS_K, 128, 64)] {
            let val = |i: usize, salt: usize| -> f32 {
                let h = (i.wrapping_mul(2_654_435_761) ^ salt).wrapping_mul(40_503) % 100_003;
                let v = (h as f32 - 50_000.0) / 977.0;
                if h.is_multiple_of(997) {
                    3.0e37 * v.signum()
                } else {
                    v * if h.is_multiple_of(3) { 1.0e-3 } else { 1.0 }
                }
            };
            let mut serial: Vec<f32> = (0..m * n).map(|i| val(i, 9)).collect();
            let mut fused = serial.clone();
            for step in 0..4 {
                let w: Vec<f32> = (0..k * m).map(|i| val(i, step * 2 + 1)).collect();
                let x: Vec<f32> = (0..k * n).map(|i| val(i, step * 2 + 2)).collect();
                let mut p = PackedStationary::default();
                p.hold(k, m, &mut w.clone());
                let (mut xp, mut product) = (Vec::new(), Vec::new());
                matmul_tn(&p, n, &x, &mut xp, &mut product, false);
                serial.iter_mut().zip(&product).for_each(|(s, v)| *s += v);
                matmul_tn(&p, n, &x, &mut xp, &mut fused, true);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
                assert!(bits(&serial) == bits(&fused), "({k},{m},{n}) step {step}");
            }
        }
    }

    #[test]
    fn gemm_f64_is_exact_on_small_integers() {
        let c = gemm_f64(2, 3, 2, &[1.0, 2.0, 3.0, -4.0, 5.0, 6.0], &[7.0, 8.0, 9.0, 10.0, -11.0, 12.0]);
        assert_eq!(c, vec![-8.0, 64.0, -49.0, 90.0]);
        assert_eq!(gemm_f64(0, 3, 2, &[], &[]), Vec::<f64>::new());
    }
}
