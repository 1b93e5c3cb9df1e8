//! Tests of the extrapolation: exact against the full GEMM lowered along its loop nest.

use codegen::{BlockSizes, GemmConfig, Planning, Schedule};
use penguin::{DType, Target};

use super::*;

/// Plan `cfg` with its blocks as given.
fn plan_gemm(cfg: &codegen::GemmConfig) -> Result<codegen::GemmPlan, codegen::CodegenError> {
    codegen::plan(&codegen::PlanRequest::new(cfg), &codegen::default_builder).map(|p| p.plan)
}

fn cfg(m: u64, k: u64, n: u64, schedule: Schedule) -> GemmConfig {
    let mut c = GemmConfig::new(m, k, n, DType::Bf16, Target::Trn2);
    c.schedule = schedule;
    c.input_dtype = DType::Bf16;
    c.blocks = BlockSizes::for_schedule(schedule);
    c
}

/// The full GEMM's looped program and figures, as the extrapolation should give them: its
/// nest lowered natively (`nested`) or its lowering rolled.
fn full(cfg: &GemmConfig, nested: bool) -> (bir::LoopedProgram, Figures) {
    let plan = plan_gemm(cfg).unwrap();
    let program = crate::gemm::lower(&plan).unwrap();
    let looped = if nested {
        bir::lower_looped_native(&plan.looped_nest(), cfg.target).unwrap()
    } else {
        crate::program::bir_loops::rolled(&program)
    };
    (looped, Figures::of(&plan, &program))
}

/// Extrapolate `c` and compare everything with the full GEMM: the looped program, the
/// figures, and the looped model's figures (also against the unrolled model). Also from the
/// nests alone ([`assert_exact_from`]); returns the extrapolation as `extrapolate` does it.
fn assert_exact(c: &GemmConfig) -> Extrapolated {
    // The nests of naive and blocked-mnk fit; blocked-mn's snake order (its inner block loop
    // runs backwards every other outer block) and hoisted's stripes do not give nests of the
    // same structure at every size yet, so those are extrapolated from their rolled lowerings.
    if matches!(c.schedule, Schedule::Naive | Schedule::BlockedMnk) {
        let nested = assert_exact_from(c, &[(NEST_REDUCTION, Level::Nest)]);
        assert!(nested.nested);
    }
    let blocked = matches!(c.schedule, Schedule::BlockedMn | Schedule::BlockedMnk);
    assert_exact_from(c, &attempts(blocked))
}

/// [`assert_exact`] trying `attempts` in turn.
fn assert_exact_from(c: &GemmConfig, attempts: &[(Reduction, Level)]) -> Extrapolated {
    let x = extrapolate_trying(c, Planning::Fixed, (2, Bounds::NONE, None), attempts)
        .unwrap_or_else(|e| panic!("{c:?}: {e}"));
    assert!(!x.axes.is_empty(), "{c:?} was not reduced");
    assert!(x.plans >= 3);
    let (program, figures) = full(c, x.nested);
    assert_eq!(x.figures, figures, "{c:?}");
    assert!(x.program == program, "{c:?}: the extrapolated program differs from the full one");
    let hw = c.target.profile();
    let fitted = sim::model_looped(&x.program, &hw).unwrap();
    let unrolled = sim::model_with(&program.expand().unwrap(), &hw).unwrap();
    assert_eq!(fitted.hbm_bytes, figures.hbm_bytes);
    assert_eq!(fitted.matmul_flops, unrolled.matmul_flops);
    assert!((fitted.total_ns - unrolled.total_ns).abs() <= 1e-9 * unrolled.total_ns, "{c:?}");
    x
}

#[test]
fn naive_programs_reduced_in_k_are_extrapolated_exactly() {
    // A ragged K (25607 = 200 chunks + 7 rows), a ragged N, several dtypes and layouts.
    let base = cfg(256, 128 * 200 + 7, 600, Schedule::Naive);
    let x = assert_exact(&base);
    let k = x.axes[0];
    let periods = if x.nested { NEST_REDUCTION.base_periods } else { BASE_PERIODS };
    assert_eq!(
        (k.name, k.period, k.base),
        ("k", K_PERIOD_CHUNKS * 128, 25607 % (K_PERIOD_CHUNKS * 128) + periods * K_PERIOD_CHUNKS * 128)
    );
    assert_exact(&GemmConfig { lhs_transposed: true, out_dtype: DType::Bf16, ..base });
    // A sparse K step is 128 x CR dense rows: twice the K for as many periods with 2:4.
    assert_exact(&GemmConfig { sparsity: Some("2:4".parse().unwrap()), k: 256 * 200 + 7, ..base });
    assert_exact(&GemmConfig { lhs_dtype: DType::Fp32, rhs_dtype: DType::Fp32, input_dtype: DType::Fp32, ..base });
}

