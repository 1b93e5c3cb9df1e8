//! Filetests: every `.pir` / `.bir` file under `tests/filetests/{penguin,codegen,bir,sim}/` is
//! a test, run by the one `#[test]` below; plus the IR commands of the `ntile` binary.
//!
//! A filetest starts with a header of comment lines:
//!
//! ```text
//! ; test verify | lower | run | roundtrip
//! ; target trn1                       optional (default trn2): lowering target
//! ; input a = iota | fill V | random SEED | V V V ...    `test run`: an input's values
//! ; output c                          `test run`: a tensor to print (default: the outputs)
//! ```
//!
//! then the IR, then (except for `test verify`) the expected output as comment lines after a
//! `; expect:` line. `test verify` instead marks each expected verifier error on the line of
//! the entity it concerns, as `; error: MESSAGE` at the end of that line or on comment lines
//! right below it (errors about the whole function or program go on its first line; a syntax
//! error is `; error: syntax: COLUMN: MESSAGE`). No annotation means the IR must verify.
//!
//! - `verify`: parse, run the IR's verifier, compare errors with the annotations.
//! - `roundtrip`: parse; the canonical print must parse back to the same IR, and so must its
//!   JSON; the expected output is the canonical print.
//! - `lower` (`.pir`): verify, lower for the target, verify the BIR; expect the BIR text (or
//!   `error: ...`).
//! - `run`: lower if needed, simulate; expect each printed tensor's values row by row (or
//!   `error: ...`).
//!
//! A `.bir` or `.pir` file with loops (`loop iD xT {` ... `}`) is read by the looped parser
//! when the unrolled one refuses it; a looped function is verified, lowered and run on its
//! expansion, its errors on the line of the looped instruction they are an iteration of.
//!
//! `NTILE_BLESS=1 cargo test -p ntile --test filetests` rewrites the expectations from what
//! the code does now (`cargo xtask bless`); review the diff before committing it.
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "test helpers assert by panicking")]

mod common;

use common::{code, ntile, path_str, scratch, stderr, stdout};

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use penguin::parse::{numbered_lines, split_comment};
use penguin::Target;
use rand::{Rng, SeedableRng};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn blessing() -> bool {
    std::env::var_os("NTILE_BLESS").is_some_and(|v| v != "0" && !v.is_empty())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Verify,
    Lower,
    Run,
    Roundtrip,
}

#[derive(Debug)]
struct Header {
    kind: Kind,
    target: Target,
    inputs: Vec<(String, String)>,
    outputs: Vec<String>,
}

/// A filetest split into its header, its IR (every line before `; expect:`, so that line
/// numbers are the file's) and its expected output.
struct TestFile {
    header: Header,
    body: String,
    expected: Option<String>,
}

fn parse_test_file(text: &str) -> Result<TestFile, String> {
    let mut kind = None;
    let mut header = Header { kind: Kind::Verify, target: Target::Trn2, inputs: Vec::new(), outputs: Vec::new() };
    let mut body = String::new();
    let mut expected: Option<String> = None;
    for (_, line) in numbered_lines(text) {
        if let Some(exp) = &mut expected {
            let l = line.strip_prefix("; ").or_else(|| line.strip_prefix(';')).unwrap_or(line);
            exp.push_str(l);
            exp.push('\n');
            continue;
        }
        if line.trim_end() == "; expect:" {
            expected = Some(String::new());
            continue;
        }
        body.push_str(line);
        body.push('\n');
        let Some(directive) = line.strip_prefix("; ") else { continue };
        let (word, rest) = directive.split_once(' ').unwrap_or((directive, ""));
        let rest = rest.trim();
        match word {
            "test" if kind.is_none() => {
                kind = Some(match rest {
                    "verify" => Kind::Verify,
                    "lower" => Kind::Lower,
                    "run" => Kind::Run,
                    "roundtrip" => Kind::Roundtrip,
                    other => return Err(format!("unknown test kind `{other}`")),
                });
            }
            "target" => header.target = rest.parse().map_err(|e| format!("{e}"))?,
            "input" => {
                let (name, spec) = rest.split_once('=').ok_or("expected `; input NAME = VALUES`")?;
                header.inputs.push((name.trim().to_string(), spec.trim().to_string()));
            }
            "output" => header.outputs.push(rest.to_string()),
            _ => {}
        }
    }
    header.kind = kind.ok_or("the file has no `; test KIND` header line")?;
    if let Some(exp) = &mut expected {
        while exp.ends_with("\n\n") {
            exp.pop();
        }
    }
    Ok(TestFile { header, body, expected })
}

