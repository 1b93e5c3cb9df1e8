//! Cycle model tests of the DMA queues: the fixed cost, engine and HBM rates, queue depth,
//! descriptors, HBM granules, casts, transposes, gathers and DMA fused multiply-adds.

use bir::{Engine, HwAp, Op};
use penguin::{DType, Dim, Target};
use sim::model_with;
use test_support::{hbm, sbuf};

use super::cycle::{assert_close, dma, program, push, run, DMA_FIXED_NS, TRN2_DESCRIPTOR_NS};

pub(super) fn load(start: u32, parts: u32, free: u32) -> Op {
    dma(sbuf(DType::Bf16, start, parts, 0, free), hbm(DType::Bf16, 0, parts, i64::from(free), free))
}

#[test]
fn dma_pays_a_fixed_cost_then_moves_data_at_engine_or_hbm_rate() {
    // 8 partitions of 4 KiB: one engine at 23 B/ns, full efficiency.
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Dma(0), load(0, 8, 2048), &[], None);
    let r = run(&p);
    assert_close(r.total_ns, DMA_FIXED_NS + 8.0 * 4096.0 / 23.0);
    assert_eq!(r.hbm_bytes, 8 * 4096);
    assert_eq!(r.hbm_bytes, p.hbm_traffic_bytes());
    // 128 partitions: 16 engines (368 B/ns) but HBM serves only 360 B/ns.
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Dma(3), load(0, 128, 2048), &[], None);
    assert_close(run(&p).total_ns, DMA_FIXED_NS + 128.0 * 4096.0 / 360.0);
    // trn3: 16 x 33 B/ns = 528 B/ns, HBM 600 B/ns: engine-bound.
    let mut p = program(Target::Trn3);
    push(&mut p, Engine::Dma(3), load(0, 128, 2048), &[], None);
    assert_close(run(&p).total_ns, DMA_FIXED_NS + 8.0 * 4096.0 / 33.0);
}

#[test]
fn dmas_on_different_queues_overlap_and_on_one_queue_keep_several_in_flight() {
    let one = DMA_FIXED_NS + 8.0 * 4096.0 / 23.0;
    // Different queues, different partition groups (engines): fully parallel.
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Dma(0), load(0, 8, 2048), &[], None);
    push(&mut p, Engine::Dma(1), load(8, 8, 2048), &[], None);
    let r = run(&p);
    assert_close(r.total_ns, one);
    assert_close(r.engine_busy_summary().dma, 2.0 / 16.0);
    // One queue, different engines: both in flight at once, so their fixed latencies overlap.
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Dma(0), load(0, 8, 2048), &[], None);
    push(&mut p, Engine::Dma(0), load(8, 8, 2048), &[], None);
    let r = run(&p);
    assert_close(r.total_ns, one);
    assert_close(r.slices[1].start_ns, 0.0);
    // With one transfer in flight per queue they serialize, fixed latency included.
    let serial = penguin::HwProfile { dma_queue_depth: 1.0, ..Target::Trn2.profile() };
    let r = model_with(&p, &serial).unwrap();
    assert_close(r.total_ns, 2.0 * one);
    assert_close(r.slices[1].start_ns, one);
    // Different queues on the same partitions share their DMA engine: the fixed costs overlap,
    // the data moves one after the other.
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Dma(0), load(0, 8, 2048), &[], None);
    push(&mut p, Engine::Dma(1), load(0, 8, 2048), &[], None);
    assert_close(run(&p).total_ns, DMA_FIXED_NS + 2.0 * 8.0 * 4096.0 / 23.0);
}

#[test]
fn small_transfers_on_one_queue_overlap_their_fixed_latency_up_to_the_queue_depth() {
    // Eight one-descriptor loads (one partition of 128 B) on queue 0, each on its own engine.
    let hw = Target::Trn2.profile();
    assert_eq!(hw.queue_depth(), 4);
    let mut p = program(Target::Trn2);
    for i in 0..8 {
        push(&mut p, Engine::Dma(0), load(8 * i, 1, 64), &[], None);
    }
    let r = run(&p);
    let each = hw.dma_fixed_ns + hw.dma_descriptor_ns;
    // Four start at once; the fifth waits for the first to land, and so on.
    let starts: Vec<f64> = r.slices.iter().map(|s| s.start_ns).collect();
    for (i, &t) in starts.iter().enumerate() {
        assert_close(t, if i < 4 { 0.0 } else { each });
    }
    assert_close(r.total_ns, 2.0 * each);
    // Depth 8: all eight overlap.
    let deep = penguin::HwProfile { dma_queue_depth: 8.0, ..hw };
    assert_close(model_with(&p, &deep).unwrap().total_ns, each);
}

