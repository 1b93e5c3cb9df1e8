//! The one place that maps trace records onto Penguin instructions: which records ntile can
//! express today, their operands (what each writes and reads), the memory and shape rules
//! of each, the engine chosen where a record leaves it to the builder, and the instruction
//! emitted. The compute-engine kinds (activation, tensor_scalar, tensor_reduce,
//! affine_select, iota, bn_stats, bn_aggr) are in [`compute`]. A form ntile has no
//! instruction for (a DVE transpose, a non-sum activation reduce, ...) fails here with
//! [`NkiError::Unsupported`]; giving it instructions is a change to this module.

use penguin::{
    AluClass, AluOp, CastMode, ComputeEngine, DmaCopyData, DmaGatherData, DmaQueueHint, DmaScatterAddData,
    DmaScatterData, InstData, InstTile, Memory, MemsetData, TensorCopyData, TensorTensorData, TransposeData,
};

use crate::error::NkiError;
use crate::trace::{Alu, EngineName, Record, Scalar, Top8Name, View};
use crate::view::Resolved;

mod compute;

/// What an operand does to its tile (for liveness and the PSUM rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Written.
    Write,
    /// Read.
    Read,
    /// A matmul's result: written or accumulated into.
    Accumulate,
    /// Read, then written in part (a predicated copy's destination).
    Update,
}

/// One operand of a record: its name in the trace, the view and its role.
pub(crate) type Operand<'a> = (&'static str, &'a View, Role);

/// The operands of a record ntile supports (the destination first), `None` for a loop
/// marker, or the error for a record it does not support yet.
pub(crate) fn operands<'a>(r: &'a Record, loc: &str) -> Result<Option<Vec<Operand<'a>>>, NkiError> {
    use Role::{Accumulate, Read, Update, Write};
    let unsupported = |what: String| NkiError::Unsupported { loc: loc.to_string(), record: r.kind(), what };
    Ok(Some(match r {
        Record::DmaCopy { dst, src, .. } => vec![("dst", dst, Write), ("src", src, Read)],
        Record::DmaGather { dst, table, indices, .. } => {
            vec![("dst", dst, Write), ("table", table, Read), ("indices", indices, Read)]
        }
        Record::DmaScatter { table, src, indices, .. } | Record::DmaScatterAdd { table, src, indices, .. } => {
            vec![("table", table, Update), ("src", src, Read), ("indices", indices, Read)]
        }
        Record::Matmul { dst, stationary, moving, .. } => {
            vec![("dst", dst, Accumulate), ("stationary", stationary, Read), ("moving", moving, Read)]
        }
        Record::Transpose { dst, src, engine, .. } => {
            if let Some(e @ (EngineName::Dve | EngineName::Act | EngineName::Pool | EngineName::Sp)) = engine {
                return Err(unsupported(format!(
                    "a transpose on {} (ntile transposes on the PE, through PSUM)",
                    e.name()
                )));
            }
            vec![("dst", dst, Write), ("src", src, Read)]
        }
        Record::TensorCopy { dst, src, .. } => vec![("dst", dst, Write), ("src", src, Read)],
        Record::Memset { dst, .. } => vec![("dst", dst, Write)],
        Record::TensorTensor { dst, in0, in1, alu, .. } => {
            if alu_op(*alu).class() == AluClass::Unary {
                return Err(unsupported(format!(
                    "the unary ALU operation `{alu}` in tensor_tensor (tensor_scalar takes it)"
                )));
            }
            vec![("dst", dst, Write), ("in0", in0, Read), ("in1", in1, Read)]
        }
        Record::TensorTensorScan { dst, in0, in1, op0, op1, initial, .. } => {
            for alu in [op0, op1] {
                if !matches!(alu_op(*alu).class(), AluClass::Arithmetic | AluClass::Compare) {
                    return Err(unsupported(format!(
                        "the ALU operation `{alu}` in tensor_tensor_scan (its operators are binary arithmetic)"
                    )));
                }
            }
            let mut ops = vec![("dst", dst, Write), ("data0", in0, Read), ("data1", in1, Read)];
            if let Scalar::View(v) = initial {
                ops.push(("initial", v, Read));
            }
            ops
        }
        Record::StreamShuffle { dst, src, .. } => vec![("dst", dst, Update), ("src", src, Read)],
        Record::Top8 { dst, src, vals, idx, .. } => {
            let mut ops = vec![("dst", dst, Write), ("src", src, Read)];
            if let Some(v) = vals {
                ops.push(("vals", v, Read));
            }
            if let Some(i) = idx {
                ops.push(("idx", i, Write));
            }
            ops
        }
        Record::TensorCopyPredicated { dst, pred, src, .. } => {
            let mut ops = vec![("dst", dst, Update), ("pred", pred, Read)];
            if let Scalar::View(v) = src {
                ops.push(("src", v, Read));
            }
            ops
        }
        Record::Activation { .. }
        | Record::TensorScalar { .. }
        | Record::TensorScalarCumulative { .. }
        | Record::TensorReduce { .. }
        | Record::TensorPartitionReduce { .. }
        | Record::AffineSelect { .. }
        | Record::Iota { .. }
        | Record::BnStats { .. }
        | Record::BnAggr { .. } => return compute::operands(r, loc).map(Some),
        Record::LoopBegin { .. } | Record::Iteration { .. } | Record::LoopEnd { .. } => return Ok(None),
    }))
}

