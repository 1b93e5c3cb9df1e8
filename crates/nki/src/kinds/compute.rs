//! The compute-engine records (`activation`, `tensor_scalar`, `tensor_reduce`,
//! `affine_select`, `iota`, `bn_stats`, `bn_aggr`) onto Penguin's instructions of the same
//! names: their operands (a scalar given as a `[P, 1]` view is an operand too), the rules a
//! kernel author can break (named at the kernel's line, before the verifier sees the
//! function), and the instruction.
//!
//! Engines: an activation runs on ACT, `affine_select` and `iota` on GpSimd, reductions and
//! batch-norm statistics on DVE; `tensor_scalar` on the engine it names, else DVE.

use penguin::{
    ActFunc, ActivationData, AffineDim, AffinePattern, AffineSelectData, AluClass, AluOp, BnAggrData, BnStatsData,
    ComputeEngine, DType, InstData, InstTile, IotaData, Memory, ScalarOperand, TensorPartitionReduceData,
    TensorReduceData, TensorScalarCumulativeData, TensorScalarData, BN_STATS_FMAX, MAX_PATTERN_DIMS,
};

use super::{alu_op, buffer_name, engine, Choice, Memories, Operand, Role};
use crate::error::NkiError;
use crate::trace::{Alu, Cmp, EngineName, PatternDim, Record, Scalar};
use crate::view::Resolved;

/// The operands of a compute record, the destination first, then the source, then every
/// scalar given as a view (`scale`, `bias`, `s0`, `s1`), then an activation's `reduce`.
pub(super) fn operands<'a>(r: &'a Record, loc: &str) -> Result<Vec<Operand<'a>>, NkiError> {
    use Role::{Read, Write};
    let unsupported = |what: String| NkiError::Unsupported { loc: loc.to_string(), record: r.kind(), what };
    let column = |name: &'static str, s: Option<&'a Scalar>| match s {
        Some(Scalar::View(v)) => Some((name, v, Read)),
        _ => None,
    };
    Ok(match r {
        Record::Activation { dst, src, scale, bias, reduce, .. } => {
            let mut ops = vec![("dst", dst, Write), ("src", src, Read)];
            ops.extend(column("scale", Some(scale)));
            ops.extend(column("bias", bias.as_ref()));
            if let Some(red) = reduce {
                if red.alu != Alu::Add {
                    return Err(unsupported(format!(
                        "an activation reduce by `{}` (the Scalar Engine sums its rows: reduce with add)",
                        red.alu
                    )));
                }
                ops.push(("reduce", &red.dst, Write));
            }
            ops
        }
        Record::TensorScalar { dst, src, op0, s0, op1, s1, .. } => {
            if op1.is_some() != s1.is_some() && !op1.is_some_and(|o| alu_op(o).class() == AluClass::Unary) {
                return Err(NkiError::Invalid {
                    loc: loc.to_string(),
                    message: format!(
                        "tensor_scalar has {} but {} (op1 and s1 come together)",
                        if op1.is_some() { "op1" } else { "s1" },
                        if op1.is_some() { "no s1" } else { "no op1" }
                    ),
                });
            }
            let _ = op0;
            let mut ops = vec![("dst", dst, Write), ("src", src, Read)];
            ops.extend(column("s0", Some(s0)));
            ops.extend(column("s1", s1.as_ref()));
            ops
        }
        Record::TensorScalarCumulative { dst, src, op0, op1, s0, initial, .. } => {
            if alu_op(*op0).class() != AluClass::Arithmetic {
                return Err(unsupported(format!("op0 `{op0}` in tensor_scalar_cumulative (an arithmetic operator)")));
            }
            if !matches!(alu_op(*op1), AluOp::Add | AluOp::Subtract | AluOp::Multiply | AluOp::Max | AluOp::Min) {
                return Err(unsupported(format!(
                    "op1 `{op1}` in tensor_scalar_cumulative (add, subtract, multiply, maximum or minimum)"
                )));
            }
            let mut ops = vec![("dst", dst, Write), ("src", src, Read)];
            ops.extend(column("s0", Some(s0)));
            ops.extend(column("initial", Some(initial)));
            ops
        }
        Record::TensorReduce { dst, src, .. }
        | Record::TensorPartitionReduce { dst, src, .. }
        | Record::AffineSelect { dst, src, .. }
        | Record::BnStats { dst, src, .. }
        | Record::BnAggr { dst, src, .. } => vec![("dst", dst, Write), ("src", src, Read)],
        Record::Iota { dst, .. } => vec![("dst", dst, Write)],
        _ => return Err(NkiError::Internal(format!("{loc}: {} is not a compute record", r.kind()))),
    })
}

