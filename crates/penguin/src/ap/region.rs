//! [`Region`]: what an access touches, as the dependency tracker compares it.
//!
//! Every region carries a box: partitions `[p0, p1)` and elements `[lo, hi)` (within each
//! partition on chip, over the whole row-major tensor in HBM). The box is the hull of the
//! pattern's elements, so intersecting boxes is a sound (never missing) overlap test, but
//! for HBM it is coarse: a `128 x 512` tile of a row-major `M x N` matrix spans whole rows of
//! the flat range, so two tiles in the same rows always "overlap".
//!
//! Two refinements make the comparison exact where it matters:
//!
//! - `window`: when an HBM pattern's element set is exactly a row-major 2-d window of the
//!   tensor (rows `[r0, r1)`, columns `[c0, c1)` of rows of `row_len` elements, with
//!   `c1 <= row_len`), as [`super::AccessPattern::hbm_rows`] and
//!   [`super::AccessPattern::hbm_cols`] produce, the region records it. Two windows of the
//!   same row length intersect iff their row ranges and their column ranges do, and one
//!   contains the other iff both ranges do.
//! - `dense`: whether the element set is the whole box (a contiguous run per partition over
//!   contiguous partitions). Only then may a region that is not a window claim to cover
//!   another one: [`Region::covers`] prunes the tracked accesses, so it must never claim a
//!   coverage that is not real, while [`Region::overlaps`] may only err towards `true`.
//!
//! Pruning stays sound with exact windows: if `x` covers `y` (really), any access that
//! really touches an element of `y` touches `x` too, and [`Region::overlaps`] never misses
//! a real intersection, so it finds the edge from `x`, which is ordered after `y`.

use super::{AccessPattern, Dim};

/// A row-major 2-d window: rows `[r0, r1)` and columns `[c0, c1)` of a tensor with
/// `row_len` elements per row, that is the elements `r * row_len + c`. Always non-empty, with
/// `0 <= c0 < c1 <= row_len` and `0 <= r0 < r1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window {
    /// Elements per row (the tensor's last dimension).
    pub row_len: i64,
    /// First row.
    pub r0: i64,
    /// One past the last row.
    pub r1: i64,
    /// First column.
    pub c0: i64,
    /// One past the last column.
    pub c1: i64,
}

impl Window {
    /// Whether the two windows share an element (exact when the row lengths match; `true`
    /// otherwise, the caller having checked the boxes).
    fn overlaps(&self, o: &Window) -> bool {
        self.row_len != o.row_len || (self.r0 < o.r1 && o.r0 < self.r1 && self.c0 < o.c1 && o.c0 < self.c1)
    }

    /// Whether every element of `o` is in `self` (exact when the row lengths match; `false`
    /// otherwise).
    fn covers(&self, o: &Window) -> bool {
        self.row_len == o.row_len && self.r0 <= o.r0 && o.r1 <= self.r1 && self.c0 <= o.c0 && o.c1 <= self.c1
    }

    /// Whether the window is one contiguous run of elements.
    pub(crate) fn contiguous(&self) -> bool {
        self.r1 - self.r0 == 1 || (self.c0 == 0 && self.c1 == self.row_len)
    }
}

/// What an access touches: a box (partitions `[p0, p1)` and elements `[lo, hi)` within
/// each partition, or within the whole tensor for HBM, where `p0 = 0`, `p1 = 1`), whether the
/// access touches all of it, and for HBM its exact element set when that is a row-major 2-d
/// window ([`Window`]). [`Region::overlaps`] is exact between two windows of the same row
/// length and otherwise may only err towards `true`; [`Region::covers`] never claims a
/// containment that is not real (it prunes the dependency tracker's accesses).
///
/// Built by [`AccessPattern::region`] and [`AccessPattern::hbm_region`], which saturate:
/// partitions are clamped to `0..=u32::MAX` and elements to `i64::MIN..=i64::MAX`, so a
/// hostile pattern gives a box that is too large rather than one that wrapped around (the
/// verifier uses the exact, unclamped bounds); such a box is never dense nor a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    /// First partition.
    pub p0: u32,
    /// One past the last partition.
    pub p1: u32,
    /// First element.
    pub lo: i64,
    /// One past the last element.
    pub hi: i64,
    /// Whether the access touches every element of the box.
    pub dense: bool,
    /// The exact element set, when it is a row-major 2-d window (HBM only).
    pub window: Option<Window>,
}

