//! The compute-engine instructions real kernels use: activation, tensor_scalar,
//! tensor_reduce, affine_select, iota, bn_stats, bn_aggr, and tensor_tensor's bitvec and
//! exact-int32 paths (its fp32 path is `dataflow.rs`'s chunked elementwise kernel).
//!
//! Each reads its operands whole, in enumeration order (element `k` of a `[P, F]` operand is
//! partition `k / F`), computes in fp32 (bit patterns for bitvec operators, int32 for
//! `iota`'s and `affine_select`'s affine values) and rounds once to the destination's dtype
//! (RNE). Reductions run left to right within a partition, in fp32.

use bir::HwAp;
use penguin::{ActFunc, AffinePattern, AluClass, AluOp, CastMode, DType, ScalarOperand, ShuffleMask, SHUFFLE_QUADRANT};

use super::{Cx, Machine};
use crate::alu::{activate, binary, bits};
use crate::convert::{decode_run, encode_run, memset_bits};
use crate::error::SimError;
use crate::memory::Walk;

/// The bit width of an element of `dtype`.
fn width(dtype: DType) -> u32 {
    dtype.size_bytes() * 8
}

/// The value of an affine pattern at free element `k` of partition `p`, in int32 (wrapping).
fn affine_value(offset: i32, multiplier: i32, pattern: &AffinePattern, p: u32, k: u64) -> i32 {
    let mut v = offset.wrapping_add(multiplier.wrapping_mul(p as i32));
    let mut rest = k;
    for d in pattern.0.iter().rev() {
        let n = u64::from(d.num.max(1));
        let i = (rest % n) as i32;
        rest /= n;
        v = v.wrapping_add(d.step.wrapping_mul(i));
    }
    v
}

impl Machine {
    /// Every element of a read operand, decoded to fp32, after the PSUM and race checks.
    pub(super) fn read_f32(&mut self, cx: &mut Cx<'_>, ap: &HwAp) -> Result<(Walk, Vec<f32>), SimError> {
        let w = self.walk(cx.at, ap)?;
        self.check_closed(cx.at, &w)?;
        cx.record(&w, false);
        let mut out = vec![0f32; w.elems as usize];
        let mut at = 0;
        let mem = self.images.get(w.memory);
        for run in w.runs() {
            decode_run(w.dtype, mem, run, &mut out[at..at + run.len]);
            at += run.len;
        }
        Ok((w, out))
    }

    /// Every element of a read operand as its bit pattern.
    pub(super) fn read_bits(&mut self, cx: &mut Cx<'_>, ap: &HwAp) -> Result<(Walk, Vec<u32>), SimError> {
        let w = self.walk(cx.at, ap)?;
        self.check_closed(cx.at, &w)?;
        cx.record(&w, false);
        let (mem, size) = (self.images.get(w.memory), w.elem_size());
        let mut out = Vec::with_capacity(w.elems as usize);
        for run in w.runs() {
            for j in 0..run.len {
                let a = run.at(j);
                out.push(w.dtype.load_bits(&mem[a..a + size]));
            }
        }
        Ok((w, out))
    }

    /// The walk of a written operand with `elems` elements (the race check is at the write).
    fn dst_walk(&self, cx: &Cx<'_>, ap: &HwAp, elems: u64) -> Result<Walk, SimError> {
        let w = self.walk(cx.at, ap)?;
        if w.elems != elems {
            return Err(SimError::CopyShape { at: cx.at, dst: w.elems, src: elems });
        }
        Ok(w)
    }

    /// Write fp32 values (one per element, in enumeration order), rounded once (RNE).
    pub(super) fn write_f32(&mut self, cx: &mut Cx<'_>, w: &Walk, values: &[f32]) {
        cx.record(w, true);
        let mem = self.images.get_mut(w.memory);
        let mut at = 0;
        for run in w.runs() {
            encode_run(w.dtype, CastMode::Rne, &values[at..at + run.len], mem, run);
            at += run.len;
        }
        self.close_written(w);
    }

