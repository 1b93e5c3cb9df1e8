//! Programs as the pipeline takes them ([`Program`]: a Penguin function or a BIR program,
//! each looped or not), and the one loader that reads any of them from text or JSON
//! ([`load`]), with the errors of their verifiers printed beside the lines they concern.
//!
//! The kind of a source is its extension (`.pir`, `.bir`, `.json`) or else its first keyword
//! (`kernel`, `program`, or `{` for JSON). Text is read by the unrolled parser first (so a
//! file without loops reads, and fails, exactly as before loops existed) and by the looped
//! parser when that fails. Every failure names the source, and the line and column where the
//! text says them.

use penguin::looped::Item;
use penguin::text::lexer::{numbered_lines, split_comment};
use penguin::{Function, LoopedFunction, ParseError, PirInst, Target, VerifierErrors};

use crate::error::DriverError;

pub mod bir_loops;
mod cores;
pub mod pir_loops;

pub use cores::{load_cores, CoreSources};

/// A source's name and text (a file's, or text given in memory).
#[derive(Clone, Debug)]
pub struct Source {
    /// The path as given, `<stdin>`, or a name standing for text given in memory.
    pub name: String,
    /// The extension, lowercased (empty when there is none).
    pub extension: String,
    /// The text.
    pub text: String,
}

impl Source {
    /// A source from raw bytes, checking they are UTF-8 (a located error otherwise).
    pub fn from_bytes(name: String, extension: String, bytes: Vec<u8>) -> Result<Source, DriverError> {
        match String::from_utf8(bytes) {
            Ok(text) => Ok(Source { name, extension, text }),
            Err(e) => {
                let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
                let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
                let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                let col = String::from_utf8_lossy(&good[line_start..]).chars().count() + 1;
                Err(DriverError::input(format!("{name}:{line}:{col}: the file is not UTF-8 text")))
            }
        }
    }
}

/// Which IR a source holds, and in which syntax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A Penguin function in `.pir` text.
    PenguinText,
    /// A BIR program in `.bir` text.
    BirText,
    /// A Penguin function as JSON.
    PenguinJson,
    /// A BIR program as JSON.
    BirJson,
}

/// The format of a source: by extension, else by its first keyword.
pub fn detect(src: &Source) -> Result<Format, DriverError> {
    match src.extension.as_str() {
        "pir" => return Ok(Format::PenguinText),
        "bir" => return Ok(Format::BirText),
        "json" => return Ok(json_format(&src.text)),
        _ => {}
    }
    for (_, line) in numbered_lines(&src.text) {
        let code = split_comment(line).0.trim_start();
        if code.is_empty() {
            continue;
        }
        if code.starts_with('{') {
            return Ok(json_format(&src.text));
        }
        let word: String = code.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        return match word.as_str() {
            "kernel" => Ok(Format::PenguinText),
            "program" => Ok(Format::BirText),
            _ => Err(DriverError::input(format!(
                "{}: cannot tell which IR this is: name it .pir or .bir, or start it with `kernel` (Penguin) or `program` (BIR)",
                src.name
            ))),
        };
    }
    Err(DriverError::input(format!("{}: the file is empty (expected a `kernel` or `program`)", src.name)))
}

/// A BIR program's JSON has `streams`; anything else is read as a Penguin function.
fn json_format(text: &str) -> Format {
    match crate::json::top_keys(text) {
        Some(keys) if keys.streams.is_some() => Format::BirJson,
        _ => Format::PenguinJson,
    }
}

/// Whether a program's JSON is the looped form (a `header` beside the body or streams).
fn is_looped_json(text: &str) -> bool {
    crate::json::top_keys(text).is_some_and(|k| k.header.is_some())
}

/// A program for the pipeline, with the line of each entity when it came from text.
#[derive(Clone, Debug)]
pub enum Program {
    /// A Penguin function.
    Penguin(Function, Option<penguin::parse::SourceMap>),
    /// A Penguin function with loops.
    PenguinLooped(penguin::LoopedFunction, Option<penguin::text::LoopSourceMap>),
    /// A BIR program.
    Bir(bir::Program, Option<bir::text::SourceMap>),
    /// A BIR program with loops.
    BirLooped(bir::LoopedProgram, Option<bir::text::LoopSourceMap>),
}

/// Whether a text uses loop syntax (a `loop` or `}` line).
pub(crate) fn has_loop_lines(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim_start();
        t.starts_with('}') || t.strip_prefix("loop").is_some_and(|r| r.starts_with([' ', '\t']))
    })
}

