//! Verifier rule 12: accumulation groups, in program order per PSUM region.

use crate::ap::Region;
use crate::entity::{InstId, Memory, TensorId};
use crate::error::Entity;
use crate::function::FunctionView;
use crate::inst::{Access, EngineAccumulationType as Acc, InstData};
use crate::tile::InstTile;

use super::Verifier;

/// A group opened by a START and not yet stopped.
pub(super) struct OpenGroup {
    pub(super) tensor: TensorId,
    pub(super) region: Region,
    pub(super) opened_by: InstId,
}

impl<F: FunctionView + ?Sized> Verifier<'_, F> {
    pub(super) fn check_groups(&mut self, id: InstId, inst: &InstData, open: &mut Vec<OpenGroup>) {
        let e = Entity::Inst(id);
        let psum_region = |tile: &InstTile| (tile.memory == Memory::Psum).then(|| tile.ap.region(true));
        if let Some((dst, flags)) = inst.accumulation() {
            let Some(region) = psum_region(dst) else { return };
            let existing = open.iter().position(|g| g.tensor == dst.tensor && g.region.overlaps(&region));
            if flags.is_empty() {
                self.err(e, "matmult has an empty accumulation flag set");
                return;
            }
            if flags.contains(Acc::START | Acc::ACCU) {
                self.err(e, "START and ACCU cannot be set together");
                return;
            }
            if flags.contains(Acc::START) {
                if let Some(g) = existing {
                    self.err(
                        e,
                        format!("START on a PSUM region whose group (opened by {}) is still open", open[g].opened_by),
                    );
                    return;
                }
                if !flags.contains(Acc::STOP) {
                    open.push(OpenGroup { tensor: dst.tensor, region, opened_by: id });
                }
                return;
            }
            match existing {
                None => {
                    let which = if flags.contains(Acc::ACCU) { "ACCU" } else { "STOP" };
                    self.err(e, format!("{which} before START: no open accumulation group on this PSUM region"));
                }
                Some(g) if open[g].region != region => {
                    self.err(
                        e,
                        format!(
                            "accumulates into a different PSUM region than its group (opened by {})",
                            open[g].opened_by
                        ),
                    );
                }
                Some(g) => {
                    if flags.contains(Acc::STOP) {
                        open.swap_remove(g);
                    }
                }
            }
            return;
        }
        inst.for_each_operand(|tile, access| {
            let Some(region) = psum_region(tile) else { return };
            if let Some(g) = open.iter().find(|g| g.tensor == tile.tensor && g.region.overlaps(&region)) {
                let verb = if access == Access::Read { "reads" } else { "writes" };
                self.err(
                    e,
                    format!(
                        "{verb} a PSUM region whose accumulation group (opened by {}) has not been stopped",
                        g.opened_by
                    ),
                );
            }
        });
    }
}
