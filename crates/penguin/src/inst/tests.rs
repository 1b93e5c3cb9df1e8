//! Unit tests of the instruction table and the payloads' text form.

use super::*;
use crate::ap::AccessPattern;
use crate::dtype::CastMode;
use crate::dtype::DType;
use crate::entity::{Memory, TensorId};
use crate::tile::InstTile;

fn t(id: u32) -> InstTile {
    InstTile { tensor: TensorId(id), memory: Memory::Sbuf, dtype: DType::Fp32, ap: AccessPattern::on_chip(0, 4, 0, 8) }
}

fn every_kind() -> Vec<InstData> {
    let fma = OffloadedFmaData { dst: t(0), src0: t(1), src1: t(2) };
    let cpy = OffloadedMemCpyData { dst: t(0), src: t(1) };
    vec![
        InstData::MatMult(MatMultData {
            dst: t(0),
            stationary: t(1),
            moving: t(2),
            perf_mode: PerfMode::DoubleRow,
            tile_position: TilePosition { row: 64, col: 0 },
            tile_size: TileSize { rows: 64, cols: 128 },
            acc: Some(EngineAccumulationType::ACCU | EngineAccumulationType::STOP),
        }),
        InstData::MatMultSparse(Box::new(MatMultSparseData {
            dst: t(0),
            stationary: t(1),
            moving: t(2),
            tags: t(3),
            pattern: SparsityPattern { n: 4, m: 12 },
            tile_position: TilePosition::default(),
            tile_size: TileSize::default(),
            acc: None,
        })),
        InstData::DmaCopy(DmaCopyData {
            dst: t(0),
            src: t(1),
            cast: CastMode::Saturate,
            queue: Some(DmaQueueHint(13)),
        }),
        InstData::TensorCopy(TensorCopyData { engine: ComputeEngine::Dve, dst: t(0), src: t(1) }),
        InstData::Memset(MemsetData { engine: ComputeEngine::Pool, dst: t(0), value: -1.25 }),
        InstData::TensorTensor(TensorTensorData {
            engine: ComputeEngine::Act,
            op: AluOp::Max,
            dst: t(0),
            lhs: t(1),
            rhs: t(2),
        }),
        InstData::TiledOffloadedFma(fma.clone()),
        InstData::TiledOffloadedMemCpy(cpy.clone()),
        InstData::OffloadedFma(fma),
        InstData::OffloadedMemCpy(cpy),
        InstData::OffloadedMemCast(OffloadedMemCastData {
            dst: t(0),
            src: t(1),
            cast: CastMode::Rne,
            queue: Some(DmaQueueHint(2)),
        }),
        InstData::Transpose(TransposeData { dst: t(0), src: t(1) }),
        InstData::DmaGather(DmaGatherData { dst: t(0), table: t(1), index: t(2), skip: true }),
        InstData::DmaScatter(DmaScatterData { table: t(0), src: t(1), index: t(2), skip: false }),
        InstData::DmaScatterAdd(DmaScatterAddData { table: t(0), src: t(1), index: t(2), skip: true }),
        InstData::Activation(Box::new(ActivationData {
            func: ActFunc::GeluApprxTanh,
            dst: t(0),
            src: t(1),
            scale: ScalarOperand::Imm(0.5),
            bias: ScalarOperand::Tile(t(2)),
            reduce: Some(t(3)),
        })),
        InstData::TensorScalar(Box::new(TensorScalarData {
            engine: ComputeEngine::Dve,
            op0: AluOp::Subtract,
            reverse0: true,
            op1: Some(AluOp::Multiply),
            reverse1: false,
            dst: t(0),
            src: t(1),
            operand0: ScalarOperand::Tile(t(2)),
            operand1: ScalarOperand::Imm(-3.0),
        })),
        InstData::TensorTensorScan(Box::new(TensorTensorScanData {
            op0: AluOp::Multiply,
            op1: AluOp::Add,
            dst: t(0),
            data0: t(1),
            data1: t(2),
            initial: ScalarOperand::Tile(t(3)),
        })),
        InstData::TensorCopyPredicated(Box::new(TensorCopyPredicatedData {
            reverse: true,
            dst: t(0),
            predicate: t(1),
            src: ScalarOperand::Imm(-2.5),
        })),
        InstData::TensorScalarCumulative(Box::new(TensorScalarCumulativeData {
            op0: AluOp::Multiply,
            op1: AluOp::Add,
            reverse0: true,
            dst: t(0),
            src: t(1),
            operand0: ScalarOperand::Tile(t(2)),
            initial: ScalarOperand::Imm(0.5),
        })),
        InstData::Top8(Box::new(Top8Data {
            mode: Top8Mode::MatchReplace8,
            value: f64::NEG_INFINITY,
            dst: t(0),
            src: t(1),
            vals: Some(t(2)),
            idx: Some(t(3)),
        })),
        InstData::StreamShuffle(Box::new(StreamShuffleData { mask: ShuffleMask([3; 32]), dst: t(0), src: t(1) })),
        InstData::TensorReduce(TensorReduceData { op: AluOp::Max, negate: true, dst: t(0), src: t(1) }),
        InstData::TensorPartitionReduce(TensorPartitionReduceData { op: AluOp::Add, dst: t(0), src: t(1) }),
        InstData::AffineSelect(AffineSelectData {
            cmp: AluOp::IsGe,
            offset: 7,
            channel_multiplier: 1,
            pattern: AffinePattern(vec![AffineDim { step: -1, num: 8 }]),
            value: -1e30,
            dst: t(0),
            src: t(1),
        }),
        InstData::Iota(IotaData {
            offset: -2,
            channel_multiplier: 8,
            pattern: AffinePattern(vec![AffineDim { step: 2, num: 2 }, AffineDim { step: 1, num: 4 }]),
            dst: t(0),
        }),
        InstData::BnStats(BnStatsData { dst: t(0), src: t(1) }),
        InstData::BnAggr(BnAggrData { dst: t(0), src: t(1) }),
    ]
}

