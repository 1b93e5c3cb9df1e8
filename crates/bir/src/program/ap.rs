//! Hardware access patterns: which partitions and bytes an operand walks.

use std::fmt;

use serde::{Deserialize, Serialize};

#[cfg(test)]
use penguin::Dim;
use penguin::{DType, Memory};

use super::Dims;

/// A hardware access pattern.
///
/// On chip: partitions `start_partition + i * partition_stride` for `i < num_partitions`,
/// and inside each the element offsets `byte_offset / size + sum(idx_d * stride_d)`.
/// HBM: byte-addressed from the start of HBM; the partition dimension is one more strided
/// dimension (stride in elements).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HwAp {
    /// The memory.
    pub memory: Memory,
    /// The element type.
    pub dtype: DType,
    /// First partition (0 for HBM).
    pub start_partition: u32,
    /// Partition count (rows for HBM).
    pub num_partitions: u32,
    /// Partition step (on chip) or row stride in elements (HBM).
    pub partition_stride: i64,
    /// Byte offset: within a partition on chip, absolute in HBM.
    pub byte_offset: u64,
    /// Free dimensions, element strides.
    pub dims: Dims,
}

/// `stride * (num - 1)`, the offset of the last index of a dimension (exact: below 2^96 in
/// magnitude).
fn span(stride: i64, num: u32) -> i128 {
    i128::from(stride) * (i128::from(num.max(1)) - 1)
}

/// `v` saturated to the `i64` range.
fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

impl HwAp {
    /// An on-chip (SBUF or PSUM) pattern: `num_partitions` consecutive partitions from
    /// `start_partition`, each walked by `dims` from `byte_offset`. (A partition step other
    /// than 1 is a struct update: `HwAp { partition_stride: 2, ..HwAp::on_chip(..) }`.)
    pub fn on_chip(
        memory: Memory,
        dtype: DType,
        start_partition: u32,
        num_partitions: u32,
        byte_offset: u64,
        dims: impl Into<Dims>,
    ) -> HwAp {
        HwAp { memory, dtype, start_partition, num_partitions, partition_stride: 1, byte_offset, dims: dims.into() }
    }

    /// An HBM pattern: `rows` rows `row_stride` elements apart, the first at byte
    /// `byte_offset`, each walked by `dims` (a window of a row-major matrix whose rows hold
    /// `row_stride` elements, for `dims = [Dim::new(1, cols)]`).
    pub fn hbm(dtype: DType, byte_offset: u64, rows: u32, row_stride: i64, dims: impl Into<Dims>) -> HwAp {
        HwAp {
            memory: Memory::Hbm,
            dtype,
            start_partition: 0,
            num_partitions: rows,
            partition_stride: row_stride,
            byte_offset,
            dims: dims.into(),
        }
    }

    /// Elements per partition, saturating at `u64::MAX`.
    pub fn free_elems(&self) -> u64 {
        self.dims.iter().fold(1u64, |n, d| n.saturating_mul(u64::from(d.num)))
    }

    /// Elements over all partitions, saturating at `u64::MAX`.
    pub fn num_elems(&self) -> u64 {
        u64::from(self.num_partitions).saturating_mul(self.free_elems())
    }

    /// Smallest and largest element offset of the free dims relative to the base, saturated
    /// to the `i64` range.
    pub fn free_extent(&self) -> (i64, i64) {
        let (lo, hi) = self.free_extent_wide();
        (clamp_i64(lo), clamp_i64(hi))
    }

    /// [`Self::free_extent`] without saturation.
    fn free_extent_wide(&self) -> (i128, i128) {
        self.dims.iter().fold((0, 0), |(lo, hi), d| {
            let s = span(d.stride, d.num);
            if s < 0 {
                (lo.saturating_add(s), hi)
            } else {
                (lo, hi.saturating_add(s))
            }
        })
    }

    /// The byte box this pattern touches: partitions `[p0, p1)` and bytes `[lo, hi)` within
    /// each partition (HBM: `p0 = 0, p1 = 1`, absolute bytes).
    ///
    /// Saturating: partitions are clamped to `0..=u32::MAX` and bytes to the `i64` range, so
    /// a hostile pattern gives a box that is too large, never one that wrapped around (the
    /// verifier checks the exact bounds).
    pub fn byte_region(&self) -> (u32, u32, i64, i64) {
        let [p0, p1, lo, hi] = self.byte_region_wide();
        let part = |p: i128| u32::try_from(p.max(0)).unwrap_or(u32::MAX);
        (part(p0), part(p1), clamp_i64(lo), clamp_i64(hi))
    }

