//! Mutation test: random byte-level mutations of every example and filetest (and of their
//! JSON) are fed to the parsers and to the verify path of `ntile verify`; each must give Ok
//! or a user error (exit 2) naming the file, with its line where it has one; never a panic.
//! Fixed seed, so a failure reproduces.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use driver::program::{bir_errors, load, penguin_errors, Program as Ir, Source};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in
        ["examples", "tests/filetests/penguin", "tests/filetests/codegen", "tests/filetests/bir", "tests/filetests/sim"]
    {
        let Ok(entries) = std::fs::read_dir(test_support::files::root().join(dir)) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "pir" || x == "bir") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Bytes a mutation likes to insert: the format's punctuation, digits and big numbers.
const PIECES: &[&[u8]] = &[
    b"[",
    b"]",
    b"{",
    b"}",
    b",",
    b":",
    b"=",
    b"\"",
    b";",
    b"\n",
    b" ",
    b"-",
    b"+",
    b"@",
    b"p",
    b"t",
    b"i",
    b"s",
    b"0",
    b"1",
    b"9",
    b"99999999999",
    b"18446744073709551616",
    b"-9223372036854775808",
    b"4294967295",
    b"\\",
    b"\\u{",
    b"after(",
    b"wait(",
    b"acc=",
    b"\xff",
    b"\xc3",
    b"\xe2\x80\xa8",
    b"nan",
    b"inf",
    b"[-9223372036854775808, 4]",
    b"[9223372036854775807, 3]",
    b"+9223372036854775807",
    b"18446744073709551615",
    b"[281474976710656, 2]",
];

fn mutate(rng: &mut StdRng, input: &[u8]) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        let len = b.len();
        let at = rng.gen_range(0..=len);
        match rng.gen_range(0..7) {
            0 if len > 0 => {
                let i = at.min(len - 1);
                b[i] ^= 1 << rng.gen_range(0..8);
            }
            1 if len > 0 => {
                let i = at.min(len - 1);
                b[i] = PIECES[rng.gen_range(0..PIECES.len())][0];
            }
            2 => {
                let end = (at + rng.gen_range(1..16)).min(len);
                b.drain(at..end);
            }
            3 => {
                let piece = PIECES[rng.gen_range(0..PIECES.len())];
                b.splice(at..at, piece.iter().copied());
            }
            4 => {
                let end = (at + rng.gen_range(1..40)).min(len);
                let chunk = b[at..end].to_vec();
                let to = rng.gen_range(0..=len);
                b.splice(to..to, chunk);
            }
            5 => {
                // Swap two lines.
                let text = String::from_utf8_lossy(&b).into_owned();
                let mut lines: Vec<&str> = text.split('\n').collect();
                if lines.len() > 1 {
                    let (x, y) = (rng.gen_range(0..lines.len()), rng.gen_range(0..lines.len()));
                    lines.swap(x, y);
                }
                b = lines.join("\n").into_bytes();
            }
            _ => {
                // Replace a digit run with another number.
                if let Some(i) = (at..len).find(|&i| b[i].is_ascii_digit()) {
                    let end = (i..len).find(|&j| !b[j].is_ascii_digit()).unwrap_or(len);
                    let n = [0u64, 1, 2, 7, 31, 64, 127, 128, 129, 255, 512, 4096, 65536, u64::from(u32::MAX)];
                    let digits = n[rng.gen_range(0..n.len())].to_string();
                    b.splice(i..end, digits.bytes());
                }
            }
        }
    }
    b
}

/// Assert that a refusal is a user error (exit 2) whose message names the file as
/// `NAME:LINE:COL:` or `NAME:LINE:`, or just `NAME:` where no line applies (a JSON form's
/// structural error, a file-wide verifier message).
fn located(src_name: &str, e: &driver::DriverError) {
    let message = &e.to_string();
    assert_eq!(e.kind(), driver::ErrorKind::Input, "not a user error: {message}");
    let rest = message.strip_prefix(src_name).and_then(|r| r.strip_prefix(':'));
    let Some(rest) = rest else { panic!("error does not name the file: {message}") };
    // A position, when given, is 1-based.
    for part in rest.splitn(3, ':').take(2) {
        if let Ok(n) = part.parse::<usize>() {
            assert!(n >= 1, "{message}");
        }
    }
}

