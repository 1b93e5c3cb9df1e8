//! Blockings whose refilled blocks fit SBUF only with one slot run end to end: the report
//! names the single-buffered blocks, the simulated product passes the bound, and a blocking
//! that does not fit even so is refused with the sizes that do not add up.

use crate::support::{code, ntile, stderr};
use codegen::{LoopOrder, Schedule};
use ntile::gemm::{self, GemmArgs};
use penguin::{DType, Target};

/// The blocking of issue 10: refused before, planned now with both blocks single-buffered.
#[test]
fn the_trn1_blocking_of_the_issue_is_planned_single_buffered() {
    let args = GemmArgs {
        m: Some(4096),
        k: Some(8192),
        n: Some(8192),
        dtype: Some(DType::Bf16),
        hbm_dtype: Some(DType::Bf16),
        target: Some(Target::Trn1),
        lhs_transposed: true,
        schedule: Some(Schedule::BlockedMn),
        block_m: Some(256),
        block_n: Some(1024),
        no_sim: true,
        ..GemmArgs::default()
    };
    let out = gemm::run(&args).unwrap();
    assert_eq!(out.report.single_buffered, vec!["a_block", "b_block"]);
    assert!(out.report.sbuf_peak_bytes_per_partition <= 192 * 1024);
    assert!(
        out.stdout.contains(
            "\n  buffers a_block, b_block single-buffered: two slots do not fit SBUF, so each refill waits for the last reads\n"
        ),
        "{}",
        out.stdout
    );
    let v: serde_json::Value =
        serde_json::from_str(&gemm::run(&GemmArgs { json: true, ..args }).unwrap().stdout).unwrap();
    assert_eq!(v["single_buffered"], serde_json::json!(["a_block", "b_block"]));
    assert!(v["modeled_time_us"].as_f64().unwrap() > 0.0);
}

/// Small GEMMs whose inner block gets one slot on trn1's 192 KiB SBUF: fp32 stripes of 2048
/// K rows make a block of 3 n tiles (or 12 m tiles) 96 KiB per partition.
#[test]
fn single_buffered_blocks_compute_the_right_product() {
    struct Case {
        m: u64,
        n: u64,
        schedule: Schedule,
        blocks: (u64, u64, u64),
        order: LoopOrder,
        lhs_transposed: bool,
        single: &'static [&'static str],
    }
    let case = |m, n, schedule, blocks, order, lhs_transposed, single| Case {
        m,
        n,
        schedule,
        blocks,
        order,
        lhs_transposed,
        single,
    };
    let cases = [
        // Inner B (two N blocks) single; the lone M block is loaded once anyway.
        case(2, 1600, Schedule::BlockedMn, (128, 1536, 512), LoopOrder::MOuter, true, &["b_block"][..]),
        // Inner A (two M blocks) single, transposed on the PE; B's lone block is loaded once.
        case(1600, 2, Schedule::BlockedMn, (1536, 512, 512), LoopOrder::NOuter, false, &["a_block"]),
        // Inner A single while the outer B keeps two slots (96 KiB + 2 x 32 KiB fit).
        case(1600, 600, Schedule::BlockedMn, (1536, 512, 512), LoopOrder::NOuter, true, &["a_block"]),
        // blocked-mnk refills B every K block (two of them, 6 n tiles x 8 chunks = 96 KiB).
        case(2, 3100, Schedule::BlockedMnk, (128, 3072, 1024), LoopOrder::MOuter, true, &["b_block"]),
        // blocked-mnk, n-outer: A single, and one result block for the two (M, N) pairs.
        case(1600, 2, Schedule::BlockedMnk, (1536, 512, 2048), LoopOrder::NOuter, true, &["a_block", "result"]),
        // The same transposed on the PE by K blocks of 1024: the two natural buffers take 96 KiB,
        // so A, B and the result block all get one slot.
        case(
            1600,
            2,
            Schedule::BlockedMnk,
            (1536, 512, 1024),
            LoopOrder::NOuter,
            false,
            &["a_block", "b_block", "result"],
        ),
    ];
    for (i, c) in cases.iter().enumerate() {
        let args = GemmArgs {
            m: Some(c.m),
            k: Some(2048),
            n: Some(c.n),
            dtype: Some(DType::Fp32),
            target: Some(Target::Trn1),
            lhs_transposed: c.lhs_transposed,
            schedule: Some(c.schedule),
            block_m: Some(c.blocks.0),
            block_n: Some(c.blocks.1),
            // blocked-mn keeps whole K stripes and refuses a K block.
            block_k: (c.schedule == Schedule::BlockedMnk).then_some(c.blocks.2),
            order: Some(c.order),
            seed: Some(i as u64),
            ..GemmArgs::default()
        };
        let out = gemm::run(&args).unwrap();
        assert_eq!(out.report.single_buffered, c.single, "case {i}");
        let check = out.report.check.unwrap();
        assert!(check.passed, "case {i}: {} failures, max abs err {}", check.failures, check.max_abs_err);
    }
}

#[test]
fn a_blocking_that_does_not_fit_once_names_its_sizes() {
    let o = ntile(&[
        "gemm",
        "--m",
        "512",
        "--k",
        "8192",
        "--n",
        "8192",
        "--hbm-dtype",
        "bf16",
        "--lhs-transposed",
        "--target",
        "trn1",
        "--schedule",
        "blocked-mn",
        "--block-m",
        "256",
        "--block-n",
        "2048",
        "--no-sim",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "SBUF capacity exceeded allocating `b_block0`: it needs 262144 bytes per partition, 36864 are already in use, and trn1 has 196608"
        ),
        "{}",
        stderr(&o)
    );
}