/// The Penguin operator of an ALU name (every name of the format has one).
pub(crate) fn alu_op(alu: Alu) -> AluOp {
    match alu {
        Alu::Add => AluOp::Add,
        Alu::Subtract => AluOp::Subtract,
        Alu::Multiply => AluOp::Multiply,
        Alu::Divide => AluOp::Divide,
        Alu::Maximum => AluOp::Max,
        Alu::Minimum => AluOp::Min,
        Alu::Power => AluOp::Pow,
        Alu::Mod => AluOp::Mod,
        Alu::Fmod => AluOp::Fmod,
        Alu::LogicalAnd => AluOp::LogicalAnd,
        Alu::LogicalOr => AluOp::LogicalOr,
        Alu::LogicalXor => AluOp::LogicalXor,
        Alu::AbsMax => AluOp::AbsMax,
        Alu::AbsMin => AluOp::AbsMin,
        Alu::Equal => AluOp::IsEqual,
        Alu::NotEqual => AluOp::NotEqual,
        Alu::Greater => AluOp::IsGt,
        Alu::GreaterEqual => AluOp::IsGe,
        Alu::Less => AluOp::IsLt,
        Alu::LessEqual => AluOp::IsLe,
        Alu::BitwiseAnd => AluOp::BitwiseAnd,
        Alu::BitwiseOr => AluOp::BitwiseOr,
        Alu::BitwiseXor => AluOp::BitwiseXor,
        Alu::LeftShift => AluOp::LeftShift,
        Alu::RightShift => AluOp::RightShift,
        Alu::Abs => AluOp::Abs,
        Alu::Square => AluOp::Square,
        Alu::Relu => AluOp::Relu,
        Alu::Rsqrt => AluOp::Rsqrt,
        Alu::Reciprocal => AluOp::Reciprocal,
    }
}

/// The memory of each operand, in [`operands`] order.
pub(crate) type Memories<'m> = &'m [Memory];

