//! Cycle model tests: exact times of single instructions from SPEC section 2's formulas,
//! overlap and serialization rules, semaphores, HFU, and the Chrome trace export.

use bir::{BirInst, Engine, HwAp, Op, Program, SemId, Wait};
use penguin::{AluOp, CastMode, DType, Dim, EngineAccumulationType, Memory, PerfMode, Target, TilePosition, TileSize};
use sim::{model, model_with, CycleReport, SimError};
use test_support::trace::{thread_names, trace_json};
use test_support::{hbm, psum, sbuf};

use super::cycle_dma::load;

pub(super) const DMA_FIXED_NS: f64 = 1300.0;
/// trn2's per-descriptor time: the data time of a 2 KiB run at 23 B/ns.
pub(super) const TRN2_DESCRIPTOR_NS: f64 = 2048.0 / 23.0;

pub(super) fn assert_close(got: f64, want: f64) {
    assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "got {got}, want {want}");
}

pub(super) fn program(target: Target) -> Program {
    let mut p = Program::new("cycle", target);
    p.hbm_size = 1 << 30;
    p.semaphores = Engine::all().map(|e| e.name()).collect();
    p
}

pub(super) fn push(p: &mut Program, e: Engine, op: Op, waits: &[(u32, u32)], signal: Option<u32>) {
    let waits = waits.iter().map(|&(s, v)| Wait { sem: SemId(s), value: u64::from(v) }).collect();
    p.streams[e.index()].push(BirInst { op, waits, signal: signal.map(SemId), origin: None });
}

fn full() -> (TilePosition, TileSize) {
    (TilePosition { row: 0, col: 0 }, TileSize { rows: 128, cols: 128 })
}

fn ls(dtype: DType, k: u32, m: u32) -> Op {
    let (tile_position, tile_size) = full();
    Op::LoadStationary { src: sbuf(dtype, 0, k, 0, m), perf_mode: PerfMode::None, tile_position, tile_size }
}

fn mm(dtype: DType, k: u32, m: u32, n: u32) -> Op {
    let (tile_position, tile_size) = full();
    Op::MultiplyMoving {
        dst: psum(m, 0, n),
        src: sbuf(dtype, 0, k, 0, n),
        acc: EngineAccumulationType::START | EngineAccumulationType::STOP,
        perf_mode: PerfMode::None,
        tile_position,
        tile_size,
    }
}

/// A row tile: `rows` PE rows at `row`, contraction over partitions `row..row + rows`.
fn tiled(row: u32, rows: u32, n: u32) -> [Op; 2] {
    let tile_position = TilePosition { row, col: 0 };
    let tile_size = TileSize { rows, cols: 128 };
    let ls = Op::LoadStationary {
        src: sbuf(DType::Bf16, row, rows, 0, 128),
        perf_mode: PerfMode::None,
        tile_position,
        tile_size,
    };
    let mm = Op::MultiplyMoving {
        dst: psum(128, 0, n),
        src: sbuf(DType::Bf16, row, rows, 0, n),
        acc: EngineAccumulationType::START | EngineAccumulationType::STOP,
        perf_mode: PerfMode::None,
        tile_position,
        tile_size,
    };
    [ls, mm]
}

pub(super) fn dma(dst: HwAp, src: HwAp) -> Op {
    Op::DmaCopy { dst, src, cast: CastMode::Rne }
}

/// Cycles at trn2's TensorE clock, in ns.
fn pe2(cycles: f64) -> f64 {
    cycles / 2.4
}

pub(super) fn run(p: &Program) -> CycleReport {
    bir::verify_program(p).unwrap();
    model(p).unwrap()
}

/// A LoadStationary (`M` = 128) and one MultiplyMoving; the report and the MM's duration.
fn one_matmul(target: Target, dtype: DType, n: u32) -> (CycleReport, f64) {
    let mut p = program(target);
    push(&mut p, Engine::Pe, ls(dtype, 128, 128), &[], None);
    push(&mut p, Engine::Pe, mm(dtype, 128, 128, n), &[], None);
    let r = run(&p);
    let mm = r.slices[1];
    assert_eq!((mm.engine, mm.index, mm.wait_ns), (Engine::Pe, 1, 0.0));
    assert_close(mm.start_ns, r.slices[0].end_ns);
    assert_close(mm.end_ns, r.total_ns);
    (r, mm.end_ns - mm.start_ns)
}

