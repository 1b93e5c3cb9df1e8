//! The PE array's arithmetic: `out[M, N] = W^T @ X` in fp32, W `[K, M]` and X `[K, N]`.
//!
//! Why not `matrixmultiply::sgemm`: it is an `unsafe fn` (raw pointers) and the workspace
//! forbids `unsafe`, so this is a small safe packed kernel in the same shape (panels of
//! `MR x NR` outputs kept in registers, operands packed so the inner loop reads memory
//! sequentially). It is also deterministic: every output is `sum_k w[k] * x[k]` with one fp32
//! rounding per product and per addition in ascending `k`, on every CPU (no FMA contraction,
//! which Rust never does implicitly), so simulated results do not depend on the host.
//!
//! The stationary operand is packed once per LoadStationary and reused by every
//! MultiplyMoving, as the PE array itself holds the weights.

/// Output rows per register block.
const MR: usize = 4;
/// Output columns per register block.
const NR: usize = 8;
/// Lanes each weight is repeated over, so the kernel loads broadcasts instead of shuffling.
const LANES: usize = 4;

/// A stationary operand `W [K, M]` packed for [`matmul_tn`].
#[derive(Clone, Debug, Default)]
pub(crate) struct PackedStationary {
    /// Contraction length.
    pub k: usize,
    /// Output rows (stationary free size).
    pub m: usize,
    /// Panels of `MR` columns of W: `[panel][k][MR][LANES]`, zero-padded.
    data: Vec<f32>,
}

impl PackedStationary {
    /// Pack `w`, a row-major `[k, m]` matrix, reusing this value's buffer.
    pub fn pack(&mut self, k: usize, m: usize, w: &[f32]) {
        let panels = m.div_ceil(MR);
        let panel_len = k * MR * LANES;
        self.k = k;
        self.m = m;
        if k == 0 || m == 0 {
            self.data.clear();
            return;
        }
        // Every slot is written below (padding rows with zeros), so no clearing first.
        self.data.resize(panels * panel_len, 0.0);
        for (p, panel) in self.data.chunks_exact_mut(panel_len).enumerate() {
            let i0 = p * MR;
            let rows = MR.min(m - i0);
            for (kk, slot) in panel.chunks_exact_mut(MR * LANES).enumerate() {
                let src = &w[kk * m + i0..kk * m + i0 + rows];
                for (lanes, v) in slot.chunks_exact_mut(LANES).zip(src) {
                    lanes.fill(*v);
                }
                slot[rows * LANES..].fill(0.0);
            }
        }
    }
}

/// `out = W^T @ x` for `x` a row-major `[w.k, n]` matrix; `out` becomes row-major `[w.m, n]`.
/// `xpack` is scratch space kept between calls. Every element of `out` is written, so
/// neither buffer is cleared first.
pub(crate) fn matmul_tn(w: &PackedStationary, n: usize, x: &[f32], xpack: &mut Vec<f32>, out: &mut Vec<f32>) {
    let (k, m) = (w.k, w.m);
    out.resize(m * n, 0.0);
    if k == 0 {
        out.fill(0.0);
        return;
    }
    if m == 0 || n == 0 {
        return;
    }
    // Pack x into panels of NR columns, `[panel][k][NR]`, the last one zero-padded.
    let npanels = n.div_ceil(NR);
    xpack.resize(npanels * k * NR, 0.0);
    for (p, panel) in xpack.chunks_exact_mut(k * NR).enumerate() {
        let j0 = p * NR;
        let cols = NR.min(n - j0);
        for (row, src) in panel.chunks_exact_mut(NR).zip(x[j0..].chunks(n)) {
            let src = &src[..cols];
            // Full panels copy a fixed-size array (two vector moves, no memcpy call).
            match (<&mut [f32; NR]>::try_from(row), <&[f32; NR]>::try_from(src)) {
                (Ok(row), Ok(src)) => *row = *src,
                (Ok(row), Err(_)) => {
                    row[..cols].copy_from_slice(src);
                    row[cols..].fill(0.0);
                }
                (Err(_), _) => {}
            }
        }
    }
    let a_len = k * MR * LANES;
    for (pi, a) in w.data.chunks_exact(a_len).enumerate() {
        let i0 = pi * MR;
        let rows = MR.min(m - i0);
        for (pj, b) in xpack.chunks_exact(k * NR).enumerate() {
            let acc = micro_kernel(a, b);
            let j0 = pj * NR;
            let cols = NR.min(n - j0);
            for (r, acc_row) in acc.iter().enumerate().take(rows) {
                let o = (i0 + r) * n + j0;
                match <&mut [f32; NR]>::try_from(&mut out[o..o + cols]) {
                    Ok(dst) => *dst = *acc_row,
                    Err(_) => out[o..o + cols].copy_from_slice(&acc_row[..cols]),
                }
            }
        }
    }
}

/// One `MR x NR` block of outputs over the whole contraction, in registers.
#[inline(always)]
fn micro_kernel(a: &[f32], b: &[f32]) -> [[f32; NR]; MR] {
    let mut acc = [[0f32; NR]; MR];
    for (ak, bk) in a.chunks_exact(MR * LANES).zip(b.chunks_exact(NR)) {
        for (r, acc_row) in acc.iter_mut().enumerate() {
            for (c, v) in acc_row.iter_mut().enumerate() {
                *v += ak[r * LANES + c % LANES] * bk[c];
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_a_sequential_fp32_reference_on_ragged_shapes() {
        for &(k, m, n) in &[(1, 1, 1), (3, 5, 7), (128, 128, 512), (17, 9, 33), (256, 3, 2)] {
            let w: Vec<f32> = (0..k * m).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
            let x: Vec<f32> = (0..k * n).map(|i| ((i * 53 % 97) as f32 - 48.0) / 3.0).collect();
            let mut p = PackedStationary::default();
            p.pack(k, m, &w);
            let (mut xp, mut out) = (Vec::new(), Vec::new());
            matmul_tn(&p, n, &x, &mut xp, &mut out);
            for i in 0..m {
                for j in 0..n {
                    let mut s = 0f32;
                    for kk in 0..k {
                        s += w[kk * m + i] * x[kk * n + j];
                    }
                    assert_eq!(out[i * n + j].to_bits(), s.to_bits(), "({k},{m},{n}) at {i},{j}");
                }
            }
        }
    }
}
