//! The looped cycle model on nested loops: a GEMM-shaped pipeline (operand loads, load
//! stationary + matmul, PSUM evacuation, stores) in three nested loops with semaphores
//! between six engines gives the unrolled model's figures, jumps at every loop level (the
//! jumps of inner loops composing with those of outer ones), and models programs of ~10^9
//! unrolled instructions by replaying a few thousand.

use bir::{BirInst, Engine, Item, Loop, LoopedProgram, Op, Program};
use penguin::{CastMode, DType, HwProfile, PerfMode, Target, TilePosition, TileSize};
use sim::{model_looped_stats, model_with, CycleReport, LoopedOptions, LoopedStats, SimError};

use test_support::looped::{check_against_unrolled, close, profiles, widths};
use test_support::nest::{gemm_nest, gemm_nest_levels, nest, Nested, EVACUATED, FREED};
use test_support::{hbm, inst, psum, sbuf};

/// Instructions the pipeline unrolls to.
fn unrolled_len(a: u32, b: u32, c: u32) -> u64 {
    let (tiles, steps) = (u64::from(a) * u64::from(b), u64::from(a) * u64::from(b) * u64::from(c));
    4 * steps + 2 * tiles + 5
}

fn model(lp: &LoopedProgram, profile: &HwProfile) -> (CycleReport, LoopedStats) {
    model_looped_stats(lp, profile, LoopedOptions::default()).unwrap()
}

// ---------------------------------------------------------------------------------------
// Tests

#[test]
fn nested_pipelines_match_the_unrolled_model() {
    let trn2 = Target::Trn2.profile();
    let mut shallow = trn2;
    shallow.dma_queue_depth = 1.0;
    let mut slow_hbm = trn2;
    slow_hbm.hbm_bytes_per_ns = 60.0;
    for (a, b, c, n) in [(5, 7, 9, 512), (3, 4, 40, 128), (2, 3, 200, 512), (6, 30, 1, 256), (1, 1, 300, 64)] {
        for profile in [&trn2, &shallow, &slow_hbm] {
            let lp = gemm_nest(a, b, c, n);
            assert_eq!(lp.unrolled_len(), unrolled_len(a, b, c));
            check_against_unrolled(&lp, profile, 1e-9);
        }
    }
}

#[test]
fn inner_and_outer_loops_both_jump() {
    // 6 blocks of 30 tiles of 200 K steps: 144k unrolled instructions. The K loop jumps
    // inside the tiles that are replayed, and the tile and block loops jump over whole
    // tiles and blocks.
    let lp = gemm_nest(6, 30, 200, 512);
    let stats = check_against_unrolled(&lp, &Target::Trn2.profile(), 1e-9).1;
    assert!(stats.jumps >= 3, "{stats:?}");
    assert!(stats.replayed < 20_000, "{stats:?}");
}

#[test]
fn a_billion_instruction_nest_replays_a_few_thousand() {
    // 125000 blocks of 20 tiles of 100 K steps: 10^9 unrolled instructions. In the steady
    // state each block adds the same time, which the unrolled model of 4 to 6 blocks gives.
    let profile = Target::Trn2.profile();
    let (b, c, n) = (20, 100, 512);
    let unrolled = |a| model_with(&gemm_nest(a, b, c, n).expand().unwrap(), &profile).unwrap().total_ns;
    let (t4, t5, t6) = (unrolled(4), unrolled(5), unrolled(6));
    let period = t5 - t4;
    assert!(close(t6 - t5, period, 1e-12), "the unrolled model is not periodic per block: {t4} {t5} {t6}");
    let a = 125_000;
    let lp = gemm_nest(a, b, c, n);
    assert_eq!(lp.unrolled_len(), 1_000_000_005 + 2 * 2_500_000);
    let (r, stats) = model(&lp, &profile);
    assert!(close(r.total_ns, t4 + f64::from(a - 4) * period, 1e-9), "{} vs {}", r.total_ns, t4);
    let steps = f64::from(a) * f64::from(b) * f64::from(c);
    assert_eq!(r.matmul_flops, steps * 2.0 * 128.0 * 128.0 * f64::from(n));
    let tiles = u64::from(a) * u64::from(b);
    let step_bytes = 128 * 128 * 2 + 128 * u64::from(n) * 2;
    assert_eq!(r.hbm_bytes, tiles * u64::from(c) * step_bytes + tiles * 128 * u64::from(n) * 2);
    assert_eq!(stats.replayed + stats.skipped, lp.unrolled_len());
    assert!(stats.replayed < 50_000, "{stats:?}");
}

#[test]
fn four_level_nests_match_the_unrolled_model() {
    // Pairs of blocks of tiles of K steps: the jumps of four levels compose.
    let lp = gemm_nest_levels(&[3, 4, 6], 150, 256);
    let stats = check_against_unrolled(&lp, &Target::Trn2.profile(), 1e-9).1;
    assert!(stats.jumps >= 3 && stats.replayed < 20_000, "{stats:?}");
    // A loop of one trip at each level, and tiles in a loop of 2.
    check_against_unrolled(&gemm_nest_levels(&[1, 1, 2], 60, 128), &Target::Trn2.profile(), 1e-9);
}

