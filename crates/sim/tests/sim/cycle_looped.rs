//! The cycle model of looped programs: `model_looped` gives the figures of `model_with` on the
//! unrolled program (hand-built pipelines with prologue, epilogue, nested loops and
//! semaphores between engines; a hand-built GEMM rolled by a small roller), and extrapolates
//! the steady state of loops far too long to unroll to the closed form `prologue + trips x
//! period`. (Planned GEMMs rolled the same way are checked in `crates/driver/tests/driver`.)

use bir::{Engine, Item, Loop, LoopedProgram, Op, Program, SemId};
use penguin::{CastMode, DType, EngineAccumulationType, PerfMode, Target, TilePosition, TileSize};
use sim::{model_looped, model_looped_default, model_with, SimError};
use test_support::hand_gemm::{gemm_program, GemmSpec};
use test_support::looped::{assert_close, check_against_unrolled, profiles, widths};
use test_support::roll::roll;
use test_support::{hbm, inst, psum, sbuf};

// ---------------------------------------------------------------------------------------
// Building blocks

fn load(offset: u64, cols: u32) -> Op {
    Op::DmaCopy {
        dst: sbuf(DType::Bf16, 0, 128, 0, cols),
        src: hbm(DType::Bf16, offset, 128, 4096, cols),
        cast: CastMode::Rne,
    }
}

fn store(offset: u64, cols: u32) -> Op {
    Op::DmaCopy {
        dst: hbm(DType::Bf16, offset, 128, 4096, cols),
        src: sbuf(DType::Bf16, 0, 128, 0, cols),
        cast: CastMode::Rne,
    }
}

fn full() -> (TilePosition, TileSize) {
    (TilePosition { row: 0, col: 0 }, TileSize { rows: 128, cols: 128 })
}

fn ls() -> Op {
    let (tile_position, tile_size) = full();
    Op::LoadStationary { src: sbuf(DType::Bf16, 0, 128, 0, 128), perf_mode: PerfMode::None, tile_position, tile_size }
}

fn mm(n: u32, offset: u64) -> Op {
    let (tile_position, tile_size) = full();
    Op::MultiplyMoving {
        dst: psum(128, 0, n),
        src: sbuf(DType::Bf16, 0, 128, offset, n),
        acc: EngineAccumulationType::START | EngineAccumulationType::STOP,
        perf_mode: PerfMode::None,
        tile_position,
        tile_size,
    }
}

fn evacuate(n: u32) -> Op {
    Op::TensorCopy { dst: sbuf(DType::Bf16, 0, 128, 0, n), src: psum(128, 0, n) }
}

/// What a parameter of a BIR instruction is (in `bir::looped` order).
#[derive(Clone, Copy)]
enum Param {
    Offset,
    Partition,
    Wait(SemId),
}

/// One entry per parameter of `items`, in order: `f` of what the parameter is.
fn per_param(items: &[Item], f: &dyn Fn(Param) -> i64) -> Vec<i64> {
    fn walk(items: &[Item], f: &dyn Fn(Param) -> i64, out: &mut Vec<i64>) {
        for it in items {
            match it {
                Item::Inst(i) => {
                    for _ in i.op.aps() {
                        out.extend([f(Param::Offset), f(Param::Partition)]);
                    }
                    out.extend(i.waits.iter().map(|w| f(Param::Wait(w.sem))));
                }
                Item::Loop(l) => walk(&l.body, f, out),
            }
        }
    }
    let mut out = Vec::new();
    walk(items, f, &mut out);
    out
}

/// A loop over `body` whose byte offsets advance by `offset_step` and waits by `wait_step`
/// (partitions stay).
fn looped(trips: u32, body: Vec<Item>, offset_step: i64, wait_step: i64) -> Item {
    let step = per_param(&body, &|p| match p {
        Param::Offset => offset_step,
        Param::Partition => 0,
        Param::Wait(_) => wait_step,
    });
    Item::Loop(Loop { trips, body, step })
}

fn empty_looped(sems: usize) -> LoopedProgram {
    let mut p = Program::new("looped", Target::Trn2);
    p.hbm_size = 1 << 40;
    p.semaphores = (0..sems).map(|i| format!("s{i}")).collect();
    LoopedProgram::from_program(&p)
}

const LOADED: u32 = 0;
const FREED: u32 = 1;
const MMDONE: u32 = 2;
const EVAC: u32 = 3;
const STORED: u32 = 4;
const WEIGHTS: u32 = 5;

