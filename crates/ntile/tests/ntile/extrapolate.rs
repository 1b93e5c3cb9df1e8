//! `ntile gemm` on GEMMs too large to unroll: the program extrapolated from reduced GEMMs
//! and modeled looped (`--no-sim`, `--emit bir`, or `--extrapolate` on any GEMM).

use crate::support::{code, ntile, stderr, stdout};

fn json(args: &[&str]) -> serde_json::Value {
    let o = ntile(args);
    assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// A naive GEMM with `--no-sim` is planned in loops, with `--extrapolate` too (nothing
/// reduced: one plan, its base the GEMM itself), and gives the report of the whole plan
/// (`--trace` plans it whole, for every instruction's time), with the model's time equal up
/// to rounding and the bottleneck of the critical path followed through the loops.
#[test]
fn an_extrapolated_report_equals_the_whole_plans() {
    let shape = ["gemm", "--m", "256", "--k", "25607", "--n", "600", "--schedule", "naive", "--no-sim", "--json"];
    let trace = std::env::temp_dir().join(format!("ntile-whole-{}.json", std::process::id()));
    let whole = json(&[&shape[..], &["--trace", trace.to_str().unwrap()]].concat());
    let _ = std::fs::remove_file(&trace);
    let x = json(&shape);
    assert_eq!(json(&[&shape[..], &["--extrapolate"]].concat())["extrapolated"], x["extrapolated"]);
    let xr = &x["extrapolated"];
    assert_eq!((&xr["reduced_plans"], &xr["planned_in_loops"]), (&serde_json::json!(1), &serde_json::json!(true)));
    assert_eq!(xr["base"], serde_json::json!([256, 25607, 600]));
    assert_eq!(xr["periods"], serde_json::json!([0, 0, 0]));
    assert!(xr["reduced_instructions"].as_u64().unwrap() * 4 < whole["penguin_instructions"].as_u64().unwrap());
    assert!(whole["extrapolated"].is_null());
    // The critical path followed through the loops names the whole plan's bottleneck, each
    // class within a point of its share.
    let (bx, bw) = (&x["bottleneck"], &whole["bottleneck"]);
    assert_eq!(bx["engine"], bw["engine"], "{bx} vs {bw}");
    for (class, share) in bw["critical_path"].as_object().unwrap() {
        let got = bx["critical_path"][class].as_f64().unwrap_or(0.0);
        assert!((got - share.as_f64().unwrap()).abs() <= 0.01, "{class}: {bx} vs {bw}");
    }
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
    // The looped program printed unrolls to the whole plan's: the same ops on every stream
    // (the whole plan prints its lowering rolled, the extrapolation its nest lowered natively).
    let emit = ["gemm", "--m", "256", "--k", "25607", "--n", "600", "--schedule", "naive", "--emit", "bir"];
    let a = ntile(&emit);
    let b = ntile(&[&emit[..], &["--extrapolate"]].concat());
    assert_eq!((code(&a), code(&b)), (0, 0), "{}", stderr(&b));
    let unrolled = |text: String| bir::text::parse_looped(&text).unwrap().expand().unwrap();
    let (a, b) = (unrolled(stdout(&a)), unrolled(stdout(&b)));
    assert_eq!(a.hbm, b.hbm);
    for e in bir::Engine::all() {
        let ops = |p: &bir::Program| p.stream(e).iter().map(|i| i.op.clone()).collect::<Vec<_>>();
        assert_eq!(ops(&a), ops(&b), "{}", e.name());
    }
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

/// `auto` on a GEMM with a dimension past `AUTO_PROXY_DIM`, through extrapolation, weighs its
/// candidates on the proxy capped at that size (the choice `auto` makes for the proxy
/// itself), then extrapolates the choice: the report is that of the choice given explicitly.
#[test]
fn auto_past_the_proxy_size_chooses_on_the_proxy() {
    let cap = driver::gemm::AUTO_PROXY_DIM.to_string();
    let proxy = json(&["gemm", "--m", &cap, "--k", "256", "--n", "640", "--no-sim", "--json"]);
    let big = (2 * driver::gemm::AUTO_PROXY_DIM + 128).to_string();
    let shape = ["gemm", "--m", big.as_str(), "--k", "256", "--n", "640", "--no-sim"];
    let x = json(&[&shape[..], &["--json", "--extrapolate"]].concat());
    for key in ["evaluated", "rejected", "block_m", "block_n", "block_k", "order"] {
        assert_eq!(x["auto"][key], proxy["auto"][key], "auto.{key}");
    }
    assert_eq!(x["schedule"], proxy["schedule"]);
    assert_eq!(x["auto"]["weighed_on"], serde_json::json!([driver::gemm::AUTO_PROXY_DIM, 256, 640]));
    assert!(proxy["auto"]["weighed_on"].is_null());
    let (a, schedule) = (&x["auto"], x["schedule"].as_str().unwrap());
    let (bm, bn, bk) = (a["block_m"].to_string(), a["block_n"].to_string(), a["block_k"].to_string());
    let mut args = [&shape[..], &["--json", "--extrapolate", "--schedule", schedule]].concat();
    args.extend(["--block-m", &bm, "--block-n", &bn, "--order", a["order"].as_str().unwrap()]);
    if schedule == "blocked-mnk" {
        args.extend(["--block-k", &bk]);
    }
    let explicit = json(&args);
    for key in ["modeled_time_us", "hbm_bytes", "matmuls", "bir_instructions", "blocks", "loop_order"] {
        assert_eq!(x[key], explicit[key], "{key}");
    }
    let o = ntile(&shape.iter().copied().chain(["--extrapolate"]).collect::<Vec<_>>());
    assert!(stdout(&o).contains(&format!("weighed on {cap}x256x640")), "{}", stdout(&o));
}

/// A GEMM over the memory budget is planned in loops (not unrolled) and gives the whole
/// plan's report: blocked-mnk with small blocks.
#[test]
fn a_gemm_over_the_memory_budget_is_extrapolated_with_the_whole_plans_figures() {
    let shape = [
        "gemm",
        "--m",
        "6144",
        "--k",
        "2048",
        "--n",
        "12388",
        "--schedule",
        "blocked-mnk",
        "--block-m",
        "256",
        "--block-n",
        "1024",
        "--block-k",
        "256",
        "--no-sim",
        "--json",
    ];
    // `--trace` plans it whole (it needs every instruction's time).
    let trace = std::env::temp_dir().join(format!("ntile-budget-{}.json", std::process::id()));
    let whole = json(&[&shape[..], &["--trace", trace.to_str().unwrap()]].concat());
    let _ = std::fs::remove_file(&trace);
    assert!(whole["extrapolated"].is_null());
    let o = ntile(&[&shape[..], &["--max-memory", "250M"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let x: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(x["extrapolated"]["planned_in_loops"], serde_json::json!(true), "{}", x["extrapolated"]);
    assert_eq!(x["extrapolated"]["periods"], serde_json::json!([0, 0, 0]), "{}", x["extrapolated"]);
    for key in ["matmuls", "bir_instructions", "penguin_instructions", "psum_groups", "hbm_bytes", "blocks"] {
        assert_eq!(x[key], whole[key], "{key}");
    }
    let t = |v: &serde_json::Value| v["modeled_time_us"].as_f64().unwrap();
    assert!((t(&x) - t(&whole)).abs() <= 1e-9 * t(&whole), "{} vs {}", t(&x), t(&whole));
}

/// 65536^3 prints its looped program (naive, planned in loops: the schedule's nest, every
/// engine stream lowered loop by loop), never unrolled.
#[test]
fn a_65536_cubed_gemm_prints_its_extrapolated_program() {
    let o = ntile(&["gemm", "--m", "65536", "--k", "65536", "--n", "65536", "--schedule", "naive", "--emit", "bir"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("program gemm target=trn2"), "{}", &text[..200.min(text.len())]);
    assert!(text.lines().count() < 2000, "{} lines", text.lines().count());
    // 512 x 128 output tiles of 512 K steps each: the m loop runs all but its first two
    // iterations (the prologue's loads make those differ).
    let most = text
        .lines()
        .filter_map(|l| {
            l.trim().strip_prefix("loop ")?.split_whitespace().nth(1)?.strip_prefix('x')?.parse::<u64>().ok()
        })
        .max();
    assert_eq!(most, Some(510));
}

/// 1048576^3 signals one semaphore about 2.3e10 times: semaphores count in 64 bits, so it is
/// modeled, with the exact HBM traffic of the naive nest (every (m, n, k) step loads its A^T
/// tile and B tile) and in eight times the time of 524288^3 (eight times the steps, one
/// steady state).
#[test]
fn a_gemm_whose_semaphores_count_past_u32_is_modeled() {
    let run = |size: &str| {
        json(&["gemm", "--m", size, "--k", size, "--n", size, "--schedule", "naive", "--no-sim", "--json", "--quiet"])
    };
    let big = run("1048576");
    let (m, k, n) = (1u64 << 20, 1u64 << 20, 1u64 << 20);
    let a_loads = m * k * 2 * (n / 512);
    let b_loads = k * n * 2 * (m / 128);
    assert_eq!(big["hbm_bytes"], a_loads + b_loads + m * n * 4);
    assert_eq!(big["matmuls"], (m / 128) * (n / 512) * (k / 128));
    let half = run("524288");
    let t = |v: &serde_json::Value| v["modeled_time_us"].as_f64().unwrap();
    let ratio = t(&big) / t(&half);
    assert!((7.99..=8.0).contains(&ratio), "{ratio}");
}

/// A naive GEMM on trn1 (A transposed on the PE through PSUM, whose slots repeat every four
/// K chunks) is planned in loops with `--extrapolate` too, not reduced, and its figures are the
/// whole plan's. (Fitting reduced GEMMs along the nest, which it took before, is tested in the
/// driver, and from here by 1048576^3, whose ids pass u32.)
#[test]
fn a_gemm_with_pe_transposes_is_planned_in_loops() {
    let shape = ["gemm", "--m", "2048", "--k", "3000", "--n", "8192", "--schedule", "naive", "--target", "trn1"];
    let trace = std::env::temp_dir().join(format!("ntile-pe-{}.json", std::process::id()));
    let whole = json(&[&shape[..], &["--no-sim", "--json", "--trace", trace.to_str().unwrap()]].concat());
    let _ = std::fs::remove_file(&trace);
    let x = json(&[&shape[..], &["--no-sim", "--json", "--extrapolate"]].concat());
    let xr = &x["extrapolated"];
    assert_eq!((xr["reduced_plans"].as_u64(), xr["planned_in_loops"].as_bool()), (Some(1), Some(true)), "{xr}");
    assert!(xr["reduced_instructions"].as_u64().unwrap() * 2 < whole["penguin_instructions"].as_u64().unwrap());
    for key in ["matmuls", "bir_instructions", "penguin_instructions", "psum_groups", "hbm_bytes"] {
        assert_eq!(x[key], whole[key], "{key}");
    }
    let t = |v: &serde_json::Value| v["modeled_time_us"].as_f64().unwrap();
    assert!((t(&x) - t(&whole)).abs() <= 1e-9 * t(&whole), "{} vs {}", t(&x), t(&whole));
}

/// The summary of a GEMM planned in loops says so, with how much the planner emitted, and
/// names its bottleneck (the critical path followed through the loops).
#[test]
fn a_gemm_planned_in_loops_says_so() {
    let o = ntile(&["gemm", "--m", "4096", "--k", "1024", "--n", "4096", "--schedule", "naive", "--no-sim"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    // 32 x 8 output tiles of 8 K steps: 3 instructions per step, 2 per tile.
    let line = text.lines().find(|l| l.contains("planned in loops")).unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.trim_start().starts_with("planned in loops (") && line.contains(" of 6656 Penguin instructions emitted")
    );
    // 32 x 8 tiles of 512 columns, each K step a 128-row DMA-transposed A chunk and a B
    // chunk: the DMA queues are the bottleneck.
    let bottleneck = text.lines().find(|l| l.starts_with("  bottleneck ")).unwrap_or_else(|| panic!("{text}"));
    assert!(bottleneck.starts_with("  bottleneck dma: ") && bottleneck.contains("% of the modeled time"), "{text}");
    // Loops too short to skip (4 x 2 blocks): `--no-sim` plans the GEMM whole, which costs
    // less than in loops that skip nothing; `--extrapolate` plans it in loops all the same,
    // emitted whole, and the summary says so.
    let short = ["gemm", "--m", "2048", "--k", "1024", "--n", "4096", "--schedule", "blocked-mn", "--block-m", "512"];
    let short = [&short[..], &["--block-n", "2048", "--no-sim"]].concat();
    let o = ntile(&short);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stdout(&o).contains("planned in loops") && !stdout(&o).contains("not unrolled"), "{}", stdout(&o));
    let o = ntile(&[&short[..], &["--extrapolate"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    let line = text.lines().find(|l| l.contains("planned in loops")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("Penguin instructions emitted: no loop is long enough to skip), not unrolled"), "{line}");
}

/// `--no-sim` plans in loops only a nest that skips at least half of its steps: `hoisted` at
/// 4096x8192x8192 (64 K chunks per n step, 32 m tiles) is planned in loops, `blocked-mnk`
/// with 1024x2048x512 blocks (4 x 4 x 16 blocks) whole; both report the same figures as
/// with `--extrapolate`, which plans every explicit schedule in loops.
#[test]
fn no_sim_plans_in_loops_what_skips_at_least_half() {
    let run = |schedule: &[&str], extra: &[&str]| {
        let args =
            [&["gemm", "--m", "4096", "--k", "8192", "--n", "8192", "--json", "--quiet", "--schedule"], schedule];
        json(&[&args.concat()[..], &["--no-sim"], extra].concat())
    };
    let hoisted = run(&["hoisted"], &[]);
    assert_eq!(hoisted["extrapolated"]["planned_in_loops"], serde_json::json!(true), "{}", hoisted["extrapolated"]);
    assert!(hoisted["extrapolated"]["reduced_instructions"].as_u64() < Some(68608 / 2), "{}", hoisted["extrapolated"]);
    let blocks = ["blocked-mnk", "--block-m", "1024", "--block-n", "2048", "--block-k", "512"];
    let whole = run(&blocks, &[]);
    assert!(whole["extrapolated"].is_null(), "{}", whole["extrapolated"]);
    let looped = run(&blocks, &["--extrapolate"]);
    assert_eq!(looped["extrapolated"]["planned_in_loops"], serde_json::json!(true), "{}", looped["extrapolated"]);
    let t = |r: &serde_json::Value| r["modeled_time_us"].as_f64().unwrap_or_else(|| panic!("{r}"));
    assert!((t(&whole) - t(&looped)).abs() <= 1e-9 * t(&whole), "{} vs {}", t(&whole), t(&looped));
    assert_eq!(whole["hbm_bytes"], looped["hbm_bytes"]);
}

/// `auto` over a GEMM of more matmuls than its largest proxy (8192^3) weighs its candidates
/// on the proxy, even when the GEMM fits the budget, and plans its choice in loops; one of
/// fewer matmuls is searched whole, as before.
#[test]
fn auto_past_the_proxy_weighs_on_it_and_plans_its_choice_in_loops() {
    let big = json(&["gemm", "--m", "65536", "--k", "1024", "--n", "16384", "--no-sim", "--json", "--quiet"]);
    assert_eq!(big["auto"]["weighed_on"], serde_json::json!([8192, 1024, 8192]), "{}", big["auto"]);
    assert_eq!(big["extrapolated"]["planned_in_loops"], serde_json::json!(true), "{}", big["extrapolated"]);
    assert_eq!(big["matmuls"], serde_json::json!(512 * 32 * 8));
    let small = json(&["gemm", "--m", "8192", "--k", "1024", "--n", "16384", "--no-sim", "--json", "--quiet"]);
    assert!(small["auto"]["weighed_on"].is_null() && small["extrapolated"].is_null(), "{}", small["auto"]);
}
