//! One negative test per verifier rule, each starting from a small valid kernel.

use penguin::{
    verify, AccessPattern, ComputeEngine, DType, Dim, DmaCopyData, EngineAccumulationType as Acc, Function, InstData,
    InstTile, MatMultData, Memory, PerfMode, TensorCopyData, TensorData, TensorId, TilePosition, TileSize,
};

fn tensor(name: &str, shape: Vec<u64>, dtype: DType, memory: Memory, address: Option<u64>) -> TensorData {
    TensorData { name: name.into(), shape, dtype, memory, address }
}

fn tile(t: u32, memory: Memory, dtype: DType, ap: AccessPattern) -> InstTile {
    InstTile { tensor: TensorId(t), memory, dtype, ap }
}

/// C[4, 8] = A[4, 16] @ B[16, 8] with K split in two 8-row sub-tiles.
fn kernel() -> Function {
    let mut f = Function::new("small_gemm");
    f.add_tensor(tensor("a", vec![4, 16], DType::Fp32, Memory::Hbm, None)).unwrap();
    f.add_tensor(tensor("b", vec![16, 8], DType::Fp32, Memory::Hbm, None)).unwrap();
    f.add_tensor(tensor("c", vec![4, 8], DType::Fp32, Memory::Hbm, None)).unwrap();
    f.add_tensor(tensor("at", vec![16, 4], DType::Bf16, Memory::Sbuf, Some(0))).unwrap();
    f.add_tensor(tensor("bs", vec![16, 8], DType::Bf16, Memory::Sbuf, Some(64))).unwrap();
    f.add_tensor(tensor("acc", vec![128, 512], DType::Fp32, Memory::Psum, Some(0))).unwrap();
    f.add_tensor(tensor("out", vec![4, 8], DType::Fp32, Memory::Sbuf, Some(128))).unwrap();
    f.inputs = vec![TensorId(0), TensorId(1)];
    f.outputs = vec![TensorId(2)];
    let dma = |dst, src| InstData::DmaCopy(DmaCopyData { dst, src, cast: penguin::CastMode::Rne, queue: None });
    f.push_inst(
        dma(
            tile(3, Memory::Sbuf, DType::Bf16, AccessPattern::on_chip(0, 16, 0, 4)),
            tile(0, Memory::Hbm, DType::Fp32, AccessPattern::hbm_cols(16, 0, 4, 0, 16)),
        ),
        vec![],
    );
    f.push_inst(
        dma(
            tile(4, Memory::Sbuf, DType::Bf16, AccessPattern::on_chip(0, 16, 0, 8)),
            tile(1, Memory::Hbm, DType::Fp32, AccessPattern::hbm_rows(8, 0, 16, 0, 8)),
        ),
        vec![],
    );
    for (half, flags) in [(0u32, Acc::START), (1, Acc::ACCU | Acc::STOP)] {
        f.push_inst(
            InstData::MatMult(MatMultData {
                dst: tile(5, Memory::Psum, DType::Fp32, AccessPattern::on_chip(0, 4, 0, 8)),
                stationary: tile(3, Memory::Sbuf, DType::Bf16, AccessPattern::on_chip(half * 8, 8, 0, 4)),
                moving: tile(4, Memory::Sbuf, DType::Bf16, AccessPattern::on_chip(half * 8, 8, 0, 8)),
                perf_mode: PerfMode::None,
                tile_position: TilePosition::default(),
                tile_size: TileSize::default(),
                acc: Some(flags),
            }),
            vec![],
        );
    }
    f.push_inst(
        InstData::TensorCopy(TensorCopyData {
            engine: ComputeEngine::Act,
            dst: tile(6, Memory::Sbuf, DType::Fp32, AccessPattern::on_chip(0, 4, 0, 8)),
            src: tile(5, Memory::Psum, DType::Fp32, AccessPattern::on_chip(0, 4, 0, 8)),
        }),
        vec![],
    );
    f.push_inst(
        dma(
            tile(2, Memory::Hbm, DType::Fp32, AccessPattern::hbm_rows(8, 0, 4, 0, 8)),
            tile(6, Memory::Sbuf, DType::Fp32, AccessPattern::on_chip(0, 4, 0, 8)),
        ),
        vec![],
    );
    f
}

fn matmul(f: &mut Function, i: usize) -> &mut MatMultData {
    match &mut f.insts[i] {
        InstData::MatMult(m) => m,
        other => panic!("instruction {i} is {}", other.opcode()),
    }
}

/// Verify and return the messages, asserting that `needle` is among them.
fn rejects(f: &Function, needle: &str) -> Vec<String> {
    let errs = verify(f).expect_err("the verifier should reject this function");
    let msgs: Vec<String> = errs.0.iter().map(|e| e.message.clone()).collect();
    assert!(msgs.iter().any(|m| m.contains(needle)), "no error containing {needle:?} in {msgs:#?}");
    msgs
}

#[test]
fn the_base_kernel_is_valid() {
    verify(&kernel()).unwrap();
}

#[test]
fn rule1_kernel_name_is_an_identifier() {
    let mut f = kernel();
    f.kernel_name = "2fast".into();
    rejects(&f, "is not an identifier");
}

