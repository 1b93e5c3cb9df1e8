//! End-to-end GEMMs: plan, lower, simulate and check against the fp64 reference over a grid
//! of shapes (ragged ones included), dtypes and targets.

use ntile::gemm::{self, GemmArgs};
use penguin::{DType, Target};

fn args(m: u64, k: u64, n: u64, dtype: DType, target: Target) -> GemmArgs {
    GemmArgs {
        m: Some(m),
        k: Some(k),
        n: Some(n),
        dtype: Some(dtype),
        target: Some(target),
        seed: Some(m * 31 + k * 7 + n),
        ..GemmArgs::default()
    }
}

const SHAPES: [(u64, u64, u64); 7] = [
    (1, 1, 1),
    (300, 1000, 777),
    (129, 257, 513),
    (128, 128, 512),
    (64, 40, 96),     // K < 128
    (100, 130, 1100), // N > 512
    (300, 64, 64),    // M > 128
];

#[test]
fn grid_of_shapes_dtypes_and_targets_passes_the_bound() {
    for target in Target::ALL {
        for dtype in [DType::Fp32, DType::Bf16, DType::Fp16] {
            for (m, k, n) in SHAPES {
                let out = gemm::run(&args(m, k, n, dtype, target)).unwrap();
                let check = out.report.check.unwrap();
                assert!(
                    check.passed,
                    "{m}x{k}x{n} {dtype} on {target}: {} failures, max abs err {}",
                    check.failures, check.max_abs_err
                );
                assert_eq!(out.result.as_ref().map(Vec::len), Some((m * n) as usize));
                assert_eq!(out.report.matmuls, m.div_ceil(128) * n.div_ceil(512) * k.div_ceil(128));
            }
        }
    }
}

#[test]
fn bf16_output_and_pre_transposed_lhs() {
    let mut a = args(200, 300, 600, DType::Bf16, Target::Trn2);
    a.out_dtype = Some(DType::Bf16);
    assert!(gemm::run(&a).unwrap().report.check.unwrap().passed);
    let mut a = args(200, 300, 600, DType::Fp16, Target::Trn1);
    a.lhs_transposed = true;
    assert!(gemm::run(&a).unwrap().report.check.unwrap().passed);
}

#[test]
fn mixed_operand_dtypes() {
    let mut a = args(130, 260, 70, DType::Bf16, Target::Trn3);
    a.rhs_dtype = Some(DType::Fp8e4m3fn);
    let out = gemm::run(&a).unwrap();
    assert_eq!(out.report.rhs_dtype, "fp8e4m3fn");
    assert!(out.report.check.unwrap().passed);
}

#[test]
fn runs_are_deterministic_and_seeds_matter() {
    let one = gemm::run(&args(64, 256, 64, DType::Bf16, Target::Trn2)).unwrap().result.unwrap();
    let two = gemm::run(&args(64, 256, 64, DType::Bf16, Target::Trn2)).unwrap().result.unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&one), bits(&two));
    let mut other = args(64, 256, 64, DType::Bf16, Target::Trn2);
    other.seed = other.seed.map(|s| s + 1);
    assert_ne!(bits(&one), bits(&gemm::run(&other).unwrap().result.unwrap()));
}

fn passes(mut a: GemmArgs, what: &str) {
    a.schedule = Some(codegen::Schedule::Naive);
    let out = gemm::run(&a).unwrap_or_else(|e| panic!("{what}: {e}"));
    let check = out.report.check.unwrap();
    assert!(check.passed, "{what}: {} failures, max abs err {}", check.failures, check.max_abs_err);
}

