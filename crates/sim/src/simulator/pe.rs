//! The PE array: stationary loads (dense, double-row, structured-sparse), matmuls into PSUM
//! accumulation groups, and transposes.

use bir::HwAp;
use penguin::target::{MAX_MOVING_FREE, MAX_STATIONARY_FREE, NUM_PARTITIONS};
use penguin::{
    sparse_tag, CastMode, DType, EngineAccumulationType as Acc, Memory, PerfMode, SparsityPattern, TileSize,
    SPARSE_GROUP_KEPT, SPARSE_TAGS_PER_WORD,
};

use std::sync::Arc;

use super::deferred::Link;
use super::{psum_position, write_product, Cx, Groups, Machine, Scratch, Stationary};
use crate::convert::{decode_run, encode_run};
use crate::error::{InstRef, SimError};
use crate::gemm::{matmul_tn, PackedStationary};
use crate::memory::Walk;

/// Most partitions and free elements per partition a PE operand may have.
#[derive(Clone, Copy)]
struct Limits {
    partitions: usize,
    free: usize,
}

impl Machine {
    /// Decode a PE operand (`P` partitions x `F` free, in SBUF) into `scratch.f32_b` as a
    /// row-major f32 matrix of contraction rows: `[P, F]`, or with `double_row` `[2P, F/2]`
    /// where contraction row `j * P + p` is free half `j` of partition `p` (SPEC section 2:
    /// `[P, 2, F]`). Shapes beyond `limits` are refused before anything is decoded.
    fn pe_operand(
        &mut self,
        cx: &mut Cx<'_>,
        ap: &HwAp,
        perf_mode: PerfMode,
        what: &str,
        limits: Limits,
    ) -> Result<(usize, usize), SimError> {
        if ap.memory != Memory::Sbuf {
            return Err(SimError::BadOperand {
                at: cx.at,
                detail: format!("the {what} operand must be in sbuf, not {}", ap.memory),
            });
        }
        let walk = self.walk(cx.at, ap)?;
        let p = ap.num_partitions as usize;
        let f = (walk.elems / u64::from(ap.num_partitions.max(1))) as usize;
        if p > limits.partitions || f > limits.free {
            return Err(SimError::MatmulShape {
                at: cx.at,
                detail: format!(
                    "the {what} operand is {p} partitions x {f} elements; the PE takes at most {} x {}",
                    limits.partitions, limits.free
                ),
            });
        }
        cx.record(&walk, false);
        self.decode.hit = None;
        // Plain moving and stationary operands decode to the same [P, F] rows, so one cache
        // serves both (a blocked schedule reuses each within a few matmuls).
        let cacheable =
            matches!(what, "moving" | "stationary") && perf_mode == PerfMode::None && ap.memory == Memory::Sbuf;
        if cacheable && self.decode.find(ap) {
            return Ok((p, f));
        }
        let Scratch { f32_a: raw, f32_b: rows, .. } = &mut self.scratch;
        if raw.capacity() < p * f {
            *raw = self.decode.buffer();
        }
        // Every element is decoded below, so the buffer is not cleared first (a recycled
        // buffer of the same length is not even written before the decode).
        raw.resize(p * f, 0.0);
        let mut pos = 0;
        for run in walk.runs() {
            decode_run(ap.dtype, self.images.get(ap.memory), run, &mut raw[pos..pos + run.len]);
            pos += run.len;
        }
        match perf_mode {
            PerfMode::None => {
                std::mem::swap(raw, rows);
                if cacheable {
                    self.decode.insert(ap, std::mem::take(rows));
                }
                Ok((p, f))
            }
            PerfMode::DoubleRow => {
                if !f.is_multiple_of(2) {
                    return Err(SimError::MatmulShape {
                        at: cx.at,
                        detail: format!("double_row {what} has {f} free elements per partition; it must be [P, 2, F]"),
                    });
                }
                let half = f / 2;
                rows.resize(p * f, 0.0);
                for j in 0..2 {
                    for q in 0..p {
                        let k = j * p + q;
                        rows[k * half..(k + 1) * half].copy_from_slice(&raw[q * f + j * half..q * f + (j + 1) * half]);
                    }
                }
                Ok((2 * p, half))
            }
            PerfMode::DoubleRowGen3 => {
                Err(SimError::Unsupported { at: cx.at, detail: "perf_mode=double_row_gen3 is not supported".into() })
            }
        }
    }

