//! Building the ops of one routed instruction (`LowerCx::build`): each Penguin kind's BIR
//! ops, with their hardware access patterns, on the engines `LowerCx::route` chose.

use penguin::{FunctionView, InstData, InstId, InstTile, PerfMode, Target};

use super::matmul::codegen_mat_mul_op;
use super::{spread, LowerCx};
use crate::error::BirError;
use crate::program::{Engine, Op};

impl<F: FunctionView + ?Sized> LowerCx<'_, F> {
    /// The ops of one instruction, in the order of its groups from [`Self::route`]; `engine`
    /// is its first group's (the engine of every op but an offloaded op's pieces).
    pub(super) fn build(&self, id: InstId, inst: &InstData, engine: Engine, out: &mut Vec<Op>) -> Result<(), BirError> {
        match inst {
            InstData::MatMult(m) => out.extend(codegen_mat_mul_op(self, id, m)?),
            InstData::MatMultSparse(m) => {
                let pe = Engine::Pe;
                let ls = Op::LoadStationarySparse {
                    src: self.hw_ap(id, pe, &m.stationary)?,
                    tags: self.hw_ap(id, pe, &m.tags)?,
                    pattern: m.pattern,
                    tile_position: m.tile_position,
                    tile_size: m.tile_size,
                };
                let mm = Op::MultiplyMoving {
                    dst: self.hw_ap(id, pe, &m.dst)?,
                    src: self.hw_ap(id, pe, &m.moving)?,
                    acc: m.flags(),
                    perf_mode: PerfMode::None,
                    tile_position: m.tile_position,
                    tile_size: m.tile_size,
                };
                out.extend([ls, mm]);
            }
            InstData::Transpose(t) => {
                if t.dst.dtype != penguin::DType::Fp32 && self.target == Target::Trn1 {
                    return Err(BirError::Unsupported(format!(
                        "{id}: a PE transpose writes {} into PSUM from trn2 on (NeuronCore-v3 transpose mode); on trn1 its result is fp32",
                        t.dst.dtype
                    )));
                }
                out.push(Op::Transpose {
                    dst: self.hw_ap(id, Engine::Pe, &t.dst)?,
                    src: self.hw_ap(id, Engine::Pe, &t.src)?,
                });
            }
            InstData::DmaCopy(d) => out.push(Op::DmaCopy {
                dst: self.hw_ap(id, engine, &d.dst)?,
                src: self.hw_ap(id, engine, &d.src)?,
                cast: d.cast,
            }),
            InstData::TensorCopy(c) => {
                let (dst, src) = (self.hw_ap(id, engine, &c.dst)?, self.hw_ap(id, engine, &c.src)?);
                out.push(Op::TensorCopy { dst, src });
            }
            InstData::TensorTensor(t) => out.push(Op::TensorTensor {
                op: t.op,
                dst: self.hw_ap(id, engine, &t.dst)?,
                lhs: self.hw_ap(id, engine, &t.lhs)?,
                rhs: self.hw_ap(id, engine, &t.rhs)?,
            }),
            InstData::Memset(m) => out.push(Op::Memset { dst: self.hw_ap(id, engine, &m.dst)?, value: m.value }),
            InstData::TiledOffloadedFma(f) => spread::codegen_tiled_offloaded_fma(self, id, f, out)?,
            InstData::OffloadedFma(f) => spread::codegen_offloaded_fma(self, id, f, out)?,
            InstData::TiledOffloadedMemCpy(c) => spread::codegen_tiled_offloaded_mem_cpy(self, id, c, out)?,
            InstData::OffloadedMemCpy(c) => spread::codegen_offloaded_mem_cpy(self, id, c, out)?,
            InstData::OffloadedMemCast(c) => spread::codegen_offloaded_mem_cast(self, id, c, out)?,
            InstData::DmaGather(g) => out.push(Op::DmaGather {
                dst: self.hw_ap(id, engine, &g.dst)?,
                table: self.hw_ap(id, engine, &g.table)?,
                index: self.hw_ap(id, engine, &g.index)?,
                skip: g.skip,
            }),
            InstData::DmaScatter(sc) => out.push(Op::DmaScatter {
                table: self.hw_ap(id, engine, &sc.table)?,
                src: self.hw_ap(id, engine, &sc.src)?,
                index: self.hw_ap(id, engine, &sc.index)?,
                skip: sc.skip,
            }),
            InstData::DmaScatterAdd(sc) => out.push(Op::DmaScatterAdd {
                table: self.hw_ap(id, engine, &sc.table)?,
                src: self.hw_ap(id, engine, &sc.src)?,
                index: self.hw_ap(id, engine, &sc.index)?,
                skip: sc.skip,
            }),
            InstData::Activation(a) => {
                if self.target == Target::Trn1 && !a.bias.is_imm(0.0) && a.bias.tile().is_none() {
                    return Err(BirError::Unsupported(format!(
                        "{id}: an activation bias on trn1 must be a [P, 1] column (an immediate bias needs trn2 or later, NeuronCore-v3)"
                    )));
                }
                let ap = |t: &InstTile| self.hw_ap(id, engine, t);
                out.push(Op::Activation {
                    func: a.func,
                    dst: ap(&a.dst)?,
                    src: ap(&a.src)?,
                    scale: a.scale.try_map(ap)?,
                    bias: a.bias.try_map(ap)?,
                    reduce: a.reduce.as_ref().map(ap).transpose()?,
                });
            }
            InstData::TensorScalar(t) => {
                let ap = |x: &InstTile| self.hw_ap(id, engine, x);
                out.push(Op::TensorScalar {
                    op0: t.op0,
                    reverse0: t.reverse0,
                    op1: t.op1,
                    reverse1: t.reverse1,
                    dst: ap(&t.dst)?,
                    src: ap(&t.src)?,
                    operand0: t.operand0.try_map(ap)?,
                    operand1: t.operand1.try_map(ap)?,
                });
            }
            InstData::TensorTensorScan(t) => {
                let ap = |x: &InstTile| self.hw_ap(id, engine, x);
                out.push(Op::TensorTensorScan {
                    op0: t.op0,
                    op1: t.op1,
                    dst: ap(&t.dst)?,
                    data0: ap(&t.data0)?,
                    data1: ap(&t.data1)?,
                    initial: t.initial.try_map(ap)?,
                });
            }
            InstData::TensorScalarCumulative(t) => {
                let ap = |x: &InstTile| self.hw_ap(id, engine, x);
                out.push(Op::TensorScalarCumulative {
                    op0: t.op0,
                    op1: t.op1,
                    reverse0: t.reverse0,
                    dst: ap(&t.dst)?,
                    src: ap(&t.src)?,
                    operand0: t.operand0.try_map(ap)?,
                    initial: t.initial.try_map(ap)?,
                });
            }
            InstData::Top8(t) => {
                let ap = |x: &InstTile| self.hw_ap(id, engine, x);
                out.push(Op::Top8 {
                    mode: t.mode,
                    value: t.value,
                    dst: ap(&t.dst)?,
                    src: ap(&t.src)?,
                    vals: t.vals.as_ref().map(ap).transpose()?,
                    idx: t.idx.as_ref().map(ap).transpose()?,
                });
            }
            InstData::StreamShuffle(s) => {
                let ap = |x: &InstTile| self.hw_ap(id, engine, x);
                out.push(Op::StreamShuffle { mask: s.mask, dst: ap(&s.dst)?, src: ap(&s.src)? });
            }
            InstData::TensorCopyPredicated(c) => {
                let ap = |x: &InstTile| self.hw_ap(id, engine, x);
                out.push(Op::TensorCopyPredicated {
                    reverse: c.reverse,
                    dst: ap(&c.dst)?,
                    predicate: ap(&c.predicate)?,
                    src: c.src.try_map(ap)?,
                });
            }
            InstData::TensorPartitionReduce(r) => out.push(Op::TensorPartitionReduce {
                op: r.op,
                dst: self.hw_ap(id, engine, &r.dst)?,
                src: self.hw_ap(id, engine, &r.src)?,
            }),
            InstData::TensorReduce(r) => out.push(Op::TensorReduce {
                op: r.op,
                negate: r.negate,
                dst: self.hw_ap(id, engine, &r.dst)?,
                src: self.hw_ap(id, engine, &r.src)?,
            }),
            InstData::AffineSelect(a) => out.push(Op::AffineSelect {
                cmp: a.cmp,
                offset: a.offset,
                channel_multiplier: a.channel_multiplier,
                pattern: a.pattern.clone(),
                value: a.value,
                dst: self.hw_ap(id, engine, &a.dst)?,
                src: self.hw_ap(id, engine, &a.src)?,
            }),
            InstData::Iota(i) => out.push(Op::Iota {
                offset: i.offset,
                channel_multiplier: i.channel_multiplier,
                pattern: i.pattern.clone(),
                dst: self.hw_ap(id, engine, &i.dst)?,
            }),
            InstData::BnStats(b) => {
                out.push(Op::BnStats { dst: self.hw_ap(id, engine, &b.dst)?, src: self.hw_ap(id, engine, &b.src)? });
            }
            InstData::BnAggr(b) => {
                out.push(Op::BnAggr { dst: self.hw_ap(id, engine, &b.dst)?, src: self.hw_ap(id, engine, &b.src)? });
            }
        }
        Ok(())
    }
}