    /// Write bit patterns (one per element, in enumeration order).
    pub(super) fn write_bits(&mut self, cx: &mut Cx<'_>, w: &Walk, values: &[u32]) {
        cx.record(w, true);
        let (size, dtype) = (w.elem_size(), w.dtype);
        let mem = self.images.get_mut(w.memory);
        let mut at = 0;
        for run in w.runs() {
            for j in 0..run.len {
                let a = run.at(j);
                dtype.store_bits(values[at + j], &mut mem[a..a + size]);
            }
            at += run.len;
        }
        self.close_written(w);
    }

    /// One fp32 value per partition of a scalar operand (an immediate, rounded to fp32).
    fn scalar_f32(&mut self, cx: &mut Cx<'_>, s: &ScalarOperand<HwAp>, parts: u32) -> Result<Vec<f32>, SimError> {
        match s {
            ScalarOperand::Imm(v) => Ok(vec![*v as f32; parts as usize]),
            ScalarOperand::Tile(ap) => {
                let (_, v) = self.read_f32(cx, ap)?;
                self.column(cx, v, parts)
            }
        }
    }

    /// One bit pattern per partition of a scalar operand (an immediate as an integer).
    fn scalar_bits(&mut self, cx: &mut Cx<'_>, s: &ScalarOperand<HwAp>, parts: u32) -> Result<Vec<u32>, SimError> {
        match s {
            ScalarOperand::Imm(v) => Ok(vec![*v as i64 as u32; parts as usize]),
            ScalarOperand::Tile(ap) => {
                let (_, v) = self.read_bits(cx, ap)?;
                self.column(cx, v, parts)
            }
        }
    }

    fn column<T>(&self, cx: &Cx<'_>, v: Vec<T>, parts: u32) -> Result<Vec<T>, SimError> {
        if v.len() != parts as usize {
            return Err(SimError::BadOperand {
                at: cx.at,
                detail: format!("a [P, 1] column of {parts} partitions has {} elements", v.len()),
            });
        }
        Ok(v)
    }

    /// `dst = func(src * scale + bias)`, and each partition's sum into `reduce`.
    #[expect(clippy::too_many_arguments, reason = "the activation's operands, as the op holds them")]
    pub(super) fn activation(
        &mut self,
        cx: &mut Cx<'_>,
        func: ActFunc,
        dst: &HwAp,
        src: &HwAp,
        scale: &ScalarOperand<HwAp>,
        bias: &ScalarOperand<HwAp>,
        reduce: Option<&HwAp>,
    ) -> Result<(), SimError> {
        let parts = src.num_partitions.max(1);
        let (sw, mut x) = self.read_f32(cx, src)?;
        let per = sw.elems / u64::from(parts);
        let (scale, bias) = (self.scalar_f32(cx, scale, parts)?, self.scalar_f32(cx, bias, parts)?);
        let range = func.valid_range();
        let mut sums = vec![0f32; parts as usize];
        for (k, v) in x.iter_mut().enumerate() {
            let p = (k as u64 / per.max(1)) as usize;
            let input = v.mul_add(scale[p], bias[p]);
            if let Some(r) = range {
                if !r.contains(f64::from(input)) {
                    return Err(SimError::BadOperand {
                        at: cx.at,
                        detail: format!(
                            "activation {func} input {input} at element {k} is outside its valid range {r}: the Scalar Engine gives invalid output there (NKI ISA, Supported Activation Functions)"
                        ),
                    });
                }
            }
            *v = activate(func, input);
            sums[p] += *v;
        }
        let dw = self.dst_walk(cx, dst, sw.elems)?;
        if let Some(r) = reduce {
            let rw = self.dst_walk(cx, r, u64::from(parts))?;
            self.write_f32(cx, &rw, &sums);
        }
        self.write_f32(cx, &dw, &x);
        Ok(())
    }

