//! [`Tracked`]: one access the dependency tracker keeps, in 48 bytes instead of the 88 of an
//! `(InstId, Region)` pair.
//!
//! The tracker keeps every read of a tensor until a write covers it, so it keeps every read
//! of a kernel input for the whole program (the naive GEMM schedule reads its inputs twice
//! per matmul). A [`Region`] spends 48 of its 80 bytes on its optional window, and when it
//! has one its box follows from it: an HBM region carries a window only when the window's
//! hull is its box, over the single partition range `[0, 1)`. So an access stores either its
//! box or its window, never both; a region that does not follow that rule (only a hand-built
//! one can) is kept whole, boxed. [`Tracked::region`] gives back exactly the region stored.

use crate::ap::{Region, Window};
use crate::entity::InstId;

/// An instruction's access to a tensor: its id and the region it touches.
#[derive(Clone, Debug)]
pub(super) enum Tracked {
    /// A region without a window.
    Box { id: InstId, p0: u32, p1: u32, lo: i64, hi: i64, dense: bool },
    /// A region that is its window's hull over partitions `[0, 1)`.
    Window { id: InstId, dense: bool, window: Window },
    /// Any other region.
    Other { id: InstId, region: Box<Region> },
}

impl Tracked {
    /// The access of instruction `id` to `region`.
    pub(super) fn new(id: InstId, region: Region) -> Self {
        let Region { p0, p1, lo, hi, dense, window } = region;
        match window {
            None => Tracked::Box { id, p0, p1, lo, hi, dense },
            Some(window) if hull(&window) == Some((p0, p1, lo, hi)) => Tracked::Window { id, dense, window },
            Some(_) => Tracked::Other { id, region: Box::new(region) },
        }
    }

    /// The instruction.
    pub(super) fn id(&self) -> InstId {
        match self {
            Tracked::Box { id, .. } | Tracked::Window { id, .. } | Tracked::Other { id, .. } => *id,
        }
    }

    /// Renumber the instruction: `id + delta` when `id >= from` (see [`super::DepTracker::skip_periods`]).
    pub(super) fn shift(&mut self, from: InstId, delta: u32) {
        let (Tracked::Box { id, .. } | Tracked::Window { id, .. } | Tracked::Other { id, .. }) = self;
        if *id >= from {
            id.0 = id.0.saturating_add(delta);
        }
    }

    /// `self.region().overlaps(other)`, without rebuilding the region when it has no window
    /// (the common case, which the tracker tests against every live access of a tensor).
    #[inline]
    pub(super) fn overlaps(&self, other: &Region) -> bool {
        match self {
            // No window on this side: `Region::overlaps` is the box test.
            Tracked::Box { p0, p1, lo, hi, .. } => *p0 < other.p1 && other.p0 < *p1 && *lo < other.hi && other.lo < *hi,
            _ => self.region().overlaps(other),
        }
    }

    /// `by.covers(&self.region())`, without rebuilding the region when it has no window.
    #[inline]
    pub(super) fn covered_by(&self, by: &Region) -> bool {
        match self {
            Tracked::Box { p0, p1, lo, hi, .. } => {
                let boxes = by.p0 <= *p0 && *p1 <= by.p1 && by.lo <= *lo && *hi <= by.hi;
                // `Region::covers` when the covered region has no window.
                match &by.window {
                    Some(w) => boxes && w.contiguous(),
                    None => boxes && by.dense,
                }
            }
            _ => by.covers(&self.region()),
        }
    }

