//! Tests of the `.pir` parser.

use super::*;
use crate::ap::Dim;

const GEMM: &str = "\
; C[4, 8] = A[4, 16] @ B[16, 8] in two K sub-tiles.
kernel gemm_4x16x8
inputs t0, t1
outputs t2
tensor t0 \"a\" hbm fp32 [4, 16]
tensor t1 \"b\" hbm fp32 [16, 8]
tensor t2 \"c\" hbm fp32 [4, 8]
tensor t3 \"at\" sbuf bf16 [8, 8] @0
tensor t4 \"bs\" sbuf bf16 [8, 16] @16
tensor t5 \"acc\" psum fp32 [4, 8] @0
tensor t6 \"cs\" sbuf fp32 [4, 8] @48
i0 = dma_copy dst=t3{p0[1, 8] +0 [1, 4]} src=t0{p0[1, 8] +0 [16, 4]}
i1 = dma_copy dst=t3{p0[1, 8] +4 [1, 4]} src=t0{p0[1, 8] +8 [16, 4]}
i2 = dma_copy dst=t4{p0[1, 8] +0 [1, 8]} src=t1{p0[8, 8] +0 [1, 8]}
i3 = dma_copy dst=t4{p0[1, 8] +8 [1, 8]} src=t1{p0[8, 8] +64 [1, 8]}
i4 = matmult acc=start dst=t5{p0[1, 4] +0 [1, 8]} stationary=t3{p0[1, 8] +0 [1, 4]} moving=t4{p0[1, 8] +0 [1, 8]}
i5 = matmult acc=stop dst=t5{p0[1, 4] +0 [1, 8]} stationary=t3{p0[1, 8] +4 [1, 4]} moving=t4{p0[1, 8] +8 [1, 8]}
i6 = tensor_copy engine=act dst=t6{p0[1, 4] +0 [1, 8]} src=t5{p0[1, 4] +0 [1, 8]}
i7 = dma_copy dst=t2{p0[8, 4] +0 [1, 8]} src=t6{p0[1, 4] +0 [1, 8]}   ; store C
";

#[test]
fn hand_written_gemm_parses_verifies_and_round_trips() {
    let f = parse(GEMM).unwrap();
    crate::verify(&f).unwrap();
    assert_eq!(f.inputs, vec![TensorId(0), TensorId(1)]);
    // No `after(...)` anywhere: the edges are computed.
    assert_eq!(
        f.deps[4],
        vec![Dep { from: InstId(0), kind: DepKind::Raw }, Dep { from: InstId(2), kind: DepKind::Raw }]
    );
    assert_eq!(f.deps[5].iter().map(|d| d.from.0).collect::<Vec<_>>(), vec![4, 1, 3]);
    let printed = f.to_string();
    assert_eq!(parse(&printed).unwrap(), f, "{printed}");
    assert_eq!(parse(&printed).unwrap().to_string(), printed);
}

#[test]
fn explicit_edges_are_kept_as_written() {
    let text = GEMM.replace("i1 = dma_copy", "i1 = dma_copy after()").replace("; store C", "after(i6 war)");
    let f = parse(&text).unwrap();
    assert!(f.deps[4].is_empty());
    assert_eq!(f.deps[7], vec![Dep { from: InstId(6), kind: DepKind::War }]);
}

#[test]
fn a_function_without_edges_prints_an_empty_after() {
    let mut f = parse(GEMM).unwrap();
    f.deps.iter_mut().for_each(Vec::clear);
    let printed = f.to_string();
    assert!(
        printed.contains("i0 = dma_copy cast=rne dst=t3{p0[1, 8] +0 [1, 4]} src=t0{p0[1, 8] +0 [16, 4]} after()\n"),
        "{printed}"
    );
    assert_eq!(parse(&printed).unwrap(), f);
}