#[test]
fn fp8_with_and_without_double_row_on_every_legal_target() {
    use penguin::PerfMode;
    let shapes = [(130, 300, 70), (129, 257, 513), (5, 7, 9)];
    for target in Target::ALL {
        for (lhs, rhs) in [
            (DType::Fp8e4m3, DType::Fp8e4m3),
            (DType::Fp8e5m2, DType::Fp8e5m2),
            (DType::Fp8e4m3, DType::Fp8e5m2),
            (DType::Bf16, DType::Fp8e4m3),
        ] {
            for (m, k, n) in shapes {
                let mut a = args(m, k, n, lhs, target);
                a.rhs_dtype = Some(rhs);
                passes(a.clone(), &format!("{lhs} x {rhs} {m}x{k}x{n} on {target}"));
                let double_row_legal = target != Target::Trn1 && lhs != DType::Bf16;
                a.perf_mode = Some(PerfMode::DoubleRow);
                if double_row_legal {
                    passes(a, &format!("double_row {lhs} x {rhs} {m}x{k}x{n} on {target}"));
                } else {
                    assert!(gemm::run(&a).is_err(), "double_row {lhs} x {rhs} on {target} must be refused");
                }
            }
        }
    }
    let mut a = args(200, 333, 100, DType::Uint8, Target::Trn2);
    a.perf_mode = Some(PerfMode::DoubleRow);
    passes(a, "uint8 double_row");
    let mut a = args(64, 64, 64, DType::Fp8e4m3fn, Target::Trn3);
    a.perf_mode = Some(PerfMode::DoubleRow);
    let err = gemm::run(&a).unwrap_err();
    assert_eq!(err.message, codegen::DOUBLE_ROW_FP8_ONLY);
    passes(args(64, 300, 64, DType::Fp8e4m3fn, Target::Trn3), "fp8e4m3fn dense on trn3");
}

#[test]
fn bf16_with_every_sparsity_pattern() {
    for pattern in penguin::SparsityPattern::SUPPORTED {
        // K = 1001 ends inside a moving partition (CR rows each) of a partial last chunk.
        for (m, k, n, target) in [(130, 301, 70, Target::Trn2), (64, 1001, 600, Target::Trn3), (3, 13, 5, Target::Trn3)]
        {
            let mut a = args(m, k, n, DType::Bf16, target);
            a.sparsity = Some(pattern);
            passes(a.clone(), &format!("{pattern} {m}x{k}x{n} on {target}"));
            for schedule in [codegen::Schedule::Hoisted, codegen::Schedule::BlockedMn, codegen::Schedule::BlockedMnk] {
                a.schedule = Some(schedule);
                let out = gemm::run(&a).unwrap();
                assert!(out.report.check.unwrap().passed, "{pattern} {schedule:?} {m}x{k}x{n}");
            }
        }
        // trn1 has no sparse matmul.
        let mut a = args(64, 256, 64, DType::Bf16, Target::Trn1);
        a.sparsity = Some(pattern);
        assert!(gemm::run(&a).unwrap_err().message.contains("trn1 has none"), "{pattern} on trn1");
    }
    let mut a = args(16, 16, 16, DType::Bf16, Target::Trn2);
    a.sparsity = Some(penguin::SparsityPattern { n: 2, m: 4 });
    a.perf_mode = Some(penguin::PerfMode::DoubleRow);
    assert!(gemm::run(&a).unwrap_err().message.contains("cannot be combined"));
}

#[test]
fn every_schedule_computes_the_same_product() {
    let schedules = [
        codegen::Schedule::Naive,
        codegen::Schedule::Hoisted,
        codegen::Schedule::BlockedMn,
        codegen::Schedule::BlockedMnk,
        codegen::Schedule::Auto,
    ];
    for target in Target::ALL {
        for s in schedules {
            for transposed in [false, true] {
                let mut a = args(300, 700, 1100, DType::Bf16, target);
                a.schedule = Some(s);
                a.lhs_transposed = transposed;
                // Block sizes only where they apply (ntile refuses them elsewhere).
                if matches!(s, codegen::Schedule::BlockedMn | codegen::Schedule::BlockedMnk) {
                    a.block_m = Some(256);
                    a.block_n = Some(1024);
                }
                if s == codegen::Schedule::BlockedMnk {
                    a.block_k = Some(256);
                }
                let out = gemm::run(&a).unwrap_or_else(|e| panic!("{s} on {target}: {e}"));
                assert!(out.report.check.unwrap().passed, "{s} on {target} transposed={transposed}");
                assert!(out.report.modeled_time_us > 0.0 && out.report.hfu > 0.0 && out.report.hfu <= 1.0);
            }
        }
    }
}

