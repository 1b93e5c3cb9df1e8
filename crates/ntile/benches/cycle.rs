//! Benchmarks of the cycle model on the lowered programs of a 4096x8192x8192 bf16 GEMM
//! (`--lhs-transposed`, trn2) under the fixed schedules, of the trace export of the
//! blocked-mn one, and of `auto`'s whole search on an 8192^3 bf16 GEMM (rank, plan, lower and
//! cycle-model its shortlist). Each program's size and modeled figures are printed once.
#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "a bench of known-good programs; it prints each program's size and modeled figures once"
)]

use std::hint::black_box;
use std::time::Duration;

use codegen::{plan_gemm, BlockSizes, GemmConfig, Schedule};
use criterion::{criterion_group, criterion_main, Criterion};
use penguin::{DType, Target};

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
    let mut cost = |plan: &codegen::GemmPlan| -> Result<codegen::AutoCost, codegen::CodegenError> {
        let verified = penguin::verify(&plan.function).map_err(|e| codegen::CodegenError::BadGemm(format!("{e:?}")))?;
        let p = bir::lower(verified, plan.config.target).map_err(|e| codegen::CodegenError::BadGemm(e.to_string()))?;
        let r = sim::model(&p).map_err(|e| codegen::CodegenError::BadGemm(e.to_string()))?;
        Ok(codegen::AutoCost { time: r.total_ns, hbm_bytes: r.hbm_bytes })
    };
    let (plan, choice) = codegen::plan_gemm_auto(&cfg, codegen::AUTO_SHORTLIST, &mut cost).unwrap();
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
        bench.iter(|| black_box(codegen::plan_gemm_auto(&cfg, codegen::AUTO_SHORTLIST, &mut cost).unwrap().1.cost));
    });
    group.finish();
}

criterion_group!(benches, bench_model, bench_auto);
criterion_main!(benches);