    fn check_perf_mode(&self, at: InstRef, perf_mode: PerfMode) -> Result<(), SimError> {
        match perf_mode {
            PerfMode::None => Ok(()),
            PerfMode::DoubleRow if self.double_row_ok => Ok(()),
            PerfMode::DoubleRow | PerfMode::DoubleRowGen3 => Err(SimError::Unsupported {
                at,
                detail: format!("perf_mode={perf_mode} is not supported on this target"),
            }),
        }
    }

    pub(super) fn load_stationary(
        &mut self,
        cx: &mut Cx<'_>,
        src: &HwAp,
        perf_mode: PerfMode,
        tile: TileSize,
    ) -> Result<(), SimError> {
        self.check_perf_mode(cx.at, perf_mode)?;
        let rows_per_pass = if perf_mode == PerfMode::DoubleRow { 2 } else { 1 };
        let max_k = tile.rows.min(NUM_PARTITIONS) as usize * rows_per_pass;
        let max_m = tile.cols.min(MAX_STATIONARY_FREE) as usize;
        let limits = Limits { partitions: tile.rows.min(NUM_PARTITIONS) as usize, free: max_m * rows_per_pass };
        let (k, m) = self.pe_operand(cx, src, perf_mode, "stationary", limits)?;
        if k == 0 || m == 0 || k > max_k || m > max_m {
            return Err(SimError::MatmulShape {
                at: cx.at,
                detail: format!(
                    "stationary [K={k}, M={m}] does not fit the {}x{} PE tile (1 <= K <= {max_k}, 1 <= M <= {max_m})",
                    tile.rows, tile.cols
                ),
            });
        }
        let mut packed = reusable(&mut self.stationary);
        match self.decode.hit.take().and_then(|i| self.decode.get(i)) {
            Some(rows) => packed.share(k, m, rows),
            None => packed.hold(k, m, &mut self.scratch.f32_b),
        }
        self.stationary = Some(Stationary { perf_mode, sparse_cr: 1, packed: Arc::new(packed) });
        Ok(())
    }