#[test]
fn from_parts_inverts_attributes_and_operands() {
    for inst in every_kind() {
        let attrs: Vec<(String, String)> = inst.attributes().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let ops: Vec<(String, InstTile)> = inst
            .operands()
            .into_iter()
            .zip(inst.operand_names())
            .map(|((t, _), n)| (n.to_string(), t.clone()))
            .collect();
        assert_eq!(InstData::from_parts(inst.opcode(), &attrs, ops), Ok(inst.clone()), "{}", inst.opcode());
    }
}

#[test]
fn from_parts_names_what_is_wrong() {
    let err = |opcode: &str, attrs: &[(&str, &str)], operands: &[&str]| {
        let attrs: Vec<(String, String)> = attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let operands = operands.iter().enumerate().map(|(i, n)| (n.to_string(), t(i as u32))).collect();
        let e = InstData::from_parts(opcode, &attrs, operands).unwrap_err();
        (e.key, e.message)
    };
    let at = |key: &str, message: &str| (Some(key.to_string()), message.to_string());
    assert_eq!(err("matmult", &[], &["dst"]), at("stationary", "matmult needs operand `stationary=`"));
    assert_eq!(
        err("memset", &[("engine", "gpu")], &[]),
        at("engine", "unknown engine `gpu` (expected act, dve or pool)")
    );
    assert_eq!(err("memset", &[("engine", "dve")], &["dst"]), at("value", "memset needs `value=`"));
    assert_eq!(
        err("memset", &[("engine", "dve"), ("value", "x")], &["dst"]),
        at("value", "memset value `x` is not a number")
    );
    assert_eq!(
        err("tensor_tensor", &[("engine", "dve"), ("op", "sub")], &[]),
        at("op", &format!("unknown tensor_tensor op `sub` (expected one of {})", AluOp::names()))
    );
    assert_eq!(
        err("activation", &[("func", "swish")], &[]),
        at("func", &format!("unknown activation func `swish` (expected one of {})", ActFunc::names()))
    );
    assert_eq!(
        err("activation", &[("func", "exp"), ("scale", "two")], &["dst", "src"]),
        at("scale", "activation scale `two` is neither a number nor a tile `tN{...}`")
    );
    assert_eq!(
        err("tensor_scalar", &[("engine", "dve"), ("op0", "add")], &["dst", "src"]),
        at("operand0", "tensor_scalar needs `operand0=` (a number or a [P, 1] tile)")
    );
    assert_eq!(
        err(
            "tensor_scalar",
            &[("engine", "dve"), ("op0", "add"), ("operand0", "1"), ("reverse0", "yes")],
            &["dst", "src"]
        ),
        at("reverse0", "tensor_scalar reverse0 `yes` is not true or false")
    );
    assert_eq!(err("iota", &[("offset", "2.5")], &["dst"]), at("offset", "iota offset `2.5` is not an int32"));
    assert_eq!(
        err("iota", &[("pattern", "[1,2]")], &["dst"]).1,
        "pattern `[1,2]` is not a list of 1 to 4 `[step,num]` pairs such as `[[1,64],[-1,8]]` (int32 steps, counts >= 1)"
    );
    assert_eq!(
        err("dma_copy", &[("cast", "floor")], &["dst", "src"]),
        at("cast", "unknown cast mode `floor` (expected rne or saturate)")
    );
    assert_eq!(
        err("matmult_sparse", &[("pattern", "3:4")], &["dst", "stationary", "moving", "tags"]),
        at("pattern", "unknown sparsity pattern `3:4` (expected one of 1:2, 2:4, 4:8, 4:12, 4:16)")
    );
    assert_eq!(
        err("dma_copy", &[("queue", "-1")], &["dst", "src"]),
        at("queue", "dma_copy queue `-1` is not a queue number (0 to 2^32 - 1)")
    );
    assert_eq!(
        err("dma_copy", &[("speed", "fast")], &["dst", "src"]),
        at("speed", "dma_copy has no attribute `speed`")
    );
    assert_eq!(err("transpose", &[], &["dst", "src", "moving"]), at("moving", "transpose has no operand `moving`"));
    assert_eq!(err("jump", &[], &[]), (None, "unknown instruction `jump`".to_string()));
    // The PE attributes are checked for every opcode, before the opcode itself.
    assert_eq!(err("jump", &[("pos", "1")], &[]), at("pos", "`pos=1` must be two numbers `a,b`"));
    assert_eq!(err("matmult", &[("perf", "turbo")], &[]).0, Some("perf".to_string()));
    assert_eq!(
        err("matmult", &[("acc", "start|bogus")], &[]),
        at("acc", "unknown accumulation flag `bogus` (expected start, accu, stop)")
    );
    // Callers whose errors are strings keep the message.
    assert_eq!(String::from(AttrError::at("k", "m")), "m");
}