    /// `dst = (src op0 operand0) op1 operand1`, swapped by `reverse0` / `reverse1`.
    #[expect(clippy::too_many_arguments, reason = "the tensor_scalar's operands, as the op holds them")]
    pub(super) fn tensor_scalar(
        &mut self,
        cx: &mut Cx<'_>,
        (op0, reverse0): (AluOp, bool),
        (op1, reverse1): (Option<AluOp>, bool),
        dst: &HwAp,
        src: &HwAp,
        operand0: &ScalarOperand<HwAp>,
        operand1: &ScalarOperand<HwAp>,
    ) -> Result<(), SimError> {
        let parts = src.num_partitions.max(1);
        let ops = [(op0, reverse0, operand0)].into_iter().chain(op1.map(|op| (op, reverse1, operand1)));
        let ops: Vec<(AluOp, bool, &ScalarOperand<HwAp>)> = ops.collect();
        if op0.class() == AluClass::Bitvec {
            let (sw, mut x) = self.read_bits(cx, src)?;
            let per = (sw.elems / u64::from(parts)).max(1);
            let w = width(sw.dtype);
            for (op, reverse, operand) in ops {
                let s = self.scalar_bits(cx, operand, parts)?;
                for (k, v) in x.iter_mut().enumerate() {
                    let c = s[(k as u64 / per) as usize];
                    *v = if reverse { bits(op, c, *v, w) } else { bits(op, *v, c, w) };
                }
            }
            let dw = self.dst_walk(cx, dst, sw.elems)?;
            self.write_bits(cx, &dw, &x);
            return Ok(());
        }
        let (sw, mut x) = self.read_f32(cx, src)?;
        let per = (sw.elems / u64::from(parts)).max(1);
        for (op, reverse, operand) in ops {
            let s = self.scalar_f32(cx, operand, parts)?;
            for (k, v) in x.iter_mut().enumerate() {
                let c = s[(k as u64 / per) as usize];
                *v = if reverse && op.class() != AluClass::Unary { binary(op, c, *v) } else { binary(op, *v, c) };
            }
        }
        let dw = self.dst_walk(cx, dst, sw.elems)?;
        self.write_f32(cx, &dw, &x);
        Ok(())
    }

    /// The scan of `nki.isa.tensor_tensor_scan` along each partition's elements:
    /// `x = initial`, then `x = op1(op0(data0[i], x), data1[i])` in fp32, rounded to the
    /// destination's dtype (the value the next step reads back), and `dst[i] = x`.
    pub(super) fn tensor_tensor_scan(
        &mut self,
        cx: &mut Cx<'_>,
        (op0, op1): (AluOp, AluOp),
        dst: &HwAp,
        data0: &HwAp,
        data1: &HwAp,
        initial: &ScalarOperand<HwAp>,
    ) -> Result<(), SimError> {
        let parts = dst.num_partitions.max(1);
        let (aw, a) = self.read_f32(cx, data0)?;
        let (bw, b) = self.read_f32(cx, data1)?;
        if bw.elems != aw.elems {
            return Err(SimError::CopyShape { at: cx.at, dst: aw.elems, src: bw.elems });
        }
        let init = self.scalar_f32(cx, initial, parts)?;
        let dw = self.dst_walk(cx, dst, aw.elems)?;
        let per = usize::try_from(aw.elems / u64::from(parts)).unwrap_or(0).max(1);
        let mut out = vec![0f32; a.len()];
        let mut cell = [0u8; 4];
        let size = dw.dtype.size_bytes();
        let one = crate::convert::Run { start: 0, len: 1, step: i64::from(size) };
        for (p, &x0) in init.iter().enumerate() {
            let mut x = x0;
            for k in p * per..((p + 1) * per).min(a.len()) {
                let v = binary(op1, binary(op0, a[k], x), b[k]);
                // Round through the destination's dtype: the next step reads the stored value.
                let mut r = [v];
                if dw.dtype != DType::Fp32 {
                    encode_run(dw.dtype, CastMode::Rne, &[v], &mut cell, one);
                    decode_run(dw.dtype, &cell, one, &mut r);
                }
                x = r[0];
                out[k] = x;
            }
        }
        self.write_f32(cx, &dw, &out);
        Ok(())
    }

