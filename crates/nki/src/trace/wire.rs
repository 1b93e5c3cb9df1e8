//! How a record is read: first as one flat [`RawRecord`] (all fields of all kinds optional),
//! so that a field of the wrong type is reported at its exact path (`ops[12].dst.ap`), then
//! checked for the fields its kind needs and allows.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::Deserialize;

use super::raw::Record;
use super::{
    Accumulate, ActivationFunc, Alu, Cmp, EngineName, Imm, Loc, LoopKind, PatternDim, Reduce, Scalar, Top8Name,
    TracePerfMode, View,
};

pub(super) fn serialize_accumulate<S: Serializer>(a: &Accumulate, s: S) -> Result<S::Ok, S::Error> {
    match a {
        Accumulate::Overwrite => s.serialize_bool(false),
        Accumulate::Accumulate => s.serialize_bool(true),
        Accumulate::Infer => s.serialize_none(),
        Accumulate::Add => s.serialize_str("add"),
    }
}

/// `accumulate`: `false`, `true`, `null` or `"add"`.
pub(super) fn deserialize_accumulate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Accumulate>, D::Error> {
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
pub(super) struct RawRecord {
    op: String,
    loc: Option<Loc>,
    dst: Option<View>,
    src: Option<View>,
    table: Option<View>,
    indices: Option<View>,
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
    mode: Option<Top8Name>,
    vals: Option<View>,
    idx: Option<View>,
    skip: Option<bool>,
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
        let fields: [(&'static str, bool); 44] = [
            ("loc", self.loc.is_some()),
            ("dst", self.dst.is_some()),
            ("src", self.src.is_some()),
            ("table", self.table.is_some()),
            ("indices", self.indices.is_some()),
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
            ("mode", self.mode.is_some()),
            ("vals", self.vals.is_some()),
            ("idx", self.idx.is_some()),
            ("skip", self.skip.is_some()),
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
            "dma_gather" => &["dst", "table", "indices", "skip"],
            "dma_scatter" | "dma_scatter_add" => &["table", "src", "indices", "skip"],
            "matmul" => &["dst", "stationary", "moving", "accumulate", "perf_mode", "tile_position", "tile_size"],
            "transpose" | "tensor_copy" => &["dst", "src", "engine"],
            "memset" => &["dst", "value", "engine"],
            "tensor_tensor" => &["dst", "in0", "in1", "alu", "engine"],
            "activation" => &["dst", "src", "func", "scale", "bias", "reduce"],
            "tensor_scalar" => &["dst", "src", "op0", "s0", "reverse0", "op1", "s1", "reverse1", "engine"],
            "tensor_tensor_scan" => &["dst", "in0", "in1", "op0", "op1", "initial"],
            "tensor_copy_predicated" => &["dst", "pred", "src", "value", "reverse"],
            "stream_shuffle" => &["dst", "src", "shuffle_mask"],
            "top8" => &["dst", "src", "mode", "vals", "idx", "value"],
            "tensor_scalar_cumulative" => &["dst", "src", "op0", "s0", "reverse0", "op1", "initial"],
            "tensor_reduce" => &["dst", "src", "alu", "axes", "negate", "keepdims"],
            "tensor_partition_reduce" => &["dst", "src", "alu"],
            "affine_select" => &["dst", "src", "pattern", "channel_multiplier", "offset", "cmp", "value"],
            "iota" => &["dst", "pattern", "offset", "channel_multiplier"],
            "bn_stats" | "bn_aggr" => &["dst", "src"],
            "loop_begin" => &["kind", "trips"],
            "iteration" => &["index"],
            "loop_end" => &[],
            other => {
                return Err(format!(
                    "unknown record kind `{other}` (expected dma_copy, dma_gather, dma_scatter, dma_scatter_add, matmul, transpose, tensor_copy, memset, \
                     tensor_tensor, activation, tensor_scalar, tensor_tensor_scan, tensor_copy_predicated, stream_shuffle, top8, tensor_scalar_cumulative, tensor_reduce, tensor_partition_reduce, affine_select, iota, bn_stats, \
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
            "dma_gather" => Record::DmaGather {
                loc,
                dst: dst()?,
                table: need(o, "table", r.table)?,
                indices: need(o, "indices", r.indices)?,
                skip: r.skip.unwrap_or(false),
            },
            "dma_scatter" => Record::DmaScatter {
                loc,
                table: need(o, "table", r.table)?,
                src: src()?,
                indices: need(o, "indices", r.indices)?,
                skip: r.skip.unwrap_or(false),
            },
            "dma_scatter_add" => Record::DmaScatterAdd {
                loc,
                table: need(o, "table", r.table)?,
                src: src()?,
                indices: need(o, "indices", r.indices)?,
                skip: r.skip.unwrap_or(false),
            },
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
            "tensor_scalar_cumulative" => Record::TensorScalarCumulative {
                loc,
                dst: dst()?,
                src: src()?,
                op0: need(o, "op0", r.op0)?,
                s0: need(o, "s0", r.s0)?,
                reverse0: r.reverse0.unwrap_or(false),
                op1: need(o, "op1", r.op1)?,
                initial: need(o, "initial", r.initial)?,
            },
            "top8" => Record::Top8 {
                loc,
                mode: need(o, "mode", r.mode)?,
                dst: dst()?,
                src: src()?,
                vals: r.vals.clone(),
                idx: r.idx.clone(),
                value: r.value,
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
            "tensor_partition_reduce" => {
                Record::TensorPartitionReduce { loc, dst: dst()?, src: src()?, alu: need(o, "alu", r.alu)? }
            }
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
