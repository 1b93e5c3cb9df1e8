//! The records of a trace ([`Record`]) and how they are read: every record is first read as
//! one flat [`RawRecord`] (all fields of all kinds optional), so that a field of the wrong
//! type is reported at its exact path (`ops[12].dst.ap`), and then checked for the fields
//! its kind needs and allows.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use super::{
    Accumulate, ActivationFunc, Alu, Cmp, EngineName, Imm, Loc, LoopKind, PatternDim, Reduce, Scalar, TracePerfMode,
    View,
};

/// One record of the program, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", try_from = "RawRecord")]
pub enum Record {
    /// DMA `dst = src` (casting through fp32 when the dtypes differ).
    DmaCopy {
        /// Where.
        loc: Loc,
        /// Destination (HBM or SBUF).
        dst: View,
        /// Source (HBM or SBUF).
        src: View,
    },
    /// `dst[M, N] (+)= stationary[K, M]^T @ moving[K, N]` into PSUM.
    Matmul {
        /// Where.
        loc: Loc,
        /// The PSUM result.
        dst: View,
        /// `[K, M]` in SBUF.
        stationary: View,
        /// `[K, N]` in SBUF.
        moving: View,
        /// How the result treats the region's contents.
        #[serde(serialize_with = "serialize_accumulate")]
        accumulate: Accumulate,
        /// PE performance mode.
        perf_mode: TracePerfMode,
        /// `[row, col]` on the PE array.
        tile_position: Option<[u32; 2]>,
        /// `[rows, cols]` on the PE array.
        tile_size: Option<[u32; 2]>,
    },
    /// `dst[j, i] = src[i, j]`.
    Transpose {
        /// Where.
        loc: Loc,
        /// Result.
        dst: View,
        /// Source.
        src: View,
        /// `pe` (through PSUM) or `dve`; null: the builder chooses.
        engine: Option<EngineName>,
    },
    /// An on-chip copy.
    TensorCopy {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
        /// The engine, or null.
        engine: Option<EngineName>,
    },
    /// A fill.
    Memset {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// The value.
        value: Imm,
        /// The engine, or null.
        engine: Option<EngineName>,
    },
    /// `dst = in0 ALU in1` elementwise.
    TensorTensor {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Left operand.
        in0: View,
        /// Right operand.
        in1: View,
        /// The operation.
        alu: Alu,
        /// The engine, or null.
        engine: Option<EngineName>,
    },
    /// `dst = func(src * scale + bias)`, optionally with a row reduction.
    Activation {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
        /// The function.
        func: ActivationFunc,
        /// A number or a `[P, 1]` view.
        scale: Scalar,
        /// Null, a number or a view.
        bias: Option<Scalar>,
        /// The row reduction, if any.
        reduce: Option<Reduce>,
    },
    /// `dst = (src op0 s0) op1 s1`.
    TensorScalar {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
        /// First operation.
        op0: Alu,
        /// Its scalar.
        s0: Scalar,
        /// Whether its operands are swapped.
        reverse0: bool,
        /// Second operation, if any.
        op1: Option<Alu>,
        /// Its scalar.
        s1: Option<Scalar>,
        /// Whether its operands are swapped.
        reverse1: bool,
        /// The engine, or null.
        engine: Option<EngineName>,
    },
    /// A scan along each partition: `x = initial`, then `x = op1(op0(in0[i], x), in1[i])`,
    /// `dst[i] = x` (`nki.isa.tensor_tensor_scan`, on DVE).
    TensorTensorScan {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// `data0`.
        in0: View,
        /// `data1`.
        in1: View,
        /// The operator with `in0`.
        op0: Alu,
        /// The operator with `in1`.
        op1: Alu,
        /// A number or a `[P, 1]` column.
        initial: Scalar,
    },
    /// `dst[i] = src[i]` (or the number) where `pred[i]` is nonzero (zero with `reverse`);
    /// the other elements keep their values (`nki.isa.tensor_copy_predicated`, on DVE).
    TensorCopyPredicated {
        /// Where.
        loc: Loc,
        /// Destination, read and written.
        dst: View,
        /// The predicate.
        pred: View,
        /// A view (the record's `src`) or a number (its `value`).
        src: Scalar,
        /// Copy where the predicate is zero instead.
        reverse: bool,
    },
    /// Destination partition `q * 32 + i` takes source partition `q * 32 + shuffle_mask[i]`
    /// (255: keeps its values) (`nki.isa.nc_stream_shuffle`, on DVE).
    StreamShuffle {
        /// Where.
        loc: Loc,
        /// Destination, read and written.
        dst: View,
        /// Source.
        src: View,
        /// 32 source partitions (or 255).
        shuffle_mask: Vec<u32>,
    },
    /// A reduction along free axes.
    TensorReduce {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
        /// The reduction.
        alu: Alu,
        /// The reduced axes of the source view (>= 1).
        axes: Vec<u32>,
        /// Whether the result is negated.
        negate: bool,
        /// Whether reduced axes are kept with size 1.
        keepdims: bool,
    },
    /// `dst = (offset + channel_multiplier * p + sum(pattern) CMP 0) ? src : value`.
    AffineSelect {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
        /// The free terms.
        pattern: Vec<PatternDim>,
        /// The partition coefficient.
        channel_multiplier: i64,
        /// The constant term.
        offset: i64,
        /// The comparison.
        cmp: Cmp,
        /// The value where it fails.
        value: Imm,
    },
    /// `dst[p, f..] = offset + channel_multiplier * p + sum(pattern)`.
    Iota {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// The free terms.
        pattern: Vec<PatternDim>,
        /// The constant term.
        offset: i64,
        /// The partition coefficient.
        channel_multiplier: i64,
    },
    /// Batch-norm statistics.
    BnStats {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
    },
    /// Batch-norm aggregation.
    BnAggr {
        /// Where.
        loc: Loc,
        /// Destination.
        dst: View,
        /// Source.
        src: View,
    },
    /// A loop of the kernel begins.
    LoopBegin {
        /// Where.
        loc: Loc,
        /// Which range.
        kind: LoopKind,
        /// Its iterations.
        trips: u64,
    },
    /// An iteration begins (before its first record).
    Iteration {
        /// Where.
        loc: Loc,
        /// Its index.
        index: u64,
    },
    /// The innermost open loop ends.
    LoopEnd {
        /// Where.
        loc: Loc,
    },
}

