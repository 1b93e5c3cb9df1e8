//! The check's per-element error bound, and the operands as it reads them.

use penguin::DType;
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// The per-element bound, as applied.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound {
    /// `2 * K * eps32`, the factor of `|A| @ |B|`.
    pub rel: f64,
    /// The output dtype's unit roundoff (0 for fp32).
    pub out_rel: f64,
    /// Half the output dtype's smallest subnormal (0 for fp32).
    pub out_abs: f64,
    /// The output dtype's largest finite value.
    pub out_max: f64,
    /// The output dtype.
    pub out: DType,
}

impl Bound {
    /// The bound of a K-long contraction written as `out`.
    pub fn new(k: u64, out: DType) -> Bound {
        let (out_rel, out_abs) =
            if out == DType::Fp32 { (0.0, 0.0) } else { (out.unit_roundoff(), f64::from(out.decode(1)) / 2.0) };
        Bound { rel: 2.0 * k as f64 * f64::from(f32::EPSILON), out_rel, out_abs, out_max: out.max_value(), out }
    }

    /// The bound of one element with reference `want` and `mag = (|A| @ |B|)[i, j]`.
    pub fn at(&self, want: f64, mag: f64) -> f64 {
        let b = self.rel * mag;
        b + self.out_rel * (want.abs() + b) + self.out_abs
    }

    /// `g` with `at(want, mag) <= g * mag + out_abs` for every `|want| <= mag`.
    pub(super) fn mag_factor(&self) -> f64 {
        self.rel * (1.0 + self.out_rel) + self.out_rel
    }

    /// The formula with its constants, e.g. `2*K*eps32*(|A|@|B|) = 4.883e-4*(|A|@|B|)`.
    pub fn formula(&self) -> String {
        let mut s = format!("2*K*eps32*(|A|@|B|) = {:.3e}*(|A|@|B|)", self.rel);
        if self.out_rel > 0.0 {
            let out = self.out;
            s += &format!(
                " + u_{out}*(|ref| + that) + s_{out}/2 with u_{out} = {:.3e}, s_{out}/2 = {:.3e}",
                self.out_rel, self.out_abs
            );
        }
        s
    }
}

impl Serialize for Bound {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Bound", 4)?;
        s.serialize_field("rel", &self.rel)?;
        s.serialize_field("out_rel", &self.out_rel)?;
        s.serialize_field("out_abs", &self.out_abs)?;
        s.serialize_field("formula", &self.formula())?;
        s.end()
    }
}

/// A row-major `rows x cols` matrix of values exact in f32 (the rounded operands).
#[derive(Clone, Copy, Debug)]
pub struct Matrix<'a> {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// `rows * cols` values.
    pub data: &'a [f32],
}

impl Matrix<'_> {
    pub(super) fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }
}
