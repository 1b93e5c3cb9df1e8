//! Lowering tests on hand-built Penguin functions: engines, semaphores, offloaded ops spread
//! over the DMA queues, double-row access patterns and the lowering errors.

use bir::{extract_offloaded_memcpy_shape_bases, lower, verify_program, BirError, Engine, HwAp, Op};
use penguin::{
    verify, AccessPattern, CastMode, DType, Dim, DmaCopyData, EngineAccumulationType as Acc, Function, InstData,
    InstTile, MatMultData, Memory, OffloadedFmaData, OffloadedMemCastData, PerfMode, Target, TensorData, TensorId,
    TilePosition, TileSize,
};

fn add(f: &mut Function, name: &str, shape: Vec<u64>, dtype: DType, memory: Memory) -> TensorId {
    f.add_tensor(TensorData { name: name.into(), shape, dtype, memory, address: None }).unwrap()
}

fn tile(t: TensorId, memory: Memory, dtype: DType, ap: AccessPattern) -> InstTile {
    InstTile { tensor: t, memory, dtype, ap }
}

/// `out = a * b + c` through SBUF with a tiled offloaded FMA.
fn fma_kernel(rows: u32, cols: u32) -> Function {
    let mut f = Function::new("fma");
    let shape = vec![u64::from(rows), u64::from(cols)];
    let hbm: Vec<TensorId> =
        ["a", "b", "c", "out"].iter().map(|n| add(&mut f, n, shape.clone(), DType::Fp32, Memory::Hbm)).collect();
    let sb: Vec<TensorId> =
        ["sa", "sb", "sc"].iter().map(|n| add(&mut f, n, shape.clone(), DType::Fp32, Memory::Sbuf)).collect();
    f.inputs = hbm[..3].to_vec();
    f.outputs = vec![hbm[3]];
    let on = |t| tile(t, Memory::Sbuf, DType::Fp32, AccessPattern::on_chip(0, rows, 0, cols));
    let off = |t| tile(t, Memory::Hbm, DType::Fp32, AccessPattern::hbm_rows(u64::from(cols), 0, rows, 0, cols));
    let mut deps = penguin::DepTracker::new();
    let mut push = |f: &mut Function, inst: InstData| {
        let id = penguin::InstId(f.insts.len() as u32);
        let d = deps.process(id, &inst, |t| f.tensors.get_index(t.index()).map(|(_, x)| x));
        f.push_inst(inst, d);
    };
    for i in 0..3 {
        push(
            &mut f,
            InstData::DmaCopy(DmaCopyData { dst: on(sb[i]), src: off(hbm[i]), cast: CastMode::Rne, queue: None }),
        );
    }
    push(&mut f, InstData::TiledOffloadedFma(OffloadedFmaData { dst: on(sb[2]), src0: on(sb[0]), src1: on(sb[1]) }));
    push(&mut f, InstData::DmaCopy(DmaCopyData { dst: off(hbm[3]), src: on(sb[2]), cast: CastMode::Rne, queue: None }));
    f
}

#[test]
fn tiled_offloaded_fma_spreads_over_the_dma_queues() {
    let f = fma_kernel(128, 2048);
    let p = lower(verify(&f).unwrap(), Target::Trn2).unwrap();
    verify_program(&p).unwrap();
    let fmas: Vec<(Engine, &HwAp)> = Engine::all()
        .flat_map(|e| {
            p.stream(e).iter().filter_map(move |i| match &i.op {
                Op::DmaFma { dst, .. } => Some((e, dst)),
                _ => None,
            })
        })
        .collect();
    assert_eq!(fmas.len(), 16, "one piece per queue");
    let mut starts: Vec<u32> = fmas.iter().map(|(_, d)| d.start_partition).collect();
    starts.sort_unstable();
    assert_eq!(starts, (0..16).map(|q| q * 8).collect::<Vec<_>>());
    assert!(fmas.iter().all(|(e, d)| matches!(e, Engine::Dma(_)) && d.num_partitions == 8));
    // Every piece waits for the three loads it reads (on other queues).
    let queues_with_waits = fmas
        .iter()
        .filter(|(e, _)| p.stream(*e).iter().any(|i| matches!(i.op, Op::DmaFma { .. }) && !i.waits.is_empty()))
        .count();
    assert_eq!(queues_with_waits, 16);
}

