//! Sampled planning ([`plan_sampled`]): the loops it emits with gaps expand to the whole
//! plan, instruction for instruction and edge for edge, with the whole plan's counts, at
//! every level of the nest and for every operand variant it covers; what it does not cover
//! is refused.

use codegen::{default_builder, plan_sampled, CodegenError, GemmConfig, Planning, Schedule};
use penguin::{verify_looped, DType, FunctionView, PerfMode, SparsityPattern, Target};

fn naive(m: u64, k: u64, n: u64, target: Target) -> GemmConfig {
    let mut c = GemmConfig::new(m, k, n, DType::Bf16, target);
    c.schedule = Schedule::Naive;
    c
}

/// Plan `c` sampled and whole: the sampled plan emits at most half the instructions,
/// expands to the whole plan's function, verifies, and counts what the whole plan counts.
#[track_caller]
fn sampled_equals_whole(c: &GemmConfig) {
    let (sampled, len) = sampled_equals_whole_planned(c, Planning::Fixed);
    let what = format!("{}x{}x{} {:?} {:?} {:?}", c.m, c.k, c.n, c.target, c.perf_mode, c.sparsity);
    assert!(sampled.emitted * 2 <= len, "{what}: emitted {} of {len}", sampled.emitted);
    // Every run of a K loop of many chunks skips (none is emitted whole).
    if c.k >= 128 * 100 && c.perf_mode == PerfMode::None {
        assert!(sampled.emitted * 4 <= len, "{what}: emitted {} of {len}", sampled.emitted);
    }
}

/// The equality of [`sampled_equals_whole`] with the blocks decided as `planning` says: the
/// sampled plan and the whole plan's length.
#[track_caller]
fn sampled_equals_whole_planned(c: &GemmConfig, planning: Planning) -> (codegen::SampledPlan, usize) {
    let what = format!("{}x{}x{} {:?} {:?} {:?}", c.m, c.k, c.n, c.target, c.perf_mode, c.sparsity);
    let request = codegen::PlanRequest::new(c).with_planning(planning);
    let whole = codegen::plan(&request, &default_builder).unwrap().plan;
    let sampled = plan_sampled(c, planning, &default_builder).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(sampled.looped.unrolled_len(), whole.function.insts.len() as u64, "{what}");
    let expanded = sampled.looped.expand().unwrap_or_else(|e| panic!("{what}: {e}"));
    if expanded != whole.function {
        let first = (0..whole.function.insts.len())
            .find(|&i| {
                let id = penguin::InstId(i as u32);
                expanded.insts.get(i) != whole.function.insts.get(i) || expanded.deps(id) != whole.function.deps(id)
            })
            .unwrap_or(usize::MAX);
        let id = penguin::InstId(first as u32);
        panic!(
            "{what}: the sampled plan differs from the whole one first at instruction {first}:\n\
             whole   {:?} after {:?}\nsampled {:?} after {:?}",
            whole.function.insts.get(first),
            whole.function.deps(id),
            expanded.insts.get(first),
            expanded.deps(id)
        );
    }
    assert_eq!(verify_looped(&sampled.looped), Ok(()), "{what}");
    assert_eq!(sampled.stats, whole.stats, "{what}");
    assert_eq!(sampled.tensors, whole.tensors, "{what}");
    assert_eq!(sampled.config, whole.config, "{what}");
    let len = whole.function.insts.len();
    (sampled, len)
}

#[test]
fn gaps_in_every_loop_expand_to_the_whole_plan() {
    // K loop only (32 chunks; 8 x 2 output tiles do not skip).
    sampled_equals_whole(&naive(1024, 4096, 1024, Target::Trn2));
    // m loop (32 tiles of 8 x 8 steps): whole m iterations are skipped.
    sampled_equals_whole(&naive(4096, 1024, 4096, Target::Trn2));
    // A ragged n tile keeps live the writes of the full one before it (its loads cover only
    // part of them): its edges to them are constant, and its K loop still skips.
    sampled_equals_whole(&naive(256, 25607, 600, Target::Trn2));
    // All three loops, ragged in each (the last m, n tile and K chunk are short).
    sampled_equals_whole(&naive(2000, 3000, 9000, Target::Trn2));
    // Row tiling: 4 PE positions for K <= 32 (trn2), 2 for K <= 64.
    sampled_equals_whole(&naive(2048, 32, 16384, Target::Trn2));
    sampled_equals_whole(&naive(2048, 64, 16384, Target::Trn2));
}

