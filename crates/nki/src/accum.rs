//! Accumulation groups inferred from a trace (rule 3 of the design): which matmuls into a
//! PSUM region form one START / ACCU / STOP group, and which zero fills are not real memsets.
//!
//! Per PSUM tile, in program order: a matmul with `accumulate=false` starts a group (closing
//! an open one on its region); `true` adds into the open group of exactly its region;
//! `null` adds when a group is open there and starts one otherwise (the first write since the
//! region was last read overwrites); `"add"` (legacy `psum += ...`) adds into the open group,
//! or starts one on a zero fill of the region that nothing read. Any other access to a
//! region closes the groups it overlaps: their last matmul gets STOP. A zero fill whose zeros
//! only ever feed `"add"` matmuls is dropped. Errors name both locations involved.

use std::collections::HashMap;

use crate::error::NkiError;
use crate::trace::Accumulate;

/// A box in a PSUM tile: partitions `[p0, p1)`, elements `[lo, hi)` of each partition.
pub(crate) type Bx = (u64, u64, i64, i64);

fn overlaps(a: Bx, b: Bx) -> bool {
    a.0 < b.1 && b.0 < a.1 && a.2 < b.3 && b.2 < a.3
}

fn covers(a: Bx, b: Bx) -> bool {
    a.0 <= b.0 && b.1 <= a.1 && a.2 <= b.2 && b.3 <= a.3
}

/// A PSUM tile: its tensor and block.
pub(crate) type TileKey = (u32, u64);

/// One accumulation group.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    /// The exact region (the view's access pattern inside the tile).
    region: penguin::AccessPattern,
    bx: Bx,
    /// Its matmuls' record indices, in order.
    pub(crate) members: Vec<usize>,
    open: bool,
}

#[derive(Clone, Debug)]
struct ZeroFill {
    record: usize,
    bx: Bx,
    /// Boxes that matmuls started groups on (their contents no longer are the zeros).
    consumed: Vec<Bx>,
    fed: bool,
    read: bool,
}

/// A group closed by a read: where it was read and its last matmul.
#[derive(Clone, Debug)]
struct ClosedByRead {
    bx: Bx,
    last_matmul: String,
    read_at: String,
}

#[derive(Clone, Debug, Default)]
struct TileState {
    open: Vec<usize>,
    closed: Vec<ClosedByRead>,
    zeros: Vec<usize>,
}

/// The groups of a trace, built record by record.
#[derive(Clone, Debug, Default)]
pub(crate) struct Groups {
    tiles: HashMap<TileKey, TileState>,
    pub(crate) groups: Vec<Group>,
    zeros: Vec<ZeroFill>,
    /// The `file:line` of each record that is a group member.
    locs: HashMap<usize, String>,
    /// Per matmul record: its group.
    pub(crate) group_of: HashMap<usize, usize>,
}