impl Record {
    /// The record's location.
    pub fn loc(&self) -> Loc {
        match self {
            Record::DmaCopy { loc, .. }
            | Record::Matmul { loc, .. }
            | Record::Transpose { loc, .. }
            | Record::TensorCopy { loc, .. }
            | Record::Memset { loc, .. }
            | Record::TensorTensor { loc, .. }
            | Record::Activation { loc, .. }
            | Record::TensorScalar { loc, .. }
            | Record::TensorTensorScan { loc, .. }
            | Record::TensorCopyPredicated { loc, .. }
            | Record::StreamShuffle { loc, .. }
            | Record::TensorReduce { loc, .. }
            | Record::AffineSelect { loc, .. }
            | Record::Iota { loc, .. }
            | Record::BnStats { loc, .. }
            | Record::BnAggr { loc, .. }
            | Record::LoopBegin { loc, .. }
            | Record::Iteration { loc, .. }
            | Record::LoopEnd { loc } => *loc,
        }
    }

    /// The record's kind, as the trace names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Record::DmaCopy { .. } => "dma_copy",
            Record::Matmul { .. } => "matmul",
            Record::Transpose { .. } => "transpose",
            Record::TensorCopy { .. } => "tensor_copy",
            Record::Memset { .. } => "memset",
            Record::TensorTensor { .. } => "tensor_tensor",
            Record::Activation { .. } => "activation",
            Record::TensorScalar { .. } => "tensor_scalar",
            Record::TensorTensorScan { .. } => "tensor_tensor_scan",
            Record::TensorCopyPredicated { .. } => "tensor_copy_predicated",
            Record::StreamShuffle { .. } => "stream_shuffle",
            Record::TensorReduce { .. } => "tensor_reduce",
            Record::AffineSelect { .. } => "affine_select",
            Record::Iota { .. } => "iota",
            Record::BnStats { .. } => "bn_stats",
            Record::BnAggr { .. } => "bn_aggr",
            Record::LoopBegin { .. } => "loop_begin",
            Record::Iteration { .. } => "iteration",
            Record::LoopEnd { .. } => "loop_end",
        }
    }
}