/// A value for every attribute key of the table (a new key needs one here).
fn sample_value(kind: InstKind, key: &str) -> Option<&'static str> {
    if key == "pattern" && matches!(kind, InstKind::Iota | InstKind::AffineSelect) {
        return Some("[[1,8]]");
    }
    let samples = [
        ("perf", "double_row"),
        ("pos", "64,0"),
        ("size", "64,128"),
        ("acc", "accu|stop"),
        ("pattern", "4:12"),
        ("cast", "saturate"),
        ("engine", "dve"),
        ("value", "-1.25"),
        ("op", "max"),
        ("queue", "7"),
        ("func", "exp"),
        ("op0", "multiply"),
        ("op1", "add"),
        ("reverse", "true"),
        ("mask", "[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,255]"),
        ("reverse0", "true"),
        ("reverse1", "true"),
        ("negate", "true"),
        ("cmp", "greater"),
        ("offset", "-3"),
        ("channel_multiplier", "2"),
        ("scale", "0.5"),
        ("bias", "-1"),
        ("operand0", "2"),
        ("operand1", "4"),
        ("mode", "match_replace8"),
        ("skip", "true"),
    ];
    samples.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

#[test]
fn every_kind_name_round_trips_through_the_table() {
    for (i, &kind) in InstKind::ALL.iter().enumerate() {
        assert_eq!(InstKind::from_name(kind.name()), Some(kind));
        assert!(InstKind::ALL[..i].iter().all(|k| k.name() != kind.name()), "{} is declared twice", kind.name());
    }
    assert_eq!(InstKind::from_name("jump"), None);
    let kinds: Vec<InstKind> = every_kind().iter().map(InstData::kind).collect();
    assert_eq!(kinds, InstKind::ALL, "every_kind() builds one instruction of each kind, in table order");
    for inst in every_kind() {
        assert_eq!(inst.opcode(), inst.kind().name());
        // The operands present are some of the kind's, in its order.
        let all = inst.kind().operand_names();
        let at: Vec<usize> = inst.operand_names().iter().map(|n| all.iter().position(|a| a == n).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{}", inst.opcode());
        let printed: Vec<&str> = inst.attributes().iter().map(|(k, _)| *k).collect();
        assert!(printed.iter().all(|k| inst.kind().attribute_keys().contains(k)), "{}", inst.opcode());
        // The uncollected walks give what the collected lists give.
        let listed: Vec<(InstTile, Access)> = inst.operands().into_iter().map(|(t, a)| (t.clone(), a)).collect();
        let mut walked = Vec::new();
        inst.for_each_operand(|t, a| walked.push((t.clone(), a)));
        assert_eq!(walked, listed, "{}", inst.opcode());
        assert_eq!(inst.operand_count(), listed.len(), "{}", inst.opcode());
    }
}

#[test]
fn every_kinds_operand_and_attribute_names_are_what_from_parts_accepts() {
    for &kind in InstKind::ALL {
        let name = kind.name();
        // Scalar operands are given as tiles (an operand name that is also an attribute key).
        let attrs: Vec<(String, String)> = kind
            .attribute_keys()
            .iter()
            .filter(|k| !kind.operand_names().contains(k))
            .map(|k| sample_value(kind, k).map(|v| (k.to_string(), v.to_string())).ok_or(*k))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|k| panic!("no sample value for attribute `{k}` of {name}"));
        let operands: Vec<(String, InstTile)> =
            kind.operand_names().iter().enumerate().map(|(i, n)| (n.to_string(), t(i as u32))).collect();
        let mut inst = InstData::from_parts(name, &attrs, operands.clone()).unwrap();
        assert_eq!(inst.kind(), kind);
        // Every attribute is printed back (all were given) with the value it was given (the
        // legacy spelling `max` as `maximum`).
        let printed: Vec<(String, String)> = inst.attributes().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let canonical: Vec<(String, String)> = attrs
            .iter()
            .map(|(k, v)| (k.clone(), if v == "max" { "maximum".to_string() } else { v.clone() }))
            .collect();
        assert_eq!(printed, canonical, "{name}");
        // Operands come back in the order of their names, mutable ones too.
        let tensors: Vec<u32> = inst.operands().iter().map(|(t, _)| t.tensor.0).collect();
        assert_eq!(tensors, (0..operands.len() as u32).collect::<Vec<_>>(), "{name}");
        for (i, tile) in inst.operands_mut().into_iter().enumerate() {
            tile.tensor = TensorId(10 + i as u32);
        }
        let tensors: Vec<u32> = inst.operands().iter().map(|(t, _)| t.tensor.0).collect();
        assert_eq!(tensors, (10..10 + operands.len() as u32).collect::<Vec<_>>(), "{name}");
        // Each operand is required, by its name, or optional (then it is absent), or a scalar
        // operand given as an attribute (then it takes its default or is named).
        for (i, (n, _)) in operands.iter().enumerate() {
            let mut fewer = operands.clone();
            fewer.remove(i);
            match InstData::from_parts(name, &attrs, fewer) {
                Ok(i) => assert!(!i.operand_names().contains(&n.as_str()), "{name} {n}"),
                Err(e) => {
                    let needs = [
                        format!("{name} needs operand `{n}=`"),
                        format!("{name} needs `{n}=` (a number or a [P, 1] tile)"),
                    ];
                    assert_eq!(e.key.as_deref(), Some(n.as_str()));
                    assert!(needs.contains(&e.message), "{}", e.message);
                }
            }
        }
        // Any other operand or attribute name is refused, by its name.
        let mut more = operands.clone();
        more.push(("extra".into(), t(9)));
        let e = InstData::from_parts(name, &attrs, more).unwrap_err();
        assert_eq!((e.key.as_deref(), e.message), (Some("extra"), format!("{name} has no operand `extra`")));
        let mut more = attrs.clone();
        more.push(("extra".into(), "1".into()));
        let e = InstData::from_parts(name, &more, operands.clone()).unwrap_err();
        assert_eq!((e.key.as_deref(), e.message), (Some("extra"), format!("{name} has no attribute `extra`")));
        // A missing attribute either takes its default or is named.
        for (i, (k, _)) in attrs.iter().enumerate() {
            let mut fewer = attrs.clone();
            fewer.remove(i);
            match InstData::from_parts(name, &fewer, operands.clone()) {
                Ok(i) => assert_eq!(i.kind(), kind),
                Err(e) => assert_eq!((e.key.as_deref(), e.message), (Some(k.as_str()), format!("{name} needs `{k}=`"))),
            }
        }
    }
}