#[test]
fn bf16_matmul_takes_n_cycles() {
    let (r, mm) = one_matmul(Target::Trn2, DType::Bf16, 512);
    assert_close(mm, pe2(512.0));
    assert_close(r.total_ns, pe2(32.0 + 512.0));
    assert_close(r.engine_busy_ns[Engine::Pe.index()], r.total_ns);
    assert_close(r.matmul_flops, 2.0 * 128.0 * 128.0 * 512.0);
    assert_close(r.peak_flops_per_ns, 2.0 * 128.0 * 128.0 * 2.4);
    assert_close(r.hfu(), 512.0 / 544.0);
    assert_eq!(r.slices.len(), 2);
}

#[test]
fn short_matmuls_cost_64_cycles_and_fp32_four_times_more() {
    for (dtype, n, cycles) in [
        (DType::Bf16, 32, 64.0),
        (DType::Fp8e4m3, 64, 64.0),
        (DType::Fp16, 100, 100.0),
        (DType::Fp32, 512, 2048.0),
        (DType::Fp32, 16, 256.0),
    ] {
        assert_close(one_matmul(Target::Trn2, dtype, n).1, pe2(cycles));
    }
    // trn1's TensorE runs at 2.8 GHz.
    assert_close(one_matmul(Target::Trn1, DType::Bf16, 512).1, 512.0 / 2.8);
}

#[test]
fn fp32_peak_is_a_quarter() {
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Pe, ls(DType::Fp32, 128, 128), &[], None);
    push(&mut p, Engine::Pe, mm(DType::Fp32, 128, 128, 512), &[], None);
    let r = run(&p);
    // LS: 128 / 4 cycles x4 for fp32, then the MM: 512 x4.
    assert_close(r.total_ns, pe2(128.0 + 2048.0));
    assert_close(r.peak_flops_per_ns, 2.0 * 128.0 * 128.0 * 2.4 / 4.0);
    assert_close(r.hfu(), 2048.0 / (128.0 + 2048.0));
}

#[test]
fn double_row_contracts_256_rows_in_the_time_of_128() {
    let (tile_position, tile_size) = full();
    let packed =
        |parts| HwAp::on_chip(Memory::Sbuf, DType::Fp8e4m3, 0, parts, 0, vec![Dim::new(512, 2), Dim::new(1, 512)]);
    let mut p = program(Target::Trn2);
    let w = HwAp::on_chip(Memory::Sbuf, DType::Fp8e4m3, 0, 128, 0, vec![Dim::new(128, 2), Dim::new(1, 128)]);
    push(
        &mut p,
        Engine::Pe,
        Op::LoadStationary { src: w, perf_mode: PerfMode::DoubleRow, tile_position, tile_size },
        &[],
        None,
    );
    let mm = Op::MultiplyMoving {
        dst: psum(128, 0, 512),
        src: packed(128),
        acc: EngineAccumulationType::START | EngineAccumulationType::STOP,
        perf_mode: PerfMode::DoubleRow,
        tile_position,
        tile_size,
    };
    push(&mut p, Engine::Pe, mm, &[], None);
    let r = run(&p);
    // LS of M = 128 (pack axis excluded): 32 cycles; MM of N = 512: 512 cycles.
    assert_close(r.total_ns, pe2(32.0 + 512.0));
    assert_close(r.matmul_flops, 2.0 * 256.0 * 128.0 * 512.0);
    assert_close(r.peak_flops_per_ns, 2.0 * 2.0 * 128.0 * 128.0 * 2.4);
    assert_close(r.hfu(), 512.0 / 544.0);
}

