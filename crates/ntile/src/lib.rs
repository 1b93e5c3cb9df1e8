//! The `ntile` command-line tool as a library, so that tests can run its commands in-process.
//!
//! Every command returns its output text or a [`CliError`] carrying the exit code of SPEC
//! section 7: 0 success, 1 result outside the bound, 2 bad input or usage, 3 internal error.
//! Nothing a user passes (flags, `.npy` files) makes it panic, and output files are written
//! atomically.
#![deny(missing_docs)]

pub mod error;
pub mod gemm;
pub mod npy;
pub mod reference;

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
streams, and runs them on a byte-exact simulator checked against an fp64 reference."
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// ntile's commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Plan, lower, simulate and check C[M,N] = A[M,K] @ B[K,N]
    Gemm(gemm::GemmArgs),
}

/// Run a parsed command line: the text for stdout and the exit code.
pub fn run(cli: &Cli) -> Result<(String, u8), CliError> {
    match &cli.command {
        Command::Gemm(args) => {
            let out = gemm::run(args)?;
            let code = match &out.report.check {
                Some(c) if !c.passed => error::EXIT_MISMATCH,
                _ => 0,
            };
            Ok((out.stdout, code))
        }
    }
}