/// Expected errors: `(line, message)` from `; error:` annotations.
fn annotations(body: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut last_code_line = 1;
    for (n, line) in numbered_lines(body) {
        let (code, comment) = split_comment(line);
        let at = if code.trim().is_empty() { last_code_line } else { n };
        if !code.trim().is_empty() {
            last_code_line = n;
        }
        let Some(comment) = comment else { continue };
        for part in comment.split(';') {
            if let Some(msg) = part.trim().strip_prefix("error:") {
                out.push((at, msg.trim().to_string()));
            }
        }
    }
    out
}

/// The body with its annotations replaced by `errors`.
fn annotate(body: &str, errors: &[(usize, String)]) -> String {
    let mut out = String::new();
    let is_annotation = |c: &str| c.trim_start().starts_with("error:");
    for (n, line) in numbered_lines(body.strip_suffix('\n').unwrap_or(body)) {
        let (code, comment) = split_comment(line);
        if code.trim().is_empty() && comment.is_some_and(is_annotation) {
            continue;
        }
        let kept: Vec<&str> = comment.map(|c| c.split(';').filter(|p| !is_annotation(p)).collect()).unwrap_or_default();
        let mut text = code.trim_end().to_string();
        if !kept.is_empty() {
            let _ = write!(text, "{};{}", if code.trim().is_empty() { "" } else { " " }, kept.join(";").trim_end());
        }
        let here: Vec<&String> = errors.iter().filter(|(l, _)| *l == n).map(|(_, m)| m).collect();
        match here.as_slice() {
            [one] if kept.is_empty() && !code.trim().is_empty() => {
                let _ = writeln!(out, "{text}   ; error: {one}");
            }
            _ => {
                let _ = writeln!(out, "{text}");
                for m in here {
                    let _ = writeln!(out, "; error: {m}");
                }
            }
        }
    }
    out
}

/// A located BIR verifier message without its `engine[n] opcode: ` prefix (the filetest
/// annotation already sits on that instruction's line).
fn strip_position(msg: &str) -> &str {
    let located = msg.split_once(' ').and_then(|(at, rest)| {
        let (engine, index) = at.strip_suffix(']')?.split_once('[')?;
        let ok = engine.chars().all(|c| c.is_ascii_alphanumeric()) && index.parse::<usize>().is_ok();
        let (opcode, m) = rest.split_once(": ")?;
        (ok && opcode.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(m)
    });
    located.unwrap_or(msg)
}

fn is_bir(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "bir")
}

/// A `.pir` body with loops: the unrolled parser refuses it and it has loop lines (so a
/// file without loops keeps the unrolled parser's messages).
fn is_looped_pir(path: &Path, body: &str) -> bool {
    !is_bir(path)
        && penguin::parse::parse(body).is_err()
        && body.lines().any(|l| {
            let t = l.trim_start();
            t.starts_with('}') || t.starts_with("loop ")
        })
}

/// A `.pir` body's function: unrolled, or a looped one expanded and verified as `ntile`
/// does it (the error is `ntile`'s message, with the file named `f`).
fn pir_function(path: &Path, body: &str) -> Result<penguin::Function, String> {
    if !is_looped_pir(path, body) {
        return penguin::parse::parse(body).map_err(|e| format!("syntax: {e}"));
    }
    let (lf, map) = penguin::text::parse_looped_with_source_map(body).map_err(|e| format!("syntax: {e}"))?;
    let src = driver::Source { name: "f".into(), extension: "pir".into(), text: body.into() };
    Ok(driver::program::pir_loops::unroll(&src, &lf, Some(&map)).map_err(|e| e.to_string())?.0)
}