#[test]
fn load_stationary_costs_a_quarter_and_overlaps_the_previous_matmul() {
    let mut p = program(Target::Trn2);
    for _ in 0..2 {
        push(&mut p, Engine::Pe, ls(DType::Bf16, 128, 128), &[], None);
        push(&mut p, Engine::Pe, mm(DType::Bf16, 128, 128, 512), &[], None);
    }
    let r = run(&p);
    let s = &r.slices;
    assert_eq!(s.iter().map(|s| s.index).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    assert_close(s[0].end_ns, pe2(32.0));
    assert_close(s[1].start_ns, pe2(32.0));
    // The second LS loads into the shadow buffer as soon as the first MM has started ...
    assert_close(s[2].start_ns, s[1].start_ns);
    assert_close(s[2].end_ns, pe2(64.0));
    // ... so the second MM follows the first back to back.
    assert_close(s[3].start_ns, s[1].end_ns);
    assert_close(r.total_ns, pe2(32.0 + 1024.0));
    // Busy is the union: the hidden LS does not count twice.
    assert_close(r.engine_busy_ns[Engine::Pe.index()], r.total_ns);
    // Small stationaries still cost a quarter of a 64-cycle MM.
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Pe, ls(DType::Bf16, 128, 32), &[], None);
    assert_close(run(&p).total_ns, pe2(16.0));
}

#[test]
fn matmul_waits_for_its_weights_when_they_are_late() {
    // The second LS waits for a DMA, so the second MM waits for the LS.
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Dma(0), dma(sbuf(DType::Bf16, 0, 8, 0, 64), hbm(DType::Bf16, 0, 8, 64, 64)), &[], Some(5));
    push(&mut p, Engine::Pe, ls(DType::Bf16, 128, 128), &[], None);
    push(&mut p, Engine::Pe, mm(DType::Bf16, 128, 128, 512), &[], None);
    push(&mut p, Engine::Pe, ls(DType::Bf16, 128, 128), &[(5, 1)], None);
    push(&mut p, Engine::Pe, mm(DType::Bf16, 128, 128, 512), &[], None);
    let r = run(&p);
    let dma_end = r.slices.iter().find(|s| s.engine == Engine::Dma(0)).unwrap().end_ns;
    let pe: Vec<_> = r.slices.iter().filter(|s| s.engine == Engine::Pe).collect();
    assert_close(pe[2].start_ns, dma_end);
    assert_close(pe[2].wait_ns, dma_end - pe[1].start_ns);
    assert_close(pe[3].start_ns, dma_end + pe2(32.0));
}

#[test]
fn row_tiled_matmuls_overlap() {
    let mut p = program(Target::Trn2);
    for row in [0, 64] {
        for op in tiled(row, 64, 512) {
            push(&mut p, Engine::Pe, op, &[], None);
        }
    }
    let r = run(&p);
    // LS(0) [0, 32), MM(0) [32, 544), LS(64) [32, 64), MM(64) [64, 576): in cycles.
    assert_close(r.slices[3].start_ns, pe2(64.0));
    assert_close(r.total_ns, pe2(576.0));
    assert_close(r.engine_busy_ns[Engine::Pe.index()], pe2(576.0));
    // A full-array MM after them waits for both tiles (its LS loads in their background).
    push(&mut p, Engine::Pe, ls(DType::Bf16, 128, 128), &[], None);
    push(&mut p, Engine::Pe, mm(DType::Bf16, 128, 128, 64), &[], None);
    assert_close(run(&p).total_ns, pe2(576.0 + 64.0));
    // The same tiles at one row position serialize.
    let mut q = program(Target::Trn2);
    for _ in 0..2 {
        for op in tiled(0, 64, 512) {
            push(&mut q, Engine::Pe, op, &[], None);
        }
    }
    assert_close(run(&q).total_ns, pe2(32.0 + 1024.0));
}

#[test]
fn column_tiled_matmuls_overlap() {
    let mut p = program(Target::Trn2);
    for col in [0, 64] {
        let tile_position = TilePosition { row: 0, col };
        let tile_size = TileSize { rows: 128, cols: 64 };
        let w = sbuf(DType::Bf16, 0, 128, 0, 64);
        push(
            &mut p,
            Engine::Pe,
            Op::LoadStationary { src: w, perf_mode: PerfMode::None, tile_position, tile_size },
            &[],
            None,
        );
        let mm = Op::MultiplyMoving {
            dst: HwAp::on_chip(Memory::Psum, DType::Fp32, col, 64, 0, vec![Dim::new(1, 512)]),
            src: sbuf(DType::Bf16, 0, 128, 0, 512),
            acc: EngineAccumulationType::START | EngineAccumulationType::STOP,
            perf_mode: PerfMode::None,
            tile_position,
            tile_size,
        };
        push(&mut p, Engine::Pe, mm, &[], None);
    }
    let r = run(&p);
    // LS of M = 64: 16 cycles each; the second MM starts right after the second LS.
    assert_close(r.slices[3].start_ns, pe2(32.0));
    assert_close(r.total_ns, pe2(32.0 + 512.0));
    assert_close(r.matmul_flops, 2.0 * 2.0 * 128.0 * 64.0 * 512.0);
}

