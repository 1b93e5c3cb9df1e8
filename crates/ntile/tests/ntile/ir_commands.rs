//! The IR commands of the `ntile` binary on the examples and filetests: `verify`, `fmt`,
//! `compile` and `run` (inputs, outputs, bit patterns, races, bad files), and the examples
//! run as the README shows them.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::{code, ntile, stderr, stdout};
use rand::{Rng as _, SeedableRng as _};
use test_support::{path_str, scratch};

fn ntile_stdin(args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_ntile"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ntile binary runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// A little-endian `.npy` file of `descr` elements.
fn write_npy(path: &Path, descr: &str, shape: &[usize], data: &[u8]) {
    let dims: String = shape.iter().map(|d| format!("{d},")).collect();
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    std::fs::write(path, bytes).unwrap();
}

fn write_f32(path: &Path, shape: &[usize], values: &[f32]) {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    write_npy(path, "<f4", shape, &data);
}

/// The f32 payload of an `.npy` file ntile wrote (header length from the v1 header).
fn read_f32(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    let header = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    bytes[10 + header..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn random(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

#[test]
fn gemm_emit_penguin_and_bir_run_to_the_same_bytes_as_gemm() {
    let dir = scratch("gemm");
    let (a, b) = (dir.join("a.npy"), dir.join("b.npy"));
    write_f32(&a, &[130, 300], &random(130 * 300, 1));
    write_f32(&b, &[300, 70], &random(300 * 70, 2));
    let shape = ["--m", "130", "--k", "300", "--n", "70"];
    let c = dir.join("c.npy");
    let o =
        ntile(&[&["gemm"][..], &shape, &["--lhs", path_str(&a), "--rhs", path_str(&b), "-o", path_str(&c)]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let c_bytes = std::fs::read(&c).unwrap();
    for emit in ["penguin", "bir"] {
        let o = ntile(&[&["gemm"][..], &shape, &["--emit", emit]].concat());
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let ir = dir.join(format!("g.{}", if emit == "bir" { "bir" } else { "pir" }));
        std::fs::write(&ir, &o.stdout).unwrap();
        let out = dir.join(format!("c_{emit}.npy"));
        let (ia, ib, oc) = (format!("a={}", a.display()), format!("b={}", b.display()), format!("c={}", out.display()));
        let o = ntile(&["run", path_str(&ir), "--input", &ia, "--input", &ib, "--output", &oc]);
        assert_eq!(code(&o), 0, "{emit}: {}", stderr(&o));
        assert!(stdout(&o).contains("wrote c fp32 [130, 70]"), "{}", stdout(&o));
        assert!(std::fs::read(&out).unwrap() == c_bytes, "ntile run of --emit {emit} differs from ntile gemm");
    }
}

#[test]
fn the_examples_run_as_the_readme_shows() {
    let dir = scratch("examples");
    let (av, bv) = (random(4 * 16, 3), random(16 * 8, 4));
    let (a, b) = (dir.join("a.npy"), dir.join("b.npy"));
    write_f32(&a, &[4, 16], &av);
    write_f32(&b, &[16, 8], &bv);
    let bf = |v: f32| f64::from(penguin::DType::Bf16.round_trip(v));
    let mut outputs = Vec::new();
    for ext in ["pir", "bir"] {
        let example = test_support::files::root().join(format!("examples/gemm_4x16x8.{ext}"));
        let o = ntile(&["verify", path_str(&example)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let c = dir.join(format!("c_{ext}.npy"));
        let (ia, ib, oc) = (format!("a={}", a.display()), format!("b={}", b.display()), format!("c={}", c.display()));
        let o = ntile(&["run", path_str(&example), "--input", &ia, "--input", &ib, "--output", &oc]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        // Then the cycle model's summary (run_timing.rs).
        assert!(
            stdout(&o).starts_with(&format!("ran gemm_4x16x8 on trn2: 10 instructions, 2 matmuls, 512 bytes moved by DMA\n  wrote c fp32 [4, 8] to {}\n  model   ", c.display())),
            "{}",
            stdout(&o)
        );
        let got = read_f32(&c);
        for m in 0..4 {
            for n in 0..8 {
                let want: f64 = (0..16).map(|k| bf(av[m * 16 + k]) * bf(bv[k * 8 + n])).sum();
                let err = (f64::from(got[m * 8 + n]) - want).abs();
                assert!(err <= 1e-5, "c[{m}, {n}] = {} but the fp64 reference is {want}", got[m * 8 + n]);
            }
        }
        outputs.push(std::fs::read(&c).unwrap());
    }
    assert!(outputs[0] == outputs[1], "the .pir and .bir examples give different bytes");
    // The .pir example's canonical form and its lowering are valid files too.
    let o = ntile(&["fmt", path_str(&test_support::files::root().join("examples/gemm_4x16x8.pir"))]);
    assert!(stdout(&o).contains("after(i4 raw, i1 raw, i3 raw)"), "{}", stdout(&o));
    let compiled = dir.join("g.bir");
    let o = ntile(&[
        "compile",
        path_str(&test_support::files::root().join("examples/gemm_4x16x8.pir")),
        "-o",
        path_str(&compiled),
    ]);
    assert_eq!((code(&o), stdout(&o)), (0, String::new()), "{}", stderr(&o));
    assert_eq!(code(&ntile(&["verify", path_str(&compiled)])), 0);
}

#[test]
fn verify_prints_located_errors_beside_their_lines() {
    let file = test_support::files::root().join("tests/filetests/penguin/rule08_memories.pir");
    let o = ntile(&["verify", path_str(&file)]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.contains("rule08_memories.pir: 5 verifier error(s)"), "{err}");
    assert!(err.contains("rule08_memories.pir:9: i1: Result buffer of matmult must be psum!"), "{err}");
    let listing: Vec<&str> = err.lines().collect();
    let at = listing.iter().position(|l| l.starts_with("i1 = matmult")).unwrap();
    assert_eq!(listing[at + 1], "; error: Result buffer of matmult must be psum!", "{err}");

    let file = test_support::files::root().join("tests/filetests/bir/rule05_matmul.bir");
    let o = ntile(&["verify", path_str(&file)]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.contains("rule05_matmul.bir:6: pe[0] multiply_moving: no LoadStationary before it"), "{err}");
    assert!(err.contains("\n; error: no LoadStationary before it\n"), "{err}");

    let o =
        ntile(&["verify", path_str(&test_support::files::root().join("tests/filetests/penguin/syntax_bad_tile.pir"))]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("syntax_bad_tile.pir:5:54: expected `,`, found `8`"), "{}", stderr(&o));
}

#[test]
fn fmt_reads_stdin_and_converts_between_text_and_json() {
    let text = std::fs::read(test_support::files::root().join("examples/gemm_4x16x8.bir")).unwrap();
    let o = ntile_stdin(&["fmt", "-"], &text);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let canonical = stdout(&o);
    assert!(
        without_comments(&canonical).starts_with("program gemm_4x16x8 target=trn2 hbm_size=896 sbuf_peak=80\n"),
        "{canonical}"
    );
    let o = ntile_stdin(&["fmt", "-", "--json"], canonical.as_bytes());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let json = stdout(&o);
    assert!(json.trim_start().starts_with('{'), "{json}");
    let o = ntile_stdin(&["fmt", "-"], json.as_bytes());
    // JSON has no comments; the code is the same.
    assert_eq!(stdout(&o), without_comments(&canonical));

    let pir = std::fs::read(test_support::files::root().join("examples/gemm_4x16x8.pir")).unwrap();
    let o = ntile_stdin(&["fmt", "-", "--json"], &pir);
    let o = ntile_stdin(&["fmt", "-"], &o.stdout);
    let o2 = ntile_stdin(&["fmt", "-"], &pir);
    assert_eq!((code(&o), stdout(&o)), (0, without_comments(&stdout(&o2))));
}

/// A text with its `;` comments (and the lines left empty by them) removed.
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|l| penguin::parse::split_comment(l).0.trim_end())
        .filter(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Every comment of a text, in order, trimmed.
fn comments_of(text: &str) -> Vec<String> {
    text.lines().filter_map(|l| penguin::parse::split_comment(l).1).map(|c| c.trim().to_string()).collect()
}

#[test]
fn fmt_keeps_every_comment_and_is_idempotent() {
    for example in ["examples/gemm_4x16x8.pir", "examples/gemm_4x16x8.bir", "examples/gather.pir"] {
        let path = test_support::files::root().join(example);
        let source = std::fs::read_to_string(&path).unwrap();
        let o = ntile(&["fmt", path_str(&path)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let once = stdout(&o);
        assert!(comments_of(&source).len() >= 3, "{example} has too few comments to test");
        // All of them; in another order only where the canonical order of streams differs.
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        assert_eq!(sorted(comments_of(&once)), sorted(comments_of(&source)), "{example}:\n{once}");
        // Formatting the output again changes nothing.
        let twice = stdout(&ntile_stdin(&["fmt", "-"], once.as_bytes()));
        assert_eq!(twice, once, "{example}");
    }
    // A comment stays above the line it was written above.
    let o = ntile(&["fmt", path_str(&test_support::files::root().join("examples/gather.pir"))]);
    let text = stdout(&o);
    let at = text.lines().position(|l| l.starts_with("i0 = dma_gather")).unwrap();
    assert_eq!(text.lines().nth(at - 1), Some("; idx: 128 entries (stride 1), one element each."), "{text}");
}

#[test]
fn compile_emits_bir_or_json() {
    let example = test_support::files::root().join("examples/gemm_4x16x8.pir");
    let o = ntile(&["compile", path_str(&example), "--target", "trn1"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("program gemm_4x16x8 target=trn1"), "{}", stdout(&o));
    let o = ntile(&["compile", path_str(&example), "--emit", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kernel_name"], "gemm_4x16x8");
    let o = ntile(&["compile", path_str(&test_support::files::root().join("examples/gemm_4x16x8.bir"))]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("`ntile compile` takes a Penguin function"), "{}", stderr(&o));
    let o = ntile(&[
        "compile",
        path_str(&test_support::files::root().join("tests/filetests/bir/lower_sbuf_capacity.pir")),
        "--target",
        "trn1",
    ]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot lower for trn1: tensor `big` needs 200000 bytes"), "{}", stderr(&o));
}

#[test]
fn run_checks_its_inputs() {
    let dir = scratch("inputs");
    let example = path_str(&test_support::files::root().join("examples/gemm_4x16x8.pir")).to_string();
    let (a, b) = (dir.join("a.npy"), dir.join("b.npy"));
    write_f32(&a, &[4, 16], &random(64, 5));
    write_f32(&b, &[16, 8], &random(128, 6));
    let wrong_shape = dir.join("ws.npy");
    write_f32(&wrong_shape, &[16, 4], &random(64, 7));
    let ints = dir.join("i.npy");
    write_npy(&ints, "<i4", &[4, 16], &[0; 256]);
    let ia = format!("a={}", a.display());
    let ib = format!("b={}", b.display());
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--input".into(), ia.clone()], "input `b` is not given (pass --input b=FILE.npy)"),
        (
            vec![
                "--input".into(),
                ia.clone(),
                "--input".into(),
                ib.clone(),
                "--input".into(),
                format!("z={}", a.display()),
            ],
            "`z` is not an HBM tensor",
        ),
        (
            vec!["--input".into(), format!("a={}", wrong_shape.display()), "--input".into(), ib.clone()],
            "shape [16, 4] but tensor `a` is [4, 16]",
        ),
        (
            vec!["--input".into(), format!("a={}", ints.display()), "--input".into(), ib.clone()],
            "holds <i4 but tensor `a` is fp32",
        ),
        (
            vec!["--input".into(), ia.clone(), "--input".into(), ib.clone(), "--input".into(), ia.clone()],
            "--input a is given twice",
        ),
        (vec!["--input".into(), "a".into()], "expected NAME=FILE.npy"),
        (
            vec![
                "--input".into(),
                ia,
                "--input".into(),
                ib,
                "--output".into(),
                format!("q={}", dir.join("q.npy").display()),
            ],
            "`q` is not an HBM tensor",
        ),
    ];
    for (args, needle) in cases {
        let mut all = vec!["run".to_string(), example.clone()];
        all.extend(args);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let o = ntile(&refs);
        assert_eq!(code(&o), 2, "{all:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{all:?}: {}", stderr(&o));
    }
    assert!(!dir.join("q.npy").exists());
}

#[test]
fn run_takes_bit_patterns_and_writes_native_types() {
    // y = x, for a bf16 tensor given as uint16 bit patterns, and an int32 tensor.
    let dir = scratch("bits");
    let program = dir.join("copy.bir");
    std::fs::write(
        &program,
        "program copy target=trn2\n\
         hbm \"x\" bf16 [2, 4] @0 input\nhbm \"y\" bf16 [2, 4] @64 output\n\
         hbm \"i\" int32 [2, 2] @128 input\nhbm \"j\" int32 [2, 2] @192 output\n\
         sem s0 \"loaded\"\n\
         stream dma0:\n  dma_copy dst=sbuf.bf16[p0:2:1 @0 [1, 4]] src=hbm.bf16[p0:2:4 @0 [1, 4]] signal(s0)\n\
         \x20 dma_copy dst=sbuf.int32[p0:2:1 @64 [1, 2]] src=hbm.int32[p0:2:2 @128 [1, 2]] signal(s0)\n\
         stream dma1:\n  dma_copy dst=hbm.bf16[p0:2:4 @64 [1, 4]] src=sbuf.bf16[p0:2:1 @0 [1, 4]] wait(s0>=2)\n\
         \x20 dma_copy dst=hbm.int32[p0:2:2 @192 [1, 2]] src=sbuf.int32[p0:2:1 @64 [1, 2]] wait(s0>=2)\n",
    )
    .unwrap();
    let bits: Vec<u8> = [0x3f80u16, 0xbf80, 0x4000, 0x7f80, 0x0001, 0x8000, 0x3e00, 0x4049]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let ints: Vec<u8> = [7i32, -3, i32::MAX, i32::MIN].iter().flat_map(|v| v.to_le_bytes()).collect();
    let (x, i, y, j) = (dir.join("x.npy"), dir.join("i.npy"), dir.join("y.npy"), dir.join("j.npy"));
    write_npy(&x, "<u2", &[2, 4], &bits);
    write_npy(&i, "<i4", &[2, 2], &ints);
    let args = [
        "run".to_string(),
        program.display().to_string(),
        format!("--input=x={}", x.display()),
        format!("--input=i={}", i.display()),
        format!("--output=y={}", y.display()),
        format!("--output=j={}", j.display()),
    ];
    let o = ntile(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let y_bytes = std::fs::read(&y).unwrap();
    assert!(String::from_utf8_lossy(&y_bytes[..64]).contains("'descr': '<u2'"));
    assert!(y_bytes.ends_with(&bits));
    let j_bytes = std::fs::read(&j).unwrap();
    assert!(String::from_utf8_lossy(&j_bytes[..64]).contains("'descr': '<i4'"));
    assert!(j_bytes.ends_with(&ints));
}

#[test]
fn bad_ir_files_exit_2_with_a_located_message() {
    let dir = scratch("bad");
    let cases: Vec<(&str, &[u8], &str)> = vec![
        ("latin1.pir", b"kernel k\ntensor t0 \"\xe9\" hbm fp32 [1]\n", "latin1.pir:2:12: the file is not UTF-8 text"),
        ("mystery.txt", b"; a comment\nfrobnicate\n", "cannot tell which IR this is"),
        ("empty.pir", b"", "empty.pir:1:1: expected `kernel NAME`, found end of file"),
        ("trunc.json", b"{\"kernel_name\": ", "trunc.json:1:16: invalid JSON"),
        (
            "bad.bir",
            b"program p target=trn2\nstream pe:\n  0: load_stationary src=sbuf.bf16[p0:8:1 @0 [1, 4]] perf=fast\n",
            "bad.bir:3:54: unknown perf mode `fast`",
        ),
        (
            "huge.pir",
            b"kernel k\ntensor t0 \"x\" hbm fp32 [4294967296, 4294967296]\n",
            "huge.pir:2:24: shape [4294967296, 4294967296] is larger than 2^48 bytes",
        ),
    ];
    for (name, bytes, needle) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        for cmd in ["verify", "fmt", "run", "compile"] {
            let o = ntile(&[cmd, path_str(&path)]);
            assert_eq!(code(&o), 2, "{cmd} {name}: {}", stderr(&o));
            assert!(stderr(&o).contains(needle), "{cmd} {name}: {}", stderr(&o));
        }
    }
    let o = ntile(&["verify", path_str(&dir.join("missing.pir"))]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot read"), "{}", stderr(&o));
}

/// `ntile run` places a race on the file line of the access that ran later.
#[test]
fn run_places_a_race_on_its_line() {
    let dir = scratch("race_line");
    let x = dir.join("x.npy");
    write_f32(&x, &[4, 8], &(0..32).map(|i| i as f32).collect::<Vec<_>>());
    let file = test_support::files::root().join("tests/filetests/sim/race_missing_semaphore.bir");
    let o = ntile(&["run", path_str(&file), "--input", &format!("x={}", path_str(&x))]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let want = format!("{}:11: race on sbuf partitions 0..4 bytes 0..32: dma0[0] (write)", path_str(&file));
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
}
