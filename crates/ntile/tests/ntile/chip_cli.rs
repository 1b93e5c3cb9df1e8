//! A chip's `.bir` text (`program ... cores=2`, as `ntile gemm --lnc 2 --emit bir-unrolled`
//! prints it) through `ntile verify` and `ntile run`: each core's program and the chip
//! verified, both cores simulated on one HBM image and modeled with the shared budget, and a
//! race between the cores an error (exit 2).

use test_support::{path_str, scratch, write_f32_npy};

use crate::support::{code, ntile, stderr, stdout};

/// The chip text of a 256x256x512 GEMM split by columns over two cores.
fn chip_text() -> String {
    let o = ntile(&[
        "gemm",
        "--m",
        "256",
        "--k",
        "256",
        "--n",
        "512",
        "--lnc",
        "2",
        "--split",
        "n",
        "--emit",
        "bir-unrolled",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o)
}

#[test]
fn a_chip_text_verifies_runs_and_reports_both_cores() {
    let dir = scratch("chip-run");
    let text = chip_text();
    assert!(text.starts_with("program gemm target=trn2 hbm_size=") && text.contains(" cores=2\n"), "{text}");
    let file = dir.join("chip.bir");
    std::fs::write(&file, &text).unwrap();
    let o = ntile(&["verify", path_str(&file)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).ends_with(": ok: program gemm for trn2 on 2 cores (24 + 24 instructions)\n"), "{}", stdout(&o));

    let out = run_exact_gemm(&dir, &file, (256, 256, 512));
    assert!(out.starts_with("ran gemm on trn2 x 2 cores: 48 instructions, 8 matmuls"), "{out}");
    assert!(out.contains("  cores   2 physical cores sharing HBM (725 GB/s)"), "{out}");
}

/// Run a chip text of an `m x k x n` GEMM with `ntile run` on small integers, whose fp32
/// products and sums are exact, and check C is exactly A @ B; the run's stdout.
fn run_exact_gemm(dir: &std::path::Path, file: &std::path::Path, (m, k, n): (usize, usize, usize)) -> String {
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 5) as f32 - 2.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 3) % 7) as f32 - 3.0).collect();
    let (fa, fb, fc) = (dir.join("a.npy"), dir.join("b.npy"), dir.join("c.npy"));
    write_f32_npy(&fa, &[m, k], &a);
    write_f32_npy(&fb, &[k, n], &b);
    let (ia, ib, oc) = (format!("a={}", path_str(&fa)), format!("b={}", path_str(&fb)), format!("c={}", path_str(&fc)));
    let o = ntile(&["run", path_str(file), "--input", &ia, "--input", &ib, "-o", &oc]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let c = read_f32(&fc);
    assert_eq!(c.len(), m * n);
    for (idx, got) in c.iter().enumerate() {
        let (i, j) = (idx / n, idx % n);
        let want: f32 = (0..k).map(|kk| a[i * k + kk] * b[kk * n + j]).sum();
        assert_eq!(*got, want, "c[{i}, {j}]");
    }
    stdout(&o)
}

