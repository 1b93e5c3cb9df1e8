//! `ntile gemm` on GEMMs too large to unroll: the program extrapolated from reduced GEMMs
//! and modeled looped (`--no-sim`, `--emit bir`, or `--extrapolate` on any GEMM).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test helpers assert on values")]

mod common;

use common::{code, ntile, stderr, stdout};

fn json(args: &[&str]) -> serde_json::Value {
    let o = ntile(args);
    assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// A naive GEMM reduced in K (25607 rows: 200 chunks and a ragged one) gives the report of
/// the whole plan, with the model's time equal up to rounding.
#[test]
fn an_extrapolated_report_equals_the_whole_plans() {
    let shape = ["gemm", "--m", "256", "--k", "25607", "--n", "600", "--schedule", "naive", "--no-sim", "--json"];
    let whole = json(&shape);
    let x = json(&[&shape[..], &["--extrapolate"]].concat());
    let xr = &x["extrapolated"];
    assert_eq!(xr["reduced_plans"], 3, "{xr}");
    let period = ntile::extrapolate::K_PERIOD_CHUNKS * 128;
    let base = 25607 % period + ntile::extrapolate::BASE_PERIODS * period;
    assert_eq!(xr["base"], serde_json::json!([256, base, 600]));
    assert_eq!(xr["periods"], serde_json::json!([0, period, 0]));
    assert!(whole["extrapolated"].is_null());
    assert!(x["bottleneck"].is_null() && !whole["bottleneck"].is_null());
    let t = |v: &serde_json::Value| v["modeled_time_us"].as_f64().unwrap();
    assert!((t(&x) - t(&whole)).abs() <= 1e-9 * t(&whole), "{} vs {}", t(&x), t(&whole));
    for (key, value) in whole.as_object().unwrap() {
        if !matches!(
            key.as_str(),
            "wall_ms" | "bottleneck" | "extrapolated" | "modeled_time_us" | "hfu" | "engine_busy"
        ) {
            assert_eq!(&x[key], value, "{key}");
        }
    }
    // The rolled program printed is the whole plan's.
    let emit = ["gemm", "--m", "256", "--k", "25607", "--n", "600", "--schedule", "naive", "--emit", "bir"];
    let a = ntile(&emit);
    let b = ntile(&[&emit[..], &["--extrapolate"]].concat());
    assert_eq!((code(&a), code(&b)), (0, 0), "{}", stderr(&b));
    assert_eq!(stdout(&a), stdout(&b));
}

/// Flags that need the unrolled program or a simulation are refused with exit 2, naming why.
#[test]
fn flags_that_need_the_unrolled_program_are_refused() {
    let huge = ["gemm", "--m", "65536", "--k", "65536", "--n", "65536", "--no-sim"];
    for (extra, needle) in [
        (&["--trace", "t.json"][..], "--trace needs every instruction's modeled time"),
        (&["--svg", "t.svg"][..], "--svg needs"),
        (&["--svg-grid", "g.svg"][..], "--svg-grid needs"),
        (&["--emit", "penguin"][..], "--emit penguin needs the planned Penguin function"),
        (&["--emit", "penguin-unrolled"][..], "--emit penguin-unrolled needs"),
        (&["--emit", "bir-unrolled"][..], "--emit bir-unrolled needs the unrolled program"),
    ] {
        let o = ntile(&[&huge[..], extra].concat());
        assert_eq!(code(&o), 2, "{extra:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(needle) && e.contains("too large to unroll (33554432 matmuls)"), "{extra:?}: {e}");
    }
    for t in ["t.json", "t.svg", "g.svg"] {
        assert!(!std::path::Path::new(t).exists());
    }
    let o = ntile(&["gemm", "--m", "256", "--k", "512", "--n", "512", "--extrapolate"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--extrapolate needs --no-sim"), "{}", stderr(&o));
}

/// `auto` through extrapolation weighs the same candidates with the same costs as `auto`
/// on the whole plans, so it makes the same choice.
#[test]
fn auto_over_extrapolated_candidates_chooses_as_auto_does() {
    let shape = ["gemm", "--m", "1024", "--k", "2048", "--n", "3000", "--no-sim", "--json"];
    let whole = json(&shape);
    let x = json(&[&shape[..], &["--extrapolate"]].concat());
    for key in ["schedule", "blocks", "loop_order", "lhs_transpose", "hbm_bytes", "matmuls", "bir_instructions"] {
        assert_eq!(x[key], whole[key], "{key}");
    }
    for key in ["evaluated", "rejected", "block_m", "block_n", "block_k", "order"] {
        assert_eq!(x["auto"][key], whole["auto"][key], "auto.{key}");
    }
    assert_eq!(x["auto"]["skipped"], 0);
    let t = |v: &serde_json::Value| v["modeled_time_us"].as_f64().unwrap();
    assert!((t(&x) - t(&whole)).abs() <= 1e-9 * t(&whole), "{} vs {}", t(&x), t(&whole));
}
