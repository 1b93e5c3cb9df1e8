//! Blocks whose two slots do not fit SBUF: the planner gives the inner block one slot, then
//! the outer one, and says so in its stats; plans that fit with two slots are unchanged, and
//! when nothing fits the capacity error names the allocation, the bytes in use and the
//! capacity.

use codegen::{BlockSizes, CodegenError, GemmConfig, GemmPlan, LoopOrder, Schedule};
use penguin::{DType, FunctionView, Target, TensorId};
use test_support::{plan_gemm, plan_gemm_fitting};

/// The SBUF tensors of a plan whose names start with `prefix`.
fn buffers(plan: &GemmPlan, prefix: &str) -> Vec<String> {
    let f = &plan.function;
    (0..f.num_tensors())
        .filter_map(|i| f.tensor(TensorId::from_index(i)?))
        .map(|t| t.name.clone())
        .filter(|n| n.starts_with(prefix))
        .collect()
}

fn config(m: u64, k: u64, n: u64, schedule: Schedule, blocks: (u64, u64, u64), order: LoopOrder) -> GemmConfig {
    let mut cfg = GemmConfig::new(m, k, n, DType::Bf16, Target::Trn1);
    cfg.input_dtype = DType::Bf16;
    cfg.lhs_transposed = true;
    cfg.schedule = schedule;
    cfg.blocks = BlockSizes { m: blocks.0, n: blocks.1, k: blocks.2 };
    cfg.order = order;
    cfg
}

/// The blocking of issue 10 on trn1: an M block of 2 x 64 K chunks of A^T (32 KiB per
/// partition) and an N block of 2 x 64 chunks of B (128 KiB). Two B slots do not fit beside
/// A's, nor two A slots beside one B slot: both get one.
#[test]
fn the_issue_blocking_fits_single_buffered() {
    let cfg = config(4096, 8192, 8192, Schedule::BlockedMn, (256, 1024, 512), LoopOrder::MOuter);
    let plan = plan_gemm(&cfg).unwrap();
    assert_eq!(plan.stats.single_buffered.names(), vec!["a_block", "b_block"]);
    assert_eq!(buffers(&plan, "a_block"), vec!["a_block0"]);
    assert_eq!(buffers(&plan, "b_block"), vec!["b_block0"]);
    // out0/out1 (2 KiB each), then 32 KiB of A^T and 128 KiB of B.
    assert_eq!(plan.stats.sbuf_peak_bytes_per_partition, 4096 + 32768 + 131072);
    // Default blocks still shrink until the inner block fits twice instead of single-buffering
    // it (the outer block has one slot when two do not fit, as before, and says so).
    let fitted = plan_gemm_fitting(&GemmConfig { blocks: BlockSizes::for_schedule(cfg.schedule), ..cfg }).unwrap();
    assert_eq!(fitted.stats.single_buffered.names(), vec!["a_block"]);
    assert_eq!(buffers(&fitted, "a_block"), vec!["a_block0"]);
    assert_eq!(buffers(&fitted, "b_block"), vec!["b_block0", "b_block1"]);
}

/// Only the inner block is single-buffered when the outer one still fits twice.
#[test]
fn the_inner_block_goes_first() {
    // n-outer: A is the inner block (two M blocks), B the outer one (two N blocks). A: 16 m
    // tiles x 16 chunks x 128 x 2 bytes = 64 KiB per slot; B: 1 n tile x 16 chunks x 512 x 2
    // = 16 KiB. Two of each (160 KiB) and out0/out1 (4 KiB) fit: nothing changes.
    let cfg = config(3072, 2048, 1024, Schedule::BlockedMn, (2048, 512, 512), LoopOrder::NOuter);
    let plan = plan_gemm(&cfg).unwrap();
    assert!(plan.stats.single_buffered.names().is_empty());
    assert_eq!(buffers(&plan, "a_block"), vec!["a_block0", "a_block1"]);
    assert_eq!(buffers(&plan, "b_block"), vec!["b_block0", "b_block1"]);
    // K = 3072: A is 96 KiB per slot and B 24 KiB. Two B slots and one A slot fit (148 KiB),
    // two A slots do not.
    let cfg = GemmConfig { k: 3072, ..cfg };
    let plan = plan_gemm(&cfg).unwrap();
    assert_eq!(plan.stats.single_buffered.names(), vec!["a_block"]);
    assert_eq!(buffers(&plan, "a_block"), vec!["a_block0"]);
    assert_eq!(buffers(&plan, "b_block"), vec!["b_block0", "b_block1"]);
}

/// blocked-mnk refills both operand blocks every K block: the inner loop's one (B in m-outer
/// order) loses its second slot first.
#[test]
fn blocked_mnk_single_buffers_the_inner_operand() {
    // B block: 8 n tiles x 8 chunks x 512 x 2 bytes = 64 KiB per slot; A block: 4 m tiles x
    // 8 chunks x 128 x 2 = 8 KiB per slot; the result block 4 x 8 x 512 fp32 = 64 KiB. Two
    // slots of each (208 KiB with out0/out1) do not fit; one B slot does (148 KiB), and then
    // only one result block.
    let cfg = config(512, 4096, 8192, Schedule::BlockedMnk, (512, 4096, 1024), LoopOrder::MOuter);
    let plan = plan_gemm(&cfg).unwrap();
    assert_eq!(plan.stats.single_buffered.names(), vec!["b_block", "result"]);
    assert_eq!(buffers(&plan, "a_block"), vec!["a_block0", "a_block1"]);
    assert_eq!(buffers(&plan, "b_block"), vec!["b_block0"]);
    // With a smaller N block two slots fit again and the plan is the one of two slots.
    let small = GemmConfig { blocks: BlockSizes { n: 2048, ..cfg.blocks }, ..cfg };
    let plan = plan_gemm(&small).unwrap();
    assert!(plan.stats.single_buffered.names().is_empty());
    assert_eq!(buffers(&plan, "b_block"), vec!["b_block0", "b_block1"]);
}

/// When even one slot does not fit, the error names the allocation's own size, the bytes
/// already allocated and the capacity.
#[test]
fn the_capacity_error_names_size_use_and_capacity() {
    // B block: 4 n tiles x 64 chunks x 512 x 2 bytes = 256 KiB, more than trn1's 192 KiB.
    let cfg = config(512, 8192, 8192, Schedule::BlockedMn, (256, 2048, 512), LoopOrder::MOuter);
    let err = plan_gemm(&cfg).unwrap_err();
    // In use: out0/out1 (4 KiB) and one A^T slot (2 m tiles x 64 chunks x 128 x 2 = 32 KiB).
    assert_eq!(
        err,
        CodegenError::SbufCapacity {
            tensor: "b_block0".into(),
            needed: 262_144,
            available: 196_608,
            used: 36_864,
            target: Target::Trn1
        }
    );
    assert_eq!(
        err.to_string(),
        "SBUF capacity exceeded allocating `b_block0`: it needs 262144 bytes per partition, 36864 are already in use, and trn1 has 196608"
    );
}
