//! `ntile gemm`'s report says what the kernel is and what bounds it, in one CLI vocabulary:
//! real tile shapes, HBM dtype, blocks, the read-once HBM bytes and the bottleneck, and the
//! trace / SVG / tile-grid outputs.

use crate::support::{code, ntile, stderr, stdout};
use clap::Parser as _;
use serde_json::Value;
use test_support::{path_str, scratch};

/// The hand-written example kernel.
const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/gemm_4x16x8.pir");

/// Run ntile in-process: its stdout and exit code.
fn run(args: &[&str]) -> (String, u8) {
    let cli = ntile::Cli::try_parse_from(std::iter::once("ntile").chain(args.iter().copied())).unwrap();
    ntile::run(&cli).unwrap()
}

fn report(args: &[&str]) -> Value {
    let mut all = vec!["gemm", "--json"];
    all.extend_from_slice(args);
    let (out, code) = run(&all);
    assert_eq!(code, 0);
    serde_json::from_str(&out).unwrap()
}

#[test]
fn a_decode_gemm_reads_each_byte_once_and_its_bound_says_so() {
    let (m, k, n) = (8u64, 4096u64, 4096u64);
    let v = report(&["--m", "8", "--k", "4096", "--n", "4096", "--no-sim"]);
    assert_eq!(v["hbm_dtype"], "bf16", "bf16 operands live in HBM as bf16");
    let once = m * k * 2 + k * n * 2 + m * n * 4;
    assert_eq!(v["hbm_read_once_bytes"].as_u64().unwrap(), once);
    let bound = v["io_lower_bound_bytes"].as_f64().unwrap();
    assert!(bound >= once as f64, "{bound} below the read-once {once}");
    let moved = v["hbm_bytes"].as_u64().unwrap();
    assert!(moved >= once && (moved as f64) < 1.05 * bound, "{moved} vs bound {bound}");
}

#[test]
fn the_default_hbm_dtype_is_the_matmul_dtype() {
    for (args, want) in [
        (&["--dtype", "bf16"][..], "bf16"),
        (&["--dtype", "fp8e4m3"][..], "fp8e4m3"),
        (&["--dtype", "fp32"][..], "fp32"),
        (&["--lhs-dtype", "bf16", "--rhs-dtype", "fp8e4m3"][..], "fp32"),
        (&["--dtype", "uint8"][..], "fp32"),
        (&["--dtype", "bf16", "--hbm-dtype", "fp32"][..], "fp32"),
    ] {
        let mut all = vec!["--m", "64", "--k", "64", "--n", "64", "--no-sim"];
        all.extend_from_slice(args);
        assert_eq!(report(&all)["hbm_dtype"], want, "{args:?}");
    }
    // bf16 in HBM: the loads move 2 bytes an element, C 4.
    let v = report(&["--m", "128", "--k", "128", "--n", "512", "--no-sim", "--schedule", "naive"]);
    assert_eq!(v["hbm_bytes"].as_u64().unwrap(), 128 * 128 * 2 + 128 * 512 * 2 + 128 * 512 * 4);
}

#[test]
fn float32_arrays_keep_cast_on_load() {
    let dir = scratch("report-npy");
    let (a, b) = (dir.join("a.npy"), dir.join("b.npy"));
    for (p, shape, len) in [(&a, "(4, 8)", 32), (&b, "(8, 4)", 32)] {
        let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header.as_bytes());
        bytes.extend((0..len).flat_map(|i| (i as f32 * 0.25).to_le_bytes()));
        std::fs::write(p, bytes).unwrap();
    }
    let v = report(&["--lhs", path_str(&a), "--rhs", path_str(&b)]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(v["hbm_dtype"], "fp32");
    assert_eq!(v["check"]["passed"], true);
}

#[test]
fn the_report_gives_real_tiles_blocks_and_the_bottleneck() {
    let v = report(&["--m", "4", "--k", "200", "--n", "8", "--no-sim", "--schedule", "naive"]);
    assert_eq!(v["tile_shape"], serde_json::json!([4, 8]));
    assert_eq!(v["output_tiles"], serde_json::json!([1, 1]));
    assert_eq!((v["k_steps"].as_u64(), v["k_step_rows"].as_u64()), (Some(2), Some(128)));
    assert!(v["blocks"].is_null() && v["loop_order"].is_null());
    let v = report(&[
        "--m",
        "300",
        "--k",
        "1000",
        "--n",
        "777",
        "--schedule",
        "blocked-mnk",
        "--block-m",
        "256",
        "--block-n",
        "512",
        "--block-k",
        "256",
        "--order",
        "n-outer",
    ]);
    assert_eq!(v["tile_shape"], serde_json::json!([128, 512]));
    assert_eq!(v["edge_tile_shape"], serde_json::json!([300 - 256, 777 - 512]));
    assert_eq!(v["blocks"], serde_json::json!({"m": 256, "n": 512, "k": 256}));
    assert_eq!(v["loop_order"], "n-outer");
    assert_eq!(v["lhs_transpose"], "dma");
    let bn = &v["bottleneck"];
    let shares = bn["critical_path"].as_object().unwrap();
    let total: f64 = shares.values().map(|s| s.as_f64().unwrap()).sum();
    assert!((total - 1.0).abs() < 1e-9, "shares add up to the modeled time: {total}");
    let top = shares
        .iter()
        .filter(|(k, _)| *k != "idle")
        .max_by(|a, b| a.1.as_f64().unwrap().total_cmp(&b.1.as_f64().unwrap()));
    assert_eq!(bn["engine"].as_str(), top.map(|(k, _)| k.as_str()));
    assert_eq!(bn["share"], *top.unwrap().1);
    // A large square GEMM is bound by the PE.
    let v = report(&[
        "--m",
        "2048",
        "--k",
        "2048",
        "--n",
        "2048",
        "--lhs-transposed",
        "--no-sim",
        "--schedule",
        "blocked-mnk",
    ]);
    assert_eq!(v["bottleneck"]["engine"], "pe", "{}", v["bottleneck"]);
    assert!(v["bottleneck"]["share"].as_f64().unwrap() > 0.5, "{}", v["bottleneck"]);
    // A decode GEMM is bound by the DMA that streams B.
    let v = report(&["--m", "8", "--k", "4096", "--n", "4096", "--no-sim"]);
    assert_eq!(v["bottleneck"]["engine"], "dma", "{}", v["bottleneck"]);
}