/// A sparse LS (128 kept rows x 128, tags `[128, 32]`) and an MM streaming `[128, CR, n]`.
fn sparse_pair(pattern: penguin::SparsityPattern, n: u32) -> Program {
    let (tile_position, tile_size) = full();
    let cr = pattern.compression_ratio();
    let mut p = program(Target::Trn2);
    let lss = Op::LoadStationarySparse {
        src: sbuf(DType::Bf16, 0, 128, 0, 128),
        tags: sbuf(DType::Int16, 0, 128, 256, 32),
        pattern,
        tile_position,
        tile_size,
    };
    push(&mut p, Engine::Pe, lss, &[], None);
    let mut mm = mm(DType::Bf16, 128, 128, n);
    if let Op::MultiplyMoving { src, .. } = &mut mm {
        *src = sbuf(DType::Bf16, 0, 128, 1024, cr * n);
    }
    push(&mut p, Engine::Pe, mm, &[], None);
    p
}

#[test]
fn sparse_matmul_streams_cr_rows_per_partition_at_one_column_per_cycle() {
    // Five input lanes per PE row carry CR <= 4 moving rows and the stationary element of
    // each column: a [128, CR, 512] pass takes the 512 cycles of a dense one and contracts
    // 128 x CR dense rows; the FLOPs are those of the 128 kept rows.
    for pattern in penguin::SparsityPattern::SUPPORTED {
        let r = run(&sparse_pair(pattern, 512));
        assert_close(r.total_ns, pe2(32.0 + 512.0));
        assert_close(r.matmul_flops, 2.0 * 128.0 * 128.0 * 512.0);
        // Short passes still cost the 64-cycle minimum.
        assert_close(run(&sparse_pair(pattern, 16)).total_ns, pe2(32.0 + 64.0));
    }
    // A narrower data path (trn1's dense 2x128) takes (CR + 1) / 2 cycles per column.
    let mut hw = Target::Trn2.profile();
    hw.pe_sparse_input_lanes = 2.0;
    let p = sparse_pair(penguin::SparsityPattern { n: 4, m: 16 }, 512);
    assert_close(model_with(&p, &hw).unwrap().total_ns, pe2(32.0 + 512.0 * 5.0 / 2.0));
    assert_eq!(Target::Trn2.profile().pe_sparse_input_lanes, 5.0);
    assert_eq!(Target::Trn3.profile().pe_sparse_input_lanes, 5.0);
}

#[test]
fn transpose_costs_like_a_matmul_of_its_source_free_size() {
    let mut p = program(Target::Trn1);
    push(
        &mut p,
        Engine::Pe,
        Op::Transpose { dst: psum(128, 0, 128), src: sbuf(DType::Bf16, 0, 128, 0, 128) },
        &[],
        None,
    );
    push(&mut p, Engine::Pe, Op::Transpose { dst: psum(32, 0, 32), src: sbuf(DType::Fp32, 0, 32, 0, 32) }, &[], None);
    let r = run(&p);
    assert_close(r.total_ns, (128.0 + 64.0 * 4.0) / 2.8);
    assert_eq!(r.matmul_flops, 0.0);
}