fn serialize_accumulate<S: Serializer>(a: &Accumulate, s: S) -> Result<S::Ok, S::Error> {
    match a {
        Accumulate::Overwrite => s.serialize_bool(false),
        Accumulate::Accumulate => s.serialize_bool(true),
        Accumulate::Infer => s.serialize_none(),
        Accumulate::Add => s.serialize_str("add"),
    }
}

/// `accumulate`: `false`, `true`, `null` or `"add"`.
fn deserialize_accumulate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Accumulate>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum A {
        Bool(bool),
        Text(String),
    }
    match Option::<A>::deserialize(d)? {
        None => Ok(Some(Accumulate::Infer)),
        Some(A::Bool(false)) => Ok(Some(Accumulate::Overwrite)),
        Some(A::Bool(true)) => Ok(Some(Accumulate::Accumulate)),
        Some(A::Text(t)) if t == "add" => Ok(Some(Accumulate::Add)),
        Some(A::Text(t)) => Err(de::Error::custom(format!("expected true, false, null or \"add\", found \"{t}\""))),
    }
}

/// A record with every field of every kind, each optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecord {
    op: String,
    loc: Option<Loc>,
    dst: Option<View>,
    src: Option<View>,
    stationary: Option<View>,
    moving: Option<View>,
    #[serde(default, deserialize_with = "deserialize_accumulate")]
    accumulate: Option<Accumulate>,
    perf_mode: Option<TracePerfMode>,
    tile_position: Option<[u32; 2]>,
    tile_size: Option<[u32; 2]>,
    engine: Option<EngineName>,
    value: Option<Imm>,
    in0: Option<View>,
    in1: Option<View>,
    alu: Option<Alu>,
    func: Option<ActivationFunc>,
    scale: Option<Scalar>,
    bias: Option<Scalar>,
    reduce: Option<Reduce>,
    op0: Option<Alu>,
    s0: Option<Scalar>,
    reverse0: Option<bool>,
    op1: Option<Alu>,
    s1: Option<Scalar>,
    reverse1: Option<bool>,
    initial: Option<Scalar>,
    pred: Option<View>,
    reverse: Option<bool>,
    shuffle_mask: Option<Vec<u32>>,
    axes: Option<Vec<u32>>,
    negate: Option<bool>,
    keepdims: Option<bool>,
    pattern: Option<Vec<PatternDim>>,
    channel_multiplier: Option<i64>,
    offset: Option<i64>,
    cmp: Option<Cmp>,
    kind: Option<LoopKind>,
    trips: Option<u64>,
    index: Option<u64>,
}