/// The rules of a compute record a kernel can break; `res` and `mem` are its operands in
/// [`operands`] order.
pub(super) fn check(r: &Record, res: &[Resolved], mem: Memories<'_>, loc: &str) -> Result<(), NkiError> {
    let op = r.kind();
    let names = operand_names(r);
    let shapes = |what: String| NkiError::ShapeMismatch { loc: loc.to_string(), op, what };
    let wrong = |i: usize, rule: &'static str| NkiError::WrongMemory {
        loc: loc.to_string(),
        op,
        operand: names[i],
        buffer: buffer_name(mem[i]),
        rule,
    };
    let sbuf_only =
        matches!(r, Record::AffineSelect { .. } | Record::Iota { .. } | Record::TensorPartitionReduce { .. });
    for (i, &m) in mem.iter().enumerate().take(res.len()) {
        if m == Memory::Hbm {
            return Err(wrong(i, "compute engines work on chip (use dma_copy)"));
        }
        if sbuf_only && m == Memory::Psum {
            return Err(wrong(i, "GpSimd cannot access PSUM"));
        }
    }
    let same = |a: usize, b: usize| {
        if res[a].partitions() != res[b].partitions() || res[a].free_elems() != res[b].free_elems() {
            Err(shapes(format!(
                "{} {:?} and {} {:?} differ in partitions or elements per partition",
                names[a], res[a].shape, names[b], res[b].shape
            )))
        } else {
            Ok(())
        }
    };
    // Scalars given as views, and an activation's reduce, are [P, 1] columns of src's partitions.
    for i in 2..res.len() {
        if res[i].partitions() != res[1].partitions() || res[i].free_elems() != 1 {
            return Err(shapes(format!(
                "{} {:?} is not a [{}, 1] column (one value per partition of src)",
                names[i],
                res[i].shape,
                res[1].partitions()
            )));
        }
    }
    match r {
        Record::TensorScalar { op0, op1, engine: Some(named), .. } => {
            same(0, 1)?;
            let e = match named {
                EngineName::Act => ComputeEngine::Act,
                EngineName::Pool => ComputeEngine::Pool,
                _ => ComputeEngine::Dve,
            };
            tensor_scalar_engine(e, alu_op(*op0), op1.map(alu_op)).map_err(|what| NkiError::Unsupported {
                loc: loc.to_string(),
                record: op,
                what,
            })?;
        }
        Record::Activation { .. }
        | Record::TensorScalar { .. }
        | Record::TensorScalarCumulative { .. }
        | Record::AffineSelect { .. } => same(0, 1)?,
        Record::TensorPartitionReduce { .. }
            if res[0].partitions() != 1 || res[0].free_elems() != res[1].free_elems() =>
        {
            return Err(shapes(format!(
                "dst {:?} is not one partition of src {:?}'s elements per partition",
                res[0].shape, res[1].shape
            )));
        }
        Record::TensorReduce { axes, .. } => {
            let rank = res[1].shape.len();
            let mut sorted: Vec<usize> = axes.iter().map(|&a| a as usize).collect();
            sorted.sort_unstable();
            sorted.dedup();
            let trailing = !sorted.is_empty()
                && sorted[0] >= 1
                && sorted.iter().enumerate().all(|(k, &a)| a == rank - sorted.len() + k);
            if !trailing {
                return Err(NkiError::Unsupported {
                    loc: loc.to_string(),
                    record: op,
                    what: format!(
                        "reducing axes {axes:?} of a {rank}-d view (ntile reduces the last free axes; \
                         permute the view so the reduced axes come last)"
                    ),
                });
            }
            let kept: u64 = res[1].shape[1..rank - sorted.len()].iter().product();
            if res[0].partitions() != res[1].partitions() || res[0].free_elems() != kept {
                return Err(shapes(format!(
                    "dst {:?} is not src {:?} reduced over axes {axes:?}",
                    res[0].shape, res[1].shape
                )));
            }
        }
        Record::BnStats { .. } => {
            if res[1].free_elems() > BN_STATS_FMAX {
                return Err(shapes(format!(
                    "src {:?} has more than the {BN_STATS_FMAX} elements per partition bn_stats reads \
                     (nl.tile_size.bn_stats_fmax)",
                    res[1].shape
                )));
            }
            stats_dst(&res[0], &res[1], 6, &shapes)?;
        }
        Record::BnAggr { .. } => {
            if res[1].free_elems() == 0 || !res[1].free_elems().is_multiple_of(3) {
                return Err(shapes(format!(
                    "src {:?} does not hold (count, mean, variance) triples of bn_stats",
                    res[1].shape
                )));
            }
            stats_dst(&res[0], &res[1], 2, &shapes)?;
        }
        _ => {}
    }
    if let Record::AffineSelect { pattern, .. } | Record::Iota { pattern, .. } = r {
        let elems: u64 = pattern.iter().map(|&(_, n)| n).product();
        if elems != res[0].free_elems() {
            return Err(shapes(format!(
                "the pattern {pattern:?} enumerates {elems} elements, dst {:?} has {} per partition",
                res[0].shape,
                res[0].free_elems()
            )));
        }
    }
    Ok(())
}