#[test]
fn out_of_order_layout_and_odd_tiles_round_trip() {
    let mut f = parse(GEMM).unwrap();
    f.layout.swap(0, 1);
    f.kernel_name = "not an identifier".into();
    f.debug_kernel_function_name = Some("tab\there \"q\" \u{1} é".into());
    if let InstData::DmaCopy(d) = &mut f.insts[0] {
        d.src.dtype = DType::Int16;
        d.src.ap.offset = -3;
        d.src.tensor = TensorId(40);
    }
    f.layout.push(InstId(9));
    f.layout.push(InstId(0));
    let printed = f.to_string();
    assert!(printed.contains("layout i1, i0, i2"), "{printed}");
    assert!(printed.contains("src=t40:hbm:int16{p0[1, 8] -3 [16, 4]}"), "{printed}");
    assert_eq!(parse(&printed).unwrap(), f, "{printed}");
}

#[track_caller]
fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn errors_say_where_and_what_was_expected() {
    assert_eq!(err(""), "1:1: expected `kernel NAME`, found end of file");
    assert_eq!(err("tensor t0 \"a\" hbm fp32 [1]"), "1:1: expected `kernel NAME` as the first line, found `tensor`");
    assert_eq!(
        err("kernel k\ntensor t1 \"a\" hbm fp32 [1]"),
        "2:8: expected `t0` (tensors are numbered in order from t0), found `t1`"
    );
    assert_eq!(
        err("kernel k\ntensor t0 \"a\" dram fp32 [1]"),
        "2:15: expected a memory (hbm, sbuf or psum), found `dram`"
    );
    assert!(err("kernel k\ntensor t0 \"a\" hbm fp64 [1]").starts_with("2:19: unknown dtype `fp64`"));
    assert_eq!(err("kernel k\ntensor t0 \"a\" hbm fp32 [1, ]"), "2:28: expected a dimension size, found `]`");
    assert_eq!(err("kernel k\ntensor t0 \"a\" hbm fp32 [1] extra"), "2:28: expected end of line, found `extra`");
    assert_eq!(err("kernel k\ntensor t0 \"a"), "2:11: unterminated string (expected a closing `\"`)");
    let base = "kernel k\ntensor t0 \"x\" sbuf fp32 [4, 4]\n";
    assert_eq!(
        err(&format!("{base}i0 = memset engine=pool value=1 dst=t0{{p0[1, 4] +0 [1, 4]")),
        "3:58: expected `}`, found end of line"
    );
    assert_eq!(
        err(&format!("{base}i0 = memset engine=gpu value=1 dst=t0{{p0[1, 4] +0 [1, 4]}}")),
        "3:13: unknown engine `gpu` (expected act, dve or pool)"
    );
    assert_eq!(
        err(&format!("{base}i0 = memset engine=dve dst=t0{{p0[1, 4] +0 [1, 4]}}")),
        "3:6: memset needs `value=`"
    );
    assert_eq!(err(&format!("{base}i0 = memset engine=dve value=1 value=2")), "3:32: `value=` is given twice");
    assert_eq!(
        err(&format!("{base}i0 = memset engine=dve value=1 dst=t1{{p0[1, 4] +0 [1, 4]}}")),
        "3:36: operand t1 names no tensor (declare `tensor t1` or state it as `t1:MEMORY:DTYPE{...}`)"
    );
    assert_eq!(
        err(&format!("{base}i1 = memset engine=dve value=1 dst=t0{{p0[1, 4] +0 [1, 4]}}")),
        "3:1: instruction ids must be dense from i0, but i0 is missing (found i1)"
    );
    let m = "i0 = memset engine=dve value=1 dst=t0{p0[1, 4] +0 [1, 4]}\n";
    assert_eq!(err(&format!("{base}{m}\n{m}")), "5:1: i0 is defined twice (first on line 3)");
    assert_eq!(err("kernel k\nkernel j"), "2:1: a second `kernel` line (the first is line 1)");
    assert_eq!(err("kernel k\n  frob"), "2:3: expected a line starting with `kernel`, `debug_name`, `inputs`, `outputs`, `layout`, `tensor` or `iN =`, found `frob`");
    assert_eq!(
        err("kernel k\ni0 = memset after(i1 wax)"),
        "2:22: expected a dependency kind (raw, war or waw), found `wax`"
    );
    assert_eq!(
        err("kernel k\ntensor t0 \"a\" hbm fp32 [99999999999999999999]"),
        "2:25: a dimension size `99999999999999999999` is out of range"
    );
}