    /// Whether a read (`self`) is covered by a write to `by` together with `earlier`, a live
    /// write made after the read (two halves of a double-row slot written one after the
    /// other): both dense boxes over the read's partitions whose element ranges join over
    /// the read's. Conservative: anything else is not covered.
    pub(super) fn covered_by_pair(&self, by: &Region, earlier: &Tracked) -> bool {
        let Tracked::Box { id, p0, p1, lo, hi, .. } = *self else { return false };
        let Tracked::Box { id: eid, p0: e0, p1: e1, lo: elo, hi: ehi, dense: true } = *earlier else { return false };
        if eid <= id || by.window.is_some() || !by.dense {
            return false;
        }
        let spans = |q0: u32, q1: u32| q0 <= p0 && p1 <= q1;
        if !spans(by.p0, by.p1) || !spans(e0, e1) {
            return false;
        }
        // The two ranges, in order, must leave no hole over [lo, hi).
        let ((a0, a1), (b0, b1)) =
            if by.lo <= elo { ((by.lo, by.hi), (elo, ehi)) } else { ((elo, ehi), (by.lo, by.hi)) };
        a0 <= lo && b0 <= a1 && a1.max(b1) >= hi
    }

    /// The region, exactly as given to [`Tracked::new`].
    pub(super) fn region(&self) -> Region {
        match self {
            Tracked::Box { p0, p1, lo, hi, dense, .. } => {
                Region { p0: *p0, p1: *p1, lo: *lo, hi: *hi, dense: *dense, window: None }
            }
            Tracked::Window { dense, window, .. } => {
                // `new` checked that the hull exists.
                let (p0, p1, lo, hi) = hull(window).unwrap_or((0, 1, i64::MIN, i64::MAX));
                Region { p0, p1, lo, hi, dense: *dense, window: Some(*window) }
            }
            Tracked::Other { region, .. } => **region,
        }
    }
}

/// The box of an HBM region whose window is `w`: partitions `[0, 1)` and the elements from
/// the window's first to one past its last (as `AccessPattern::hbm_region` attaches a window
/// only to that box); `None` if it leaves the `i64` range.
fn hull(w: &Window) -> Option<(u32, u32, i64, i64)> {
    let at = |r: i64, c: i64| r.checked_mul(w.row_len)?.checked_add(c);
    Some((0, 1, at(w.r0, w.c0)?, at(w.r1.checked_sub(1)?, w.c1)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ap::{AccessPattern, Dim};

    /// Windows, boxes and hand-built regions all come back exactly, in their compact form.
    #[test]
    fn regions_round_trip() {
        let id = InstId(7);
        let window = AccessPattern::hbm_rows(1024, 3, 128, 512, 256).hbm_region(1024);
        let cols = AccessPattern::hbm_cols(1000, 0, 128, 896, 104).hbm_region(1000);
        let strided = AccessPattern { free: vec![Dim::new(2, 8)].into(), ..AccessPattern::hbm_rows(64, 0, 4, 0, 1) };
        let on_chip = AccessPattern::on_chip(32, 64, 100, 512).region(true);
        let w = Window { row_len: 10, r0: 1, r1: 3, c0: 2, c1: 5 };
        let odd = Region { p0: 0, p1: 2, lo: 12, hi: 25, dense: false, window: Some(w) };
        let far = Window { row_len: i64::MAX, r0: 2, r1: 4, c0: 0, c1: 1 };
        let beyond = Region { p0: 0, p1: 1, lo: 0, hi: 1, dense: true, window: Some(far) };
        let cases = [
            (window, "window"),
            (cols, "window"),
            (strided.hbm_region(64), "box"),
            (on_chip, "box"),
            (odd, "other"),
            (beyond, "other"),
        ];
        for (region, kind) in cases {
            let t = Tracked::new(id, region);
            let got = match t {
                Tracked::Box { .. } => "box",
                Tracked::Window { .. } => "window",
                Tracked::Other { .. } => "other",
            };
            assert_eq!((t.id(), t.region(), got), (id, region, kind));
        }
        assert!(window.window.is_some() && cols.window.is_some());
        // The shortcuts agree with the regions' own tests, both ways round.
        for (a, _) in cases {
            for (b, _) in cases {
                let t = Tracked::new(id, a);
                assert_eq!(t.overlaps(&b), a.overlaps(&b), "{a:?} overlaps {b:?}");
                assert_eq!(t.covered_by(&b), b.covers(&a), "{b:?} covers {a:?}");
            }
        }
        assert_eq!(std::mem::size_of::<Tracked>(), 48);
    }
}