/// The memory and shape rules of a supported record (rule 1 of the design): `res` and
/// `mem` are its operands resolved, in [`operands`] order.
pub(crate) fn check(r: &Record, res: &[Resolved], mem: Memories<'_>, loc: &str) -> Result<(), NkiError> {
    let wrong = |op: &'static str, operand: &'static str, m: Memory, rule: &'static str| NkiError::WrongMemory {
        loc: loc.to_string(),
        op,
        operand,
        buffer: buffer_name(m),
        rule,
    };
    let shapes = |what: String| NkiError::ShapeMismatch { loc: loc.to_string(), op: r.kind(), what };
    let same = |a: &Resolved, b: &Resolved, an: &str, bn: &str| {
        if a.partitions() != b.partitions() || a.free_elems() != b.free_elems() {
            Err(shapes(format!(
                "{an} {:?} and {bn} {:?} differ in partitions or elements per partition",
                a.shape, b.shape
            )))
        } else {
            Ok(())
        }
    };
    let pool = |e: &Option<EngineName>| *e == Some(EngineName::Pool);
    match r {
        Record::DmaCopy { .. } => {
            for (i, name) in [(0, "dst"), (1, "src")] {
                if mem[i] == Memory::Psum {
                    return Err(wrong("dma_copy", name, mem[i], "DMA moves between HBM and SBUF, never PSUM"));
                }
            }
            same(&res[0], &res[1], "dst", "src")
        }
        Record::DmaGather { .. } | Record::DmaScatter { .. } | Record::DmaScatterAdd { .. } => {
            indexed(r.kind(), res, mem, loc)
        }
        Record::Matmul { .. } => {
            if mem[0] != Memory::Psum {
                return Err(NkiError::MatmulResultNotPsum { loc: loc.to_string() });
            }
            for (i, name) in [(1, "stationary"), (2, "moving")] {
                if mem[i] != Memory::Sbuf {
                    return Err(wrong("matmul", name, mem[i], "the PE reads its operands from SBUF"));
                }
            }
            Ok(())
        }
        Record::Transpose { .. } => {
            if mem[0] != Memory::Psum {
                return Err(wrong("transpose", "dst", mem[0], "a PE transpose writes PSUM"));
            }
            if mem[1] != Memory::Sbuf {
                return Err(wrong("transpose", "src", mem[1], "a PE transpose reads SBUF"));
            }
            let (d, s) = (&res[0], &res[1]);
            if d.partitions() != s.free_elems() || d.free_elems() != s.partitions() {
                return Err(shapes(format!("dst {:?} is not the transpose of src {:?}", d.shape, s.shape)));
            }
            for (v, name) in [(s, "src"), (d, "dst")] {
                if v.free_elems() > 128 {
                    return Err(shapes(format!("{name} {:?} has more than 128 elements per partition", v.shape)));
                }
            }
            Ok(())
        }
        Record::TensorCopy { engine, .. } => {
            for (i, name) in [(0, "dst"), (1, "src")] {
                if mem[i] == Memory::Hbm {
                    return Err(wrong("tensor_copy", name, mem[i], "compute engines work on chip (use dma_copy)"));
                }
                if mem[i] == Memory::Psum && pool(engine) {
                    return Err(wrong("tensor_copy", name, mem[i], "GpSimd cannot access PSUM"));
                }
            }
            same(&res[0], &res[1], "dst", "src")
        }
        Record::Memset { engine, .. } => {
            if mem[0] == Memory::Hbm {
                return Err(wrong("memset", "dst", mem[0], "compute engines work on chip"));
            }
            if mem[0] == Memory::Psum && pool(engine) {
                return Err(wrong("memset", "dst", mem[0], "GpSimd cannot access PSUM"));
            }
            Ok(())
        }
        Record::TensorTensor { engine, .. } => {
            for (i, name) in [(0, "dst"), (1, "in0"), (2, "in1")] {
                if mem[i] == Memory::Hbm {
                    return Err(wrong("tensor_tensor", name, mem[i], "compute engines work on chip"));
                }
                if mem[i] == Memory::Psum && pool(engine) {
                    return Err(wrong("tensor_tensor", name, mem[i], "GpSimd cannot access PSUM"));
                }
            }
            if mem[1] == Memory::Psum && mem[2] == Memory::Psum {
                return Err(wrong("tensor_tensor", "in1", Memory::Psum, "at most one input may be in PSUM"));
            }
            same(&res[0], &res[1], "dst", "in0")?;
            same(&res[0], &res[2], "dst", "in1")
        }
        Record::TensorTensorScan { .. } => {
            for (i, name) in [(0, "dst"), (1, "data0"), (2, "data1"), (3, "initial")].into_iter().take(res.len()) {
                if mem[i] == Memory::Hbm {
                    return Err(wrong("tensor_tensor_scan", name, mem[i], "compute engines work on chip"));
                }
            }
            if mem[1] == Memory::Psum && mem[2] == Memory::Psum {
                return Err(wrong("tensor_tensor_scan", "data1", Memory::Psum, "at most one input may be in PSUM"));
            }
            same(&res[0], &res[1], "dst", "data0")?;
            same(&res[0], &res[2], "dst", "data1")?;
            if let Some(c) = res.get(3) {
                if c.partitions() != res[0].partitions() || c.free_elems() != 1 {
                    return Err(shapes(format!(
                        "initial {:?} is not a [{}, 1] column (one value per partition)",
                        c.shape,
                        res[0].partitions()
                    )));
                }
            }
            Ok(())
        }
        Record::Top8 { mode, .. } => {
            let op = match mode {
                Top8Name::Max8 => "max8",
                Top8Name::FindIndex8 => "nc_find_index8",
                Top8Name::MatchReplace8 => "nc_match_replace8",
            };
            for (i, name) in ["dst", "src", "vals", "idx"].into_iter().enumerate().take(res.len()) {
                if mem[i] == Memory::Hbm {
                    return Err(wrong(op, name, mem[i], "compute engines work on chip"));
                }
            }
            Ok(())
        }
        Record::StreamShuffle { .. } => {
            for (i, name) in [(0, "dst"), (1, "src")] {
                if mem[i] == Memory::Hbm {
                    return Err(wrong("stream_shuffle", name, mem[i], "compute engines work on chip"));
                }
            }
            if res[0].free_elems() != res[1].free_elems() {
                return Err(shapes(format!(
                    "stream_shuffle moves whole partitions: dst {:?} and src {:?} differ in elements per partition",
                    res[0].shape, res[1].shape
                )));
            }
            Ok(())
        }
        Record::TensorCopyPredicated { .. } => {
            for (i, name) in [(0, "dst"), (1, "pred"), (2, "src")].into_iter().take(res.len()) {
                if mem[i] == Memory::Hbm {
                    return Err(wrong("tensor_copy_predicated", name, mem[i], "compute engines work on chip"));
                }
            }
            if res.len() == 3 && mem[1] == Memory::Psum && mem[2] == Memory::Psum {
                return Err(wrong("tensor_copy_predicated", "src", Memory::Psum, "at most one input may be in PSUM"));
            }
            same(&res[0], &res[1], "dst", "pred")?;
            if let Some(s) = res.get(2) {
                same(&res[0], s, "dst", "src")?;
            }
            Ok(())
        }
        Record::Activation { .. }
        | Record::TensorScalar { .. }
        | Record::TensorScalarCumulative { .. }
        | Record::TensorReduce { .. }
        | Record::TensorPartitionReduce { .. }
        | Record::AffineSelect { .. }
        | Record::Iota { .. }
        | Record::BnStats { .. }
        | Record::BnAggr { .. } => compute::check(r, res, mem, loc),
        Record::LoopBegin { .. } | Record::Iteration { .. } | Record::LoopEnd { .. } => Ok(()),
    }
}