#[test]
fn a_32_kib_single_engine_load_takes_its_data_time_after_the_fixed_latency() {
    // S9: A[4, 4096] bf16 (32 KiB) HBM -> SBUF runs on one engine; the profile of that
    // transfer showed 1416 ns of engine activity. Here: 4 runs of 8 KiB, each longer than the
    // descriptor time's worth, so the engine streams at its 23 B/ns.
    let hw = Target::Trn2.profile();
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Dma(0), load(0, 4, 4096), &[], None);
    let r = run(&p);
    let data = 32768.0 / hw.dma_engine_bytes_per_ns;
    assert_close(r.total_ns, hw.dma_fixed_ns + data);
    assert!((data - 1416.0).abs() < 0.01 * 1416.0, "{data}");
    // Overriding a key changes the figure.
    let slow = penguin::HwProfile { dma_fixed_ns: 2000.0, ..hw };
    assert_close(model_with(&p, &slow).unwrap().total_ns, 2000.0 + data);
}

#[test]
fn short_dma_runs_cost_a_descriptor_each() {
    let data_ns = |free: u32| {
        let mut p = program(Target::Trn2);
        push(&mut p, Engine::Dma(0), load(0, 8, free), &[], None);
        run(&p).total_ns - DMA_FIXED_NS
    };
    let bytes = |free: u32| 8.0 * 2.0 * f64::from(free);
    // Runs of 2 KiB and longer stream at the engine rate; shorter ones cost the descriptor
    // time each (8 of them on the one engine).
    assert_close(data_ns(4096), bytes(4096) / 23.0);
    assert_close(data_ns(1024), bytes(1024) / 23.0);
    assert_close(data_ns(1024), 8.0 * TRN2_DESCRIPTOR_NS);
    assert_close(data_ns(512), 8.0 * TRN2_DESCRIPTOR_NS);
    assert_close(data_ns(128), 8.0 * TRN2_DESCRIPTOR_NS);
    // A strided HBM row (every other element) has one-element runs: 2048 descriptors per
    // partition.
    let mut p = program(Target::Trn2);
    let mut src = hbm(DType::Bf16, 0, 8, 4096, 2048);
    src.dims = vec![Dim::new(2, 2048)].into();
    push(&mut p, Engine::Dma(0), dma(sbuf(DType::Bf16, 0, 8, 0, 2048), src), &[], None);
    assert_close(run(&p).total_ns - DMA_FIXED_NS, 8.0 * 2048.0 * TRN2_DESCRIPTOR_NS);
}

#[test]
fn hbm_moves_whole_granules() {
    // 128 partitions of 16 bf16 (32 B runs): HBM moves 64-byte granules, twice the bytes.
    let mut p = program(Target::Trn2);
    push(&mut p, Engine::Dma(0), load(0, 128, 16), &[], None);
    let r = run(&p);
    assert_eq!(r.hbm_bytes, 128 * 32);
    // The engines (8 descriptors each) take longer than HBM here.
    assert_close(r.total_ns, DMA_FIXED_NS + 8.0 * TRN2_DESCRIPTOR_NS);
    let narrow = penguin::HwProfile { hbm_bytes_per_ns: 1.0, ..Target::Trn2.profile() };
    assert_close(model_with(&p, &narrow).unwrap().total_ns, DMA_FIXED_NS + 128.0 * 64.0);
}

