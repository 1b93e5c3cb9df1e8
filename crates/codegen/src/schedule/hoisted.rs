//! The `hoisted` loop nest: whole K stripes of A^T per m tile and of B per n tile.

use penguin::IrBuilder;

use crate::error::CodegenError;
use crate::gemm::{tile_at, tiles, M_TILE, N_TILE};

use super::rotation::GroupAt;
use super::sampled::Nest;
use super::{Operand, Planner};

impl<B: IrBuilder> Planner<'_, B> {
    pub(super) fn hoisted(&mut self) -> Result<(), CodegenError> {
        let nk = self.chunks.len();
        let lhs = self.buffers("a_stripe", 2, nk, M_TILE, self.cfg.lhs_dtype, Operand::Lhs)?;
        let rhs = self.buffers("b_stripe", 2, nk, N_TILE, self.cfg.rhs_dtype, Operand::Rhs)?;
        let (lw, rw) = (self.lhs_width(), self.rhs_width());
        self.set_step_groups(1);
        let (mt, nt) = (self.cfg.m.div_ceil(M_TILE) as usize, self.cfg.n.div_ceil(N_TILE) as usize);
        let (cfg_m, cfg_n) = (self.cfg.m, self.cfg.n);
        let step = |i: usize| (i / nt, i % nt, tile_at(cfg_m, M_TILE, i / nt), tile_at(cfg_n, N_TILE, i % nt));
        let pe = self.pe_transpose.is_some();
        if pe {
            self.pe_queue.set_order(tiles(self.cfg.m, M_TILE).collect(), 2);
            self.pe_prefetch()?;
        }
        // Levels: m tiles, n tiles. The A stripes alternate by m tile, the B stripes and the
        // groups' rotations by step: both loops repeat every two iterations.
        self.pipelined_nest(&mut Nest {
            dims: &[mt, nt],
            periods: &[2, 2],
            ahead: if pe { 2 } else { 0 },
            step: &step,
            load: &mut |p, i, (mi, ni, m, n)| {
                if ni == 0 && !pe {
                    p.load_stripe(lhs[mi % 2], Operand::Lhs, m)?;
                }
                p.load_stripe(rhs[i % 2], Operand::Rhs, n)
            },
            compute: &mut |p, i, (mi, ni, m, n)| {
                let (l, r) = (lhs[mi % 2], rhs[i % 2]);
                if ni == 0 && pe {
                    p.pe_transpose_next(l, lw, m)?;
                }
                p.tile_group(&|c| l.at(c as i64 * lw), &|c| r.at(c as i64 * rw), m, n, GroupAt { step: i, pos: 0 })
            },
            // Every step's state is its slots, a function of its index, but for the PE
            // transpose queue: each skipped m iteration transposed its tile and loaded one.
            skip: &mut |p, from, to| {
                p.pe_queue.skip(to.div_ceil(nt) - from.div_ceil(nt));
                Ok(())
            },
        })
    }
}
