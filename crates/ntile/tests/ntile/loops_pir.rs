//! Looped `.pir` files in the CLI: a function with a loop runs, verifies, compiles and
//! formats like its unrolled twin, and a malformed loop or a bad iteration is an error that
//! names the file line.

use crate::support::{code, ntile, stderr, stdout};
use test_support::{path_str, scratch, write_f32_npy};

const HEADER: &str = "\
kernel gemm_16x16x8
inputs t0, t1
outputs t2
tensor t0 \"a\" hbm fp32 [16, 16]
tensor t1 \"b\" hbm fp32 [16, 8]
tensor t2 \"c\" hbm fp32 [16, 8]
tensor t3 \"at\" sbuf bf16 [8, 32] @0
tensor t4 \"bs\" sbuf bf16 [8, 16] @64
tensor t5 \"acc\" psum fp32 [4, 32] @0
tensor t6 \"cs\" sbuf fp32 [4, 32] @96
";

/// C[16, 8] = A[16, 16] @ B[16, 8]: B loaded once, then one trip per 4 rows of C (load A^T
/// in two K sub-tiles, accumulate, copy out of PSUM, store). Canonical text, comments aside.
const LOOPED: &str = "\
; B once: both K sub-tiles.
i0 = dma_copy cast=rne dst=t4{p0[1, 8] +0 [1, 8]} src=t1{p0[8, 8] +0 [1, 8]}
i1 = dma_copy cast=rne dst=t4{p0[1, 8] +8 [1, 8]} src=t1{p0[8, 8] +64 [1, 8]}
; One trip per 4 rows of C.
loop i0 x4 {
  i2 = dma_copy cast=rne dst=t3{p0[1, 8] +0+8*i0 [1, 4]} src=t0{p0[1, 8] +0+64*i0 [16, 4]}
  i3 = dma_copy cast=rne dst=t3{p0[1, 8] +4+8*i0 [1, 4]} src=t0{p0[1, 8] +8+64*i0 [16, 4]}
  i4 = matmult perf=none pos=0,0 size=128,128 acc=start dst=t5{p0[1, 4] +0+8*i0 [1, 8]} stationary=t3{p0[1, 8] +0+8*i0 [1, 4]} moving=t4{p0[1, 8] +0 [1, 8]} after(i2+6*i0 raw, i0 raw)
  i5 = matmult perf=none pos=0,0 size=128,128 acc=stop dst=t5{p0[1, 4] +0+8*i0 [1, 8]} stationary=t3{p0[1, 8] +4+8*i0 [1, 4]} moving=t4{p0[1, 8] +8 [1, 8]} after(i4+6*i0 raw, i3+6*i0 raw, i1 raw)
  i6 = tensor_copy engine=act dst=t6{p0[1, 4] +0+8*i0 [1, 8]} src=t5{p0[1, 4] +0+8*i0 [1, 8]} after(i5+6*i0 raw)
  i7 = dma_copy cast=rne dst=t2{p0[8, 4] +0+32*i0 [1, 8]} src=t6{p0[1, 4] +0+8*i0 [1, 8]} after(i6+6*i0 raw) ; store
}
";

/// The same function unrolled by hand, without `after(...)` (the parser computes the edges).
fn flat() -> String {
    let mut s = String::from(HEADER);
    s += "i0 = dma_copy dst=t4{p0[1, 8] +0 [1, 8]} src=t1{p0[8, 8] +0 [1, 8]}\n";
    s += "i1 = dma_copy dst=t4{p0[1, 8] +8 [1, 8]} src=t1{p0[8, 8] +64 [1, 8]}\n";
    for j in 0..4 {
        let i = 2 + 6 * j;
        let (a, at, c) = (64 * j, 8 * j, 32 * j);
        s += &format!("i{i} = dma_copy dst=t3{{p0[1, 8] +{at} [1, 4]}} src=t0{{p0[1, 8] +{a} [16, 4]}}\n");
        s += &format!(
            "i{} = dma_copy dst=t3{{p0[1, 8] +{} [1, 4]}} src=t0{{p0[1, 8] +{} [16, 4]}}\n",
            i + 1,
            at + 4,
            a + 8
        );
        s += &format!(
            "i{} = matmult acc=start dst=t5{{p0[1, 4] +{at} [1, 8]}} stationary=t3{{p0[1, 8] +{at} [1, 4]}} \
             moving=t4{{p0[1, 8] +0 [1, 8]}}\n",
            i + 2
        );
        s += &format!(
            "i{} = matmult acc=stop dst=t5{{p0[1, 4] +{at} [1, 8]}} stationary=t3{{p0[1, 8] +{} [1, 4]}} \
             moving=t4{{p0[1, 8] +8 [1, 8]}}\n",
            i + 3,
            at + 4
        );
        s += &format!(
            "i{} = tensor_copy engine=act dst=t6{{p0[1, 4] +{at} [1, 8]}} src=t5{{p0[1, 4] +{at} [1, 8]}}\n",
            i + 4
        );
        s += &format!("i{} = dma_copy dst=t2{{p0[8, 4] +{c} [1, 8]}} src=t6{{p0[1, 4] +{at} [1, 8]}}\n", i + 5);
    }
    s
}

