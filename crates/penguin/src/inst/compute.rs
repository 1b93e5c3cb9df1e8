//! The payloads of the compute-engine instructions real kernels use, modeled on `nki.isa`:
//! `activation`, `tensor_scalar`, `tensor_reduce`, `affine_select`, `iota`, `bn_stats` and
//! `bn_aggr`. Each computes in fp32 (integer math for `iota`'s values and the bitvec
//! operators) and rounds once to the destination's dtype (RNE); `docs/isa-costs.md` gives the
//! documents, the engines and the costs.

use serde::{Deserialize, Serialize};

use crate::tile::InstTile;

use super::alu::{ActFunc, AffinePattern, AluOp, ScalarOperand};
use super::payload::ComputeEngine;

/// `dst = func(src * scale + bias)` on ScalarE (`nki.isa.activation`), with an optional
/// `reduce` column `[P, 1]` receiving the sum of each partition's results
/// (`activation_reduce`, `reduce_cmd=reset_reduce`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivationData {
    /// The function.
    pub func: ActFunc,
    /// Destination.
    pub dst: InstTile,
    /// Source (SBUF or PSUM).
    pub src: InstTile,
    /// The multiplier: an fp32 immediate (default 1) or a `[P, 1]` column.
    pub scale: ScalarOperand,
    /// The addend: a `[P, 1]` column, or an fp32 immediate (0 when not written; another
    /// immediate needs trn2 or later).
    pub bias: ScalarOperand,
    /// The row sums of the results, `[P, 1]`, if wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduce: Option<InstTile>,
}

/// `dst = (src op0 operand0) op1 operand1` (`nki.isa.tensor_scalar`): each operand an fp32
/// immediate or a `[P, 1]` column; `reverse0` / `reverse1` swap an operator's inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorScalarData {
    /// The engine (DVE; ACT for multiply/add; POOL for rsqrt).
    pub engine: ComputeEngine,
    /// The first operator.
    pub op0: AluOp,
    /// `operand0 op0 src` instead of `src op0 operand0`.
    pub reverse0: bool,
    /// The second operator, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op1: Option<AluOp>,
    /// `operand1 op1 x` instead of `x op1 operand1`.
    pub reverse1: bool,
    /// Destination.
    pub dst: InstTile,
    /// Source.
    pub src: InstTile,
    /// The first operand.
    pub operand0: ScalarOperand,
    /// The second operand (0 when there is no second operator).
    pub operand1: ScalarOperand,
}

/// A scan along each partition's free elements on VectorE (`nki.isa.tensor_tensor_scan`):
/// `x = initial`, then for each element `i` in enumeration order
/// `x = (x op0 data0[i]) op1 data1[i]` and `dst[i] = x`. Each step is computed in fp32 and
/// rounded to the destination's dtype (the carried value is the rounded one, as it is read
/// back from the destination).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorTensorScanData {
    /// The operator that combines the carried value with `data0`.
    pub op0: AluOp,
    /// The operator that combines that result with `data1`.
    pub op1: AluOp,
    /// Destination.
    pub dst: InstTile,
    /// The first input.
    pub data0: InstTile,
    /// The second input.
    pub data1: InstTile,
    /// The value carried into the first element: an immediate or a `[P, 1]` fp32 column.
    pub initial: ScalarOperand,
}

/// A running reduction along each partition on VectorE (`nki.isa.tensor_scalar_cumulative`):
/// an fp32 register starts at `initial` and, element by element, becomes
/// `op1(op0(src[i], operand0), reg)` (`op0(operand0, src[i])` with `reverse0`); `dst[i]` is
/// the register after element `i`, rounded to `dst`'s dtype (the register keeps fp32).
/// `operand0` and `initial` are immediates or `[P, 1]` fp32 columns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorScalarCumulativeData {
    /// The operator with `operand0`.
    pub op0: AluOp,
    /// The running operator, `op1(x, reg)`.
    pub op1: AluOp,
    /// `operand0 op0 src` instead of `src op0 operand0`.
    pub reverse0: bool,
    /// Destination.
    pub dst: InstTile,
    /// Source.
    pub src: InstTile,
    /// The operand of `op0`.
    pub operand0: ScalarOperand,
    /// The register's value before the first element.
    pub initial: ScalarOperand,
}

