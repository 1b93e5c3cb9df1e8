//! Dependency edges between instructions whose tiles overlap (RAW, WAR, WAW).
//!
//! The tracker keeps, per tensor, the writes and reads not yet superseded by a later write
//! that covers them, so the cost of a new instruction is proportional to the live accesses
//! of the tensors it touches rather than to the length of the program.
//!
//! Accesses are compared as [`Region`]s. An HBM operand's region knows its exact row-major
//! 2-d window over rows of the tensor's last dimension when it has one, so two output tiles
//! in the same rows but disjoint columns get no edge; anything else (on chip, or a pattern
//! that is not a window) is compared by its box, which never misses a real overlap.

use crate::ap::{AccessPattern, Region};
use crate::entity::{InstId, TensorId};
use crate::function::{Function, FunctionView, TensorData};
use crate::inst::{Access, Dep, DepKind, InstData};

mod tracked;

use tracked::Tracked;

/// The live accesses of one tensor, each stored compactly ([`Tracked`]).
#[derive(Clone, Debug, Default)]
struct TensorAccesses {
    writes: Vec<Tracked>,
    reads: Vec<Tracked>,
}

/// Computes the incoming edges of each new instruction from the accesses before it.
#[derive(Clone, Debug, Default)]
pub struct DepTracker {
    per_tensor: Vec<TensorAccesses>,
    /// The operands of the instruction being processed (kept to reuse its allocation).
    operands: Vec<(TensorId, Region, Access)>,
    /// The edges of the instruction being processed (kept to reuse its allocation).
    deps: Vec<Dep>,
}

impl DepTracker {
    /// A tracker with no accesses.
    pub fn new() -> Self {
        DepTracker::default()
    }

    /// The incoming edges of `inst` (numbered `id`), then record its accesses.
    ///
    /// `tensor` resolves an operand's tensor; operands whose tensor is unknown are skipped
    /// (the verifier reports them).
    pub fn process<'a>(
        &mut self,
        id: InstId,
        inst: &InstData,
        tensor: impl Fn(TensorId) -> Option<&'a TensorData>,
    ) -> Vec<Dep> {
        let mut operands = std::mem::take(&mut self.operands);
        operands.clear();
        inst.for_each_operand(|tile, access| {
            if let Some(t) = tensor(tile.tensor) {
                operands.push((tile.tensor, region_of(&tile.ap, t), access));
            }
        });
        let out = self.process_accesses(id, &operands);
        self.operands = operands;
        out
    }

    /// The incoming edges of an instruction (numbered `id`) that makes `accesses`, then
    /// record them: [`Self::process`] with the regions given instead of computed from the
    /// operands. The key of an access is any dense id: [`Self::process`] keys by tensor, and
    /// a producer whose tensors share storage may key by the storage, with the regions in a
    /// unit common to the tensors in it (bytes), to get the edges between accesses to
    /// different tensors that overlap in memory.
    pub fn process_accesses(&mut self, id: InstId, accesses: &[(TensorId, Region, Access)]) -> Vec<Dep> {
        // Collected in a reused buffer and returned at their exact size (one allocation, none
        // without edges): the function keeps every instruction's list.
        let mut deps = std::mem::take(&mut self.deps);
        deps.clear();
        let mut add = |from: InstId, kind: DepKind| {
            if from != id && !deps.iter().any(|d| d.from == from) {
                deps.push(Dep { from, kind });
            }
        };
        for &(t, region, access) in accesses {
            let Some(acc) = self.per_tensor.get(t.index()) else { continue };
            let reads = matches!(access, Access::Read | Access::ReadWrite);
            let writes = matches!(access, Access::Write | Access::ReadWrite);
            for w in &acc.writes {
                if w.overlaps(&region) {
                    add(w.id(), if reads { DepKind::Raw } else { DepKind::Waw });
                }
            }
            if writes {
                for rd in &acc.reads {
                    if rd.overlaps(&region) {
                        add(rd.id(), DepKind::War);
                    }
                }
            }
        }
        for &(t, region, access) in accesses {
            if self.per_tensor.len() <= t.index() {
                self.per_tensor.resize_with(t.index() + 1, TensorAccesses::default);
            }
            let acc = &mut self.per_tensor[t.index()];
            match access {
                Access::Read => acc.reads.push(Tracked::new(id, region)),
                Access::Write | Access::ReadWrite => {
                    let TensorAccesses { writes, reads } = acc;
                    writes.retain(|w| !w.covered_by(&region));
                    // A read covered by this write and a live write after it is ordered
                    // before every later write through those two (their WAR edges to it
                    // and the later write's WAW edges to them), so it is retired too.
                    // (Only a read the write touches can be completed by it.)
                    let retired = |r: &Tracked| {
                        r.covered_by(&region)
                            || r.overlaps(&region) && writes.iter().any(|w| r.covered_by_pair(&region, w))
                    };
                    reads.retain(|r| !retired(r));
                    writes.push(Tracked::new(id, region));
                }
            }
        }
        let out = deps.to_vec();
        self.deps = deps;
        out
    }
}

