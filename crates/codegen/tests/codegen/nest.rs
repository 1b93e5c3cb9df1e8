//! Planned GEMMs rolled along the schedule's own loop nest ([`GemmPlan::looped`] over
//! [`GemmPlan::nest`]): the marks are the schedule's levels, the roll is lossless for every
//! schedule, target and operand variant, and the loops of a large GEMM are the schedule's.

use codegen::{BlockSizes, GemmConfig, GemmPlan, LoopOrder, Schedule};
use penguin::looped::{loop_nest, printed_lines, LoopShape};
use penguin::{verify_looped, DType, PerfMode, SparsityPattern, Target};
use test_support::plan_gemm;

/// Explicit schedules (`auto` plans one of them).
const SCHEDULES: [Schedule; 4] = [Schedule::Naive, Schedule::Hoisted, Schedule::BlockedMn, Schedule::BlockedMnk];

fn cfg(m: u64, k: u64, n: u64, schedule: Schedule, target: Target) -> GemmConfig {
    let mut c = GemmConfig::new(m, k, n, DType::Bf16, target);
    c.schedule = schedule;
    c.blocks = BlockSizes::for_schedule(schedule);
    c
}

/// Plan `c`, check its marks and that its nest roll expands back to the plan exactly and
/// verifies.
#[track_caller]
fn nest_checked(c: &GemmConfig) -> GemmPlan {
    let plan = plan_gemm(c).unwrap();
    let what = format!("{}x{}x{} {} {:?}", c.m, c.k, c.n, c.schedule.name(), c.target);
    assert!(!plan.nest.is_empty(), "{what}: no marks");
    assert!(plan.nest.windows(2).all(|w| w[0].at <= w[1].at), "{what}: marks out of order");
    for lf in [plan.looped(), plan.looped_nest()] {
        assert_eq!(lf.unrolled_len(), plan.function.insts.len() as u64, "{what}");
        assert!(lf.expand().as_ref() == Ok(&plan.function), "{what}: the nest roll does not expand to the plan");
        assert_eq!(verify_looped(&lf), Ok(()), "{what}");
    }
    plan
}

#[test]
fn every_schedule_rolls_along_its_nest_losslessly() {
    // Whole and ragged shapes, one and several blocks; fp32 in HBM cast on load (the
    // default), bf16 in HBM, A given transposed, n-outer order, 2:4 sparse A, double row.
    let shapes = [(128, 128, 512), (300, 520, 700), (1000, 3000, 2000), (1024, 1024, 4096)];
    let mut planned = 0;
    for schedule in SCHEDULES {
        for target in [Target::Trn1, Target::Trn2] {
            for (m, k, n) in shapes {
                for variant in 0..6 {
                    let mut c = cfg(m, k, n, schedule, target);
                    match variant {
                        0 => {}
                        1 => c.input_dtype = DType::Bf16,
                        2 => c.lhs_transposed = true,
                        3 => c.order = LoopOrder::NOuter,
                        // Sparsity and double row are trn2+ features.
                        _ if target == Target::Trn1 && variant >= 4 => continue,
                        4 => c.sparsity = Some(SparsityPattern { n: 2, m: 4 }),
                        // Double row: fp8 operands, two K rows per partition.
                        _ => {
                            (c.lhs_dtype, c.rhs_dtype) = (DType::Fp8e4m3, DType::Fp8e4m3);
                            c.perf_mode = PerfMode::DoubleRow;
                        }
                    }
                    nest_checked(&c);
                    planned += 1;
                }
            }
        }
    }
    assert_eq!(planned, 4 * 4 * (4 + 6));
}

