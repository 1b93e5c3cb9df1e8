//! The reduction across partitions (`nki.isa.tensor_partition_reduce`, on GpSimd).

use bir::HwAp;
use penguin::{AluClass, AluOp};

use super::{Cx, Machine};
use crate::alu::{binary, bits};
use crate::error::SimError;

impl Machine {
    /// `dst[0, i] = op over src[p, i]`, partition 0 first: fp32 for arithmetic operators,
    /// bit patterns of the source's width for bitvec ones.
    pub(super) fn tensor_partition_reduce(
        &mut self,
        cx: &mut Cx<'_>,
        op: AluOp,
        dst: &HwAp,
        src: &HwAp,
    ) -> Result<(), SimError> {
        let (at, dw) = (cx.at, self.walk(cx.at, dst)?);
        let parts = src.num_partitions.max(1) as usize;
        let dst_elems = dw.elems;
        let bad = |n: u64| SimError::BadOperand {
            at,
            detail: format!("tensor_partition_reduce of {parts} partitions of {n} elements into {dst_elems}"),
        };
        if op.class() == AluClass::Bitvec {
            let (sw, x) = self.read_bits(cx, src)?;
            let per = x.len() / parts;
            if dw.elems as usize != per {
                return Err(bad(per as u64));
            }
            let w = sw.dtype.size_bytes() * 8;
            let mut out = x[..per].to_vec();
            for row in x.chunks(per).skip(1) {
                for (o, &v) in out.iter_mut().zip(row) {
                    *o = bits(op, *o, v, w);
                }
            }
            self.write_bits(cx, &dw, &out);
        } else {
            let (_, x) = self.read_f32(cx, src)?;
            let per = x.len() / parts;
            if dw.elems as usize != per {
                return Err(bad(per as u64));
            }
            let mut out = x[..per].to_vec();
            for row in x.chunks(per).skip(1) {
                for (o, &v) in out.iter_mut().zip(row) {
                    *o = binary(op, *o, v);
                }
            }
            self.write_f32(cx, &dw, &out);
        }
        Ok(())
    }
}