/// Copy `src` into `dst` where `predicate` is nonzero (where it is zero with `reverse`) on
/// VectorE (`nki.isa.tensor_copy_predicated`); the other elements of `dst` keep their values.
/// `src` is a tile shaped like `dst` with `dst`'s dtype (copied bit for bit) or an immediate
/// (converted to `dst`'s dtype); `predicate` is an unsigned integer tile shaped like `dst`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorCopyPredicatedData {
    /// Copy where the predicate is zero instead.
    pub reverse: bool,
    /// Destination, read and written.
    pub dst: InstTile,
    /// The predicate.
    pub predicate: InstTile,
    /// What is copied: a tile or an immediate.
    pub src: ScalarOperand,
}

/// `dst = op-reduce of src over its trailing free elements` on VectorE
/// (`nki.isa.tensor_reduce`): each destination element reduces `src.free / dst.free`
/// consecutive source elements (in enumeration order: the last free axes), left to right;
/// `negate` multiplies the result by -1.
///
/// NKI's `axis` and `keepdims` are said by the shapes: the reduced extent is the source's
/// elements per partition over the destination's, and a kept unit axis is a unit dimension.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorReduceData {
    /// The reduction operator.
    pub op: AluOp,
    /// Multiply the result by -1 (arithmetic operators only).
    pub negate: bool,
    /// Destination.
    pub dst: InstTile,
    /// Source.
    pub src: InstTile,
}

/// The operators `tensor_partition_reduce` takes.
pub const PARTITION_REDUCE_OPS: [AluOp; 7] =
    [AluOp::Add, AluOp::Max, AluOp::Min, AluOp::Multiply, AluOp::BitwiseAnd, AluOp::BitwiseOr, AluOp::BitwiseXor];

/// `dst[0, i] = op-reduce of src[p, i] over its partitions p` on GpSimd
/// (`nki.isa.tensor_partition_reduce`), partition 0 first; `dst` is one partition holding
/// the source's elements per partition. Arithmetic operators run in fp32, bitvec operators on
/// integer bit patterns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorPartitionReduceData {
    /// The reduction operator.
    pub op: AluOp,
    /// Destination, one partition.
    pub dst: InstTile,
    /// Source.
    pub src: InstTile,
}

/// `dst = (offset + channel_multiplier * p + pattern . i) cmp 0 ? src : value` on GpSimd
/// (`nki.isa.affine_select`, the causal mask).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AffineSelectData {
    /// The comparison with 0.
    pub cmp: AluOp,
    /// The affine value's constant (int32).
    pub offset: i32,
    /// The affine value's step per partition (int32).
    pub channel_multiplier: i32,
    /// The affine value's steps over the free elements.
    pub pattern: AffinePattern,
    /// The value where the comparison fails (fp32).
    #[serde(with = "crate::json_f64")]
    pub value: f64,
    /// Destination (SBUF).
    pub dst: InstTile,
    /// The values where the comparison holds (SBUF).
    pub src: InstTile,
}

/// `dst[p, i] = offset + channel_multiplier * p + pattern . i` in int32, converted to dst's
/// dtype, on GpSimd (`nki.isa.iota`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IotaData {
    /// The constant (int32).
    pub offset: i32,
    /// The step per partition (int32).
    pub channel_multiplier: i32,
    /// The steps over the free elements.
    pub pattern: AffinePattern,
    /// Destination (SBUF).
    pub dst: InstTile,
}

/// Per-partition statistics of `src` (at most 512 elements) on VectorE (`nki.isa.bn_stats`):
/// `dst[p] = [count, mean, variance * count]` of the even-indexed elements, then the same of
/// the odd-indexed ones (6 elements per partition).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BnStatsData {
    /// Destination, 6 elements per partition.
    pub dst: InstTile,
    /// Source, at most 512 elements per partition.
    pub src: InstTile,
}

/// The mean and (population) variance of each partition from `(count, mean, variance *
/// count)` triples of `bn_stats` outputs, on VectorE (`nki.isa.bn_aggr`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BnAggrData {
    /// Destination, `[mean, variance]` per partition.
    pub dst: InstTile,
    /// Source, a multiple of 3 elements per partition.
    pub src: InstTile,
}

/// The most elements per partition `bn_stats` reads (`nl.tile_size.bn_stats_fmax`).
pub const BN_STATS_FMAX: u64 = 512;
