//! GEMMs on the two cores of a logical NeuronCore (LNC=2): each core's share checked against
//! the fp64 reference (and, planned naively, bit-identical to one core's C), the split
//! honoured or weighed, trn1 refused, the modeled time of a compute-bound GEMM about half of
//! one core's and a bandwidth-bound one held to the shared HBM budget of the profile, and
//! both cores on the timelines.

use codegen::{Schedule, Split};
use driver::{gemm, DriverError, ErrorKind, GemmOutcome, GemmRequest};
use penguin::{DType, Target};

fn request(m: u64, k: u64, n: u64, lnc: u32) -> GemmRequest {
    let mut req = GemmRequest::new(m, k, n, DType::Bf16, Target::Trn2);
    req.lnc = lnc;
    req
}

fn modeled(m: u64, k: u64, n: u64, lnc: u32) -> GemmOutcome {
    let mut req = request(m, k, n, lnc);
    req.options.simulate = false;
    gemm(&req, None).unwrap()
}

/// (m, k, n, schedule, split, A given as [K, M], sparsity, dtype)
type Case = (u64, u64, u64, Schedule, Option<Split>, bool, Option<&'static str>, DType);

#[test]
fn two_core_gemms_pass_the_fp64_check() {
    let cases: [Case; 6] = [
        (256, 300, 640, Schedule::Naive, Some(Split::M), false, None, DType::Bf16),
        (300, 256, 1000, Schedule::BlockedMn, Some(Split::N), false, None, DType::Bf16),
        (384, 512, 512, Schedule::BlockedMnk, Some(Split::M), true, None, DType::Fp16),
        (256, 512, 384, Schedule::Hoisted, Some(Split::N), true, None, DType::Bf16),
        (256, 1024, 512, Schedule::Auto, Some(Split::M), false, Some("2:4"), DType::Bf16),
        (200, 640, 700, Schedule::Auto, None, false, None, DType::Fp32),
    ];
    for (m, k, n, schedule, split, lhs_transposed, sparsity, dtype) in cases {
        let mut req = GemmRequest::new(m, k, n, dtype, Target::Trn2);
        (req.lnc, req.schedule, req.split, req.lhs_transposed) = (2, schedule, split, lhs_transposed);
        req.sparsity = sparsity.map(|p| p.parse().unwrap());
        let what = format!("{m}x{k}x{n} {schedule} {split:?} {sparsity:?}");
        let out = gemm(&req, None).unwrap_or_else(|e| panic!("{what}: {e}"));
        let check = out.report.check.as_ref().unwrap();
        assert!(check.passed, "{what}: {check:?}");
        let lnc = out.report.lnc.as_ref().unwrap();
        assert_eq!(lnc.per_core.len(), 2, "{what}");
        if let Some(s) = split {
            assert_eq!(lnc.split, s.name(), "{what}");
        }
        // The shares tile C exactly.
        let covered: u64 = lnc.per_core.iter().map(|c| c.share.m * c.share.n).sum();
        assert_eq!(covered, m * n, "{what}");
        assert_eq!(out.c.as_ref().unwrap().len() as u64, m * n);
    }
}

#[test]
fn naive_shares_compute_the_bytes_of_one_core() {
    for split in [Split::M, Split::N] {
        let mut one = request(384, 384, 1536, 1);
        one.schedule = Schedule::Naive;
        one.options.c_bytes = true;
        let mut two = one.clone();
        (two.lnc, two.split) = (2, Some(split));
        let (a, b) = (gemm(&one, None).unwrap(), gemm(&two, None).unwrap());
        assert_eq!(a.c_bytes, b.c_bytes, "{split}");
        let shares: Vec<_> = b.chip.as_ref().unwrap().shares.iter().map(|s| (s.m0, s.m, s.n0, s.n)).collect();
        let want = match split {
            Split::M => vec![(0, 256, 0, 1536), (256, 128, 0, 1536)],
            Split::N => vec![(0, 384, 0, 768), (0, 384, 768, 768)],
            Split::K => unreachable!("a split of K adds partial sums (see lnc_k.rs)"),
        };
        assert_eq!(shares, want, "{split}");
    }
}

#[test]
fn trn1_and_unsplittable_gemms_are_refused() {
    let mut req = request(512, 512, 512, 2);
    req.target = Target::Trn1;
    let e = gemm(&req, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Input);
    assert!(e.to_string().contains("--lnc 2 needs a logical NeuronCore of 2 physical cores, and trn1 has none"), "{e}");
    let e = gemm(&request(128, 128, 128, 2), None).unwrap_err();
    assert!(e.to_string().contains("128x128x128 is too small to divide between 2 cores"), "{e}");
    let mut req = request(128, 512, 1024, 2);
    req.split = Some(Split::M);
    let e = gemm(&req, None).unwrap_err();
    assert!(e.to_string().contains("--split m: M = 128 is too short"), "{e}");
    let mut req = request(512, 512, 512, 1);
    req.split = Some(Split::N);
    assert!(matches!(gemm(&req, None), Err(DriverError::Input(_))));
    let mut req = request(512, 512, 512, 3);
    req.options.simulate = false;
    assert!(gemm(&req, None).unwrap_err().to_string().contains("--lnc 3 is not a logical NeuronCore"));
}

#[test]
fn a_compute_bound_gemm_takes_about_half_the_time_on_two_cores() {
    let (one, two) = (modeled(2048, 2048, 2048, 1), modeled(2048, 2048, 2048, 2));
    let ratio = two.report.modeled_time_us / one.report.modeled_time_us;
    assert!((0.45..0.62).contains(&ratio), "{} vs {} us", two.report.modeled_time_us, one.report.modeled_time_us);
    assert_eq!(two.report.matmuls, one.report.matmuls);
    let lnc = two.report.lnc.as_ref().unwrap();
    assert!(lnc.per_core.iter().all(|c| c.engine_busy.pe > 0.7), "{:?}", lnc.per_core);
}

#[test]
fn a_bandwidth_bound_gemm_is_held_to_the_shared_hbm_budget() {
    // A single row tile streaming 64 MiB of B: the cores share the HBM budget of the logical
    // core (725 GB/s on trn2), about twice what one core draws.
    let (one, two) = (modeled(128, 8192, 4096, 1), modeled(128, 8192, 4096, 2));
    let hw = Target::Trn2.profile();
    let floor_us = two.report.hbm_bytes as f64 / hw.hbm_shared_bytes_per_ns / 1e3;
    let t = two.report.modeled_time_us;
    assert!(t >= floor_us && t < floor_us * 1.25, "{t} us vs the shared floor {floor_us} us");
    let lnc = two.report.lnc.as_ref().unwrap();
    assert_eq!(lnc.split, "n", "only N can be divided");
    assert!(lnc.hbm_shared_busy > 0.85, "{}", lnc.hbm_shared_busy);
    // One core alone is held to its own HBM figure.
    let one_floor = one.report.hbm_bytes as f64 / hw.hbm_bytes_per_ns / 1e3;
    assert!(one.report.modeled_time_us >= one_floor, "{} vs {one_floor}", one.report.modeled_time_us);
    // A tighter shared budget slows the two cores in proportion.
    let mut req = request(128, 8192, 4096, 2);
    req.options.simulate = false;
    req.hw = Some(penguin::HwProfile { hbm_shared_bytes_per_ns: 362.5, ..hw });
    let tight = gemm(&req, None).unwrap();
    let tight_floor = tight.report.hbm_bytes as f64 / 362.5 / 1e3;
    assert!(tight.report.modeled_time_us >= tight_floor, "{}", tight.report.modeled_time_us);
    assert!(tight.report.modeled_time_us > 1.6 * t, "{} vs {t}", tight.report.modeled_time_us);
}

#[test]
fn the_timelines_show_both_cores() {
    let mut req = request(256, 256, 512, 2);
    req.options.simulate = false;
    req.split = Some(Split::M);
    let out = gemm(&req, None).unwrap();
    let trace: serde_json::Value = serde_json::from_str(&out.trace().unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let processes: Vec<(u64, String)> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| (e["pid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(processes.len(), 2, "{processes:?}");
    assert_eq!(processes[0].0, 0);
    assert_eq!(processes[1].0, 1);
    assert!(processes[0].1.starts_with("core 0: rows 0..128 cols 0..512 of C  gemm 128x256x512"), "{}", processes[0].1);
    assert!(processes[1].1.starts_with("core 1: rows 128..256 cols 0..512 of C"), "{}", processes[1].1);
    // Every instruction of both cores is a slice of its core's process.
    let chip = out.chip.as_ref().unwrap();
    for core in 0..2u64 {
        let slices = events.iter().filter(|e| e["ph"] == "X" && e["pid"] == core && e["cat"] != "wait").count();
        assert_eq!(slices, chip.chip.cores[core as usize].num_insts(), "core {core}");
    }
    let svg = out.timeline_svg().unwrap();
    assert_eq!(svg.matches("<svg ").count(), 3, "one picture holding one per core");
    assert!(svg.contains("core 0: rows 0..128") && svg.contains("core 1: rows 128..256"));
}
