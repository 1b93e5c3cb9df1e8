//! `ntile nki` end to end: an example kernel file traced (by the embedded tracer, with the
//! `python3` on PATH), built, simulated on `.npy` inputs and checked against an f64 product;
//! modeled by shape with `--json`; `--emit penguin` showing the loops; a kernel error at its
//! line. Where `python3` has no numpy, every run must say so and exit 2 instead.

use std::path::{Path, PathBuf};
use std::process::Command;

use test_support::{path_str, scratch, write_f32_npy};

use crate::support::{code, ntile, stderr, stdout};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/nki")
}

/// Whether the `python3` on PATH imports numpy (the tracer needs it).
fn has_numpy() -> bool {
    Command::new("python3").args(["-c", "import numpy"]).output().is_ok_and(|o| o.status.success())
}

/// The float32 payload of a `.npy` file ntile wrote.
fn read_f32(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    bytes[10 + len..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Small integers: exact products and sums in fp32.
fn ints(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7 + seed * 5) % 9) as f32 - 4.0).collect()
}

fn no_numpy(o: &std::process::Output) {
    assert_eq!(code(o), 2, "{}", stderr(o));
    assert!(stderr(o).contains("which has no numpy (pip install numpy)"), "{}", stderr(o));
}

#[test]
fn a_kernel_file_runs_on_npy_inputs_and_writes_its_result() {
    let dir = scratch("nki-run");
    let (k, m, n) = (256usize, 128usize, 1024usize);
    let (a, b) = (ints(k * m, 1), ints(k * n, 2));
    write_f32_npy(&dir.join("a.npy"), &[k, m], &a);
    write_f32_npy(&dir.join("b.npy"), &[k, n], &b);
    let file = examples().join("legacy/matmul.py");
    let (fa, fb, fc) = (dir.join("a.npy"), dir.join("b.npy"), dir.join("c.npy"));
    let o = ntile(&[
        "nki",
        path_str(&file),
        "matmul_tiled",
        "--input",
        &format!("lhsT={}", path_str(&fa)),
        "--input",
        &format!("rhs={}", path_str(&fb)),
        "-o",
        &format!("result={}", path_str(&fc)),
    ]);
    if !has_numpy() {
        return no_numpy(&o);
    }
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("ran matmul_tiled on trn2: "), "{out}");
    assert!(out.contains(&format!("  wrote result fp32 [{m}, {n}] to ")), "{out}");
    assert!(out.contains("  alloc   site") && out.contains("matmul.py:") && out.contains(" psum "), "{out}");
    assert!(out.contains(" us modeled"), "{out}");
    let c = read_f32(&fc);
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k).map(|kk| f64::from(a[kk * m + i]) * f64::from(b[kk * n + j])).sum();
            assert_eq!(f64::from(c[i * n + j]), want, "c[{i}, {j}]");
        }
    }
}

#[test]
fn a_kernel_modeled_by_shape_reports_json_and_emits_its_loops() {
    let path = examples().join("current/matmul.py");
    let file = path_str(&path);
    let shapes = ["--shape", "lhsT=1024x256:bf16", "--shape", "rhs=1024x2048:bf16"];
    let mut args = vec!["nki", &file, "matmul_hoisted", "--json"];
    args.extend(shapes);
    let o = ntile(&args);
    if !has_numpy() {
        return no_numpy(&o);
    }
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(r["kernel"], "matmul_hoisted");
    assert_eq!(r["simulated"], false);
    assert_eq!(r["matmuls"], 2 * 4 * 8);
    assert!(r["modeled_time_us"].as_f64().unwrap() > 0.0);
    assert!(r["times"]["tracing_s"].as_f64().unwrap() > 0.0);
    let sites = r["allocations"].as_array().unwrap();
    assert!(sites.iter().any(|s| s["buffer"] == "psum") && sites.iter().all(|s| s["buffers"].as_u64() >= Some(1)));
    let mut args = vec!["nki", &file, "matmul_hoisted", "--emit", "penguin"];
    args.extend(shapes);
    let o = ntile(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("kernel matmul_hoisted"), "{text}");
    assert!(text.lines().any(|l| l.trim_start().starts_with("loop ")), "{text}");
}

#[test]
fn a_kernel_error_exits_2_naming_the_kernels_line() {
    let dir = scratch("nki-error");
    let kernel = "\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def bad(a):
    out = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    if t:
        nl.store(out, value=t)
    return out
";
    let file = dir.join("bad.py");
    std::fs::write(&file, kernel).unwrap();
    let o = ntile(&["nki", path_str(&file), "bad", "--shape", "a=128x128:fp32"]);
    if !has_numpy() {
        return no_numpy(&o);
    }
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("bad.py:9"), "{err}");
    let o = ntile(&["nki", path_str(&file), "nope", "--shape", "a=128x128:fp32"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("has no kernel 'nope' (kernels: bad)"), "{}", stderr(&o));
}

#[test]
fn a_kernel_launched_on_two_cores_adds_exactly_and_reports_each_core() {
    let dir = scratch("nki-two-cores");
    let (rows, cols) = (512usize, 256usize);
    let (a, b) = (ints(rows * cols, 3), ints(rows * cols, 4));
    let (fa, fb, fc) = (dir.join("a.npy"), dir.join("b.npy"), dir.join("c.npy"));
    write_f32_npy(&fa, &[rows, cols], &a);
    write_f32_npy(&fb, &[rows, cols], &b);
    let (fa, fb) = (format!("a={}", path_str(&fa)), format!("b={}", path_str(&fb)));
    let file = examples().join("current/two_cores.py");
    let out_arg = format!("out={}", path_str(&fc));
    let trace = dir.join("t.json");
    let base = ["nki", path_str(&file), "add_halves", "--input", &fa, "--input", &fb];
    let o = ntile(&[&base[..], &["--grid", "2", "-o", &out_arg, "--trace", path_str(&trace)]].concat());
    if !has_numpy() {
        return no_numpy(&o);
    }
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("ran add_halves on trn2 x 2 cores: "), "{out}");
    assert!(out.contains("  core 1\n  alloc   site"), "{out}");
    assert!(out.contains("  cores   2 physical cores sharing HBM (725 GB/s)"), "{out}");
    assert!(out.contains("          core 1: ") && out.contains("HBM 768.0 KiB"), "{out}");
    let c = read_f32(&fc);
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_eq!(c, want);
    let timeline = std::fs::read_to_string(&trace).unwrap();
    assert!(timeline.contains("\"pid\":1"), "the trace has no process for core 1");

    // trn1 has one core per kernel; a grid the tracer cannot read is a usage error.
    let o = ntile(&[&base[..], &["--grid", "2", "--target", "trn1"]].concat());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("launching add_halves on 2 NeuronCores: trn1 runs one NeuronCore per kernel"));
    let o = ntile(&[&base[..], &["--grid", "two"]].concat());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--grid 'two': expected integers, nc(N) and spmd_dim(...)"), "{}", stderr(&o));
}