#[test]
fn two_cores_writing_the_same_columns_race() {
    let dir = scratch("chip-race");
    let text = chip_text();
    // Core 1 runs core 0's program: both write C's first 256 columns, and nothing orders them.
    let (head, rest) = text.split_once("core 0").unwrap();
    let (core0, _) = rest.split_once("core 1").unwrap();
    let racy = format!("{head}core 0{core0}core 1{core0}");
    let file = dir.join("racy.bir");
    std::fs::write(&file, racy).unwrap();
    let o = ntile(&["run", path_str(&file), "--no-sim"]);
    assert_eq!(code(&o), 0, "modeling needs no order: {}", stderr(&o));
    let (ia, ib) = ones(&dir);
    let o = ntile(&["run", path_str(&file), "--input", &ia, "--input", &ib]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(stderr(&o).contains("run on different cores, which nothing orders"), "{}", stderr(&o));
}

#[test]
fn commands_that_read_one_core_refuse_a_chip_naming_those_that_take_it() {
    let dir = scratch("chip-fmt");
    let file = dir.join("chip.bir");
    std::fs::write(&file, chip_text()).unwrap();
    for cmd in ["fmt", "compile"] {
        let o = ntile(&[cmd, path_str(&file)]);
        assert_eq!(code(&o), 2, "{cmd}: {}", stdout(&o));
        assert!(
            stderr(&o).contains("chip.bir: a chip of 2 cores (`cores=2`): ntile run and ntile verify take it"),
            "{cmd}: {}",
            stderr(&o)
        );
    }
}

/// One core's Penguin GEMM, twice, as the sections of a two-core kernel.
fn penguin_sections() -> (String, usize) {
    let o = ntile(&["gemm", "--m", "256", "--k", "256", "--n", "512", "--emit", "penguin"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let f = stdout(&o);
    let lines = f.lines().count();
    (format!("core 0\n{f}core 1\n{f}"), lines)
}

#[test]
fn penguin_functions_after_core_lines_run_as_a_chip_with_errors_on_whole_file_lines() {
    let dir = scratch("chip-pir");
    let (text, lines) = penguin_sections();
    let file = dir.join("two.pir");
    std::fs::write(&file, &text).unwrap();
    let o = ntile(&["verify", path_str(&file)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains(": ok: kernel gemm for trn2 on 2 cores (24 + 24 BIR instructions once lowered)"));
    let o = ntile(&["run", path_str(&file), "--no-sim"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("modeled gemm on trn2 x 2 cores without data (--no-sim): 48 instructions"));
    let o = ntile(&["fmt", path_str(&file)]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("a kernel of 2 cores (`core K` sections): ntile run and ntile verify take it"));

    // Both cores write all of C: a race, placed on core 1's line in the whole file.
    let (ia, ib) = ones(&dir);
    let o = ntile(&["run", path_str(&file), "--input", &ia, "--input", &ib]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let err = stderr(&o);
    let line: usize = err.split("(core 1):").nth(1).and_then(|r| r.split(':').next()).unwrap().parse().unwrap();
    assert!(line > lines + 2, "{err}");
    assert!(err.contains("run on different cores, which nothing orders"), "{err}");

    // A section out of order, and an error inside core 1, name their lines in the file.
    let o = ntile(&["run", path_str(&write(&dir, "bad1.pir", &text.replace("core 1\n", "core 2\n"))), "--no-sim"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains(&format!("bad1.pir:{}: `core 2` where `core 1` comes next", lines + 2)));
    let (head, tail) = text.split_once("core 1\n").unwrap();
    let broken = format!("{head}core 1\n{}", tail.replacen("kernel gemm", "kernel gemm\nbogus line", 1));
    let o = ntile(&["run", path_str(&write(&dir, "bad2.pir", &broken)), "--no-sim"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains(&format!("bad2.pir:{}:", lines + 4)), "{}", stderr(&o));
    // More cores than a logical NeuronCore has, and a section without a function.
    let f = tail;
    let three = format!("{text}core 2\n{f}");
    let o = ntile(&["run", path_str(&write(&dir, "three.pir", &three)), "--no-sim"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("three.pir: 3 cores, but a logical NeuronCore has at most 2"), "{}", stderr(&o));
    let o = ntile(&["run", path_str(&write(&dir, "empty.pir", &format!("core 0\ncore 1\n{f}"))), "--no-sim"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("empty.pir:1: core 0 has no function"), "{}", stderr(&o));
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `a=a.npy`, `b=b.npy` of ones for the 256x256x512 GEMM, written in `dir`.
fn ones(dir: &std::path::Path) -> (String, String) {
    let (fa, fb) = (dir.join("a.npy"), dir.join("b.npy"));
    write_f32_npy(&fa, &[256, 256], &vec![1.0; 256 * 256]);
    write_f32_npy(&fb, &[256, 512], &vec![1.0; 256 * 512]);
    (format!("a={}", path_str(&fa)), format!("b={}", path_str(&fb)))
}

/// A GEMM split by K prints as a chip whose cores share `reduce.partials`: its text verifies
/// and runs back through `ntile run`, C exactly A @ B on small integers.
#[test]
fn a_k_split_chip_text_runs_with_its_shared_semaphore() {
    let dir = scratch("chip-k");
    let args =
        ["gemm", "--m", "256", "--k", "512", "--n", "256", "--lnc", "2", "--split", "k", "--emit", "bir-unrolled"];
    let o = ntile(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("\nshared \"reduce.partials\"\ncore 0 "), "{text}");
    let file = write(&dir, "k.bir", &text);
    let o = ntile(&["verify", path_str(&file)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    run_exact_gemm(&dir, &file, (256, 512, 256));
    // Without the shared line, core 0's reduction waits for a signal nobody sends.
    let unshared = write(&dir, "unshared.bir", &text.replacen("shared \"reduce.partials\"\n", "", 1));
    let o = ntile(&["verify", path_str(&unshared)]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("deadlock: streams wait forever at"), "{}", stderr(&o));
}

/// A core's section may hold loops, as a one-core program may: core 0 copies x to y in a
/// loop of two row bands and signals the shared `handed`; core 1 waits for both signals and
/// copies y to z.
#[test]
fn a_chip_section_with_loops_runs() {
    let dir = scratch("chip-loops");
    let text = "program hand target=trn2 cores=2
hbm \"x\" fp32 [256, 16] @0 input
hbm \"y\" fp32 [256, 16] @16384
hbm \"z\" fp32 [256, 16] @32768 output
shared \"handed\"
core 0
sem s0 \"loaded\"
sem s1 \"handed\"
stream dma0:
  loop i0 x2 {
    dma_copy dst=sbuf.fp32[p0:128:1 @0+64*i0 [1, 16]] src=hbm.fp32[p0:128:16 @0+8192*i0 [1, 16]] signal(s0)
  }
stream dma1:
  loop i0 x2 {
    dma_copy dst=hbm.fp32[p0:128:16 @16384+8192*i0 [1, 16]] src=sbuf.fp32[p0:128:1 @0+64*i0 [1, 16]] wait(s0>=1+i0) signal(s1)
  }
core 1
sem s0 \"handed\"
sem s1 \"loaded\"
stream dma0:
  dma_copy dst=sbuf.fp32[p0:128:1 @0 [1, 32]] src=hbm.fp32[p0:128:32 @16384 [1, 32]] wait(s0>=2) signal(s1)
stream dma1:
  dma_copy dst=hbm.fp32[p0:128:32 @32768 [1, 32]] src=sbuf.fp32[p0:128:1 @0 [1, 32]] wait(s1>=1)
";
    let file = write(&dir, "loops.bir", text);
    let o = ntile(&["verify", path_str(&file)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let x: Vec<f32> = (0..256 * 16).map(|i| i as f32 * 0.5).collect();
    let (fx, fz) = (dir.join("x.npy"), dir.join("z.npy"));
    write_f32_npy(&fx, &[256, 16], &x);
    let (ix, oz) = (format!("x={}", path_str(&fx)), format!("z={}", path_str(&fz)));
    let o = ntile(&["run", path_str(&file), "--input", &ix, "-o", &oz]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("ran hand on trn2 x 2 cores: 6 instructions"), "{}", stdout(&o));
    let z = read_f32(&fz);
    assert_eq!(z, x);
    // Core 1 reading y before both bands are in races with core 0's second store.
    let early = write(&dir, "early.bir", &text.replacen("wait(s0>=2)", "wait(s0>=1)", 1));
    let o = ntile(&["run", path_str(&early), "--input", &ix]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(stderr(&o).contains("run on different cores, which nothing orders"), "{}", stderr(&o));
}

/// The values of a float32 `.npy` file ntile wrote (version 1 header).
fn read_f32(path: &std::path::Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    let header = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    bytes[10 + header..].chunks_exact(4).map(|x| f32::from_le_bytes([x[0], x[1], x[2], x[3]])).collect()
}
