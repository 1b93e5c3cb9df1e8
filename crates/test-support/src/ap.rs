//! Access-pattern shorthands for hand-written programs: a contiguous run per partition, over
//! [`HwAp::on_chip`] and [`HwAp::hbm`] (use those for any other pattern).

use bir::HwAp;
use penguin::{DType, Dim, Memory};

/// `parts` SBUF partitions from `start`, a contiguous run of `n` elements at `byte_offset`.
pub fn sbuf(dtype: DType, start: u32, parts: u32, byte_offset: u64, n: u32) -> HwAp {
    HwAp::on_chip(Memory::Sbuf, dtype, start, parts, byte_offset, vec![Dim::new(1, n)])
}

/// `parts` PSUM partitions from 0, a run of `n` fp32 at `byte_offset`.
pub fn psum(parts: u32, byte_offset: u64, n: u32) -> HwAp {
    HwAp::on_chip(Memory::Psum, DType::Fp32, 0, parts, byte_offset, vec![Dim::new(1, n)])
}

/// A `rows x cols` window of a row-major HBM matrix with `row_len` elements per row whose
/// first selected element is at byte `byte_offset`.
pub fn hbm(dtype: DType, byte_offset: u64, rows: u32, row_len: i64, cols: u32) -> HwAp {
    HwAp::hbm(dtype, byte_offset, rows, row_len, vec![Dim::new(1, cols)])
}
