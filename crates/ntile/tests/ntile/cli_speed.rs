//! The binary's `--no-check`, `--quiet`, non-finite inputs through the check, and
//! `ntile sweep` on CSV files, as a user runs them.

use crate::support::{code, ntile, stderr, stdout};
use test_support::{path_str, scratch, write_f32_npy};

/// Deterministic values in [-1, 1).
fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len).map(|i| ((i * 2654435761 + seed * 40503) % 2001) as f32 / 1000.0 - 1.0).collect()
}

#[test]
fn no_check_simulates_and_reports_a_null_check() {
    let o = ntile(&["gemm", "--m", "128", "--k", "256", "--n", "128", "--no-check", "--json", "--quiet"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["check"].is_null());
    assert!(v["wall_ms"]["simulate"].as_f64().unwrap() > 0.0);
    let o = ntile(&["gemm", "--m", "128", "--k", "256", "--n", "128", "--no-check"]);
    assert!(stdout(&o).contains("check   skipped (--no-check)"), "{}", stdout(&o));
    // Off a terminal nothing shows on stderr, progress included.
    assert_eq!(stderr(&o), "");
}

#[test]
fn the_check_prints_the_bound_it_applies() {
    let o = ntile(&["gemm", "--m", "128", "--k", "256", "--n", "128", "--out-dtype", "bf16"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("all 16384 elements; bound 2*K*eps32*(|A|@|B|) = 6.104e-5*(|A|@|B|) + u_bf16"), "{text}");
    let o = ntile(&["gemm", "--m", "128", "--k", "256", "--n", "128", "--out-dtype", "bf16", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &v["check"];
    assert_eq!(c["bound"]["out_rel"], 2f64.powi(-8));
    assert!(c["max_err_over_bound"].as_f64().unwrap() <= 1.0);
    assert_eq!(
        (c["checked"].as_u64(), c["elements"].as_u64(), c["method"].as_str()),
        (Some(16384), Some(16384), Some("exact"))
    );
}

/// NaN and infinities in A and B give NaN and infinite elements of C at the reference's
/// positions with its signs: the check compares them by class and passes, both element by
/// element and on the sampled path.
#[test]
fn non_finite_inputs_pass_when_classes_match() {
    let dir = scratch("nonfinite");
    for (m, k, n, method) in [(64, 32, 48, "exact"), (512, 513, 512, "sampled+freivalds")] {
        let mut a = values(m * k, 1);
        let mut b = values(k * n, 2);
        a[3 * k + 5] = f32::NAN;
        a[10 * k + 7] = f32::INFINITY;
        b[7 * n + 2] = 0.0; // inf * 0 = NaN at C[10, 2]
        b[20 * n + 9] = f32::NEG_INFINITY;
        let (ap, bp) = (dir.join("a.npy"), dir.join("b.npy"));
        write_f32_npy(&ap, &[m, k], &a);
        write_f32_npy(&bp, &[k, n], &b);
        let o = ntile(&["gemm", "--lhs", path_str(&ap), "--rhs", path_str(&bp), "--json"]);
        assert_eq!(code(&o), 0, "{m}x{k}x{n}: {}{}", stdout(&o), stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let c = &v["check"];
        assert_eq!(c["passed"], true, "{c}");
        assert_eq!(c["method"], method);
        // Rows 3 and 10 and column 9 of C are non-finite.
        assert_eq!(c["nonfinite"].as_u64(), Some((2 * n + m - 2) as u64), "{c}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sweep_models_every_layer_of_both_csv_layouts() {
    let dir = scratch("sweep");
    let ours = dir.join("layers.csv");
    std::fs::write(&ours, "name,m,k,n,schedule\nup,256,512,1024,\ndown,256,1024,512,blocked-mnk\n").unwrap();
    let scale = dir.join("gpt2.csv");
    std::fs::write(&scale, "Layer Name, M, N, K,\nQKT, 1024, 1024, 64,\nQKTV, 1024, 64, 1024,\n").unwrap();
    let o = ntile(&["sweep", path_str(&ours), "--schedule", "blocked-mn", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[0]["schedule"].as_str(), rows[1]["schedule"].as_str()), (Some("blocked-mn"), Some("blocked-mnk")));
    let sum: u64 = rows.iter().map(|r| r["hbm_bytes"].as_u64().unwrap()).sum();
    assert_eq!(v["totals"]["hbm_bytes"].as_u64(), Some(sum));
    let o = ntile(&["sweep", path_str(&scale), "--target", "trn1"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("ntile sweep: 2 layers on trn1"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("QKTV") && l.contains(" 1024      64 ")), "{text}");
    assert!(text.lines().last().unwrap().starts_with("total"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sweep_bad_rows_exit_2_naming_the_row() {
    let dir = scratch("sweepbad");
    let p = dir.join("bad.csv");
    std::fs::write(&p, "name,m,k,n\nok,128,128,128\nbroken,128,abc,128\n").unwrap();
    let o = ntile(&["sweep", path_str(&p)]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("line 3 (broken), column k: `abc` is not a positive integer"), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let o = ntile(&["sweep", path_str(&dir.join("missing.csv"))]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot read"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The PE products run on several threads (`NTILE_THREADS`, default every core), which must
/// not change a single bit of C: every product is the same and lands in PSUM in program order.
#[test]
fn threaded_products_give_the_same_bytes() {
    let dir = scratch("threads");
    for dtype in ["fp32", "bf16"] {
        let mut outs = Vec::new();
        for threads in ["1", "2", "4"] {
            let c = dir.join(format!("c{threads}.npy"));
            let o = std::process::Command::new(env!("CARGO_BIN_EXE_ntile"))
                .args(["gemm", "--m", "384", "--k", "640", "--n", "1100", "--dtype", dtype, "--schedule", "blocked-mn"])
                .args(["-o", path_str(&c)])
                .env("NTILE_THREADS", threads)
                .output()
                .unwrap();
            assert_eq!(code(&o), 0, "{dtype} x{threads}: {}", stderr(&o));
            outs.push(std::fs::read(&c).unwrap());
        }
        assert!(outs.iter().all(|o| o == &outs[0]), "{dtype}: thread counts disagree");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