    /// `nki.isa.tensor_copy_predicated`: `src` (bit for bit, or an immediate in `dst`'s dtype)
    /// into the elements of `dst` whose predicate is nonzero (zero with `reverse`).
    pub(super) fn tensor_copy_predicated(
        &mut self,
        cx: &mut Cx<'_>,
        reverse: bool,
        dst: &HwAp,
        predicate: &HwAp,
        src: &ScalarOperand<HwAp>,
    ) -> Result<(), SimError> {
        let (pw, pred) = self.read_bits(cx, predicate)?;
        let (dw, mut out) = self.read_bits(cx, dst)?;
        if dw.elems != pw.elems {
            return Err(SimError::CopyShape { at: cx.at, dst: dw.elems, src: pw.elems });
        }
        let from: Vec<u32> = match src {
            ScalarOperand::Imm(v) => vec![memset_bits(dw.dtype, *v)],
            ScalarOperand::Tile(ap) => {
                let (sw, bits) = self.read_bits(cx, ap)?;
                if sw.elems != dw.elems {
                    return Err(SimError::CopyShape { at: cx.at, dst: dw.elems, src: sw.elems });
                }
                bits
            }
        };
        for (k, (o, &p)) in out.iter_mut().zip(&pred).enumerate() {
            if (p != 0) != reverse {
                *o = if from.len() == 1 { from[0] } else { from[k] };
            }
        }
        let dw = self.dst_walk(cx, dst, pw.elems)?;
        self.write_bits(cx, &dw, &out);
        Ok(())
    }

    /// `nki.isa.tensor_scalar_cumulative`: per partition an fp32 register from `initial`,
    /// `reg = op1(op0(src[i], operand0), reg)` (operands of `op0` swapped with `reverse0`),
    /// `dst[i] = reg` rounded once to `dst`'s dtype.
    pub(super) fn tensor_scalar_cumulative(
        &mut self,
        cx: &mut Cx<'_>,
        (op0, op1, reverse0): (AluOp, AluOp, bool),
        dst: &HwAp,
        src: &HwAp,
        operand0: &ScalarOperand<HwAp>,
        initial: &ScalarOperand<HwAp>,
    ) -> Result<(), SimError> {
        let parts = src.num_partitions.max(1);
        let (sw, mut x) = self.read_f32(cx, src)?;
        let s = self.scalar_f32(cx, operand0, parts)?;
        let init = self.scalar_f32(cx, initial, parts)?;
        let per = usize::try_from(sw.elems / u64::from(parts)).unwrap_or(0).max(1);
        for (p, row) in x.chunks_mut(per).enumerate() {
            let (c, mut reg) = (s[p], init[p]);
            for v in row {
                let a = if reverse0 { binary(op0, c, *v) } else { binary(op0, *v, c) };
                reg = binary(op1, a, reg);
                *v = reg;
            }
        }
        let dw = self.dst_walk(cx, dst, sw.elems)?;
        self.write_f32(cx, &dw, &x);
        Ok(())
    }

    /// `nki.isa.nc_stream_shuffle`: destination partition `q * 32 + i` takes source partition
    /// `q * 32 + mask[i]`, bit for bit, or keeps its values.
    pub(super) fn stream_shuffle(
        &mut self,
        cx: &mut Cx<'_>,
        mask: &ShuffleMask,
        dst: &HwAp,
        src: &HwAp,
    ) -> Result<(), SimError> {
        let (sw, from) = self.read_bits(cx, src)?;
        let (dw, mut out) = self.read_bits(cx, dst)?;
        let (sp, dp) = (src.num_partitions.max(1) as usize, dst.num_partitions.max(1) as usize);
        let row = out.len() / dp;
        if sw.elems as usize / sp != row {
            return Err(SimError::CopyShape { at: cx.at, dst: dw.elems, src: sw.elems });
        }
        for j in 0..dp {
            if let Some(m) = mask.source(j) {
                let s = (j / SHUFFLE_QUADRANT) * SHUFFLE_QUADRANT + m;
                if s >= sp {
                    return Err(SimError::CopyShape { at: cx.at, dst: dw.elems, src: sw.elems });
                }
                out[j * row..(j + 1) * row].copy_from_slice(&from[s * row..(s + 1) * row]);
            }
        }
        self.write_bits(cx, &dw, &out);
        Ok(())
    }