/// The trace's name of a memory.
pub(crate) fn buffer_name(m: Memory) -> &'static str {
    match m {
        Memory::Hbm => "hbm",
        Memory::Sbuf => "sbuf",
        Memory::Psum => "psum",
    }
}

/// What the builder decided for a record besides its operands.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Choice {
    /// The slot of the PSUM instance a copy reads (its engine alternates with it).
    pub(crate) psum_slot: Option<u64>,
    /// The DMA queue hint.
    pub(crate) queue: u32,
}

/// The compute engine of a record: the one it names, else the planner's choice (PSUM to
/// SBUF copies alternate DVE and ACT by the PSUM instance's slot, so that the choice is a
/// function of the place in the loop and streams roll; memsets of SBUF on GpSimd, of PSUM
/// on DVE; other elementwise work on DVE).
pub(crate) fn engine(
    r: &Record,
    named: Option<EngineName>,
    dst: Memory,
    choice: Choice,
    loc: &str,
) -> Result<ComputeEngine, NkiError> {
    match named {
        Some(EngineName::Act) => Ok(ComputeEngine::Act),
        Some(EngineName::Dve) => Ok(ComputeEngine::Dve),
        Some(EngineName::Pool) => Ok(ComputeEngine::Pool),
        Some(e @ (EngineName::Pe | EngineName::Sp)) => Err(NkiError::Unsupported {
            loc: loc.to_string(),
            record: r.kind(),
            what: format!("engine {} for {} (ntile runs it on act, dve or pool)", e.name(), r.kind()),
        }),
        None => Ok(match (r, choice.psum_slot) {
            (Record::Activation { .. }, _) => ComputeEngine::Act,
            (Record::AffineSelect { .. } | Record::Iota { .. }, _) => ComputeEngine::Pool,
            (Record::Memset { .. }, _) if dst == Memory::Sbuf => ComputeEngine::Pool,
            (Record::TensorCopy { .. }, Some(slot)) if slot % 2 == 1 => ComputeEngine::Act,
            _ => ComputeEngine::Dve,
        }),
    }
}