    /// Load a compressed stationary `[K', M]` with its packed tags `[K', ceil(M / 4)]` and
    /// expand it to the dense `[K' x CR, M]` weights the following matmuls use (the layout of
    /// `penguin::MatMultSparseData`): `W[(k' / 4) * 4 CR + tag(k', j), j] += src[k', j]`,
    /// zeros elsewhere, `tag(k', j)` nibble `j % 4` of tag word `[k', j / 4]`. The moving
    /// operand `[K', CR, N]` that follows is read as its `K' x CR` dense rows.
    ///
    /// The pruned positions contribute `0 * moving`, so a NaN or infinity in the moving
    /// operand at a pruned position shows in the result.
    pub(super) fn load_stationary_sparse(
        &mut self,
        cx: &mut Cx<'_>,
        src: &HwAp,
        tags: &HwAp,
        pattern: SparsityPattern,
        tile: TileSize,
    ) -> Result<(), SimError> {
        let at = cx.at;
        if !pattern.is_supported() {
            return Err(SimError::Unsupported {
                at,
                detail: format!("structured sparsity {}:{} is not supported", pattern.n, pattern.m),
            });
        }
        if tags.dtype != DType::Int16 {
            return Err(SimError::BadOperand {
                at,
                detail: format!("sparsity tags must be int16 words, not {}", tags.dtype),
            });
        }
        let max_m = tile.cols.min(MAX_STATIONARY_FREE) as usize;
        let parts = tile.rows.min(NUM_PARTITIONS) as usize;
        let limits = Limits { partitions: parts, free: max_m };
        let (kc, m) = self.pe_operand(cx, src, PerfMode::None, "sparse stationary", limits)?;
        let values = std::mem::take(&mut self.scratch.f32_b);
        let per = SPARSE_TAGS_PER_WORD as usize;
        let tag_limits = Limits { partitions: parts, free: max_m.div_ceil(per) };
        let tag_shape = self.pe_operand(cx, tags, PerfMode::None, "tags", tag_limits);
        let tag_words = std::mem::replace(&mut self.scratch.f32_b, values);
        let (cr, group, kept) =
            (pattern.compression_ratio() as usize, pattern.group_rows() as usize, SPARSE_GROUP_KEPT as usize);
        let words = m.div_ceil(per);
        if tag_shape? != (kc, words) || kc == 0 || m == 0 || !kc.is_multiple_of(kept) {
            return Err(SimError::MatmulShape {
                at,
                detail: format!(
                    "sparse stationary [K'={kc}, M={m}] must have K' a multiple of {kept} (whole hardware groups) \
                     and tags of [K', {words}] int16 words (four 4-bit tags each)"
                ),
            });
        }
        let k = kc * cr;
        let Scratch { f32_b: values, f32_c: dense, .. } = &mut self.scratch;
        dense.clear();
        dense.resize(k * m, 0.0);
        for (kk, (vrow, trow)) in values.chunks_exact(m).zip(tag_words.chunks_exact(words)).enumerate() {
            // An int16 word decodes exactly; its 16 bits are the four tags.
            let bits: Vec<u16> = trow.iter().map(|&w| w as i16 as u16).collect();
            for (j, v) in vrow.iter().enumerate() {
                let t = usize::from(sparse_tag(&bits, j).unwrap_or(0));
                if t >= group {
                    return Err(SimError::BadOperand {
                        at,
                        detail: format!("sparsity tag {t} at [{kk}, {j}] is outside 0..{group} ({pattern}, CR {cr})"),
                    });
                }
                dense[((kk / kept) * group + t) * m + j] += v;
            }
        }
        let mut packed = reusable(&mut self.stationary);
        packed.hold(k, m, dense);
        self.stationary = Some(Stationary { perf_mode: PerfMode::None, sparse_cr: cr, packed: Arc::new(packed) });
        Ok(())
    }

    /// Check a PE result operand: fp32 in PSUM, 4-byte aligned.
    fn pe_result(at: InstRef, dst: &HwAp) -> Result<(), SimError> {
        if dst.memory != Memory::Psum || dst.dtype != DType::Fp32 {
            return Err(SimError::BadOperand {
                at,
                detail: format!("the PE result must be fp32 in psum, not {} in {}", dst.dtype, dst.memory),
            });
        }
        if !dst.byte_offset.is_multiple_of(4) {
            return Err(SimError::BadOperand {
                at,
                detail: format!("the PE result must be 4-byte aligned in psum, not at byte {}", dst.byte_offset),
            });
        }
        Ok(())
    }

    /// Fail unless the PE result `dst` (walked as `dw`) is `rows` partitions x `cols`
    /// elements; `expected` says what the shape should be.
    fn result_shape(
        at: InstRef,
        dst: &HwAp,
        dw: &Walk,
        (rows, cols): (usize, usize),
        expected: impl Fn() -> String,
    ) -> Result<(), SimError> {
        if dst.num_partitions as usize == rows && dw.elems == (rows * cols) as u64 {
            return Ok(());
        }
        Err(SimError::MatmulShape {
            at,
            detail: format!(
                "result has {} partitions x {} elements but {}",
                dst.num_partitions,
                dw.elems / u64::from(dst.num_partitions.max(1)),
                expected()
            ),
        })
    }