/// One DMA of `parts` partitions x `free` bf16 elements from HBM rows into SBUF.
#[test]
fn compute_engines_take_the_documented_max_of_min_ii_and_n() {
    let mut p = program(Target::Trn2);
    push(
        &mut p,
        Engine::Act,
        Op::TensorCopy { dst: sbuf(DType::Bf16, 0, 128, 0, 512), src: psum(128, 0, 512) },
        &[],
        None,
    );
    let tt = Op::TensorTensor {
        op: AluOp::Add,
        dst: sbuf(DType::Fp32, 0, 128, 0, 512),
        lhs: sbuf(DType::Fp32, 0, 128, 0, 512),
        rhs: psum(128, 0, 512),
    };
    push(&mut p, Engine::Dve, tt, &[], None);
    push(&mut p, Engine::Pool, Op::Memset { dst: sbuf(DType::Fp32, 0, 128, 0, 100), value: 0.0 }, &[], None);
    push(&mut p, Engine::Pool, Op::Memset { dst: sbuf(DType::Fp32, 0, 128, 0, 100), value: 1.0 }, &[], None);
    let r = run(&p);
    let end = |e: Engine| r.slices.iter().filter(|s| s.engine == e).map(|s| s.end_ns).fold(0.0, f64::max);
    // tensor_copy max(MIN_II, N); tensor_tensor with a PSUM input max(MIN_II, N); memset
    // max(MIN_II, N) (N = 100 > MIN_II = 64).
    assert_close(end(Engine::Act), 512.0 / 1.2);
    assert_close(end(Engine::Dve), 512.0 / 0.96);
    assert_close(end(Engine::Pool), 2.0 * 100.0 / 1.2);
    assert_close(r.total_ns, 512.0 / 0.96);
    assert_close(r.busy_fraction(Engine::Dve), 1.0);
    let busy = r.engine_busy_summary();
    assert_close(busy.act, 0.96 / 1.2);
    assert_eq!((busy.pe, busy.dma), (0.0, 0.0));
}

#[test]
fn a_scan_streams_its_two_inputs_as_tensor_tensor_does() {
    // fp32 inputs both in SBUF: max(MIN_II, 2N) on VectorE (0.96 GHz), then one in PSUM: N.
    let mut p = program(Target::Trn2);
    let scan = |data1: HwAp| Op::TensorTensorScan {
        op0: AluOp::Multiply,
        op1: AluOp::Add,
        dst: sbuf(DType::Fp32, 0, 128, 0, 512),
        data0: sbuf(DType::Fp32, 0, 128, 4096, 512),
        data1,
        initial: penguin::ScalarOperand::Imm(0.0),
    };
    push(&mut p, Engine::Dve, scan(sbuf(DType::Fp32, 0, 128, 8192, 512)), &[], None);
    push(&mut p, Engine::Dve, scan(psum(128, 0, 512)), &[], None);
    let r = run(&p);
    assert_close(r.total_ns, (2.0 * 512.0 + 512.0) / 0.96);
}

#[test]
fn a_wait_delays_the_consumer_to_the_producers_end() {
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Dma(2), load(0, 8, 2048), &[], Some(7));
    push(
        &mut p,
        Engine::Act,
        Op::TensorCopy { dst: sbuf(DType::Fp32, 0, 8, 0, 64), src: sbuf(DType::Bf16, 0, 8, 0, 64) },
        &[(7, 1)],
        None,
    );
    let r = run(&p);
    let dma_end = DMA_FIXED_NS + 8.0 * 4096.0 / 23.0;
    let act = r.slices.iter().find(|s| s.engine == Engine::Act).unwrap();
    assert_close(act.start_ns, dma_end);
    assert_close(act.wait_ns, dma_end);
    assert_close(r.total_ns, dma_end + 64.0 / 1.2);
}

#[test]
fn signals_count_in_completion_order_of_a_stream() {
    // Two DMAs on one queue signal s5 twice; the consumer of the second waits for both.
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Dma(0), load(0, 8, 2048), &[], Some(5));
    push(&mut p, Engine::Dma(0), load(0, 8, 2048), &[], Some(5));
    push(&mut p, Engine::Dve, Op::Memset { dst: sbuf(DType::Fp32, 0, 8, 0, 4), value: 0.0 }, &[(5, 1)], None);
    push(&mut p, Engine::Dve, Op::Memset { dst: sbuf(DType::Fp32, 0, 8, 0, 4), value: 0.0 }, &[(5, 2)], None);
    let r = run(&p);
    // Both are in flight at once; their data shares the one engine.
    let data = 8.0 * 4096.0 / 23.0;
    let dve: Vec<_> = r.slices.iter().filter(|s| s.engine == Engine::Dve).collect();
    assert_close(dve[0].start_ns, DMA_FIXED_NS + data);
    assert_close(dve[1].start_ns, DMA_FIXED_NS + 2.0 * data);
}

#[test]
fn back_to_back_matmuls_reach_full_hfu() {
    let mut p = program(Target::Trn2);
    for _ in 0..200 {
        push(&mut p, Engine::Pe, ls(DType::Bf16, 128, 128), &[], None);
        push(&mut p, Engine::Pe, mm(DType::Bf16, 128, 128, 512), &[], None);
    }
    let r = run(&p);
    assert_close(r.total_ns, pe2(32.0 + 200.0 * 512.0));
    assert!(r.hfu() > 0.999 && r.hfu() <= 1.0, "hfu {}", r.hfu());
    assert_close(r.busy_fraction(Engine::Pe), 1.0);
}

