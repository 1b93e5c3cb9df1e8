//! Access patterns: which elements of a tensor an operand touches.
//!
//! An access pattern has a partition dimension and up to [`MAX_FREE_DIMS`] free dimensions,
//! each a `[stride, num]` pair, plus an element offset. For on-chip tensors the partition
//! dimension selects physical partitions (`start_partition`, step `partitions.stride`) and
//! the offset and free strides count elements inside a partition. For HBM tensors there are
//! no physical partitions: `start_partition` is 0, and the partition dimension is one more
//! strided dimension over the row-major tensor (it becomes the partition axis when the data
//! lands on chip).

use std::fmt;

use serde::{Deserialize, Serialize};

mod free;
mod region;

pub use free::FreeDims;
pub use region::{Region, Window};

/// The most free dimensions an access pattern may have.
pub const MAX_FREE_DIMS: usize = 4;

/// One `[stride, num]` dimension; strides are in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Dim {
    /// Step between consecutive indices, in elements (partitions for an on-chip partition dim).
    pub stride: i64,
    /// Number of indices.
    pub num: u32,
}

impl Dim {
    /// A dimension.
    pub const fn new(stride: i64, num: u32) -> Self {
        Dim { stride, num }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}]", self.stride, self.num)
    }
}

/// Which elements of a tensor an operand touches.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AccessPattern {
    /// First physical partition (on chip); 0 for HBM.
    pub start_partition: u32,
    /// The partition dimension.
    pub partitions: Dim,
    /// Element offset of the first element (inside the partition on chip).
    pub offset: i64,
    /// Free dimensions, outermost first (a list that keeps one dimension inline).
    pub free: FreeDims,
}

impl AccessPattern {
    /// An on-chip block: partitions `[start, start + parts)`, a contiguous run of `free`
    /// elements at `offset` in each.
    pub fn on_chip(start_partition: u32, parts: u32, offset: i64, free: u32) -> Self {
        AccessPattern {
            start_partition,
            partitions: Dim::new(1, parts),
            offset,
            free: FreeDims::one(Dim::new(1, free)),
        }
    }

    /// A 2-d window of a row-major HBM matrix with `row_len` elements per row: `rows` rows
    /// from `row0` and `cols` columns from `col0`. Row `i` goes to partition `i`.
    ///
    /// A row length or offset beyond `i64::MAX` saturates to `i64::MAX` (which the verifier
    /// then reports as out of bounds) instead of wrapping.
    pub fn hbm_rows(row_len: u64, row0: u64, rows: u32, col0: u64, cols: u32) -> Self {
        AccessPattern {
            start_partition: 0,
            partitions: Dim::new(saturate_u64(row_len), rows),
            offset: window_offset(row_len, row0, col0),
            free: FreeDims::one(Dim::new(1, cols)),
        }
    }

    /// The transposed window: column `j` of the `rows x cols` window goes to partition `j`,
    /// its `rows` elements along the free dimension. Saturates like [`Self::hbm_rows`].
    pub fn hbm_cols(row_len: u64, row0: u64, rows: u32, col0: u64, cols: u32) -> Self {
        AccessPattern {
            start_partition: 0,
            partitions: Dim::new(1, cols),
            offset: window_offset(row_len, row0, col0),
            free: FreeDims::one(Dim::new(saturate_u64(row_len), rows)),
        }
    }

    /// Elements per partition, saturating at `u64::MAX`.
    pub fn free_elems(&self) -> u64 {
        self.free.iter().fold(1u64, |n, d| n.saturating_mul(u64::from(d.num)))
    }

    /// Total elements, saturating at `u64::MAX`.
    pub fn num_elems(&self) -> u64 {
        u64::from(self.partitions.num).saturating_mul(self.free_elems())
    }

    /// The logical shape: partition count, then the free sizes.
    pub fn shape(&self) -> Vec<u64> {
        std::iter::once(u64::from(self.partitions.num)).chain(self.free.iter().map(|d| u64::from(d.num))).collect()
    }

    /// `(start, count)` of the partition dimension, the seed's `canonical_par_indices`.
    pub fn canonical_par_indices(&self) -> (u32, u32) {
        (self.start_partition, self.partitions.num)
    }