#[test]
fn casting_dma_runs_count_in_the_wider_dtype() {
    // fp32 HBM rows of 512 elements into bf16: the engines stream fp32, runs of 2 KiB.
    let mut p = program(Target::Trn2);
    let src = hbm(DType::Fp32, 0, 8, 512, 512);
    push(&mut p, Engine::Dma(0), dma(sbuf(DType::Bf16, 0, 8, 0, 512), src), &[], None);
    assert_close(run(&p).total_ns - DMA_FIXED_NS, 8.0 * 2048.0 / 23.0);
    // bf16 HBM rows into fp32: the same stream width.
    let mut p = program(Target::Trn2);
    let src = hbm(DType::Bf16, 0, 8, 512, 512);
    push(&mut p, Engine::Dma(0), dma(sbuf(DType::Fp32, 0, 8, 0, 512), src), &[], None);
    assert_close(run(&p).total_ns - DMA_FIXED_NS, 8.0 * 2048.0 / 23.0);
}

/// A `[128 (k), 128 (m)]` SBUF tile loaded from a row-major fp32 `[m, k]` HBM matrix:
/// partition `k` reads column `k` (partition stride 1, free stride K).
fn transposing_load(target: Target) -> f64 {
    let mut p = program(target);
    let src = HwAp::hbm(DType::Fp32, 0, 128, 1, vec![Dim::new(128, 128)]);
    push(&mut p, Engine::Dma(0), dma(sbuf(DType::Bf16, 0, 128, 0, 128), src), &[], None);
    run(&p).total_ns
}

#[test]
fn trn1_has_no_dma_transpose() {
    // trn2: the DMA transposes; runs are the 128 partitions x 4 bytes = 512 B, so each engine's
    // 8 x 128 runs cost a descriptor each (more than their data time at 90% of copy rate).
    let trn2 = transposing_load(Target::Trn2);
    assert_close(trn2, DMA_FIXED_NS + 8.0 * TRN2_DESCRIPTOR_NS);
    let fast = penguin::HwProfile { dma_descriptor_ns: 0.0, ..Target::Trn2.profile() };
    let mut p = program(Target::Trn2);
    let src = HwAp::hbm(DType::Fp32, 0, 128, 1, vec![Dim::new(128, 128)]);
    push(&mut p, Engine::Dma(0), dma(sbuf(DType::Bf16, 0, 128, 0, 128), src), &[], None);
    // Without the descriptor cost: 4 KiB per engine at 90% of 23 B/ns (HBM needs 182 ns).
    assert_close(model_with(&p, &fast).unwrap().total_ns, DMA_FIXED_NS + 8.0 * 512.0 / (23.0 * 0.9));
    // trn1: one element per run, 8 x 128 x 128 / 8 of them per engine.
    let trn1 = transposing_load(Target::Trn1);
    assert_close(trn1, DMA_FIXED_NS + 128.0 * 128.0 / 16.0 * (2048.0 / 17.0));
    assert!(trn1 > 50.0 * trn2, "trn1 {trn1} ns vs trn2 {trn2} ns");
}

#[test]
fn gather_runs_are_table_rows() {
    // Gather 8 rows of 1024 fp32 (4 KiB each) from an HBM table of 64 rows.
    let mut p = program(Target::Trn2);
    let table = hbm(DType::Fp32, 0, 64, 1024, 1024);
    let index = sbuf(DType::Int32, 0, 8, 0, 1);
    let op = Op::DmaGather { dst: sbuf(DType::Fp32, 0, 8, 0, 1024), table, index, skip: false };
    push(&mut p, Engine::Dma(0), op, &[], None);
    let r = run(&p);
    assert_eq!(r.hbm_bytes, 8 * 4096);
    assert_close(r.total_ns, DMA_FIXED_NS + (8.0 * 4096.0 + 8.0 * 4.0) / 23.0);
}

#[test]
fn dma_fma_reads_all_three_operands() {
    let mut p = program(Target::Trn2);
    let op = Op::DmaFma {
        dst: sbuf(DType::Fp32, 0, 8, 0, 1024),
        src0: sbuf(DType::Fp32, 0, 8, 0, 1024),
        src1: sbuf(DType::Fp32, 0, 8, 0, 1024),
    };
    push(&mut p, Engine::Dma(0), op, &[], None);
    let r = run(&p);
    assert_eq!(r.hbm_bytes, 0);
    // Arithmetic in the DMA runs at half the copy rate before trn3.
    assert_close(r.total_ns, DMA_FIXED_NS + 3.0 * 8.0 * 4096.0 / (23.0 * 0.5));
}