impl DepTracker {
    /// What a producer that skips `periods` repetitions of a loop's last period does to the
    /// live accesses: the period is the `len` instructions before `now` (the number of the
    /// next one), the loop's run started at `run_start`. A read that each period repeats on
    /// the same region while nothing retires it (in the tensors `repeats` says: on-chip ones,
    /// whose reads a later write waits for) stays live in every skipped period too: every read
    /// of its region in the run keeps its number and one is added per skipped period. Every other access
    /// of the run is renumbered past the skipped instructions: it stands for its repetition in
    /// the last skipped period.
    pub fn skip_periods(
        &mut self,
        (run_start, now): (InstId, InstId),
        len: u32,
        periods: u32,
        repeats: impl Fn(TensorId) -> bool,
    ) {
        let delta = len.saturating_mul(periods);
        let last = now.0.saturating_sub(len);
        for (t, acc) in self.per_tensor.iter_mut().enumerate() {
            let mut keep = std::collections::HashSet::new();
            let mut added = Vec::new();
            if len > 0 && repeats(TensorId(t as u32)) {
                let mut by_region: std::collections::HashMap<Region, Vec<u32>> = std::collections::HashMap::new();
                for r in acc.reads.iter().filter(|r| r.id() >= run_start) {
                    by_region.entry(r.region()).or_default().push(r.id().0);
                }
                for (region, ids) in &by_region {
                    let mut repeating = false;
                    for &x in ids.iter().filter(|&&x| x >= last) {
                        if !ids.contains(&(x.wrapping_sub(len))) {
                            continue;
                        }
                        repeating = true;
                        added.extend((1..=periods).map(|k| Tracked::new(InstId(x.saturating_add(k * len)), *region)));
                    }
                    // Nothing retires the region's reads (two periods' reads of it are live),
                    // so every read of it in the run is live in the whole program too, under
                    // its own number (those of the run's first iterations, which need not
                    // fall a whole number of periods before the last ones, included).
                    if repeating {
                        keep.extend(ids.iter().copied());
                    }
                }
            }
            for x in acc.writes.iter_mut() {
                x.shift(run_start, delta);
            }
            for x in acc.reads.iter_mut() {
                if !keep.contains(&x.id().0) {
                    x.shift(run_start, delta);
                }
            }
            if !added.is_empty() {
                // In program order, as the reads of the whole program are.
                acc.reads.extend(added);
                acc.reads.sort_by_key(Tracked::id);
            }
        }
    }
}

/// The region `ap` touches in tensor `t`: HBM patterns as windows of rows of its last
/// dimension (a scalar has rows of one element).
fn region_of(ap: &AccessPattern, t: &TensorData) -> Region {
    if t.memory.is_on_chip() {
        ap.region(true)
    } else {
        ap.hbm_region(t.shape.last().copied().unwrap_or(1))
    }
}

/// The incoming edges of every instruction, computed by [`DepTracker`] in program order.
pub fn compute_deps(func: &Function) -> Vec<Vec<Dep>> {
    let mut deps = vec![Vec::new(); func.insts.len()];
    let mut seen = vec![false; func.insts.len()];
    let mut tracker = DepTracker::new();
    for &id in &func.layout {
        let (Some(inst), Some(done)) = (func.insts.get(id.index()), seen.get_mut(id.index())) else { continue };
        if std::mem::replace(done, true) {
            continue;
        }
        deps[id.index()] = tracker.process(id, inst, |t| func.tensor(t));
    }
    deps
}

#[cfg(test)]
mod tests {
    use crate::inst::{Dep, DepKind};
    use crate::text::parse::parse;
    use crate::InstId;

    fn edges(deps: &[Dep]) -> Vec<(u32, DepKind)> {
        let mut out: Vec<(u32, DepKind)> = deps.iter().map(|d| (d.from.0, d.kind)).collect();
        out.sort_by_key(|e| e.0);
        out
    }