    /// The canonical free dimensions (the seed's `canonical_free_indices`): unit dimensions
    /// dropped and dimensions that walk memory contiguously merged (unless the merged stride
    /// or count would not fit its type).
    pub fn canonical_free_indices(&self) -> Vec<Dim> {
        FreeDims::canonical(&self.free).into_vec()
    }

    /// The free dimensions with the outermost one of size `n` (splitting a canonical merged
    /// dimension), if the element walk allows it: the view a packed operand needs.
    pub fn split_outer(&self, n: u32) -> Option<Vec<Dim>> {
        let mut dims = self.canonical_free_indices();
        let first = *dims.first()?;
        if first.num == n {
            return Some(dims);
        }
        if n == 0 || first.num % n != 0 {
            return None;
        }
        let inner = first.num / n;
        dims[0] = Dim::new(first.stride.checked_mul(i64::from(inner))?, n);
        dims.insert(1, Dim::new(first.stride, inner));
        Some(dims)
    }

    /// The same pattern in canonical form.
    pub fn canonicalize(&self) -> AccessPattern {
        let partitions = if self.partitions.num == 1 { Dim::new(1, 1) } else { self.partitions };
        AccessPattern {
            start_partition: self.start_partition,
            partitions,
            offset: self.offset,
            free: self.canonical_free_indices().into(),
        }
    }

    /// [`Self::canonicalize`] in place: the free dimensions are merged inside their own
    /// vector, so a pattern that is already canonical (or only shrinks) allocates nothing.
    pub fn canonicalize_in_place(&mut self) {
        if self.partitions.num == 1 {
            self.partitions = Dim::new(1, 1);
        }
        let mut w: usize = 0;
        for r in 0..self.free.len() {
            let d = self.free[r];
            if d.num == 1 {
                continue;
            }
            let merged = w.checked_sub(1).and_then(|last| {
                let outer = self.free[last];
                let contiguous = d.stride.checked_mul(i64::from(d.num)) == Some(outer.stride);
                let num = if contiguous { outer.num.checked_mul(d.num) } else { None };
                num.map(|num| (last, num))
            });
            match merged {
                Some((last, num)) => self.free[last] = Dim::new(d.stride, num),
                None => {
                    self.free[w] = d;
                    w += 1;
                }
            }
        }
        self.free.truncate(w);
        if self.free.is_empty() {
            self.free.push(Dim::new(1, 1));
        }
    }

    /// Smallest and largest element offset of the free dimensions, relative to `offset`,
    /// saturated to the `i64` range.
    pub fn free_extent(&self) -> (i64, i64) {
        let (lo, hi) = extent(&self.free);
        (clamp_i64(lo), clamp_i64(hi))
    }

    /// Smallest and largest element offset of the whole pattern (HBM), relative to `offset`,
    /// saturated to the `i64` range.
    pub fn flat_extent(&self) -> (i64, i64) {
        let (lo, hi) = self.flat_extent_wide();
        (clamp_i64(lo), clamp_i64(hi))
    }

    /// [`Self::flat_extent`] without saturation.
    fn flat_extent_wide(&self) -> (i128, i128) {
        let (lo, hi) = extent(&self.free);
        let (plo, phi) = extent(std::slice::from_ref(&self.partitions));
        (lo.saturating_add(plo), hi.saturating_add(phi))
    }

    /// The exact box this pattern touches, in elements: partitions `[p0, p1)` (on chip; HBM
    /// gives `[0, 1)`) and elements `[lo, hi)`. Nothing is clamped, so `p0` may be negative
    /// and any bound may lie outside the `i64` range; the verifier checks these.
    pub(crate) fn region_wide(&self, on_chip: bool) -> [i128; 4] {
        let offset = i128::from(self.offset);
        let end = |base: i128, span: i128| base.saturating_add(span).saturating_add(1);
        if on_chip {
            let (lo, hi) = extent(&self.free);
            let (plo, phi) = extent(std::slice::from_ref(&self.partitions));
            let start = i128::from(self.start_partition);
            [start.saturating_add(plo), end(start, phi), offset.saturating_add(lo), end(offset, hi)]
        } else {
            let (lo, hi) = self.flat_extent_wide();
            [0, 1, offset.saturating_add(lo), end(offset, hi)]
        }
    }