    pub(super) fn multiply_moving(
        &mut self,
        cx: &mut Cx<'_>,
        dst: &HwAp,
        src: &HwAp,
        acc: Acc,
        perf_mode: PerfMode,
    ) -> Result<(), SimError> {
        let at = cx.at;
        let (sk, m, st_mode, cr) = match &self.stationary {
            Some(s) => (s.packed.k, s.packed.m, s.perf_mode, s.sparse_cr.max(1)),
            None => return Err(SimError::NoStationary { at }),
        };
        if st_mode != perf_mode {
            return Err(SimError::MatmulShape {
                at,
                detail: format!("perf_mode={perf_mode} but the stationary was loaded with perf_mode={st_mode}"),
            });
        }
        Self::pe_result(at, dst)?;
        let rows_per_pass = if perf_mode == PerfMode::DoubleRow { 2 } else { cr };
        let limits = Limits { partitions: NUM_PARTITIONS as usize, free: MAX_MOVING_FREE as usize * rows_per_pass };
        let (p, f) = self.pe_operand(cx, src, perf_mode, "moving", limits)?;
        // After a sparse stationary the moving operand is `[K', CR, N]`: its row-major
        // decode is the `[K' x CR, N]` dense rows, partition `p` holding rows `p * CR ..`.
        if !f.is_multiple_of(cr) {
            return Err(SimError::MatmulShape {
                at,
                detail: format!("sparse moving has {f} elements per partition; it must be [K', CR={cr}, N]"),
            });
        }
        let (k, n) = (p * cr, f / cr);
        if k != sk || n == 0 {
            return Err(SimError::MatmulShape {
                at,
                detail: format!("moving [K={k}, N={n}] against stationary [K={sk}, M={m}] (K must match, N >= 1)"),
            });
        }
        let dw = self.walk(at, dst)?;
        Self::result_shape(at, dst, &dw, (m, n), || format!("the product is [M={m}, N={n}]"))?;
        cx.record(&dw, true);
        let start = acc.contains(Acc::START);
        let stop = acc.contains(Acc::STOP);
        if !start {
            for run in dw.runs() {
                if let Some(addr) = self.groups.first_closed(run) {
                    let (partition, byte) = psum_position(addr);
                    return Err(SimError::AccumulateWithoutStart { at, partition, byte, flags: acc.to_string() });
                }
            }
        }
        let Some(st) = &self.stationary else {
            return Err(SimError::NoStationary { at });
        };
        let hit = self.decode.hit.take().and_then(|i| self.decode.get(i));
        if let Some(deferred) = &mut self.deferred {
            // The moving operand is shared from the decode cache, or moved out of the
            // scratch rows (the next decode allocates new ones).
            let x = match hit {
                Some(data) => Arc::clone(data),
                None => Arc::new(std::mem::take(&mut self.scratch.f32_b)),
            };
            let psum = &mut self.images.psum;
            let link = Link { w: Arc::clone(&st.packed), x, n };
            deferred.submit(link, dw.clone(), (start, stop), &mut |dst, start, product| {
                write_product(psum, dst, start, product);
            });
        } else {
            let Scratch { f32_b: x, xpack, product, .. } = &mut self.scratch;
            // The moving operand is in the decode cache (no copy) or in the scratch rows.
            let x: &[f32] = match hit {
                Some(data) => data,
                None => x,
            };
            matmul_tn(&st.packed, n, x, xpack, product, false);
            write_product(&mut self.images.psum, &dw, start, product);
        }
        if start || stop {
            for run in dw.runs() {
                self.groups.set_run(run, 4, start && !stop);
            }
        }
        cx.stats.matmuls += 1;
        Ok(())
    }

