//! IR files as the commands read them (`.pir` / `.bir` text, or either IR as JSON), and
//! `ntile fmt`, which prints one in canonical form, keeping its comments.
//!
//! The kind of a file is its extension (`.pir`, `.bir`, `.json`) or else its first keyword
//! (`kernel`, `program`, or `{` for JSON). Every failure names the file, and the line and
//! column where the text says them. Text with loops is read as a looped program or function
//! ([`crate::looped`], [`crate::looped_pir`]) when the unrolled parser refuses it.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use clap::Args;
use penguin::text::lexer::{numbered_lines, split_comment};
use penguin::{Function, VerifierErrors};

use crate::error::CliError;
use crate::npy;

/// A file's name and text.
#[derive(Clone, Debug)]
pub struct Source {
    /// The path as given, or `<stdin>`.
    pub name: String,
    /// The extension, lowercased (empty for stdin).
    pub extension: String,
    /// The text.
    pub text: String,
}

/// Read a file (`-` reads stdin); bytes that are not UTF-8 are a located error.
pub fn read_source(path: &Path) -> Result<Source, CliError> {
    let (name, bytes) = if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).map_err(|e| CliError::usage(format!("cannot read stdin: {e}")))?;
        ("<stdin>".to_string(), bytes)
    } else {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| CliError::usage(format!("cannot read {name}: {e}")))?;
        (name, bytes)
    };
    let extension = if path.as_os_str() == "-" {
        String::new()
    } else {
        path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default()
    };
    source_from_bytes(name, extension, bytes)
}

/// A source from raw bytes, checking they are UTF-8.
pub fn source_from_bytes(name: String, extension: String, bytes: Vec<u8>) -> Result<Source, CliError> {
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Source { name, extension, text }),
        Err(e) => {
            let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
            let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let col = String::from_utf8_lossy(&good[line_start..]).chars().count() + 1;
            Err(CliError::usage(format!("{name}:{line}:{col}: the file is not UTF-8 text")))
        }
    }
}

/// Which IR a file holds, and in which syntax.
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
pub fn detect(src: &Source) -> Result<Format, CliError> {
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
            _ => Err(CliError::usage(format!(
                "{}: cannot tell which IR this is: name it .pir or .bir, or start it with `kernel` (Penguin) or `program` (BIR)",
                src.name
            ))),
        };
    }
    Err(CliError::usage(format!("{}: the file is empty (expected a `kernel` or `program`)", src.name)))
}

/// A BIR program's JSON has `streams`; anything else is read as a Penguin function.
fn json_format(text: &str) -> Format {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) if v.get("streams").is_some() => Format::BirJson,
        _ => Format::PenguinJson,
    }
}

/// A loaded IR, with the line of each entity when it came from text.
#[derive(Clone, Debug)]
pub enum Ir {
    /// A Penguin function.
    Penguin(Function, Option<penguin::parse::SourceMap>),
    /// A BIR program.
    Bir(bir::Program, Option<bir::text::SourceMap>),
    /// A BIR program with loops.
    BirLooped(bir::LoopedProgram, Option<bir::text::LoopSourceMap>),
    /// A Penguin function with loops.
    PenguinLooped(penguin::LoopedFunction, Option<penguin::text::LoopSourceMap>),
}

/// Parse a source in its format.
pub fn load(src: &Source) -> Result<Ir, CliError> {
    let json = |e: serde_json::Error| {
        CliError::usage(format!("{}:{}:{}: invalid JSON: {e}", src.name, e.line(), e.column().max(1)))
    };
    Ok(match detect(src)? {
        Format::PenguinText => crate::looped_pir::load_pir_text(src)?,
        Format::BirText => crate::looped::load_bir_text(src)?,
        Format::PenguinJson => {
            let f: Function = match serde_json::from_str(&src.text) {
                Ok(f) => f,
                // A looped function's JSON (`ntile fmt F.pir --json` of a file with loops).
                Err(e) => return crate::looped_pir::from_json(src, &src.text).unwrap_or_else(|| Err(json(e))),
            };
            penguin::parse::check_limits(&f).map_err(|(e, m)| CliError::usage(format!("{}: {e}: {m}", src.name)))?;
            check_tensor_names(src, &f)?;
            Ir::Penguin(f, None)
        }
        Format::BirJson => {
            let p: bir::Program = match serde_json::from_str(&src.text) {
                Ok(p) => p,
                // A looped program's JSON (`ntile fmt F.bir --json` of a file with loops).
                Err(e) => match serde_json::from_str::<bir::LoopedProgram>(&src.text) {
                    Ok(lp) if lp.streams.len() == bir::NUM_ENGINES && lp.header.streams.len() == bir::NUM_ENGINES => {
                        return Ok(Ir::BirLooped(lp, None));
                    }
                    _ => return Err(json(e)),
                },
            };
            bir::text::check_limits(&p).map_err(|(at, m)| CliError::usage(format!("{}: {at}: {m}", src.name)))?;
            if p.streams.len() != bir::NUM_ENGINES {
                let n = p.streams.len();
                return Err(CliError::usage(format!("{}: {n} streams, expected {}", src.name, bir::NUM_ENGINES)));
            }
            Ir::Bir(p, None)
        }
    })
}