    /// The box this pattern touches, in elements, saturated as described at [`Region`], and
    /// whether it touches all of it; no window (see [`Self::hbm_region`]).
    pub fn region(&self, on_chip: bool) -> Region {
        let [p0, p1, lo, hi] = self.region_wide(on_chip);
        let part = |p: i128| u32::try_from(p.max(0)).unwrap_or(u32::MAX);
        let (p0c, p1c, loc, hic) = (part(p0), part(p1), clamp_i64(lo), clamp_i64(hi));
        let exact = [i128::from(p0c), i128::from(p1c), i128::from(loc), i128::from(hic)] == [p0, p1, lo, hi];
        Region { p0: p0c, p1: p1c, lo: loc, hi: hic, dense: exact && self.is_dense(on_chip), window: None }
    }

    /// Call `f` with the element offset of every free index, in row-major order (offsets
    /// saturate at the `i64` range).
    pub fn for_each_free_offset(&self, mut f: impl FnMut(i64)) {
        for_each_offset(&self.free, 0, &mut f);
    }
}

/// Smallest and largest offset of `dims` relative to their base. Each span is below 2^96,
/// so the sums only saturate for absurdly many dimensions.
fn extent(dims: &[Dim]) -> (i128, i128) {
    dims.iter().fold((0, 0), |(lo, hi), d| {
        let span = i128::from(d.stride) * (i128::from(d.num.max(1)) - 1);
        if span < 0 {
            (lo.saturating_add(span), hi)
        } else {
            (lo, hi.saturating_add(span))
        }
    })
}

/// `v` saturated to the `i64` range.
fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// `v` saturated to `i64::MAX`.
fn saturate_u64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The element offset `row0 * row_len + col0`, saturated to `i64::MAX`.
fn window_offset(row_len: u64, row0: u64, col0: u64) -> i64 {
    saturate_u64(row0.saturating_mul(row_len).saturating_add(col0))
}

fn for_each_offset(dims: &[Dim], base: i64, f: &mut impl FnMut(i64)) {
    match dims.split_first() {
        None => f(base),
        Some((d, [])) => {
            for i in 0..i64::from(d.num) {
                f(base.saturating_add(i.saturating_mul(d.stride)));
            }
        }
        Some((d, rest)) => {
            for i in 0..i64::from(d.num) {
                for_each_offset(rest, base.saturating_add(i.saturating_mul(d.stride)), f);
            }
        }
    }
}

