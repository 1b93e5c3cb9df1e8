//! GEMMs split by K over the two cores of a logical NeuronCore: each core an fp32 partial
//! sum of all of C, added after the semaphore the cores share. Checked against the fp64
//! reference, bit-identical to the two halves run on one core each and added in fp32, free of
//! races (and racing without the shared wait), chosen by auto where it is the fastest split,
//! and refused where it cannot apply.

use codegen::{Schedule, Split};
use driver::{gemm, GemmInputs, GemmRequest, Operand};
use penguin::{DType, Target};

fn request(m: u64, k: u64, n: u64) -> GemmRequest {
    let mut req = GemmRequest::new(m, k, n, DType::Bf16, Target::Trn2);
    (req.lnc, req.split) = (2, Some(Split::K));
    req
}

#[test]
fn k_splits_pass_the_fp64_check() {
    // (m, k, n, schedule, A as [K, M], dtype, C's dtype)
    let cases = [
        (256, 1000, 384, Schedule::Naive, false, DType::Bf16, DType::Fp32),
        (128, 4096, 640, Schedule::BlockedMnk, true, DType::Fp16, DType::Fp16),
        (300, 700, 200, Schedule::Auto, false, DType::Fp32, DType::Fp32),
        (256, 2048, 1100, Schedule::Hoisted, false, DType::Bf16, DType::Bf16),
    ];
    for (m, k, n, schedule, lhs_transposed, dtype, out) in cases {
        let mut req = request(m, k, n);
        (req.schedule, req.lhs_transposed, req.out_dtype) = (schedule, lhs_transposed, out);
        (req.lhs_dtype, req.rhs_dtype) = (dtype, dtype);
        let what = format!("{m}x{k}x{n} {schedule} {dtype} -> {out}");
        let done = gemm(&req, None).unwrap_or_else(|e| panic!("{what}: {e}"));
        let check = done.report.check.as_ref().unwrap();
        assert!(check.passed, "{what}: {check:?}");
        assert_eq!(done.report.k, k, "{what}");
        assert_eq!(done.report.out_dtype, out.to_string(), "{what}");
        let lnc = done.report.lnc.as_ref().unwrap();
        assert_eq!(lnc.split, "k", "{what}");
        // The shares cover K exactly, each all of C.
        let ks: Vec<(u64, u64)> = lnc.per_core.iter().map(|c| (c.share.k0, c.share.k)).collect();
        assert_eq!(ks[0].0, 0, "{what}");
        assert_eq!(ks[0].0 + ks[0].1, ks[1].0, "{what}");
        assert_eq!(ks[1].0 + ks[1].1, k, "{what}");
        assert!(lnc.per_core.iter().all(|c| (c.share.m, c.share.n) == (m, n)), "{what}");
        let chip = &done.chip.as_ref().unwrap().chip;
        assert_eq!(chip.shared, ["reduce.partials"], "{what}");
    }
}

/// Deterministic values of a small range, exact in bf16.
fn values(len: usize, seed: u32) -> Vec<f32> {
    (0..len as u32)
        .map(|i| ((i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 24) % 17) as f32 / 8.0 - 1.0)
        .collect()
}

#[test]
fn a_k_split_is_the_two_halves_added_in_fp32() {
    let (m, k, n, half) = (256u64, 768u64, 512u64, 384u64);
    let (a, b) = (values((m * k) as usize, 1), values((k * n) as usize, 2));
    let run = |req: &GemmRequest, a: &[f32], b: &[f32], k: u64| {
        let inputs =
            GemmInputs { a: Operand::from_f32("a", m, k, a).unwrap(), b: Operand::from_f32("b", k, n, b).unwrap() };
        gemm(req, Some(inputs)).unwrap().c.unwrap()
    };
    let mut whole = request(m, k, n);
    (whole.schedule, whole.out_dtype) = (Schedule::Naive, DType::Bf16);
    let split = run(&whole, &a, &b, k);
    let mut one = GemmRequest::new(m, half, n, DType::Bf16, Target::Trn2);
    one.schedule = Schedule::Naive;
    let cols = |lo: u64| -> Vec<f32> {
        (0..m).flat_map(|r| a[(r * k + lo) as usize..(r * k + lo + half) as usize].to_vec()).collect()
    };
    let first = run(&one, &cols(0), &b[..(half * n) as usize], half);
    let second = run(&one, &cols(half), &b[(half * n) as usize..], half);
    let want: Vec<f32> = first.iter().zip(&second).map(|(x, y)| half::bf16::from_f32(x + y).to_f32()).collect();
    assert_eq!(split, want);
}

#[test]
fn without_the_shared_wait_the_reduction_races() {
    let mut req = request(256, 1024, 512);
    req.options.simulate = false;
    let done = gemm(&req, None).unwrap();
    let mut chip = done.chip.unwrap().chip;
    let mut s = sim::ChipSimulator::new(&chip);
    assert!(s.run().unwrap().races.is_empty());
    // Core 0 no longer waits for core 1's partial sum.
    let partials = chip.cores[0].semaphores.iter().position(|n| n == "reduce.partials").unwrap() as u32;
    for inst in chip.cores[0].streams.iter_mut().flatten() {
        inst.waits.retain(|w| w.sem.0 != partials);
    }
    let races = sim::ChipSimulator::new(&chip).run().unwrap().races;
    assert!(races.iter().any(|r| r.earlier.core != r.later.core), "{races:?}");
}

#[test]
fn auto_splits_a_skinny_gemm_by_k() {
    // M = N = 128 leaves no band of C for a second core: only K divides.
    let modeled = |lnc: u32| {
        let mut req = GemmRequest::new(128, 16384, 128, DType::Bf16, Target::Trn2);
        req.lnc = lnc;
        req.options.simulate = false;
        gemm(&req, None).unwrap().report
    };
    let (one, two) = (modeled(1), modeled(2));
    let lnc = two.lnc.as_ref().unwrap();
    assert_eq!(lnc.split, "k");
    assert_eq!(lnc.weighed.keys().collect::<Vec<_>>(), ["k"]);
    let ratio = two.modeled_time_us / one.modeled_time_us;
    assert!(ratio < 0.7, "{} vs {} us", two.modeled_time_us, one.modeled_time_us);
    // A square compute-bound GEMM keeps a band split: the reduction costs more than it saves,
    // so auto does not plan K (a band split beats its floor), and planned it is slower.
    let mut req = GemmRequest::new(1024, 1024, 1024, DType::Bf16, Target::Trn2);
    (req.lnc, req.options.simulate) = (2, false);
    let r = gemm(&req, None).unwrap().report;
    let lnc = r.lnc.as_ref().unwrap();
    assert_eq!(lnc.weighed.keys().collect::<Vec<_>>(), ["m", "n"]);
    req.split = Some(Split::K);
    let k = gemm(&req, None).unwrap().report;
    assert!(k.modeled_time_us > r.modeled_time_us, "{} vs {}", k.modeled_time_us, r.modeled_time_us);
}

#[test]
fn k_splits_that_cannot_apply_are_refused() {
    let e = gemm(&request(256, 128, 256), None).unwrap_err().to_string();
    assert!(e.contains("--split k: K = 128 is too short to give each of 2 cores a share"), "{e}");
    let mut req = request(256, 1024, 256);
    req.sparsity = Some("2:4".parse().unwrap());
    let e = gemm(&req, None).unwrap_err().to_string();
    assert!(e.contains("--split k with --sparsity"), "{e}");
}
