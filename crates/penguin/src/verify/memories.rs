//! Verifier rule 8: the memories each instruction kind allows for each operand, GpSimd's
//! lack of a PSUM port and the one PSUM read port of a two-input instruction.

use crate::entity::{InstId, Memory};
use crate::error::Entity;
use crate::function::FunctionView;
use crate::inst::{ComputeEngine, InstData};

use super::{Verifier, MATMULT_RESULT_NOT_PSUM};

impl<F: FunctionView + ?Sized> Verifier<'_, F> {
    pub(super) fn check_memories(&mut self, id: InstId, inst: &InstData) {
        use Memory::{Hbm, Psum, Sbuf};
        let e = Entity::Inst(id);
        let on_chip = [Sbuf, Psum];
        match inst {
            InstData::MatMult(m) => {
                if m.dst.memory != Psum {
                    self.err(e, MATMULT_RESULT_NOT_PSUM);
                }
                self.need(e, "matmult stationary operand", &m.stationary, &[Sbuf]);
                self.need(e, "matmult moving operand", &m.moving, &[Sbuf]);
            }
            InstData::MatMultSparse(m) => {
                if m.dst.memory != Psum {
                    self.err(e, MATMULT_RESULT_NOT_PSUM);
                }
                self.need(e, "matmult_sparse stationary operand", &m.stationary, &[Sbuf]);
                self.need(e, "matmult_sparse moving operand", &m.moving, &[Sbuf]);
                self.need(e, "matmult_sparse tags", &m.tags, &[Sbuf]);
            }
            InstData::DmaCopy(d) => {
                self.need(e, "dma_copy destination", &d.dst, &[Hbm, Sbuf]);
                self.need(e, "dma_copy source", &d.src, &[Hbm, Sbuf]);
            }
            InstData::TensorCopy(c) => {
                self.need(e, "tensor_copy destination", &c.dst, &on_chip);
                self.need(e, "tensor_copy source", &c.src, &on_chip);
            }
            InstData::Memset(m) => self.need(e, "memset destination", &m.dst, &on_chip),
            InstData::TensorTensor(t) => {
                self.need(e, "tensor_tensor destination", &t.dst, &on_chip);
                self.need(e, "tensor_tensor lhs", &t.lhs, &on_chip);
                self.need(e, "tensor_tensor rhs", &t.rhs, &on_chip);
                if t.lhs.memory == Psum && t.rhs.memory == Psum {
                    self.err(e, TWO_PSUM_INPUTS);
                }
            }
            InstData::Activation(a) => {
                self.need(e, "activation destination", &a.dst, &on_chip);
                self.need(e, "activation source", &a.src, &on_chip);
                for (what, t) in [("scale", a.scale.tile()), ("bias", a.bias.tile()), ("reduce", a.reduce.as_ref())] {
                    if let Some(t) = t {
                        self.need(e, &format!("activation {what}"), t, &on_chip);
                    }
                }
            }
            InstData::TensorScalar(t) => {
                self.need(e, "tensor_scalar destination", &t.dst, &on_chip);
                self.need(e, "tensor_scalar source", &t.src, &on_chip);
                for (what, s) in [("operand0", &t.operand0), ("operand1", &t.operand1)] {
                    if let Some(s) = s.tile() {
                        self.need(e, &format!("tensor_scalar {what}"), s, &on_chip);
                    }
                }
            }
            InstData::TensorTensorScan(t) => {
                self.need(e, "tensor_tensor_scan destination", &t.dst, &on_chip);
                self.need(e, "tensor_tensor_scan data0", &t.data0, &on_chip);
                self.need(e, "tensor_tensor_scan data1", &t.data1, &on_chip);
                if let Some(c) = t.initial.tile() {
                    self.need(e, "tensor_tensor_scan initial", c, &on_chip);
                }
                if t.data0.memory == Psum && t.data1.memory == Psum {
                    self.err(
                        e,
                        "tensor_tensor_scan data0 and data1 cannot both be in psum (one PSUM read per instruction)",
                    );
                }
            }
            InstData::TensorScalarCumulative(t) => {
                self.need(e, "tensor_scalar_cumulative destination", &t.dst, &on_chip);
                self.need(e, "tensor_scalar_cumulative source", &t.src, &on_chip);
                for c in [t.operand0.tile(), t.initial.tile()].into_iter().flatten() {
                    self.need(e, "tensor_scalar_cumulative column", c, &on_chip);
                }
            }
            InstData::Top8(t) => {
                let what = t.mode.name();
                self.need(e, &format!("{what} destination"), &t.dst, &on_chip);
                self.need(e, &format!("{what} source"), &t.src, &on_chip);
                for (role, tile) in [("values", &t.vals), ("indices", &t.idx)] {
                    if let Some(tile) = tile {
                        self.need(e, &format!("{what} {role}"), tile, &on_chip);
                    }
                }
            }
            InstData::StreamShuffle(s) => {
                self.need(e, "stream_shuffle destination", &s.dst, &on_chip);
                self.need(e, "stream_shuffle source", &s.src, &on_chip);
            }
            InstData::TensorCopyPredicated(c) => {
                self.need(e, "tensor_copy_predicated destination", &c.dst, &on_chip);
                self.need(e, "tensor_copy_predicated predicate", &c.predicate, &on_chip);
                if let Some(s) = c.src.tile() {
                    self.need(e, "tensor_copy_predicated source", s, &on_chip);
                    if s.memory == Psum && c.predicate.memory == Psum {
                        self.err(
                            e,
                            "tensor_copy_predicated source and predicate cannot both be in psum (one PSUM read per \
                             instruction)",
                        );
                    }
                }
            }
            InstData::TensorReduce(r) => {
                self.need(e, "tensor_reduce destination", &r.dst, &on_chip);
                self.need(e, "tensor_reduce source", &r.src, &on_chip);
            }
            InstData::TensorPartitionReduce(r) => {
                self.need(e, "tensor_partition_reduce destination", &r.dst, &[Sbuf]);
                self.need(e, "tensor_partition_reduce source", &r.src, &[Sbuf]);
            }
            InstData::AffineSelect(a) => {
                self.need(e, "affine_select destination", &a.dst, &[Sbuf]);
                self.need(e, "affine_select source", &a.src, &[Sbuf]);
            }
            InstData::Iota(i) => self.need(e, "iota destination", &i.dst, &[Sbuf]),
            InstData::BnStats(b) => {
                self.need(e, "bn_stats destination", &b.dst, &on_chip);
                self.need(e, "bn_stats source", &b.src, &on_chip);
            }
            InstData::BnAggr(b) => {
                self.need(e, "bn_aggr destination", &b.dst, &on_chip);
                self.need(e, "bn_aggr source", &b.src, &on_chip);
            }
            InstData::TiledOffloadedFma(f) => {
                for (what, t) in [("destination", &f.dst), ("src0", &f.src0), ("src1", &f.src1)] {
                    self.need(e, &format!("tiled_offloaded_fma {what}"), t, &[Sbuf]);
                }
            }
            InstData::OffloadedFma(f) => {
                for (what, t) in [("destination", &f.dst), ("src0", &f.src0), ("src1", &f.src1)] {
                    self.need(e, &format!("offloaded_fma {what}"), t, &[Hbm]);
                }
            }
            InstData::TiledOffloadedMemCpy(c) => {
                self.need(e, "tiled_offloaded_memcpy destination", &c.dst, &[Hbm, Sbuf]);
                self.need(e, "tiled_offloaded_memcpy source", &c.src, &[Hbm, Sbuf]);
            }
            InstData::OffloadedMemCpy(c) => {
                self.need(e, "offloaded_memcpy destination", &c.dst, &[Hbm]);
                self.need(e, "offloaded_memcpy source", &c.src, &[Hbm]);
            }
            InstData::OffloadedMemCast(c) => {
                self.need(e, "offloaded_memcast destination", &c.dst, &[Hbm, Sbuf]);
                self.need(e, "offloaded_memcast source", &c.src, &[Hbm, Sbuf]);
            }
            InstData::Transpose(t) => {
                self.need(e, "transpose destination", &t.dst, &[Psum]);
                self.need(e, "transpose source", &t.src, &[Sbuf]);
            }
            InstData::DmaGather(g) => {
                self.need(e, "dma_gather destination", &g.dst, &[Sbuf]);
                self.need(e, "dma_gather table", &g.table, &[Hbm]);
                self.need(e, "dma_gather index", &g.index, &[Hbm, Sbuf]);
            }
            InstData::DmaScatter(s) => {
                self.need(e, "dma_scatter table", &s.table, &[Hbm]);
                self.need(e, "dma_scatter source", &s.src, &[Sbuf]);
                self.need(e, "dma_scatter index", &s.index, &[Hbm, Sbuf]);
            }
            InstData::DmaScatterAdd(s) => {
                self.need(e, "dma_scatter_add table", &s.table, &[Hbm]);
                self.need(e, "dma_scatter_add source", &s.src, &[Sbuf]);
                self.need(e, "dma_scatter_add index", &s.index, &[Hbm, Sbuf]);
            }
        }
        if pool_engine(inst) && inst.operands().iter().any(|(t, _)| t.memory == Psum) {
            self.err(e, POOL_PSUM);
        }
    }
}

/// The message for a GpSimd instruction with an operand in PSUM.
pub const POOL_PSUM: &str =
    "GpSimd (pool) cannot access PSUM (NKI ISA tensor_copy: use ScalarE or VectorE for PSUM tiles)";

/// The message for a tensor_tensor reading two PSUM tiles.
pub const TWO_PSUM_INPUTS: &str =
    "tensor_tensor lhs and rhs cannot both be in psum (one PSUM read per instruction, NKI ISA tensor_tensor)";

/// Whether the instruction runs on GpSimd.
fn pool_engine(inst: &InstData) -> bool {
    let engine = match inst {
        InstData::TensorCopy(c) => c.engine,
        InstData::Memset(m) => m.engine,
        InstData::TensorTensor(t) => t.engine,
        InstData::TensorScalar(t) => t.engine,
        InstData::AffineSelect(_) | InstData::Iota(_) | InstData::TensorPartitionReduce(_) => ComputeEngine::Pool,
        _ => return false,
    };
    engine == ComputeEngine::Pool
}