#[test]
fn marks_are_the_schedules_levels() {
    // 256x256x1024: two m tiles, two n tiles (two K chunks each).
    let levels = |c: &GemmConfig| -> Vec<u32> { plan_gemm(c).unwrap().nest.iter().map(|m| m.level).collect() };
    // naive: m tiles, n tiles, K chunks (one step per chunk).
    assert_eq!(levels(&cfg(256, 256, 1024, Schedule::Naive, Target::Trn2)), vec![0, 2, 1, 2, 0, 2, 1, 2]);
    // hoisted: m tiles, n tiles.
    assert_eq!(levels(&cfg(256, 256, 1024, Schedule::Hoisted, Target::Trn2)), vec![0, 1, 0, 1]);
    // blocked-mn with 1-tile blocks: outer (M) blocks, inner (N) blocks in snake order, the
    // m tiles of a step.
    let mut c = cfg(256, 256, 1024, Schedule::BlockedMn, Target::Trn2);
    c.blocks = BlockSizes { m: 128, n: 512, k: 128 };
    assert_eq!(levels(&c), vec![0, 2, 1, 2, 0, 2, 1, 2]);
    // blocked-mnk with 1-tile blocks and 128-row K blocks: M blocks, N blocks, K blocks.
    let mut c = cfg(256, 256, 1024, Schedule::BlockedMnk, Target::Trn2);
    c.blocks = BlockSizes { m: 128, n: 512, k: 128 };
    assert_eq!(levels(&c), vec![0, 2, 1, 2, 0, 2, 1, 2]);
    // n-outer: the outer blocks are N blocks.
    c.order = LoopOrder::NOuter;
    assert_eq!(levels(&c), vec![0, 2, 1, 2, 0, 2, 1, 2]);
    // Each mark is where its step's first instruction is: the naive prologue loads the first
    // step's A and B tiles.
    assert_eq!(plan_gemm(&cfg(256, 256, 1024, Schedule::Naive, Target::Trn2)).unwrap().nest[0].at, 2);
}

/// `(trips, body items)` of each loop.
fn trips(loops: &[LoopShape]) -> Vec<(u32, usize)> {
    loops.iter().map(|l| (l.trips, l.body_items)).collect()
}

#[test]
fn a_large_gemm_rolls_into_the_schedules_nest() {
    // naive 4096x8192x8192: 32 m tiles x 16 n tiles x 64 K chunks. The m loop holds the
    // middle 30 m tiles (the first has no edges to a previous one, the last no next loads),
    // 16 n tiles of 64 steps (two loads and a matmul) and an evacuation (copy, store) each.
    // Each output store waits only on its own evacuation (the HBM windows of different
    // tiles are disjoint), so the n tiles roll in pairs (evacuation engine and buffer
    // alternate): 7 trips of two n tiles, then the last two (whose loads and the next m
    // tile's first loads interleave). In every n tile the K chunks roll in pairs (A and B
    // slots alternate): 30 trips of 2 chunks, after the first chunk (START) and the second
    // (its loads wait on the first one's, at another distance) and before the last two
    // (STOP with the evacuation and the next tile's first loads).
    let plan = nest_checked(&cfg(4096, 8192, 8192, Schedule::Naive, Target::Trn2));
    let nest = loop_nest(&plan.looped_nest().body);
    let m_loops: Vec<&LoopShape> = nest.iter().filter(|l| l.inner.iter().any(|i| !i.inner.is_empty())).collect();
    assert_eq!(m_loops.len(), 1);
    let m = m_loops[0];
    let tile = 64 * 3 + 2;
    assert_eq!((m.trips, m.body_len), (30, 16 * tile));
    assert_eq!(trips(&m.inner), [(7, 30), (30, 6), (30, 6)]);
    let pair = &m.inner[0];
    assert_eq!((pair.body_len, trips(&pair.inner)), (2 * tile, [(30, 6)].repeat(2)));
    assert_eq!((2 * 7 + 2, 2 + 2 * 30 + 2), (16, 64));
    // The first m tile's n tiles roll after its first two; the last m tile's like the loop's.
    let n_loops: Vec<(u32, u64)> =
        nest.iter().filter(|l| !l.inner.is_empty() && l.trips != 30).map(|l| (l.trips, l.body_len)).collect();
    assert_eq!(n_loops, [(6, 2 * tile), (7, 2 * tile)]);

    // blocked-mnk 4096x8192x8192, blocks 1024 x 2048 x 512: 4 M blocks x 4 N blocks, 16 K
    // blocks each. The M-block loop holds the middle two M blocks; in each, the N blocks
    // roll two at a time (their stores' HBM windows are disjoint, so no N block waits on
    // another's stores), and every (M, N) pair's K blocks roll in pairs (A and B slots alternate): 6 trips of 2 K blocks after
    // the first (it copies the partials, the others add) and the second (its loads wait on
    // the previous pair's last K block), before the last two (the last stores).
    let plan = nest_checked(&cfg(4096, 8192, 8192, Schedule::BlockedMnk, Target::Trn2));
    let nest = loop_nest(&plan.looped_nest().body);
    let outer: Vec<&LoopShape> = nest.iter().filter(|l| l.body_len > 10_000).collect();
    assert_eq!(outer.len(), 1);
    assert_eq!(outer[0].trips, 2);
    assert_eq!(trips(&outer[0].inner), [(2, 36)]);
    let n_pair = &outer[0].inner[0];
    assert_eq!(2 * n_pair.body_len, outer[0].body_len);
    let k_loops: Vec<(u32, usize)> = trips(&n_pair.inner).into_iter().filter(|&(_, items)| items == 8).collect();
    assert_eq!(k_loops, [(6, 8)].repeat(2));
    assert_eq!(2 + 2 * 6 + 2, 16);
}