/// Parse a text with an IR's unrolled parser, or with its looped parser when that fails; the
/// error is the looped parser's when the text has loop lines, the unrolled one's otherwise.
fn parse_text<U, L>(
    src: &Source,
    unrolled: impl FnOnce(&str) -> Result<U, ParseError>,
    looped: impl FnOnce(&str) -> Result<L, ParseError>,
) -> Result<Result<U, L>, DriverError> {
    let located = |e: ParseError| DriverError::input(format!("{}:{e}", src.name));
    match unrolled(&src.text) {
        Ok(u) => Ok(Ok(u)),
        Err(plain) => match looped(&src.text) {
            Ok(l) => Ok(Err(l)),
            Err(e) => Err(located(if has_loop_lines(&src.text) { e } else { plain })),
        },
    }
}

/// Read a source in its format: `.pir` or `.bir` text, looped or not, or either IR as JSON
/// (read by [`crate::json::from_str`]: a key given twice is refused, loops may nest as deep
/// as the text allows, and a bad value names its field).
pub fn load(src: &Source) -> Result<Program, DriverError> {
    if let Some(n) = cores::penguin_sections(&src.text) {
        return Err(cores::one_core_only(src, &format!("a kernel of {n} cores (`core K` sections)")));
    }
    let json = |e: crate::json::JsonError| {
        DriverError::input(format!("{}:{}:{}: invalid JSON: {}", src.name, e.line, e.column, e.message))
    };
    Ok(match detect(src)? {
        Format::PenguinText => {
            match parse_text(src, penguin::parse::parse_with_source_map, penguin::text::parse_looped_with_source_map)? {
                Ok((f, map)) => Program::Penguin(f, Some(map)),
                Err((lf, map)) => Program::PenguinLooped(lf, Some(map)),
            }
        }
        Format::BirText if bir::text::chip_cores(&src.text).is_some() => {
            let n = bir::text::chip_cores(&src.text).unwrap_or_default();
            return Err(cores::one_core_only(src, &format!("a chip of {n} cores (`cores={n}`)")));
        }
        Format::BirText => {
            match parse_text(src, bir::text::parse_with_source_map, bir::text::parse_looped_with_source_map)? {
                Ok((p, map)) => Program::Bir(p, Some(map)),
                Err((lp, map)) => Program::BirLooped(lp, Some(map)),
            }
        }
        // A looped function's JSON (`ntile fmt F.pir --json` of a file with loops).
        Format::PenguinJson if is_looped_json(&src.text) => {
            let lf: LoopedFunction = crate::json::from_str(&src.text).map_err(json)?;
            looped_from_json(src, lf)?
        }
        Format::PenguinJson => {
            let f: Function = crate::json::from_str(&src.text).map_err(json)?;
            penguin::parse::check_limits(&f).map_err(|(e, m)| DriverError::input(format!("{}: {e}: {m}", src.name)))?;
            check_tensor_names(src, &f)?;
            Program::Penguin(f, None)
        }
        // A looped program's JSON (`ntile fmt F.bir --json` of a file with loops).
        Format::BirJson if is_looped_json(&src.text) => {
            let lp: bir::LoopedProgram = crate::json::from_str(&src.text).map_err(json)?;
            if lp.streams.len() != bir::NUM_ENGINES || lp.header.streams.len() != bir::NUM_ENGINES {
                let n = lp.streams.len();
                return Err(DriverError::input(format!("{}: {n} streams, expected {}", src.name, bir::NUM_ENGINES)));
            }
            Program::BirLooped(lp, None)
        }
        Format::BirJson => {
            let p: bir::Program = crate::json::from_str(&src.text).map_err(json)?;
            bir::text::check_limits(&p).map_err(|(at, m)| DriverError::input(format!("{}: {at}: {m}", src.name)))?;
            if p.streams.len() != bir::NUM_ENGINES {
                let n = p.streams.len();
                return Err(DriverError::input(format!("{}: {n} streams, expected {}", src.name, bir::NUM_ENGINES)));
            }
            Program::Bir(p, None)
        }
    })
}

/// A looped function from JSON (`ntile fmt F.pir --json` of a file with loops), checked as
/// the text parser checks it: well-formed loops (at least one trip and one item, a step entry
/// per parameter) and the text format's limits on every instruction.
fn looped_from_json(src: &Source, lf: LoopedFunction) -> Result<Program, DriverError> {
    let bad = |m: String| Err(DriverError::input(format!("{}: {m}", src.name)));
    if let Err(e) = penguin::looped::check_steps(&lf.body) {
        return bad(e.to_string());
    }
    let mut f = lf.header.clone();
    let mut stack: Vec<&[Item<PirInst>]> = vec![&lf.body];
    while let Some(items) = stack.pop() {
        for it in items {
            match it {
                Item::Inst(i) => {
                    f.push_inst(i.data.clone(), Vec::new());
                }
                Item::Loop(l) if l.body.is_empty() => return bad("a loop has an empty body".into()),
                Item::Loop(l) => stack.push(&l.body),
            }
        }
    }
    if lf.unrolled_len() > penguin::text::lexer::MAX_EXTENT {
        return bad(format!("the function unrolls to {} instructions, more than 2^48", lf.unrolled_len()));
    }
    if let Err((_, m)) = penguin::parse::check_limits(&f) {
        return bad(m);
    }
    check_tensor_names(src, &f)?;
    Ok(Program::PenguinLooped(lf, None))
}

