//! `ntile run` times any program: the cycle model's report (`--json`), timelines (`--trace`,
//! `--svg`) and `--no-sim`, on the examples and on generated GEMMs, whose figures must equal
//! what `ntile gemm` reported for the same program.

use std::path::{Path, PathBuf};

use crate::support::{code, ntile, stderr, stdout};
use serde_json::Value;
use test_support::{path_str, scratch};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(name: &str) -> String {
    path_str(&root().join("examples").join(name)).to_string()
}

/// Run `ntile` and parse its stdout as the JSON report.
fn json_of(args: &[&str]) -> Value {
    let o = ntile(args);
    assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", stdout(&o)))
}

/// A little-endian float32 `.npy` file.
fn write_f32(path: &Path, shape: &[usize], values: &[f32]) {
    let dims: String = shape.iter().map(|d| format!("{d},")).collect();
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({dims}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(path, bytes).unwrap();
}

/// Every busy fraction of the report, in `[0, 1]`.
fn busy(v: &Value) -> Vec<f64> {
    ["pe", "act", "dve", "pool", "dma"]
        .iter()
        .map(|e| {
            let f = v["engine_busy"][e].as_f64().unwrap_or_else(|| panic!("engine_busy.{e} missing: {v}"));
            assert!((0.0..=1.0).contains(&f), "engine_busy.{e} = {f}");
            f
        })
        .collect()
}

#[test]
fn every_example_is_modeled_without_data() {
    let dir = scratch("run_examples");
    for name in ["gemm_4x16x8.pir", "gemm_4x16x8.bir", "offloaded_fma.pir", "offloaded_memcast.pir", "gather.pir"] {
        let (trace, svg) = (dir.join(format!("{name}.trace.json")), dir.join(format!("{name}.svg")));
        let v = json_of(&[
            "run",
            &example(name),
            "--no-sim",
            "--json",
            "--trace",
            path_str(&trace),
            "--svg",
            path_str(&svg),
        ]);
        assert_eq!(v["simulated"], false, "{name}");
        assert!(v["dma_bytes"].is_null(), "{name}");
        assert_eq!(v["outputs"], Value::Array(Vec::new()), "{name}");
        assert!(v["modeled_time_us"].as_f64().unwrap() > 0.0, "{name}: {v}");
        assert!(v["hbm_bytes"].as_u64().unwrap() > 0, "{name}: {v}");
        assert!(v["bir_instructions"].as_u64().unwrap() > 0, "{name}: {v}");
        // Something moved data, so the DMA queues were busy.
        assert!(busy(&v)[4] > 0.0, "{name}: {v}");
        let matmuls = v["matmuls"].as_u64().unwrap();
        if name.starts_with("gemm") {
            assert_eq!(matmuls, 2, "{name}");
            let hfu = v["hfu"].as_f64().unwrap();
            assert!(hfu > 0.0 && hfu <= 1.0, "{name}: hfu {hfu}");
            assert!(busy(&v)[0] > 0.0, "{name}: {v}");
        } else {
            assert_eq!(matmuls, 0, "{name}");
            assert!(v["hfu"].is_null(), "{name}: {v}");
        }
        assert_eq!(v["penguin_instructions"].is_null(), name.ends_with(".bir"), "{name}");
        let t: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
        let events = t["traceEvents"].as_array().unwrap();
        assert!(events.iter().any(|e| e["ph"] == "X"), "{name}: no instruction slices in the trace");
        // Every instruction slice says which line of the file it came from.
        for e in events.iter().filter(|e| e["ph"] == "X" && e["name"] != "wait") {
            let source = e["args"]["source"].as_str().unwrap_or_else(|| panic!("{name}: no source in {e}"));
            let (file, line) = source.rsplit_once(':').unwrap();
            assert!(file.ends_with(name), "{name}: {source}");
            assert!(line.parse::<u32>().unwrap() >= 1, "{name}: {source}");
        }
        assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"), "{name}");
    }
    // The summary follows the first line without --json.
    let o = ntile(&["run", &example("gemm_4x16x8.bir"), "--no-sim"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "modeled gemm_4x16x8 on trn2 without data (--no-sim): 10 instructions, 2 matmuls, 896 bytes to or from HBM"
    );
    assert!(lines[1].starts_with("  model   ") && lines[1].contains(" us modeled, HFU "), "{text}");
    assert_eq!(lines.len(), 7, "{text}");
    assert!(lines[2].starts_with("          pe   [") && lines[6].starts_with("          dma  ["), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With data the run prints what it printed before, then the model; `--json` reports both.
#[test]
fn a_simulated_run_reports_the_model_too() {
    let dir = scratch("run_sim_model");
    let (a, b, c) = (dir.join("a.npy"), dir.join("b.npy"), dir.join("c.npy"));
    write_f32(&a, &[4, 16], &(0..64).map(|i| i as f32 / 64.0).collect::<Vec<_>>());
    write_f32(&b, &[16, 8], &(0..128).map(|i| 1.0 - i as f32 / 128.0).collect::<Vec<_>>());
    let (ia, ib, oc) = (format!("a={}", a.display()), format!("b={}", b.display()), format!("c={}", c.display()));
    let file = example("gemm_4x16x8.pir");
    let modeled = json_of(&["run", &file, "--no-sim", "--json"]);
    let v = json_of(&["run", &file, "--input", &ia, "--input", &ib, "--output", &oc, "--json"]);
    assert_eq!(v["simulated"], true);
    assert_eq!(v["dma_bytes"], 512);
    assert_eq!(v["outputs"][0]["name"], "c");
    assert_eq!(v["outputs"][0]["shape"], serde_json::json!([4, 8]));
    assert!(c.exists());
    // The model does not depend on the data.
    for key in ["modeled_time_us", "hfu", "engine_busy", "hbm_bytes", "bir_instructions", "matmuls"] {
        assert_eq!(v[key], modeled[key], "{key}");
    }
    std::fs::remove_file(&c).unwrap();
    let o = ntile(&["run", &file, "--input", &ia, "--input", &ib, "--output", &oc]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    let head = format!(
        "ran gemm_4x16x8 on trn2: 10 instructions, 2 matmuls, 512 bytes moved by DMA\n  wrote c fp32 [4, 8] to {}\n  model   ",
        c.display()
    );
    assert!(text.starts_with(&head), "{text}");
    assert_eq!(text.lines().count(), 8, "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A generated GEMM run through `ntile run` (as Penguin or as BIR) reports the figures
/// `ntile gemm` reported for it.
#[test]
fn a_generated_gemm_is_timed_as_gemm_times_it() {
    let dir = scratch("run_vs_gemm");
    for target in ["trn2", "trn1"] {
        let shape = ["--m", "130", "--k", "300", "--n", "70", "--target", target, "--schedule", "blocked-mn"];
        let gemm = json_of(&[&["gemm"][..], &shape, &["--no-sim", "--json"]].concat());
        for (emit, ext) in [("penguin", "pir"), ("bir", "bir")] {
            let o = ntile(&[&["gemm"][..], &shape, &["--emit", emit]].concat());
            assert_eq!(code(&o), 0, "{}", stderr(&o));
            let file = dir.join(format!("g_{target}.{ext}"));
            std::fs::write(&file, &o.stdout).unwrap();
            let run = json_of(&["run", path_str(&file), "--target", target, "--no-sim", "--json"]);
            for key in [
                "target",
                "modeled_time_us",
                "hfu",
                "engine_busy",
                "hbm_bytes",
                "bir_instructions",
                "matmuls",
                "sbuf_peak_bytes_per_partition",
            ] {
                assert_eq!(run[key], gemm[key], "{target} {emit}: {key}");
            }
            if emit == "penguin" {
                assert_eq!(run["penguin_instructions"], gemm["penguin_instructions"], "{target}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_refuses_output_without_a_simulation() {
    let dir = scratch("run_no_sim_errors");
    let c = dir.join("c.npy");
    let oc = format!("c={}", c.display());
    let o = ntile(&["run", &example("gemm_4x16x8.pir"), "--no-sim", "--output", &oc]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--output c=... cannot be used with --no-sim"), "{}", stderr(&o));
    assert!(!c.exists());
    // No input is read to model, so an input given with --no-sim is refused, not ignored.
    let ia = format!("z={}", c.display());
    let o = ntile(&["run", &example("gemm_4x16x8.pir"), "--no-sim", "--input", &ia]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--input z=... cannot be used with --no-sim"), "{}", stderr(&o));
    // Without --no-sim the inputs are still required.
    let o = ntile(&["run", &example("gemm_4x16x8.bir"), "--json"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("input `a` is not given"), "{}", stderr(&o));
    // Timelines into a directory that does not exist.
    for flag in ["--trace", "--svg"] {
        let missing = dir.join("missing/t.out");
        let o = ntile(&["run", &example("gather.pir"), "--no-sim", flag, path_str(&missing)]);
        assert_eq!(code(&o), 2, "{flag}: {}", stderr(&o));
        assert!(stderr(&o).contains(&format!("cannot write {}", missing.display())), "{flag}: {}", stderr(&o));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