/// A GEMM-like pipeline of `trips` steps. Prologue: a weight DMA on queue 2 and the first
/// operand load on queue 0. Loop on queue 0: load the next operand (double-buffered: waits
/// for the PE to free the slot used two steps ago). Loop on the PE: LoadStationary (waits
/// for the operand and for ACT to evacuate PSUM), an inner loop of `inner` MultiplyMovings,
/// one more that signals. Loop on ACT: evacuate PSUM. Loop on queue 1: store. Epilogue:
/// POOL memsets once every store is done; queue 0 stores a trailer.
fn pipeline(trips: u32, inner: u32, n: u32) -> LoopedProgram {
    let mut lp = empty_looped(6);
    let q0 = &mut lp.streams[Engine::Dma(0).index()];
    q0.push(Item::Inst(inst(load(0, n), &[], Some(LOADED))));
    if trips > 1 {
        q0.push(looped(trips - 1, vec![Item::Inst(inst(load(256, n), &[(FREED, 0)], Some(LOADED)))], 256, 1));
    }
    q0.push(Item::Inst(inst(store(1 << 30, 64), &[(STORED, trips)], None)));
    lp.streams[Engine::Dma(2).index()] = vec![Item::Inst(inst(load(1 << 32, 128), &[], Some(WEIGHTS)))];
    let pe_body = vec![
        Item::Inst(inst(ls(), &[(LOADED, 1), (EVAC, 0), (WEIGHTS, 1)], None)),
        // The inner MMs stream successive moving columns (the source moves, PSUM stays).
        Item::Loop(Loop { trips: inner, body: vec![Item::Inst(inst(mm(n, 0), &[], None))], step: vec![0, 0, 64, 0] }),
        Item::Inst(inst(mm(n, 0), &[], Some(FREED))),
    ];
    // The weight wait stays at 1 (step 0): build the step by hand.
    let Item::Loop(mut pe_loop) = looped(trips, pe_body, 0, 1) else { unreachable!() };
    pe_loop.step[4] = 0;
    lp.streams[Engine::Pe.index()] = vec![Item::Loop(pe_loop)];
    // FREED is signalled by the last MM of each step; MMDONE by ACT's evacuation start: use
    // FREED for "PSUM written" too.
    lp.streams[Engine::Act.index()] =
        vec![looped(trips, vec![Item::Inst(inst(evacuate(n), &[(FREED, 1)], Some(EVAC)))], 0, 1)];
    lp.streams[Engine::Dma(1).index()] =
        vec![looped(trips, vec![Item::Inst(inst(store(1 << 31, n), &[(EVAC, 1)], Some(STORED)))], 512, 1)];
    lp.streams[Engine::Pool.index()] = vec![Item::Inst(inst(
        Op::Memset { dst: sbuf(DType::Fp32, 0, 128, 0, 64), value: 0.0 },
        &[(STORED, trips)],
        Some(MMDONE),
    ))];
    lp
}

// ---------------------------------------------------------------------------------------
// Tests

#[test]
fn pipelines_match_the_unrolled_model() {
    let trn2 = Target::Trn2.profile();
    let mut deep = trn2;
    deep.dma_queue_depth = 1.0;
    for (trips, inner, n) in
        [(1, 1, 64), (2, 3, 512), (3, 1, 128), (7, 2, 256), (40, 3, 512), (97, 1, 64), (300, 4, 384)]
    {
        for profile in [&trn2, &deep] {
            let lp = pipeline(trips, inner, n);
            let r = check_against_unrolled(&lp, profile, 1e-3).0;
            // Every MM of the pipeline: 2 K M N.
            let mms = f64::from(trips) * f64::from(inner + 1);
            assert_eq!(r.matmul_flops, mms * 2.0 * 128.0 * 128.0 * f64::from(n));
        }
    }
}

#[test]
fn a_nested_top_level_loop_matches_the_unrolled_model() {
    // Every stream of the pipeline wrapped in an outer loop of 3 trips over whole pipelines
    // (waits advance by the trips of one pipeline, the POOL/trailer waits included).
    let trips = 25;
    let base = pipeline(trips, 2, 256);
    let mut lp = base.clone();
    for (e, items) in base.streams.iter().enumerate() {
        if items.is_empty() {
            continue;
        }
        // Per outer iteration each semaphore counts one pipeline's signals; WEIGHTS once.
        let step = per_param(items, &|p| match p {
            Param::Wait(SemId(s)) if s == WEIGHTS => 0,
            Param::Wait(SemId(s)) if s == LOADED || s == FREED || s == EVAC || s == STORED => i64::from(trips),
            Param::Wait(_) => 1,
            Param::Offset | Param::Partition => 0,
        });
        lp.streams[e] = vec![Item::Loop(Loop { trips: 3, body: items.clone(), step })];
    }
    check_against_unrolled(&lp, &Target::Trn2.profile(), 1e-3);
}

#[test]
fn a_billion_trips_extrapolate_to_the_closed_form() {
    // Period and prologue from the unrolled model of two short runs; the long run must be
    // `prologue + trips x period` (a replay of 10^9 steps would not finish).
    let profile = Target::Trn2.profile();
    let total = |t: u32| model_with(&pipeline(t, 2, 512).expand().unwrap(), &profile).unwrap().total_ns;
    let (t1, t2) = (200, 400);
    let period = (total(t2) - total(t1)) / f64::from(t2 - t1);
    let prologue = total(t1) - f64::from(t1) * period;
    assert!(period > 0.0);
    let trips = 1_000_000_000u32;
    let lp = pipeline(trips, 2, 512);
    assert_eq!(lp.unrolled_len(), 7 * u64::from(trips) + 3);
    let r = model_looped(&lp, &profile).unwrap();
    assert_close(r.total_ns, prologue + f64::from(trips) * period, 1e-6, "total_ns");
    assert_eq!(r.matmul_flops, f64::from(trips) * 3.0 * 2.0 * 128.0 * 128.0 * 512.0);
    let per_trip_bytes = 2 * 128 * 512 * 2;
    assert_eq!(r.hbm_bytes, u64::from(trips) * per_trip_bytes + 128 * 128 * 2 + 128 * 64 * 2);
    // The same figures through the default profile.
    assert_eq!(model_looped_default(&lp).unwrap().total_ns, r.total_ns);
}