/// A broadcast operand (combine_tiles' memset-broadcast tile) through lowering and the
/// simulator: `out = x + 2.5`.
#[test]
fn broadcast_operand_runs_end_to_end() {
    use codegen::NeuronCodegen;
    use penguin::{
        AccessPattern, AluOp, DmaCopyData, GeneratedBuilder, InstData, InstTile, Memory, NDTile, TensorTensorData, Tile,
    };
    let mut cg = NeuronCodegen::new(GeneratedBuilder::new("bcast"), Target::Trn2, "bcast");
    let x = cg.add_input("x", vec![64, 32], DType::Fp32).unwrap();
    let out = cg.add_output("out", vec![64, 32], DType::Fp32).unwrap();
    let nd = NDTile { partitions: 64, free: vec![32], dtype: DType::Fp32 };
    let sx = cg.alloc_sbuf("sx", &nd).unwrap();
    let hbm = |t| InstTile {
        tensor: t,
        memory: Memory::Hbm,
        dtype: DType::Fp32,
        ap: AccessPattern::hbm_rows(32, 0, 64, 0, 32),
    };
    let sb =
        InstTile { tensor: sx, memory: Memory::Sbuf, dtype: DType::Fp32, ap: AccessPattern::on_chip(0, 64, 0, 32) };
    cg.process_new_neuroninst(InstData::DmaCopy(DmaCopyData {
        dst: sb.clone(),
        src: hbm(x),
        cast: penguin::CastMode::Rne,
        queue: None,
    }))
    .unwrap();
    let b = cg.combine_tiles(&[Tile::Broadcast { value: 2.5, shape: nd }]).unwrap().remove(0);
    cg.process_new_neuroninst(InstData::TensorTensor(TensorTensorData {
        engine: penguin::ComputeEngine::Dve,
        op: AluOp::Add,
        dst: sb.clone(),
        lhs: sb.clone(),
        rhs: b,
    }))
    .unwrap();
    cg.process_new_neuroninst(InstData::DmaCopy(DmaCopyData {
        dst: hbm(out),
        src: sb,
        cast: penguin::CastMode::Rne,
        queue: None,
    }))
    .unwrap();
    cg.finalize_kernel().unwrap();
    let f = cg.finalize().unwrap();
    let p = bir::lower(penguin::verify(&f).unwrap(), Target::Trn2).unwrap();
    bir::verify_program(&p).unwrap();
    let mut s = sim::Simulator::new(&p);
    let xs: Vec<f32> = (0..64 * 32).map(|i| i as f32 * 0.25 - 100.0).collect();
    s.write_hbm_f32("x", &xs).unwrap();
    let stats = s.run().unwrap();
    assert!(stats.races.is_empty());
    let got = s.read_hbm_f32("out").unwrap();
    assert_eq!(got, xs.iter().map(|v| v + 2.5).collect::<Vec<f32>>());
}

/// Long K on trn1: the blocked-mn outer block only fits single-buffered, so it is reloaded in
/// program order; the result must not change.
#[test]
fn single_buffered_outer_blocks_compute_the_same_product() {
    for order in [codegen::LoopOrder::MOuter, codegen::LoopOrder::NOuter] {
        let mut a = args(200, 8192, 600, DType::Bf16, Target::Trn1);
        a.schedule = Some(codegen::Schedule::BlockedMn);
        a.order = Some(order);
        a.lhs_transposed = true;
        let out = gemm::run(&a).unwrap();
        assert!(out.report.check.unwrap().passed, "{order:?}");
    }
}