/// The Penguin instruction of a supported record other than a matmul (which goes through
/// the combine, see `emit.rs`); `tiles` are its operands in [`operands`] order.
pub(crate) fn inst(r: &Record, mut tiles: Vec<InstTile>, choice: Choice, loc: &str) -> Result<InstData, NkiError> {
    let bug = || NkiError::Internal(format!("{loc}: {} has the wrong number of operands", r.kind()));
    let mut take = || if tiles.is_empty() { Err(bug()) } else { Ok(tiles.remove(0)) };
    Ok(match r {
        Record::DmaCopy { .. } => {
            let (dst, src) = (take()?, take()?);
            InstData::DmaCopy(DmaCopyData { dst, src, cast: CastMode::Rne, queue: Some(DmaQueueHint(choice.queue)) })
        }
        Record::DmaGather { skip, .. } => {
            let (dst, table, index) = (take()?, take()?, take()?);
            int32_indices(&index, loc)?;
            InstData::DmaGather(DmaGatherData { dst, table, index, skip: *skip })
        }
        Record::DmaScatter { skip, .. } => {
            let (table, src, index) = (take()?, take()?, take()?);
            int32_indices(&index, loc)?;
            InstData::DmaScatter(DmaScatterData { table, src, index, skip: *skip })
        }
        Record::DmaScatterAdd { skip, .. } => {
            let (table, src, index) = (take()?, take()?, take()?);
            int32_indices(&index, loc)?;
            InstData::DmaScatterAdd(DmaScatterAddData { table, src, index, skip: *skip })
        }
        Record::Transpose { .. } => InstData::Transpose(TransposeData { dst: take()?, src: take()? }),
        Record::TensorCopy { engine: named, .. } => {
            let (dst, src) = (take()?, take()?);
            let engine = engine(r, *named, dst.memory, choice, loc)?;
            InstData::TensorCopy(TensorCopyData { engine, dst, src })
        }
        Record::Memset { value, engine: named, .. } => {
            let dst = take()?;
            let engine = engine(r, *named, dst.memory, choice, loc)?;
            InstData::Memset(MemsetData { engine, dst, value: value.0 })
        }
        Record::TensorTensor { alu, engine: named, .. } => {
            let (dst, lhs, rhs) = (take()?, take()?, take()?);
            let engine = engine(r, *named, dst.memory, choice, loc)?;
            InstData::TensorTensor(TensorTensorData { engine, op: alu_op(*alu), dst, lhs, rhs })
        }
        Record::TensorTensorScan { op0, op1, initial, .. } => {
            let (dst, data0, data1) = (take()?, take()?, take()?);
            let initial = match initial {
                Scalar::Imm(v) => penguin::ScalarOperand::Imm(v.0),
                Scalar::View(_) => {
                    let c = take()?;
                    if c.dtype != penguin::DType::Fp32 {
                        return Err(NkiError::Invalid {
                            loc: loc.to_string(),
                            message: format!("tensor_tensor_scan initial is a {} column; it must be fp32", c.dtype),
                        });
                    }
                    penguin::ScalarOperand::Tile(c)
                }
            };
            InstData::TensorTensorScan(Box::new(penguin::TensorTensorScanData {
                op0: alu_op(*op0),
                op1: alu_op(*op1),
                dst,
                data0,
                data1,
                initial,
            }))
        }
        Record::Top8 { mode, vals, idx, value, .. } => {
            let (dst, src) = (take()?, take()?);
            let vals = if vals.is_some() { Some(take()?) } else { None };
            let idx = if idx.is_some() { Some(take()?) } else { None };
            // The trace's names are Penguin's.
            let mode: penguin::Top8Mode = mode.name().parse().map_err(|_| bug())?;
            InstData::Top8(Box::new(penguin::Top8Data { mode, value: value.map_or(0.0, |v| v.0), dst, src, vals, idx }))
        }
        Record::StreamShuffle { shuffle_mask, .. } => {
            let (dst, src) = (take()?, take()?);
            let invalid = |message: String| NkiError::Invalid { loc: loc.to_string(), message };
            let mut mask = [0u8; penguin::SHUFFLE_QUADRANT];
            let ok = shuffle_mask.len() == mask.len()
                && shuffle_mask
                    .iter()
                    .all(|&m| (m as usize) < penguin::SHUFFLE_QUADRANT || m == u32::from(penguin::SHUFFLE_KEEP));
            if !ok {
                return Err(invalid(format!(
                    "stream_shuffle mask {shuffle_mask:?} is not 32 source partitions 0..31 (or 255, to keep one)"
                )));
            }
            for (m, &v) in mask.iter_mut().zip(shuffle_mask) {
                *m = v as u8;
            }
            if dst.dtype != src.dtype {
                return Err(invalid(format!(
                    "stream_shuffle copies bit for bit: its source is {} and its destination {}",
                    src.dtype, dst.dtype
                )));
            }
            let mask = penguin::ShuffleMask(mask);
            let q = penguin::SHUFFLE_QUADRANT;
            let (dp, sp) = (dst.partitions() as usize, src.partitions() as usize);
            if let Some(w) = (0..dp).filter_map(|j| mask.source(j).map(|m| j / q * q + m)).max().filter(|&w| w >= sp) {
                return Err(invalid(format!(
                    "stream_shuffle reads source partition {w} of a {sp}-partition source \
                     (destination partition q * 32 + i takes source partition q * 32 + shuffle_mask[i])"
                )));
            }
            InstData::StreamShuffle(Box::new(penguin::StreamShuffleData { mask, dst, src }))
        }
        Record::TensorCopyPredicated { src, reverse, .. } => {
            let (dst, predicate) = (take()?, take()?);
            let invalid = |message: String| NkiError::Invalid { loc: loc.to_string(), message };
            if predicate.dtype.is_float() {
                return Err(invalid(format!(
                    "tensor_copy_predicated predicate is {}; it must be an integer tile (nonzero copies)",
                    predicate.dtype
                )));
            }
            let src = match src {
                Scalar::Imm(v) => penguin::ScalarOperand::Imm(v.0),
                Scalar::View(_) => {
                    let s = take()?;
                    if s.dtype != dst.dtype {
                        return Err(invalid(format!(
                            "tensor_copy_predicated copies bit for bit: its source is {} and its destination {}",
                            s.dtype, dst.dtype
                        )));
                    }
                    penguin::ScalarOperand::Tile(s)
                }
            };
            InstData::TensorCopyPredicated(Box::new(penguin::TensorCopyPredicatedData {
                reverse: *reverse,
                dst,
                predicate,
                src,
            }))
        }
        Record::Activation { .. }
        | Record::TensorScalar { .. }
        | Record::TensorScalarCumulative { .. }
        | Record::TensorReduce { .. }
        | Record::TensorPartitionReduce { .. }
        | Record::AffineSelect { .. }
        | Record::Iota { .. }
        | Record::BnStats { .. }
        | Record::BnAggr { .. } => compute::inst(r, tiles, choice, loc)?,
        Record::Matmul { .. } | Record::LoopBegin { .. } | Record::Iteration { .. } | Record::LoopEnd { .. } => {
            return Err(bug())
        }
    })
}