#[test]
fn deadlock_is_an_error() {
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Act, Op::Memset { dst: sbuf(DType::Fp32, 0, 8, 0, 4), value: 0.0 }, &[(2, 1)], Some(1));
    push(&mut p, Engine::Dve, Op::Memset { dst: sbuf(DType::Fp32, 0, 8, 0, 4), value: 0.0 }, &[(1, 1)], Some(2));
    match model(&p) {
        Err(SimError::Deadlock { stuck }) => {
            let at: Vec<String> = stuck.iter().map(ToString::to_string).collect();
            assert_eq!(at, vec!["act[0] waits for s2 >= 1 (reached 0)", "dve[0] waits for s1 >= 1 (reached 0)"]);
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[test]
fn malformed_programs_are_errors() {
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Dve, mm(DType::Bf16, 128, 128, 512), &[], None);
    assert!(matches!(model(&p), Err(SimError::WrongEngine { op: "multiply_moving", .. })));
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Pe, mm(DType::Bf16, 128, 128, 512), &[(99, 1)], None);
    assert!(matches!(model(&p), Err(SimError::UnknownSemaphore { .. })));
    let mut p = program(Target::Trn2);
    p.streams.push(Vec::new());
    assert!(matches!(model(&p), Err(SimError::TooManyStreams { .. })));
    let empty = model(&program(Target::Trn2)).unwrap();
    assert_eq!((empty.total_ns, empty.hfu(), empty.busy_fraction(Engine::Pe)), (0.0, 0.0, 0.0));
}

#[test]
fn trace_has_a_track_per_used_engine_and_shows_waits() {
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Dma(3), load(0, 128, 512), &[], Some(8));
    push(&mut p, Engine::Pe, ls(DType::Bf16, 128, 128), &[(8, 1)], None);
    push(&mut p, Engine::Pe, mm(DType::Bf16, 128, 128, 512), &[], Some(0));
    push(
        &mut p,
        Engine::Act,
        Op::TensorCopy { dst: sbuf(DType::Fp32, 0, 128, 0, 512), src: psum(128, 0, 512) },
        &[(0, 1)],
        None,
    );
    let r = run(&p);
    let trace = trace_json(&p, &r);
    assert_eq!(thread_names(&trace), vec!["act", "dma3", "pe", "pe.weights"]);
    let events = trace["traceEvents"].as_array().unwrap();
    let slices: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let named = |n: &str| slices.iter().filter(|e| e["name"] == n).count();
    assert_eq!(
        (named("dma_copy"), named("load_stationary"), named("multiply_moving"), named("tensor_copy")),
        (1, 1, 1, 1)
    );
    let waits: Vec<&str> =
        slices.iter().filter(|e| e["name"] == "wait").map(|e| e["args"]["waits"].as_str().unwrap()).collect();
    assert_eq!(waits, ["s8>=1", "s0>=1"]);
    let mm = slices.iter().find(|e| e["name"] == "multiply_moving").unwrap();
    assert_eq!(mm["args"]["acc"], "start|stop");
    assert_eq!(mm["args"]["signal"], "s0");
    assert_eq!(mm["args"]["src"], sbuf(DType::Bf16, 0, 128, 0, 512).to_string());
    // Microseconds.
    assert_close(mm["dur"].as_f64().unwrap(), pe2(512.0) / 1e3);
    let act = slices.iter().find(|e| e["name"] == "tensor_copy").unwrap();
    assert_close(act["ts"].as_f64().unwrap(), r.total_ns / 1e3 - 512.0 / 1.2 / 1e3);
}

#[test]
fn row_tiles_get_their_own_pe_track() {
    let mut p = program(Target::Trn2);
    for row in [0, 64] {
        for op in tiled(row, 64, 512) {
            push(&mut p, Engine::Pe, op, &[], None);
        }
    }
    let trace = trace_json(&p, &run(&p));
    assert_eq!(thread_names(&trace), vec!["pe", "pe.r64c0", "pe.weights"]);
}

