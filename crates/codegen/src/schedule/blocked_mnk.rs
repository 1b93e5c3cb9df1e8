//! The `blocked-mnk` loop nest: blocks in M, N and K with an fp32 result block in SBUF.

use penguin::{
    AccessPattern, AluOp, ComputeEngine, DType, InstData, IrBuilder, Memory, NDTile, PerfMode, TensorId,
    TensorTensorData,
};

use crate::error::CodegenError;
use crate::gemm::{tiles, GemmConfig, KChunk, LoopOrder, M_TILE, N_TILE};

use super::rotation::{GroupAt, Transfer};
use super::sampled::Nest;
use super::{hbm, on_chip, Operand, Planner, Slot};

impl<B: IrBuilder> Planner<'_, B> {
    pub(super) fn blocked_mnk(&mut self) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let (bm, bn, bk) = self.block_tiles();
        let mtiles: Vec<_> = tiles(cfg.m, M_TILE).collect();
        let ntiles: Vec<_> = tiles(cfg.n, N_TILE).collect();
        let (bm, bn, bk) = (bm.min(mtiles.len()), bn.min(ntiles.len()), bk.min(self.chunks.len()).max(1));
        self.set_step_groups(bm * bn);
        let res_nd = NDTile { partitions: 128, free: vec![(bm * bn) as u32 * N_TILE as u32], dtype: DType::Fp32 };
        // Both operand blocks are refilled every step, two slots each; when they do not fit
        // beside one result block, the inner loop's block (B in m-outer order) gets one slot,
        // then the other one too. A single-slot block is loaded by its step's compute, after
        // the previous step's last reads.
        let mut slots = (2, 2);
        let chunks_per_slot = (bm * bk, bn * bk);
        let res_bytes = res_nd.bytes_per_partition();
        if self.allow_single && !self.blocks_fit(slots, chunks_per_slot, res_bytes) {
            slots = if cfg.order == LoopOrder::MOuter { (2, 1) } else { (1, 2) };
            if !self.blocks_fit(slots, chunks_per_slot, res_bytes) {
                slots = (1, 1);
            }
        }
        self.single_buffered.a_block = slots.0 == 1;
        self.single_buffered.b_block = slots.1 == 1;
        let lhs = self.buffers("a_block", slots.0, bm * bk, M_TILE, cfg.lhs_dtype, Operand::Lhs)?;
        let rhs = self.buffers("b_block", slots.1, bn * bk, N_TILE, cfg.rhs_dtype, Operand::Rhs)?;
        // Two result blocks when they fit, so that the next pair's first partials do not wait
        // for the stores of the last; one otherwise (each partial then waits only for the
        // store of its own tile).
        let res_slots = if 2 * res_nd.bytes_per_partition() <= self.cg.sbuf_free_bytes() { 2 } else { 1 };
        let many_pairs = mtiles.len().div_ceil(bm) * ntiles.len().div_ceil(bn) > 1;
        self.single_buffered.result = res_slots == 1 && many_pairs;
        let res: Vec<TensorId> =
            (0..res_slots).map(|i| self.cg.alloc_sbuf(&format!("result{i}"), &res_nd)).collect::<Result<_, _>>()?;
        let lw = self.lhs_width();
        let kblocks: Vec<Vec<KChunk>> = self.chunks.chunks(bk).map(<[KChunk]>::to_vec).collect();
        let mblocks: Vec<&[(u64, u32)]> = mtiles.chunks(bm).collect();
        let nblocks: Vec<&[(u64, u32)]> = ntiles.chunks(bn).collect();
        let (outer_blocks, inner_blocks) = if cfg.order == LoopOrder::MOuter {
            (mblocks.len(), nblocks.len())
        } else {
            (nblocks.len(), mblocks.len())
        };
        let nkb = kblocks.len();
        // Step `i`: its (M block, N block) pair, the pair's index and the K block.
        let m_outer = cfg.order == LoopOrder::MOuter;
        let step = |i: usize| {
            let (bi, kbi) = (i / nkb, i % nkb);
            let (o, ii) = (bi / inner_blocks, bi % inner_blocks);
            (if m_outer { (o, ii) } else { (ii, o) }, bi, kbi)
        };
        let pe = self.pe_transpose.is_some();
        // Output tile `i` (m-major in the pair's blocks) of a result block: fp32, 512 apart.
        let result_tile = |result: TensorId, i: usize, msz: u32, nsz: u32| {
            on_chip(result, Memory::Sbuf, DType::Fp32, 0, msz, i as i64 * N_TILE as i64, nsz)
        };
        let nat_width = i64::from(mnk_natural_width(cfg));
        // Levels: outer blocks (M blocks in m-outer order), inner blocks, K blocks. The operand
        // slots and the groups' rotations follow the step's parity, the result block the
        // pair's: every level repeats after two iterations.
        // A transposed on the PE puts chunk `c`'s transposes in PSUM slot `c mod 4`: the K
        // loop repeats after four K blocks.
        let k_period = if pe { 4 } else { 2 };
        self.pipelined_nest(&mut Nest {
            dims: &[outer_blocks, inner_blocks, nkb],
            periods: &[2, 2, k_period],
            ahead: 0,
            step: &step,
            load: &mut |p, i, ((a, b), _, kbi)| {
                let (mb, nb) = (mblocks[a], nblocks[b]);
                let kb = &kblocks[kbi];
                if pe {
                    p.load_lhs_natural(i % 2, nat_width, kb, mb)?;
                } else if lhs.len() == 2 {
                    p.load_lhs_block(lhs[i % 2], kb, mb)?;
                }
                if rhs.len() == 2 {
                    p.load_rhs_block(rhs[i % 2], kb, nb)?;
                }
                Ok(())
            },
            compute: &mut |p, i, ((a, b), bi, kbi)| {
                let (mb, nb) = (mblocks[a], nblocks[b]);
                let kb = &kblocks[kbi];
                let result = res[bi % res.len()];
                let s = i % 2;
                let (ls, rs) = (lhs[i % lhs.len()], rhs[i % rhs.len()]);
                if lhs.len() == 1 && !pe {
                    p.load_lhs_block(ls, kb, mb)?;
                }
                if rhs.len() == 1 {
                    p.load_rhs_block(rs, kb, nb)?;
                }
                let k_base = kb[0].k0;
                let k_len: u64 = kb.iter().map(|c| u64::from(c.len)).sum::<u64>().min(p.k_total - k_base);
                for (t, &m) in mb.iter().enumerate() {
                    if let Some((nat, _)) = p.pe_transpose {
                        // Transposed just before its first matmul, after the PE's reads of the
                        // previous contents of the slot.
                        let src = Slot { tensor: nat[s], offset: t as i64 * nat_width, tags: None, row_stride: 0 };
                        let dst = ls.at(t as i64 * lw);
                        p.transpose_stripe(src, k_base, dst, mb.len() as i64 * lw, m.1, kb)?;
                    }
                    for (j, &n) in nb.iter().enumerate() {
                        let at = GroupAt { step: i, pos: t * bn + j };
                        let (mut acc, psum, pos) = p.open_group(m.1, n.1, k_len, at)?;
                        for (ci, &chunk) in kb.iter().enumerate() {
                            let l = ls.at(((ci * mb.len() + t) as i64) * lw);
                            let r = p.rhs_block_slot(rs, ci, j, nb);
                            let (st, mv) = p.loaded_views(l, r, chunk, m.1, n.1)?;
                            p.matmul(&mut acc, &psum, st, mv, chunk, k_base, pos)?;
                        }
                        let part = result_tile(result, t * bn + j, m.1, n.1);
                        if kbi == 0 {
                            // ScalarE copies the first K block's partials out; VectorE adds
                            // every later one (the only engine that reads PSUM and two
                            // inputs), so each engine's instructions follow one part of the
                            // nest.
                            p.copy(ComputeEngine::Act, part, psum)?;
                        } else {
                            // VectorE adds the partials: the sum reads PSUM, which GpSimd
                            // cannot, and ScalarE reads one input tensor per instruction.
                            p.cg.process_new_neuroninst(InstData::TensorTensor(TensorTensorData {
                                engine: ComputeEngine::Dve,
                                op: AluOp::Add,
                                dst: part.clone(),
                                lhs: part,
                                rhs: psum,
                            }))?;
                        }
                    }
                }
                if kbi + 1 < nkb {
                    return Ok(());
                }
                for (t, &m) in mb.iter().enumerate() {
                    for (j, &n) in nb.iter().enumerate() {
                        let part = result_tile(result, t * bn + j, m.1, n.1);
                        // The DMA casts to the output dtype on the way: no engine copy stands
                        // between the result block and HBM.
                        let dst = hbm(p.c, cfg.out_dtype, AccessPattern::hbm_rows(cfg.n, m.0, m.1, n.0, n.1));
                        p.dma(dst, part, Transfer::Store((t * bn + j) as u64))?;
                    }
                }
                Ok(())
            },
            // Every step's state is its slots and blocks, functions of its index.
            skip: &mut |_, _, _| Ok(()),
        })
    }
}

/// Elements per partition of one m tile's natural K block in `blocked-mnk` (A transposed on
/// the PE).
pub(super) fn mnk_natural_width(cfg: &GemmConfig) -> u32 {
    let chunk = if cfg.perf_mode == PerfMode::None { 128 } else { 256 };
    cfg.blocks.k.div_ceil(chunk).max(1).saturating_mul(chunk).min(cfg.k) as u32
}