#[test]
fn scalar_operands_are_attributes_when_immediate_and_operands_when_columns() {
    let kinds = every_kind();
    let a = kinds.iter().find(|i| i.opcode() == "activation").expect("an activation");
    assert_eq!(a.opcode(), "activation");
    assert_eq!(a.operand_names(), ["dst", "src", "bias", "reduce"]);
    let keys: Vec<&str> = a.attributes().iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, ["func", "scale"]);
    // Defaults are not printed; an immediate bias other than 0 is.
    let attrs = |list: &[(&str, &str)]| list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
    let plain = InstData::from_parts(
        "activation",
        &attrs(&[("func", "exp")]),
        vec![("dst".into(), t(0)), ("src".into(), t(1))],
    )
    .unwrap();
    assert_eq!(plain.attributes(), [("func", "exp".to_string())]);
    assert_eq!(plain.operand_names(), ["dst", "src"]);
    let InstData::Activation(p) = &plain else { panic!("an activation") };
    assert_eq!((&p.scale, &p.bias, &p.reduce), (&ScalarOperand::Imm(1.0), &ScalarOperand::Imm(0.0), &None));
    let biased = InstData::from_parts(
        "activation",
        &attrs(&[("func", "exp"), ("bias", "-2")]),
        vec![("dst".into(), t(0)), ("src".into(), t(1))],
    )
    .unwrap();
    assert_eq!(biased.attributes(), [("func", "exp".to_string()), ("bias", "-2".to_string())]);
    // The same key as a number and as a tile is refused.
    let both = InstData::from_parts(
        "activation",
        &attrs(&[("func", "exp"), ("bias", "-2")]),
        vec![("dst".into(), t(0)), ("src".into(), t(1)), ("bias".into(), t(2))],
    )
    .unwrap_err();
    assert_eq!(both.message, "activation `bias=` is given twice");
}