#[test]
fn rule2_tensor_shapes_and_capacity() {
    let mut f = kernel();
    f.tensors[3].shape = vec![16, 0];
    rejects(&f, "has an empty shape");
    let mut f = kernel();
    f.tensors[6].shape = vec![129, 8];
    rejects(&f, "has 129 partitions");
    let mut f = kernel();
    f.tensors[5].address = Some(15 * 1024);
    rejects(&f, "past the 16384 bytes of psum");
}

#[test]
fn rule3_inputs_and_outputs_in_hbm() {
    let mut f = kernel();
    f.outputs = vec![TensorId(6)];
    rejects(&f, "kernel output must be in hbm");
    let mut f = kernel();
    f.inputs.push(TensorId(42));
    rejects(&f, "input t42 does not exist");
}

#[test]
fn rule4_layout_and_dependency_order() {
    let mut f = kernel();
    f.layout.pop();
    rejects(&f, "not in program order");
    let mut f = kernel();
    f.deps[0].push(penguin::Dep { from: penguin::InstId(3), kind: penguin::DepKind::Raw });
    rejects(&f, "not earlier in program order");
}

#[test]
fn rule5_operand_tensor_memory_and_dtype() {
    let mut f = kernel();
    matmul(&mut f, 2).moving.dtype = DType::Fp16;
    rejects(&f, "is declared sbuf fp16 but the tensor is sbuf bf16");
    let mut f = kernel();
    matmul(&mut f, 2).moving.ap.free = vec![Dim::new(1, 1); 5].into();
    rejects(&f, "5 free dimensions");
}

#[test]
fn rule6_partition_ranges() {
    let mut f = kernel();
    matmul(&mut f, 2).stationary.ap.start_partition = 124;
    rejects(&f, "beyond the 128 partitions");
    let mut f = kernel();
    matmul(&mut f, 2).stationary.ap.start_partition = 12;
    rejects(&f, "but `at` has 16");
}

#[test]
fn rule7_bounds() {
    let mut f = kernel();
    if let InstData::DmaCopy(d) = &mut f.insts[0] {
        d.src.ap.offset = 60;
    }
    rejects(&f, "outside `a` (64 elements)");
}

#[test]
fn rule8_matmul_result_must_be_psum() {
    let mut f = kernel();
    let m = matmul(&mut f, 2);
    m.dst = tile(6, Memory::Sbuf, DType::Fp32, AccessPattern::on_chip(0, 4, 0, 8));
    let msgs = rejects(&f, "Result buffer of matmult must be psum!");
    assert!(msgs.contains(&"Result buffer of matmult must be psum!".to_string()));
}

#[test]
fn rule8_other_memories() {
    let mut f = kernel();
    if let InstData::TensorCopy(c) = &mut f.insts[4] {
        c.dst = tile(2, Memory::Hbm, DType::Fp32, AccessPattern::hbm_rows(8, 0, 4, 0, 8));
    }
    rejects(&f, "tensor_copy destination must be in sbuf or psum, not hbm");
}

#[test]
fn rule9_psum_access_stays_in_one_bank() {
    let mut f = kernel();
    f.tensors[5].address = Some(1024);
    for i in [2, 3] {
        matmul(&mut f, i).dst.ap.offset = 250;
    }
    if let InstData::TensorCopy(c) = &mut f.insts[4] {
        c.src.ap.offset = 250;
    }
    rejects(&f, "crossing a 2 KiB bank boundary");
}

#[test]
fn rule10_matmul_shapes() {
    let mut f = kernel();
    matmul(&mut f, 2).moving.ap.partitions.num = 7;
    rejects(&f, "contraction mismatch: stationary has 8 partitions, moving has 7");
    let mut f = kernel();
    matmul(&mut f, 2).perf_mode = PerfMode::DoubleRowGen3;
    rejects(&f, "perf_mode=`double_row_gen3` is not supported");
}

#[test]
fn rule11_copy_shapes() {
    let mut f = kernel();
    if let InstData::DmaCopy(d) = &mut f.insts[1] {
        d.dst.ap.free[0].num = 4;
    }
    rejects(&f, "copy shape mismatch");
}

#[test]
fn rule12_accumulation_groups() {
    let mut f = kernel();
    matmul(&mut f, 2).acc = Some(Acc::ACCU);
    rejects(&f, "ACCU before START");
    let mut f = kernel();
    matmul(&mut f, 3).acc = Some(Acc::ACCU);
    rejects(&f, "has not been stopped");
    let mut f = kernel();
    matmul(&mut f, 3).acc = Some(Acc::START);
    rejects(&f, "is still open");
    let mut f = kernel();
    matmul(&mut f, 2).acc = Some(Acc::START | Acc::ACCU);
    rejects(&f, "START and ACCU cannot be set together");
    let mut f = kernel();
    f.layout.truncate(3);
    f.layout.push(penguin::InstId(3));
    f.insts.truncate(4);
    f.deps.truncate(4);
    matmul(&mut f, 3).acc = Some(Acc::ACCU);
    rejects(&f, "is never stopped");
}

