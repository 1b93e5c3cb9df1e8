//! GEMMs too large to unroll on two cores: each core's share extrapolated and modeled apart,
//! the chip's time composed from the cores' and the shared HBM budget. Checked against the
//! joint replay of the same GEMM at sizes both run, and refused where it cannot apply.

use codegen::Split;
use driver::{gemm, DriverError, GemmRequest};
use penguin::{DType, Target};

fn request(m: u64, k: u64, n: u64, extrapolate: bool) -> GemmRequest {
    let mut req = GemmRequest::new(m, k, n, DType::Bf16, Target::Trn2);
    (req.lnc, req.options.simulate, req.options.extrapolate) = (2, false, extrapolate);
    req
}

#[test]
fn cores_modeled_apart_agree_with_the_joint_replay() {
    // A compute-bound GEMM and a bandwidth-bound one (the shared budget binds).
    for (m, k, n) in [(2048, 2048, 2048), (128, 8192, 4096)] {
        let joint = gemm(&request(m, k, n, false), None).unwrap().report;
        let apart = gemm(&request(m, k, n, true), None).unwrap().report;
        let (j, a) = (joint.lnc.as_ref().unwrap(), apart.lnc.as_ref().unwrap());
        assert!(!j.modeled_apart && a.modeled_apart);
        assert_eq!(a.split, j.split, "{m}x{k}x{n}");
        // Bands only: a split of K is not modeled apart.
        assert!(a.weighed.keys().all(|s| s == "m" || s == "n"), "{:?}", a.weighed);
        let ratio = apart.modeled_time_us / joint.modeled_time_us;
        assert!(
            (0.97..1.03).contains(&ratio),
            "{m}x{k}x{n}: {} vs {} us",
            apart.modeled_time_us,
            joint.modeled_time_us
        );
        assert_eq!(apart.matmuls, joint.matmuls);
        assert_eq!(apart.hbm_read_once_bytes, joint.hbm_read_once_bytes, "{m}x{k}x{n}");
        assert_eq!(a.per_core.len(), 2);
        assert!(apart.extrapolated.is_some());
    }
}

#[test]
fn a_gemm_one_core_extrapolates_runs_on_two() {
    // Too large to plan whole without a simulation: one core extrapolates it, so two do.
    let one = {
        let mut r = request(16384, 16384, 16384, true);
        r.lnc = 1;
        gemm(&r, None).unwrap().report
    };
    let mut req = request(16384, 16384, 16384, true);
    req.split = Some(Split::M);
    let two = gemm(&req, None).unwrap().report;
    let ratio = two.modeled_time_us / one.modeled_time_us;
    assert!((0.45..0.6).contains(&ratio), "{} vs {} us", two.modeled_time_us, one.modeled_time_us);
    let lnc = two.lnc.as_ref().unwrap();
    let rows: Vec<(u64, u64)> = lnc.per_core.iter().map(|c| (c.share.m0, c.share.m)).collect();
    assert_eq!(rows, [(0, 8192), (8192, 8192)]);
}

#[test]
fn what_cannot_be_modeled_apart_is_refused() {
    let mut req = request(2048, 2048, 2048, true);
    req.split = Some(Split::K);
    let e = gemm(&req, None).unwrap_err().to_string();
    assert!(e.contains("--split k of 2048x2048x2048, too large to unroll (or --extrapolate)"), "{e}");
    let mut req = request(2048, 2048, 2048, true);
    req.options.unrolled = true;
    assert!(matches!(gemm(&req, None), Err(DriverError::NotUnrolled { .. })));
    let mut req = request(2048, 2048, 2048, true);
    req.options.model_extrapolated = false;
    let e = gemm(&req, None).unwrap_err().to_string();
    assert!(e.contains("its cores are modeled apart and have no program to print"), "{e}");
}
