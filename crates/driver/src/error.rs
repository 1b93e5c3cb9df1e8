//! What can go wrong in the pipeline: one error enum for every phase, wrapping the lower
//! layers' errors, and whose fault each is ([`ErrorKind`]) for the front ends to map once
//! (the CLI to its exit codes, the Python module to its exceptions).

use codegen::CodegenError;

use crate::extrapolate::fit::FitError;

/// Whose fault an error is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request or the program given: bad input, a limit, something unsupported.
    Input,
    /// A bug: an internal invariant failed.
    Bug,
    /// The caller's [`crate::Cancel`] stopped the run.
    Interrupted,
}

/// A failure of the pipeline.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// Planning failed: user error, limit or unsupported for most variants, a bug for
    /// `Verify`, `Penguin` and `Internal` (the message says so).
    #[error("{}", codegen_message(.0))]
    Codegen(CodegenError),
    /// Lowering failed: a limit of the target or unsupported, or a bug for `Internal` and
    /// `Verify` (the message says so).
    #[error("{}", bir_message(.0))]
    Bir(bir::BirError),
    /// Bug: the simulation of a generated kernel failed.
    #[error("simulation failed: {0}")]
    Sim(sim::SimError),
    /// Limit: a GEMM too large to unroll could not be extrapolated (a reduced GEMM that
    /// failed gives its own error instead).
    #[error(transparent)]
    Extrapolate(ExtrapolateError),
    /// Limit: the run would exceed the memory budget or what the simulator can hold (the
    /// message names both and what to do).
    #[error("{0}")]
    Budget(String),
    /// The caller's cancellation flag stopped the run.
    #[error("interrupted")]
    Interrupted,
    /// User error: the request or the program given, with a message naming the problem
    /// (and the file and line, when the program came from text).
    #[error("{0}")]
    Input(String),
    /// User error: an input array of a program run does not fit its tensor.
    #[error("input `{tensor}`: {problem}")]
    InputArray {
        /// The tensor.
        tensor: String,
        /// What is wrong with the array.
        problem: InputProblem,
    },
    /// User error: a program run lacks the contents of one of its input tensors.
    #[error("{program}: input `{tensor}` is not given")]
    MissingInput {
        /// The program's name (its file, when it came from one).
        program: String,
        /// The tensor.
        tensor: String,
    },
    /// User error: a BIR program is for another target than the one asked for.
    #[error("{program}: the program is for {program_target}, but the target given is {given}")]
    TargetMismatch {
        /// The program's name (its file, when it came from one).
        program: String,
        /// The program's target.
        program_target: penguin::Target,
        /// The target asked for.
        given: penguin::Target,
    },
    /// User error: the GEMM would be extrapolated from smaller GEMMs (too large to unroll, or
    /// asked to), but the request needs its unrolled program.
    #[error("{why}")]
    NotUnrolled {
        /// Why it is extrapolated.
        why: String,
    },
    /// An NKI kernel could not be built: the kernel's error (naming its `file.py:line`), or a
    /// bug for `Internal` and `Verify`.
    #[error(transparent)]
    Nki(#[from] nki::NkiError),
    /// Bug: an internal invariant failed (the message says what).
    #[error("{0}")]
    Internal(String),
}

/// What is wrong with an input array of a program run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputProblem {
    /// Its shape is not the tensor's.
    #[error("shape {given:?} but tensor `{tensor}` is {want:?}")]
    Shape {
        /// The tensor.
        tensor: String,
        /// The array's shape.
        given: Vec<u64>,
        /// The tensor's.
        want: Vec<u64>,
    },
    /// Its element type is not one the tensor takes.
    #[error("holds {} but tensor `{tensor}` is {dtype} (it takes {accepts})", .given.descr())]
    Dtype {
        /// The tensor.
        tensor: String,
        /// The array's element type.
        given: crate::array::Elem,
        /// The tensor's dtype.
        dtype: penguin::DType,
        /// The element types it takes.
        accepts: &'static str,
    },
    /// The simulator refused its bytes.
    #[error("{0}")]
    Store(String),
}

impl DriverError {
    /// Whose fault the error is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            DriverError::Codegen(CodegenError::Interrupted)
            | DriverError::Bir(bir::BirError::Interrupted)
            | DriverError::Sim(sim::SimError::Interrupted) => ErrorKind::Interrupted,
            DriverError::Codegen(e) => codegen_kind(e),
            DriverError::Bir(e) => bir_kind(e),
            DriverError::Sim(_) | DriverError::Internal(_) => ErrorKind::Bug,
            DriverError::Nki(nki::NkiError::Internal(_) | nki::NkiError::Verify { .. }) => ErrorKind::Bug,
            DriverError::Nki(_) => ErrorKind::Input,
            DriverError::Extrapolate(_)
            | DriverError::Budget(_)
            | DriverError::Input(_)
            | DriverError::InputArray { .. }
            | DriverError::MissingInput { .. }
            | DriverError::TargetMismatch { .. }
            | DriverError::NotUnrolled { .. } => ErrorKind::Input,
            DriverError::Interrupted => ErrorKind::Interrupted,
        }
    }

    /// A bug, with a message saying what failed.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        DriverError::Internal(message.into())
    }

    /// The user's error, with a message naming the problem.
    pub(crate) fn input(message: impl Into<String>) -> Self {
        DriverError::Input(message.into())
    }
}

impl From<CodegenError> for DriverError {
    /// A planning failure; the planner stopped by the caller's flag is [`DriverError::Interrupted`].
    fn from(e: CodegenError) -> Self {
        match e {
            CodegenError::Interrupted => DriverError::Interrupted,
            e => DriverError::Codegen(e),
        }
    }
}