#[test]
fn operand_variants_sample_as_they_plan_whole() {
    let base = naive(1500, 12000, 6000, Target::Trn2);
    let mut variants = Vec::new();
    // bf16 in HBM (plain loads), A given transposed, f32 in HBM (casting loads: the default).
    let mut c = base.clone();
    c.input_dtype = DType::Bf16;
    variants.push(c.clone());
    c.lhs_transposed = true;
    variants.push(c);
    variants.push(base.clone());
    // Double row: fp8 operands, two K rows per partition.
    let mut c = base.clone();
    (c.lhs_dtype, c.rhs_dtype) = (DType::Fp8e4m3, DType::Fp8e4m3);
    c.perf_mode = PerfMode::DoubleRow;
    variants.push(c);
    // Structured sparsity: every supported pattern.
    for p in SparsityPattern::SUPPORTED {
        let mut c = base.clone();
        c.sparsity = Some(p);
        variants.push(c);
    }
    for c in &variants {
        sampled_equals_whole(c);
    }
}

#[test]
fn what_sampling_does_not_cover_is_refused() {
    let unsupported = |c: &GemmConfig| {
        matches!(plan_sampled(c, Planning::Fixed, &default_builder), Err(CodegenError::Unsupported(_)))
    };
    // The other schedules are planned whole.
    assert!(unsupported(&GemmConfig { schedule: Schedule::Auto, ..naive(1024, 1024, 1024, Target::Trn2) }));
    // A nest of more steps than it counts (1048576^3: 1.4e11), and one whose program has
    // more instructions than u32 ids number (hoisted fp8 with 160 K chunks: 322 per step,
    // 5.4e9), are refused with the reason.
    let refusal = |c: &GemmConfig| match plan_sampled(c, Planning::Fixed, &default_builder) {
        Err(CodegenError::Unsupported(why)) => why,
        other => panic!("{other:?}"),
    };
    assert!(refusal(&naive(1 << 20, 1 << 20, 1 << 20, Target::Trn2)).contains("too long to plan in loops"));
    let mut ids = GemmConfig { schedule: Schedule::Hoisted, ..naive(1 << 20, 20480, 1 << 20, Target::Trn2) };
    (ids.lhs_dtype, ids.rhs_dtype) = (DType::Fp8e4m3, DType::Fp8e4m3);
    assert!(refusal(&ids).contains("more instructions than ids can number"));
    assert!(!codegen::plans_in_loops(&GemmConfig {
        schedule: Schedule::Auto,
        ..naive(1024, 1024, 1024, Target::Trn1)
    }));
    assert!(codegen::plans_in_loops(&ids));
    // A bad configuration is the configuration's error.
    assert!(matches!(
        plan_sampled(&naive(0, 1024, 1024, Target::Trn2), Planning::Fixed, &default_builder),
        Err(CodegenError::BadGemm(_))
    ));
}

/// `plan_sampled_skipping` plans in loops only a nest that skips at least half of its steps,
/// exactly as `plan_sampled` does; a shorter one is refused before anything is emitted, with
/// how many steps it would have emitted.
#[test]
fn planning_that_skips_little_is_refused_when_asked() {
    use codegen::{plan_sampled_skipping, BlockSizes};
    let skipping = |c: &GemmConfig| plan_sampled_skipping(c, Planning::Fixed, &default_builder);
    // naive 4096x8192x8192: 32 x 16 tiles of 64 K chunks, every loop long enough to skip.
    let long = naive(4096, 8192, 8192, Target::Trn2);
    let (a, b) = (skipping(&long).unwrap(), plan_sampled(&long, Planning::Fixed, &default_builder).unwrap());
    assert_eq!((a.looped.body, a.emitted), (b.looped.body, b.emitted));
    // blocked-mnk with 4 x 4 x 16 blocks: the M and N block loops are too short to skip
    // and the K block loop keeps 10 of its 16 iterations, 160 of the nest's 256 steps:
    // refused, though `plan_sampled` plans it.
    let short = GemmConfig {
        schedule: Schedule::BlockedMnk,
        blocks: BlockSizes { m: 1024, n: 2048, k: 512 },
        ..naive(4096, 8192, 8192, Target::Trn2)
    };
    match skipping(&short) {
        Err(CodegenError::Unsupported(why)) => {
            assert_eq!(why, "its loops are too short to skip much: 160 of the nest's 256 steps would be emitted");
        }
        other => panic!("{other:?}"),
    }
    assert!(plan_sampled(&short, Planning::Fixed, &default_builder).is_ok());
}

