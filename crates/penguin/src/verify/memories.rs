//! Verifier rule 8: the memories each instruction kind allows for each operand.

use crate::entity::{InstId, Memory};
use crate::error::Entity;
use crate::function::FunctionView;
use crate::inst::InstData;

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
            InstData::DmaScatterAdd(s) => {
                self.need(e, "dma_scatter_add table", &s.table, &[Hbm]);
                self.need(e, "dma_scatter_add source", &s.src, &[Sbuf]);
                self.need(e, "dma_scatter_add index", &s.index, &[Hbm, Sbuf]);
            }
        }
    }
}