impl From<bir::BirError> for DriverError {
    /// A lowering failure; the lowering stopped by the caller's flag is [`DriverError::Interrupted`].
    fn from(e: bir::BirError) -> Self {
        match e {
            bir::BirError::Interrupted => DriverError::Interrupted,
            e => DriverError::Bir(e),
        }
    }
}

impl From<sim::SimError> for DriverError {
    /// A simulation failure; the simulator stopped by the caller's flag is [`DriverError::Interrupted`].
    fn from(e: sim::SimError) -> Self {
        match e {
            sim::SimError::Interrupted => DriverError::Interrupted,
            e => DriverError::Sim(e),
        }
    }
}

impl From<ExtrapolateError> for DriverError {
    /// A reduced GEMM's own failure is the error; the others are the extrapolation's.
    fn from(e: ExtrapolateError) -> Self {
        match e {
            ExtrapolateError::Plan(e) => e.into(),
            ExtrapolateError::Reduced(e) => *e,
            other => DriverError::Extrapolate(other),
        }
    }
}

fn codegen_kind(e: &CodegenError) -> ErrorKind {
    use CodegenError as E;
    match e {
        E::Verify(_) | E::Penguin(_) | E::Internal(_) => ErrorKind::Bug,
        E::ResultNotPsum
        | E::NotADataTile
        | E::KernelNameMismatch { .. }
        | E::UnsupportedKernelName(_)
        | E::SbufCapacity { .. }
        | E::TooManyPartitions { .. }
        | E::PsumBankOverflow { .. }
        | E::PsumGroupsExhausted(_)
        | E::IncompatibleTiles { .. }
        | E::KSliceMismatch { .. }
        | E::PsumRegionMismatch { .. }
        | E::BadOperand(_)
        | E::BadGemm(_)
        | E::DoubleRow(_)
        | E::Bundle(_)
        | E::Sparse(_)
        | E::NotSparse { .. }
        | E::Unsupported(_) => ErrorKind::Input,
        E::Interrupted => ErrorKind::Interrupted,
    }
}

/// A planning error as the user reads it: a bug says it is one.
fn codegen_message(e: &CodegenError) -> String {
    use CodegenError as E;
    match e {
        E::Verify(_) => format!("generated kernel failed verification (a bug): {e}"),
        E::Penguin(_) => format!("internal error: {e}"),
        E::Internal(_) => format!("{e} (a bug)"),
        _ => e.to_string(),
    }
}

fn bir_kind(e: &bir::BirError) -> ErrorKind {
    use bir::BirError as E;
    match e {
        E::SbufCapacity { .. } | E::TooManyStrides { .. } | E::Unsupported(_) | E::ShapeMismatch { .. } => {
            ErrorKind::Input
        }
        E::Internal(_) | E::Verify(_) => ErrorKind::Bug,
        E::Interrupted => ErrorKind::Interrupted,
    }
}

/// A lowering error as the user reads it: a bug says it is one.
fn bir_message(e: &bir::BirError) -> String {
    match bir_kind(e) {
        ErrorKind::Bug => format!("lowering failed (a bug): {e}"),
        _ => e.to_string(),
    }
}

/// Why a GEMM could not be extrapolated.
#[derive(Debug, thiserror::Error)]
pub enum ExtrapolateError {
    /// Limit: the reduced GEMMs do not determine the full one (structure or a number differs).
    #[error("cannot extrapolate {what} from the reduced GEMMs (documents 0, 1, ...: {shapes}): {source}")]
    Fit {
        /// The document fitted.
        what: &'static str,
        /// The reduced GEMMs' shapes.
        shapes: String,
        /// The field that failed.
        source: Box<FitError>,
    },
    /// Limit: a fitted number is past the range of its field.
    #[error("the extrapolated program does not fit BIR's limits: `{path}` would be {value}, past {limit}")]
    Limit {
        /// The field, as a JSON path.
        path: String,
        /// Its value.
        value: u64,
        /// The limit, in words.
        limit: &'static str,
    },
    /// Limit: the reduced GEMMs are over the time or memory allowed.
    #[error("too large to extrapolate: {0}")]
    TooLarge(String),
    /// The fitted function rolled along its nest does not lower natively (the rolled BIR
    /// lowerings are fitted instead).
    #[error("the extrapolated function does not lower along its loops: {0}")]
    Native(String),
    /// A reduced GEMM failed to plan (SBUF capacity, bad input, a bug).
    #[error("{0}")]
    Plan(CodegenError),
    /// A reduced GEMM failed to lower or encode (with its own error).
    #[error("{0}")]
    Reduced(Box<DriverError>),
}

impl ExtrapolateError {
    /// A reduced GEMM's failure.
    pub(crate) fn reduced(e: DriverError) -> Self {
        ExtrapolateError::Reduced(Box::new(e))
    }

    /// Whether an attempt on the nests that failed this way leaves the rolled lowerings to try.
    pub(crate) fn falls_back(&self) -> bool {
        matches!(
            self,
            ExtrapolateError::Fit { .. }
                | ExtrapolateError::Native(_)
                | ExtrapolateError::TooLarge(_)
                | ExtrapolateError::Limit { .. }
        )
    }

    /// Whether this is a fitted number outside the 64-bit integers (no larger base helps).
    pub(crate) fn is_overflow(&self) -> bool {
        matches!(self, ExtrapolateError::Fit { source, .. } if matches!(**source, FitError::Overflow { .. }))
    }
}