/// A nest whose gapped roll finds the periods around a gap different in shape, though the
/// planner's check passed them (trn1 `blocked-mnk`, n outer, 128x1024x512 blocks, found by
/// the random test below), is emitted without gaps and still expands to the whole plan;
/// `plan_sampled_skipping` refuses it.
#[test]
fn a_gap_whose_periods_do_not_roll_is_emitted_without_gaps() {
    use codegen::{plan_sampled_skipping, BlockSizes, LoopOrder};
    let c = GemmConfig {
        schedule: Schedule::BlockedMnk,
        blocks: BlockSizes { m: 128, n: 1024, k: 512 },
        order: LoopOrder::NOuter,
        ..naive(1409, 1665, 1025, Target::Trn1)
    };
    let (sampled, len) = sampled_equals_whole_planned(&c, Planning::Fixed);
    assert_eq!(sampled.emitted, len);
    let refused = plan_sampled_skipping(&c, Planning::Fixed, &default_builder);
    assert!(matches!(refused, Err(CodegenError::Unsupported(_))), "{:?}", refused.err());
}

/// Planning in loops costs the same at any size: GEMMs whose every loop is long enough to
/// skip emit the same instructions, however many they skip, and count every matmul.
#[test]
fn sampled_planning_does_not_grow_with_the_gemm() {
    let plan = |m: u64, k: u64, n: u64| {
        plan_sampled(&naive(m, k, n, Target::Trn2), Planning::Fixed, &default_builder).unwrap()
    };
    let small = plan(4096, 8192, 8192);
    for (m, k, n) in [(16384, 16384, 16384), (65536, 65536, 65536)] {
        let big = plan(m, k, n);
        assert_eq!(big.emitted, small.emitted, "{m}x{k}x{n}");
        assert_eq!(big.stats.matmuls, (m / 128) * (n / 512) * (k / 128), "{m}x{k}x{n}");
        assert_eq!(big.stats.psum_groups, (m / 128) * (n / 512), "{m}x{k}x{n}");
        // Three instructions per step (two loads, the matmul), two per output tile (the
        // evacuation and the store).
        assert_eq!(big.looped.unrolled_len(), 3 * big.stats.matmuls + 2 * big.stats.psum_groups, "{m}x{k}x{n}");
    }
    assert!(small.emitted < 10_000, "{}", small.emitted);
}

/// `hoisted` samples its m and n loops: the A stripe of an m tile is read by every n step,
/// and nothing retires those reads until the stripe's slot is refilled, so the skipped n
/// steps' reads are kept live too (the refill waits for every one of them, as in the whole
/// plan).
#[test]
fn hoisted_samples_its_m_and_n_loops() {
    let hoisted = |m, k, n| GemmConfig { schedule: Schedule::Hoisted, ..naive(m, k, n, Target::Trn2) };
    // Both loops skip (32 m tiles, 36 n tiles), ragged in M, K and N.
    sampled_equals_whole(&hoisted(4000, 3000, 18000));
    // Whole tiles, bf16 in HBM, A given transposed.
    let mut c = hoisted(4096, 1024, 16384);
    c.input_dtype = DType::Bf16;
    c.lhs_transposed = true;
    sampled_equals_whole(&c);
    // 2:4 sparse.
    sampled_equals_whole(&GemmConfig { sparsity: Some(SparsityPattern { n: 2, m: 4 }), ..hoisted(4000, 3000, 18000) });
}

