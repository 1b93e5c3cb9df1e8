//! A transposed on the PE: natural-layout loads, transposes through PSUM and the queue
//! that transposes each stripe just in time.

use penguin::{AccessPattern, ComputeEngine, DType, InstData, IrBuilder, Memory, TensorId, TransposeData};

use crate::error::CodegenError;
use crate::gemm::KChunk;

use super::rotation::Transfer;
use super::{hbm, on_chip, Lhs, Operand, Planner, Slot};

/// The just-in-time PE transpose queue of the stripe schedules: the m tiles in the order
/// compute first reads them after a (re)load, how many of their natural stripes have been
/// loaded and how many transposed (two natural buffers take turns).
#[derive(Debug, Default)]
pub(super) struct PeQueue {
    order: Vec<(u64, u32)>,
    /// Natural loads whose queues repeat (two blocks of m tiles): the queue hint of the
    /// `j`-th load is `j mod period`.
    period: usize,
    loaded: usize,
    done: usize,
}

impl PeQueue {
    /// Set the order in which compute first reads the m tiles, whose natural loads take
    /// `period` queues in turn (see [`super::rotation`]).
    pub(super) fn set_order(&mut self, order: Vec<(u64, u32)>, period: usize) {
        self.order = order;
        self.period = period.max(1);
    }

    /// The next m tile to load and its natural buffer, while fewer than two are ahead of the
    /// transposes.
    fn next_load(&self) -> Option<((u64, u32), usize, usize)> {
        if self.loaded >= self.done + 2 {
            return None;
        }
        self.order.get(self.loaded).map(|&m| (m, self.loaded % 2, self.loaded % self.period))
    }

    /// Record that the tile [`Self::next_load`] gave has been loaded.
    fn mark_loaded(&mut self) {
        self.loaded += 1;
    }

    /// Move past `tiles` m tiles that were loaded and transposed in skipped iterations (each
    /// skipped iteration loads as many as it transposes, so as many stay ahead).
    pub(super) fn skip(&mut self, tiles: usize) {
        self.loaded += tiles;
        self.done += tiles;
    }

    /// Take `m` for transposing: the natural buffer holding it, or `None` when it is not the
    /// next loaded tile of the order.
    fn take(&mut self, m: (u64, u32)) -> Option<usize> {
        if self.order.get(self.done) != Some(&m) || self.done >= self.loaded {
            return None;
        }
        let buffer = self.done % 2;
        self.done += 1;
        Some(buffer)
    }
}