#[test]
fn one_column_of_blocks_rolls_its_block_pairs() {
    // blocked-mnk 8192x2048x2048: 8 M blocks of one N block, 4 K blocks each. The stores of
    // different M blocks do not overlap, so the pairs roll: two at a time (the result blocks
    // alternate), after the first two (first uses of each result block).
    let plan = nest_checked(&cfg(8192, 2048, 2048, Schedule::BlockedMnk, Target::Trn2));
    let pair_at: Vec<u64> = plan.nest.iter().filter(|m| m.level <= 1).map(|m| u64::from(m.at)).collect();
    assert_eq!(pair_at.len(), 8);
    let big: Vec<LoopShape> = loop_nest(&plan.looped_nest().body).into_iter().filter(|l| l.body_len > 1000).collect();
    assert_eq!(big.len(), 1);
    // Pairs 2 and 3, then 4 and 5; a third trip would need pair 7 to load a next pair.
    assert_eq!((big[0].trips, big[0].body_len), (2, pair_at[4] - pair_at[2]));
}

#[test]
fn large_gemms_print_short() {
    // Lines of the looped Penguin text of 4096x8192x8192 (bf16 from fp32, trn2, default
    // blocks), shortest and along every level: upper bounds that fail when the structure
    // regresses.
    let cases = [
        (Schedule::Naive, 330, 330),
        (Schedule::Hoisted, 306, 306),
        (Schedule::BlockedMn, 553, 553),
        (Schedule::BlockedMnk, 2070, 2590),
    ];
    for (schedule, most, most_nested) in cases {
        let plan = plan_gemm(&cfg(4096, 8192, 8192, schedule, Target::Trn2)).unwrap();
        let (lf, nested) = (plan.looped(), plan.looped_nest());
        let (text, text_nested) = (lf.to_string().lines().count(), nested.to_string().lines().count());
        assert!(text <= most, "{}: {text} lines, more than {most}", schedule.name());
        assert!(text_nested <= most_nested, "{}: {text_nested} lines, more than {most_nested}", schedule.name());
        assert!(text <= text_nested, "{}", schedule.name());
        // The header (kernel, names, tensors) and one line per instruction and two per loop.
        let header = plan.function.to_string().lines().take_while(|l| !l.starts_with("i0 ")).count();
        assert_eq!(text, header + printed_lines(&lf.body), "{}", schedule.name());
    }
}