/// blocked-mn over 3 x 3 blocks in snake order: an inner block still resident from the end of
/// one outer iteration is not loaded again (5 inner loads instead of 9), A is transposed just
/// in time on the PE or by the DMA, and the product is unchanged in both loop orders.
#[test]
fn snake_order_reuses_resident_blocks_and_keeps_the_product() {
    use gemm::TransposeOn;
    let (m, k, n) = (384u64, 256u64, 1536u64);
    for order in [codegen::LoopOrder::MOuter, codegen::LoopOrder::NOuter] {
        for transpose in [TransposeOn::Pe, TransposeOn::Dma] {
            let mut a = args(m, k, n, DType::Bf16, Target::Trn2);
            a.schedule = Some(codegen::Schedule::BlockedMn);
            a.hbm_dtype = Some(DType::Bf16);
            a.order = Some(order);
            a.transpose = Some(transpose);
            a.block_m = Some(128);
            a.block_n = Some(512);
            let out = gemm::run(&a).unwrap();
            assert!(out.report.check.as_ref().unwrap().passed, "{order:?} {transpose:?}");
            // bf16 operands, fp32 output; the inner operand's blocks are loaded 5 times.
            let (a_tile, b_tile) = (128 * k * 2, k * 512 * 2);
            let (a_bytes, b_bytes) = match order {
                codegen::LoopOrder::MOuter => (3 * a_tile, 5 * b_tile),
                codegen::LoopOrder::NOuter => (5 * a_tile, 3 * b_tile),
            };
            assert_eq!(out.report.hbm_bytes, a_bytes + b_bytes + m * n * 4, "{order:?} {transpose:?}");
            let expect = if transpose == TransposeOn::Pe { "pe" } else { "dma" };
            assert_eq!(out.report.lhs_transpose, expect);
        }
    }
}

/// blocked-mnk with A transposed on the PE: natural K blocks loaded ahead, transposed just in
/// time, partials added on VectorE (they read PSUM, which GpSimd cannot), the result block
/// stored by a casting DMA (bf16 output).
#[test]
fn blocked_mnk_with_pe_transposes_and_a_casting_store() {
    let mut a = args(300, 1000, 1100, DType::Bf16, Target::Trn2);
    a.schedule = Some(codegen::Schedule::BlockedMnk);
    a.transpose = Some(gemm::TransposeOn::Pe);
    a.out_dtype = Some(DType::Bf16);
    a.block_m = Some(256);
    a.block_n = Some(1024);
    a.block_k = Some(384);
    let out = gemm::run(&a).unwrap();
    assert!(out.report.check.as_ref().unwrap().passed);
    assert_eq!(out.report.lhs_transpose, "pe");
    assert!(out.report.engine_busy.dve > 0.0 && out.report.engine_busy.pool == 0.0);
}

/// Double row with A transposed on the PE: two transposes per 256-row chunk into the
/// `[P, 2, M]` slots (odd K: the short slot zeroed) in every stripe schedule.
#[test]
fn double_row_with_pe_transposes() {
    for s in [codegen::Schedule::Hoisted, codegen::Schedule::BlockedMn, codegen::Schedule::BlockedMnk] {
        let mut a = args(300, 999, 700, DType::Fp8e4m3, Target::Trn2);
        a.perf_mode = Some(penguin::PerfMode::DoubleRow);
        a.transpose = Some(gemm::TransposeOn::Pe);
        a.schedule = Some(s);
        // K blocks only where they apply (ntile refuses them elsewhere).
        a.block_k = (s == codegen::Schedule::BlockedMnk).then_some(512);
        let out = gemm::run(&a).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert!(out.report.check.as_ref().unwrap().passed, "{s}");
        assert_eq!(out.report.lhs_transpose, "pe", "{s}");
        assert_eq!(out.report.perf_mode, "double_row");
    }
}

