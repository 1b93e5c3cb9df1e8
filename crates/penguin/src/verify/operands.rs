//! Verifier rules 5-7 and 9: every operand names its tensor with the tensor's memory and
//! dtype, enumerates a sane number of elements, stays inside its tensor and its partitions,
//! and stays inside one PSUM bank.

use crate::ap::MAX_FREE_DIMS;
use crate::entity::{InstId, Memory};
use crate::error::Entity;
use crate::function::{FunctionView, TensorData};
use crate::inst::InstData;
use crate::target::{NUM_PARTITIONS, PSUM_BANK_BYTES};
use crate::tile::InstTile;

use super::{Verifier, MAX_BYTES};

impl<F: FunctionView + ?Sized> Verifier<'_, F> {
    /// Rules 5-7 and 9 for every operand; false if any operand is unusable.
    pub(super) fn check_operands(&mut self, id: InstId, inst: &InstData) -> bool {
        let mut ok = true;
        inst.for_each_operand(|tile, _| ok &= self.check_tile(id, tile));
        ok
    }

    pub(super) fn check_tile(&mut self, id: InstId, tile: &InstTile) -> bool {
        let e = Entity::Inst(id);
        let Some(t) = self.func.tensor(tile.tensor) else {
            self.err(e, format!("operand tensor {} does not exist", tile.tensor));
            return false;
        };
        let mut ok = true;
        if t.memory != tile.memory || t.dtype != tile.dtype {
            self.err(
                e,
                format!(
                    "operand {} is declared {} {} but the tensor is {} {}",
                    tile.tensor, tile.memory, tile.dtype, t.memory, t.dtype
                ),
            );
            ok = false;
        }
        let ap = &tile.ap;
        if ap.free.len() > MAX_FREE_DIMS {
            self.err(
                e,
                format!("operand {} has {} free dimensions (at most {MAX_FREE_DIMS})", tile.tensor, ap.free.len()),
            );
            ok = false;
        }
        if ap.partitions.num == 0 || ap.free.iter().any(|d| d.num == 0) {
            self.err(e, format!("operand {} has an empty dimension", tile.tensor));
            return false;
        }
        if ap.num_elems().saturating_mul(u64::from(tile.dtype.size_bytes())) > MAX_BYTES {
            self.err(
                e,
                format!(
                    "operand {} enumerates too many elements ({:?} {}; at most {MAX_BYTES} bytes)",
                    tile.tensor,
                    ap.shape(),
                    tile.dtype
                ),
            );
            ok = false;
        }
        if t.memory.is_on_chip() {
            ok &= self.check_on_chip_bounds(e, tile, t);
        } else {
            if ap.start_partition != 0 {
                self.err(e, format!("hbm operand {} must have start partition 0", tile.tensor));
                ok = false;
            }
            let [_, _, lo, end] = ap.region_wide(false);
            if lo < 0 || end > i128::from(t.num_elems()) {
                self.err(
                    e,
                    format!(
                        "operand {} reaches elements {lo}..={} outside `{}` ({} elements)",
                        tile.tensor,
                        end - 1,
                        t.name,
                        t.num_elems()
                    ),
                );
                ok = false;
            }
        }
        ok
    }

    pub(super) fn check_on_chip_bounds(&mut self, e: Entity, tile: &InstTile, t: &TensorData) -> bool {
        let mut ok = true;
        let [p0, p1, lo, hi] = tile.ap.region_wide(true);
        if p0 < 0 {
            self.err(e, format!("operand {} uses partitions {p0}..{p1}, below partition 0", tile.tensor));
            ok = false;
        } else if p1 > i128::from(NUM_PARTITIONS) {
            self.err(
                e,
                format!("operand {} uses partitions {p0}..{p1} beyond the {NUM_PARTITIONS} partitions", tile.tensor),
            );
            ok = false;
        } else if p1 > i128::from(t.partitions()) {
            self.err(
                e,
                format!("operand {} uses partitions {p0}..{p1} but `{}` has {}", tile.tensor, t.name, t.partitions()),
            );
            ok = false;
        }
        if lo < 0 || hi > i128::from(t.free_elems()) {
            self.err(
                e,
                format!(
                    "operand {} reaches elements {lo}..{hi} of a partition outside `{}` ({} per partition)",
                    tile.tensor,
                    t.name,
                    t.free_elems()
                ),
            );
            ok = false;
        }
        if ok && t.memory == Memory::Psum {
            // In bounds, so `lo < hi` and both are small; the address is checked per tensor.
            let base = i128::from(t.address.unwrap_or(0));
            let size = i128::from(t.dtype.size_bytes());
            let first = base + lo * size;
            let last = base + hi * size - 1;
            let bank = i128::from(PSUM_BANK_BYTES);
            if first / bank != last / bank {
                self.err(
                    e,
                    format!("psum access {} spans bytes {first}..={last}, crossing a 2 KiB bank boundary", tile.tensor),
                );
                ok = false;
            }
        }
        ok
    }
}
