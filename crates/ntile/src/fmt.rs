//! IR files as the commands read them (a file or stdin, through the driver's one loader,
//! [`driver::program::load`]), and `ntile fmt`, which prints one in canonical form, keeping
//! its comments.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use clap::Args;
use driver::{Program, Source};

use crate::error::CliError;
use crate::npy;

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
    Ok(Source::from_bytes(name, extension, bytes)?)
}

/// Read and parse a file.
pub fn load_path(path: &Path) -> Result<(Source, Program), CliError> {
    let src = read_source(path)?;
    let program = driver::program::load(&src)?;
    Ok((src, program))
}

/// Pretty JSON of either IR, with a final newline.
pub fn to_json<T: serde::Serialize>(value: &T) -> Result<String, CliError> {
    serde_json::to_string_pretty(value)
        .map(|s| s + "\n")
        .map_err(|e| CliError::internal(format!("cannot encode as JSON: {e}")))
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
        (Program::Penguin(f, None), false) => f.to_string(),
        (Program::Bir(p, None), false) => p.to_string(),
        // Text keeps its comments beside the lines they were written at.
        (Program::Penguin(f, Some(map)), false) => {
            let lines = penguin::print::lines(f).into_iter().map(|(entity, text)| {
                let line = match entity {
                    penguin::Entity::Function => None,
                    other => map.line_of(other),
                };
                (line, text)
            });
            crate::comments::with_comments(&src.text, lines.collect())
        }
        (Program::Bir(p, Some(map)), false) => {
            let lines = bir::text::lines(p).into_iter().map(|(at, text)| (map.line_of(at), text));
            crate::comments::with_comments(&src.text, lines.collect())
        }
        (Program::BirLooped(p, None), false) => p.to_string(),
        (Program::BirLooped(p, Some(map)), false) => {
            let lines = bir::text::looped_lines(p).into_iter().map(|(at, text)| (map.line_of(at), text));
            crate::comments::with_comments(&src.text, lines.collect())
        }
        (Program::BirLooped(p, _), true) => to_json(p)?,
        (Program::PenguinLooped(f, None), false) => f.to_string(),
        (Program::PenguinLooped(f, Some(map)), false) => {
            let lines = penguin::text::looped_lines(f).into_iter().map(|(at, text)| {
                let line = match at {
                    penguin::text::LoopLine::Plain(penguin::Entity::Function) => None,
                    other => map.line_of(other),
                };
                (line, text)
            });
            crate::comments::with_comments(&src.text, lines.collect())
        }
        (Program::PenguinLooped(f, _), true) => to_json(f)?,
        (Program::Penguin(f, _), true) => to_json(f)?,
        (Program::Bir(p, _), true) => to_json(p)?,
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