#[test]
fn shape_bases_are_common_or_a_named_error() {
    let f = fma_kernel(4, 8);
    let p = lower(verify(&f).unwrap(), Target::Trn1).unwrap();
    let fma = Engine::all().flat_map(|e| p.stream(e).iter()).find(|i| matches!(i.op, Op::DmaFma { .. })).unwrap();
    let Op::DmaFma { dst, src0, src1 } = &fma.op else { unreachable!() };
    let (shape, bases) = extract_offloaded_memcpy_shape_bases(&[dst, src0, src1]).unwrap();
    assert_eq!(shape, vec![4, 8]);
    assert_eq!(bases, vec![dst.byte_offset, src0.byte_offset, src1.byte_offset]);
    let mut narrow = src1.clone();
    narrow.dims = vec![Dim::new(1, 4)].into();
    let err = extract_offloaded_memcpy_shape_bases(&[dst, &narrow]).unwrap_err();
    assert_eq!(err, BirError::ShapeMismatch { a: vec![4, 8], b: vec![4, 4] });
    assert_eq!(err.to_string(), "offloaded op operands have different shapes: [4, 8] vs [4, 4]");
}

#[test]
fn memcast_lowers_to_casting_dma() {
    let mut f = Function::new("cast");
    let x = add(&mut f, "x", vec![128, 2048], DType::Fp32, Memory::Hbm);
    let y = add(&mut f, "y", vec![128, 2048], DType::Bf16, Memory::Hbm);
    f.inputs = vec![x];
    f.outputs = vec![y];
    let ap = AccessPattern::hbm_rows(2048, 0, 128, 0, 2048);
    f.push_inst(
        InstData::OffloadedMemCast(OffloadedMemCastData {
            dst: tile(y, Memory::Hbm, DType::Bf16, ap.clone()),
            src: tile(x, Memory::Hbm, DType::Fp32, ap),
            cast: CastMode::Saturate,
            queue: None,
        }),
        vec![],
    );
    let p = lower(verify(&f).unwrap(), Target::Trn2).unwrap();
    verify_program(&p).unwrap();
    let pieces: Vec<&Op> = Engine::all().flat_map(|e| p.stream(e).iter().map(|i| &i.op)).collect();
    // 1 MiB of fp32: sixteen pieces of at least 64 KiB.
    assert_eq!(pieces.len(), 16);
    assert!(pieces
        .iter()
        .all(|o| matches!(o, Op::DmaCopy { cast: CastMode::Saturate, dst, .. } if dst.dtype == DType::Bf16)));
    assert_eq!(p.hbm_traffic_bytes(), 128 * 2048 * (4 + 2));
}

fn double_row_kernel(target: Target) -> Function {
    let mut f = Function::new("dr");
    let st = add(&mut f, "st", vec![128, 256], DType::Fp8e4m3, Memory::Sbuf);
    let mv = add(&mut f, "mv", vec![128, 1024], DType::Fp8e4m3, Memory::Sbuf);
    let ps = add(&mut f, "ps", vec![128, 512], DType::Fp32, Memory::Psum);
    let _ = target;
    let packed = |t, free: u32| {
        let ap = AccessPattern {
            start_partition: 0,
            partitions: Dim::new(1, 128),
            offset: 0,
            free: vec![Dim::new(i64::from(free), 2), Dim::new(1, free)].into(),
        };
        tile(t, Memory::Sbuf, DType::Fp8e4m3, ap)
    };
    f.push_inst(
        InstData::MatMult(MatMultData {
            dst: tile(ps, Memory::Psum, DType::Fp32, AccessPattern::on_chip(0, 128, 0, 512)),
            stationary: packed(st, 128),
            moving: packed(mv, 512),
            perf_mode: PerfMode::DoubleRow,
            tile_position: TilePosition::default(),
            tile_size: TileSize::default(),
            acc: Some(Acc::START | Acc::STOP),
        }),
        vec![],
    );
    f
}

