//! Filetests: every `.pir` / `.bir` file under `tests/filetests/{penguin,codegen,bir,sim}/` is
//! a test, run by the one `#[test]` below (the IR commands of the `ntile` binary are
//! `ir_commands.rs`).
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
//! `cargo xtask bless` (`NTILE_BLESS=1 cargo test -p ntile --test ntile -- filetests::`)
//! rewrites the expectations from what the code does now; review the diff before committing
//! it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use penguin::parse::{numbered_lines, split_comment};
use penguin::Target;
use rand::{Rng, SeedableRng};

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
        let dir = test_support::files::root().join("tests/filetests").join(layer);
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