/// `cfg` with explicit blocks (in elements).
fn blocked(m: u64, k: u64, n: u64, schedule: Schedule, blocks: (u64, u64, u64)) -> GemmConfig {
    GemmConfig { blocks: BlockSizes { m: blocks.0, n: blocks.1, k: blocks.2 }, ..cfg(m, k, n, schedule) }
}

#[test]
fn blocked_mnk_is_extrapolated_exactly_in_every_dimension() {
    // Ragged in all three dimensions: M and N reduced (two blocks per period), then K
    // (lcm(two K blocks, K_PERIOD) chunks per period).
    let mn = blocked(3584 + 37, 1000, 14336 + 100, Schedule::BlockedMnk, (256, 1024, 256));
    let x = assert_exact(&mn);
    let periods: Vec<(&str, u64)> = x.axes.iter().map(|a| (a.name, a.period)).collect();
    assert_eq!(periods, [("m", 512), ("n", 2048)]);
    assert_exact(&GemmConfig { out_dtype: DType::Bf16, ..mn });
    let k = blocked(130, 7 * 3072 + 300, 600, Schedule::BlockedMnk, (256, 1024, 256));
    let x = assert_exact(&k);
    assert_eq!((x.axes[0].name, x.axes[0].period), ("k", lcm(4, K_PERIOD_CHUNKS) * 128));
}

#[test]
fn blocked_mn_and_hoisted_are_extrapolated_exactly_in_m_and_n() {
    let c = blocked(128 * 60 + 3, 1000, 512 * 40 + 9, Schedule::BlockedMn, (512, 1024, 128));
    assert_exact(&c);
    assert_exact(&GemmConfig { target: Target::Trn1, ..cfg(1000, 1000, 10240, Schedule::Hoisted) });
}

#[test]
fn naive_is_extrapolated_exactly_in_m_and_n() {
    // Periods of two tiles: 256 rows of M, 1024 columns of N; K kept whole.
    let c = cfg(1792 + 37, 300, 7168 + 100, Schedule::Naive);
    let x = assert_exact(&c);
    assert_eq!(
        x.axes.iter().map(|a| (a.name, a.period, a.periods)).collect::<Vec<_>>(),
        [("m", 256, 4), ("n", 1024, 4)]
    );
    assert_exact(&GemmConfig { sparsity: Some("2:4".parse().unwrap()), lhs_transposed: true, ..c });
}

/// A GEMM of any explicit schedule is planned in loops, not reduced: its program expands to the
/// whole plan's lowering (origins aside), its figures are the whole plan's, and the looped model
/// gives the unrolled model's time; the planner emitted a fraction of the instructions.
#[test]
fn every_schedule_is_planned_in_loops_exactly() {
    let c = cfg(2000, 128 * 60 + 7, 9000, Schedule::Naive);
    let sparse = GemmConfig { sparsity: Some("2:4".parse().unwrap()), lhs_transposed: true, ..c };
    let cast = GemmConfig { input_dtype: DType::Fp32, out_dtype: DType::Bf16, ..c };
    // hoisted's steps are whole K stripes: more of its tiles, fewer K rows.
    let hoisted = GemmConfig { schedule: Schedule::Hoisted, m: 4000, k: 1000, n: 18000, ..c };
    // The blocked schedules with blocks small enough for every loop to skip.
    let mn = blocked(6000, 1000, 24000, Schedule::BlockedMn, (256, 1024, 1024));
    let mnk = blocked(4000, 4000, 16000, Schedule::BlockedMnk, (256, 1024, 256));
    for c in [c, sparse, cast, hoisted, mn, mnk] {
        let x = extrapolate(&c, Planning::Fixed, 1).unwrap();
        assert!(x.sampled && x.nested, "{c:?}");
        assert_eq!((x.plans, x.axes.len(), &x.base), (1, 0, &c));
        let plan = plan_gemm(&c).unwrap();
        let program = crate::gemm::lower(&plan).unwrap();
        assert_eq!(x.figures, Figures::of(&plan, &program), "{c:?}");
        // The same ops on every stream, in the same order (the native lowering may signal
        // more: a loop's instruction signals in every iteration when one has a cross-engine
        // dependent, and the waits count those signals).
        let expanded = x.program.expand().unwrap();
        assert_eq!(expanded.hbm, program.hbm);
        for e in bir::Engine::all() {
            let ops = |p: &bir::Program| p.stream(e).iter().map(|i| i.op.clone()).collect::<Vec<_>>();
            assert!(ops(&expanded) == ops(&program), "{c:?}: the {} stream differs from the whole plan's", e.name());
        }
        assert!(x.reduced_instructions * 2 < plan.function.insts.len() as u64, "{c:?}: {}", x.reduced_instructions);
        let hw = c.target.profile();
        let looped = sim::model_looped(&x.program, &hw).unwrap();
        let unrolled = sim::model_with(&program, &hw).unwrap();
        assert_eq!(looped.hbm_bytes, unrolled.hbm_bytes);
        assert!((looped.total_ns - unrolled.total_ns).abs() <= 1e-9 * unrolled.total_ns, "{c:?}");
        // The critical path followed through the loops (and their jumps) names the whole
        // plan's bottleneck, every engine's share within a point.
        let (_, _, path) = sim::model_looped_critical(&x.program, &hw, sim::LoopedOptions::default(), None).unwrap();
        let whole = sim::critical_path(&program, &unrolled);
        assert_eq!(path.bottleneck().map(|b| b.0), whole.bottleneck().map(|b| b.0), "{c:?}: {path:?} vs {whole:?}");
        let share =
            |p: &sim::CriticalPath, class: &str| p.shares().into_iter().find(|s| s.0 == class).map_or(0.0, |s| s.1);
        for (class, _) in path.ns.iter().chain(&whole.ns) {
            let (got, want) = (share(&path, class), share(&whole, class));
            assert!((got - want).abs() <= 0.01, "{c:?}: {class} {got} vs {want}");
        }
    }
    // `auto` (planned as blocked-mn without a search) is reduced and fitted as before.
    let c = blocked(128 * 60 + 3, 1000, 512 * 40 + 9, Schedule::Auto, (512, 1024, 128));
    let x = extrapolate(&c, Planning::Fixed, 2).unwrap();
    assert!(!x.sampled && !x.axes.is_empty() && x.plans > 1);
}