impl Groups {
    /// A matmul (record `rec` at `loc`) into `region` of `tile`.
    pub(crate) fn matmul(
        &mut self,
        rec: usize,
        tile: TileKey,
        region: &penguin::AccessPattern,
        bx: Bx,
        mode: Accumulate,
        loc: &str,
    ) -> Result<(), NkiError> {
        let state = self.tiles.entry(tile).or_default();
        let overlapping: Vec<usize> = state.open.iter().copied().filter(|&g| overlaps(self.groups[g].bx, bx)).collect();
        let same = overlapping.iter().copied().find(|&g| self.groups[g].region == *region);
        let err = |message: String| NkiError::Accumulation { loc: loc.to_string(), message };
        let adds = match mode {
            Accumulate::Overwrite => false,
            Accumulate::Accumulate | Accumulate::Add => true,
            Accumulate::Infer => same.is_some(),
        };
        if adds {
            if let Some(g) = same {
                self.groups[g].members.push(rec);
                self.group_of.insert(rec, g);
                self.locs.insert(rec, loc.to_string());
                return Ok(());
            }
            if let Some(&g) = overlapping.first() {
                let first = self.locs.get(&self.groups[g].members[0]).cloned().unwrap_or_default();
                return Err(err(format!(
                    "this matmul accumulates into a PSUM region other than that of the group open there (started \
                     at {first}); a group adds into exactly one region"
                )));
            }
            if mode == Accumulate::Add {
                let zero = state.zeros.iter().copied().find(|&z| covers(self.zeros[z].bx, bx) && !self.zeros[z].read);
                match zero {
                    Some(z) => {
                        self.zeros[z].fed = true;
                        self.zeros[z].consumed.push(bx);
                    }
                    None => return Err(self.no_group(tile, bx, loc, "`+=` (accumulate \"add\")")),
                }
            } else if mode == Accumulate::Accumulate {
                return Err(self.no_group(tile, bx, loc, "accumulate=True"));
            }
        }
        // Start a group: the overlapping open ones end here.
        let state = self.tiles.entry(tile).or_default();
        state.open.retain(|g| !overlapping.contains(g));
        for g in overlapping {
            self.groups[g].open = false;
        }
        let g = self.groups.len();
        self.groups.push(Group { region: region.clone(), bx, members: vec![rec], open: true });
        state.open.push(g);
        self.group_of.insert(rec, g);
        self.locs.insert(rec, loc.to_string());
        Ok(())
    }

    /// The error for an accumulating matmul with no open group on its region.
    fn no_group(&self, tile: TileKey, bx: Bx, loc: &str, how: &str) -> NkiError {
        let closed = self.tiles.get(&tile).and_then(|s| s.closed.iter().rev().find(|c| overlaps(c.bx, bx)));
        let message = match closed {
            Some(c) => format!(
                "{how} adds into a PSUM region that was read at {} since its last matmul at {}; start a new group \
                 (accumulate=False) or accumulate before reading",
                c.read_at, c.last_matmul
            ),
            None => format!(
                "{how} adds into a PSUM region that no matmul started and no zero fill covers (the first matmul \
                 of a group overwrites: accumulate=False)"
            ),
        };
        NkiError::Accumulation { loc: loc.to_string(), message }
    }

    /// A non-matmul access to `bx` of `tile` (record `rec` at `loc`): a read, a write, or
    /// a write that is a zero fill (a memset of 0 over a dense region).
    pub(crate) fn access(&mut self, rec: usize, tile: TileKey, bx: Bx, read: bool, zero_fill: bool, loc: &str) {
        let state = self.tiles.entry(tile).or_default();
        let mut still = Vec::with_capacity(state.open.len());
        for &g in &state.open {
            let grp = &mut self.groups[g];
            if overlaps(grp.bx, bx) {
                grp.open = false;
                if read {
                    let last = grp.members.last().and_then(|m| self.locs.get(m)).cloned().unwrap_or_default();
                    state.closed.push(ClosedByRead { bx: grp.bx, last_matmul: last, read_at: loc.to_string() });
                }
            } else {
                still.push(g);
            }
        }
        state.open = still;
        for &z in &state.zeros {
            let zf = &mut self.zeros[z];
            if overlaps(zf.bx, bx) {
                // A read of what a group started there reads the group's result, not zeros;
                // a write replaces the zeros it covers.
                if read && !zf.consumed.iter().any(|c| covers(*c, bx)) {
                    zf.read = true;
                }
                if !read {
                    zf.consumed.push(bx);
                }
            }
        }
        if zero_fill {
            let z = self.zeros.len();
            self.zeros.push(ZeroFill { record: rec, bx, consumed: Vec::new(), fed: false, read: false });
            state.zeros.push(z);
        }
    }

    /// The zero fills that are not real memsets: fed `"add"` matmuls, read by nothing else.
    pub(crate) fn dropped(&self) -> Vec<usize> {
        self.zeros.iter().filter(|z| z.fed && !z.read).map(|z| z.record).collect()
    }
}
