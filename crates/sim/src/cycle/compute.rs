//! The cost of an ACT/DVE/POOL/SP instruction in engine cycles: the per-instruction
//! formulas of the NKI ISA documents (`docs/isa-costs.md`), every constant a key of the
//! [`HwProfile`]. `N` is the elements per partition of the operand the formula names (the
//! input; a memset's or iota's output).

use bir::{Engine, HwAp, Op};
use penguin::{AluOp, DType, HwProfile, Memory};

/// `max(MIN_II, n)`.
fn ii(p: &HwProfile, n: f64) -> f64 {
    n.max(p.compute_min_ii_cycles)
}

/// Whether the pattern walks each partition's elements contiguously (stride 1 throughout).
fn contiguous(ap: &HwAp) -> bool {
    let mut expect = 1i64;
    for d in ap.dims.iter().rev().filter(|d| d.num > 1) {
        if d.stride != expect {
            return false;
        }
        expect = expect.saturating_mul(i64::from(d.num));
    }
    true
}

/// Cycles of a VectorE instruction streaming two inputs (`tensor_tensor`, and the scan):
/// `max(MIN_II, N)` with one input in PSUM, or both in SBUF when all are bf16, the operator
/// add/multiply/subtract and the inputs contiguous; `max(MIN_II, 2N)` otherwise.
fn two_inputs(p: &HwProfile, alu: AluOp, dst: &HwAp, lhs: &HwAp, rhs: &HwAp) -> f64 {
    let psum = lhs.memory == Memory::Psum || rhs.memory == Memory::Psum;
    let fast = [dst, lhs, rhs].iter().all(|ap| ap.dtype == DType::Bf16)
        && matches!(alu, AluOp::Add | AluOp::Multiply | AluOp::Subtract)
        && contiguous(lhs)
        && contiguous(rhs);
    ii(p, lhs.free_elems() as f64 * if psum || fast { 1.0 } else { p.tensor_tensor_sbuf_factor })
}

/// Cycles of `op` on `engine`.
pub(super) fn compute_cycles(p: &HwProfile, engine: Engine, op: &Op) -> f64 {
    let n = |ap: &HwAp| ap.free_elems() as f64;
    match op {
        // tensor_copy: max(MIN_II, N), N the input's elements per partition.
        Op::TensorCopy { src, .. } => ii(p, n(src)),
        // memset: max(MIN_II, N/2) for zero into bf16/fp16, max(MIN_II, N) otherwise.
        Op::Memset { dst, value } => {
            let half = *value == 0.0 && matches!(dst.dtype, DType::Bf16 | DType::Fp16);
            ii(p, n(dst) * if half { p.memset_zero16_factor } else { 1.0 })
        }
        // tensor_tensor: max(MIN_II, N) with one input in PSUM, or both in SBUF when all bf16,
        // add/multiply/subtract and contiguous; max(MIN_II, 2N) otherwise.
        Op::TensorTensor { op: alu, dst, lhs, rhs } => two_inputs(p, *alu, dst, lhs, rhs),
        // tensor_tensor_scan: no published figure; its two inputs stream through VectorE as
        // tensor_tensor's do, so it takes tensor_tensor's rule (the carried value stays in
        // the ALU and adds no pass).
        Op::TensorTensorScan { op0, dst, data0, data1, .. } => two_inputs(p, *op0, dst, data0, data1),
        // tensor_copy_predicated: max(MIN_II, N) when the source or the predicate is in PSUM,
        // max(MIN_II, 2N) when both are in SBUF (NKI ISA); an immediate source streams the
        // predicate alone, as a tensor_copy streams its input: max(MIN_II, N).
        Op::TensorCopyPredicated { predicate, src, .. } => {
            let sbuf = src.tile().is_some_and(|s| s.memory != Memory::Psum) && predicate.memory != Memory::Psum;
            ii(p, n(predicate) * if sbuf { p.tensor_tensor_sbuf_factor } else { 1.0 })
        }
        // tensor_scalar_cumulative: no published figure; one input streams as in a
        // tensor_scalar and the register stays in the ALU: max(MIN_II, N).
        Op::TensorScalarCumulative { src, .. } => ii(p, n(src)),
        // nc_stream_shuffle: no published figure; VectorE streams the source once, as a
        // tensor_copy does: max(MIN_II, N).
        Op::StreamShuffle { src, .. } => ii(p, n(src)),
        // max8, nc_find_index8, nc_match_replace8: no published figure; VectorE streams the
        // source once (the 8 values it keeps or looks for stay in the ALU): max(MIN_II, N).
        Op::Top8 { src, .. } => ii(p, n(src)),
        // activation: max(MIN_II, N), plus MIN_II to read the row sums out.
        Op::Activation { src, reduce, .. } => {
            ii(p, n(src)) + if reduce.is_some() { p.act_reduce_read_cycles } else { 0.0 }
        }
        // tensor_scalar: max(MIN_II, N) (one or two operators cost the same); a reciprocal on
        // VectorE max(MIN_II, 8N); the GpSimd rsqrt GPSIMD_START + 4N.
        Op::TensorScalar { op0, op1, src, .. } => {
            if engine == Engine::Pool {
                p.pool_start_cycles + p.pool_rsqrt_factor * n(src)
            } else if engine == Engine::Dve && (*op0 == AluOp::Reciprocal || *op1 == Some(AluOp::Reciprocal)) {
                ii(p, p.dve_reciprocal_factor * n(src))
            } else {
                ii(p, n(src))
            }
        }
        // tensor_reduce: N/2 for bf16 -> bf16 add or maximum, N otherwise (at least MIN_II).
        Op::TensorReduce { op: alu, dst, src, .. } => {
            let half = dst.dtype == DType::Bf16 && src.dtype == DType::Bf16 && matches!(alu, AluOp::Add | AluOp::Max);
            ii(p, n(src) * if half { p.tensor_reduce_bf16_factor } else { 1.0 })
        }
        // tensor_partition_reduce: no published figure; GpSimd's other per-element
        // instructions (below) cost GPSIMD_START + N, and ntile charges the same, N the
        // elements per partition (the combination across partitions pipelined).
        Op::TensorPartitionReduce { src, .. } => p.pool_start_cycles + n(src),
        // affine_select and iota: GPSIMD_START + N.
        Op::AffineSelect { src, .. } => p.pool_start_cycles + n(src),
        Op::Iota { dst, .. } => p.pool_start_cycles + n(dst),
        // bn_stats: max(MIN_II, N); bn_aggr: max(MIN_II, 13 * N / 3).
        Op::BnStats { src, .. } => ii(p, n(src)),
        Op::BnAggr { src, .. } => ii(p, p.bn_aggr_cycles_per_triple * n(src) / 3.0),
        // `Replay::new` keeps PE and DMA ops off the compute engines.
        Op::LoadStationary { .. }
        | Op::LoadStationarySparse { .. }
        | Op::MultiplyMoving { .. }
        | Op::Transpose { .. }
        | Op::DmaCopy { .. }
        | Op::DmaFma { .. }
        | Op::DmaGather { .. }
        | Op::DmaScatter { .. }
        | Op::DmaScatterAdd { .. } => 0.0,
    }
}
