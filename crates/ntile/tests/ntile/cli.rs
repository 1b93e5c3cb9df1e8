//! The `ntile` binary as a user runs it: exit codes, `.npy` in and out, JSON, and an
//! independent numpy + ml_dtypes reference.

use crate::support::{code, ntile, stderr};
use test_support::{python, scratch, write_f32_npy};

#[test]
fn help_teaches_and_exits_zero() {
    let o = ntile(&["gemm", "--help"]);
    assert_eq!(code(&o), 0);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("--lhs-transposed") && text.contains("Examples:"), "{text}");
}

#[test]
fn bad_flags_exit_2_with_a_message() {
    for (args, needle) in [
        (&["gemm", "--bogus"][..], "--bogus"),
        (&["gemm", "--m", "0", "--no-sim"][..], "m = 0 is out of range"),
        (&["gemm", "--dtype", "fp64"][..], "unknown dtype `fp64`"),
        (&["gemm", "--target", "trn9"][..], "unknown target `trn9`"),
        (&["gemm", "--schedule", "magic"][..], "schedule `magic`"),
        (&["gemm", "--dtype", "fp8e4m3fn", "--target", "trn2", "--no-sim"][..], "only supported on trn3"),
        (&["gemm", "--out-dtype", "int32", "--no-sim"][..], "out dtype int32"),
        (&["gemm", "--lhs", "a.npy"][..], "--rhs"),
        (&["frobnicate"][..], "frobnicate"),
    ] {
        let o = ntile(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn bad_npy_files_exit_2_and_leave_no_output() {
    let dir = scratch("badnpy");
    let good_b = dir.join("b.npy");
    write_f32_npy(&good_b, &[8, 4], &[1.0; 32]);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("garbage.npy", b"definitely not numpy".to_vec(), "not a valid .npy"),
        ("empty.npy", Vec::new(), "not a valid .npy"),
    ];
    for (name, bytes, needle) in cases {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        let out = dir.join("c.npy");
        let o = ntile(&[
            "gemm",
            "--lhs",
            p.to_str().unwrap(),
            "--rhs",
            good_b.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 2, "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{name}: {}", stderr(&o));
        assert!(!out.exists(), "{name} left an output file");
    }
    // Truncated data.
    let t = dir.join("trunc.npy");
    write_f32_npy(&t, &[4, 8], &[1.0; 32]);
    let bytes = std::fs::read(&t).unwrap();
    std::fs::write(&t, &bytes[..bytes.len() - 5]).unwrap();
    let o = ntile(&["gemm", "--lhs", t.to_str().unwrap(), "--rhs", good_b.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("truncated"), "{}", stderr(&o));
    // Wrong rank and shapes that do not chain.
    let r3 = dir.join("r3.npy");
    write_f32_npy(&r3, &[2, 2, 2], &[1.0; 8]);
    let o = ntile(&["gemm", "--lhs", r3.to_str().unwrap(), "--rhs", good_b.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("expected a non-empty 2-D array"), "{}", stderr(&o));
    let a = dir.join("a.npy");
    write_f32_npy(&a, &[4, 7], &[1.0; 28]);
    let o = ntile(&["gemm", "--lhs", a.to_str().unwrap(), "--rhs", good_b.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("shapes do not chain"), "{}", stderr(&o));
    let missing = dir.join("missing.npy");
    let o = ntile(&["gemm", "--lhs", missing.to_str().unwrap(), "--rhs", good_b.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot read"), "{}", stderr(&o));
}

#[test]
fn output_into_a_missing_directory_exits_2() {
    let dir = scratch("nodir");
    let out = dir.join("no/such/dir/c.npy");
    let o = ntile(&["gemm", "--m", "4", "--k", "4", "--n", "4", "-o", out.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot write"));
}

#[test]
fn svg_writes_a_timeline_and_fails_like_trace_on_a_missing_directory() {
    let dir = scratch("svg");
    let out = dir.join("timeline.svg");
    let o = ntile(&["gemm", "--m", "64", "--k", "64", "--n", "64", "--no-sim", "--svg", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
    assert!(svg.contains("id=\"row-pe\"") && svg.contains("<rect class=\"multiply_moving\""), "{svg}");

    for flag in ["--trace", "--svg"] {
        let missing = dir.join("no/such/dir/out");
        let o = ntile(&["gemm", "--m", "64", "--k", "64", "--n", "64", "--no-sim", flag, missing.to_str().unwrap()]);
        assert_eq!(code(&o), 2, "{flag}: {}", stderr(&o));
        let message = stderr(&o);
        assert!(message.contains("cannot write") && message.contains(missing.to_str().unwrap()), "{flag}: {message}");
        assert!(!missing.exists());
    }
}

#[test]
fn json_report_has_the_spec_keys() {
    let o = ntile(&["gemm", "--m", "130", "--k", "300", "--n", "600", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for key in [
        "target",
        "m",
        "k",
        "n",
        "lhs_dtype",
        "rhs_dtype",
        "out_dtype",
        "perf_mode",
        "sparsity",
        "schedule",
        "penguin_instructions",
        "bir_instructions",
        "matmuls",
        "psum_groups",
        "max_live_psum_banks",
        "sbuf_peak_bytes_per_partition",
        "hbm_bytes",
        "check",
    ] {
        assert!(v.get(key).is_some(), "missing key {key}");
    }
    assert_eq!(v["matmuls"], 2 * 2 * 3);
    assert_eq!(v["check"]["passed"], true);
    let o = ntile(&["gemm", "--m", "130", "--k", "300", "--n", "600", "--json", "--no-sim"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["check"].is_null());
}

#[test]
fn emit_prints_each_ir() {
    let o = ntile(&["gemm", "--m", "4", "--k", "200", "--n", "8", "--emit", "penguin"]);
    assert_eq!(code(&o), 0);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with("kernel gemm"), "{text}");
    assert!(text.contains("acc=start") && text.contains("acc=accu|stop"), "{text}");
    let o = ntile(&["gemm", "--m", "4", "--k", "200", "--n", "8", "--emit", "bir"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("stream pe:") && text.contains("load_stationary") && text.contains("wait("), "{text}");
}

/// numpy + ml_dtypes make the inputs and judge the output: an independent reference.
#[test]
fn matches_numpy_with_ml_dtypes_rounding() {
    let dir = scratch("numpy");
    let (a, b, c) = (dir.join("a.npy"), dir.join("b.npy"), dir.join("c.npy"));
    python(
        &format!(
            "import numpy as np\nrng=np.random.default_rng(7)\n\
         np.save({a:?}, rng.standard_normal((150, 333), dtype=np.float32))\n\
         np.save({b:?}, rng.standard_normal((333, 530), dtype=np.float32))",
            a = a.to_str().unwrap(),
            b = b.to_str().unwrap()
        ),
        &[],
    );
    for (dtype, npdtype) in [("bf16", "ml_dtypes.bfloat16"), ("fp16", "np.float16"), ("fp32", "np.float32")] {
        let o = ntile(&[
            "gemm",
            "--lhs",
            a.to_str().unwrap(),
            "--rhs",
            b.to_str().unwrap(),
            "--dtype",
            dtype,
            "-o",
            c.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 0, "{dtype}: {}", stderr(&o));
        let verdict = python(
            &format!(
                "import numpy as np, ml_dtypes\n\
             a=np.load({a:?}); b=np.load({b:?}); c=np.load({c:?})\n\
             ar=a.astype({npdtype}).astype(np.float64); br=b.astype({npdtype}).astype(np.float64)\n\
             ref=ar@br; mag=np.abs(ar)@np.abs(br)\n\
             ok=np.all(np.abs(c.astype(np.float64)-ref) <= 2*333*np.finfo(np.float32).eps*mag)\n\
             print(c.dtype, c.shape, bool(ok))",
                a = a.to_str().unwrap(),
                b = b.to_str().unwrap(),
                c = c.to_str().unwrap()
            ),
            &[],
        );
        assert_eq!(verdict.trim(), "float32 (150, 530) True", "{dtype}");
    }
}