#[test]
fn the_summary_names_the_loop_and_the_bottleneck() {
    let (out, code) = run(&["gemm", "--m", "300", "--k", "1000", "--n", "777", "--no-sim", "--schedule", "blocked-mn"]);
    assert_eq!(code, 0);
    assert!(out.contains("3x2 output tiles of 128x512 (edge 44x265), 8 K steps of 128 rows"), "{out}");
    assert!(out.contains("  loop    blocked-mn (blocks m "), "{out}");
    assert!(out.contains("A and B bf16 in HBM"), "{out}");
    assert!(out.contains("x the read-once minimum"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("  bottleneck ") && l.contains("% of the modeled time")), "{out}");
}

#[test]
fn trace_svg_and_grid_speak_in_tiles() {
    let dir = scratch("report-outputs");
    let (trace, svg, grid) = (dir.join("t.json"), dir.join("t.svg"), dir.join("g.svg"));
    let o = ntile(&[
        "gemm",
        "--m",
        "512",
        "--k",
        "512",
        "--n",
        "1024",
        "--no-sim",
        "--schedule",
        "blocked-mn",
        "--block-m",
        "256",
        "--block-n",
        "512",
        "--transpose",
        "pe",
        "--trace",
        path_str(&trace),
        "--svg",
        path_str(&svg),
        "--svg-grid",
        path_str(&grid),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let t: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let svg = std::fs::read_to_string(&svg).unwrap();
    let grid = std::fs::read_to_string(&grid).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    let process = events.iter().find(|e| e["name"] == "process_name").unwrap();
    assert!(process["args"]["name"].as_str().unwrap().contains("512x512x1024"), "{process}");
    assert!(events.iter().any(|e| e["ph"] == "s") && events.iter().any(|e| e["ph"] == "f"));
    assert!(events.iter().any(|e| e["ph"] == "C" && e["name"] == "sbuf b_block0"), "a counter per buffer");
    let mm = events.iter().find(|e| e["name"] == "multiply_moving").unwrap();
    for key in ["m", "n", "k_step", "tensor", "planner_step"] {
        assert!(mm["args"][key].is_string(), "{key}: {mm}");
    }
    assert!(svg.contains("gemm 512x512x1024  bf16 x bf16 -&gt; fp32"), "title names the GEMM");
    assert!(svg.contains("blocked-mn (blocks m 256 n 512"));
    for class in ["load_a", "load_b", "store", "load_stationary"] {
        assert!(svg.contains(&format!("<rect class=\"{class}\"")), "{class}");
    }
    assert!(svg.contains("<g class=\"sbuf-occupancy\">") && svg.contains("<g class=\"tile-grid\""));
    assert!(grid.starts_with("<svg") && grid.matches("<rect class=\"tile\"").count() == 4 * 2);
    assert_eq!(
        grid.matches("<line class=\"block\"").count(),
        1 + 1 + 1,
        "one row and one column boundary, and the legend"
    );
}

#[test]
fn one_cli_vocabulary() {
    let dir = scratch("report-cli");
    let (a, b, c) = (dir.join("a.npy"), dir.join("b.npy"), dir.join("c.npy"));
    let o = ntile(&["gemm", "--m", "4", "--k", "16", "--n", "8", "--emit", "penguin"]);
    assert_eq!(code(&o), 0);
    // `run -o NAME=FILE` is `--output`.
    let write = |p: &std::path::Path, rows: usize, cols: usize| {
        let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header.as_bytes());
        bytes.extend((0..rows * cols).flat_map(|i| (i as f32).to_le_bytes()));
        std::fs::write(p, bytes).unwrap();
    };
    write(&a, 4, 16);
    write(&b, 16, 8);
    let input = |n: &str, p: &std::path::Path| format!("{n}={}", path_str(p));
    let o = ntile(&["run", EXAMPLE, "--input", &input("a", &a), "--input", &input("b", &b), "-o", &input("c", &c)]);
    let written = c.exists();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(written && stdout(&o).contains("wrote c"), "{}", stdout(&o));
    // `compile --json` is `--emit json`.
    let json = ntile(&["compile", EXAMPLE, "--json"]);
    let emit = ntile(&["compile", EXAMPLE, "--emit", "json"]);
    assert_eq!(code(&json), 0);
    assert_eq!(json.stdout, emit.stdout);
    // Help lists every dtype and the top-level examples.
    let help = stdout(&ntile(&["gemm", "--help"]));
    assert!(help.contains("uint8") && help.contains("fp8e4m3fn"), "{help}");
    let help = stdout(&ntile(&["--help"]));
    assert!(help.contains("Examples:") && help.contains("ntile gemm") && help.contains("ntile run"), "{help}");
}
