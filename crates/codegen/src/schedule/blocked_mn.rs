//! The `blocked-mn` loop nest: M and N blocks of whole K stripes, the inner block in snake
//! order.

use penguin::IrBuilder;

use crate::error::CodegenError;
use crate::gemm::{tiles, LoopOrder, M_TILE, N_TILE};

use super::rotation::GroupAt;
use super::sampled::Nest;
use super::{inner_slot_at, snake_at, Operand, Planner, Slot};

/// One step of the nest: its m and n blocks, the A and B slots holding them and whether each
/// must be loaded (it is not still resident).
#[derive(Clone, Copy)]
struct Step<'b> {
    mb: &'b [(u64, u32)],
    nb: &'b [(u64, u32)],
    ls: Slot,
    rs: Slot,
    fresh_a: bool,
    fresh_b: bool,
}

impl<B: IrBuilder> Planner<'_, B> {
    /// Block sizes in tiles: (m tiles, n tiles, k chunks).
    pub(super) fn block_tiles(&self) -> (usize, usize, usize) {
        let b = self.cfg.blocks;
        let chunk = self.chunks.first().map_or(128, |c| u64::from(c.len).max(1));
        (b.m.div_ceil(M_TILE) as usize, b.n.div_ceil(N_TILE) as usize, b.k.div_ceil(chunk) as usize)
    }

    pub(super) fn blocked_mn(&mut self) -> Result<(), CodegenError> {
        let nk = self.chunks.len();
        let (bm, bn, _) = self.block_tiles();
        let mtiles: Vec<_> = tiles(self.cfg.m, M_TILE).collect();
        let ntiles: Vec<_> = tiles(self.cfg.n, N_TILE).collect();
        let (bm, bn) = (bm.min(mtiles.len()), bn.min(ntiles.len()));
        self.set_step_groups(bm * bn);
        let m_outer = self.cfg.order == LoopOrder::MOuter;
        let pe = self.pe_transpose.is_some();
        let mblocks: Vec<&[(u64, u32)]> = mtiles.chunks(bm).collect();
        let nblocks: Vec<&[(u64, u32)]> = ntiles.chunks(bn).collect();
        let (outer, inner) = if m_outer { (mblocks.len(), nblocks.len()) } else { (nblocks.len(), mblocks.len()) };
        let total = outer * inner;
        // The outer operand's block is loaded once per outer step, the inner one when it is
        // not still resident. The inner one has two slots; the outer one has two when they fit
        // (else its reload waits once per outer step for the last use of the previous block).
        // A lone block on either side is loaded once and needs one slot; so does an outer A
        // transposed on the PE just in time (its transposes follow the last reads of the
        // previous block in the PE's own order). When two inner slots do not fit either, the
        // inner block gets one (each reload waits for the previous step's last reads).
        let (lb, rb) = (
            (bm * nk) as u64 * self.lhs_width() as u64 * u64::from(self.cfg.lhs_dtype.size_bytes()),
            (bn * nk) as u64 * self.rhs_width() as u64 * u64::from(self.cfg.rhs_dtype.size_bytes()),
        );
        let mut inner_slots_n = if inner == 1 { 1 } else { 2 };
        let outer_fits_twice = 2 * (lb + rb) + 256 <= self.cg.sbuf_free_bytes();
        // The outer block may have two slots at all (more than one block, not A transposed on
        // the PE just in time).
        let outer_many = outer > 1 && !(m_outer && pe);
        let mut outer_slots = if outer_many && outer_fits_twice { 2 } else { 1 };
        let sides =
            |outer_slots, inner_slots| if m_outer { (outer_slots, inner_slots) } else { (inner_slots, outer_slots) };
        let chunks_per_slot = (bm * nk, bn * nk);
        if self.allow_single && inner_slots_n == 2 && !self.blocks_fit(sides(outer_slots, 2), chunks_per_slot, 0) {
            // Two inner slots do not fit: the inner block gets one (and the outer block two
            // again if that fits), then the outer block one too.
            inner_slots_n = 1;
            outer_slots = if outer_many && self.blocks_fit(sides(2, 1), chunks_per_slot, 0) { 2 } else { 1 };
        }
        let single_outer_for_space = outer_many && outer_slots == 1;
        let single_inner = inner > 1 && inner_slots_n == 1;
        (self.single_buffered.a_block, self.single_buffered.b_block) =
            if m_outer { (single_outer_for_space, single_inner) } else { (single_inner, single_outer_for_space) };
        let (lslots, rslots) = sides(outer_slots, inner_slots_n);
        let lhs = self.buffers("a_block", lslots, bm * nk, M_TILE, self.cfg.lhs_dtype, Operand::Lhs)?;
        let rhs = self.buffers("b_block", rslots, bn * nk, N_TILE, self.cfg.rhs_dtype, Operand::Rhs)?;
        let (lw, rw) = (self.lhs_width(), self.rhs_width());
        let outer_fresh = |i: usize| i.is_multiple_of(inner);
        let at = |i: usize| {
            let (o, ii) = snake_at(i, inner);
            let (inner_s, inner_fresh) = inner_slot_at(i, inner, inner_slots_n);
            if m_outer {
                Step {
                    mb: mblocks[o],
                    nb: nblocks[ii],
                    ls: lhs[o % lhs.len()],
                    rs: rhs[inner_s],
                    fresh_a: outer_fresh(i),
                    fresh_b: inner_fresh,
                }
            } else {
                Step {
                    mb: mblocks[ii],
                    nb: nblocks[o],
                    ls: lhs[inner_s],
                    rs: rhs[o % rhs.len()],
                    fresh_a: inner_fresh,
                    fresh_b: outer_fresh(i),
                }
            }
        };
        if pe {
            self.pe_queue.set_order(
                (0..total).filter(|&i| at(i).fresh_a).flat_map(|i| at(i).mb.iter().copied()).collect(),
                2 * bm,
            );
            self.pe_prefetch()?;
        }
        let chunks = self.chunks.clone();
        let single_outer = outer_slots == 1;
        // A block loaded in program order by its step's compute instead of ahead: A on the PE
        // path, and a single-slot outer or refilled inner block (it may not overwrite the block
        // the previous step still reads).
        let in_compute = |operand: Operand| {
            let lhs_side = operand == Operand::Lhs;
            let outer_side = lhs_side == m_outer;
            (lhs_side && pe) || (outer_side && single_outer) || (!outer_side && single_inner)
        };
        // The loads of step `i` that go ahead of its compute, restricted to K piece `j` of
        // `pieces` (the inner block is loaded piece by piece; an outer block with two slots
        // goes with piece 0).
        let ahead = |p: &mut Self, i: usize, (j, pieces): (usize, usize)| -> Result<(), CodegenError> {
            let Step { mb, nb, ls, rs, fresh_a, fresh_b } = at(i);
            let (c0, c1) = (j * nk / pieces, (j + 1) * nk / pieces);
            let part = &chunks[c0..c1];
            let outer_ahead = !single_outer && j == 0;
            if fresh_a && !in_compute(Operand::Lhs) {
                if !m_outer {
                    p.load_lhs_block(ls.at((c0 * mb.len()) as i64 * lw), part, mb)?;
                } else if outer_ahead {
                    p.load_lhs_block(ls, &chunks, mb)?;
                }
            }
            if fresh_b && !in_compute(Operand::Rhs) {
                if m_outer {
                    p.load_rhs_block(rs.at((c0 * nb.len()) as i64 * rw), part, nb)?;
                } else if outer_ahead {
                    p.load_rhs_block(rs, &chunks, nb)?;
                }
            }
            Ok(())
        };
        // Levels: outer blocks, inner blocks (and the m tiles of a step, a level of their
        // own). The snake's direction and the outer slots follow the outer iteration's
        // parity, the inner slots the inner block's, the groups' rotations the step's: both
        // loops repeat every two iterations.
        // A transposed on the PE goes through two natural buffers and `2 bm` queues in turn,
        // load after load: the outer loop repeats once its iterations have loaded a multiple
        // of `2 bm` m tiles (an edge block of fewer tiles among an outer iteration's inner
        // blocks makes that four iterations or more).
        let outer_period = if pe && outer >= 3 {
            let loads = |o: usize| -> usize {
                (o * inner..(o + 1) * inner).filter(|&i| at(i).fresh_a).map(|i| at(i).mb.len()).sum()
            };
            let (pair, q) = (loads(1) + loads(2), 2 * bm);
            2 * q / gcd(pair, q)
        } else {
            2
        };
        self.pipelined_nest(&mut Nest {
            dims: &[outer, inner],
            periods: &[outer_period, 2],
            ahead: if pe { 2 } else { 0 },
            step: &|i| i,
            // The first step's blocks go ahead of the nest; every later step's are spread over
            // the m tiles of the step before it.
            load: &mut |p, i, _| if i == 0 { ahead(p, 0, (0, 1)) } else { Ok(()) },
            compute: &mut |p, i, _| {
                let Step { mb, nb, ls, rs, fresh_a, fresh_b } = at(i);
                if fresh_a && in_compute(Operand::Lhs) && !pe {
                    p.load_lhs_block(ls, &chunks, mb)?;
                }
                if fresh_b && in_compute(Operand::Rhs) {
                    p.load_rhs_block(rs, &chunks, nb)?;
                }
                // The next step's loads are spread over this step's m tiles, each piece emitted
                // before that tile's matmuls: the DMA queues are in order, so a whole block
                // queued up front would delay the loads this step still needs (natural stripes
                // of A) by the time it takes to move.
                let pieces = mb.len().min(nk).max(1);
                let bml = mb.len() as i64;
                for (mi, &m) in mb.iter().enumerate() {
                    p.mark(2);
                    let l = ls.at(mi as i64 * lw);
                    if fresh_a && pe {
                        p.pe_transpose_next(l, bml * lw, m)?;
                    }
                    if i + 1 < total && mi < pieces {
                        ahead(p, i + 1, (mi, pieces))?;
                    }
                    for (ni, &n) in nb.iter().enumerate() {
                        let r: Vec<Slot> = (0..nk).map(|c| p.rhs_block_slot(rs, c, ni, nb)).collect();
                        let at = GroupAt { step: i, pos: mi * bn + ni };
                        p.tile_group(&|c| l.at(c as i64 * bml * lw), &|c| r[c], m, n, at)?;
                    }
                }
                Ok(())
            },
            // Every step's state is its blocks and slots, functions of its index, but for the
            // PE transpose queue: each skipped step that loaded its A block transposed (and
            // loaded) as many m tiles.
            skip: &mut |p, from, to| {
                if pe {
                    p.pe_queue.skip((from..to).filter(|&i| at(i).fresh_a).map(|i| at(i).mb.len()).sum());
                }
                Ok(())
            },
        })
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a.max(1)
    } else {
        gcd(b, a % b)
    }
}
