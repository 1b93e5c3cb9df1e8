//! The `naive` loop nest: every (m, n, k) tile loads both operands.

use penguin::{InstTile, IrBuilder};

use crate::combine::MatMultAccumulation;
use crate::error::CodegenError;
use crate::gemm::{tile_at, M_TILE, N_TILE};

use super::rotation::{GroupAt, TileLoad};
use super::sampled::Nest;
use super::{Lhs, Operand, Planner};

impl<B: IrBuilder> Planner<'_, B> {
    pub(super) fn naive(&mut self) -> Result<(), CodegenError> {
        let lhs = self.buffers("lhs_t", 2, 1, M_TILE, self.cfg.lhs_dtype, Operand::Lhs)?;
        let rhs = self.buffers("rhs", 2, 1, N_TILE, self.cfg.rhs_dtype, Operand::Rhs)?;
        let chunks = self.chunks.clone();
        let nk = chunks.len();
        let (mt, nt) = (self.cfg.m.div_ceil(M_TILE) as usize, self.cfg.n.div_ceil(N_TILE) as usize);
        let (cfg_m, cfg_n) = (self.cfg.m, self.cfg.n);
        let step = |i: usize| (tile_at(cfg_m, M_TILE, i / (nt * nk)), tile_at(cfg_n, N_TILE, i / nk % nt), i % nk);
        // Row tiling rotates the partitions each output tile's operands use: a step of the
        // rotations holds half as many output tiles as there are PE positions, so the group
        // slots of two steps take every position.
        let (rows, positions) = (self.pe_rows, self.pe_positions);
        let per_step = (positions as usize / 2).max(1);
        self.set_step_groups(per_step);
        let group_at = |i: usize| GroupAt { step: i / nk / per_step, pos: i / nk % per_step };
        let pos_of = |i: usize| ((i / nk) as u32 % positions) * rows;
        // Levels: m tiles, n tiles, K chunks. Every rotation is a function of the step (its
        // parity: buffer slots) or of the output tile (modulo the PE positions and two steps
        // of groups: partitions, PSUM banks, evacuation engines), so a level repeats after
        // the fewest iterations that are an even number of steps and a whole number of
        // those tile periods (the queue hints are affine in the K chunk: loop parameters).
        // A transposed on the PE puts chunk `c`'s transpose in PSUM slot `c mod 4`: the K
        // loop repeats after four chunks at the least.
        let dims = [mt, nt, nk];
        let tile_period = (positions as usize).max(2);
        let chunk_period = if self.pe_transpose.is_some() { 4 } else { 1 };
        let periods: Vec<usize> = (0..dims.len())
            .map(|l| {
                let steps: usize = dims[l + 1..].iter().product();
                let tiles = if l < 2 { steps / nk.max(1) } else { 0 };
                let repeats = |p: &usize| {
                    (p * steps).is_multiple_of(2)
                        && (p * tiles).is_multiple_of(tile_period)
                        && (l < 2 || p.is_multiple_of(chunk_period))
                };
                (1..=4 * tile_period).find(repeats).unwrap_or(4 * tile_period)
            })
            .collect();
        let loaded: std::cell::RefCell<std::collections::VecDeque<(Lhs, InstTile)>> = Default::default();
        let open: std::cell::RefCell<Option<(MatMultAccumulation, InstTile, u32)>> = Default::default();
        self.pipelined_nest(&mut Nest {
            dims: &dims,
            periods: &periods,
            ahead: 0,
            step: &step,
            load: &mut |p, i, (m, n, c)| {
                let place = TileLoad { t: 0, tiles: 1, turn: i % 2 };
                let st = p.load_lhs(lhs[i % 2], pos_of(i), chunks[c], m, place)?;
                let mv = p.load_rhs(rhs[i % 2], pos_of(i), chunks[c], n, place)?;
                loaded.borrow_mut().push_back((st, mv));
                Ok(())
            },
            compute: &mut |p, i, (m, n, c)| {
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
            // Skipped K chunks of the open group (a gap in the K loop) were merged into it; a
            // gap in the m or n loop starts between groups.
            skip: &mut |_, from, to| {
                if let Some((acc, _, _)) = open.borrow_mut().as_mut() {
                    for c in from % nk..to % nk {
                        let (k0, k1) = (chunks[c].k0 as u32, chunks[c + 1].k0 as u32);
                        acc.slices.push((k0, k1));
                        acc.k_offset = k1;
                    }
                }
                Ok(())
            },
        })
    }
}