/// A statistics destination: `n` elements per partition, the source's partitions.
fn stats_dst(dst: &Resolved, src: &Resolved, n: u64, shapes: &dyn Fn(String) -> NkiError) -> Result<(), NkiError> {
    if dst.partitions() != src.partitions() || dst.free_elems() != n {
        return Err(shapes(format!("dst {:?} is not [{}, {n}]", dst.shape, src.partitions())));
    }
    Ok(())
}

/// The trace's names of a compute record's operands, in [`operands`] order.
fn operand_names(r: &Record) -> Vec<&'static str> {
    match operands(r, "") {
        Ok(ops) => ops.into_iter().map(|(n, _, _)| n).collect(),
        Err(_) => Vec::new(),
    }
}

/// The Penguin instruction of a compute record; `tiles` are its operands in [`operands`]
/// order.
pub(super) fn inst(r: &Record, tiles: Vec<InstTile>, choice: Choice, loc: &str) -> Result<InstData, NkiError> {
    let bug = || NkiError::Internal(format!("{loc}: {} has the wrong number of operands", r.kind()));
    let mut tiles = tiles.into_iter();
    let mut take = || tiles.next().ok_or_else(bug);
    let (dst, src) = match r {
        Record::Iota { .. } => (take()?, None),
        _ => (take()?, Some(take()?)),
    };
    let src = || src.clone().ok_or_else(bug);
    let mut scalar = |s: Option<&Scalar>, absent: f64| -> Result<ScalarOperand, NkiError> {
        Ok(match s {
            None => ScalarOperand::Imm(absent),
            Some(Scalar::Imm(v)) => ScalarOperand::Imm(v.0),
            Some(Scalar::View(_)) => ScalarOperand::Tile(take()?),
        })
    };
    let invalid = |message: String| NkiError::Invalid { loc: loc.to_string(), message };
    Ok(match r {
        Record::Activation { func, scale, bias, reduce, .. } => {
            let func = ActFunc::from_name(func.name()).ok_or_else(bug)?;
            let scale = scalar(Some(scale), 1.0)?;
            let bias = scalar(bias.as_ref(), 0.0)?;
            let reduce = if reduce.is_some() { Some(take()?) } else { None };
            InstData::Activation(Box::new(ActivationData { func, dst, src: src()?, scale, bias, reduce }))
        }
        Record::TensorScalar { op0, s0, reverse0, op1, s1, reverse1, engine: named, .. } => {
            let engine = engine(r, *named, dst.memory, choice, loc)?;
            let operand0 = scalar(Some(s0), 0.0)?;
            let operand1 = scalar(s1.as_ref(), 0.0)?;
            let data = TensorScalarData {
                engine,
                op0: alu_op(*op0),
                reverse0: *reverse0,
                op1: op1.map(alu_op),
                reverse1: *reverse1,
                dst,
                src: src()?,
                operand0,
                operand1,
            };
            check_tensor_scalar(&data, loc)?;
            InstData::TensorScalar(Box::new(data))
        }
        Record::TensorScalarCumulative { op0, s0, reverse0, op1, initial, .. } => {
            let (src, operand0) = (src()?, scalar(Some(s0), 0.0)?);
            let initial = scalar(Some(initial), 0.0)?;
            for (name, s) in [("s0", &operand0), ("initial", &initial)] {
                if let ScalarOperand::Tile(c) = s {
                    if c.dtype != DType::Fp32 {
                        return Err(invalid(format!(
                            "tensor_scalar_cumulative {name} is a {} column; a per-partition scalar is fp32",
                            c.dtype
                        )));
                    }
                }
            }
            InstData::TensorScalarCumulative(Box::new(TensorScalarCumulativeData {
                op0: alu_op(*op0),
                op1: alu_op(*op1),
                reverse0: *reverse0,
                dst,
                src,
                operand0,
                initial,
            }))
        }
        Record::TensorPartitionReduce { alu, .. } => {
            let op = alu_op(*alu);
            if !penguin::PARTITION_REDUCE_OPS.contains(&op) {
                return Err(invalid(format!(
                    "tensor_partition_reduce by `{alu}` (add, maximum, minimum, multiply, bitwise_and, bitwise_or, \
                     bitwise_xor)"
                )));
            }
            InstData::TensorPartitionReduce(TensorPartitionReduceData { op, dst, src: src()? })
        }
        Record::TensorReduce { alu, negate, .. } => {
            let op = alu_op(*alu);
            if !op.reduces() {
                return Err(invalid(format!(
                    "tensor_reduce by `{alu}`, which is not a reduction (add, subtract, multiply, maximum, minimum, \
                     bitwise_and, bitwise_or, bitwise_xor)"
                )));
            }
            InstData::TensorReduce(TensorReduceData { op, negate: *negate, dst, src: src()? })
        }
        Record::AffineSelect { pattern, channel_multiplier, offset, cmp, value, .. } => {
            InstData::AffineSelect(AffineSelectData {
                cmp: cmp_op(*cmp),
                offset: int32("offset", *offset, loc)?,
                channel_multiplier: int32("channel_multiplier", *channel_multiplier, loc)?,
                pattern: affine_pattern(pattern, loc)?,
                value: value.0,
                dst,
                src: src()?,
            })
        }
        Record::Iota { pattern, offset, channel_multiplier, .. } => InstData::Iota(IotaData {
            offset: int32("offset", *offset, loc)?,
            channel_multiplier: int32("channel_multiplier", *channel_multiplier, loc)?,
            pattern: affine_pattern(pattern, loc)?,
            dst,
        }),
        Record::BnStats { .. } => InstData::BnStats(BnStatsData { dst, src: src()? }),
        Record::BnAggr { .. } => InstData::BnAggr(BnAggrData { dst, src: src()? }),
        _ => return Err(bug()),
    })
}