#[test]
fn instruction_errors_point_at_the_key_they_name() {
    let base = "kernel k\ntensor t0 \"x\" psum fp32 [4, 4]\ntensor t1 \"y\" sbuf bf16 [4, 4]\n";
    let ops = "dst=t0{p0[1, 4] +0 [1, 4]} stationary=t1{p0[1, 4] +0 [1, 4]} moving=t1{p0[1, 4] +0 [1, 4]}";
    // The column comes from the error's key, not from searching its message: the flag named
    // in this message is not the attribute's whole value.
    assert_eq!(
        err(&format!("{base}i0 = matmult pos=0,0 acc=start|bogus {ops}")),
        "4:22: unknown accumulation flag `bogus` (expected start, accu, stop)"
    );
    assert_eq!(
        err(&format!("{base}i0 = matmult value=x,y pos=x,y {ops}")),
        "4:24: `pos=x,y` must be two numbers `a,b`"
    );
    assert_eq!(err(&format!("{base}i0 = matmult acc=start dst=3")), "4:24: matmult needs operand `dst=`");
    // Errors about an operand or a missing attribute point at the opcode.
    assert_eq!(
        err(&format!("{base}i0 = matmult acc=start {ops} tags=t1{{p0[1, 4] +0 [1, 4]}}")),
        "4:6: matmult has no operand `tags`"
    );
    assert_eq!(err(&format!("{base}i0 = matmult_sparse {ops}")), "4:6: matmult_sparse needs operand `tags=`");
}

#[test]
fn comments_and_strings() {
    assert_eq!(split_comment("a \"b;c\" ; d"), ("a \"b;c\" ", Some(" d")));
    assert_eq!(split_comment("a \"b\\\";c\" d"), ("a \"b\\\";c\" d", None));
    let f = parse("kernel \"x;y\" ; comment\n\n; only a comment\r\n").unwrap();
    assert_eq!(f.kernel_name, "x;y");
}

/// An `inputs` line of about 10 MB: `count` ids, then `tail`.
fn long_inputs_line(count: u32, tail: &str) -> String {
    let mut text = String::from("kernel k\ninputs t0");
    for i in 1..count {
        text.push_str(", t");
        text.push_str(&i.to_string());
    }
    text.push_str(tail);
    text
}

#[test]
fn a_ten_megabyte_line_parses_in_linear_time() {
    let count = 1_200_000;
    let text = long_inputs_line(count, "");
    assert!(text.len() > 10_000_000, "{}", text.len());
    let started = std::time::Instant::now();
    let f = parse(&text).unwrap();
    // Counting columns from the line start for every token took hours here; linear
    // scanning takes well under a second in release and a few seconds in a debug build.
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(f.inputs.len(), count as usize);
    assert_eq!(f.inputs.last(), Some(&TensorId(count - 1)));
}

#[test]
fn columns_stay_exact_far_into_a_line_and_after_backtracking() {
    let text = long_inputs_line(1000, ", tx");
    let line = text.lines().nth(1).unwrap();
    let col = line.chars().count() - 1;
    assert_eq!(err(&text), format!("2:{col}: expected a tensor id `tN`, found `tx`"));
    // Multi-byte characters count as one column each, also after a long line.
    let text = format!("kernel \"{}\"\ninputs t0 é", "é".repeat(5000));
    assert_eq!(err(&text), "2:11: expected end of line, found `é`");
    let text = format!("kernel \"{}\" junk", "é".repeat(5000));
    assert_eq!(err(&text), "1:5011: expected end of line, found `junk`");
}

#[test]
fn many_keys_on_one_line_are_checked_in_linear_time() {
    let mut text = String::from("kernel k\ni0 = memset");
    for i in 0..200_000 {
        text.push_str(&format!(" k{i}=1"));
    }
    text.push_str(" k7=2");
    let col = text.lines().nth(1).unwrap().len() - 3;
    assert_eq!(err(&text), format!("2:{col}: `k7=` is given twice"));
}

