//! Data movement and elementwise compute: copies, memsets, fp32 elementwise ops, the DMA
//! queues' FMA, gather and scatter-add.

use bir::HwAp;
use penguin::{AluOp, CastMode, DType, Memory};

use super::{Cx, Machine, Scratch, CHUNK};
use crate::alu::{binary, nan_max};
use crate::convert::{decode_run, encode_run, fill_run, gather_raw, memset_bits, move_run, scatter_raw};
use crate::error::{InstRef, SimError};
use crate::memory::{Lockstep, Walk};

/// An elementwise operation computed in fp32 and rounded once to the destination's dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Elementwise {
    /// `dst = a op b` for an arithmetic or comparison operator (see [`crate::alu::binary`]).
    Alu(AluOp),
    /// `dst = a * b + dst` with one fp32 rounding (`f32::mul_add`).
    Fma,
}

/// Row `r` of a pattern whose partition dimension enumerates rows (a gather table or the
/// gathered rows); `None` if it cannot be addressed.
fn row_of(ap: &HwAp, r: u32) -> Option<HwAp> {
    let mut row = HwAp { num_partitions: 1, ..ap.clone() };
    let step = i128::from(r) * i128::from(ap.partition_stride);
    match ap.memory {
        Memory::Hbm => {
            row.byte_offset =
                u64::try_from(i128::from(ap.byte_offset) + step * i128::from(ap.dtype.size_bytes())).ok()?;
        }
        Memory::Sbuf | Memory::Psum => {
            row.start_partition = u32::try_from(i128::from(ap.start_partition) + step).ok()?;
        }
    }
    Some(row)
}

impl Machine {
    /// Copy element by element in enumeration order, converting when the dtypes differ;
    /// returns the bytes written.
    pub(super) fn copy(&mut self, cx: &mut Cx<'_>, dst: &HwAp, src: &HwAp, cast: CastMode) -> Result<u64, SimError> {
        let (sw, dw) = (self.walk(cx.at, src)?, self.walk(cx.at, dst)?);
        if sw.elems != dw.elems {
            return Err(SimError::CopyShape { at: cx.at, dst: dw.elems, src: sw.elems });
        }
        self.check_closed(cx.at, &sw)?;
        cx.record(&sw, false);
        cx.record(&dw, true);
        self.transfer(&sw, &dw, cast);
        self.close_written(&dw);
        Ok(dw.elems * dw.elem_size() as u64)
    }

    /// Move the elements of `sw` to `dw` (same count), converting when the dtypes differ.
    fn transfer(&mut self, sw: &Walk, dw: &Walk, cast: CastMode) {
        let size = sw.elem_size();
        if sw.dtype == dw.dtype {
            if let Some((s_mem, d_mem)) = self.images.pair(sw.memory, dw.memory) {
                for [a, b] in Lockstep::new([sw, dw], usize::MAX) {
                    move_run(size, s_mem, a, d_mem, b);
                }
            } else {
                let tmp = &mut self.scratch.bytes;
                for [a, b] in Lockstep::new([sw, dw], CHUNK) {
                    gather_raw(size, self.images.get(sw.memory), a, tmp);
                    scatter_raw(size, tmp, self.images.get_mut(dw.memory), b);
                }
            }
        } else {
            let tmp = &mut self.scratch.f32_a;
            tmp.resize(CHUNK, 0.0);
            for [a, b] in Lockstep::new([sw, dw], CHUNK) {
                decode_run(sw.dtype, self.images.get(sw.memory), a, tmp);
                encode_run(dw.dtype, cast, tmp, self.images.get_mut(dw.memory), b);
            }
        }
    }

    pub(super) fn memset(&mut self, cx: &mut Cx<'_>, dst: &HwAp, value: f64) -> Result<(), SimError> {
        let dw = self.walk(cx.at, dst)?;
        cx.record(&dw, true);
        let bytes = memset_bits(dst.dtype, value).to_le_bytes();
        let mem = self.images.get_mut(dst.memory);
        for run in dw.runs() {
            fill_run(dw.elem_size(), bytes, mem, run);
        }
        self.close_written(&dw);
        Ok(())
    }

