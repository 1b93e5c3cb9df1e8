//! The `ntile` command-line tool: a thin shell over the pipeline library ([`driver`]). Each
//! command parses its flags, reads its files, builds the driver's typed request, calls it,
//! and prints or writes what it gives. It is also a library, so that tests run its commands
//! in-process and the Python module runs any command line ([`parse`], [`run()`]).
//!
//! Every command returns its output text or a [`CliError`] carrying the exit code of SPEC
//! section 7: 0 success, 1 result outside the bound, 2 bad input or usage, 3 internal error
//! (a [`driver::DriverError`] is mapped to its code in one place, `From` in [`error`]).
//! Nothing a user passes (flags, `.npy` files) makes it panic, and output files are written
//! atomically.
#![deny(missing_docs)]

pub mod budget;
pub mod calibrate;
pub mod comments;
pub mod compile;
pub mod csv;
pub mod error;
pub mod fmt;
pub mod gemm;
pub mod hw;
pub mod nki;
pub mod npy;
pub mod progress;
pub mod run;
pub mod sweep;
pub mod verify;

use clap::{Parser, Subcommand};

pub use error::CliError;

/// ntile: plan, lower and simulate tiled matrix multiplications for NeuronCore-class targets.
#[derive(Parser, Debug)]
#[command(
    name = "ntile",
    version,
    about,
    long_about = "\
ntile splits a GEMM into hardware-legal sub-tiles for a 128x128 PE array, accumulates the K
sub-tiles in PSUM under START/ACCU/STOP flags, lowers the result to engine instruction
streams, and runs them on a byte-exact simulator checked against an fp64 reference.",
    after_help = "\
Examples:
  ntile gemm                                         1024^3 bf16 on trn2: plan, lower, simulate, check, model
  ntile gemm --m 4096 --k 4096 --n 4096 --no-sim --json
  ntile gemm --m 512 --k 512 --n 512 --svg t.svg --svg-grid grid.svg --trace t.json
  ntile gemm --lhs a.npy --rhs b.npy -o c.npy       your float32 arrays, cast to bf16 on load
  ntile compile examples/gemm_4x16x8.pir --json     verify, lower and print the BIR as JSON
  ntile run examples/gemm_4x16x8.pir --input a=a.npy --input b=b.npy -o c=c.npy
  ntile verify examples/gemm_4x16x8.bir
  ntile fmt examples/gemm_4x16x8.pir --json
  ntile nki examples/nki/legacy/matmul.py matmul_tiled --shape lhsT=1024x1024:bf16 --shape rhs=1024x1024:bf16

Every command takes -o/--output for what it writes and --json for JSON output where it has
one; `ntile COMMAND --help` lists its flags with more examples.

Exit codes: 0 ok, 1 result outside the error bound, 2 bad input, 3 internal error."
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// ntile's commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Plan, lower, simulate and check a GEMM, `C[M,N] = A[M,K] @ B[K,N]`.
    // The help text without the backticks rustdoc needs around the brackets.
    #[command(about = "Plan, lower, simulate and check C[M,N] = A[M,K] @ B[K,N]", long_about = None)]
    Gemm(gemm::GemmArgs),
    /// Verify a Penguin function (.pir), lower it for a target and print the BIR
    Compile(compile::CompileArgs),
    /// Simulate a .pir or .bir file on .npy inputs and write the named tensors
    Run(run::RunArgs),
    /// Check a .pir or .bir file against its IR's verifier; errors print beside their lines
    Verify(verify::VerifyArgs),
    /// Print a .pir, .bir or .json file in canonical form (`-` reads stdin)
    Fmt(fmt::FmtArgs),
    /// Model every GEMM of a CSV (name,m,k,n or SCALE-Sim's Layer,M,N,K) and print a table
    Sweep(sweep::SweepArgs),
    /// Show a target's hardware profile (the figures the cycle model and planner read)
    Hw(hw::HwArgs),
    /// Fit hardware profile keys to measured GEMM times (CSV) and write the profile
    Calibrate(calibrate::CalibrateArgs),
    /// Trace an NKI kernel file, build it, and simulate it on .npy inputs or model it by shape
    Nki(nki::NkiArgs),
}

/// Run a parsed command line: the text for stdout and the exit code.
pub fn run(cli: &Cli) -> Result<(String, u8), CliError> {
    run_with(cli, None)
}

/// [`run()`], stopped by `cancel` (exit code 130, nothing written) in every long phase.
pub fn run_with(cli: &Cli, cancel: Option<&driver::Cancel>) -> Result<(String, u8), CliError> {
    match &cli.command {
        Command::Gemm(args) => {
            let out = gemm::run_with(args, cancel)?;
            let code = match &out.report.check {
                Some(c) if !c.passed => error::EXIT_MISMATCH,
                _ => 0,
            };
            Ok((out.stdout, code))
        }
        Command::Compile(args) => Ok((compile::run(args)?, 0)),
        Command::Run(args) => Ok((run::run_with(args, cancel)?, 0)),
        Command::Verify(args) => Ok((verify::run(args)?, 0)),
        Command::Fmt(args) => Ok((fmt::run(args)?, 0)),
        Command::Sweep(args) => Ok((sweep::run(args, cancel)?, 0)),
        Command::Hw(args) => Ok((hw::run(args)?, 0)),
        Command::Calibrate(args) => Ok((calibrate::run(args, cancel)?, 0)),
        Command::Nki(args) => Ok((nki::run(args)?, 0)),
    }
}

/// Parse a command line (without the program name) as the `ntile` binary does. A bad flag is
/// a usage error whose message is clap's, without its `error: ` prefix and usage footer.
pub fn parse<S: AsRef<str>>(argv: &[S]) -> Result<Cli, CliError> {
    let words = std::iter::once("ntile").chain(argv.iter().map(AsRef::as_ref));
    Cli::try_parse_from(words).map_err(error::clap_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reports_clap_errors_as_usage() {
        let e = parse(&["gemm", "--m", "x"]).err();
        let e = e.map(|e| (e.code, e.message.contains("invalid value 'x' for '--m <M>'")));
        assert_eq!(e, Some((crate::error::EXIT_USAGE, true)));
    }
}