/// blocked-mnk whose result block only fits SBUF once (8 x 8 tiles of fp32 = 128 KiB per
/// partition on trn1's 192 KiB): the next pair's partials wait for the stores of their own
/// tiles; the product is unchanged.
#[test]
fn blocked_mnk_with_a_single_result_block() {
    let mut a = args(1024, 300, 4096, DType::Bf16, Target::Trn1);
    a.schedule = Some(codegen::Schedule::BlockedMnk);
    a.block_m = Some(1024);
    a.block_n = Some(4096);
    a.block_k = Some(128);
    a.m = Some(2048);
    let out = gemm::run(&a).unwrap();
    assert!(out.report.check.as_ref().unwrap().passed);
    let result_block = 8 * 8 * 512 * 4;
    assert!(
        out.report.sbuf_peak_bytes_per_partition < 2 * result_block,
        "{}",
        out.report.sbuf_peak_bytes_per_partition
    );
}

/// Every stripe schedule x loop order x transpose method x PE mode over several ragged blocks
/// in every direction: snake reuse, just-in-time transposes, the pieces of the next step's
/// loads and single or double outer slots must never change the product (the simulator's race
/// detector also checks every cross-engine access is ordered).
#[test]
fn schedule_orders_transposes_and_modes_grid() {
    use codegen::{LoopOrder, Schedule};
    for schedule in [Schedule::Hoisted, Schedule::BlockedMn, Schedule::BlockedMnk] {
        for order in [LoopOrder::MOuter, LoopOrder::NOuter] {
            for transpose in [gemm::TransposeOn::Pe, gemm::TransposeOn::Dma] {
                for double_row in [false, true] {
                    let dtype = if double_row { DType::Fp8e4m3 } else { DType::Bf16 };
                    // 5 m tiles in blocks of 3 (the next step's loads go in 3 pieces of the
                    // 7 (4 in double row) K chunks), 3 n tiles in blocks of 1.
                    // hoisted has no loop order or blocks (ntile refuses them there).
                    if schedule == Schedule::Hoisted && order == LoopOrder::NOuter {
                        continue;
                    }
                    let blocked = schedule != Schedule::Hoisted;
                    let mut a = args(600, 777, 1100, dtype, Target::Trn2);
                    a.schedule = Some(schedule);
                    a.order = blocked.then_some(order);
                    a.transpose = Some(transpose);
                    a.hbm_dtype = Some(DType::Bf16);
                    if blocked {
                        a.block_m = Some(384);
                        a.block_n = Some(512);
                    }
                    // blocked-mn keeps whole K stripes; only blocked-mnk takes a K block.
                    a.block_k = (schedule == Schedule::BlockedMnk).then_some(256);
                    if double_row {
                        a.perf_mode = Some(penguin::PerfMode::DoubleRow);
                    }
                    let what = format!("{schedule} {order:?} {transpose:?} double_row={double_row}");
                    let out = gemm::run(&a).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(out.report.check.as_ref().unwrap().passed, "{what}");
                }
            }
        }
    }
}

/// fp8 operands stored as fp8 in HBM are loaded without a cast (plain DMA copies); an integer
/// HBM dtype and the OCP fp8 off trn3 are refused with the reason.
#[test]
fn fp8_operands_stored_as_fp8_in_hbm() {
    let mut a = args(300, 999, 700, DType::Fp8e4m3, Target::Trn2);
    a.perf_mode = Some(penguin::PerfMode::DoubleRow);
    a.hbm_dtype = Some(DType::Fp8e4m3);
    let out = gemm::run(&a).unwrap();
    assert!(out.report.check.as_ref().unwrap().passed);
    // A and B once (1 byte each) and C (fp32) once: nothing is converted on the way.
    assert_eq!(out.report.hbm_bytes, 300 * 999 + 999 * 700 + 300 * 700 * 4);
    for (hbm, target, needle) in [
        (DType::Int32, Target::Trn2, "input dtype int32 is not supported"),
        (DType::Fp8e4m3fn, Target::Trn2, "input dtype fp8e4m3fn (OCP, max 448) is only supported on trn3"),
    ] {
        let mut a = args(30, 99, 70, DType::Bf16, target);
        a.hbm_dtype = Some(hbm);
        let e = gemm::run(&a).unwrap_err();
        assert_eq!(e.code, 2, "{}", e.message);
        assert!(e.message.contains(needle), "{}", e.message);
    }
}