impl Region {
    /// Whether the two regions may share an element: exact when both are windows of the same
    /// row length, otherwise whether the boxes intersect (never `false` when they share one).
    pub fn overlaps(&self, other: &Region) -> bool {
        let boxes = self.p0 < other.p1 && other.p0 < self.p1 && self.lo < other.hi && other.lo < self.hi;
        match (&self.window, &other.window) {
            (Some(a), Some(b)) => boxes && a.overlaps(b),
            _ => boxes,
        }
    }

    /// Whether `self` surely contains every element of `other`: exact when both are windows
    /// of the same row length; otherwise only when `self` is dense and its box contains
    /// `other`'s (never `true` when the containment is not real).
    pub fn covers(&self, other: &Region) -> bool {
        let boxes = self.p0 <= other.p0 && other.p1 <= self.p1 && self.lo <= other.lo && other.hi <= self.hi;
        match (&self.window, &other.window) {
            (Some(a), Some(b)) if a.row_len == b.row_len => boxes && a.covers(b),
            (Some(a), _) => boxes && a.contiguous(),
            (None, _) => boxes && self.dense,
        }
    }
}

/// A short list kept on the stack: a pattern has at most a partition dimension and a few free
/// ones, so the overlap tests below never allocate for a pattern the verifier accepts (a
/// longer one spills to the heap).
struct Small<T: Copy, const N: usize> {
    len: usize,
    inline: [T; N],
    spill: Vec<T>,
}

impl<T: Copy, const N: usize> Small<T, N> {
    fn new(fill: T) -> Self {
        Small { len: 0, inline: [fill; N], spill: Vec::new() }
    }

    fn push(&mut self, v: T) {
        if self.spill.is_empty() && self.len < N {
            self.inline[self.len] = v;
        } else {
            if self.spill.is_empty() {
                self.spill.extend_from_slice(&self.inline);
            }
            self.spill.push(v);
        }
        self.len += 1;
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        if self.spill.is_empty() {
            &mut self.inline[..self.len]
        } else {
            &mut self.spill
        }
    }

    fn as_slice(&self) -> &[T] {
        if self.spill.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.spill
        }
    }
}

/// Dimensions held on the stack by [`merged`]: the partition one and [`super::MAX_FREE_DIMS`]
/// free ones, and one to spare.
const SMALL_DIMS: usize = super::MAX_FREE_DIMS + 2;

/// The dimensions with more than one index sorted by stride and merged where they walk
/// memory contiguously, as `(stride, num)` in `i128`; `None` if some dimension is empty or
/// has a stride that is not positive (an aliasing or reversed walk, left to the box).
fn merged(dims: impl Iterator<Item = Dim>) -> Option<Small<(i128, i128), SMALL_DIMS>> {
    let mut kept: Small<Dim, SMALL_DIMS> = Small::new(Dim::new(0, 0));
    for d in dims.filter(|d| d.num != 1) {
        if d.num == 0 || d.stride <= 0 {
            return None;
        }
        kept.push(d);
    }
    // A stable sort, as before: dimensions of equal stride keep their order.
    kept.as_mut_slice().sort_by_key(|d| d.stride);
    let mut out: Small<(i128, i128), SMALL_DIMS> = Small::new((0, 0));
    for d in kept.as_slice() {
        let (stride, num) = (i128::from(d.stride), i128::from(d.num));
        match out.as_mut_slice().last_mut() {
            Some((s, n)) if *s * *n == stride => *n *= num,
            _ => out.push((stride, num)),
        }
    }
    Some(out)
}

/// Whether merged dimensions walk one contiguous run.
fn is_run(dims: &[(i128, i128)]) -> bool {
    matches!(dims, [] | [(1, _)])
}

impl AccessPattern {
    /// Whether the pattern touches every element of its box: contiguous partitions (on chip)
    /// and one contiguous run of elements in each (or in the tensor, for HBM).
    pub(crate) fn is_dense(&self, on_chip: bool) -> bool {
        if on_chip {
            let parts = self.partitions.num == 1 || (self.partitions.num > 1 && self.partitions.stride == 1);
            parts && merged(self.free.iter().copied()).is_some_and(|d| is_run(d.as_slice()))
        } else {
            merged(std::iter::once(self.partitions).chain(self.free.iter().copied()))
                .is_some_and(|d| is_run(d.as_slice()))
        }
    }

