//! The steps every loop nest emits: operand loads, matmuls into accumulation groups and
//! evacuations, and the software pipeline that interleaves them.

use penguin::{
    sparse_tag_words, AccessPattern, ComputeEngine, DType, Dim, DmaCopyData, FreeDims, InstData, InstTile, IrBuilder,
    Memory, MemsetData, OffloadedMemCastData, TensorCopyData, TensorId, TilePosition, TileSize, SPARSE_TAGS_PER_WORD,
};

use crate::combine::{
    combine_matmult_tiles, combine_sparse_matmult_tiles, MatMultAccumulation, MatMultSparseSubTile, MatMultSubTile,
};
use crate::error::CodegenError;
use crate::gemm::{KChunk, SparseA};

use super::rotation::{GroupAt, TileLoad, Transfer};
use super::{hbm, on_chip, Lhs, Operand, Planner, Slot};

impl<B: IrBuilder> Planner<'_, B> {
    /// Move a tile on the queue its place in the loop nest gives (see [`super::rotation`]); a
    /// load that converts (f32 inputs to the matmul dtype) is an `OffloadedMemCast` executed
    /// on the DMA queues.
    pub(super) fn dma(&mut self, dst: InstTile, src: InstTile, transfer: Transfer) -> Result<(), CodegenError> {
        let cast = penguin::CastMode::Rne;
        if dst.dtype != src.dtype && src.memory == Memory::Hbm {
            let queue = Some(self.queue_hint(transfer, true));
            self.cg.process_new_neuroninst(InstData::OffloadedMemCast(OffloadedMemCastData {
                dst,
                src,
                cast,
                queue,
            }))?;
        } else {
            let queue = Some(self.queue_hint(transfer, false));
            self.cg.process_new_neuroninst(InstData::DmaCopy(DmaCopyData { dst, src, cast, queue }))?;
        }
        Ok(())
    }

    pub(super) fn memset_zero(&mut self, dst: InstTile) -> Result<(), CodegenError> {
        self.cg.process_new_neuroninst(InstData::Memset(MemsetData {
            engine: ComputeEngine::Pool,
            dst,
            value: 0.0,
        }))?;
        Ok(())
    }

    pub(super) fn copy(&mut self, engine: ComputeEngine, dst: InstTile, src: InstTile) -> Result<(), CodegenError> {
        self.cg.process_new_neuroninst(InstData::TensorCopy(TensorCopyData { engine, dst, src }))?;
        Ok(())
    }

    /// The A^T window of dense rows `[k0, k0 + rows)` and columns `[m0, m0 + msz)` in HBM.
    pub(super) fn lhs_src(&self, m0: u64, msz: u32, k0: u64, rows: u32) -> InstTile {
        let ap = if self.cfg.lhs_transposed {
            AccessPattern::hbm_rows(self.cfg.m, k0, rows, m0, msz)
        } else {
            AccessPattern::hbm_cols(self.cfg.k, m0, msz, k0, rows)
        };
        hbm(self.a, self.cfg.input_dtype, ap)
    }

    pub(super) fn rhs_src(&self, n0: u64, nsz: u32, k0: u64, rows: u32) -> InstTile {
        hbm(self.b, self.cfg.input_dtype, AccessPattern::hbm_rows(self.cfg.n, k0, rows, n0, nsz))
    }

    /// B's dense rows from `k0` in the sparse moving layout: `per` consecutive rows on each
    /// of `parts` partitions (partition `p` gets rows `k0 + p * CR ..`, `CR` apart in
    /// partitions), columns `[n0, n0 + nsz)`.
    fn rhs_sparse_src(&self, n0: u64, nsz: u32, k0: u64, parts: u32, per: u32) -> InstTile {
        let n = i64::try_from(self.cfg.n).unwrap_or(i64::MAX);
        let cr = i64::from(self.cr());
        let offset = i64::try_from(k0.saturating_mul(self.cfg.n).saturating_add(n0)).unwrap_or(i64::MAX);
        let ap = AccessPattern {
            start_partition: 0,
            partitions: Dim::new(n.saturating_mul(cr), parts),
            offset,
            free: FreeDims::from([Dim::new(n, per), Dim::new(1, nsz)]),
        };
        hbm(self.b, self.cfg.input_dtype, ap)
    }

    /// The packed tags of a sparse stationary tile at `slot`: `ceil(msz / 4)` int16 words on
    /// each of `parts` partitions (a value slot's offset, always whole 128-column tiles, over
    /// the 4 tags per word).
    fn tags_view(tags: TensorId, offset: i64, parts: u32, msz: u32) -> InstTile {
        let per = i64::from(SPARSE_TAGS_PER_WORD);
        on_chip(tags, Memory::Sbuf, DType::Int16, 0, parts, offset / per, sparse_tag_words(msz))
    }

    /// The operand view of a loaded chunk: `parts` partitions from `start` and either one run
    /// of `free` elements or (double row) `[2, free]` with slots `width / 2` apart.
    pub(super) fn view(&self, slot: Slot, dtype: DType, start: u32, parts: u32, free: u32, width: i64) -> InstTile {
        let dims = if self.pack == 2 {
            FreeDims::from([Dim::new(width / 2, 2), Dim::new(1, free)])
        } else {
            FreeDims::one(Dim::new(1, free))
        };
        let ap =
            AccessPattern { start_partition: start, partitions: Dim::new(1, parts), offset: slot.offset, free: dims };
        InstTile { tensor: slot.tensor, memory: Memory::Sbuf, dtype, ap }
    }

    /// Load dense rows of one chunk (`src(k0, rows)`) into a slot: plain at partitions
    /// `start..`, or double row with slot `s` of partition `p` holding row `k0 + s * P + p`
    /// and missing rows zeroed first. `load` is the transfer of the first (or only) half.
    #[expect(clippy::too_many_arguments, reason = "a buffer slot, the chunk, the source window and the queue")]
    pub(super) fn load_rows(
        &mut self,
        slot: Slot,
        dtype: DType,
        start: u32,
        chunk: KChunk,
        free: u32,
        width: i64,
        src: &dyn Fn(&Self, u64, u32) -> InstTile,
        (operand, n): (Operand, u64),
    ) -> Result<InstTile, CodegenError> {
        if self.pack == 1 {
            let dst = on_chip(slot.tensor, Memory::Sbuf, dtype, start, chunk.real, slot.offset, free);
            self.dma(dst, src(self, chunk.k0, chunk.real), Transfer::Load(operand, n))?;
            return Ok(self.view(slot, dtype, start, chunk.real, free, width));
        }
        for s in 0..2u32 {
            let rows = chunk.real.saturating_sub(s * chunk.parts).min(chunk.parts);
            let half = slot.offset + i64::from(s) * width / 2;
            if rows < chunk.parts {
                self.memset_zero(on_chip(slot.tensor, Memory::Sbuf, dtype, 0, chunk.parts, half, free))?;
            }
            if rows > 0 {
                let dst = on_chip(slot.tensor, Memory::Sbuf, dtype, 0, rows, half, free);
                let load = Transfer::Load(operand, n + u64::from(s));
                self.dma(dst, src(self, chunk.k0 + u64::from(s * chunk.parts), rows), load)?;
            }
        }
        Ok(self.view(slot, dtype, 0, chunk.parts, free, width))
    }

    /// Load the stationary operand of one chunk of m tile `(m0, msz)` at `place` (which
    /// places its loads on the queues).
    pub(super) fn load_lhs(
        &mut self,
        slot: Slot,
        start: u32,
        chunk: KChunk,
        (m0, msz): (u64, u32),
        place: TileLoad,
    ) -> Result<Lhs, CodegenError> {
        let cfg = self.cfg;
        let per = self.loads_per_tile(Operand::Lhs);
        let n = (self.chunk_index(chunk) * place.tiles as u64 + place.t as u64) * per;
        if let (Some(pattern), Some(a_tags), Some(tags_buf)) = (cfg.sparsity, self.a_tags, slot.tags) {
            // The kept values and the tags, both stored in the stationary layout: plain row
            // windows of `[K', M]` and `[K', M / 4]`.
            let [_, words] = SparseA::tags_shape(cfg.m, cfg.k, pattern);
            let kc0 = chunk.k0 / u64::from(self.cr());
            let src = AccessPattern::hbm_rows(cfg.m, kc0, chunk.parts, m0, msz);
            let st = on_chip(slot.tensor, Memory::Sbuf, cfg.lhs_dtype, 0, chunk.parts, slot.offset, msz);
            self.dma(st.clone(), hbm(self.a, cfg.input_dtype, src), Transfer::Load(Operand::Lhs, n))?;
            let tags = Self::tags_view(tags_buf, slot.offset, chunk.parts, msz);
            let w0 = m0 / u64::from(SPARSE_TAGS_PER_WORD);
            let tsrc = AccessPattern::hbm_rows(words, kc0, chunk.parts, w0, sparse_tag_words(msz));
            self.dma(tags.clone(), hbm(a_tags, DType::Int16, tsrc), Transfer::Load(Operand::Lhs, n + 1))?;
            return Ok(Lhs { tile: st, tags: Some(tags) });
        }
        if let Some((nat, bank)) = self.pe_transpose {
            return self.load_lhs_pe_transposed(slot, start, chunk, (m0, msz), (nat[place.turn % 2], bank));
        }
        let width = self.lhs_width();
        let src = |p: &Self, k0, r| p.lhs_src(m0, msz, k0, r);
        let tile = self.load_rows(slot, cfg.lhs_dtype, start, chunk, msz, width, &src, (Operand::Lhs, n))?;
        Ok(Lhs { tile, tags: None })
    }

    /// Load the moving operand of one chunk of n tile `(n0, nsz)`. A sparse chunk is
    /// `[K', CR, nsz]` (contiguous per partition); it is zeroed first when it runs past K
    /// (the tags of padded kept values may point at padded rows), and a K that ends inside a
    /// partition takes a second load for that partition's rows.
    pub(super) fn load_rhs(
        &mut self,
        slot: Slot,
        start: u32,
        chunk: KChunk,
        (n0, nsz): (u64, u32),
        place: TileLoad,
    ) -> Result<InstTile, CodegenError> {
        let cfg = self.cfg;
        let n = (self.chunk_index(chunk) * place.tiles as u64 + place.t as u64) * self.loads_per_tile(Operand::Rhs);
        if cfg.sparsity.is_some() {
            return self.load_rhs_sparse(slot, chunk, (n0, nsz), n);
        }
        let width = self.rhs_width();
        let src = |p: &Self, k0, r| p.rhs_src(n0, nsz, k0, r);
        self.load_rows(slot, cfg.rhs_dtype, start, chunk, nsz, width, &src, (Operand::Rhs, n))
    }

    /// Load a sparse moving chunk of columns `(n0, width)` (one n tile, or every tile of a
    /// block) as `[K', CR, width]`, contiguous per partition: zeroed first when it runs past
    /// K (the tags of padded kept values may point at padded rows), and a K that ends inside
    /// a partition takes a second load for that partition's rows.
    fn load_rhs_sparse(
        &mut self,
        slot: Slot,
        chunk: KChunk,
        (n0, width): (u64, u32),
        n: u64,
    ) -> Result<InstTile, CodegenError> {
        let (cr, dtype) = (self.cr(), self.cfg.rhs_dtype);
        let mv = on_chip(slot.tensor, Memory::Sbuf, dtype, 0, chunk.parts, slot.offset, cr * width);
        if chunk.real < chunk.len {
            self.memset_zero(mv.clone())?;
        }
        let (full, rest) = (chunk.real / cr, chunk.real % cr);
        if full > 0 {
            let dst = on_chip(slot.tensor, Memory::Sbuf, dtype, 0, full, slot.offset, cr * width);
            let src = self.rhs_sparse_src(n0, width, chunk.k0, full, cr);
            self.dma(dst, src, Transfer::Load(Operand::Rhs, n))?;
        }
        if rest > 0 {
            let dst = on_chip(slot.tensor, Memory::Sbuf, dtype, full, 1, slot.offset, rest * width);
            let src = self.rhs_sparse_src(n0, width, chunk.k0 + u64::from(full * cr), 1, rest);
            self.dma(dst, src, Transfer::Load(Operand::Rhs, n))?;
        }
        Ok(mv)
    }

    /// The slot of n tile `j` of chunk `ci` in a block of n tiles loaded by
    /// [`Self::load_rhs_block`]: `[chunk][tile]` of [`Self::rhs_width`] each; a sparse block
    /// is loaded wide, `[chunk][CR][tiles]`, so tile `j` starts `j` tiles into each of `CR`
    /// rows the block's width apart (one contiguous run of `CR` whole rows of B per
    /// partition when the block spans N).
    pub(super) fn rhs_block_slot(&self, slot: Slot, ci: usize, j: usize, block: &[(u64, u32)]) -> Slot {
        let rw = self.rhs_width();
        let base = slot.at((ci * block.len()) as i64 * rw);
        if self.cfg.sparsity.is_none() {
            return base.at(j as i64 * rw);
        }
        let before: i64 = block[..j].iter().map(|t| i64::from(t.1)).sum();
        let total: i64 = block.iter().map(|t| i64::from(t.1)).sum();
        Slot { row_stride: total, ..base.at(before) }
    }

    /// Open the accumulation group of the output tile at `at` in its loop nest.
    pub(super) fn open_group(
        &mut self,
        msz: u32,
        nsz: u32,
        k_len: u64,
        at: GroupAt,
    ) -> Result<(MatMultAccumulation, InstTile, u32), CodegenError> {
        let (bank, offset) = self.group_bank(at);
        let pos = (self.group_slot(at) as u32 % self.pe_positions) * self.pe_rows;
        let psum = on_chip(bank, Memory::Psum, DType::Fp32, 0, msz, offset, nsz);
        let acc = if self.pack == 2 {
            MatMultAccumulation::open_double_row(psum.clone(), k_len as u32)?
        } else {
            MatMultAccumulation::open(psum.clone(), k_len as u32)?
        };
        Ok((acc, psum, pos))
    }

    /// One K sub-tile into an open group; `k_base` is where the group's K range starts.
    #[expect(clippy::too_many_arguments, reason = "the group, both operands and the chunk's place in K")]
    pub(super) fn matmul(
        &mut self,
        acc: &mut MatMultAccumulation,
        psum: &InstTile,
        lhs: Lhs,
        rhs: InstTile,
        chunk: KChunk,
        k_base: u64,
        pos: u32,
    ) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let k_start = (chunk.k0 - k_base) as u32;
        if let (Some(pattern), Some(tags)) = (cfg.sparsity, lhs.tags) {
            let sub = MatMultSparseSubTile {
                dst: psum.clone(),
                stationary: lhs.tile,
                moving: rhs,
                tags,
                pattern,
                k_start,
                tile_position: vec![0, 0],
                tile_size: vec![128, 128],
            };
            let mm = combine_sparse_matmult_tiles(acc, sub)?;
            self.cg.process_new_neuroninst(InstData::MatMultSparse(Box::new(mm)))?;
            return Ok(());
        }
        let sub = MatMultSubTile {
            dst: psum.clone(),
            stationary: lhs.tile,
            moving: rhs,
            k_start,
            k_len: if self.pack == 2 { chunk.len } else { chunk.real },
            perf_mode: cfg.perf_mode,
            tile_position: TilePosition { row: pos, col: 0 },
            tile_size: TileSize { rows: self.pe_rows, cols: 128 },
        };
        let mm = combine_matmult_tiles(acc, sub)?;
        self.cg.process_new_neuroninst(InstData::MatMult(mm))?;
        Ok(())
    }

    /// Copy a stopped group from PSUM to SBUF (casting to the output dtype) and store it.
    pub(super) fn evacuate(
        &mut self,
        psum: InstTile,
        (m0, msz): (u64, u32),
        (n0, nsz): (u64, u32),
        at: GroupAt,
    ) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let q = self.group_slot(at);
        let out = on_chip(self.out[q % 2], Memory::Sbuf, cfg.out_dtype, 0, msz, 0, nsz);
        self.copy(self.evac_engine(at), out.clone(), psum)?;
        let dst = hbm(self.c, cfg.out_dtype, AccessPattern::hbm_rows(cfg.n, m0, msz, n0, nsz));
        self.dma(dst, out, Transfer::Store(q as u64))
    }

    /// Run every K chunk of one output tile from loaded operands.
    pub(super) fn tile_group(
        &mut self,
        lhs: &dyn Fn(usize) -> Slot,
        rhs: &dyn Fn(usize) -> Slot,
        m: (u64, u32),
        n: (u64, u32),
        at: GroupAt,
    ) -> Result<(), CodegenError> {
        let (mut acc, psum, pos) = self.open_group(m.1, n.1, self.k_total, at)?;
        for (ci, chunk) in self.chunks.clone().into_iter().enumerate() {
            let (st, mv) = self.loaded_views(lhs(ci), rhs(ci), chunk, m.1, n.1)?;
            self.matmul(&mut acc, &psum, st, mv, chunk, 0, pos)?;
        }
        self.evacuate(psum, m, n, at)
    }

    /// Views of operands already loaded by `load_lhs` / `load_rhs` at these slots.
    pub(super) fn loaded_views(
        &self,
        l: Slot,
        r: Slot,
        chunk: KChunk,
        msz: u32,
        nsz: u32,
    ) -> Result<(Lhs, InstTile), CodegenError> {
        let cfg = self.cfg;
        if cfg.sparsity.is_some() {
            let tags = l.tags.map(|t| Self::tags_view(t, l.offset, chunk.parts, msz));
            let st = on_chip(l.tensor, Memory::Sbuf, cfg.lhs_dtype, 0, chunk.parts, l.offset, msz);
            let cr = self.cr();
            let mut mv = on_chip(r.tensor, Memory::Sbuf, cfg.rhs_dtype, 0, chunk.parts, r.offset, cr * nsz);
            if r.row_stride > 0 && cr > 1 {
                mv.ap.free = FreeDims::from([Dim::new(r.row_stride, cr), Dim::new(1, nsz)]);
            }
            return Ok((Lhs { tile: st, tags }, mv));
        }
        let parts = if self.pack == 2 { chunk.parts } else { chunk.real };
        let st = self.view(l, cfg.lhs_dtype, 0, parts, msz, self.lhs_width());
        let mv = self.view(r, cfg.rhs_dtype, 0, parts, nsz, self.rhs_width());
        Ok((Lhs { tile: st, tags: None }, mv))
    }

    /// Load the K stripe of one m tile (A^T) or n tile (B) into a slot, chunk after
    /// chunk.
    pub(super) fn load_stripe(&mut self, slot: Slot, operand: Operand, t: (u64, u32)) -> Result<(), CodegenError> {
        let chunks = self.chunks.clone();
        if operand == Operand::Lhs {
            self.load_lhs_block(slot, &chunks, &[t])
        } else {
            self.load_rhs_block(slot, &chunks, &[t])
        }
    }

    /// Load the given K chunks of a block of m tiles (the stationary operand), laid out
    /// `[chunk][tile]` from `slot` (A transposed on the PE is loaded by the schedules
    /// themselves, in its natural layout).
    pub(super) fn load_lhs_block(
        &mut self,
        slot: Slot,
        chunks: &[KChunk],
        block: &[(u64, u32)],
    ) -> Result<(), CodegenError> {
        self.load_block(slot, chunks, block, Operand::Lhs)
    }

    /// Load the given K chunks of a block of n tiles (the moving operand), laid out
    /// `[chunk][tile]` from `slot`.
    pub(super) fn load_rhs_block(
        &mut self,
        slot: Slot,
        chunks: &[KChunk],
        block: &[(u64, u32)],
    ) -> Result<(), CodegenError> {
        self.load_block(slot, chunks, block, Operand::Rhs)
    }

    /// One DMA per chunk covering every tile of the block (longer contiguous runs per
    /// partition) when the operand is plain, one load per tile and chunk otherwise.
    pub(super) fn load_block(
        &mut self,
        slot: Slot,
        chunks: &[KChunk],
        block: &[(u64, u32)],
        operand: Operand,
    ) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let lhs = operand == Operand::Lhs;
        let (width, dtype) = if lhs { (self.lhs_width(), cfg.lhs_dtype) } else { (self.rhs_width(), cfg.rhs_dtype) };
        let wide = self.pack == 1 && cfg.sparsity.is_none() && block.len() > 1;
        let first = block.first().map_or(0, |t| t.0);
        let total: u32 = block.iter().map(|t| t.1).sum();
        for (ci, &chunk) in chunks.iter().enumerate() {
            let base = slot.at((ci * block.len()) as i64 * width);
            if cfg.sparsity.is_some() && !lhs {
                // One load per chunk for the whole block (see `rhs_block_slot`).
                self.load_rhs_sparse(base, chunk, (first, total), self.chunk_index(chunk))?;
            } else if let (Some(pattern), Some(a_tags), Some(tags_buf), true) =
                (cfg.sparsity, self.a_tags, base.tags, lhs && block.len() > 1)
            {
                // The kept values and the tag words of every m tile of the block in one
                // load each (the tiles' words are adjacent in a row of `a_tags`).
                let [_, words] = SparseA::tags_shape(cfg.m, cfg.k, pattern);
                let kc0 = chunk.k0 / u64::from(self.cr());
                let n = self.chunk_index(chunk) * 2;
                let dst = on_chip(base.tensor, Memory::Sbuf, dtype, 0, chunk.parts, base.offset, total);
                let src = hbm(self.a, cfg.input_dtype, AccessPattern::hbm_rows(cfg.m, kc0, chunk.parts, first, total));
                self.dma(dst, src, Transfer::Load(operand, n))?;
                let tag_words: u32 = block.iter().map(|t| sparse_tag_words(t.1)).sum();
                let per = u64::from(SPARSE_TAGS_PER_WORD);
                let dst =
                    on_chip(tags_buf, Memory::Sbuf, DType::Int16, 0, chunk.parts, base.offset / per as i64, tag_words);
                let src = AccessPattern::hbm_rows(words, kc0, chunk.parts, first / per, tag_words);
                self.dma(dst, hbm(a_tags, DType::Int16, src), Transfer::Load(operand, n + 1))?;
            } else if wide {
                let first = block[0].0;
                let total: u32 = block.iter().map(|t| t.1).sum();
                let dst = on_chip(base.tensor, Memory::Sbuf, dtype, 0, chunk.real, base.offset, total);
                let src = if lhs {
                    self.lhs_src(first, total, chunk.k0, chunk.real)
                } else {
                    self.rhs_src(first, total, chunk.k0, chunk.real)
                };
                self.dma(dst, src, Transfer::Load(operand, self.chunk_index(chunk)))?;
            } else {
                for (t, &tile) in block.iter().enumerate() {
                    let at = base.at(t as i64 * width);
                    let place = TileLoad { t, tiles: block.len(), turn: 0 };
                    if lhs {
                        self.load_lhs(at, 0, chunk, tile, place)?;
                    } else {
                        self.load_rhs(at, 0, chunk, tile, place)?;
                    }
                }
            }
        }
        Ok(())
    }
}
