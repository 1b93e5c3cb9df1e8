//! `ntile verify`: run the verifier of a file's IR and print its errors beside their lines.

use std::path::PathBuf;

use clap::Args;

use crate::error::CliError;
use crate::fmt::{bir_errors, load_path, penguin_errors, Ir};

/// Flags of `ntile verify`.
#[derive(Args, Clone, Debug)]
#[command(after_long_help = "\
Examples:
  ntile verify examples/gemm_4x16x8.pir
  ntile verify examples/gemm_4x16x8.bir

Exit codes: 0 the IR is valid, 2 it does not parse or breaks a verifier rule (each error is
printed with its file line, then the IR with every error beside the line it concerns).")]
pub struct VerifyArgs {
    /// A .pir, .bir or .json file; `-` reads stdin
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// Run `ntile verify`.
pub fn run(args: &VerifyArgs) -> Result<String, CliError> {
    let (src, ir) = load_path(&args.file)?;
    match &ir {
        Ir::Penguin(f, map) => {
            penguin::verify(f).map_err(|e| penguin_errors(&src, f, map.as_ref(), &e))?;
            Ok(format!(
                "{}: ok: kernel {} ({} tensors, {} instructions)\n",
                src.name,
                f.kernel_name,
                f.tensors.len(),
                f.layout.len()
            ))
        }
        Ir::Bir(p, map) => {
            check_program(&src, p, map.as_ref(), "BIR verifier")?;
            Ok(format!(
                "{}: ok: program {} for {} ({} instructions on {} streams)\n",
                src.name,
                p.kernel_name,
                p.target,
                p.num_insts(),
                p.streams.iter().filter(|s| !s.is_empty()).count()
            ))
        }
        Ir::PenguinLooped(lf, _) if lf.unrolled_len() > crate::looped_pir::MAX_RUN_UNROLLED => {
            // Too large to expand: checked by the looped verifier (parameters exactly, the
            // function rules on each loop's first and last trip).
            crate::looped_pir::verify_unexpanded(&src, lf)?;
            Ok(format!(
                "{}: ok: kernel {} ({} tensors, {} instructions unrolled, {} loops; checked without expanding)\n",
                src.name,
                lf.header.kernel_name,
                lf.header.tensors.len(),
                lf.unrolled_len(),
                crate::looped_pir::loop_count(lf)
            ))
        }
        Ir::PenguinLooped(lf, map) => {
            let (f, _) = crate::looped_pir::unroll(&src, lf, map.as_ref())?;
            Ok(format!(
                "{}: ok: kernel {} ({} tensors, {} instructions unrolled, {} loops)\n",
                src.name,
                f.kernel_name,
                f.tensors.len(),
                f.layout.len(),
                crate::looped_pir::loop_count(lf)
            ))
        }
        Ir::BirLooped(p, map) => {
            crate::looped::check_looped(&src, p, map.as_ref())?;
            Ok(format!(
                "{}: ok: program {} for {} ({} instructions unrolled, {} loops, on {} streams)\n",
                src.name,
                p.header.kernel_name,
                p.header.target,
                p.unrolled_len(),
                bir::text::looped_lines(p).iter().filter(|(l, _)| matches!(l, bir::text::LoopLine::Open(..))).count(),
                p.streams.iter().filter(|s| !s.is_empty()).count()
            ))
        }
    }
}

/// Run the BIR verifier; its errors are the user's (a hand-written or lowered program).
pub fn check_program(
    src: &crate::fmt::Source,
    p: &bir::Program,
    map: Option<&bir::text::SourceMap>,
    what: &str,
) -> Result<(), CliError> {
    match bir::verify_program(p) {
        Ok(()) => Ok(()),
        Err(bir::BirError::Verify(errors)) => Err(bir_errors(src, p, map, what, &errors)),
        Err(other) => Err(CliError::usage(format!("{}: {other}", src.name))),
    }
}
