//! The `hoisted` loop nest: whole K stripes of A^T per m tile and of B per n tile.

use penguin::IrBuilder;

use crate::error::CodegenError;
use crate::gemm::{tiles, M_TILE, N_TILE};

use super::rotation::GroupAt;
use super::{Operand, Planner};

impl<B: IrBuilder> Planner<'_, B> {
    pub(super) fn hoisted(&mut self) -> Result<(), CodegenError> {
        let nk = self.chunks.len();
        let lhs = self.buffers("a_stripe", 2, nk, M_TILE, self.cfg.lhs_dtype, Operand::Lhs)?;
        let rhs = self.buffers("b_stripe", 2, nk, N_TILE, self.cfg.rhs_dtype, Operand::Rhs)?;
        let (lw, rw) = (self.lhs_width(), self.rhs_width());
        self.set_step_groups(1);
        let mut steps = Vec::new();
        for (mi, m) in tiles(self.cfg.m, M_TILE).enumerate() {
            for (ni, n) in tiles(self.cfg.n, N_TILE).enumerate() {
                steps.push((mi, ni, m, n));
            }
        }
        let pe = self.pe_transpose.is_some();
        if pe {
            self.pe_queue.set_order(tiles(self.cfg.m, M_TILE).collect(), 2);
            self.pe_prefetch()?;
        }
        // Levels: m tiles, n tiles.
        let level = |_, (_, ni, _, _): (usize, usize, (u64, u32), (u64, u32))| u32::from(ni > 0);
        self.pipelined(
            &steps,
            &level,
            &mut |p, i, (mi, ni, m, n)| {
                if ni == 0 && !pe {
                    p.load_stripe(lhs[mi % 2], Operand::Lhs, m)?;
                }
                p.load_stripe(rhs[i % 2], Operand::Rhs, n)
            },
            &mut |p, i, (mi, ni, m, n)| {
                let (l, r) = (lhs[mi % 2], rhs[i % 2]);
                if ni == 0 && pe {
                    p.pe_transpose_next(l, lw, m)?;
                }
                p.tile_group(&|c| l.at(c as i64 * lw), &|c| r.at(c as i64 * rw), m, n, GroupAt { step: i, pos: 0 })
            },
        )
    }
}