/// `blocked-mnk` samples its three loops (outer blocks, inner blocks, K blocks): the result
/// block alternates by pair, the operand slots and groups by step.
#[test]
fn blocked_mnk_samples_its_three_loops() {
    use codegen::{BlockSizes, LoopOrder};
    let mnk = |m, k, n, blocks: (u64, u64, u64)| GemmConfig {
        schedule: Schedule::BlockedMnk,
        blocks: BlockSizes { m: blocks.0, n: blocks.1, k: blocks.2 },
        ..naive(m, k, n, Target::Trn2)
    };
    // Every loop skips: 16 M blocks x 16 N blocks x 16 K blocks, ragged in each.
    sampled_equals_whole(&mnk(4000, 4000, 16000, (256, 1024, 256)));
    // N outer, bf16 in HBM.
    let mut c = mnk(4000, 4000, 16000, (256, 1024, 256));
    c.order = LoopOrder::NOuter;
    c.input_dtype = DType::Bf16;
    sampled_equals_whole(&c);
    // Large M and N blocks (two of each), a long K loop (64 blocks); 2:4 sparse.
    let c = mnk(2048, 16384, 4096, (1024, 2048, 256));
    sampled_equals_whole(&c);
    sampled_equals_whole(&GemmConfig { sparsity: Some(SparsityPattern { n: 2, m: 4 }), ..c });
}

/// `blocked-mn` samples its two block loops: the inner loop runs in snake order (backwards
/// on odd outer iterations, its first two blocks still resident), the next step's inner
/// block is loaded piece by piece between the m tiles of the step before it.
#[test]
fn blocked_mn_samples_its_snake() {
    use codegen::{BlockSizes, LoopOrder};
    let mn = |m, k, n, blocks: (u64, u64)| GemmConfig {
        schedule: Schedule::BlockedMn,
        blocks: BlockSizes { m: blocks.0, n: blocks.1, k: 1024 },
        ..naive(m, k, n, Target::Trn2)
    };
    // 24 M blocks x 24 N blocks, ragged in M, K and N.
    sampled_equals_whole(&mn(6000, 1000, 24000, (256, 1024)));
    // N outer, bf16 in HBM; an odd number of inner blocks (25).
    let mut c = mn(6300, 1000, 24000, (256, 1024));
    c.order = LoopOrder::NOuter;
    c.input_dtype = DType::Bf16;
    sampled_equals_whole(&c);
    // 2:4 sparse, fp8 double row.
    let c = mn(6000, 1000, 24000, (256, 1024));
    sampled_equals_whole(&GemmConfig { sparsity: Some(SparsityPattern { n: 2, m: 4 }), ..c });
    let mut d = c;
    (d.lhs_dtype, d.rhs_dtype, d.perf_mode) = (DType::Fp8e4m3, DType::Fp8e4m3, PerfMode::DoubleRow);
    sampled_equals_whole(&d);
}

/// The blocks are decided as the whole planner decides them: default blocks that do not fit
/// SBUF shrink ([`Planning::Fitting`], the CLI's explicit schedules), and blocks that fit
/// only single-buffered get one slot and say so in the stats ([`Planning::Fixed`]).
#[test]
fn sampled_blocks_are_decided_as_whole_plans_decide_them() {
    use codegen::BlockSizes;
    // blocked-mn's default blocks at K = 8192 hold 64 K chunks per slot: they shrink.
    let mut c = naive(4096, 8192, 8192, Target::Trn2);
    c.schedule = Schedule::BlockedMn;
    let (fitted, _) = sampled_equals_whole_planned(&c, Planning::Fitting);
    assert!(fitted.config.blocks.n < c.blocks.n || fitted.config.blocks.m < c.blocks.m, "{:?}", fitted.config.blocks);
    assert!(matches!(
        plan_sampled(&c, Planning::DoubleBuffered, &default_builder),
        Err(CodegenError::SbufCapacity { .. })
    ));
    // Large blocks that fit once: single-buffered, as the whole plan is.
    let mut c = naive(4096, 8192, 16384, Target::Trn2);
    c.schedule = Schedule::BlockedMnk;
    c.blocks = BlockSizes { m: 1024, n: 2048, k: 2048 };
    let (single, _) = sampled_equals_whole_planned(&c, Planning::Fixed);
    assert!(!single.stats.single_buffered.names().is_empty(), "{:?}", single.stats.single_buffered);
}

