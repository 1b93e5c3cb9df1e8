//! Benchmarks of the cycle model on the lowered programs of a 4096x8192x8192 bf16 GEMM
//! (`--lhs-transposed`, trn2) under the fixed schedules, of the trace export of the
//! blocked-mn one, and of `auto`'s whole search on an 8192^3 bf16 GEMM (rank, plan, lower and
//! cycle-model its shortlist), and of the looped cycle model on a pipeline of a million
//! steps and on GEMM-shaped nests of three loops (blocks x tiles x K steps) of 10^8 and
//! 1.6 x 10^10 unrolled instructions. Each program's size and modeled figures are printed
//! once.
#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "a bench of known-good programs; it prints each program's size and modeled figures once"
)]

use std::hint::black_box;
use std::time::Duration;

use codegen::{BlockSizes, GemmConfig, Schedule};
use criterion::{criterion_group, criterion_main, Criterion};
use penguin::{DType, Target};

/// Plan `cfg` with its blocks as given.
fn plan_gemm(cfg: &codegen::GemmConfig) -> Result<codegen::GemmPlan, codegen::CodegenError> {
    codegen::plan(&codegen::PlanRequest::new(cfg), &codegen::default_builder).map(|p| p.plan)
}

/// The lowered program of the GEMM under a schedule, or why it could not be planned.
fn program(schedule: Schedule, blocks: BlockSizes) -> Result<bir::Program, String> {
    let mut cfg = GemmConfig::new(4096, 8192, 8192, DType::Bf16, Target::Trn2);
    cfg.lhs_transposed = true;
    cfg.schedule = schedule;
    cfg.blocks = blocks;
    let plan = plan_gemm(&cfg).map_err(|e| e.to_string())?;
    let verified = penguin::verify(&plan.function).map_err(|e| format!("{e:?}"))?;
    bir::lower(verified, cfg.target).map_err(|e| e.to_string())
}

fn bench_model(c: &mut Criterion) {
    let mut group = c.benchmark_group("cycle_model_4096x8192x8192");
    group.sample_size(10).measurement_time(Duration::from_secs(10)).warm_up_time(Duration::from_secs(2));
    let blocks = |m, n, k| BlockSizes { m, n, k };
    for (name, schedule, b) in [
        ("naive", Schedule::Naive, blocks(128, 512, 128)),
        ("hoisted", Schedule::Hoisted, blocks(128, 512, 128)),
        ("blocked_mn", Schedule::BlockedMn, blocks(256, 512, 128)),
        ("blocked_mnk", Schedule::BlockedMnk, blocks(512, 1024, 1024)),
    ] {
        let p = match program(schedule, b) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("{name}: not planned: {e}");
                continue;
            }
        };
        let r = sim::model(&p).unwrap();
        let busy = r.engine_busy_summary();
        eprintln!(
            "{name}: {} instructions, modeled {:.1} us, hfu {:.3}, hbm {} bytes, busy pe {:.2} act {:.2} dve {:.2} pool {:.2} dma {:.2}",
            p.num_insts(),
            r.total_us(),
            r.hfu(),
            r.hbm_bytes,
            busy.pe,
            busy.act,
            busy.dve,
            busy.pool,
            busy.dma
        );
        group.bench_function(name, |bench| bench.iter(|| black_box(sim::model(black_box(&p)).unwrap().total_ns)));
        if schedule == Schedule::BlockedMn {
            group.bench_function("trace_blocked_mn", |bench| bench.iter(|| black_box(sim::chrome_trace(&p, &r).len())));
        }
    }
    group.finish();
}