impl fmt::Display for AccessPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{}{} +{}", self.start_partition, self.partitions, self.offset)?;
        for d in &self.free {
            write!(f, " {d}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_merges_contiguous_and_drops_units() {
        let ap = AccessPattern {
            start_partition: 0,
            partitions: Dim::new(1, 4),
            offset: 0,
            free: vec![Dim::new(16, 4), Dim::new(99, 1), Dim::new(4, 4), Dim::new(1, 4)].into(),
        };
        assert_eq!(ap.canonical_free_indices(), vec![Dim::new(1, 64)]);
        let strided = AccessPattern { free: vec![Dim::new(32, 2), Dim::new(1, 4)].into(), ..ap };
        assert_eq!(strided.canonical_free_indices(), vec![Dim::new(32, 2), Dim::new(1, 4)]);
    }

    #[test]
    fn canonicalize_in_place_is_canonicalize() {
        let base = AccessPattern::on_chip(3, 1, 5, 1);
        let frees = [
            vec![],
            vec![Dim::new(1, 1)],
            vec![Dim::new(7, 1), Dim::new(9, 1)],
            vec![Dim::new(16, 4), Dim::new(99, 1), Dim::new(4, 4), Dim::new(1, 4)],
            vec![Dim::new(32, 2), Dim::new(1, 4)],
            vec![Dim::new(8, 2), Dim::new(1, 1), Dim::new(2, 4), Dim::new(1, 2), Dim::new(0, 3)],
            vec![Dim::new(i64::MIN, 2), Dim::new(1 << 62, 2), Dim::new(1 << 16, 1 << 16), Dim::new(1, 1 << 16)],
        ];
        for (i, free) in frees.into_iter().enumerate() {
            for partitions in [Dim::new(5, 1), Dim::new(2, 8)] {
                let ap = AccessPattern { partitions, free: free.clone().into(), ..base.clone() };
                let mut inplace = ap.clone();
                inplace.canonicalize_in_place();
                assert_eq!(inplace, ap.canonicalize(), "pattern {i}");
            }
        }
        let mut ap = AccessPattern { free: vec![Dim::new(4, 4), Dim::new(1, 4)].into(), ..base };
        ap.canonicalize_in_place();
        assert_eq!((ap.partitions, ap.free), (Dim::new(1, 1), vec![Dim::new(1, 16)].into()));
    }

    #[test]
    fn split_outer_restores_a_pack_axis() {
        let ap = AccessPattern::on_chip(0, 128, 0, 256);
        assert_eq!(ap.split_outer(2), Some(vec![Dim::new(128, 2), Dim::new(1, 128)]));
        let odd = AccessPattern::on_chip(0, 128, 0, 7);
        assert_eq!(odd.split_outer(2), None);
    }

    #[test]
    fn offsets_and_regions() {
        let ap = AccessPattern::hbm_cols(10, 2, 3, 4, 2);
        let mut offs = vec![];
        ap.for_each_free_offset(|o| offs.push(o));
        assert_eq!(offs, vec![0, 10, 20]);
        let r = ap.region(false);
        assert_eq!((r.lo, r.hi), (24, 24 + 21 + 1));
        let a = AccessPattern::on_chip(0, 64, 0, 128).region(true);
        let b = AccessPattern::on_chip(64, 64, 0, 128).region(true);
        assert!(!a.overlaps(&b));
        assert!(AccessPattern::on_chip(0, 128, 0, 128).region(true).covers(&a));
    }

    #[test]
    fn hostile_patterns_saturate_instead_of_overflowing() {
        let ap = AccessPattern {
            start_partition: u32::MAX,
            partitions: Dim::new(i64::MAX, u32::MAX),
            offset: i64::MAX,
            free: vec![Dim::new(i64::MAX, u32::MAX), Dim::new(i64::MIN, u32::MAX)].into(),
        };
        assert_eq!(ap.free_extent(), (i64::MIN, i64::MAX));
        assert_eq!(ap.flat_extent(), (i64::MIN, i64::MAX));
        let sat = Region { p0: u32::MAX, p1: u32::MAX, lo: i64::MIN, hi: i64::MAX, dense: false, window: None };
        assert_eq!(ap.region(true), sat);
        assert_eq!(ap.region(false), Region { p0: 0, p1: 1, ..sat });
        // A partition stride of 2^32 is not truncated back to partition 1.
        let wide = AccessPattern { partitions: Dim::new(1 << 32, 2), ..AccessPattern::on_chip(0, 2, 0, 4) };
        assert_eq!(wide.region(true).p1, u32::MAX);
        let [p0, ..] = AccessPattern { partitions: Dim::new(-1, 2), ..wide }.region_wide(true);
        assert_eq!(p0, -1);
        let many = AccessPattern { free: vec![Dim::new(0, u32::MAX); 4].into(), ..ap };
        assert_eq!((many.free_elems(), many.num_elems()), (u64::MAX, u64::MAX));
        // Merging would overflow the stride or the count: the dimensions stay apart.
        let big = AccessPattern {
            free: vec![Dim::new(i64::MIN, 2), Dim::new(1 << 62, 2), Dim::new(1 << 16, 1 << 16), Dim::new(1, 1 << 16)]
                .into(),
            ..AccessPattern::on_chip(0, 1, 0, 1)
        };
        assert_eq!(big.canonical_free_indices(), big.free);
        assert_eq!(AccessPattern { free: vec![Dim::new(i64::MAX, 4)].into(), ..big }.split_outer(2), None);
        let window = AccessPattern::hbm_rows(u64::MAX, u64::MAX, 2, u64::MAX, 2);
        assert_eq!((window.partitions.stride, window.offset), (i64::MAX, i64::MAX));
        let mut offsets = vec![];
        AccessPattern { free: vec![Dim::new(i64::MAX, 3), Dim::new(i64::MIN, 3)].into(), ..big }
            .for_each_free_offset(|o| offsets.push(o));
        assert_eq!(offsets.len(), 9);
        assert_eq!((offsets[2], offsets[6]), (i64::MIN, i64::MAX));
    }
}