/// Every tensor of a function from JSON is listed under its own name (the text names each
/// tensor once, so a function whose keys and names differ would not print back).
pub fn check_tensor_names(src: &Source, f: &Function) -> Result<(), DriverError> {
    match f.tensors.iter().enumerate().find(|(_, (key, t))| **key != t.name) {
        Some((i, (key, t))) => Err(DriverError::input(format!(
            "{}: {}: the tensor listed as {key:?} is named {:?}",
            src.name,
            penguin::TensorId(i as u32),
            t.name
        ))),
        None => Ok(()),
    }
}

/// A Penguin verifier failure: each error with the file line it concerns, then the function
/// with each error printed beside its line.
pub fn penguin_errors(
    src: &Source,
    f: &Function,
    map: Option<&penguin::parse::SourceMap>,
    errors: &VerifierErrors,
) -> DriverError {
    let mut msg = format!("{}: {} verifier error(s)\n", src.name, errors.0.len());
    for e in &errors.0 {
        match map.and_then(|m| m.line_of(e.entity)) {
            Some(line) => msg += &format!("{}:{line}: {}: {}\n", src.name, e.entity, e.message),
            None => msg += &format!("{}: {}: {}\n", src.name, e.entity, e.message),
        }
    }
    msg += "\n";
    msg += &penguin::print::print_with_errors(f, errors);
    DriverError::input(msg.trim_end())
}

/// A BIR verifier failure: each message with the file line of the instruction it names, then
/// the program with each message printed beside its instruction.
pub fn bir_errors(
    src: &Source,
    p: &bir::Program,
    map: Option<&bir::text::SourceMap>,
    what: &str,
    errors: &[bir::VerifyError],
) -> DriverError {
    let mut msg = format!("{}: {what}: {} error(s)\n", src.name, errors.len());
    for e in errors {
        let line = e.at.and_then(|at| map.and_then(|m| m.line_of(bir::text::Line::Inst(at))));
        match line {
            Some(line) => msg += &format!("{}:{line}: {e}\n", src.name),
            None => msg += &format!("{}: {e}\n", src.name),
        }
    }
    msg += "\n";
    msg += &bir::text::print_with_errors(p, errors);
    DriverError::input(msg.trim_end())
}

/// Run the BIR verifier; its errors are the user's (a hand-written or lowered program).
pub fn check_program(
    src: &Source,
    p: &bir::Program,
    map: Option<&bir::text::SourceMap>,
    what: &str,
) -> Result<(), DriverError> {
    check_program_sharing(src, p, map, what, &[])
}

/// [`check_program`] of one core's program of a chip whose cores share the semaphores
/// `shared` (a wait on one of them is the chip's to release: `bir::verify_program_sharing`).
pub fn check_program_sharing(
    src: &Source,
    p: &bir::Program,
    map: Option<&bir::text::SourceMap>,
    what: &str,
    shared: &[String],
) -> Result<(), DriverError> {
    match bir::verify_program_sharing(p, shared) {
        Ok(()) => Ok(()),
        Err(bir::BirError::Verify(errors)) => Err(bir_errors(src, p, map, what, &errors)),
        Err(other) => Err(DriverError::input(format!("{}: {other}", src.name))),
    }
}

/// Verify, lower and verify again: the program a Penguin function runs as.
pub fn compile_function(
    src: &Source,
    f: &Function,
    map: Option<&penguin::parse::SourceMap>,
    target: Target,
) -> Result<bir::Program, DriverError> {
    let verified = penguin::verify(f).map_err(|e| penguin_errors(src, f, map, &e))?;
    let program = bir::lower(verified, target).map_err(|e| match e {
        bir::BirError::Internal(_) => DriverError::internal(format!("{}: lowering failed (a bug): {e}", src.name)),
        other => DriverError::input(format!("{}: cannot lower for {target}: {other}", src.name)),
    })?;
    check_program(src, &program, None, "the lowered program fails the BIR verifier")?;
    Ok(program)
}