/// The verifier's errors for a body, each with the line it concerns.
fn verify_errors(path: &Path, body: &str) -> Vec<(usize, String)> {
    let syntax = |e: penguin::ParseError| vec![(e.line, format!("syntax: {}: {}", e.col, e.message))];
    if is_bir(path) && bir::text::parse(body).is_err() {
        // A program with loops: structural errors on their loop or instruction line, engine
        // rules' errors on the line of the instruction they are an iteration of.
        let (lp, map) = match bir::text::parse_looped_with_source_map(body) {
            Ok(x) => x,
            Err(e) => return syntax(e),
        };
        let first = map.line_of(bir::text::LoopLine::Plain(bir::text::Line::Program)).unwrap_or(1);
        let Err(errors) = bir::verify_looped(&lp) else { return Vec::new() };
        let src = driver::Source { name: "f".into(), extension: "bir".into(), text: body.into() };
        let message = driver::program::bir_loops::looped_errors(&src, &lp, Some(&map), &errors).to_string();
        return message
            .lines()
            .skip(1)
            .take_while(|l| !l.is_empty())
            .map(|l| {
                let rest = l.strip_prefix("f:").unwrap_or(l);
                let (line, msg) = match rest.split_once(": ") {
                    Some((n, m)) if n.parse::<usize>().is_ok() => (n.parse().unwrap_or(first), m),
                    _ => (first, rest.strip_prefix(' ').unwrap_or(rest)),
                };
                (line, strip_position(msg).to_string())
            })
            .collect();
    }
    if is_looped_pir(path, body) {
        // A function with loops: each error on the line of the looped instruction it is an
        // iteration of, as `ntile verify` reports it.
        let (lf, map) = match penguin::text::parse_looped_with_source_map(body) {
            Ok(x) => x,
            Err(e) => return syntax(e),
        };
        let first = map.line_of(penguin::text::LoopLine::Plain(penguin::Entity::Function)).unwrap_or(1);
        let src = driver::Source { name: "f".into(), extension: "pir".into(), text: body.into() };
        let Err(e) = driver::program::pir_loops::unroll(&src, &lf, Some(&map)) else { return Vec::new() };
        let message = e.to_string();
        let mut lines = message.lines();
        let head = lines.next().unwrap_or_default();
        let located: Vec<&str> = if head.ends_with("verifier error(s)") {
            lines.take_while(|l| !l.is_empty()).collect()
        } else {
            vec![head]
        };
        return located
            .iter()
            .map(|l| {
                let rest = l.strip_prefix("f:").unwrap_or(l);
                match rest.split_once(": ") {
                    Some((n, m)) if n.parse::<usize>().is_ok() => (n.parse().unwrap_or(first), m.to_string()),
                    _ => (first, rest.trim_start().to_string()),
                }
            })
            .collect();
    }
    if is_bir(path) {
        let (p, map) = match bir::text::parse_with_source_map(body) {
            Ok(x) => x,
            Err(e) => return syntax(e),
        };
        let first = map.line_of(bir::text::Line::Program).unwrap_or(1);
        match bir::verify_program(&p) {
            Ok(()) => Vec::new(),
            Err(bir::BirError::Verify(errors)) => errors
                .iter()
                .map(|e| match e.at {
                    Some(at) => (map.line_of(bir::text::Line::Inst(at)).unwrap_or(first), e.message.clone()),
                    None => (first, e.to_string()),
                })
                .collect(),
            Err(other) => vec![(first, other.to_string())],
        }
    } else {
        let (f, map) = match penguin::parse::parse_with_source_map(body) {
            Ok(x) => x,
            Err(e) => return syntax(e),
        };
        match penguin::verify(&f) {
            Ok(_) => Vec::new(),
            Err(errors) => {
                errors.0.iter().map(|e| (map.line_of(e.entity).unwrap_or(map.kernel), e.message.clone())).collect()
            }
        }
    }
}

fn lower_text(path: &Path, body: &str, target: Target) -> Result<bir::Program, String> {
    let f = pir_function(path, body)?;
    let verified = penguin::verify(&f).map_err(|e| e.to_string())?;
    let program = bir::lower(verified, target).map_err(|e| e.to_string())?;
    bir::verify_program(&program).map_err(|e| e.to_string())?;
    Ok(program)
}

