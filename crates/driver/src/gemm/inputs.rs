//! A GEMM's operands: given as arrays in memory ([`GemmInputs`]) or drawn at random from a
//! seed, and what a sparse A needs before it is compressed (pruning, the `[M, K]` layout).

use std::borrow::Cow;

use penguin::{DType, SparsityPattern};
use rand::{Rng, SeedableRng};

use super::random;
use crate::error::DriverError;

/// One GEMM operand in memory: a row-major `[rows, cols]` matrix of values.
#[derive(Clone, Debug, PartialEq)]
pub struct Operand<'a> {
    /// Rows.
    pub rows: u64,
    /// Columns.
    pub cols: u64,
    /// The values, row-major; borrowed when the caller's buffer already holds f32.
    pub values: Cow<'a, [f32]>,
}

impl<'a> Operand<'a> {
    /// Borrow f32 values (the DMA casts them to the matmul dtype, as for `.npy` input).
    pub fn from_f32(name: &str, rows: u64, cols: u64, values: &'a [f32]) -> Result<Self, DriverError> {
        check_len(name, rows, cols, values.len() as u64)?;
        Ok(Operand { rows, cols, values: Cow::Borrowed(values) })
    }

    /// Decode the little-endian bit patterns of an HBM dtype (bf16, fp16, an fp8 type). The
    /// values are exact in f32, so storing them in an HBM tensor of `dtype` gives back the
    /// caller's bytes.
    pub fn from_bits(name: &str, rows: u64, cols: u64, dtype: DType, bytes: &[u8]) -> Result<Self, DriverError> {
        if !dtype.is_float() || dtype == DType::Fp32 {
            return Err(DriverError::input(format!("{name}: {dtype} is not a narrow float dtype")));
        }
        let size = dtype.size_bytes() as usize;
        if !bytes.len().is_multiple_of(size) {
            return Err(DriverError::input(format!("{name}: {} bytes are not whole {dtype} elements", bytes.len())));
        }
        check_len(name, rows, cols, (bytes.len() / size) as u64)?;
        let values = bytes.chunks_exact(size).map(|c| dtype.decode(dtype.load_bits(c))).collect();
        Ok(Operand { rows, cols, values: Cow::Owned(values) })
    }

    /// The shape, as `[rows, cols]`.
    pub fn shape(&self) -> Vec<u64> {
        vec![self.rows, self.cols]
    }
}

fn check_len(name: &str, rows: u64, cols: u64, len: u64) -> Result<(), DriverError> {
    match rows.checked_mul(cols) {
        Some(n) if n == len => Ok(()),
        _ => Err(DriverError::input(format!("{name}: shape [{rows}, {cols}] but {len} elements"))),
    }
}

/// A and B of a GEMM in memory (A as `[M, K]`, or `[K, M]` when the request says
/// `lhs_transposed`).
#[derive(Clone, Debug, PartialEq)]
pub struct GemmInputs<'a> {
    /// A.
    pub a: Operand<'a>,
    /// B `[K, N]`.
    pub b: Operand<'a>,
}

impl GemmInputs<'_> {
    /// The GEMM's `(m, k, n)`, refusing empty operands and operands whose K do not chain.
    pub fn shape(&self, lhs_transposed: bool) -> Result<(u64, u64, u64), DriverError> {
        for (op, name) in [(&self.a, "a"), (&self.b, "b")] {
            if op.rows == 0 || op.cols == 0 {
                return Err(DriverError::input(format!(
                    "{name}: expected a non-empty 2-D array, got shape {:?}",
                    op.shape()
                )));
            }
        }
        let (m, k) = if lhs_transposed { (self.a.cols, self.a.rows) } else { (self.a.rows, self.a.cols) };
        if self.b.rows != k {
            let layout = if lhs_transposed { "[K, M]" } else { "[M, K]" };
            return Err(DriverError::input(format!(
                "shapes do not chain: A {layout} is {:?} (K = {k}) but B [K, N] is {:?}",
                self.a.shape(),
                self.b.shape()
            )));
        }
        Ok((m, k, self.b.cols))
    }
}

/// A and B as the pipeline holds them: the caller's values, or drawn ones.
pub(super) struct Inputs<'a> {
    pub(super) a: Cow<'a, [f32]>,
    pub(super) b: Cow<'a, [f32]>,
}

/// Keep the `N` largest magnitudes of every group of `M` along K of a row-major `[m, k]` A.
pub(super) fn prune(a: &mut [f32], m: u64, k: u64, p: SparsityPattern) {
    for row in a.chunks_mut(k as usize).take(m as usize) {
        for group in row.chunks_mut(p.m as usize) {
            let mut order: Vec<usize> = (0..group.len()).collect();
            order.sort_by(|&x, &y| group[y].abs().total_cmp(&group[x].abs()));
            for &j in &order[(p.n as usize).min(group.len())..] {
                group[j] = 0.0;
            }
        }
    }
}

/// Transpose a row-major `[rows, cols]` matrix.
pub(super) fn transpose(a: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0; a.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = a[r * cols + c];
        }
    }
    t
}

/// Seeded uniform inputs in [-1, 1), or small integers 0..16 for uint8 operands.
pub(super) fn random_inputs(m: u64, k: u64, n: u64, seed: u64, (lhs, rhs): (DType, DType)) -> Inputs<'static> {
    if lhs != DType::Uint8 && rhs != DType::Uint8 {
        // The same stream, drawn on every core.
        let a = random::uniform(seed, 0, (m * k) as usize);
        let b = random::uniform(seed, m * k, (k * n) as usize);
        return Inputs { a: Cow::Owned(a), b: Cow::Owned(b) };
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut gen = |len: u64, dtype: DType| {
        (0..len)
            .map(
                |_| if dtype == DType::Uint8 { f32::from(rng.gen_range(0u8..16)) } else { rng.gen_range(-1.0f32..1.0) },
            )
            .collect::<Vec<f32>>()
    };
    let a = gen(m * k, lhs);
    let b = gen(k * n, rhs);
    Inputs { a: Cow::Owned(a), b: Cow::Owned(b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_bits_decodes_bf16_exactly() {
        // 1.5 and -2.0 in bf16.
        let bytes = [0xc0, 0x3f, 0x00, 0xc0];
        let op = Operand::from_bits("a", 1, 2, DType::Bf16, &bytes).map(|o| o.values.into_owned());
        assert_eq!(op.ok(), Some(vec![1.5, -2.0]));
    }

    #[test]
    fn operand_length_must_match_shape() {
        let e = Operand::from_f32("b", 2, 2, &[1.0, 2.0, 3.0]).err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("b: shape [2, 2] but 3 elements"));
    }

    #[test]
    fn operands_that_do_not_chain_are_the_users_error() {
        let (a, b) = (vec![0.0f32; 6], vec![0.0f32; 8]);
        let inputs = GemmInputs {
            a: Operand { rows: 2, cols: 3, values: Cow::Borrowed(&a) },
            b: Operand { rows: 4, cols: 2, values: Cow::Borrowed(&b) },
        };
        let e = inputs.shape(false).err();
        assert_eq!(
            e.as_ref().map(|e| (e.kind(), e.to_string())),
            Some((
                crate::error::ErrorKind::Input,
                "shapes do not chain: A [M, K] is [2, 3] (K = 3) but B [K, N] is [4, 2]".to_string()
            ))
        );
        // As [K, M], A has K = 2, which does not chain either.
        assert!(inputs.shape(true).is_err());
    }
}