fn looped() -> String {
    format!("{HEADER}{LOOPED}")
}

/// The looped text without its comments.
fn canonical() -> String {
    looped()
        .lines()
        .filter(|l| !l.starts_with(';'))
        .map(|l| format!("{}\n", l.split(" ;").next().unwrap_or(l)))
        .collect()
}

#[test]
fn the_looped_text_is_its_unrolled_twin() {
    let lf = penguin::text::parse_looped(&looped()).unwrap();
    assert_eq!(lf.unrolled_len(), 26);
    assert_eq!(lf.expand().unwrap(), penguin::parse::parse(&flat()).unwrap());
}

#[test]
fn a_looped_pir_runs_verifies_compiles_and_formats_like_its_unrolled_twin() {
    let dir = scratch("loops-pir");
    let (lf, ff) = (dir.join("g.pir"), dir.join("flat.pir"));
    std::fs::write(&lf, looped()).unwrap();
    std::fs::write(&ff, flat()).unwrap();

    // Values exact in bf16 and in every fp32 partial sum: C is exactly A @ B.
    let a: Vec<f32> = (0..256).map(|i| ((i * 7 % 23) as f32 - 11.0) / 8.0).collect();
    let b: Vec<f32> = (0..128).map(|i| ((i * 5 % 19) as f32 - 9.0) / 4.0).collect();
    let (ap, bp) = (dir.join("a.npy"), dir.join("b.npy"));
    write_f32_npy(&ap, &[16, 16], &a);
    write_f32_npy(&bp, &[16, 8], &b);
    let run = |file: &std::path::Path, out: &str| {
        let c = dir.join(out);
        let ins = [format!("a={}", path_str(&ap)), format!("b={}", path_str(&bp)), format!("c={}", path_str(&c))];
        let o = ntile(&["run", path_str(file), "--input", &ins[0], "--input", &ins[1], "-o", &ins[2], "--json"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let mut report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        // Only the output paths differ.
        report["outputs"][0]["path"] = serde_json::Value::Null;
        (report, ntile::npy::read_f32(&c).unwrap())
    };
    let (looped_report, looped_c) = run(&lf, "c1.npy");
    let (flat_report, flat_c) = run(&ff, "c2.npy");
    assert_eq!(looped_c, flat_c);
    assert_eq!(looped_report, flat_report);
    let want: Vec<f32> = (0..16)
        .flat_map(|m| {
            let (a, b) = (&a, &b);
            (0..8).map(move |n| (0..16).map(|k| f64::from(a[m * 16 + k]) * f64::from(b[k * 8 + n])).sum::<f64>() as f32)
        })
        .collect();
    assert_eq!(looped_c.shape, vec![16, 8]);
    assert_eq!(looped_c.data, want);

    let o = ntile(&["verify", path_str(&lf)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let verdict =
        format!("{}: ok: kernel gemm_16x16x8 (7 tensors, 26 instructions unrolled, 1 loops)\n", path_str(&lf));
    assert_eq!(stdout(&o), verdict);

    // The Python API's cycle model reads it too: the twin's report.
    let model = |file: &std::path::Path| {
        let (src, program) = ntile::fmt::load_path(file).unwrap();
        let runnable = driver::Runnable::new(&src.name, program, None).unwrap();
        let options = driver::RunOptions::default();
        let mut report = runnable.run(&mut Vec::new(), &options).unwrap().report;
        report.kernel.clear();
        serde_json::to_value(report).unwrap()
    };
    assert_eq!(model(&lf), model(&ff));

    // `compile` lowers it loop by loop (its copies take the DMA queues in turn, so the loop is
    // unrolled by their period): BIR whose expansion has the twin's ops on every stream and HBM
    // layout, and which verifies and runs as the twin's program.
    let compiled = |file: &std::path::Path| {
        let o = ntile(&["compile", path_str(file)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        stdout(&o)
    };
    let (looped_bir, flat_bir) = (compiled(&lf), compiled(&ff));
    let lp = bir::text::parse_looped(&looped_bir).unwrap().expand().unwrap();
    let flat = bir::text::parse(&flat_bir).unwrap();
    assert_eq!(lp.hbm, flat.hbm);
    for e in bir::Engine::all() {
        let ops = |p: &bir::Program| p.stream(e).iter().map(|i| i.op.clone()).collect::<Vec<_>>();
        assert_eq!(ops(&lp), ops(&flat), "{}", e.name());
    }
    let compiled_file = dir.join("g.bir");
    std::fs::write(&compiled_file, &looped_bir).unwrap();
    let o = ntile(&["verify", path_str(&compiled_file)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let (bir_report, bir_c) = run(&compiled_file, "c3.npy");
    assert_eq!(bir_c, flat_c);
    assert_eq!(bir_report["modeled_time_us"], flat_report["modeled_time_us"]);
    let o = ntile(&["compile", path_str(&lf), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let json: bir::LoopedProgram = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(json.expand().unwrap(), lp);

    // `fmt` prints it back rolled, comments kept beside their lines; its JSON reads back.
    let o = ntile(&["fmt", path_str(&lf)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), looped());
    let json = dir.join("g.json");
    let o = ntile(&["fmt", path_str(&lf), "--json", "-o", path_str(&json)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = ntile(&["fmt", path_str(&json)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), canonical());
    // The unrolled twin formats as before: computed edges, no loops.
    let o = ntile(&["fmt", path_str(&ff)]);
    assert!(!stdout(&o).contains("loop") && stdout(&o).contains("after(i2 raw, i0 raw)"));
}

/// `ntile CMD FILE` on `text`: exit code 2 and the message.
fn fails(cmd: &str, text: &str) -> String {
    let dir = scratch("loops-pir-bad");
    let file = dir.join("bad.pir");
    std::fs::write(&file, text).unwrap();
    let o = ntile(&[cmd, path_str(&file)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    stderr(&o).replace(path_str(&file), "bad.pir")
}

#[test]
fn malformed_loops_and_bad_iterations_name_the_line() {
    // Syntax: the looped parser's message, for every command.
    let unclosed = looped().replace("\n}\n", "\n");
    for cmd in ["fmt", "verify", "run"] {
        assert_eq!(fails(cmd, &unclosed), "error: bad.pir:15:1: loop i0 is not closed (a `}` is missing)\n");
    }
    let twice = looped().replace("+0+64*i0", "+0+64*i0+1*i0");
    assert_eq!(fails("fmt", &twice), "error: bad.pir:16:82: `i0` appears twice in one parameter\n");
    // Without loop lines, the unrolled parser's message as before.
    assert_eq!(
        fails("verify", &flat().replace("acc=stop", "acc=nope")),
        "error: bad.pir:16:14: unknown accumulation flag `nope` (expected start, accu, stop)\n"
    );

    // A step that takes an iteration out of its tensor: the verifier names the iteration and
    // the line it comes from, and prints the error under that line of the looped text.
    let far = fails("verify", &looped().replace("+0+64*i0", "+0+80*i0"));
    assert!(
        far.starts_with(
            "error: bad.pir: 1 verifier error(s)\nbad.pir:16: i20: operand t0 reaches elements 240..=295 outside `a` \
             (256 elements)\n"
        ),
        "{far}"
    );
    assert!(far.contains("[16, 4]}\n; error: i20: operand t0 reaches"), "{far}");
    // An edge that a later trip points forward.
    assert_eq!(
        fails("run", &looped().replace("i2+6*i0 raw", "i2+7*i0 raw")),
        "error: bad.pir:18: instruction i16 depends on i16, which does not come before it\n"
    );
    // Too large to expand.
    assert_eq!(
        fails("run", &looped().replace("x4 {", "x5000000 {")),
        "error: bad.pir: the function unrolls to 30000002 instructions, more than the 4194304 ntile expands\n"
    );
    // A partition stepped below 0.
    assert_eq!(
        fails("verify", &looped().replace("dst=t6{p0[1, 4]", "dst=t6{p0-1*i0[1, 4]")),
        "error: bad.pir:20: i12: a loop moves a parameter of this instruction out of range\n"
    );
}

#[test]
fn looped_json_is_checked_like_the_text() {
    let dir = scratch("loops-pir-json");
    let lf = penguin::text::parse_looped(&looped()).unwrap();
    let json = serde_json::to_string_pretty(&lf).unwrap();
    let fmt = |text: &str| {
        let file = dir.join("f.json");
        std::fs::write(&file, text).unwrap();
        let o = ntile(&["fmt", path_str(&file)]);
        (code(&o), stdout(&o), stderr(&o).replace(path_str(&file), "f.json"))
    };
    assert_eq!(fmt(&json), (0, canonical(), String::new()));
    // A loop of no trips, a tensor listed under another name: refused, not printed.
    let zero = json.replacen("\"trips\": 4", "\"trips\": 0", 1);
    assert_eq!(fmt(&zero), (2, String::new(), "error: f.json: a loop has 0 trips\n".to_string()));
    let renamed = json.replacen("\"name\": \"b\"", "\"name\": \"a\"", 1);
    assert_eq!(
        fmt(&renamed),
        (2, String::new(), "error: f.json: t1: the tensor listed as \"b\" is named \"a\"\n".to_string())
    );
}

/// A looped function too large to expand is verified without expanding it: a valid one is
/// accepted at once, one whose last trip leaves its tensor is refused with exit 2.
#[test]
fn a_function_too_large_to_expand_is_verified_by_its_loops() {
    let dir = scratch("loops_pir_large");
    let trips = 2 * driver::program::pir_loops::MAX_RUN_UNROLLED;
    let text = |offset: &str| {
        format!(
            "kernel big\ntensor t0 \"x\" sbuf fp32 [128, 8] @0\nloop i0 x{trips} {{\n  i0 = memset engine=dve value=1 dst=t0{{p0[1, 128] {offset} [1, 8]}} after()\n}}\n"
        )
    };
    let (good, bad) = (dir.join("big.pir"), dir.join("bad.pir"));
    std::fs::write(&good, text("+0")).unwrap();
    std::fs::write(&bad, text("+0+1*i0")).unwrap();
    let o = ntile(&["verify", path_str(&good)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "{}: ok: kernel big (1 tensors, {trips} instructions unrolled, 1 loops; checked without expanding)\n",
            path_str(&good)
        )
    );
    let o = ntile(&["verify", path_str(&bad)]);
    assert_eq!(code(&o), 2);
    let want = format!(
        "i1: operand t0 reaches elements {}..{} of a partition outside `x` (8 per partition)",
        trips - 1,
        trips + 7
    );
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Many errors (placed from one table of the loops) and few (each placed by its own walk)
/// land on the line of the looped instruction they are iterations of.
#[test]
fn every_error_of_an_iteration_is_placed_on_its_line() {
    let dir = scratch("loops_pir_many_errors");
    for (trips, errors) in [(20u32, 18usize), (6, 4)] {
        let text = format!(
            "kernel many\ntensor t0 \"x\" sbuf fp32 [128, 16] @0\nloop i0 x{trips} {{\n  i0 = memset engine=dve value=1 dst=t0{{p0[1, 128] +0+8*i0 [1, 8]}} after()\n}}\n"
        );
        let file = dir.join(format!("many{trips}.pir"));
        std::fs::write(&file, text).unwrap();
        let o = ntile(&["verify", path_str(&file)]);
        assert_eq!(code(&o), 2);
        let err = stderr(&o);
        assert!(err.contains(&format!("{errors} verifier error(s)")), "{err}");
        let placed = err.lines().filter(|l| l.starts_with(&format!("{}:4: i", path_str(&file)))).count();
        assert_eq!(placed, errors, "{err}");
        assert_eq!(err.lines().filter(|l| l.starts_with("; error: i")).count(), errors, "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A GEMM's planned function with its loops (`ntile gemm --emit penguin`) compiles to BIR whose
/// engine streams keep them, and that program models and verifies as the unrolled one does.
#[test]
fn a_planned_gemm_with_loops_compiles_to_bir_with_loops() {
    let dir = scratch("loops-compile");
    let shape = ["gemm", "--m", "512", "--k", "1024", "--n", "2048", "--schedule", "blocked-mnk", "--emit"];
    let emit = |what: &str, name: &str| {
        let o = ntile(&[&shape[..], &[what]].concat());
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let file = dir.join(name);
        std::fs::write(&file, stdout(&o)).unwrap();
        file
    };
    let (looped, flat) = (emit("penguin", "g.pir"), emit("penguin-unrolled", "flat.pir"));
    let compile = |file: &std::path::Path, name: &str| {
        let out = dir.join(name);
        let o = ntile(&["compile", path_str(file), "-o", path_str(&out)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        out
    };
    let (looped_bir, flat_bir) = (compile(&looped, "g.bir"), compile(&flat, "flat.bir"));
    let text = std::fs::read_to_string(&looped_bir).unwrap();
    let streams_with_loops = text.split("\nstream ").filter(|s| s.contains("\n  loop i0 x")).count();
    assert!(streams_with_loops >= 4, "{text}");
    assert!(text.lines().count() < std::fs::read_to_string(&flat_bir).unwrap().lines().count());
    assert_eq!(code(&ntile(&["verify", path_str(&looped_bir)])), 0);
    let model = |file: &std::path::Path| {
        let o = ntile(&["run", path_str(file), "--no-sim", "--json"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        serde_json::from_str::<serde_json::Value>(&stdout(&o)).unwrap()
    };
    let (a, b) = (model(&looped_bir), model(&flat_bir));
    for key in ["modeled_time_us", "bir_instructions", "hbm_bytes"] {
        assert_eq!(a[key], b[key], "{key}");
    }
}