#[test]
fn rolled_hand_built_gemm_matches_the_unrolled_model() {
    let p = gemm_program(GemmSpec { m: 512, k: 1024, n: 2048, in_dtype: DType::Bf16, rows_per_dma: 32 });
    let lp = roll(&p, 16);
    // 1360 instructions, 421 items: a loop on each of the 16 queues, the PE and ACT.
    assert_eq!((p.num_insts(), lp.streams.iter().map(Vec::len).sum::<usize>()), (1360, 421));
    check_against_unrolled(&lp, &Target::Trn2.profile(), 1e-3);
}

#[test]
fn bad_loops_are_errors() {
    let profile = Target::Trn2.profile();
    let mut lp = empty_looped(1);
    lp.streams[Engine::Dma(0).index()] =
        vec![Item::Loop(Loop { trips: 0, body: vec![Item::Inst(inst(load(0, 8), &[], None))], step: vec![0; 4] })];
    assert!(
        matches!(model_looped(&lp, &profile), Err(SimError::BadOperand { detail, .. }) if detail.contains("0 trips"))
    );
    lp.streams[Engine::Dma(0).index()] =
        vec![Item::Loop(Loop { trips: 2, body: vec![Item::Inst(inst(load(0, 8), &[], None))], step: vec![0; 3] })];
    assert!(
        matches!(model_looped(&lp, &profile), Err(SimError::BadOperand { detail, .. }) if detail.contains("step has 3 entries"))
    );
    // The second iteration moves the source offset below 0.
    lp.streams[Engine::Dma(0).index()] = vec![Item::Loop(Loop {
        trips: 2,
        body: vec![Item::Inst(inst(load(0, 8), &[], None))],
        step: vec![0, 0, -1, 0],
    })];
    let err = model_looped(&lp, &profile).unwrap_err();
    assert!(
        matches!(&err, SimError::BadOperand { at, detail } if at.index == 1 && detail.contains("out of its range")),
        "{err}"
    );
    // A wait that never holds is a deadlock, at its unrolled position.
    lp.streams[Engine::Dma(0).index()] = vec![looped(3, vec![Item::Inst(inst(load(0, 8), &[(0, 2)], Some(0)))], 0, 1)];
    let want = model_with(&lp.expand().unwrap(), &profile).unwrap_err();
    assert_eq!(model_looped(&lp, &profile).unwrap_err(), want);
}

#[test]
fn loops_that_move_partitions_match_the_unrolled_model() {
    // Each load lands 8 partitions further on (another DMA engine each trip, wrapping every
    // 16 trips in an outer loop): the step changes timing, so no period may be assumed
    // within the inner loop.
    let mut lp = empty_looped(1);
    let part = |start| Op::DmaCopy {
        dst: sbuf(DType::Bf16, start, 8, 0, 2000),
        src: hbm(DType::Bf16, 0, 8, 4096, 2000),
        cast: CastMode::Rne,
    };
    let inner =
        Item::Loop(Loop { trips: 16, body: vec![Item::Inst(inst(part(0), &[], Some(0)))], step: vec![0, 8, 4096, 0] });
    lp.streams[Engine::Dma(0).index()] =
        vec![Item::Loop(Loop { trips: 40, body: vec![inner], step: vec![0, 0, 65536, 0] })];
    // Sizes chosen so no two transfers tie for a DMA engine: with 2048 and 64 columns they
    // do, and the unrolled replay's order of tied starts then flips with rounding noise
    // after ~20 outer trips (moving q0's busy time by 5%, not the total).
    let q1 = Item::Inst(inst(load(0, 96), &[(0, 1)], None));
    lp.streams[Engine::Dma(1).index()] =
        vec![Item::Loop(Loop { trips: 640, body: vec![q1], step: vec![0, 0, 128, 0, 1] })];
    check_against_unrolled(&lp, &Target::Trn2.profile(), 1e-3);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..proptest::prelude::ProptestConfig::default() })]

    /// Random pipelines (length, inner loop, tile width, queue depth, HBM rate): the looped
    /// model gives the unrolled figures.
    #[test]
    fn looped_and_unrolled_pipelines_agree(
        trips in 1u32..160,
        inner in 1u32..5,
        n in widths(),
        profile in profiles(),
    ) {
        check_against_unrolled(&pipeline(trips, inner, n), &profile, 1e-3);
    }
}