    /// After skipping periods, the edges point at the renumbered instructions; those before
    /// the loop's run stay.
    #[test]
    fn shifted_accesses_are_renumbered() {
        use super::DepTracker;
        use crate::ap::AccessPattern;
        use crate::inst::Access;
        let region = |lo: i64| AccessPattern::on_chip(0, 128, lo, 64).region(true);
        let mut t = DepTracker::new();
        assert!(t.process_accesses(InstId(0), &[(crate::TensorId(0), region(0), Access::Write)]).is_empty());
        assert!(t.process_accesses(InstId(5), &[(crate::TensorId(0), region(64), Access::Write)]).is_empty());
        t.skip_periods((InstId(3), InstId(6)), 50, 2, |_| true);
        let got = t.process_accesses(
            InstId(200),
            &[(crate::TensorId(0), AccessPattern::on_chip(0, 128, 0, 128).region(true), Access::Read)],
        );
        assert_eq!(edges(&got), vec![(0, DepKind::Raw), (105, DepKind::Raw)]);
    }

    /// Skipping periods of a loop: a read each period repeats on the same region, which
    /// nothing retires, is live in every skipped period too; the rest is renumbered past them.
    #[test]
    fn skipped_periods_keep_their_repeating_reads() {
        use super::DepTracker;
        use crate::ap::AccessPattern;
        use crate::inst::Access;
        use DepKind::{War, Waw};
        let (stripe, slot) = (crate::TensorId(0), crate::TensorId(1));
        let at = |lo: i64| AccessPattern::on_chip(0, 128, lo, 64).region(true);
        let mut t = DepTracker::new();
        // Periods of 10 from 0: each reads the stripe and rewrites a slot (which retires
        // nothing of the stripe).
        for p in 0..3u32 {
            t.process_accesses(InstId(10 * p), &[(stripe, at(0), Access::Read)]);
            t.process_accesses(InstId(10 * p + 5), &[(slot, at(0), Access::Write)]);
        }
        // Skip two periods after the third (the next instruction would be 30).
        t.skip_periods((InstId(0), InstId(30)), 10, 2, |_| true);
        // The stripe's refill waits for every read, the skipped ones included; the slot's
        // next write for its last write, renumbered into the last skipped period.
        let refill = edges(&t.process_accesses(InstId(50), &[(stripe, at(0), Access::Write)]));
        assert_eq!(refill, vec![(0, War), (10, War), (20, War), (30, War), (40, War)]);
        assert_eq!(edges(&t.process_accesses(InstId(51), &[(slot, at(0), Access::Write)])), vec![(45, Waw)]);
        // A read of the run's first iteration that is not a whole number of periods before
        // the last ones (the first iteration was longer) keeps its number too.
        let mut t = DepTracker::new();
        t.process_accesses(InstId(3), &[(stripe, at(0), Access::Read)]);
        for p in 1..4u32 {
            t.process_accesses(InstId(10 * p), &[(stripe, at(0), Access::Read)]);
        }
        t.skip_periods((InstId(0), InstId(40)), 10, 2, |_| true);
        let refill = edges(&t.process_accesses(InstId(60), &[(stripe, at(0), Access::Write)]));
        assert_eq!(refill, vec![(3, War), (10, War), (20, War), (30, War), (40, War), (50, War)]);
        // Tensors `repeats` leaves out are only renumbered.
        let mut t = DepTracker::new();
        for p in 0..3u32 {
            t.process_accesses(InstId(10 * p), &[(stripe, at(0), Access::Read)]);
        }
        t.skip_periods((InstId(0), InstId(30)), 10, 2, |_| false);
        let refill = edges(&t.process_accesses(InstId(50), &[(stripe, at(0), Access::Write)]));
        assert_eq!(refill, vec![(20, War), (30, War), (40, War)]);
    }

