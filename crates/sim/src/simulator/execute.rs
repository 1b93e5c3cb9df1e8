//! One instruction on the machine: its access patterns walked and checked, the operation
//! dispatched to its engine's executor, and the PSUM bytes it closes.

use bir::{Engine, HwAp, Op};
use penguin::{AluClass, AluOp, CastMode, DType, Memory};

use super::dataflow::Elementwise;
use super::{Cx, Machine};
use crate::error::{InstRef, SimError};
use crate::memory::{Walk, PSUM_PARTITION_BYTES};

impl Machine {
    pub(super) fn walk(&self, at: InstRef, ap: &HwAp) -> Result<Walk, SimError> {
        Walk::new(ap, &self.images).map_err(|detail| SimError::OutOfRange {
            at,
            memory: ap.memory,
            ap: ap.to_string(),
            detail,
        })
    }

    pub(super) fn execute(&mut self, op: &Op, cx: &mut Cx<'_>) -> Result<(), SimError> {
        if !op.engine_class().contains(cx.at.engine) {
            return Err(SimError::WrongEngine { at: cx.at, op: op.name() });
        }
        self.decode.hit = None;
        // A matmul's own result is queued behind the pending products instead of settled.
        let result = match op {
            Op::MultiplyMoving { dst, .. } => Some(dst),
            _ => None,
        };
        for (ap, written) in op.accesses() {
            if written {
                self.invalidate(ap);
            }
            if ap.memory == Memory::Psum && !result.is_some_and(|d| std::ptr::eq(d, ap)) {
                self.settle(ap);
            }
        }
        match op {
            Op::LoadStationary { src, perf_mode, tile_size, .. } => {
                self.load_stationary(cx, src, *perf_mode, *tile_size)
            }
            Op::LoadStationarySparse { src, tags, pattern, tile_size, .. } => {
                self.load_stationary_sparse(cx, src, tags, *pattern, *tile_size)
            }
            Op::MultiplyMoving { dst, src, acc, perf_mode, .. } => self.multiply_moving(cx, dst, src, *acc, *perf_mode),
            Op::Transpose { dst, src } => self.transpose(cx, dst, src),
            Op::DmaCopy { dst, src, cast } => {
                cx.stats.dma_bytes += self.copy(cx, dst, src, *cast)?;
                Ok(())
            }
            Op::DmaFma { dst, src0, src1 } => {
                cx.stats.dma_bytes += self.elementwise(cx, Elementwise::Fma, dst, src0, src1)?;
                Ok(())
            }
            Op::DmaGather { dst, table, index, skip } => {
                cx.stats.dma_bytes += self.gather(cx, dst, table, index, *skip)?;
                Ok(())
            }
            Op::DmaScatter { table, src, index, skip } => {
                cx.stats.dma_bytes += self.scatter(cx, table, src, index, *skip)?;
                Ok(())
            }
            Op::DmaScatterAdd { table, src, index, skip } => {
                cx.stats.dma_bytes += self.scatter_add(cx, table, src, index, *skip)?;
                Ok(())
            }
            Op::TensorCopy { dst, src } => {
                on_chip(cx.at, op, &[dst, src])?;
                self.copy(cx, dst, src, CastMode::Rne).map(|_| ())
            }
            Op::TensorTensor { op: kind, dst, lhs, rhs } => {
                on_chip(cx.at, op, &[dst, lhs, rhs])?;
                let int32 = [dst, lhs, rhs].iter().all(|ap| ap.dtype == DType::Int32);
                let exact_int = cx.at.engine == Engine::Pool
                    && int32
                    && matches!(kind, AluOp::Add | AluOp::Subtract | AluOp::Multiply);
                if kind.class() == AluClass::Bitvec || exact_int {
                    self.tensor_tensor_bits(cx, *kind, dst, lhs, rhs)
                } else {
                    self.elementwise(cx, Elementwise::Alu(*kind), dst, lhs, rhs).map(|_| ())
                }
            }
            Op::Activation { func, dst, src, scale, bias, reduce } => {
                on_chip(cx.at, op, &op_aps(op))?;
                self.activation(cx, *func, dst, src, scale, bias, reduce.as_ref())
            }
            Op::TensorScalar { op0, reverse0, op1, reverse1, dst, src, operand0, operand1 } => {
                on_chip(cx.at, op, &op_aps(op))?;
                self.tensor_scalar(cx, (*op0, *reverse0), (*op1, *reverse1), dst, src, operand0, operand1)
            }
            Op::TensorTensorScan { op0, op1, dst, data0, data1, initial } => {
                on_chip(cx.at, op, &op_aps(op))?;
                self.tensor_tensor_scan(cx, (*op0, *op1), dst, data0, data1, initial)
            }
            Op::TensorScalarCumulative { op0, op1, reverse0, dst, src, operand0, initial } => {
                on_chip(cx.at, op, &op_aps(op))?;
                self.tensor_scalar_cumulative(cx, (*op0, *op1, *reverse0), dst, src, operand0, initial)
            }
            Op::StreamShuffle { mask, dst, src } => {
                on_chip(cx.at, op, &[dst, src])?;
                self.stream_shuffle(cx, mask, dst, src)
            }
            Op::TensorCopyPredicated { reverse, dst, predicate, src } => {
                on_chip(cx.at, op, &op_aps(op))?;
                self.tensor_copy_predicated(cx, *reverse, dst, predicate, src)
            }
            Op::Top8 { mode, value, dst, src, vals, idx } => {
                on_chip(cx.at, op, &op_aps(op))?;
                self.top8(cx, (*mode, *value), dst, src, vals.as_ref(), idx.as_ref())
            }
            Op::TensorPartitionReduce { op: kind, dst, src } => {
                on_chip(cx.at, op, &[dst, src])?;
                self.tensor_partition_reduce(cx, *kind, dst, src)
            }
            Op::TensorReduce { op: kind, negate, dst, src } => {
                on_chip(cx.at, op, &[dst, src])?;
                self.tensor_reduce(cx, *kind, *negate, dst, src)
            }
            Op::AffineSelect { cmp, offset, channel_multiplier, pattern, value, dst, src } => {
                on_chip(cx.at, op, &[dst, src])?;
                self.affine_select(cx, *cmp, (*offset, *channel_multiplier, pattern), *value, dst, src)
            }
            Op::Iota { offset, channel_multiplier, pattern, dst } => {
                on_chip(cx.at, op, &[dst])?;
                self.iota(cx, (*offset, *channel_multiplier, pattern), dst)
            }
            Op::BnStats { dst, src } => {
                on_chip(cx.at, op, &[dst, src])?;
                self.bn_stats(cx, dst, src)
            }
            Op::BnAggr { dst, src } => {
                on_chip(cx.at, op, &[dst, src])?;
                self.bn_aggr(cx, dst, src)
            }
            Op::Memset { dst, value } => {
                on_chip(cx.at, op, &[dst])?;
                self.memset(cx, dst, *value)
            }
        }
    }