/// A gather's or scatter-add's operands: the table in HBM, the rows and the `[K, 1]` indices in
/// SBUF, one table row's elements per row.
fn indexed(op: &'static str, res: &[Resolved], mem: Memories<'_>, loc: &str) -> Result<(), NkiError> {
    let (rows, table) = if op == "dma_gather" { (0, 1) } else { (1, 0) };
    let names = if op == "dma_gather" { ["dst", "table", "indices"] } else { ["table", "src", "indices"] };
    let wrong = |i: usize, rule: &'static str| NkiError::WrongMemory {
        loc: loc.to_string(),
        op,
        operand: names[i],
        buffer: buffer_name(mem[i]),
        rule,
    };
    if mem[table] != Memory::Hbm {
        return Err(wrong(table, "the rows an index names are rows of an HBM tensor"));
    }
    for i in [rows, 2] {
        if mem[i] != Memory::Sbuf {
            return Err(wrong(i, "an indirect DMA moves rows to or from SBUF, its indices in SBUF"));
        }
    }
    let (r, t, x) = (&res[rows], &res[table], &res[2]);
    if x.free_elems() != 1 || x.partitions() != r.partitions() || r.free_elems() != t.free_elems() {
        return Err(NkiError::ShapeMismatch {
            loc: loc.to_string(),
            op,
            what: format!(
                "{} {:?} must be one row of table {:?} per index of indices {:?} (a [{}, 1] column)",
                names[rows],
                r.shape,
                t.shape,
                x.shape,
                r.partitions()
            ),
        });
    }
    Ok(())
}

/// Row numbers are int32.
fn int32_indices(index: &InstTile, loc: &str) -> Result<(), NkiError> {
    if index.dtype != penguin::DType::Int32 {
        return Err(NkiError::Invalid {
            loc: loc.to_string(),
            message: format!("the indices of an indirect DMA are int32, not {}", index.dtype),
        });
    }
    Ok(())
}