    /// A read retired by two writes that together cover it (the halves of a double-row
    /// slot) gets no more WAR edges: the next writes are ordered after it through them. A
    /// read only partly covered, or covered by a pair of which one came before it, stays.
    #[test]
    fn a_read_covered_by_two_later_writes_is_retired() {
        use super::DepTracker;
        use crate::ap::AccessPattern;
        use crate::inst::Access;
        use DepKind::{Raw, War, Waw};
        let at = |lo: i64, n: u32| AccessPattern::on_chip(0, 128, lo, n).region(true);
        let t0 = crate::TensorId(0);
        let mut t = DepTracker::new();
        let step = |t: &mut DepTracker, id: u32, lo: i64, n: u32, access: Access| {
            edges(&t.process_accesses(InstId(id), &[(t0, at(lo, n), access)]))
        };
        // A read of [0, 256), then the two halves: each waits for the read.
        assert!(step(&mut t, 0, 0, 256, Access::Read).is_empty());
        assert_eq!(step(&mut t, 1, 0, 128, Access::Write), vec![(0, War)]);
        assert_eq!(step(&mut t, 2, 128, 128, Access::Write), vec![(0, War)]);
        // The read is retired: the next half write waits for the first half only.
        assert_eq!(step(&mut t, 3, 0, 128, Access::Write), vec![(1, Waw)]);
        // A read of [0, 300) is not covered by halves of [0, 256): it stays.
        assert_eq!(step(&mut t, 4, 0, 300, Access::Read), vec![(2, Raw), (3, Raw)]);
        assert_eq!(step(&mut t, 5, 128, 128, Access::Write), vec![(2, Waw), (4, War)]);
        assert_eq!(step(&mut t, 6, 0, 128, Access::Write), vec![(3, Waw), (4, War)]);
        // Writes before a read do not retire it with a write after it.
        assert_eq!(step(&mut t, 7, 0, 256, Access::Read), vec![(5, Raw), (6, Raw)]);
        assert_eq!(step(&mut t, 8, 128, 128, Access::Write), vec![(4, War), (5, Waw), (7, War)]);
        assert_eq!(step(&mut t, 9, 0, 128, Access::Write), vec![(4, War), (6, Waw), (7, War)]);
        assert_eq!(step(&mut t, 10, 0, 128, Access::Write), vec![(4, War), (9, Waw)]);
    }

    #[test]
    fn hbm_windows_get_exactly_their_edges() {
        // c is 4 x 8; s is only read, r only written (besides i4's overwrite). i0 and i1
        // store the two 2 x 4 halves of rows 0-1: disjoint windows, no edge (their flat boxes
        // [0, 12) and [4, 16) meet). i2 reads rows 1-2, columns 2-5 transposed (partition =
        // column): RAW from both. i3 writes all of c (WAW from both stores, WAR from the
        // read) and covers them. i4 reads the last element: RAW from i3 only (and WAW on r
        // from i2). i5 writes column 7 (every row, stride 8): WAW from i3, WAR from i4. i6
        // reads rows 0-1, columns 0-3: RAW from i3 only, not from i5's column.
        let text = "kernel k\ninputs t1\noutputs t0\n\
            tensor t0 \"c\" hbm fp32 [4, 8]\n\
            tensor t1 \"s\" sbuf fp32 [4, 8] @0\n\
            tensor t2 \"r\" sbuf fp32 [4, 8] @64\n\
            i0 = dma_copy dst=t0{p0[8, 2] +0 [1, 4]} src=t1{p0[1, 2] +0 [1, 4]}\n\
            i1 = dma_copy dst=t0{p0[8, 2] +4 [1, 4]} src=t1{p0[1, 2] +4 [1, 4]}\n\
            i2 = dma_copy dst=t2{p0[1, 4] +0 [1, 2]} src=t0{p0[1, 4] +10 [8, 2]}\n\
            i3 = dma_copy dst=t0{p0[8, 4] +0 [1, 8]} src=t1{p0[1, 4] +0 [1, 8]}\n\
            i4 = dma_copy dst=t2{p0[1, 1] +0 [1, 1]} src=t0{p0[1, 1] +31 [1, 1]}\n\
            i5 = dma_copy dst=t0{p0[8, 4] +7 [1, 1]} src=t1{p0[1, 4] +7 [1, 1]}\n\
            i6 = dma_copy dst=t2{p0[1, 2] +8 [1, 4]} src=t0{p0[8, 2] +0 [1, 4]}\n";
        let f = parse(text).unwrap_or_default();
        let got: Vec<Vec<(u32, DepKind)>> = f.deps.iter().map(|d| edges(d)).collect();
        use DepKind::{Raw, War, Waw};
        let want: Vec<Vec<(u32, DepKind)>> = vec![
            vec![],
            vec![],
            vec![(0, Raw), (1, Raw)],
            vec![(0, Waw), (1, Waw), (2, War)],
            vec![(2, Waw), (3, Raw)],
            vec![(3, Waw), (4, War)],
            vec![(3, Raw)],
        ];
        assert_eq!(f.insts.len(), 7);
        assert_eq!(got, want);
        assert!(f.layout.iter().zip(0..).all(|(id, i)| *id == InstId(i)));
    }
}