/// A transposed on the PE (trn1: natural-layout loads, transposes through PSUM) samples in
/// every schedule: the transposes' PSUM slots repeat every four K chunks, and the stripe
/// schedules' just-in-time transpose queue moves past the skipped m tiles (its prefetch runs
/// two m tiles ahead: the loops' tails are two iterations longer). Its natural buffers and
/// queues take turns load after load, so `blocked-mn`'s outer loop repeats only once its
/// iterations have loaded a multiple of `2 bm` tiles.
#[test]
fn pe_transposes_sample_in_every_schedule() {
    use codegen::{BlockSizes, LoopOrder};
    let on = |schedule, (m, k, n), blocks: (u64, u64, u64)| GemmConfig {
        schedule,
        blocks: BlockSizes { m: blocks.0, n: blocks.1, k: blocks.2 },
        ..naive(m, k, n, Target::Trn1)
    };
    // naive: gaps in the K loop (60 chunks) and the m loop.
    sampled_equals_whole(&on(Schedule::Naive, (4000, 7700, 1000), (512, 1024, 1024)));
    // hoisted: 32 m tiles (the last one ragged, prefetched two m tiles early), 36 n tiles.
    sampled_equals_whole(&on(Schedule::Hoisted, (4000, 1000, 18000), (512, 1024, 1024)));
    // blocked-mnk: K blocks of two chunks, so the transposes' slots repeat every two blocks.
    sampled_equals_whole(&on(Schedule::BlockedMnk, (4000, 4000, 16000), (256, 1024, 256)));
    // blocked-mn, A outer (transposed as each block comes in).
    sampled_equals_whole(&on(Schedule::BlockedMn, (6000, 1000, 24000), (256, 1024, 1024)));
    // A inner, its last block of one tile: two outer iterations load 87 tiles, prime to the
    // four queues, so the outer loop's period is eight iterations (47 of them: two periods
    // skipped).
    let mut c = on(Schedule::BlockedMn, (6000, 1000, 48000), (256, 1024, 1024));
    c.order = LoopOrder::NOuter;
    let (sampled, len) = sampled_equals_whole_planned(&c, Planning::Fixed);
    assert!(sampled.emitted * 3 < len * 2, "emitted {} of {len}", sampled.emitted);
}

/// Random GEMMs of every schedule, target, operand variant and block size, long enough along
/// some loops to skip: the sampled plan equals the whole one (or both fail alike).
mod random {
    use super::*;
    use codegen::{BlockSizes, LoopOrder};
    use proptest::prelude::*;

    const SCHEDULES: [Schedule; 4] = [Schedule::Naive, Schedule::Hoisted, Schedule::BlockedMn, Schedule::BlockedMnk];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        #[test]
        fn sampled_plans_equal_whole_plans(
            (m, k, n) in (1u64..3200, 1u64..3200, 1u64..9000),
            schedule in 0usize..4,
            trn1 in any::<bool>(),
            variant in 0usize..4,
            blocks in (0u64..2, 0u64..2, 0u64..3),
            n_outer in any::<bool>(),
            bf16_in_hbm in any::<bool>(),
        ) {
            let target = if trn1 { Target::Trn1 } else { Target::Trn2 };
            let mut c = GemmConfig::new(m, k, n, DType::Bf16, target);
            c.schedule = SCHEDULES[schedule];
            c.blocks = BlockSizes { m: 128 << blocks.0, n: 512 << blocks.1, k: 128 << blocks.2 };
            c.order = if n_outer { LoopOrder::NOuter } else { LoopOrder::MOuter };
            if bf16_in_hbm {
                c.input_dtype = DType::Bf16;
            }
            match variant {
                0 => {}
                1 if !trn1 => {
                    (c.lhs_dtype, c.rhs_dtype, c.perf_mode) = (DType::Fp8e4m3, DType::Fp8e4m3, PerfMode::DoubleRow);
                }
                v if !trn1 => c.sparsity = Some(SparsityPattern::SUPPORTED[v % SparsityPattern::SUPPORTED.len()]),
                _ => c.lhs_transposed = true,
            }
            let whole = codegen::plan(&codegen::PlanRequest::new(&c), &default_builder);
            let sampled = plan_sampled(&c, Planning::Fixed, &default_builder);
            match (&whole, &sampled) {
                (Err(w), Err(s)) => prop_assert_eq!(std::mem::discriminant(w), std::mem::discriminant(s)),
                (Ok(_), Err(CodegenError::Unsupported(_))) => prop_assert!(!codegen::plans_in_loops(&c), "{c:?}"),
                (Ok(_), Ok(_)) => {
                    sampled_equals_whole_planned(&c, Planning::Fixed);
                }
                _ => prop_assert!(false, "{c:?}: whole {:?}, sampled {:?}", whole.as_ref().err(), sampled.as_ref().err()),
            }
        }
    }
}