fn input_values(spec: &str, len: usize) -> Result<Vec<f32>, String> {
    let words: Vec<&str> = spec.split_whitespace().collect();
    match words.as_slice() {
        ["iota"] => Ok((0..len).map(|i| i as f32).collect()),
        ["fill", v] => Ok(vec![v.parse().map_err(|_| format!("bad fill value `{v}`"))?; len]),
        ["random", seed] => {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed.parse().map_err(|_| format!("bad seed `{seed}`"))?);
            Ok((0..len).map(|_| rng.gen_range(-1.0f32..1.0)).collect())
        }
        values => values.iter().map(|v| v.trim_matches(',').parse().map_err(|_| format!("bad value `{v}`"))).collect(),
    }
}

fn run_text(path: &Path, header: &Header, body: &str) -> Result<String, String> {
    let (program, outputs) = if is_bir(path) && bir::text::parse(body).is_err() {
        let lp = bir::text::parse_looped(body).map_err(|e| format!("syntax: {e}"))?;
        bir::verify_looped(&lp).map_err(|e| format!("{e:?}"))?;
        (lp.expand().map_err(|e| e.to_string())?, None)
    } else if is_bir(path) {
        let p = bir::text::parse(body).map_err(|e| format!("syntax: {e}"))?;
        bir::verify_program(&p).map_err(|e| e.to_string())?;
        (p, None)
    } else {
        let f = pir_function(path, body)?;
        let names: Vec<String> =
            f.outputs.iter().filter_map(|&t| penguin::FunctionView::tensor(&f, t)).map(|t| t.name.clone()).collect();
        (lower_text(path, body, header.target)?, Some(names))
    };
    let mut sim = sim::Simulator::new(&program);
    for (name, spec) in &header.inputs {
        let t = program.hbm_tensor(name).ok_or_else(|| format!("no HBM tensor `{name}`"))?;
        let len = t.shape.iter().product::<u64>() as usize;
        sim.write_hbm_f32(name, &input_values(spec, len)?).map_err(|e| e.to_string())?;
    }
    let stats = sim.run().map_err(|e| e.to_string())?;
    let mut out = String::new();
    for race in &stats.races {
        let _ = writeln!(out, "{race}");
    }
    let names: Vec<String> = if header.outputs.is_empty() {
        outputs.unwrap_or_else(|| {
            program.hbm.iter().filter(|t| t.role == bir::HbmRole::Output).map(|t| t.name.clone()).collect()
        })
    } else {
        header.outputs.clone()
    };
    for name in names {
        let t = program.hbm_tensor(&name).ok_or_else(|| format!("no HBM tensor `{name}`"))?;
        let values = sim.read_hbm_f32(&name).map_err(|e| e.to_string())?;
        let row = t.shape.last().copied().unwrap_or(1).max(1) as usize;
        for (i, chunk) in values.chunks(row).enumerate() {
            let text: Vec<String> = chunk.iter().map(f32::to_string).collect();
            let _ = writeln!(out, "{name}[{i}] = {}", text.join(" "));
        }
    }
    Ok(out)
}

fn roundtrip_text(path: &Path, body: &str) -> Result<String, String> {
    if is_bir(path) && bir::text::parse(body).is_err() {
        let p = bir::text::parse_looped(body).map_err(|e| format!("syntax: {e}"))?;
        let text = p.to_string();
        let back = bir::text::parse_looped(&text).map_err(|e| format!("the print does not parse: {e}\n{text}"))?;
        if back != p {
            return Err(format!("the print parses to a different program:\n{text}"));
        }
        let json = serde_json::to_string(&p).map_err(|e| e.to_string())?;
        if serde_json::from_str::<bir::LoopedProgram>(&json).map_err(|e| e.to_string())? != p {
            return Err("the JSON parses to a different program".into());
        }
        Ok(text)
    } else if is_bir(path) {
        let p = bir::text::parse(body).map_err(|e| format!("syntax: {e}"))?;
        let text = p.to_string();
        let back = bir::text::parse(&text).map_err(|e| format!("the print does not parse: {e}\n{text}"))?;
        if back != p {
            return Err(format!("the print parses to a different program:\n{text}"));
        }
        let json = serde_json::to_string(&p).map_err(|e| e.to_string())?;
        if serde_json::from_str::<bir::Program>(&json).map_err(|e| e.to_string())? != p {
            return Err("the JSON parses to a different program".into());
        }
        Ok(text)
    } else if is_looped_pir(path, body) {
        let f = penguin::text::parse_looped(body).map_err(|e| format!("syntax: {e}"))?;
        let text = f.to_string();
        let back = penguin::text::parse_looped(&text).map_err(|e| format!("the print does not parse: {e}\n{text}"))?;
        if back != f {
            return Err(format!("the print parses to a different function:\n{text}"));
        }
        let json = serde_json::to_string(&f).map_err(|e| e.to_string())?;
        if serde_json::from_str::<penguin::LoopedFunction>(&json).map_err(|e| e.to_string())? != f {
            return Err("the JSON parses to a different function".into());
        }
        Ok(text)
    } else {
        let f = penguin::parse::parse(body).map_err(|e| format!("syntax: {e}"))?;
        let text = f.to_string();
        let back = penguin::parse::parse(&text).map_err(|e| format!("the print does not parse: {e}\n{text}"))?;
        if back != f {
            return Err(format!("the print parses to a different function:\n{text}"));
        }
        let json = serde_json::to_string(&f).map_err(|e| e.to_string())?;
        if serde_json::from_str::<penguin::Function>(&json).map_err(|e| e.to_string())? != f {
            return Err("the JSON parses to a different function".into());
        }
        Ok(text)
    }
}

