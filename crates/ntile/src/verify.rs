//! `ntile verify`: run the verifier of a file's IR and print its errors beside their lines.

use std::path::PathBuf;

use clap::Args;
use driver::program::{bir_loops, check_program, penguin_errors, pir_loops};
use driver::Program;

use crate::error::CliError;

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
    let src = crate::fmt::read_source(&args.file)?;
    let mut cores = driver::program::load_cores(&src)?;
    if cores.programs.len() > 1 {
        return verify_chip(&src, cores);
    }
    let program = cores.programs.remove(0);
    match &program {
        Program::Penguin(f, map) => {
            penguin::verify(f).map_err(|e| penguin_errors(&src, f, map.as_ref(), &e))?;
            Ok(format!(
                "{}: ok: kernel {} ({} tensors, {} instructions)\n",
                src.name,
                f.kernel_name,
                f.tensors.len(),
                f.layout.len()
            ))
        }
        Program::Bir(p, map) => {
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
        Program::PenguinLooped(lf, _) if lf.unrolled_len() > pir_loops::MAX_RUN_UNROLLED => {
            // Too large to expand: checked by the looped verifier (parameters exactly, the
            // function rules on each loop's first and last trip).
            pir_loops::verify_unexpanded(&src, lf)?;
            Ok(format!(
                "{}: ok: kernel {} ({} tensors, {} instructions unrolled, {} loops; checked without expanding)\n",
                src.name,
                lf.header.kernel_name,
                lf.header.tensors.len(),
                lf.unrolled_len(),
                pir_loops::loop_count(lf)
            ))
        }
        Program::PenguinLooped(lf, map) => {
            let (f, _) = pir_loops::unroll(&src, lf, map.as_ref())?;
            Ok(format!(
                "{}: ok: kernel {} ({} tensors, {} instructions unrolled, {} loops)\n",
                src.name,
                f.kernel_name,
                f.tensors.len(),
                f.layout.len(),
                pir_loops::loop_count(lf)
            ))
        }
        Program::BirLooped(p, map) => {
            bir_loops::check_looped(&src, p, map.as_ref())?;
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

/// `ntile verify` of a source with one program per core (a chip's `.bir` text, or Penguin
/// functions after `core K` lines, lowered for trn2 as `ntile run` lowers them): each core's
/// program, then the chip as a whole (`bir::verify_chip`: the same target, kernel and HBM
/// table on every core).
fn verify_chip(src: &driver::Source, cores: driver::program::CoreSources) -> Result<String, CliError> {
    let penguin = matches!(cores.programs.first(), Some(Program::Penguin(..) | Program::PenguinLooped(..)));
    let runnable = driver::Runnable::new_chip(&src.name, cores, None)?;
    let programs = runnable.core_programs();
    let Some(first) = programs.first() else {
        return Err(CliError::internal("a chip without cores (a bug)"));
    };
    let per_core: Vec<String> = programs.iter().map(|p| p.num_insts().to_string()).collect();
    let (what, unit) = if penguin { ("kernel", "BIR instructions once lowered") } else { ("program", "instructions") };
    Ok(format!(
        "{}: ok: {what} {} for {} on {} cores ({} {unit})\n",
        src.name,
        first.kernel_name,
        first.target,
        programs.len(),
        per_core.join(" + ")
    ))
}