pub(crate) mod props {
    use proptest::prelude::*;

    use super::*;
    use crate::dtype::CastMode;
    use crate::inst::*;

    fn memory() -> impl Strategy<Value = Memory> {
        prop_oneof![Just(Memory::Hbm), Just(Memory::Sbuf), Just(Memory::Psum)]
    }

    fn dtype() -> impl Strategy<Value = DType> {
        proptest::sample::select(DType::ALL.to_vec())
    }

    fn dim() -> impl Strategy<Value = Dim> {
        (-300i64..300, 0u32..200).prop_map(|(stride, num)| Dim { stride, num })
    }

    fn tile() -> impl Strategy<Value = InstTile> {
        (0u32..8, memory(), dtype(), 0u32..130, dim(), -50i64..5000, proptest::collection::vec(dim(), 0..6)).prop_map(
            |(t, memory, dtype, start_partition, partitions, offset, free)| InstTile {
                tensor: TensorId(t),
                memory,
                dtype,
                ap: AccessPattern { start_partition, partitions, offset, free: free.into() },
            },
        )
    }

    pub(crate) fn inst() -> impl Strategy<Value = InstData> {
        let acc = proptest::option::of((0u8..8).prop_map(EngineAccumulationType::from_bits_truncate));
        let pos = (0u32..200, 0u32..200).prop_map(|(row, col)| TilePosition { row, col });
        let size = (0u32..200, 0u32..200).prop_map(|(rows, cols)| TileSize { rows, cols });
        let engine = prop_oneof![Just(ComputeEngine::Act), Just(ComputeEngine::Dve), Just(ComputeEngine::Pool)];
        let cast = prop_oneof![Just(CastMode::Rne), Just(CastMode::Saturate)];
        let perf = prop_oneof![Just(PerfMode::None), Just(PerfMode::DoubleRow), Just(PerfMode::DoubleRowGen3)];
        let value = prop_oneof![any::<f64>().prop_filter("not NaN (NaN != NaN)", |v| !v.is_nan()), -4.0f64..4.0];
        let tiles = proptest::collection::vec(tile(), 4);
        (
            proptest::sample::select(InstKind::ALL),
            tiles,
            acc,
            pos,
            size,
            engine,
            cast,
            perf,
            value,
            0usize..5,
            0usize..AluOp::ALL.len(),
            proptest::option::of(any::<u32>().prop_map(DmaQueueHint)),
        )
            .prop_map(
                |(kind, t, acc, tile_position, tile_size, engine, cast, perf_mode, value, pattern, op, queue)| {
                    let [a, b, c, d]: [InstTile; 4] = t.try_into().unwrap();
                    match kind {
                        InstKind::MatMult => InstData::MatMult(MatMultData {
                            dst: a,
                            stationary: b,
                            moving: c,
                            perf_mode,
                            tile_position,
                            tile_size,
                            acc,
                        }),
                        InstKind::MatMultSparse => InstData::MatMultSparse(Box::new(MatMultSparseData {
                            dst: a,
                            stationary: b,
                            moving: c,
                            tags: d,
                            pattern: SparsityPattern::SUPPORTED[pattern],
                            tile_position,
                            tile_size,
                            acc,
                        })),
                        InstKind::DmaCopy => InstData::DmaCopy(DmaCopyData { dst: a, src: b, cast, queue }),
                        InstKind::TensorCopy => InstData::TensorCopy(TensorCopyData { engine, dst: a, src: b }),
                        InstKind::Memset => InstData::Memset(MemsetData { engine, dst: a, value }),
                        InstKind::TensorTensor => InstData::TensorTensor(TensorTensorData {
                            engine,
                            op: AluOp::ALL[op],
                            dst: a,
                            lhs: b,
                            rhs: c,
                        }),
                        InstKind::TiledOffloadedFma => {
                            InstData::TiledOffloadedFma(OffloadedFmaData { dst: a, src0: b, src1: c })
                        }
                        InstKind::OffloadedFma => InstData::OffloadedFma(OffloadedFmaData { dst: a, src0: b, src1: c }),
                        InstKind::TiledOffloadedMemCpy => {
                            InstData::TiledOffloadedMemCpy(OffloadedMemCpyData { dst: a, src: b })
                        }
                        InstKind::OffloadedMemCpy => InstData::OffloadedMemCpy(OffloadedMemCpyData { dst: a, src: b }),
                        InstKind::OffloadedMemCast => {
                            InstData::OffloadedMemCast(OffloadedMemCastData { dst: a, src: b, cast, queue })
                        }
                        InstKind::Transpose => InstData::Transpose(TransposeData { dst: a, src: b }),
                        InstKind::DmaGather => {
                            InstData::DmaGather(DmaGatherData { dst: a, table: b, index: c, skip: op % 2 == 0 })
                        }
                        InstKind::DmaScatter => {
                            InstData::DmaScatter(DmaScatterData { table: a, src: b, index: c, skip: op % 2 == 1 })
                        }
                        InstKind::DmaScatterAdd => InstData::DmaScatterAdd(DmaScatterAddData {
                            table: a,
                            src: b,
                            index: c,
                            skip: pattern % 2 == 0,
                        }),
                        // The scalar operands take each form: an immediate (`value`, the
                        // default 0 included) or a column.
                        InstKind::Activation => InstData::Activation(Box::new(ActivationData {
                            func: ActFunc::ALL[op % ActFunc::ALL.len()],
                            dst: a,
                            src: b,
                            scale: if op % 2 == 0 { ScalarOperand::Imm(value) } else { ScalarOperand::Tile(c.clone()) },
                            bias: if op % 3 == 0 { ScalarOperand::Tile(c) } else { ScalarOperand::Imm(value) },
                            reduce: (pattern % 2 == 0).then_some(d),
                        })),
                        InstKind::TensorScalar => InstData::TensorScalar(Box::new(TensorScalarData {
                            engine,
                            op0: AluOp::ALL[op],
                            reverse0: pattern % 2 == 0,
                            op1: (pattern > 1).then(|| AluOp::ALL[(op + pattern) % AluOp::ALL.len()]),
                            reverse1: pattern == 3,
                            dst: a,
                            src: b,
                            operand0: if op % 2 == 0 { ScalarOperand::Imm(value) } else { ScalarOperand::Tile(c) },
                            operand1: if pattern == 4 { ScalarOperand::Tile(d) } else { ScalarOperand::Imm(value) },
                        })),
                        InstKind::TensorTensorScan => InstData::TensorTensorScan(Box::new(TensorTensorScanData {
                            op0: AluOp::ALL[op],
                            op1: AluOp::ALL[(op + pattern) % AluOp::ALL.len()],
                            dst: a,
                            data0: b,
                            data1: c,
                            initial: if op % 2 == 0 { ScalarOperand::Imm(value) } else { ScalarOperand::Tile(d) },
                        })),
                        InstKind::TensorCopyPredicated => {
                            InstData::TensorCopyPredicated(Box::new(TensorCopyPredicatedData {
                                reverse: pattern % 2 == 1,
                                dst: a,
                                predicate: b,
                                src: if op % 2 == 0 { ScalarOperand::Imm(value) } else { ScalarOperand::Tile(c) },
                            }))
                        }
                        InstKind::TensorScalarCumulative => {
                            InstData::TensorScalarCumulative(Box::new(TensorScalarCumulativeData {
                                op0: AluOp::ALL[op],
                                op1: AluOp::ALL[(op + pattern) % AluOp::ALL.len()],
                                reverse0: pattern % 2 == 0,
                                dst: a,
                                src: b,
                                operand0: if op % 2 == 0 { ScalarOperand::Imm(value) } else { ScalarOperand::Tile(c) },
                                initial: if pattern == 4 { ScalarOperand::Tile(d) } else { ScalarOperand::Imm(value) },
                            }))
                        }
                        InstKind::StreamShuffle => InstData::StreamShuffle(Box::new(StreamShuffleData {
                            mask: ShuffleMask([(op % 32) as u8; 32]),
                            dst: a,
                            src: b,
                        })),
                        InstKind::Top8 => InstData::Top8(Box::new(Top8Data {
                            mode: Top8Mode::ALL[op % 3],
                            value,
                            dst: a,
                            src: b,
                            vals: (op % 3 != 0).then_some(c),
                            idx: (pattern % 2 == 0).then_some(d),
                        })),
                        InstKind::TensorPartitionReduce => InstData::TensorPartitionReduce(TensorPartitionReduceData {
                            op: AluOp::ALL[op],
                            dst: a,
                            src: b,
                        }),
                        InstKind::TensorReduce => InstData::TensorReduce(TensorReduceData {
                            op: AluOp::ALL[op],
                            negate: pattern % 2 == 1,
                            dst: a,
                            src: b,
                        }),
                        InstKind::AffineSelect => InstData::AffineSelect(AffineSelectData {
                            cmp: AluOp::ALL[op],
                            offset: op as i32 - 5,
                            channel_multiplier: pattern as i32,
                            pattern: affine(op, pattern),
                            value,
                            dst: a,
                            src: b,
                        }),
                        InstKind::Iota => InstData::Iota(IotaData {
                            offset: -(op as i32),
                            channel_multiplier: pattern as i32 - 2,
                            pattern: affine(pattern, op),
                            dst: a,
                        }),
                        InstKind::BnStats => InstData::BnStats(BnStatsData { dst: a, src: b }),
                        InstKind::BnAggr => InstData::BnAggr(BnAggrData { dst: a, src: b }),
                    }
                },
            )
    }