fn with_expected(body: &str, expected: &str) -> String {
    let mut out = body.trim_end().to_string();
    out.push_str("\n\n; expect:\n");
    for line in expected.trim_end().lines() {
        if line.is_empty() {
            out.push_str(";\n");
        } else {
            let _ = writeln!(out, "; {line}");
        }
    }
    out
}

/// Run one filetest: `Ok(None)` passes, `Ok(Some(text))` is the blessed file, `Err` fails.
fn run_file(path: &Path) -> Result<Option<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let t = parse_test_file(&text)?;
    if t.header.kind == Kind::Verify {
        let mut expected = annotations(&t.body);
        let mut actual = verify_errors(path, &t.body);
        expected.sort();
        actual.sort();
        if expected == actual {
            return Ok(None);
        }
        if blessing() {
            return Ok(Some(annotate(&t.body, &actual)));
        }
        let show = |v: &[(usize, String)]| v.iter().map(|(l, m)| format!("  line {l}: {m}\n")).collect::<String>();
        return Err(format!("expected errors:\n{}actual errors:\n{}", show(&expected), show(&actual)));
    }
    let actual = match t.header.kind {
        Kind::Lower => match lower_text(path, &t.body, t.header.target) {
            Ok(p) => p.to_string(),
            Err(e) => format!("error: {e}\n"),
        },
        Kind::Run => run_text(path, &t.header, &t.body).unwrap_or_else(|e| format!("error: {e}\n")),
        Kind::Roundtrip => roundtrip_text(path, &t.body)?,
        Kind::Verify => unreachable!(),
    };
    let actual = actual.trim_end().to_string() + "\n";
    if t.expected.as_deref() == Some(actual.as_str()) {
        return Ok(None);
    }
    if blessing() {
        return Ok(Some(with_expected(&t.body, &actual)));
    }
    Err(format!("expected:\n{}\nactual:\n{actual}", t.expected.as_deref().unwrap_or("(no `; expect:` block)")))
}