#[test]
fn small_offloaded_ops_stay_one_transfer() {
    let f = fma_kernel(4, 8);
    let p = lower(verify(&f).unwrap(), Target::Trn2).unwrap();
    let fmas = Engine::all().flat_map(|e| p.stream(e).iter()).filter(|i| matches!(i.op, Op::DmaFma { .. })).count();
    assert_eq!(fmas, 1);
}

#[test]
fn double_row_keeps_the_pack_axis_and_is_refused_on_trn1() {
    let f = double_row_kernel(Target::Trn2);
    let p = lower(verify(&f).unwrap(), Target::Trn2).unwrap();
    verify_program(&p).unwrap();
    let Op::LoadStationary { src, perf_mode, .. } = &p.stream(Engine::Pe)[0].op else { panic!("not an LS") };
    assert_eq!(*perf_mode, PerfMode::DoubleRow);
    assert_eq!(src.dims, vec![Dim::new(128, 2), Dim::new(1, 128)]);
    let Op::MultiplyMoving { src, .. } = &p.stream(Engine::Pe)[1].op else { panic!("not an MM") };
    assert_eq!(src.dims, vec![Dim::new(512, 2), Dim::new(1, 512)]);
    let err = lower(verify(&f).unwrap(), Target::Trn1).unwrap_err();
    assert_eq!(err.to_string(), "mm: perf_mode=`double_row` is not supported on trn1".replace("mm", "i0"));
}

#[test]
fn too_many_strides_on_a_compute_engine() {
    let mut f = Function::new("strides");
    let t = add(&mut f, "t", vec![4, 32], DType::Fp32, Memory::Sbuf);
    let ap = AccessPattern {
        start_partition: 0,
        partitions: Dim::new(1, 4),
        offset: 0,
        free: vec![Dim::new(9, 2), Dim::new(5, 2), Dim::new(3, 2), Dim::new(1, 2)].into(),
    };
    // Strides 9, 5, 3, 1 with 2 each: four dimensions that do not merge.
    f.push_inst(
        InstData::Memset(penguin::MemsetData {
            engine: penguin::ComputeEngine::Dve,
            dst: tile(t, Memory::Sbuf, DType::Fp32, ap),
            value: 0.0,
        }),
        vec![],
    );
    let err = lower(verify(&f).unwrap(), Target::Trn2).unwrap_err();
    assert!(err.to_string().starts_with("Too many strides!"), "{err}");
}

#[test]
fn source_locations_follow_origins_into_the_program_and_its_text() {
    let mut f = penguin::parse::parse(include_str!("../../../../examples/gemm_4x16x8.pir")).unwrap();
    let located = f.layout[1];
    f.srclocs.set(located, Some("kernel.py:12".into()));
    let p = lower(verify(&f).unwrap(), Target::Trn2).unwrap();
    let from_line: Vec<&bir::BirInst> = p.streams.iter().flatten().filter(|i| i.origin == Some(located)).collect();
    assert!(!from_line.is_empty());
    assert!(from_line.iter().all(|i| p.srcloc(i) == Some("kernel.py:12")));
    let others = p.streams.iter().flatten().filter(|i| i.origin != Some(located));
    assert!(others.into_iter().all(|i| p.srcloc(i).is_none()));
    let text = p.to_string();
    assert!(text.contains(&format!("\nloc {located} \"kernel.py:12\"\n")), "{text}");
    assert_eq!(bir::text::parse(&text).unwrap(), p);
    let json = serde_json::to_string(&p).unwrap();
    assert_eq!(serde_json::from_str::<bir::Program>(&json).unwrap(), p);
}
