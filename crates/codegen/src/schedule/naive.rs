//! The `naive` loop nest: every (m, n, k) tile loads both operands.

use penguin::{InstTile, IrBuilder};

use crate::combine::MatMultAccumulation;
use crate::error::CodegenError;
use crate::gemm::{tiles, M_TILE, N_TILE};

use super::rotation::{GroupAt, TileLoad};
use super::{Lhs, Operand, Planner};

impl<B: IrBuilder> Planner<'_, B> {
    pub(super) fn naive(&mut self) -> Result<(), CodegenError> {
        let lhs = self.buffers("lhs_t", 2, 1, M_TILE, self.cfg.lhs_dtype, Operand::Lhs)?;
        let rhs = self.buffers("rhs", 2, 1, N_TILE, self.cfg.rhs_dtype, Operand::Rhs)?;
        let chunks = self.chunks.clone();
        let nk = chunks.len();
        let mut steps = Vec::new();
        for m in tiles(self.cfg.m, M_TILE) {
            for n in tiles(self.cfg.n, N_TILE) {
                steps.extend((0..nk).map(|c| (m, n, c)));
            }
        }
        // Row tiling rotates the partitions each output tile's operands use: a step of the
        // rotations holds half as many output tiles as there are PE positions, so the group
        // slots of two steps take every position.
        let (rows, positions) = (self.pe_rows, self.pe_positions);
        let per_step = (positions as usize / 2).max(1);
        self.set_step_groups(per_step);
        let group_at = |i: usize| GroupAt { step: i / nk / per_step, pos: i / nk % per_step };
        let pos_of = |i: usize| ((i / nk) as u32 % positions) * rows;
        let loaded: std::cell::RefCell<std::collections::VecDeque<(Lhs, InstTile)>> = Default::default();
        let open: std::cell::RefCell<Option<(MatMultAccumulation, InstTile, u32)>> = Default::default();
        // Levels: m tiles, n tiles, K chunks.
        let level = |_, (_, n, c): ((u64, u32), (u64, u32), usize)| match (n.0, c) {
            (0, 0) => 0,
            (_, 0) => 1,
            _ => 2,
        };
        self.pipelined(
            &steps,
            &level,
            &mut |p, i, (m, n, c)| {
                let place = TileLoad { t: 0, tiles: 1, turn: i % 2 };
                let st = p.load_lhs(lhs[i % 2], pos_of(i), chunks[c], m, place)?;
                let mv = p.load_rhs(rhs[i % 2], pos_of(i), chunks[c], n, place)?;
                loaded.borrow_mut().push_back((st, mv));
                Ok(())
            },
            &mut |p, i, (m, n, c)| {
                if c == 0 {
                    *open.borrow_mut() = Some(p.open_group(m.1, n.1, p.k_total, group_at(i))?);
                }
                let (st, mv) =
                    loaded.borrow_mut().pop_front().ok_or_else(|| CodegenError::BadGemm("pipeline underrun".into()))?;
                let mut slot = open.borrow_mut();
                let (acc, psum, pos) = slot.as_mut().ok_or_else(|| CodegenError::BadGemm("no open group".into()))?;
                let (psum, pos) = (psum.clone(), *pos);
                p.matmul(acc, &psum, st, mv, chunks[c], 0, pos)?;
                if c + 1 == nk {
                    drop(slot);
                    open.borrow_mut().take();
                    p.evacuate(psum, m, n, group_at(i))?;
                }
                Ok(())
            },
        )
    }
}