impl RawRecord {
    /// The names of the fields that are present, besides `op`.
    fn present(&self) -> Vec<&'static str> {
        let fields: [(&'static str, bool); 38] = [
            ("loc", self.loc.is_some()),
            ("dst", self.dst.is_some()),
            ("src", self.src.is_some()),
            ("stationary", self.stationary.is_some()),
            ("moving", self.moving.is_some()),
            ("accumulate", self.accumulate.is_some()),
            ("perf_mode", self.perf_mode.is_some()),
            ("tile_position", self.tile_position.is_some()),
            ("tile_size", self.tile_size.is_some()),
            ("engine", self.engine.is_some()),
            ("value", self.value.is_some()),
            ("in0", self.in0.is_some()),
            ("in1", self.in1.is_some()),
            ("alu", self.alu.is_some()),
            ("func", self.func.is_some()),
            ("scale", self.scale.is_some()),
            ("bias", self.bias.is_some()),
            ("reduce", self.reduce.is_some()),
            ("op0", self.op0.is_some()),
            ("s0", self.s0.is_some()),
            ("reverse0", self.reverse0.is_some()),
            ("op1", self.op1.is_some()),
            ("s1", self.s1.is_some()),
            ("reverse1", self.reverse1.is_some()),
            ("initial", self.initial.is_some()),
            ("pred", self.pred.is_some()),
            ("reverse", self.reverse.is_some()),
            ("shuffle_mask", self.shuffle_mask.is_some()),
            ("axes", self.axes.is_some()),
            ("negate", self.negate.is_some()),
            ("keepdims", self.keepdims.is_some()),
            ("pattern", self.pattern.is_some()),
            ("channel_multiplier", self.channel_multiplier.is_some()),
            ("offset", self.offset.is_some()),
            ("cmp", self.cmp.is_some()),
            ("kind", self.kind.is_some()),
            ("trips", self.trips.is_some()),
            ("index", self.index.is_some()),
        ];
        fields.into_iter().filter(|(_, p)| *p).map(|(n, _)| n).collect()
    }
}

/// A required field of a record kind.
fn need<T>(op: &str, name: &str, v: Option<T>) -> Result<T, String> {
    v.ok_or_else(|| format!("{op} record: missing field `{name}`"))
}

impl TryFrom<RawRecord> for Record {
    type Error = String;

