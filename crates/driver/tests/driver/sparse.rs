//! The structured-sparse path on the documented layout at the shape, 1024x4096x1024
//! bf16 on trn2, by the cycle model (modeled figures: deterministic, no wall time): a sparse
//! GEMM issues `1/CR` of the dense matmuls, reads about `1/CR + 1/(4 CR)` of dense A's bytes,
//! and is no slower than dense with the same schedule (faster where dense is PE-bound).

use codegen::Schedule;
use driver::{gemm, GemmOutcome, GemmRequest};
use penguin::{DType, FunctionView, Target};

const SHAPE: (u64, u64, u64) = (1024, 4096, 1024);

fn modeled(schedule: Schedule, sparsity: Option<&str>) -> GemmOutcome {
    let mut req = GemmRequest::new(SHAPE.0, SHAPE.1, SHAPE.2, DType::Bf16, Target::Trn2);
    req.schedule = schedule;
    req.sparsity = sparsity.map(|p| p.parse().unwrap());
    req.options.simulate = false;
    req.options.check = false;
    gemm(&req, None).unwrap()
}

/// HBM bytes of A as the kernel reads it: A, or a sparse A's kept values and tag words.
fn a_bytes(o: &GemmOutcome) -> u64 {
    let plan = o.plan.as_ref().unwrap();
    let bytes = |id| {
        let t = plan.function.tensor(id).unwrap();
        t.shape.iter().product::<u64>() * u64::from(t.dtype.size_bytes())
    };
    bytes(plan.tensors.a) + plan.tensors.a_tags.map_or(0, bytes)
}

#[test]
fn sparse_matmuls_and_a_bytes_shrink_by_the_compression_ratio() {
    let dense = modeled(Schedule::Naive, None);
    // 8 x 2 output tiles, 32 K steps of 128 rows.
    assert_eq!(dense.report.matmuls, 8 * 2 * 32);
    let dense_a = a_bytes(&dense);
    assert_eq!(dense_a, 1024 * 4096 * 2);
    for (pattern, cr) in [("1:2", 2u64), ("2:4", 2), ("4:8", 2), ("4:12", 3), ("4:16", 4)] {
        let s = modeled(Schedule::Naive, Some(pattern));
        // K steps of 128 x CR dense rows.
        assert_eq!(s.report.matmuls, 8 * 2 * SHAPE.1.div_ceil(128 * cr), "{pattern}");
        let want = dense_a as f64 * (1.0 / cr as f64 + 1.0 / (4.0 * cr as f64));
        let got = a_bytes(&s) as f64;
        assert!((got / want - 1.0).abs() < 0.01, "{pattern}: A is {got} bytes, want about {want}");
        if cr == 2 {
            // K' = 2048 kept columns of bf16 and [2048, 256] tag words: 5/8 of dense.
            assert_eq!(a_bytes(&s), 1024 * 2048 * 2 + 2048 * 256 * 2, "{pattern}");
        }
    }
}

#[test]
fn sparse_is_no_slower_than_dense_with_the_same_schedule_and_faster_where_dense_is_pe_bound() {
    for schedule in [Schedule::Naive, Schedule::BlockedMn, Schedule::BlockedMnk, Schedule::Auto] {
        let dense = modeled(schedule, None).report;
        let pe_bound = dense.bottleneck.as_ref().is_some_and(|b| b.engine == "pe");
        for pattern in ["2:4", "4:8", "4:16"] {
            let sparse = modeled(schedule, Some(pattern)).report;
            let (s, d) = (sparse.modeled_time_us, dense.modeled_time_us);
            assert!(s <= d, "{schedule:?} {pattern}: {s} us sparse vs {d} us dense");
            if pe_bound {
                assert!(s < 0.7 * d, "{schedule:?} {pattern}: {s} us sparse vs {d} us dense (PE-bound)");
            }
            // Fewer bytes: A shrinks, B and C do not change.
            assert!(sparse.hbm_bytes < dense.hbm_bytes, "{schedule:?} {pattern}");
        }
    }
    // The dense auto kernel at this shape is PE-bound, so the test above compares something.
    assert_eq!(modeled(Schedule::Auto, None).report.bottleneck.map(|b| b.engine), Some("pe".to_string()));
}