fn filetest_paths() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for layer in ["penguin", "codegen", "bir", "sim"] {
        let dir = root().join("tests/filetests").join(layer);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "pir" || x == "bir") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_filetest_passes() {
    let files = filetest_paths();
    assert!(files.len() >= 20, "expected the filetests under tests/filetests, found {}", files.len());
    let mut failures = Vec::new();
    let mut blessed = 0;
    for path in &files {
        match run_file(path) {
            Ok(None) => {}
            Ok(Some(text)) => {
                std::fs::write(path, text).unwrap();
                blessed += 1;
            }
            Err(e) => failures.push(format!("--- {}\n{e}", path.display())),
        }
    }
    if blessed > 0 {
        eprintln!("blessed {blessed} filetest(s)");
    }
    assert!(
        failures.is_empty(),
        "{} of {} filetests failed (NTILE_BLESS=1 rewrites expectations):\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The IR commands of the `ntile` binary.

use std::process::{Command, Output, Stdio};

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
        let example = root().join(format!("examples/gemm_4x16x8.{ext}"));
        let o = ntile(&["verify", path_str(&example)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let c = dir.join(format!("c_{ext}.npy"));
        let (ia, ib, oc) = (format!("a={}", a.display()), format!("b={}", b.display()), format!("c={}", c.display()));
        let o = ntile(&["run", path_str(&example), "--input", &ia, "--input", &ib, "--output", &oc]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        // Then the cycle model's summary (tests/run_timing.rs).
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
    let o = ntile(&["fmt", path_str(&root().join("examples/gemm_4x16x8.pir"))]);
    assert!(stdout(&o).contains("after(i4 raw, i1 raw, i3 raw)"), "{}", stdout(&o));
    let compiled = dir.join("g.bir");
    let o = ntile(&["compile", path_str(&root().join("examples/gemm_4x16x8.pir")), "-o", path_str(&compiled)]);
    assert_eq!((code(&o), stdout(&o)), (0, String::new()), "{}", stderr(&o));
    assert_eq!(code(&ntile(&["verify", path_str(&compiled)])), 0);
}

#[test]
fn verify_prints_located_errors_beside_their_lines() {
    let file = root().join("tests/filetests/penguin/rule08_memories.pir");
    let o = ntile(&["verify", path_str(&file)]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.contains("rule08_memories.pir: 5 verifier error(s)"), "{err}");
    assert!(err.contains("rule08_memories.pir:9: i1: Result buffer of matmult must be psum!"), "{err}");
    let listing: Vec<&str> = err.lines().collect();
    let at = listing.iter().position(|l| l.starts_with("i1 = matmult")).unwrap();
    assert_eq!(listing[at + 1], "; error: Result buffer of matmult must be psum!", "{err}");

    let file = root().join("tests/filetests/bir/rule05_matmul.bir");
    let o = ntile(&["verify", path_str(&file)]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.contains("rule05_matmul.bir:6: pe[0] multiply_moving: no LoadStationary before it"), "{err}");
    assert!(err.contains("\n; error: no LoadStationary before it\n"), "{err}");

    let o = ntile(&["verify", path_str(&root().join("tests/filetests/penguin/syntax_bad_tile.pir"))]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("syntax_bad_tile.pir:5:54: expected `,`, found `8`"), "{}", stderr(&o));
}

#[test]
fn fmt_reads_stdin_and_converts_between_text_and_json() {
    let text = std::fs::read(root().join("examples/gemm_4x16x8.bir")).unwrap();
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

    let pir = std::fs::read(root().join("examples/gemm_4x16x8.pir")).unwrap();
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
        let path = root().join(example);
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
    let o = ntile(&["fmt", path_str(&root().join("examples/gather.pir"))]);
    let text = stdout(&o);
    let at = text.lines().position(|l| l.starts_with("i0 = dma_gather")).unwrap();
    assert_eq!(text.lines().nth(at - 1), Some("; idx: 128 entries (stride 1), one element each."), "{text}");
}

#[test]
fn compile_emits_bir_or_json() {
    let example = root().join("examples/gemm_4x16x8.pir");
    let o = ntile(&["compile", path_str(&example), "--target", "trn1"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("program gemm_4x16x8 target=trn1"), "{}", stdout(&o));
    let o = ntile(&["compile", path_str(&example), "--emit", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kernel_name"], "gemm_4x16x8");
    let o = ntile(&["compile", path_str(&root().join("examples/gemm_4x16x8.bir"))]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("`ntile compile` takes a Penguin function"), "{}", stderr(&o));
    let o =
        ntile(&["compile", path_str(&root().join("tests/filetests/bir/lower_sbuf_capacity.pir")), "--target", "trn1"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot lower for trn1: tensor `big` needs 200000 bytes"), "{}", stderr(&o));
}

#[test]
fn run_checks_its_inputs() {
    let dir = scratch("inputs");
    let example = path_str(&root().join("examples/gemm_4x16x8.pir")).to_string();
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
    let file = root().join("tests/filetests/sim/race_missing_semaphore.bir");
    let o = ntile(&["run", path_str(&file), "--input", &format!("x={}", path_str(&x))]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let want = format!("{}:11: race on sbuf partitions 0..4 bytes 0..32: dma0[0] (write)", path_str(&file));
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
}