impl<B: IrBuilder> Planner<'_, B> {
    /// trn1: load A[m0.., k0..] in its natural layout (contiguous rows), transpose it on the PE
    /// into PSUM, and copy the transpose into the stationary slot.
    /// The natural chunk goes through natural buffer `nat`; its transpose's PSUM slot and copy
    /// engine follow the chunk's index (see [`super::rotation`]).
    pub(super) fn load_lhs_pe_transposed(
        &mut self,
        slot: Slot,
        start: u32,
        chunk: KChunk,
        (m0, msz): (u64, u32),
        (nat, bank): (TensorId, TensorId),
    ) -> Result<Lhs, CodegenError> {
        let cfg = self.cfg;
        let c = self.chunk_index(chunk);
        let i = c as usize;
        let natural = on_chip(nat, Memory::Sbuf, cfg.lhs_dtype, 0, msz, 0, chunk.real);
        let src = hbm(self.a, cfg.input_dtype, AccessPattern::hbm_rows(cfg.k, m0, msz, chunk.k0, chunk.real));
        self.dma(natural.clone(), src, Transfer::Load(Operand::Lhs, c))?;
        // Four 128-column transpose slots share the bank.
        let psum = on_chip(bank, Memory::Psum, DType::Fp32, 0, chunk.real, (i % 4) as i64 * 128, msz);
        self.cg.process_new_neuroninst(InstData::Transpose(TransposeData { dst: psum.clone(), src: natural }))?;
        let dst = on_chip(slot.tensor, Memory::Sbuf, cfg.lhs_dtype, start, chunk.real, slot.offset, msz);
        self.copy(transpose_copy_engine(i), dst.clone(), psum)?;
        Ok(Lhs { tile: dst, tags: None })
    }

    /// Transpose `chunks` of a natural stripe (held at `nat` from row `k0`) on the PE through
    /// PSUM, copying chunk `i` to `slot + i * chunk_stride`. In double row each chunk is two
    /// transposes, one per slot of the `[P, 2, M]` layout (slot `s` of partition `p` holds row
    /// `k0 + s * P + p`), a slot short of rows zeroed first.
    pub(super) fn transpose_stripe(
        &mut self,
        nat: Slot,
        k0: u64,
        slot: Slot,
        chunk_stride: i64,
        msz: u32,
        chunks: &[KChunk],
    ) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let Some((_, bank)) = self.pe_transpose else { return Ok(()) };
        for (ci, &chunk) in chunks.iter().enumerate() {
            let at = slot.at(ci as i64 * chunk_stride);
            let c = self.chunk_index(chunk) as usize;
            for s in 0..self.pack {
                let rows = chunk.real.saturating_sub(s * chunk.parts).min(chunk.parts);
                let half = at.offset + i64::from(s) * self.lhs_width() / 2;
                if self.pack == 2 && rows < chunk.parts {
                    self.memset_zero(on_chip(at.tensor, Memory::Sbuf, cfg.lhs_dtype, 0, chunk.parts, half, msz))?;
                }
                if rows == 0 {
                    continue;
                }
                let i = c * self.pack as usize + s as usize;
                let col = nat.offset + (chunk.k0 + u64::from(s * chunk.parts) - k0) as i64;
                let src = on_chip(nat.tensor, Memory::Sbuf, cfg.lhs_dtype, 0, msz, col, rows);
                let psum = on_chip(bank, Memory::Psum, DType::Fp32, 0, rows, (i % 4) as i64 * 128, msz);
                self.cg.process_new_neuroninst(InstData::Transpose(TransposeData { dst: psum.clone(), src }))?;
                let dst = on_chip(at.tensor, Memory::Sbuf, cfg.lhs_dtype, 0, rows, half, msz);
                self.copy(transpose_copy_engine(i), dst, psum)?;
            }
        }
        Ok(())
    }

    /// Load the natural stripes of the next tiles of the queue, at most two ahead of the
    /// transposes (there are two natural buffers; a load is emitted after the transposes that
    /// read its buffer last, so it only waits for them).
    pub(super) fn pe_prefetch(&mut self) -> Result<(), CodegenError> {
        let Some((nat, _)) = self.pe_transpose else { return Ok(()) };
        let cfg = self.cfg;
        while let Some((m, which, queue)) = self.pe_queue.next_load() {
            let at = Slot { tensor: nat[which], offset: 0, tags: None, row_stride: 0 };
            self.load_natural(at, m, 0, cfg.k as u32, queue as u64)?;
            self.pe_queue.mark_loaded();
        }
        Ok(())
    }

    /// Transpose the whole K stripe of the next tile of the queue (which must be `m`) into
    /// `slot` with chunks `chunk_stride` apart, just before its first matmul, and prefetch.
    pub(super) fn pe_transpose_next(
        &mut self,
        slot: Slot,
        chunk_stride: i64,
        m: (u64, u32),
    ) -> Result<(), CodegenError> {
        let Some((nat, _)) = self.pe_transpose else { return Ok(()) };
        let Some(buffer) = self.pe_queue.take(m) else {
            return Err(CodegenError::BadGemm(format!("PE transpose of m tile {m:?} out of sequence")));
        };
        let which = Slot { tensor: nat[buffer], offset: 0, tags: None, row_stride: 0 };
        let chunks = self.chunks.clone();
        self.transpose_stripe(which, 0, slot, chunk_stride, m.1, &chunks)?;
        self.pe_prefetch()
    }

    /// Load the natural rows `chunks` of each m tile of `block` into natural buffer `which`,
    /// tile `t` at `t * width` elements.
    pub(super) fn load_lhs_natural(
        &mut self,
        which: usize,
        width: i64,
        chunks: &[KChunk],
        block: &[(u64, u32)],
    ) -> Result<(), CodegenError> {
        let (Some((nat, _)), Some(first), Some(last)) = (self.pe_transpose, chunks.first(), chunks.last()) else {
            return Ok(());
        };
        let (k0, rows) = (first.k0, (last.k0 + u64::from(last.real) - first.k0) as u32);
        for (t, &m) in block.iter().enumerate() {
            let at = Slot { tensor: nat[which], offset: t as i64 * width, tags: None, row_stride: 0 };
            self.load_natural(at, m, k0, rows, t as u64)?;
        }
        Ok(())
    }

    /// Load A's rows of m tile `(m0, msz)`, columns `[k0, k0 + cols)`, in their natural layout
    /// (contiguous runs along K) at `at`: the source of PE transposes. `n` places the load on
    /// the queues (the natural buffer, or the tile's place in the block).
    pub(super) fn load_natural(
        &mut self,
        at: Slot,
        (m0, msz): (u64, u32),
        k0: u64,
        cols: u32,
        n: u64,
    ) -> Result<(), CodegenError> {
        let cfg = self.cfg;
        let dst = on_chip(at.tensor, Memory::Sbuf, cfg.lhs_dtype, 0, msz, at.offset, cols);
        let src = hbm(self.a, cfg.input_dtype, AccessPattern::hbm_rows(cfg.k, m0, msz, k0, cols));
        self.dma(dst, src, Transfer::Load(Operand::Lhs, n))
    }
}

/// The engine that copies PE transpose `i` out of PSUM: a copy takes longer than the
/// transpose, so the two engines with a PSUM port (VectorE and ScalarE; GpSimd has none)
/// take turns.
fn transpose_copy_engine(i: usize) -> ComputeEngine {
    if i.is_multiple_of(2) {
        ComputeEngine::Dve
    } else {
        ComputeEngine::Act
    }
}