    /// `dst[j] = op over src[j * r .. (j + 1) * r]` left to right, `r = src / dst` elements.
    pub(super) fn tensor_reduce(
        &mut self,
        cx: &mut Cx<'_>,
        op: AluOp,
        negate: bool,
        dst: &HwAp,
        src: &HwAp,
    ) -> Result<(), SimError> {
        let dw = self.walk(cx.at, dst)?;
        let sw = self.walk(cx.at, src)?;
        if dw.elems == 0 || !sw.elems.is_multiple_of(dw.elems) {
            return Err(SimError::BadOperand {
                at: cx.at,
                detail: format!("tensor_reduce of {} elements into {}", sw.elems, dw.elems),
            });
        }
        let r = (sw.elems / dw.elems) as usize;
        if op.class() == AluClass::Bitvec {
            let (_, x) = self.read_bits(cx, src)?;
            let w = width(sw.dtype);
            let out: Vec<u32> = x.chunks(r).map(|c| c[1..].iter().fold(c[0], |a, &b| bits(op, a, b, w))).collect();
            self.write_bits(cx, &dw, &out);
        } else {
            let (_, x) = self.read_f32(cx, src)?;
            let out: Vec<f32> = x
                .chunks(r)
                .map(|c| {
                    let v = c[1..].iter().fold(c[0], |a, &b| binary(op, a, b));
                    if negate {
                        -v
                    } else {
                        v
                    }
                })
                .collect();
            self.write_f32(cx, &dw, &out);
        }
        Ok(())
    }

    /// `dst = affine cmp 0 ? src : value`.
    pub(super) fn affine_select(
        &mut self,
        cx: &mut Cx<'_>,
        cmp: AluOp,
        (offset, multiplier, pattern): (i32, i32, &AffinePattern),
        value: f64,
        dst: &HwAp,
        src: &HwAp,
    ) -> Result<(), SimError> {
        let parts = src.num_partitions.max(1);
        let (sw, x) = self.read_bits(cx, src)?;
        let dw = self.dst_walk(cx, dst, sw.elems)?;
        let per = (sw.elems / u64::from(parts)).max(1);
        let on_false = memset_bits(dw.dtype, f64::from(value as f32));
        let same = sw.dtype == dw.dtype;
        let out: Vec<u32> = x
            .iter()
            .enumerate()
            .map(|(k, &b)| {
                let (p, f) = ((k as u64 / per) as u32, k as u64 % per);
                let v = affine_value(offset, multiplier, pattern, p, f);
                if int_cmp(cmp, v) {
                    if same {
                        b
                    } else {
                        dw.dtype.encode(sw.dtype.decode(b), CastMode::Rne)
                    }
                } else {
                    on_false
                }
            })
            .collect();
        self.write_bits(cx, &dw, &out);
        Ok(())
    }

    /// `dst = offset + multiplier * p + pattern . i` in int32, converted to dst's dtype.
    pub(super) fn iota(
        &mut self,
        cx: &mut Cx<'_>,
        (offset, multiplier, pattern): (i32, i32, &AffinePattern),
        dst: &HwAp,
    ) -> Result<(), SimError> {
        let dw = self.walk(cx.at, dst)?;
        let parts = dst.num_partitions.max(1);
        let per = (dw.elems / u64::from(parts)).max(1);
        let out: Vec<u32> = (0..dw.elems)
            .map(|k| {
                let v = affine_value(offset, multiplier, pattern, (k / per) as u32, k % per);
                memset_bits(dw.dtype, f64::from(v))
            })
            .collect();
        self.write_bits(cx, &dw, &out);
        Ok(())
    }