    /// `dst = a op b` elementwise (for [`Elementwise::Fma`], `dst = a * b + dst`); returns the
    /// bytes written.
    pub(super) fn elementwise(
        &mut self,
        cx: &mut Cx<'_>,
        kind: Elementwise,
        dst: &HwAp,
        a: &HwAp,
        b: &HwAp,
    ) -> Result<u64, SimError> {
        let (dw, aw, bw) = (self.walk(cx.at, dst)?, self.walk(cx.at, a)?, self.walk(cx.at, b)?);
        for w in [&aw, &bw] {
            if w.elems != dw.elems {
                return Err(SimError::CopyShape { at: cx.at, dst: dw.elems, src: w.elems });
            }
        }
        for w in [&aw, &bw] {
            self.check_closed(cx.at, w)?;
            cx.record(w, false);
        }
        if kind == Elementwise::Fma {
            self.check_closed(cx.at, &dw)?;
            cx.count_hbm(dw.memory, dw.elems * dw.elem_size() as u64, false);
        }
        cx.record(&dw, true);
        self.apply(kind, &dw, &aw, &bw);
        self.close_written(&dw);
        Ok(dw.elems * dw.elem_size() as u64)
    }

    /// The arithmetic of [`Machine::elementwise`], in chunks; `dw` may alias `aw` or `bw`.
    fn apply(&mut self, kind: Elementwise, dw: &Walk, aw: &Walk, bw: &Walk) {
        let Scratch { f32_a: fa, f32_b: fb, f32_c: fc, .. } = &mut self.scratch;
        for buf in [&mut *fa, &mut *fb, &mut *fc] {
            buf.resize(CHUNK, 0.0);
        }
        for [rd, ra, rb] in Lockstep::new([dw, aw, bw], CHUNK) {
            let n = rd.len;
            decode_run(aw.dtype, self.images.get(aw.memory), ra, fa);
            decode_run(bw.dtype, self.images.get(bw.memory), rb, fb);
            let (x, y) = (&mut fa[..n], &fb[..n]);
            match kind {
                // The GEMM's operators get loops of their own; the rest go through `binary`.
                Elementwise::Alu(AluOp::Add) => x.iter_mut().zip(y).for_each(|(x, y)| *x += y),
                Elementwise::Alu(AluOp::Multiply) => x.iter_mut().zip(y).for_each(|(x, y)| *x *= y),
                Elementwise::Alu(AluOp::Max) => x.iter_mut().zip(y).for_each(|(x, y)| *x = nan_max(*x, *y)),
                Elementwise::Alu(op) => x.iter_mut().zip(y).for_each(|(x, y)| *x = binary(op, *x, *y)),
                Elementwise::Fma => {
                    decode_run(dw.dtype, self.images.get(dw.memory), rd, fc);
                    x.iter_mut().zip(y).zip(&fc[..n]).for_each(|((x, y), z)| *x = x.mul_add(*y, *z));
                }
            }
            encode_run(dw.dtype, CastMode::Rne, x, self.images.get_mut(dw.memory), rd);
        }
    }

    /// Check the operands of a gather or scatter-add and read its indices: `rows` has one
    /// partition per index entry, each as long as a table row.
    /// The row each index entry names, `None` for one outside the table when `skip` (an
    /// indirect DMA with `oob_mode=skip` leaves that row alone); without `skip` such an entry
    /// stops the run.
    fn indices(
        &mut self,
        cx: &mut Cx<'_>,
        rows: &HwAp,
        table: &HwAp,
        index: &HwAp,
        skip: bool,
    ) -> Result<Vec<Option<u32>>, SimError> {
        let at = cx.at;
        if index.dtype != DType::Int32 {
            return Err(SimError::BadOperand { at, detail: format!("indices must be int32, not {}", index.dtype) });
        }
        let (rw, tw, iw) = (self.walk(at, rows)?, self.walk(at, table)?, self.walk(at, index)?);
        let per_row = |w: &Walk, ap: &HwAp| w.elems / u64::from(ap.num_partitions.max(1));
        if u64::from(rows.num_partitions) != iw.elems || per_row(&rw, rows) != per_row(&tw, table) {
            return Err(SimError::BadOperand {
                at,
                detail: format!(
                    "{} index entries for {} rows of {} elements, table rows of {}",
                    iw.elems,
                    rows.num_partitions,
                    per_row(&rw, rows),
                    per_row(&tw, table)
                ),
            });
        }
        self.check_closed(at, &iw)?;
        cx.record(&iw, false);
        let mem = self.images.get(index.memory);
        let mut out = Vec::with_capacity(iw.elems as usize);
        for run in iw.runs() {
            for j in 0..run.len {
                let a = run.at(j);
                let i = DType::Int32.load_bits(&mem[a..a + 4]) as i32;
                let position = out.len() as u64;
                let err =
                    || SimError::IndexOutOfRange { at, position, index: i64::from(i), rows: table.num_partitions };
                match u32::try_from(i).ok().filter(|&r| r < table.num_partitions) {
                    Some(row) => out.push(Some(row)),
                    None if skip => out.push(None),
                    None => return Err(err()),
                }
            }
        }
        Ok(out)
    }

