//! Hardware profiles end to end: `ntile hw show`, `--hw` overrides and their errors, and
//! `ntile calibrate` recovering a perturbed profile from "measurements" it generated.

use crate::support::{code, ntile, stderr, stdout};
use ntile::calibrate::{lower_row, parse_csv};
use penguin::{HwProfile, Target};
use test_support::{path_str, scratch};

const HEADER: &str = "m,k,n,dtype,schedule,block_m,block_n,block_k,lhs_transposed,target,measured_us";

/// Small GEMMs whose times depend on both a PE and a DMA figure.
const SHAPES: [&str; 5] = [
    "128,128,128,bf16,naive,,,,false,trn2",
    "256,512,512,bf16,hoisted,,,,true,trn2",
    "1024,2048,2048,bf16,blocked-mn,,,,true,trn2",
    "512,1024,1024,bf16,blocked-mnk,256,512,512,false,trn2",
    "256,256,256,bf16,auto,,,,false,trn2",
];

fn modeled_us(gemm: &[&str], hw: Option<&str>) -> f64 {
    let mut args = vec!["gemm", "--no-sim", "--json"];
    args.extend_from_slice(gemm);
    if let Some(h) = hw {
        args.extend_from_slice(&["--hw", h]);
    }
    let o = ntile(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["modeled_time_us"].as_f64().unwrap()
}

#[test]
fn hw_show_lists_every_key_with_unit_and_source() {
    let o = ntile(&["hw", "show", "--target", "trn2"]);
    assert_eq!(code(&o), 0);
    let text = stdout(&o);
    for key in penguin::target::KEYS.iter().chain(penguin::target::GEOMETRY) {
        let line = text.lines().find(|l| l.split_whitespace().next() == Some(key.name)).expect(key.name);
        assert!(line.contains(key.unit), "{line}");
    }
    assert!(text.contains("dma_fixed_ns") && text.contains("S11"));
    let o = ntile(&["hw", "show", "--target", "trn1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["pe_ghz"]["value"].as_f64(), Some(2.8));
    assert_eq!(v["dma_fixed_ns"]["unit"].as_str(), Some("ns"));
    assert_eq!(v["target"].as_str(), Some("trn1"));
}

#[test]
fn hw_overrides_change_the_modeled_time_and_bad_ones_exit_2_naming_the_key() {
    let dir = scratch("hw-override");
    let shape = ["--m", "128", "--k", "128", "--n", "128", "--schedule", "naive"];
    let base = modeled_us(&shape, None);
    // The output of `hw show --json` loads back unchanged.
    let shown = dir.join("shown.json");
    std::fs::write(&shown, stdout(&ntile(&["hw", "show", "--json"]))).unwrap();
    assert_eq!(modeled_us(&shape, Some(path_str(&shown))), base);
    // A fixed DMA latency 1 us shorter: the latency-bound kernel (load, matmul, store) saves
    // it at least twice.
    let fast = dir.join("fast.json");
    std::fs::write(&fast, r#"{"dma_fixed_ns": {"value": 300, "unit": "ns"}}"#).unwrap();
    let faster = modeled_us(&shape, Some(path_str(&fast)));
    assert!(base - faster >= 2.0 - 1e-9, "{base} us -> {faster} us");
    for (text, key) in [
        (r#"{"dma_fixed": 1}"#, "dma_fixed"),
        (r#"{"dma_fixed_ns": {"value": 1.3, "unit": "us"}}"#, "dma_fixed_ns"),
        (r#"{"hbm_bytes_per_ns": -5}"#, "hbm_bytes_per_ns"),
        (r#"{"sbuf_partition_bytes": 1024}"#, "sbuf_partition_bytes"),
    ] {
        let bad = dir.join("bad.json");
        std::fs::write(&bad, text).unwrap();
        let o = ntile(&["gemm", "--no-sim", "--hw", path_str(&bad)]);
        assert_eq!(code(&o), 2, "{text}");
        assert!(stderr(&o).contains(&format!("`{key}`")), "{text}: {}", stderr(&o));
    }
    let o = ntile(&["gemm", "--no-sim", "--hw", path_str(&dir.join("missing.json"))]);
    assert_eq!(code(&o), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn calibration_recovers_a_perturbed_profile() {
    let truth = HwProfile { pe_ghz: 2.4 * 0.8, dma_fixed_ns: 1300.0 * 1.3, ..Target::Trn2.profile() };
    // "Measure" each GEMM: the kernel the default profile plans, timed under the truth.
    let plain = format!("{HEADER}\n{}\n", SHAPES.iter().map(|s| format!("{s},1")).collect::<Vec<_>>().join("\n"));
    let rows = parse_csv(&plain, Target::Trn2).unwrap();
    let mut csv = format!("{HEADER}\n");
    for (row, shape) in rows.iter().zip(SHAPES) {
        let program = lower_row(row, &Target::Trn2.profile()).unwrap();
        let us = sim::model_with(&program, &truth).unwrap().total_us();
        csv += &format!("{shape},{us}\n");
    }
    let dir = scratch("calibrate");
    let measured = dir.join("measured.csv");
    let out = dir.join("profile.json");
    std::fs::write(&measured, csv).unwrap();
    let o = ntile(&[
        "calibrate",
        path_str(&measured),
        "-o",
        path_str(&out),
        "--target",
        "trn2",
        "--fit",
        "pe_ghz,dma_fixed_ns",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report = stdout(&o);
    assert!(report.contains("mean absolute percentage error: before"), "{report}");
    for i in 1..=SHAPES.len() {
        assert!(report.lines().any(|l| l.trim_start().starts_with(&format!("{i} "))), "row {i}: {report}");
    }
    let fitted = ntile::hw::load_profile(Some(&out), Target::Trn2).unwrap();
    for (key, want) in [("pe_ghz", truth.pe_ghz), ("dma_fixed_ns", truth.dma_fixed_ns)] {
        let got = fitted.get(key).unwrap();
        assert!((got / want - 1.0).abs() < 0.02, "{key}: fitted {got}, truth {want}\n{report}");
    }
    // Keys that were not fitted keep their values.
    assert_eq!(fitted.hbm_bytes_per_ns, 360.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_measurement_rows_exit_2_naming_the_row_and_column() {
    let dir = scratch("calibrate-bad");
    let good = "128,128,128,bf16,naive,,,,false,trn2,5";
    for (row, want) in [
        ("0,128,128,bf16,naive,,,,false,trn2,5", "line 3, column `m`"),
        ("128,128,128,bf17,naive,,,,false,trn2,5", "line 3, column `dtype`"),
        ("128,128,128,bf16,tiled,,,,false,trn2,5", "line 3, column `schedule`"),
        ("128,128,128,bf16,blocked-mn,x,,,false,trn2,5", "line 3, column `block_m`"),
        ("128,128,128,bf16,naive,,,,maybe,trn2,5", "line 3, column `lhs_transposed`"),
        ("128,128,128,bf16,naive,,,,false,trn1,5", "line 3, column `target`"),
        ("128,128,128,bf16,naive,,,,false,trn2,-1", "line 3, column `measured_us`"),
        ("128,128,128,bf16,naive,,,,false,trn2", "line 3: 10 cells"),
    ] {
        let csv = dir.join("m.csv");
        std::fs::write(&csv, format!("{HEADER}\n{good}\n{row}\n")).unwrap();
        let o = ntile(&["calibrate", path_str(&csv), "-o", path_str(&dir.join("p.json"))]);
        assert_eq!(code(&o), 2, "{row}");
        assert!(stderr(&o).contains(want), "{row}: {}", stderr(&o));
        assert!(!dir.join("p.json").exists());
    }
    let csv = dir.join("m.csv");
    std::fs::write(&csv, "m,k,n\n1,2,3\n").unwrap();
    let o = ntile(&["calibrate", path_str(&csv), "-o", path_str(&dir.join("p.json"))]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("column `dtype`"), "{}", stderr(&o));
    std::fs::write(&csv, format!("{HEADER}\n{good}\n")).unwrap();
    let o = ntile(&["calibrate", path_str(&csv), "-o", path_str(&dir.join("p.json")), "--fit", "psum_banks"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("`psum_banks`"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_takes_the_same_overrides_as_gemm() {
    let dir = scratch("hw-run");
    let kernel = format!("{}/../../examples/gemm_4x16x8.pir", env!("CARGO_MANIFEST_DIR"));
    let run_us = |hw: Option<&str>| {
        let mut args = vec!["run", kernel.as_str(), "--no-sim", "--json"];
        if let Some(h) = hw {
            args.extend_from_slice(&["--hw", h]);
        }
        let o = ntile(&args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        v["modeled_time_us"].as_f64().unwrap()
    };
    let base = run_us(None);
    // The kernel is a load, a matmul and a store in a row: a fixed DMA latency 1 us shorter
    // saves it at least twice.
    let fast = dir.join("fast.json");
    std::fs::write(&fast, r#"{"dma_fixed_ns": 300}"#).unwrap();
    let faster = run_us(Some(path_str(&fast)));
    assert!(base - faster >= 2.0 - 1e-9, "{base} us -> {faster} us");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"pe_ghz": 0}"#).unwrap();
    let o = ntile(&["run", kernel.as_str(), "--no-sim", "--hw", path_str(&bad)]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("`pe_ghz`"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}