#[test]
fn only_matmuls_accumulate_into_their_result() {
    for inst in every_kind() {
        let got = inst.accumulation().map(|(t, flags)| (t.tensor, flags));
        let want = match &inst {
            InstData::MatMult(m) => Some((m.dst.tensor, m.flags())),
            InstData::MatMultSparse(m) => Some((m.dst.tensor, m.flags())),
            InstData::DmaCopy(_)
            | InstData::TensorCopy(_)
            | InstData::Memset(_)
            | InstData::TensorTensor(_)
            | InstData::TiledOffloadedFma(_)
            | InstData::TiledOffloadedMemCpy(_)
            | InstData::OffloadedFma(_)
            | InstData::OffloadedMemCpy(_)
            | InstData::OffloadedMemCast(_)
            | InstData::Transpose(_)
            | InstData::DmaGather(_)
            | InstData::DmaScatterAdd(_)
            | InstData::DmaScatter(_)
            | InstData::Activation(_)
            | InstData::TensorScalar(_)
            | InstData::TensorTensorScan(_)
            | InstData::TensorCopyPredicated(_)
            | InstData::StreamShuffle(_)
            | InstData::Top8(_)
            | InstData::TensorScalarCumulative(_)
            | InstData::TensorReduce(_)
            | InstData::TensorPartitionReduce(_)
            | InstData::AffineSelect(_)
            | InstData::Iota(_)
            | InstData::BnStats(_)
            | InstData::BnAggr(_) => None,
        };
        assert_eq!(got, want, "{}", inst.opcode());
        // The accumulating operand's access follows its flags.
        if let Some((_, flags)) = got {
            let access = inst.operands()[0].1;
            assert_eq!(access == Access::Write, flags.contains(EngineAccumulationType::START));
        }
    }
}

/// The instruction arena of a large kernel is most of the memory planning touches: no
/// payload may grow every instruction unnoticed (box a large one, as `matmult_sparse` is).
#[cfg(target_pointer_width = "64")]
#[test]
fn instructions_stay_small() {
    use std::mem::size_of;
    assert_eq!(size_of::<crate::tile::InstTile>(), 64);
    assert_eq!(size_of::<MatMultData>(), 216);
    assert_eq!(size_of::<InstData>(), 216);
    assert!(size_of::<AffineSelectData>() <= 216 && size_of::<TensorReduceData>() <= 216);
}