    /// Fail if any element of `walk` (in PSUM) lies in an open accumulation group.
    pub(super) fn check_closed(&self, at: InstRef, walk: &Walk) -> Result<(), SimError> {
        if walk.memory != Memory::Psum || self.groups.open_words == 0 {
            return Ok(());
        }
        for run in walk.runs() {
            if let Some(addr) = self.groups.find_open(run, walk.elem_size()) {
                return Err(read_open(at, addr));
            }
        }
        Ok(())
    }

    /// A write by anything but a matmul leaves the PSUM words it touches closed.
    pub(super) fn close_written(&mut self, walk: &Walk) {
        if walk.memory != Memory::Psum || self.groups.open_words == 0 {
            return;
        }
        for run in walk.runs() {
            self.groups.set_run(run, walk.elem_size(), false);
        }
    }
}

/// Every access pattern of an op.
fn op_aps(op: &Op) -> Vec<&HwAp> {
    op.aps().into_iter().map(|(_, ap)| ap).collect()
}

/// Compute engines reach SBUF and PSUM only.
fn on_chip(at: InstRef, op: &Op, aps: &[&HwAp]) -> Result<(), SimError> {
    match aps.iter().find(|ap| ap.memory == Memory::Hbm) {
        Some(_) => {
            Err(SimError::BadOperand { at, detail: format!("{} operands must be on chip (sbuf or psum)", op.name()) })
        }
        None => Ok(()),
    }
}

/// Partition and byte inside it of a PSUM image address.
pub(super) fn psum_position(addr: usize) -> (u32, u32) {
    ((addr / PSUM_PARTITION_BYTES) as u32, (addr % PSUM_PARTITION_BYTES) as u32)
}

fn read_open(at: InstRef, addr: usize) -> SimError {
    let (partition, byte) = psum_position(addr);
    SimError::ReadOpenGroup { at, partition, byte }
}