#[test]
fn errors_print_beside_their_lines() {
    let mut f = kernel();
    matmul(&mut f, 2).acc = Some(Acc::ACCU);
    let errs = verify(&f).unwrap_err();
    let text = penguin::print::print_with_errors(&f, &errs);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("i2 = matmult")).unwrap();
    assert!(lines[at + 1].starts_with("; error: ACCU before START"), "{text}");
}

#[test]
fn hostile_sizes_strides_and_offsets_are_rejected_not_wrapped() {
    // Each edit alone must be reported (as an error, never a panic or a wrapped value that
    // happens to land in bounds).
    fn src(f: &mut Function) -> &mut InstTile {
        match &mut f.insts[0] {
            InstData::DmaCopy(d) => &mut d.src,
            other => panic!("instruction 0 is {}", other.opcode()),
        }
    }
    type Edit = Box<dyn Fn(&mut Function)>;
    let cases: Vec<(&str, Edit)> = vec![
        // HBM: `stride * (num - 1)` and `offset + extent` beyond i64.
        ("outside `a`", Box::new(|f| src(f).ap.partitions = Dim::new(i64::MAX, u32::MAX))),
        ("outside `a`", Box::new(|f| src(f).ap.free = vec![Dim::new(i64::MAX, u32::MAX); 4].into())),
        ("outside `a`", Box::new(|f| src(f).ap.free = vec![Dim::new(i64::MIN, u32::MAX); 4].into())),
        ("outside `a`", Box::new(|f| src(f).ap.offset = i64::MAX)),
        ("outside `a`", Box::new(|f| src(f).ap.offset = i64::MIN)),
        (
            "outside `a`",
            Box::new(|f| {
                src(f).ap.offset = i64::MAX - 1;
                src(f).ap.free = vec![Dim::new(1, u32::MAX)].into();
            }),
        ),
        ("outside `a`", Box::new(|f| src(f).ap = AccessPattern::hbm_rows(u64::MAX, u64::MAX, 4, u64::MAX, 16))),
        // Zero strides repeat elements in bounds, but 2^128 of them cannot be counted.
        (
            "enumerates too many elements",
            Box::new(|f| {
                src(f).ap = AccessPattern {
                    start_partition: 0,
                    partitions: Dim::new(0, u32::MAX),
                    offset: 0,
                    free: vec![Dim::new(0, u32::MAX); 4].into(),
                };
            }),
        ),
        // On chip: a partition stride of 2^32 used to truncate back to partition 1.
        ("beyond the 128 partitions", Box::new(|f| matmul(f, 2).stationary.ap.partitions = Dim::new(1 << 32, 2))),
        (
            "beyond the 128 partitions",
            Box::new(|f| matmul(f, 2).stationary.ap.partitions = Dim::new(i64::MAX, u32::MAX)),
        ),
        ("below partition 0", Box::new(|f| matmul(f, 2).stationary.ap.partitions = Dim::new(i64::MIN, 2))),
        (
            "of a partition outside `at`",
            Box::new(|f| matmul(f, 2).stationary.ap.free = vec![Dim::new(i64::MAX, u32::MAX); 4].into()),
        ),
        ("of a partition outside `at`", Box::new(|f| matmul(f, 2).stationary.ap.offset = i64::MAX)),
        ("of a partition outside `at`", Box::new(|f| matmul(f, 2).stationary.ap.offset = i64::MIN)),
        // A PE tile position that is a multiple of 128 just below u32::MAX (`at + len`).
        (
            "PE tile row position",
            Box::new(|f| matmul(f, 2).tile_position = TilePosition { row: u32::MAX - 127, col: 0 }),
        ),
        // Tensors: products of the shape and `address + bytes` beyond u64.
        ("is too large", Box::new(|f| f.tensors[0].shape = vec![u64::MAX, u64::MAX])),
        ("is too large", Box::new(|f| f.tensors[3].shape = vec![16, u64::MAX / 2])),
        ("past the 262144 bytes of sbuf", Box::new(|f| f.tensors[3].address = Some(u64::MAX))),
        ("past the 16384 bytes of psum", Box::new(|f| f.tensors[5].address = Some(u64::MAX - 1))),
    ];
    for (i, (needle, edit)) in cases.iter().enumerate() {
        let mut f = kernel();
        edit(&mut f);
        let msgs = rejects(&f, needle);
        assert!(!msgs.is_empty(), "case {i}");
    }
    // Helpers over a hostile tensor saturate instead of overflowing.
    let huge = tensor("h", vec![u64::MAX, u64::MAX], DType::Fp32, Memory::Hbm, None);
    assert_eq!((huge.num_elems(), huge.num_bytes()), (u64::MAX, u64::MAX));
    let mut f = kernel();
    let id = f.add_tensor(huge.clone()).unwrap();
    let whole = penguin::whole_tile(id, &huge);
    assert_eq!(whole.ap.partitions.num, u32::MAX, "a dimension beyond u32 saturates");
    f.push_inst(
        InstData::DmaCopy(DmaCopyData { dst: whole.clone(), src: whole, cast: penguin::CastMode::Rne, queue: None }),
        vec![],
    );
    rejects(&f, "is too large");
}
