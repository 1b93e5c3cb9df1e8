//! `ntile compile`: verify a Penguin function, lower it for a target and verify the BIR.
//!
//! A function with loops compiles to a program with loops: it is verified and lowered on its
//! expansion as any function is (so its errors, and the programs it is refused for, are the
//! unrolled twin's), then lowered again loop by loop ([`bir::lower_looped`]), every engine
//! stream keeping its loops; where a loop's iterations land on different engines (a DMA queue
//! rotating with the trip), the lowering rolled afresh (`bir::roll`, as `ntile gemm --emit bir`
//! prints it) keeps more loops, and the shorter of the two is printed.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use driver::program::{bir_loops, compile_function, pir_loops};
use driver::Program;
use penguin::Target;

use crate::error::CliError;
use crate::fmt::{load_path, to_json, write_or_return};

/// What `ntile compile` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum CompileEmit {
    /// The BIR program as `.bir` text.
    #[default]
    Bir,
    /// The BIR program as JSON.
    Json,
}

/// Flags of `ntile compile`.
#[derive(Args, Clone, Debug)]
#[command(after_long_help = "\
Examples:
  ntile compile examples/gemm_4x16x8.pir                 BIR text on stdout
  ntile compile examples/gemm_4x16x8.pir --target trn1 -o gemm.bir
  ntile compile kernel.pir --json                        the BIR as JSON (same as --emit json)

A function with loops (`loop iD xT { ... }`) compiles to BIR whose engine streams loop the
same way, with semaphore waits stepping per trip, or, when that is shorter (a loop whose
trips go to different DMA queues), to its lowering rolled into loops as `ntile gemm --emit bir`
prints it; either way its expansion is the unrolled twin's program.

Exit codes: 0 ok, 2 the function does not parse, breaks a verifier rule, does not fit the
target, or lowers to a program the BIR verifier rejects (errors are printed beside their lines).")]
pub struct CompileArgs {
    /// A Penguin function: .pir text or its JSON; `-` reads stdin
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Target: trn1, trn2 or trn3
    #[arg(long, default_value = "trn2")]
    pub target: Target,
    /// Output format
    #[arg(long, value_enum, default_value = "bir")]
    pub emit: CompileEmit,
    /// Print the BIR as JSON (the same as `--emit json`)
    #[arg(long, conflicts_with = "emit")]
    pub json: bool,
    /// Write the result here (atomically) instead of to stdout
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
}

/// Run `ntile compile`.
pub fn run(args: &CompileArgs) -> Result<String, CliError> {
    let (src, program) = load_path(&args.file)?;
    let looped = match &program {
        Program::PenguinLooped(lf, _) => Some(lf.clone()),
        _ => None,
    };
    let program = pir_loops::expand(&src, program)?;
    let Program::Penguin(f, map) = &program else {
        return Err(CliError::usage(format!(
            "{}: is a BIR program; `ntile compile` takes a Penguin function (.pir). Use `ntile verify` or `ntile run` on BIR",
            src.name
        )));
    };
    let program = compile_function(&src, f, map.as_ref(), args.target)?;
    let emit = if args.json { CompileEmit::Json } else { args.emit };
    let text = match (looped, emit) {
        (None, CompileEmit::Bir) => program.to_string(),
        (None, CompileEmit::Json) => to_json(&program)?,
        (Some(lf), emit) => {
            // The expansion lowered and verified: lowering it loop by loop is ntile's to get right.
            let bug = |what: String| CliError::internal(format!("{}: {what} (a bug)", src.name));
            let lp = bir::lower_looped(&lf, args.target).map_err(|e| bug(format!("lowering the loops failed: {e}")))?;
            bir::verify_looped(&lp).map_err(|errors| {
                let first = errors.first().map(ToString::to_string).unwrap_or_default();
                bug(format!("the program lowered loop by loop fails the BIR verifier: {first}"))
            })?;
            // Loops whose iterations land on different engines (a DMA queue rotating with the
            // trip) cannot stay loops of one stream; the lowering rolled afresh finds the
            // loops of each stream instead. The shorter of the two is printed (both expand to
            // the unrolled lowering, the rolled one without origins).
            let rolled = bir_loops::rolled(&program);
            let lp = if rolled.to_string().len() < lp.to_string().len() { rolled } else { lp };
            match emit {
                CompileEmit::Bir => lp.to_string(),
                CompileEmit::Json => to_json(&lp)?,
            }
        }
    };
    write_or_return(args.output.as_deref(), text)
}