/// `auto` on 8192^3 (A as [M, K], bf16 in HBM, trn2): the same search `ntile gemm` runs.
fn bench_auto(c: &mut Criterion) {
    let mut cfg = GemmConfig::new(8192, 8192, 8192, DType::Bf16, Target::Trn2);
    cfg.input_dtype = DType::Bf16;
    cfg.out_dtype = DType::Bf16;
    cfg.schedule = Schedule::Auto;
    let cost = |plan: &codegen::GemmPlan| -> Result<(codegen::AutoCost, ()), codegen::CodegenError> {
        let verified = penguin::verify(&plan.function).map_err(|e| codegen::CodegenError::BadGemm(format!("{e:?}")))?;
        let p = bir::lower(verified, plan.config.target).map_err(|e| codegen::CodegenError::BadGemm(e.to_string()))?;
        let r = sim::model(&p).map_err(|e| codegen::CodegenError::BadGemm(e.to_string()))?;
        Ok((codegen::AutoCost { time: r.total_ns, hbm_bytes: r.hbm_bytes }, ()))
    };
    let hw = cfg.target.profile();
    let auto = || {
        let search = codegen::AutoSearch {
            limits: codegen::AutoLimits::default(),
            hw: &hw,
            shortlist: codegen::AUTO_SHORTLIST,
            threads: 1,
            cost: &cost,
        };
        let planned = codegen::plan(&codegen::PlanRequest::new(&cfg).with_search(search), &codegen::default_builder);
        let planned = planned.unwrap();
        let (choice, ()) = planned.auto.unwrap();
        (planned.plan, choice)
    };
    let (plan, choice) = auto();
    eprintln!(
        "auto 8192^3: chose {} blocks {:?} {:?}, modeled {:.1} us, {} evaluated, {} rejected",
        plan.config.schedule,
        plan.config.blocks,
        plan.config.order,
        choice.cost / 1e3,
        choice.evaluated,
        choice.rejected
    );
    let mut group = c.benchmark_group("auto_search_8192");
    group.sample_size(10).measurement_time(Duration::from_secs(30)).warm_up_time(Duration::from_secs(1));
    group.bench_function("bf16_trn2", |bench| {
        bench.iter(|| black_box(auto().1.cost));
    });
    group.finish();
}

/// A looped GEMM-like pipeline of `trips` steps: queue 0 loads an operand tile per step
/// (double-buffered), the PE loads weights and runs 4 MultiplyMovings, ACT evacuates PSUM and
/// queue 1 stores; each loop waits on the previous stage's count.
fn pipeline(trips: u32) -> bir::LoopedProgram {
    use bir::{BirInst, Engine, HwAp, Item, Loop, Op, SemId, Wait};
    use penguin::{CastMode, Dim, EngineAccumulationType, Memory, PerfMode, TilePosition, TileSize};
    let chip = |memory, dtype, offset, free| HwAp::on_chip(memory, dtype, 0, 128, offset, vec![Dim::new(1, free)]);
    let hbm = |offset| HwAp::hbm(DType::Bf16, offset, 128, 8192, vec![Dim::new(1, 512)]);
    let sb = |offset, free| chip(Memory::Sbuf, DType::Bf16, offset, free);
    let inst = |op, waits: &[(u32, u32)], signal: Option<u32>| {
        let waits = waits.iter().map(|&(s, v)| Wait { sem: SemId(s), value: u64::from(v) }).collect();
        Item::Inst(BirInst { op, waits, signal: signal.map(SemId), origin: None })
    };
    let (tile_position, tile_size) = (TilePosition { row: 0, col: 0 }, TileSize { rows: 128, cols: 128 });
    let ls = Op::LoadStationary { src: sb(0, 128), perf_mode: PerfMode::None, tile_position, tile_size };
    let mm = Op::MultiplyMoving {
        dst: chip(Memory::Psum, DType::Fp32, 0, 512),
        src: sb(1024, 512),
        acc: EngineAccumulationType::START | EngineAccumulationType::STOP,
        perf_mode: PerfMode::None,
        tile_position,
        tile_size,
    };
    let load = |offset| Op::DmaCopy { dst: sb(1024, 512), src: hbm(offset), cast: CastMode::Rne };
    let store = Op::DmaCopy { dst: hbm(1 << 40), src: sb(0, 512), cast: CastMode::Rne };
    let evac = Op::TensorCopy { dst: sb(0, 512), src: chip(Memory::Psum, DType::Fp32, 0, 512) };
    let looped = |trips, body: Vec<Item>, step| Item::Loop(Loop { trips, body, step });
    let mut p = bir::Program::new("pipeline", Target::Trn2);
    p.hbm_size = 1 << 48;
    p.semaphores = ["loaded", "freed", "evacuated", "stored"].map(String::from).to_vec();
    let mut lp = bir::LoopedProgram::from_program(&p);
    lp.streams[Engine::Dma(0).index()] = vec![
        inst(load(0), &[], Some(0)),
        looped(trips - 1, vec![inst(load(1024), &[(1, 0)], Some(0))], vec![0, 0, 1024, 0, 1]),
    ];
    let mms = vec![inst(mm.clone(), &[], None)];
    lp.streams[Engine::Pe.index()] = vec![looped(
        trips,
        vec![inst(ls, &[(0, 1), (2, 0)], None), looped(3, mms, vec![0; 4]), inst(mm, &[], Some(1))],
        vec![0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0],
    )];
    lp.streams[Engine::Act.index()] = vec![looped(trips, vec![inst(evac, &[(1, 1)], Some(2))], vec![0, 0, 0, 0, 1])];
    lp.streams[Engine::Dma(1).index()] =
        vec![looped(trips, vec![inst(store, &[(2, 1)], Some(3))], vec![2048, 0, 0, 0, 1])];
    lp
}