    fn row_walk(&self, at: InstRef, ap: &HwAp, r: u32) -> Result<Walk, SimError> {
        let row = row_of(ap, r).ok_or_else(|| SimError::OutOfRange {
            at,
            memory: ap.memory,
            ap: ap.to_string(),
            detail: format!("row {r} cannot be addressed"),
        })?;
        self.walk(at, &row)
    }

    /// `dst[i, :] = table[index[i], :]`, converting to dst's dtype; returns the bytes written.
    pub(super) fn gather(
        &mut self,
        cx: &mut Cx<'_>,
        dst: &HwAp,
        table: &HwAp,
        index: &HwAp,
        skip: bool,
    ) -> Result<u64, SimError> {
        let at = cx.at;
        let rows = self.indices(cx, dst, table, index, skip)?;
        let moved = rows.iter().flatten().count() as u64;
        let (dw, tw) = (self.walk(at, dst)?, self.walk(at, table)?);
        self.check_closed(at, &tw)?;
        cx.record_race(&tw, false);
        cx.record(&dw, true);
        let row_bytes = tw.elems / u64::from(table.num_partitions.max(1)) * tw.elem_size() as u64;
        cx.count_hbm(table.memory, row_bytes * moved, false);
        for (i, r) in (0u32..).zip(&rows) {
            let Some(r) = *r else { continue };
            let (src, dst_row) = (self.row_walk(at, table, r)?, self.row_walk(at, dst, i)?);
            self.transfer(&src, &dst_row, CastMode::Rne);
        }
        self.close_written(&dw);
        Ok(dw.elems / u64::from(dst.num_partitions.max(1)) * dw.elem_size() as u64 * moved)
    }

    /// `table[index[i], :] = src[i, :]` (cast to the table's dtype), one index entry after the
    /// other (a repeated index keeps the later row); returns the bytes written.
    pub(super) fn scatter(
        &mut self,
        cx: &mut Cx<'_>,
        table: &HwAp,
        src: &HwAp,
        index: &HwAp,
        skip: bool,
    ) -> Result<u64, SimError> {
        let at = cx.at;
        let rows = self.indices(cx, src, table, index, skip)?;
        let (sw, tw) = (self.walk(at, src)?, self.walk(at, table)?);
        self.check_closed(at, &sw)?;
        cx.record(&sw, false);
        cx.record_race(&tw, true);
        let row_bytes = tw.elems / u64::from(table.num_partitions.max(1)) * tw.elem_size() as u64;
        let moved = row_bytes * rows.iter().flatten().count() as u64;
        cx.count_hbm(table.memory, moved, true);
        for (i, r) in (0u32..).zip(&rows) {
            let Some(r) = *r else { continue };
            let (trow, srow) = (self.row_walk(at, table, r)?, self.row_walk(at, src, i)?);
            self.transfer(&srow, &trow, CastMode::Rne);
        }
        self.close_written(&tw);
        Ok(moved)
    }

    /// `table[index[i], :] += src[i, :]` in fp32, rounded once to the table's dtype, one
    /// index entry after the other (repeated indices accumulate); returns the bytes written.
    pub(super) fn scatter_add(
        &mut self,
        cx: &mut Cx<'_>,
        table: &HwAp,
        src: &HwAp,
        index: &HwAp,
        skip: bool,
    ) -> Result<u64, SimError> {
        let at = cx.at;
        let rows = self.indices(cx, src, table, index, skip)?;
        let (sw, tw) = (self.walk(at, src)?, self.walk(at, table)?);
        self.check_closed(at, &sw)?;
        self.check_closed(at, &tw)?;
        cx.record(&sw, false);
        cx.record_race(&tw, true);
        let row_bytes = tw.elems / u64::from(table.num_partitions.max(1)) * tw.elem_size() as u64;
        let moved = row_bytes * rows.iter().flatten().count() as u64;
        cx.count_hbm(table.memory, moved, false);
        cx.count_hbm(table.memory, moved, true);
        for (i, r) in (0u32..).zip(&rows) {
            let Some(r) = *r else { continue };
            let (trow, srow) = (self.row_walk(at, table, r)?, self.row_walk(at, src, i)?);
            self.apply(Elementwise::Alu(AluOp::Add), &trow, &trow, &srow);
        }
        self.close_written(&tw);
        Ok(moved)
    }
}