    fn try_from(r: RawRecord) -> Result<Record, String> {
        let op = r.op.clone();
        // Fields a kind may have; anything else present is an error.
        let allowed: &[&str] = match op.as_str() {
            "dma_copy" => &["dst", "src"],
            "matmul" => &["dst", "stationary", "moving", "accumulate", "perf_mode", "tile_position", "tile_size"],
            "transpose" | "tensor_copy" => &["dst", "src", "engine"],
            "memset" => &["dst", "value", "engine"],
            "tensor_tensor" => &["dst", "in0", "in1", "alu", "engine"],
            "activation" => &["dst", "src", "func", "scale", "bias", "reduce"],
            "tensor_scalar" => &["dst", "src", "op0", "s0", "reverse0", "op1", "s1", "reverse1", "engine"],
            "tensor_tensor_scan" => &["dst", "in0", "in1", "op0", "op1", "initial"],
            "tensor_copy_predicated" => &["dst", "pred", "src", "value", "reverse"],
            "stream_shuffle" => &["dst", "src", "shuffle_mask"],
            "tensor_reduce" => &["dst", "src", "alu", "axes", "negate", "keepdims"],
            "affine_select" => &["dst", "src", "pattern", "channel_multiplier", "offset", "cmp", "value"],
            "iota" => &["dst", "pattern", "offset", "channel_multiplier"],
            "bn_stats" | "bn_aggr" => &["dst", "src"],
            "loop_begin" => &["kind", "trips"],
            "iteration" => &["index"],
            "loop_end" => &[],
            other => {
                return Err(format!(
                    "unknown record kind `{other}` (expected dma_copy, matmul, transpose, tensor_copy, memset, \
                     tensor_tensor, activation, tensor_scalar, tensor_tensor_scan, tensor_copy_predicated, stream_shuffle, tensor_reduce, affine_select, iota, bn_stats, \
                     bn_aggr, loop_begin, iteration or loop_end)"
                ))
            }
        };
        if let Some(extra) = r.present().into_iter().find(|f| *f != "loc" && !allowed.contains(f)) {
            return Err(format!("{op} record: unknown field `{extra}`"));
        }
        let o = op.as_str();
        let loc = need(o, "loc", r.loc)?;
        let dst = || need(o, "dst", r.dst.clone());
        let src = || need(o, "src", r.src.clone());
        Ok(match o {
            "dma_copy" => Record::DmaCopy { loc, dst: dst()?, src: src()? },
            "matmul" => Record::Matmul {
                loc,
                dst: dst()?,
                stationary: need(o, "stationary", r.stationary)?,
                moving: need(o, "moving", r.moving)?,
                accumulate: r.accumulate.unwrap_or_default(),
                perf_mode: r.perf_mode.unwrap_or(TracePerfMode::None),
                tile_position: r.tile_position,
                tile_size: r.tile_size,
            },
            "transpose" => Record::Transpose { loc, dst: dst()?, src: src()?, engine: r.engine },
            "tensor_copy" => Record::TensorCopy { loc, dst: dst()?, src: src()?, engine: r.engine },
            "memset" => Record::Memset { loc, dst: dst()?, value: need(o, "value", r.value)?, engine: r.engine },
            "tensor_tensor" => Record::TensorTensor {
                loc,
                dst: dst()?,
                in0: need(o, "in0", r.in0)?,
                in1: need(o, "in1", r.in1)?,
                alu: need(o, "alu", r.alu)?,
                engine: r.engine,
            },
            "activation" => Record::Activation {
                loc,
                dst: dst()?,
                src: src()?,
                func: need(o, "func", r.func)?,
                scale: r.scale.unwrap_or(Scalar::Imm(Imm(1.0))),
                bias: r.bias,
                reduce: r.reduce,
            },
            "tensor_tensor_scan" => Record::TensorTensorScan {
                loc,
                dst: dst()?,
                in0: need(o, "in0", r.in0)?,
                in1: need(o, "in1", r.in1)?,
                op0: need(o, "op0", r.op0)?,
                op1: need(o, "op1", r.op1)?,
                initial: need(o, "initial", r.initial)?,
            },
            "tensor_copy_predicated" => Record::TensorCopyPredicated {
                loc,
                dst: dst()?,
                pred: need(o, "pred", r.pred)?,
                src: match (r.src, r.value) {
                    (Some(v), None) => Scalar::View(v),
                    (None, Some(x)) => Scalar::Imm(x),
                    _ => return Err(format!("{o} record: exactly one of `src` (a view) and `value` (a number)")),
                },
                reverse: r.reverse.unwrap_or(false),
            },
            "stream_shuffle" => Record::StreamShuffle {
                loc,
                dst: dst()?,
                src: src()?,
                shuffle_mask: need(o, "shuffle_mask", r.shuffle_mask)?,
            },
            "tensor_scalar" => Record::TensorScalar {
                loc,
                dst: dst()?,
                src: src()?,
                op0: need(o, "op0", r.op0)?,
                s0: need(o, "s0", r.s0)?,
                reverse0: r.reverse0.unwrap_or(false),
                op1: r.op1,
                s1: r.s1,
                reverse1: r.reverse1.unwrap_or(false),
                engine: r.engine,
            },
            "tensor_reduce" => Record::TensorReduce {
                loc,
                dst: dst()?,
                src: src()?,
                alu: need(o, "alu", r.alu)?,
                axes: need(o, "axes", r.axes)?,
                negate: r.negate.unwrap_or(false),
                keepdims: r.keepdims.unwrap_or(false),
            },
            "affine_select" => Record::AffineSelect {
                loc,
                dst: dst()?,
                src: src()?,
                pattern: need(o, "pattern", r.pattern)?,
                channel_multiplier: r.channel_multiplier.unwrap_or(0),
                offset: r.offset.unwrap_or(0),
                cmp: need(o, "cmp", r.cmp)?,
                value: need(o, "value", r.value)?,
            },
            "iota" => Record::Iota {
                loc,
                dst: dst()?,
                pattern: need(o, "pattern", r.pattern)?,
                offset: r.offset.unwrap_or(0),
                channel_multiplier: r.channel_multiplier.unwrap_or(0),
            },
            "bn_stats" => Record::BnStats { loc, dst: dst()?, src: src()? },
            "bn_aggr" => Record::BnAggr { loc, dst: dst()?, src: src()? },
            "loop_begin" => {
                Record::LoopBegin { loc, kind: need(o, "kind", r.kind)?, trips: need(o, "trips", r.trips)? }
            }
            "iteration" => Record::Iteration { loc, index: need(o, "index", r.index)? },
            _ => Record::LoopEnd { loc },
        })
    }
}