    /// `[count, mean, variance * count]` of the even elements, then of the odd ones.
    pub(super) fn bn_stats(&mut self, cx: &mut Cx<'_>, dst: &HwAp, src: &HwAp) -> Result<(), SimError> {
        let parts = src.num_partitions.max(1);
        let (sw, x) = self.read_f32(cx, src)?;
        let dw = self.dst_walk(cx, dst, 6 * u64::from(parts))?;
        let per = (sw.elems / u64::from(parts)) as usize;
        let mut out = Vec::with_capacity(6 * parts as usize);
        for row in x.chunks(per.max(1)).take(parts as usize) {
            for start in [0, 1] {
                let half: Vec<f32> = row.iter().skip(start).step_by(2).copied().collect();
                let n = half.len() as f32;
                let mean = if half.is_empty() { 0.0 } else { half.iter().fold(0f32, |a, &b| a + b) / n };
                let m2 = half.iter().fold(0f32, |a, &b| a + (b - mean) * (b - mean));
                out.extend([n, mean, m2]);
            }
        }
        self.write_f32(cx, &dw, &out);
        Ok(())
    }

    /// The mean and variance of each partition from `(count, mean, variance * count)` triples.
    pub(super) fn bn_aggr(&mut self, cx: &mut Cx<'_>, dst: &HwAp, src: &HwAp) -> Result<(), SimError> {
        let parts = src.num_partitions.max(1);
        let (sw, x) = self.read_f32(cx, src)?;
        let dw = self.dst_walk(cx, dst, 2 * u64::from(parts))?;
        let per = (sw.elems / u64::from(parts)) as usize;
        if per == 0 || !per.is_multiple_of(3) {
            return Err(SimError::BadOperand {
                at: cx.at,
                detail: format!("bn_aggr reads triples, not {per} elements per partition"),
            });
        }
        let mut out = Vec::with_capacity(2 * parts as usize);
        for row in x.chunks(per) {
            let n = row.chunks(3).fold(0f32, |a, t| a + t[0]);
            let mean = if n == 0.0 { 0.0 } else { row.chunks(3).fold(0f32, |a, t| a + t[0] * t[1]) / n };
            let m2 = row.chunks(3).fold(0f32, |a, t| a + t[2] + t[0] * (t[1] - mean) * (t[1] - mean));
            out.extend([mean, if n == 0.0 { 0.0 } else { m2 / n }]);
        }
        self.write_f32(cx, &dw, &out);
        Ok(())
    }

    /// `tensor_tensor` on bit patterns: a bitvec operator, or GpSimd's exact int32 add,
    /// subtract and multiply.
    pub(super) fn tensor_tensor_bits(
        &mut self,
        cx: &mut Cx<'_>,
        op: AluOp,
        dst: &HwAp,
        lhs: &HwAp,
        rhs: &HwAp,
    ) -> Result<(), SimError> {
        let (lw, a) = self.read_bits(cx, lhs)?;
        let (rw, b) = self.read_bits(cx, rhs)?;
        if rw.elems != lw.elems {
            return Err(SimError::CopyShape { at: cx.at, dst: lw.elems, src: rw.elems });
        }
        let dw = self.dst_walk(cx, dst, lw.elems)?;
        let w = width(dw.dtype);
        let out: Vec<u32> = a.iter().zip(&b).map(|(&x, &y)| bits(op, x, y, w)).collect();
        self.write_bits(cx, &dw, &out);
        Ok(())
    }
}

/// The comparison of an int32 affine value with 0, exactly.
fn int_cmp(cmp: AluOp, v: i32) -> bool {
    match cmp {
        AluOp::IsEqual => v == 0,
        AluOp::NotEqual => v != 0,
        AluOp::IsGt => v > 0,
        AluOp::IsGe => v >= 0,
        AluOp::IsLt => v < 0,
        AluOp::IsLe => v <= 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use penguin::AffineDim;

    #[test]
    fn affine_values_walk_the_pattern_row_major() {
        let p = AffinePattern(vec![AffineDim { step: 10, num: 2 }, AffineDim { step: -1, num: 3 }]);
        let v: Vec<i32> = (0..6).map(|k| affine_value(100, 1000, &p, 2, k)).collect();
        assert_eq!(v, [2100, 2099, 2098, 2110, 2109, 2108]);
        assert_eq!(affine_value(i32::MAX, 0, &p, 0, 3), i32::MIN.wrapping_add(9));
    }
}