/// The engine and dtype rules of `tensor_scalar` that the kernel chose (NKI ISA
/// `tensor_scalar`): ACT runs multiply, add, or multiply then add; GpSimd only rsqrt; a
/// column operand of an arithmetic operator is fp32.
fn check_tensor_scalar(t: &TensorScalarData, loc: &str) -> Result<(), NkiError> {
    let unsupported = |what: String| NkiError::Unsupported { loc: loc.to_string(), record: "tensor_scalar", what };
    tensor_scalar_engine(t.engine, t.op0, t.op1).map_err(unsupported)?;
    let bitvec = t.op0.class() == AluClass::Bitvec;
    for (name, s) in [("s0", &t.operand0), ("s1", &t.operand1)] {
        if let ScalarOperand::Tile(c) = s {
            if !bitvec && c.dtype != DType::Fp32 {
                return Err(NkiError::Invalid {
                    loc: loc.to_string(),
                    message: format!("tensor_scalar {name} is a {} column; a per-partition scalar is fp32", c.dtype),
                });
            }
        }
    }
    Ok(())
}

/// Whether `engine` runs `tensor_scalar` with these operators (the reason when not).
fn tensor_scalar_engine(engine: ComputeEngine, op0: AluOp, op1: Option<AluOp>) -> Result<(), String> {
    let ops = match op1 {
        Some(op1) => format!("op0={op0} op1={op1}"),
        None => format!("op0={op0}"),
    };
    let act_ok = matches!((op0, op1), (AluOp::Multiply, Some(AluOp::Add)) | (AluOp::Multiply | AluOp::Add, None));
    match engine {
        ComputeEngine::Act if !act_ok => {
            Err(format!("{ops} on act (ScalarE runs multiply, add, or multiply then add)"))
        }
        ComputeEngine::Pool if !(op0 == AluOp::Rsqrt && op1.is_none()) => {
            Err(format!("{ops} on pool (GpSimd runs tensor_scalar only as rsqrt)"))
        }
        _ => Ok(()),
    }
}

/// The Penguin comparison of an `affine_select`.
fn cmp_op(c: Cmp) -> AluOp {
    match c {
        Cmp::Equal => AluOp::IsEqual,
        Cmp::NotEqual => AluOp::NotEqual,
        Cmp::Greater => AluOp::IsGt,
        Cmp::GreaterEqual => AluOp::IsGe,
        Cmp::Less => AluOp::IsLt,
        Cmp::LessEqual => AluOp::IsLe,
    }
}

fn int32(what: &str, v: i64, loc: &str) -> Result<i32, NkiError> {
    i32::try_from(v).map_err(|_| NkiError::Invalid {
        loc: loc.to_string(),
        message: format!("{what} {v} does not fit int32 (the engine computes affine values in int32)"),
    })
}

/// An affine pattern of the trace as Penguin's (int32 steps, 1 to 4 dimensions).
fn affine_pattern(p: &[PatternDim], loc: &str) -> Result<AffinePattern, NkiError> {
    let invalid = |message: String| NkiError::Invalid { loc: loc.to_string(), message };
    if p.is_empty() || p.len() > MAX_PATTERN_DIMS {
        return Err(invalid(format!("an affine pattern of {} dimensions (1 to {MAX_PATTERN_DIMS})", p.len())));
    }
    p.iter()
        .map(|&(step, num)| {
            let step = int32("a pattern step", step, loc)?;
            let num = u32::try_from(num)
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| invalid(format!("a pattern dimension of {num} elements")))?;
            Ok(AffineDim { step, num })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(AffinePattern)
}
