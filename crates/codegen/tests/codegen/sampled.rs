//! Sampled planning ([`plan_sampled`]): the loops it emits with gaps expand to the whole
//! plan, instruction for instruction and edge for edge, with the whole plan's counts, at
//! every level of the nest and for every operand variant it covers; what it does not cover
//! is refused.

use codegen::{default_builder, plan_sampled, CodegenError, GemmConfig, Schedule};
use penguin::{verify_looped, DType, FunctionView, PerfMode, SparsityPattern, Target};
use test_support::plan_gemm;

fn naive(m: u64, k: u64, n: u64, target: Target) -> GemmConfig {
    let mut c = GemmConfig::new(m, k, n, DType::Bf16, target);
    c.schedule = Schedule::Naive;
    c
}

/// Plan `c` sampled and whole: the sampled plan emits at most half the instructions,
/// expands to the whole plan's function, verifies, and counts what the whole plan counts.
#[track_caller]
fn sampled_equals_whole(c: &GemmConfig) {
    let what = format!("{}x{}x{} {:?} {:?} {:?}", c.m, c.k, c.n, c.target, c.perf_mode, c.sparsity);
    let whole = plan_gemm(c).unwrap();
    let sampled = plan_sampled(c, &default_builder).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(sampled.looped.unrolled_len(), whole.function.insts.len() as u64, "{what}");
    let expanded = sampled.looped.expand().unwrap_or_else(|e| panic!("{what}: {e}"));
    if expanded != whole.function {
        let first = (0..whole.function.insts.len())
            .find(|&i| {
                let id = penguin::InstId(i as u32);
                expanded.insts.get(i) != whole.function.insts.get(i) || expanded.deps(id) != whole.function.deps(id)
            })
            .unwrap_or(usize::MAX);
        panic!("{what}: the sampled plan differs from the whole one first at instruction {first}");
    }
    assert_eq!(verify_looped(&sampled.looped), Ok(()), "{what}");
    assert_eq!(sampled.stats, whole.stats, "{what}");
    assert_eq!(sampled.tensors, whole.tensors, "{what}");
    let len = whole.function.insts.len();
    assert!(sampled.emitted * 2 <= len, "{what}: emitted {} of {len}", sampled.emitted);
    // Every run of a K loop of many chunks skips (none is emitted whole).
    if c.k >= 128 * 100 && c.perf_mode == PerfMode::None {
        assert!(sampled.emitted * 4 <= len, "{what}: emitted {} of {len}", sampled.emitted);
    }
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
    let unsupported = |c: &GemmConfig| matches!(plan_sampled(c, &default_builder), Err(CodegenError::Unsupported(_)));
    // The other schedules are planned whole.
    for schedule in [Schedule::BlockedMn, Schedule::BlockedMnk, Schedule::Auto] {
        let mut c = naive(1024, 1024, 1024, Target::Trn2);
        c.schedule = schedule;
        assert!(unsupported(&c), "{schedule:?}");
    }
    // A transposed on the PE (trn1 without a transposing load).
    assert!(unsupported(&naive(1024, 1024, 1024, Target::Trn1)));
    assert!(unsupported(&GemmConfig { schedule: Schedule::Hoisted, ..naive(1024, 1024, 1024, Target::Trn1) }));
    // A nest of more steps than it counts (1048576^3: 1.4e11), and one whose program has
    // more instructions than u32 ids number (hoisted fp8 with 160 K chunks: 322 per step,
    // 5.4e9), are refused with the reason.
    let refusal = |c: &GemmConfig| match plan_sampled(c, &default_builder) {
        Err(CodegenError::Unsupported(why)) => why,
        other => panic!("{other:?}"),
    };
    assert!(refusal(&naive(1 << 20, 1 << 20, 1 << 20, Target::Trn2)).contains("too long to plan in loops"));
    let mut ids = GemmConfig { schedule: Schedule::Hoisted, ..naive(1 << 20, 20480, 1 << 20, Target::Trn2) };
    (ids.lhs_dtype, ids.rhs_dtype) = (DType::Fp8e4m3, DType::Fp8e4m3);
    assert!(refusal(&ids).contains("more instructions than ids can number"));
    assert!(!codegen::plans_in_loops(&naive(1024, 1024, 1024, Target::Trn1)));
    assert!(codegen::plans_in_loops(&ids));
    // A bad configuration is the configuration's error.
    assert!(matches!(
        plan_sampled(&naive(0, 1024, 1024, Target::Trn2), &default_builder),
        Err(CodegenError::BadGemm(_))
    ));
}

/// Planning in loops costs the same at any size: GEMMs whose every loop is long enough to
/// skip emit the same instructions, however many they skip, and count every matmul.
#[test]
fn sampled_planning_does_not_grow_with_the_gemm() {
    let plan = |m: u64, k: u64, n: u64| plan_sampled(&naive(m, k, n, Target::Trn2), &default_builder).unwrap();
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