#[test]
fn engines_that_alternate_within_the_checkpointed_loop_jump_with_a_longer_period() {
    // 80 tiles of 32 K steps. ACT evacuates into two PSUM banks in turn (a loop of 40 x 2
    // whose inner step moves the bank), so from one tile to the next it moves between
    // iterations of its inner loop, not by whole iterations of one loop: only periods of
    // two tiles repeat. No other loop is long enough to be checkpointed at a finer grain.
    let (tiles, c, n) = (80, 32, 512);
    let mut lp = gemm_nest_levels(&[tiles], c, n);
    let evac = Nested {
        inst: inst(
            Op::TensorCopy { dst: sbuf(DType::Bf16, 0, 128, 8192, n), src: psum(128, 0, n) },
            &[(FREED, 2 + c)],
            Some(EVACUATED),
        ),
        coef: vec![vec![0, 0], vec![0, 0], vec![0, 2048], vec![0, 0], vec![2 * i64::from(c), i64::from(c)]],
    };
    lp.streams[Engine::Act.index()] = vec![nest(&[tiles / 2, 2], &[evac])];
    let stats = check_against_unrolled(&lp, &Target::Trn2.profile(), 1e-9).1;
    assert!(stats.jumps > 0 && stats.replayed * 4 < stats.skipped, "{stats:?}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..proptest::prelude::ProptestConfig::default() })]

    /// Random nests (tile loops of 1 to 3 levels, K steps, tile width, queue depth, HBM rate):
    /// the looped model with its jumps gives the unrolled figures.
    #[test]
    fn looped_and_unrolled_nests_agree(
        tiles in proptest::collection::vec(1u32..7, 1..4),
        c in 1u32..160,
        n in widths(),
        profile in profiles(),
    ) {
        check_against_unrolled(&gemm_nest_levels(&tiles, c, n), &profile, 1e-9);
    }
}

/// Queue 0 loads `trips` (a loop nest, outermost first) times, each load signalling s0; the
/// source steps by 128 bytes per load of the innermost loop and `1 << 20` per outer trip (the
/// offsets of a nest deeper than two stay put).
fn signalling_loads_nest(trips: &[u32]) -> LoopedProgram {
    let mut p = Program::new("counts", Target::Trn2);
    p.hbm_size = 1 << 60;
    p.semaphores = vec!["s0".into()];
    let mut lp = LoopedProgram::from_program(&p);
    let src_step: Vec<i64> = match trips.len() {
        2 => vec![1 << 20, 128],
        d => vec![0; d],
    };
    let zero = vec![0; trips.len()];
    let load = Nested {
        inst: inst(
            Op::DmaCopy {
                dst: sbuf(DType::Bf16, 0, 128, 0, 64),
                src: hbm(DType::Bf16, 0, 128, 8192, 64),
                cast: CastMode::Rne,
            },
            &[],
            Some(0),
        ),
        coef: vec![zero.clone(), zero.clone(), src_step, zero],
    };
    lp.streams[Engine::Dma(0).index()] = vec![nest(trips, &[load])];
    lp
}

fn signalling_loads(outer: u32, inner: u32) -> LoopedProgram {
    signalling_loads_nest(&[outer, inner])
}

/// The PE loads the stationary operand three times, waiting for s0 to reach `first`,
/// `first + 1` and `first + 2`.
fn pe_waits_from(first: u64) -> Vec<Item> {
    let (tile_position, tile_size) = (TilePosition { row: 0, col: 0 }, TileSize { rows: 128, cols: 128 });
    let ls = BirInst {
        op: Op::LoadStationary {
            src: sbuf(DType::Bf16, 0, 128, 0, 128),
            perf_mode: PerfMode::None,
            tile_position,
            tile_size,
        },
        waits: vec![bir::Wait { sem: bir::SemId(0), value: first }],
        signal: None,
        origin: None,
    };
    vec![Item::Loop(Loop { trips: 3, body: vec![Item::Inst(ls)], step: vec![0, 0, 1] })]
}

#[test]
fn semaphores_count_past_u32() {
    // 2^32 loads each signalling s0 (a 32-bit count would wrap at the last one), then the PE
    // waits for counts u32::MAX - 1, u32::MAX and 2^32: all are reached, after the last load.
    let profile = Target::Trn2.profile();
    let mut lp = signalling_loads(65_536, 65_536);
    lp.streams[Engine::Pe.index()] = pe_waits_from(u64::from(u32::MAX) - 1);
    let (r, stats) = model(&lp, &profile);
    assert_eq!(stats.replayed + stats.skipped, (1 << 32) + 3);
    assert!(stats.replayed < 10_000, "{stats:?}");
    assert_eq!(r.hbm_bytes, (1u64 << 32) * 128 * 64 * 2);
    // The loads alone take as long: the PE's three loads end within their own time of them.
    let (loads, _) = model(&signalling_loads(65_536, 65_536), &profile);
    assert!(r.total_ns > loads.total_ns && r.total_ns < loads.total_ns + 1e4, "{} vs {}", r.total_ns, loads.total_ns);
    // A wait for one signal more than there are is a deadlock naming both counts.
    lp.streams[Engine::Pe.index()] = pe_waits_from(u64::from(u32::MAX));
    let err = model_looped_stats(&lp, &profile, LoopedOptions::default()).unwrap_err();
    let SimError::Deadlock { stuck } = &err else { panic!("{err}") };
    assert_eq!(stuck.len(), 1, "{err}");
    assert_eq!(
        (stuck[0].at.engine, stuck[0].at.index, stuck[0].needed, stuck[0].current),
        (Engine::Pe, 2, (1 << 32) + 1, 1 << 32)
    );
}

#[test]
fn a_semaphore_signalled_past_i64_is_an_error_where_it_overflows() {
    // 2^63 loads each signalling s0: the model counts up to i64::MAX signals (the largest
    // wait a loop can advance to), so the last load is an error. The model jumps to it.
    let lp = signalling_loads_nest(&[1 << 21, 1 << 21, 1 << 21]);
    let err = model_looped_stats(&lp, &Target::Trn2.profile(), LoopedOptions::default()).unwrap_err();
    let SimError::BadOperand { at, detail } = &err else { panic!("{err}") };
    assert_eq!((at.engine, at.index), (Engine::Dma(0), (1 << 63) - 1), "{err}");
    assert!(detail.contains("semaphore s0 is signalled for the 9223372036854775808th time"), "{err}");
}

#[test]
fn a_wait_value_out_of_range_is_an_error() {
    // The PE waits for 1, 0, then -1, which no wait can hold.
    let mut lp = signalling_loads(1, 1);
    lp.streams[Engine::Pe.index()] = pe_waits_from(1);
    let Item::Loop(l) = &mut lp.streams[Engine::Pe.index()][0] else { unreachable!() };
    l.step[2] = -1;
    let err = model_looped_stats(&lp, &Target::Trn2.profile(), LoopedOptions::default()).unwrap_err();
    let SimError::BadOperand { at, detail } = &err else { panic!("{err}") };
    assert_eq!((at.engine, at.index), (Engine::Pe, 2), "{err}");
    let want =
        "wait 0 (on s0; loop parameters advance in an i64) out of its range: to -1, outside 0..=9223372036854775807";
    assert!(detail.contains(want), "{err}");
}

#[test]
fn a_parameter_out_of_range_late_in_a_long_loop_is_reported_where_it_is() {
    // 3000 loads whose source offset steps down by 128 from 128 x 2000: the 2002nd moves it
    // below 0. The loop repeats long before that, but no jump may skip the bad iteration.
    let loads = |step: i64| {
        let mut lp = signalling_loads(1, 3000);
        let Item::Loop(outer) = &mut lp.streams[Engine::Dma(0).index()][0] else { unreachable!() };
        let Item::Loop(inner) = &mut outer.body[0] else { unreachable!() };
        inner.step[2] = step;
        let Item::Inst(load) = &mut inner.body[0] else { unreachable!() };
        let Op::DmaCopy { src, .. } = &mut load.op else { unreachable!() };
        src.byte_offset = 128 * 2000;
        lp
    };
    let err = model_looped_stats(&loads(-128), &Target::Trn2.profile(), LoopedOptions::default()).unwrap_err();
    let SimError::BadOperand { at, detail } = &err else { panic!("{err}") };
    assert_eq!((at.engine, at.index), (Engine::Dma(0), 2001), "{err}");
    assert!(detail.contains("the src byte offset out of its range: to -128"), "{err}");
    // Stepping up instead, the same loop jumps.
    let (_, stats) = model(&loads(128), &Target::Trn2.profile());
    assert!(stats.jumps > 0 && stats.replayed < 1000, "{stats:?}");
    // With at most 1000 instructions replayed, the loop that jumps is modeled as before and
    // the one that cannot jump stops at the limit instead of replaying every iteration.
    let capped = LoopedOptions { max_replayed: 1000, ..LoopedOptions::default() };
    let (r, _) = model_looped_stats(&loads(128), &Target::Trn2.profile(), capped).unwrap();
    assert_eq!(r.total_ns, model(&loads(128), &Target::Trn2.profile()).0.total_ns);
    let err = model_looped_stats(&loads(-128), &Target::Trn2.profile(), capped).unwrap_err();
    let SimError::NoSteadyState { replayed, unrolled } = err else { panic!("{err}") };
    assert_eq!((replayed, unrolled), (1000, 3000));
}