/// `model_looped` on a million-step pipeline (8 million unrolled instructions).
fn bench_looped(c: &mut Criterion) {
    let lp = pipeline(1_000_000);
    let hw = Target::Trn2.profile();
    let r = sim::model_looped(&lp, &hw).unwrap();
    let small = pipeline(1000);
    let unrolled = sim::model(&small.expand().unwrap()).unwrap();
    let looped = sim::model_looped(&small, &hw).unwrap();
    eprintln!(
        "looped pipeline: {} unrolled instructions, modeled {:.1} us, hfu {:.3}; at 1000 steps looped {:.3} us vs unrolled {:.3} us",
        lp.unrolled_len(),
        r.total_us(),
        r.hfu(),
        looped.total_us(),
        unrolled.total_us()
    );
    let mut group = c.benchmark_group("cycle_model_looped");
    group.sample_size(10).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    group.bench_function("pipeline_1m_steps", |bench| {
        bench.iter(|| black_box(sim::model_looped(black_box(&lp), &hw).unwrap().total_ns));
    });
    group.finish();
}

/// `model_looped` on GEMM-shaped nests of three loops: 512 x 128 x 512 (the tile loops of
/// a 65536^3 bf16 GEMM with 128 x 512 output tiles and 128-deep K steps: 1.3 x 10^8
/// unrolled instructions), and 1000 x 1000 x 4000 (1.6 x 10^10; the most K steps whose
/// matmuls one u32 semaphore can count).
fn bench_nested(c: &mut Criterion) {
    let hw = Target::Trn2.profile();
    let mut group = c.benchmark_group("cycle_model_looped");
    group.sample_size(10).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    for (name, (a, b, k)) in [("nest_65536_tiles", (512, 128, 512)), ("nest_1e10", (1000, 1000, 4000))] {
        let lp = test_support::nest::gemm_nest(a, b, k, 512);
        let (r, stats) = sim::model_looped_stats(&lp, &hw, sim::LoopedOptions::default()).unwrap();
        eprintln!(
            "looped nest {a}x{b}x{k}: {} unrolled instructions, {} replayed, {} jumps, {} checkpoints, {} snapshots; modeled {:.1} us, hfu {:.3}",
            lp.unrolled_len(),
            stats.replayed,
            stats.jumps,
            stats.checkpoints,
            stats.snapshots,
            r.total_us(),
            r.hfu()
        );
        group.bench_function(name, |bench| {
            bench.iter(|| black_box(sim::model_looped(black_box(&lp), &hw).unwrap().total_ns));
        });
        // The same model following its critical path (what the report's bottleneck costs).
        group.bench_function(format!("{name}_critical_path"), |bench| {
            let opts = sim::LoopedOptions::default();
            bench.iter(|| black_box(sim::model_looped_critical(black_box(&lp), &hw, opts, None).unwrap().2.total_ns));
        });
    }
    group.finish();
}

criterion_group!(benches, bench_model, bench_auto, bench_looped, bench_nested);
criterion_main!(benches);