#[test]
fn a_predicated_copy_streams_two_inputs_unless_its_source_is_a_number() {
    // Tile source and predicate in SBUF: max(MIN_II, 2N); predicate in PSUM: N; an immediate
    // source streams the predicate alone: N (VectorE at 0.96 GHz).
    let mut p = program(Target::Trn2);
    let copy = |predicate: HwAp, src: penguin::ScalarOperand<HwAp>| Op::TensorCopyPredicated {
        reverse: false,
        dst: sbuf(DType::Fp32, 0, 128, 0, 512),
        predicate,
        src,
    };
    let tile = || penguin::ScalarOperand::Tile(sbuf(DType::Fp32, 0, 128, 4096, 512));
    push(&mut p, Engine::Dve, copy(sbuf(DType::Int32, 0, 128, 8192, 512), tile()), &[], None);
    push(&mut p, Engine::Dve, copy(psum(128, 0, 512), tile()), &[], None);
    push(&mut p, Engine::Dve, copy(sbuf(DType::Int32, 0, 128, 8192, 512), penguin::ScalarOperand::Imm(1.0)), &[], None);
    let r = run(&p);
    assert_close(r.total_ns, (2.0 * 512.0 + 512.0 + 512.0) / 0.96);
}

#[test]
fn a_stream_shuffle_streams_its_source_once() {
    // max(MIN_II, N) on VectorE (0.96 GHz): 512 elements per partition, then the MIN_II floor.
    let mut p = program(Target::Trn2);
    let shuffle = |n: u32| Op::StreamShuffle {
        mask: penguin::ShuffleMask([0; 32]),
        dst: sbuf(DType::Fp32, 0, 32, 0, n),
        src: sbuf(DType::Fp32, 32, 1, 4096, n),
    };
    push(&mut p, Engine::Dve, shuffle(512), &[], None);
    push(&mut p, Engine::Dve, shuffle(8), &[], None);
    let r = run(&p);
    assert_close(r.total_ns, (512.0 + 64.0) / 0.96);
}

#[test]
fn a_cumulative_reduction_streams_its_source_once() {
    // max(MIN_II, N) on VectorE (0.96 GHz), as a tensor_scalar.
    let mut p = program(Target::Trn2);
    let cumulative = |n: u32| Op::TensorScalarCumulative {
        op0: AluOp::Add,
        op1: AluOp::Max,
        reverse0: false,
        dst: sbuf(DType::Fp32, 0, 128, 0, n),
        src: sbuf(DType::Fp32, 0, 128, 4096, n),
        operand0: penguin::ScalarOperand::Imm(1.0),
        initial: penguin::ScalarOperand::Imm(f64::NEG_INFINITY),
    };
    push(&mut p, Engine::Dve, cumulative(1000), &[], None);
    push(&mut p, Engine::Dve, cumulative(10), &[], None);
    assert_close(run(&p).total_ns, (1000.0 + 64.0) / 0.96);
}

#[test]
fn a_partition_reduce_costs_gpsimds_start_and_one_pass() {
    // GPSIMD_START + N (N elements per partition) on GpSimd at 1.2 GHz.
    let mut p = program(Target::Trn2);
    let reduce = Op::TensorPartitionReduce {
        op: AluOp::Add,
        dst: sbuf(DType::Fp32, 0, 1, 0, 300),
        src: sbuf(DType::Fp32, 0, 128, 4096, 300),
    };
    push(&mut p, Engine::Pool, reduce, &[], None);
    assert_close(run(&p).total_ns, (150.0 + 300.0) / 1.2);
}

#[test]
fn a_top8_search_streams_its_source_once() {
    // max(MIN_II, N) on VectorE (0.96 GHz): 2048 elements per partition, then the floor.
    let mut p = program(Target::Trn2);
    let top8 = |n: u32| Op::Top8 {
        mode: penguin::Top8Mode::Max8,
        value: 0.0,
        dst: sbuf(DType::Fp32, 0, 128, 0, 8),
        src: sbuf(DType::Fp32, 0, 128, 64, n),
        vals: None,
        idx: None,
    };
    push(&mut p, Engine::Dve, top8(2048), &[], None);
    push(&mut p, Engine::Dve, top8(16), &[], None);
    let r = run(&p);
    assert_close(r.total_ns, (2048.0 + 64.0) / 0.96);
}