#[test]
fn small_dimensions_are_kept_whole() {
    let c = cfg(300, 1000, 700, Schedule::BlockedMnk);
    assert!(axes(&c, REDUCTIONS[0]).iter().all(|a| a.periods == 0 && a.base == a.full));
    let x = extrapolate(&c, Planning::Fixed, 1).unwrap();
    assert_eq!((x.plans, x.axes.len()), (1, 0));
    assert_eq!(x.program, full(&c, x.nested).0);
    // K is never reduced for the schedules holding whole K stripes.
    let stripes = cfg(128, 1 << 20, 512, Schedule::BlockedMn);
    assert_eq!(axes(&stripes, REDUCTIONS[0])[1].periods, 0);
}

/// The first value under key `key` in `v`, depth first.
fn first_key<'a>(v: &'a mut serde_json::Value, key: &str) -> Option<&'a mut serde_json::Value> {
    match v {
        serde_json::Value::Object(m) => {
            if m.contains_key(key) {
                return m.get_mut(key);
            }
            m.values_mut().find_map(|x| first_key(x, key))
        }
        serde_json::Value::Array(a) => a.iter_mut().find_map(|x| first_key(x, key)),
        _ => None,
    }
}

/// Semaphores count in 64 bits: a fitted wait past u32 decodes as it is; a start partition
/// past u32 is a limit naming the field.
#[test]
fn a_wait_value_past_u32_decodes_and_a_partition_past_u32_is_a_limit() {
    let (program, _) = full(&cfg(256, 512, 512, Schedule::Naive), false);
    let doc = serde_json::to_value(&program).unwrap();
    let mut waits = doc.clone();
    *first_key(&mut waits["streams"], "waits").and_then(|w| w.pointer_mut("/0/value")).expect("a wait") =
        serde_json::json!(5_000_000_000u64);
    let decoded = decode::<bir::LoopedProgram>(waits).unwrap();
    let mut seen = Vec::new();
    for item in decoded.streams.iter().flatten() {
        if let bir::Item::Inst(i) = item {
            seen.extend(i.waits.iter().map(|w| w.value).filter(|&v| v > u64::from(u32::MAX)));
        }
    }
    assert_eq!(seen, vec![5_000_000_000]);
    let mut part = doc;
    *first_key(&mut part["streams"], "start_partition").expect("a pattern") = serde_json::json!(5_000_000_000u64);
    match decode::<bir::LoopedProgram>(part) {
        Err(ExtrapolateError::Limit { path, value, .. }) => {
            assert!(path.starts_with("streams[") && path.ends_with(".start_partition"), "{path}");
            assert_eq!(value, 5_000_000_000);
        }
        other => panic!("{other:?}"),
    }
}

/// A fitted nest whose edge points past the u32 numbering of Penguin instructions is a
/// limit naming the field (the extrapolation then tries the rolled lowerings).
#[test]
fn an_edge_index_past_u32_is_a_limit_naming_the_field() {
    let plan = plan_gemm(&cfg(256, 512, 512, Schedule::Naive)).unwrap();
    let mut doc = serde_json::to_value(NestDoc::of(plan.looped_nest())).unwrap();
    *first_key(&mut doc["function"]["body"], "from").expect("an edge") = serde_json::json!(5_000_000_000u64);
    match decode::<NestDoc>(doc) {
        Err(e @ ExtrapolateError::Limit { .. }) => {
            let ExtrapolateError::Limit { path, value, limit } = &e else { unreachable!() };
            assert!(path.starts_with("function.body[") && path.ends_with(".from"), "{path}");
            assert_eq!(*value, 5_000_000_000);
            assert!(limit.contains("Penguin instructions"), "{limit}");
            assert!(e.falls_back());
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("decoded an edge past u32"),
    }
}