    /// [`Self::byte_region`] without clamping: `p0` may be negative and any bound may lie
    /// outside the `i64` range.
    pub(crate) fn byte_region_wide(&self) -> [i128; 4] {
        let size = i128::from(self.dtype.size_bytes());
        let (mut lo, mut hi) = self.free_extent_wide();
        let pspan = span(self.partition_stride, self.num_partitions);
        let base = i128::from(self.byte_offset);
        let bytes = |lo: i128, hi: i128| {
            [
                base.saturating_add(lo.saturating_mul(size)),
                base.saturating_add(hi.saturating_add(1).saturating_mul(size)),
            ]
        };
        if self.memory == Memory::Hbm {
            if pspan < 0 {
                lo = lo.saturating_add(pspan);
            } else {
                hi = hi.saturating_add(pspan);
            }
            let [blo, bhi] = bytes(lo, hi);
            [0, 1, blo, bhi]
        } else {
            let start = i128::from(self.start_partition);
            let [blo, bhi] = bytes(lo, hi);
            [start + pspan.min(0), start + pspan.max(0) + 1, blo, bhi]
        }
    }
}

impl fmt::Display for HwAp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}[p{}:{}:{} @{}",
            self.memory, self.dtype, self.start_partition, self.num_partitions, self.partition_stride, self.byte_offset
        )?;
        for d in &self.dims {
            write!(f, " {d}")?;
        }
        f.write_str("]")
    }
}

/// An fp32 access pattern for tests.
#[cfg(test)]
pub(crate) fn test_ap(memory: Memory, start: u32, parts: u32, pstride: i64, offset: u64, dims: Vec<Dim>) -> HwAp {
    HwAp { partition_stride: pstride, ..HwAp::on_chip(memory, DType::Fp32, start, parts, offset, dims) }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::test_ap as ap;

    #[test]
    fn byte_region_of_ordinary_patterns() {
        let a = ap(Memory::Sbuf, 2, 2, 3, 4, vec![Dim::new(4, 2), Dim::new(1, 2)]);
        assert_eq!(a.byte_region(), (2, 6, 4, 4 + 6 * 4));
        let h = ap(Memory::Hbm, 0, 3, 10, 8, vec![Dim::new(-1, 2)]);
        assert_eq!(h.byte_region(), (0, 1, 8 - 4, 8 + 21 * 4));
    }

    #[test]
    fn byte_region_saturates_for_huge_strides() {
        let huge = vec![Dim::new(i64::MAX, u32::MAX); 4];
        let tiny = vec![Dim::new(i64::MIN, u32::MAX); 4];
        // HBM: the partition and free spans and the offset reach far past i64 both ways.
        assert_eq!(ap(Memory::Hbm, 0, u32::MAX, i64::MAX, u64::MAX, huge.clone()).byte_region().3, i64::MAX);
        assert_eq!(ap(Memory::Hbm, 0, u32::MAX, i64::MIN, 0, tiny.clone()).byte_region().2, i64::MIN);
        let (p0, p1, lo, hi) = ap(Memory::Hbm, 0, 2, i64::MIN, u64::MAX, huge.clone()).byte_region();
        assert_eq!((p0, p1, hi), (0, 1, i64::MAX));
        assert!(lo < hi);
        // On chip: partitions clamp to 0..=u32::MAX instead of truncating (a stride of 2^32
        // must not come back as partition 1).
        assert_eq!(ap(Memory::Sbuf, 0, 2, 1 << 32, 0, vec![]).byte_region().1, u32::MAX);
        let (p0, p1, lo, hi) = ap(Memory::Psum, u32::MAX, u32::MAX, i64::MIN, 0, tiny).byte_region();
        assert_eq!((p0, p1, lo, hi), (0, u32::MAX, i64::MIN, 4));
        let (p0, p1, lo, hi) = ap(Memory::Sbuf, 0, u32::MAX, i64::MAX, u64::MAX, huge.clone()).byte_region();
        assert_eq!((p0, p1, hi), (0, u32::MAX, i64::MAX));
        assert!(lo > 0);
        // The exact bounds the verifier uses are not clamped.
        let [p0, _, _, hi] = ap(Memory::Sbuf, 0, 2, -1, u64::MAX, huge.clone()).byte_region_wide();
        assert_eq!(p0, -1);
        assert!(hi > i128::from(u64::MAX));
        // Counts saturate too.
        let many = ap(Memory::Hbm, 0, u32::MAX, 0, 0, vec![Dim::new(0, u32::MAX); 4]);
        assert_eq!((many.free_elems(), many.num_elems()), (u64::MAX, u64::MAX));
        assert_eq!(ap(Memory::Sbuf, 0, 1, 1, 0, huge).free_extent(), (0, i64::MAX));
    }
}