/// Everything `ntile verify` (and `ntile run` up to the simulation) does with a file.
fn check(name: &str, extension: &str, bytes: Vec<u8>, simulate: bool) {
    let src = match Source::from_bytes(name.to_string(), extension.to_string(), bytes) {
        Ok(s) => s,
        Err(e) => return located(name, &e),
    };
    let ir = match load(&src) {
        Ok(ir) => ir,
        Err(e) => return located(name, &e),
    };
    match ir {
        Ir::Penguin(f, map) => {
            let printed = f.to_string();
            let back =
                penguin::parse::parse(&printed).unwrap_or_else(|e| panic!("the print does not parse: {e}\n{printed}"));
            assert_eq!(back.to_string(), printed, "print(parse(print(f))) differs");
            match penguin::verify(&f) {
                Err(errors) => {
                    located(name, &penguin_errors(&src, &f, map.as_ref(), &errors));
                }
                Ok(verified) => {
                    if let Ok(p) = bir::lower(verified, penguin::Target::Trn2) {
                        if bir::verify_program(&p).is_ok() && simulate {
                            run(&p);
                        }
                    }
                }
            }
        }
        Ir::Bir(p, map) => {
            let printed = p.to_string();
            let back =
                bir::text::parse(&printed).unwrap_or_else(|e| panic!("the print does not parse: {e}\n{printed}"));
            assert_eq!(back.to_string(), printed, "print(parse(print(p))) differs");
            match bir::verify_program(&p) {
                Err(bir::BirError::Verify(errors)) => {
                    located(name, &bir_errors(&src, &p, map.as_ref(), "BIR verifier", &errors));
                }
                Err(other) => panic!("the BIR verifier returned a non-verify error: {other}"),
                Ok(()) if simulate => run(&p),
                Ok(()) => {}
            }
        }
        Ir::PenguinLooped(lf, map) => {
            let printed = lf.to_string();
            let back = penguin::text::parse_looped(&printed)
                .unwrap_or_else(|e| panic!("the print does not parse: {e}\n{printed}"));
            assert_eq!(back.to_string(), printed, "print(parse(print(f))) differs");
            if lf.unrolled_len() < 1 << 16 {
                match driver::program::pir_loops::unroll(&src, &lf, map.as_ref()) {
                    Err(e) => located(name, &e),
                    Ok((f, _)) => {
                        let lowered = penguin::verify(&f).ok().and_then(|v| bir::lower(v, penguin::Target::Trn2).ok());
                        if let Some(p) = lowered.as_ref().filter(|p| bir::verify_program(p).is_ok()) {
                            // `ntile compile` lowers it loop by loop too: the same ops, stream by stream.
                            let looped = bir::lower_looped(&lf, penguin::Target::Trn2).unwrap_or_else(|e| {
                                panic!("lowering the loops failed where the expansion lowers: {e}")
                            });
                            if let Err(errors) = bir::verify_looped(&looped) {
                                panic!("the program lowered loop by loop fails the verifier: {errors:?}");
                            }
                            let expanded = looped.expand().unwrap_or_else(|e| panic!("it does not expand: {e}"));
                            for e in bir::Engine::all() {
                                let ops =
                                    |p: &bir::Program| p.stream(e).iter().map(|i| i.op.clone()).collect::<Vec<_>>();
                                assert_eq!(ops(&expanded), ops(p), "the ops of {} differ", e.name());
                            }
                        }
                        if let Some(p) = lowered.filter(|p| bir::verify_program(p).is_ok() && simulate) {
                            run(&p);
                        }
                    }
                }
            }
        }
        Ir::BirLooped(lp, map) => {
            let printed = lp.to_string();
            let back = bir::text::parse_looped(&printed)
                .unwrap_or_else(|e| panic!("the print does not parse: {e}\n{printed}"));
            assert_eq!(back.to_string(), printed, "print(parse(print(p))) differs");
            match bir::verify_looped(&lp) {
                Err(errors) => {
                    located(name, &driver::program::bir_loops::looped_errors(&src, &lp, map.as_ref(), &errors));
                }
                Ok(()) if simulate && lp.unrolled_len() < 1 << 16 => match lp.expand() {
                    Ok(p) => run(&p),
                    Err(e) => panic!("a verified looped program does not expand: {e}"),
                },
                Ok(()) => {}
            }
        }
    }
}

/// Simulate a verified program on zero inputs (errors are fine; panics are not).
fn run(p: &bir::Program) {
    if p.hbm_size > 1 << 20 {
        return;
    }
    let mut sim = sim::Simulator::new(p);
    let _ = sim.run();
}

#[test]
fn mutated_files_never_panic() {
    let files = files();
    assert!(files.len() >= 20, "found only {} files", files.len());
    let mut rng = StdRng::seed_from_u64(2024);
    let mut failures: Vec<String> = Vec::new();
    let mut cases = 0;
    for path in &files {
        let original = std::fs::read(path).unwrap();
        let ext = path.extension().unwrap().to_string_lossy().into_owned();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let is_example = path.parent().is_some_and(|d| d.ends_with("examples"));
        // `cargo xtask fuzz` raises the count through NTILE_FUZZ_SCALE (default 1).
        let scale: usize = std::env::var("NTILE_FUZZ_SCALE").ok().and_then(|v| v.parse().ok()).unwrap_or(1).max(1);
        let (text_mutants, json_mutants) = if is_example { (8000 * scale, 1000 * scale) } else { (400 * scale, 0) };
        let json = match load(&Source {
            name: name.clone(),
            extension: ext.clone(),
            text: String::from_utf8_lossy(&original).into_owned(),
        }) {
            Ok(Ir::Penguin(f, _)) => serde_json::to_vec(&f).ok(),
            Ok(Ir::Bir(p, _)) => serde_json::to_vec(&p).ok(),
            Ok(Ir::BirLooped(..) | Ir::PenguinLooped(..)) | Err(_) => None,
        };
        let mut inputs: Vec<(String, Vec<u8>)> =
            (0..text_mutants).map(|_| (ext.clone(), mutate(&mut rng, &original))).collect();
        if let Some(json) = json {
            inputs.extend((0..json_mutants).map(|_| ("json".to_string(), mutate(&mut rng, &json))));
        }
        for (i, (ext, bytes)) in inputs.into_iter().enumerate() {
            cases += 1;
            let simulate = i % 64 == 0;
            let shown = String::from_utf8_lossy(&bytes).into_owned();
            if catch_unwind(AssertUnwindSafe(|| check(&name, &ext, bytes, simulate))).is_err() && failures.len() < 5 {
                failures.push(format!("--- {name} mutant {i} ({ext}):\n{shown}"));
            }
        }
    }
    assert!(cases >= 20_000, "only {cases} mutants");
    assert!(failures.is_empty(), "{} mutant(s) panicked:\n{}", failures.len(), failures.join("\n"));
}