    /// The exact element set of this HBM pattern as a window of rows of `row_len` elements,
    /// if it is one (see [`Window`]).
    pub fn hbm_window(&self, row_len: u64) -> Option<Window> {
        let dims = merged(std::iter::once(self.partitions).chain(self.free.iter().copied()))?;
        let rl = i128::from(i64::try_from(row_len).ok().filter(|&r| r > 0)?);
        let offset = i128::from(self.offset);
        if offset < 0 {
            return None;
        }
        let (r0, c0) = (offset / rl, offset % rl);
        let (rows, cols) = match dims.as_slice() {
            [] => (1, 1),
            [(1, len)] if c0 + len <= rl => (1, *len),
            [(1, len)] if c0 == 0 && len % rl == 0 => (len / rl, rl),
            [(s, rows)] if *s == rl => (*rows, 1),
            [(1, cols), (s, rows)] if *s == rl && c0 + cols <= rl => (*rows, *cols),
            _ => return None,
        };
        let fit = |v: i128| i64::try_from(v).ok();
        Some(Window { row_len: fit(rl)?, r0: fit(r0)?, r1: fit(r0 + rows)?, c0: fit(c0)?, c1: fit(c0 + cols)? })
    }

    /// The region of this HBM pattern over a tensor whose rows hold `row_len` elements (its
    /// last dimension): [`Self::region`] plus the exact window when there is one.
    pub fn hbm_region(&self, row_len: u64) -> Region {
        let window = self.hbm_window(row_len);
        let region = self.region(false);
        // The window's hull is the box; a saturated box (a hostile pattern) keeps no window.
        let wide = |r: i64, c: i64| i128::from(r) * i128::from(row_len) + i128::from(c);
        let hull = window.map(|w| (wide(w.r0, w.c0), wide(w.r1 - 1, w.c1)));
        match hull {
            Some(h) if h == (i128::from(region.lo), i128::from(region.hi)) => Region { window, ..region },
            _ => region,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    /// Every element an HBM pattern touches, by brute force.
    fn hbm_elems(ap: &AccessPattern) -> BTreeSet<i64> {
        let mut out = BTreeSet::new();
        for p in 0..i64::from(ap.partitions.num) {
            ap.for_each_free_offset(|o| {
                out.insert(ap.offset + p * ap.partitions.stride + o);
            });
        }
        out
    }

    /// Every `(partition, element)` an on-chip pattern touches, by brute force.
    fn chip_elems(ap: &AccessPattern) -> BTreeSet<(i64, i64)> {
        let mut out = BTreeSet::new();
        for p in 0..i64::from(ap.partitions.num) {
            let part = i64::from(ap.start_partition) + p * ap.partitions.stride;
            ap.for_each_free_offset(|o| {
                out.insert((part, ap.offset + o));
            });
        }
        out
    }

    fn dim() -> impl Strategy<Value = Dim> {
        (-3i64..13, 0u32..5).prop_map(|(s, n)| Dim::new(s, n))
    }

    /// A random pattern: a window of a `rows x row_len` tensor (either orientation), or
    /// arbitrary strides and counts.
    fn pattern(row_len: u64) -> impl Strategy<Value = AccessPattern> {
        let window =
            (0u64..6, 1u32..4, 0..row_len, 1u32..7, any::<bool>()).prop_map(move |(r0, rows, c0, cols, transposed)| {
                let cols = cols.min(u32::try_from(row_len - c0).unwrap_or(1));
                if transposed {
                    AccessPattern::hbm_cols(row_len, r0, rows, c0, cols)
                } else {
                    AccessPattern::hbm_rows(row_len, r0, rows, c0, cols)
                }
            });
        let general = (0u32..3, dim(), 0i64..30, prop::collection::vec(dim(), 0..3)).prop_map(
            |(start_partition, partitions, offset, free)| AccessPattern {
                start_partition,
                partitions,
                offset,
                free: free.into(),
            },
        );
        prop_oneof![window, general]
    }

    fn pair() -> impl Strategy<Value = (u64, AccessPattern, AccessPattern)> {
        (1u64..7).prop_flat_map(|rl| (Just(rl), pattern(rl), pattern(rl)))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn hbm_overlap_and_cover_match_the_element_sets((row_len, a, b) in pair()) {
            let (ra, rb) = (a.hbm_region(row_len), b.hbm_region(row_len));
            let (sa, sb) = (hbm_elems(&a), hbm_elems(&b));
            for (r, s) in [(&ra, &sa), (&rb, &sb)] {
                if let Some(w) = r.window {
                    let mut cells = BTreeSet::new();
                    for row in w.r0..w.r1 {
                        cells.extend((w.c0..w.c1).map(|c| row * w.row_len + c));
                    }
                    prop_assert_eq!(&cells, s, "window {:?} is not the element set", w);
                }
            }
            let intersect = !sa.is_disjoint(&sb);
            prop_assert!(ra.overlaps(&rb) || !intersect, "missed an overlap");
            prop_assert_eq!(ra.overlaps(&rb), rb.overlaps(&ra));
            if ra.window.is_some() && rb.window.is_some() {
                prop_assert_eq!(ra.overlaps(&rb), intersect);
                prop_assert_eq!(ra.covers(&rb), sb.is_subset(&sa));
            }
            prop_assert!(!ra.covers(&rb) || sb.is_subset(&sa), "false cover");
        }

        #[test]
        fn on_chip_cover_is_real((_, a, b) in pair()) {
            let (ra, rb) = (a.region(true), b.region(true));
            let (sa, sb) = (chip_elems(&a), chip_elems(&b));
            // A partition below 0 does not exist (the verifier rejects it; the box clamps it).
            prop_assume!(sa.iter().chain(&sb).all(|&(p, _)| p >= 0));
            prop_assert!(ra.overlaps(&rb) || sa.is_disjoint(&sb), "missed an overlap");
            prop_assert!(!ra.covers(&rb) || sb.is_subset(&sa), "false cover");
        }
    }

    #[test]
    fn windows_of_a_matrix() {
        // Two output tiles in the same rows, disjoint columns: the boxes meet, the windows not.
        let a = AccessPattern::hbm_rows(1024, 0, 128, 0, 512).hbm_region(1024);
        let b = AccessPattern::hbm_rows(1024, 0, 128, 512, 512).hbm_region(1024);
        assert_eq!(a.window, Some(Window { row_len: 1024, r0: 0, r1: 128, c0: 0, c1: 512 }));
        assert!(!a.overlaps(&b) && !b.overlaps(&a));
        assert!(AccessPattern::hbm_rows(1024, 0, 128, 0, 512).region(false).overlaps(&b));
        // The transposed view of rows 64..192 of the same columns overlaps `a`, and a window
        // covering both contains it.
        let t = AccessPattern::hbm_cols(1024, 64, 128, 0, 512).hbm_region(1024);
        assert_eq!(t.window, Some(Window { row_len: 1024, r0: 64, r1: 192, c0: 0, c1: 512 }));
        assert!(a.overlaps(&t) && !a.covers(&t));
        let all = AccessPattern::hbm_rows(1024, 0, 256, 0, 1024).hbm_region(1024);
        assert!(all.covers(&t) && all.covers(&a) && all.dense);
        // A strided (every other column) pattern is neither a window nor dense: it covers
        // nothing, and nothing but a real superset covers it.
        let strided =
            AccessPattern { free: vec![Dim::new(2, 256)].into(), ..AccessPattern::hbm_rows(1024, 0, 128, 0, 1) };
        let rs = strided.hbm_region(1024);
        assert_eq!((rs.window, rs.dense), (None, false));
        assert!(!rs.covers(&a) && rs.overlaps(&a) && all.covers(&rs) && !b.covers(&rs));
        // Full rows flatten into one run; a run that wraps mid-row is no window.
        let run = AccessPattern { partitions: Dim::new(1, 2048), free: vec![].into(), ..strided };
        assert_eq!(run.hbm_window(1024), Some(Window { row_len: 1024, r0: 0, r1: 2, c0: 0, c1: 1024 }));
        assert_eq!(AccessPattern { offset: 1, ..run }.hbm_window(1024), None);
    }
}
