//! Rolled GEMMs through the CLI: a rolled `.bir` file runs, verifies and formats like its
//! unrolled twin, and `--emit penguin` prints the plan rolled, which lowers and runs like the
//! unrolled function. (Rolling generated programs is tested in `crates/driver/tests/driver`.)

use codegen::{GemmConfig, Schedule};
use penguin::{DType, Target};
use test_support::{path_str, plan_gemm_fitting, scratch, write_f32_npy};

use crate::support::{code, ntile, stderr, stdout};

#[test]
fn a_rolled_file_runs_verifies_and_formats_like_its_unrolled_twin() {
    let dir = scratch("loops");
    let shape = ["--m", "512", "--k", "512", "--n", "1024", "--schedule", "blocked-mnk"];
    let emit = |what: &str| {
        let o = ntile(&[&["gemm"][..], &shape, &["--emit", what]].concat());
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        stdout(&o)
    };
    let (looped, flat) = (emit("bir"), emit("bir-unrolled"));
    assert!(looped.contains("  loop i0 x") && looped.contains("*i0"), "{looped}");
    assert!(!flat.contains("loop i0"));
    assert!(looped.lines().count() + 40 < flat.lines().count(), "{looped}");
    // The looped text is the roll of the unrolled one, origins dropped.
    let unrolled = bir::text::parse(&flat).unwrap();
    assert_eq!(looped, driver::program::bir_loops::rolled_text(&unrolled));
    let (lf, ff) = (dir.join("g.bir"), dir.join("flat.bir"));
    std::fs::write(&lf, &looped).unwrap();
    std::fs::write(&ff, &flat).unwrap();

    let (a, b) = (dir.join("a.npy"), dir.join("b.npy"));
    write_f32_npy(&a, &[512, 512], &(0..512 * 512).map(|i| (i % 13) as f32 / 8.0 - 0.7).collect::<Vec<_>>());
    write_f32_npy(&b, &[512, 1024], &(0..512 * 1024).map(|i| (i % 7) as f32 / 4.0 - 0.6).collect::<Vec<_>>());
    let run = |file: &std::path::Path, out: &str| {
        let c = dir.join(out);
        let ins = [format!("a={}", path_str(&a)), format!("b={}", path_str(&b)), format!("c={}", path_str(&c))];
        let o = ntile(&["run", path_str(file), "--input", &ins[0], "--input", &ins[1], "-o", &ins[2], "--json"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let mut report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        // Only the output paths differ.
        report["outputs"][0]["path"] = serde_json::Value::Null;
        (report, std::fs::read(c).unwrap())
    };
    let (looped_report, looped_c) = run(&lf, "c1.npy");
    let (flat_report, flat_c) = run(&ff, "c2.npy");
    assert_eq!(looped_c, flat_c);
    assert_eq!(looped_report, flat_report);
    assert_eq!(looped_report["bir_instructions"], serde_json::json!(unrolled.num_insts()));

    let o = ntile(&["verify", path_str(&lf)]);
    assert_eq!(code(&o), 0);
    let loops = looped.lines().filter(|l| l.trim_start().starts_with("loop ")).count();
    let streams = looped.lines().filter(|l| l.starts_with("stream ")).count();
    let want = format!(
        "{}: ok: program gemm for trn2 ({} instructions unrolled, {loops} loops, on {streams} streams)\n",
        path_str(&lf),
        unrolled.num_insts()
    );
    assert_eq!(stdout(&o), want);

    // fmt keeps comments beside their lines and is idempotent.
    let commented = looped.replacen("  loop i0", "; the first loop\n  loop i0", 1).replacen(" {\n", " { ; opens\n", 1);
    std::fs::write(&lf, &commented).unwrap();
    let o = ntile(&["fmt", path_str(&lf)]);
    assert_eq!(code(&o), 0);
    assert_eq!(stdout(&o), commented);
    // And converts to JSON (the looped program's own).
    let o = ntile(&["fmt", path_str(&lf), "--json"]);
    let back: bir::LoopedProgram = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(back, bir::text::parse_looped(&looped).unwrap());
    // ... which reads back as the looped program.
    let json = dir.join("g.json");
    std::fs::write(&json, stdout(&o)).unwrap();
    let o = ntile(&["fmt", path_str(&json)]);
    assert_eq!(code(&o), 0);
    assert_eq!(stdout(&o), looped);
}

/// `--emit penguin` prints the planned function rolled into loops: it parses back, expands to
/// `--emit penguin-unrolled` exactly, lowers (looped) to the rolled lowering of the unrolled
/// function, and `ntile run` times both files the same.
#[test]
fn emit_penguin_prints_the_plan_rolled_and_it_lowers_and_runs_like_the_unrolled_one() {
    let dir = scratch("loops_pir_emit");
    let shape = ["--m", "256", "--k", "4096", "--n", "1024", "--schedule", "naive"];
    let emit = |what: &str| {
        let o = ntile(&[&["gemm"][..], &shape, &["--emit", what]].concat());
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        stdout(&o)
    };
    let (looped, flat) = (emit("penguin"), emit("penguin-unrolled"));
    assert!(looped.contains("\nloop i0 x") && looped.contains("*i0"), "{looped}");
    assert!(!flat.contains("loop i0"));
    assert!(3 * looped.lines().count() < flat.lines().count(), "{looped}");
    let f = penguin::parse::parse(&flat).unwrap();
    let lf = penguin::text::parse_looped(&looped).unwrap();
    assert_eq!(lf.expand().unwrap(), f);
    // It is the plan rolled along the schedule's nest (`GemmPlan::looped`).
    let mut cfg = GemmConfig::new(256, 4096, 1024, DType::Bf16, Target::Trn2);
    cfg.input_dtype = DType::Bf16;
    cfg.blocks = codegen::BlockSizes::for_schedule(Schedule::Naive);
    assert_eq!(lf, plan_gemm_fitting(&cfg).unwrap().looped());
    // Lowering the looped function by expanding it is rolling the lowering of the unrolled
    // one; lowering it natively (loop by loop) gives the same ops on every stream.
    let lp = bir::lower_looped_expanded(&lf, Target::Trn2).unwrap();
    let program = bir::lower(penguin::verify(&f).unwrap(), Target::Trn2).unwrap();
    assert_eq!(lp, driver::program::bir_loops::rolled(&program));
    assert_eq!(lp.expand().unwrap(), driver::program::bir_loops::without_origins(&program));
    let native = bir::lower_looped(&lf, Target::Trn2).unwrap().expand().unwrap();
    for e in bir::Engine::all() {
        let ops = |p: &bir::Program| p.stream(e).iter().map(|i| i.op.clone()).collect::<Vec<_>>();
        assert_eq!(ops(&native), ops(&program), "{}", e.name());
    }

    let run = |text: &str, name: &str| {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let o = ntile(&["run", path_str(&file), "--no-sim", "--json"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        serde_json::from_str::<serde_json::Value>(&stdout(&o)).unwrap()
    };
    let (a, b) = (run(&looped, "g.pir"), run(&flat, "flat.pir"));
    assert_eq!(a, b);
    assert_eq!(a["bir_instructions"], serde_json::json!(program.num_insts()));
}
