//! ntile's pipeline as a library: what every front end (the `ntile` CLI, the Python module,
//! hand-written `.pir`/`.bir` files, the coming NKI door) runs, as Cranelift's `Context`
//! owns verify, optimize and compile while its CLI only parses, calls and prints.
//!
//! Two entry points, both typed values in and out:
//! - [`gemm()`]: a [`GemmRequest`] (shape, dtypes, target, schedule, blocks, perf mode,
//!   sparsity, hardware profile, [`GemmOptions`]) planned by `codegen` (`auto` searches,
//!   lowering and modeling each candidate once), verified, lowered by `bir`, verified again,
//!   cycle-modeled by `sim`, and simulated on its inputs ([`GemmInputs`], or seeded random
//!   ones) and checked against the fp64 reference ([`reference`](mod@reference)) when asked. A GEMM too
//!   large to unroll is extrapolated from smaller ones ([`extrapolate`]) and modeled looped.
//!   The [`GemmOutcome`] holds the plan and its facts, the program, the [`Report`], C and
//!   the trace/SVG exporters.
//! - [`run_program`]: any [`Program`] (a Penguin function or a BIR program, looped or not;
//!   [`program::load`] reads one from text or JSON) verified, lowered when it is Penguin,
//!   simulated on typed input [`Array`]s and modeled: the [`RunOutcome`] holds the output
//!   arrays, the [`RunReport`] and the cycle model ([`Runnable`] exports the timelines).
//! - [`run_nki`]: an NKI kernel's trace (written by the Python tracer) built by the `nki`
//!   crate and run as [`run_program`] runs a Penguin function, with the builder's
//!   allocations and the phases' times in its report ([`mod@nki`]).
//!
//! Around them: the memory budget that refuses a run before it allocates ([`budget`]), the
//! threads (`NTILE_THREADS`, [`threads`]), cancellation by a flag the caller owns
//! ([`Cancel`], checked in every long phase), hardware profiles as JSON ([`hw`]) and the
//! timelines' view of a kernel ([`timeline`]). Every failure is one [`DriverError`], whose
//! [`ErrorKind`] says whose fault it is; the front ends map that once (the CLI to exit codes).
//! Nothing here reads or writes files: the front ends do.
//!
//! ```
//! use driver::{gemm, GemmRequest};
//! use penguin::{DType, Target};
//!
//! let mut request = GemmRequest::new(300, 1000, 777, DType::Bf16, Target::Trn2);
//! request.schedule = codegen::Schedule::Naive;
//! request.options.simulate = false;
//! let outcome = gemm(&request, None).unwrap();
//! let plan = outcome.plan.as_ref().unwrap();
//! assert_eq!(plan.tiling.tiles, [3, 2]);
//! assert_eq!(outcome.report.matmuls, 3 * 2 * 8);
//! assert!(outcome.report.modeled_time_us > 0.0);
//! ```
#![deny(missing_docs)]

mod array;
pub mod budget;
mod cancel;
mod error;
pub mod extrapolate;
pub mod gemm;
pub mod hw;
pub mod json;
mod lower;
pub mod nki;
pub mod program;
pub mod reference;
pub mod run;
pub mod threads;
pub mod timeline;

/// A built NKI kernel (one core's, for a kernel on several).
pub use ::nki::NkiKernel;
pub use cancel::Cancel;
pub use error::{DriverError, ErrorKind, ExtrapolateError, InputProblem};
pub use gemm::{gemm, BlockRequest, GemmInputs, GemmOptions, GemmOutcome, GemmRequest, Operand, Report};
pub use nki::{build_nki, run_nki, NkiBuilt, NkiOptions, NkiRun, NkiTimes};
pub use program::{Program, Source};
pub use run::{
    run_program, Array, ChipFigures, CoreFigures, Elem, Inputs, Output, RunOptions, RunOutcome, RunReport, Runnable,
};