    /// A pattern of 1 to 4 dimensions made of two small numbers.
    fn affine(a: usize, b: usize) -> AffinePattern {
        let dims = (0..=(a + b) % 4)
            .map(|i| AffineDim { step: (a as i32) - (i as i32) * (b as i32), num: 1 + (a * i + b) as u32 % 9 });
        AffinePattern(dims.collect())
    }

    fn tensor() -> impl Strategy<Value = TensorData> {
        ("\\PC{0,12}", memory(), dtype(), proptest::collection::vec(0u64..300, 0..4), proptest::option::of(0u64..70000))
            .prop_map(|(name, memory, dtype, shape, address)| TensorData { name, shape, dtype, memory, address })
    }

    fn dep() -> impl Strategy<Value = Dep> {
        (0u32..12, prop_oneof![Just(DepKind::Raw), Just(DepKind::War), Just(DepKind::Waw)])
            .prop_map(|(from, kind)| Dep { from: InstId(from), kind })
    }

    prop_compose! {
        pub(crate) fn function()(
            name in "\\PC{0,10}",
            debug in proptest::option::of("[ -~]{0,10}"),
            tensors in proptest::collection::vec(tensor(), 0..8),
            insts in proptest::collection::vec((inst(), proptest::collection::vec(dep(), 0..3)), 0..10),
            edges in any::<bool>(),
            layout in proptest::option::of(proptest::collection::vec((0u32..12).prop_map(InstId), 0..12)),
            inputs in proptest::collection::vec((0u32..10).prop_map(TensorId), 0..3),
            outputs in proptest::collection::vec((0u32..10).prop_map(TensorId), 0..3),
        ) -> Function {
            let mut f = Function::new(name);
            f.debug_kernel_function_name = debug;
            for t in tensors {
                let _ = f.add_tensor(t);
            }
            for (inst, deps) in insts {
                f.push_inst(inst, if edges { deps } else { Vec::new() });
            }
            if let Some(layout) = layout {
                f.layout = layout;
            }
            f.inputs = inputs;
            f.outputs = outputs;
            f
        }
    }

    proptest! {
        #[test]
        fn every_function_round_trips_through_text(f in function()) {
            let text = f.to_string();
            let back = parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(&back, &f, "{}", text);
            prop_assert_eq!(back.to_string(), text);
        }
    }
}