    /// `dst[j, i] = src[i, j]` into PSUM fp32, exact (a pass through the PE with identity
    /// weights, which replaces the loaded stationary). It writes complete values: the words
    /// it touches are left closed, as after `START | STOP`.
    pub(super) fn transpose(&mut self, cx: &mut Cx<'_>, dst: &HwAp, src: &HwAp) -> Result<(), SimError> {
        let at = cx.at;
        // From trn2 on, a bf16/fp16 transpose may write its own dtype into PSUM (transpose mode).
        let sixteen = matches!(dst.dtype, DType::Bf16 | DType::Fp16) && dst.dtype == src.dtype;
        if sixteen && dst.memory == Memory::Psum {
            if !self.transpose16_ok {
                return Err(SimError::BadOperand {
                    at,
                    detail: format!("a {} PE transpose result needs trn2 or later (trn1 writes fp32)", dst.dtype),
                });
            }
        } else {
            Self::pe_result(at, dst)?;
        }
        let limits = Limits { partitions: NUM_PARTITIONS as usize, free: MAX_STATIONARY_FREE as usize };
        let (p, f) = self.pe_operand(cx, src, PerfMode::None, "transpose source", limits)?;
        let dw = self.walk(at, dst)?;
        Self::result_shape(at, dst, &dw, (f, p), || format!("the transpose of [{p}, {f}] is [{f}, {p}]"))?;
        cx.record(&dw, true);
        let Scratch { f32_b: rows, product, .. } = &mut self.scratch;
        product.resize(p * f, 0.0);
        transpose_into(rows, p, f, product);
        let mut pos = 0;
        let size = dw.elem_size();
        for run in dw.runs() {
            encode_run(dw.dtype, CastMode::Rne, &product[pos..pos + run.len], &mut self.images.psum, run);
            self.groups.set_run(run, size, false);
            pos += run.len;
        }
        self.stationary = None;
        Ok(())
    }
}

/// `out[j * p + i] = rows[i * f + j]` for a row-major `[p, f]` matrix, in square blocks so
/// that both sides stay within a few cache lines (element by element, every write went to
/// another line).
fn transpose_into(rows: &[f32], p: usize, f: usize, out: &mut [f32]) {
    const BLOCK: usize = 16;
    if rows.len() < p * f || out.len() < p * f {
        return;
    }
    for i0 in (0..p).step_by(BLOCK) {
        let i1 = (i0 + BLOCK).min(p);
        for j0 in (0..f).step_by(BLOCK) {
            for j in j0..(j0 + BLOCK).min(f) {
                let dst = &mut out[j * p + i0..j * p + i1];
                for (d, i) in dst.iter_mut().zip(i0..i1) {
                    *d = rows[i * f + j];
                }
            }
        }
    }
}

/// The stationary buffer to load into: the current one when no pending product still uses
/// it, else a new one.
fn reusable(stationary: &mut Option<Stationary>) -> PackedStationary {
    stationary.take().and_then(|s| Arc::try_unwrap(s.packed).ok()).unwrap_or_default()
}

impl Groups {
    /// The first element of a run of 4-byte aligned fp32 elements whose word is not open.
    pub(super) fn first_closed(&self, run: crate::convert::Run) -> Option<usize> {
        if run.contiguous(4) {
            let w0 = Self::word(run.start as usize);
            let words = &self.open[w0..w0 + run.len];
            // A reduction without early exit vectorises; the search runs only on error.
            if words.iter().fold(true, |all, &o| all & o) {
                return None;
            }
            let j = words.iter().position(|&o| !o)?;
            return Some(run.at(j));
        }
        (0..run.len).map(|j| run.at(j)).find(|&a| !self.open[Self::word(a)])
    }
}

#[cfg(test)]
mod tests {
    use super::transpose_into;

    /// Every shape, square or not, smaller or larger than a block: element by element.
    #[test]
    fn blocked_transpose_moves_every_element() {
        for (p, f) in [(1, 1), (3, 17), (16, 16), (33, 128), (128, 128), (128, 5)] {
            let rows: Vec<f32> = (0..p * f).map(|x| x as f32).collect();
            let mut out = vec![f32::NAN; p * f];
            transpose_into(&rows, p, f, &mut out);
            for i in 0..p {
                for j in 0..f {
                    assert_eq!(out[j * p + i].to_bits(), rows[i * f + j].to_bits(), "[{p}, {f}] at {i}, {j}");
                }
            }
        }
    }
}