/// Every tensor of a function from JSON is listed under its own name (the text names each
/// tensor once, so a function whose keys and names differ would not print back).
pub fn check_tensor_names(src: &Source, f: &Function) -> Result<(), CliError> {
    match f.tensors.iter().enumerate().find(|(_, (key, t))| **key != t.name) {
        Some((i, (key, t))) => Err(CliError::usage(format!(
            "{}: {}: the tensor listed as {key:?} is named {:?}",
            src.name,
            penguin::TensorId(i as u32),
            t.name
        ))),
        None => Ok(()),
    }
}

/// Read and parse a file.
pub fn load_path(path: &Path) -> Result<(Source, Ir), CliError> {
    let src = read_source(path)?;
    let ir = load(&src)?;
    Ok((src, ir))
}

/// Pretty JSON of either IR, with a final newline.
pub fn to_json<T: serde::Serialize>(value: &T) -> Result<String, CliError> {
    serde_json::to_string_pretty(value)
        .map(|s| s + "\n")
        .map_err(|e| CliError::internal(format!("cannot encode as JSON: {e}")))
}

/// A Penguin verifier failure: each error with the file line it concerns, then the function
/// with each error printed beside its line.
pub fn penguin_errors(
    src: &Source,
    f: &Function,
    map: Option<&penguin::parse::SourceMap>,
    errors: &VerifierErrors,
) -> CliError {
    let mut msg = format!("{}: {} verifier error(s)\n", src.name, errors.0.len());
    for e in &errors.0 {
        match map.and_then(|m| m.line_of(e.entity)) {
            Some(line) => msg += &format!("{}:{line}: {}: {}\n", src.name, e.entity, e.message),
            None => msg += &format!("{}: {}: {}\n", src.name, e.entity, e.message),
        }
    }
    msg += "\n";
    msg += &penguin::print::print_with_errors(f, errors);
    CliError::usage(msg.trim_end().to_string())
}

/// A BIR verifier failure: each message with the file line of the instruction it names, then
/// the program with each message printed beside its instruction.
pub fn bir_errors(
    src: &Source,
    p: &bir::Program,
    map: Option<&bir::text::SourceMap>,
    what: &str,
    errors: &[bir::VerifyError],
) -> CliError {
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
    CliError::usage(msg.trim_end().to_string())
}

/// Flags of `ntile fmt`.
#[derive(Args, Clone, Debug)]
#[command(after_long_help = "\
Examples:
  ntile fmt examples/gemm_4x16x8.pir           canonical text (computed dependency edges written out)
  ntile gemm --m 4 --k 8 --n 4 --emit penguin | ntile fmt - --json

Exit codes: 0 ok, 2 the file does not parse (the message names line and column).")]
pub struct FmtArgs {
    /// A .pir, .bir or .json file; `-` reads stdin
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
    /// Write the result here (atomically) instead of to stdout
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
}

/// Run `ntile fmt`: the canonical text (or JSON) of a file.
pub fn run(args: &FmtArgs) -> Result<String, CliError> {
    let (src, ir) = load_path(&args.file)?;
    let text = match (&ir, args.json) {
        (Ir::Penguin(f, None), false) => f.to_string(),
        (Ir::Bir(p, None), false) => p.to_string(),
        // Text keeps its comments beside the lines they were written at.
        (Ir::Penguin(f, Some(map)), false) => {
            let lines = penguin::print::lines(f).into_iter().map(|(entity, text)| {
                let line = match entity {
                    penguin::Entity::Function => None,
                    other => map.line_of(other),
                };
                (line, text)
            });
            crate::comments::with_comments(&src.text, lines.collect())
        }
        (Ir::Bir(p, Some(map)), false) => {
            let lines = bir::text::lines(p).into_iter().map(|(at, text)| (map.line_of(at), text));
            crate::comments::with_comments(&src.text, lines.collect())
        }
        (Ir::BirLooped(p, None), false) => p.to_string(),
        (Ir::BirLooped(p, Some(map)), false) => {
            let lines = bir::text::looped_lines(p).into_iter().map(|(at, text)| (map.line_of(at), text));
            crate::comments::with_comments(&src.text, lines.collect())
        }
        (Ir::BirLooped(p, _), true) => to_json(p)?,
        (Ir::PenguinLooped(f, None), false) => f.to_string(),
        (Ir::PenguinLooped(f, Some(map)), false) => {
            let lines = penguin::text::looped_lines(f).into_iter().map(|(at, text)| {
                let line = match at {
                    penguin::text::LoopLine::Plain(penguin::Entity::Function) => None,
                    other => map.line_of(other),
                };
                (line, text)
            });
            crate::comments::with_comments(&src.text, lines.collect())
        }
        (Ir::PenguinLooped(f, _), true) => to_json(f)?,
        (Ir::Penguin(f, _), true) => to_json(f)?,
        (Ir::Bir(p, _), true) => to_json(p)?,
    };
    write_or_return(args.output.as_deref(), text)
}

/// Write `text` to `out` atomically (returning nothing for stdout), or return it.
pub fn write_or_return(out: Option<&Path>, text: String) -> Result<String, CliError> {
    match out {
        Some(path) => {
            npy::write_atomic(path, text.as_bytes())?;
            Ok(String::new())
        }
        None => Ok(text),
    }
}
