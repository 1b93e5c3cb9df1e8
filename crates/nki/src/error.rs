//! The nki crate's errors. Every error about a record names the kernel's source location
//! (`file.py:line`) first, so a kernel author can go to the line.

use codegen::CodegenError;
use penguin::Target;

/// Errors of the kernel builder.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum NkiError {
    /// User error: the trace is not valid JSON of the format, at `path` (`ops[12].dst`).
    #[error("trace{}{path}: {message}", if path.is_empty() { "" } else { " at " })]
    Trace {
        /// Where in the trace (empty for the whole).
        path: String,
        /// What is wrong.
        message: String,
    },
    /// User error: a record, tensor or view breaks a rule of NKI or of the hardware (the
    /// message names the rule).
    #[error("{loc}: {message}")]
    Invalid {
        /// The kernel's source location.
        loc: String,
        /// The rule broken.
        message: String,
    },
    /// Limit: a tile has more partitions than the hardware's 128.
    #[error("{loc}: {what} has {partitions} partitions, more than the {max} of the hardware")]
    TooManyPartitions {
        /// The kernel's source location.
        loc: String,
        /// The tensor or operand.
        what: String,
        /// Partitions asked for.
        partitions: u64,
        /// The limit.
        max: u32,
    },
    /// Limit: a PSUM tile is larger than the PSUM a tile may use per partition.
    #[error("{loc}: PSUM tile `{tensor}` needs {bytes} bytes per partition, more than the {max} of a PSUM tile on {target} ({fp32} fp32)", fp32 = max / 4)]
    PsumTileTooLarge {
        /// The kernel's source location.
        loc: String,
        /// The tensor.
        tensor: String,
        /// Bytes per partition asked for.
        bytes: u64,
        /// The limit.
        max: u64,
        /// The target.
        target: Target,
    },
    /// Limit: a matmul's stationary free size is over 128 or its moving free size over 512.
    #[error("{loc}: matmul {operand} free size {size} is over the limit of {max}")]
    MatmulTooWide {
        /// The kernel's source location.
        loc: String,
        /// `stationary` or `moving`.
        operand: &'static str,
        /// Its free size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// User error: a matmul's result is not in PSUM (the seed's text).
    #[error("{loc}: Result buffer of matmult must be psum!")]
    MatmulResultNotPsum {
        /// The kernel's source location.
        loc: String,
    },
    /// User error: an operand is in a memory its instruction cannot use.
    #[error("{loc}: {op} {operand} cannot be in {buffer}: {rule}")]
    WrongMemory {
        /// The kernel's source location.
        loc: String,
        /// The record kind.
        op: &'static str,
        /// The operand.
        operand: &'static str,
        /// Its buffer.
        buffer: &'static str,
        /// Why not.
        rule: &'static str,
    },
    /// User error: a view reaches outside its tensor (or tile).
    #[error("{loc}: view of `{tensor}` is out of range: {detail}")]
    ViewOutOfRange {
        /// The kernel's source location.
        loc: String,
        /// The tensor.
        tensor: String,
        /// What is outside.
        detail: String,
    },
    /// User error: a view spans more than one block of a tensor with block dimensions.
    #[error("{loc}: view of `{tensor}` spans blocks: {detail}")]
    ViewSpansBlocks {
        /// The kernel's source location.
        loc: String,
        /// The tensor.
        tensor: String,
        /// Why.
        detail: String,
    },
    /// User error: operands whose shapes must agree do not.
    #[error("{loc}: {op} shapes do not agree: {what}")]
    ShapeMismatch {
        /// The kernel's source location.
        loc: String,
        /// The record kind.
        op: &'static str,
        /// Which shapes.
        what: String,
    },
    /// User error: the kernel reads an output (or scratch) HBM tensor before writing it.
    #[error("{loc}: reads `{tensor}` before the kernel wrote it (a kernel that reads an output it never wrote)")]
    ReadBeforeWrite {
        /// The kernel's source location.
        loc: String,
        /// The tensor.
        tensor: String,
    },
    /// User error: a returned tensor is never written.
    #[error("{loc}: the kernel returns `{tensor}` but never writes it")]
    OutputNeverWritten {
        /// Where the tensor was created.
        loc: String,
        /// The tensor.
        tensor: String,
    },
    /// User error: a matmul's accumulation does not follow the rules of `accumulate`.
    #[error("{loc}: {message}")]
    Accumulation {
        /// The kernel's source location.
        loc: String,
        /// What is wrong, naming the other location involved.
        message: String,
    },
    /// Limit: SBUF or PSUM cannot hold what is live at once.
    #[error(
        "{loc}: {buffer} capacity exceeded allocating `{name}` ({bytes} bytes per partition): live there {}, \
         and {target} has {capacity} bytes per partition",
        if live.is_empty() { "is nothing else".to_string() } else { live.join(", ") }
    )]
    Capacity {
        /// Where the allocation's site is.
        loc: String,
        /// `sbuf` or `psum`.
        buffer: &'static str,
        /// The allocation.
        name: String,
        /// Bytes per partition it needs.
        bytes: u64,
        /// What is live at the same time (name, loc and size).
        live: Vec<String>,
        /// Bytes per partition of the buffer.
        capacity: u64,
        /// The target.
        target: Target,
    },
    /// Unsupported: a record kind (or a form of one) that ntile's instructions cannot
    /// express yet.
    #[error("{loc}: {record} is not supported by ntile yet: {what}")]
    Unsupported {
        /// The kernel's source location.
        loc: String,
        /// The record kind.
        record: &'static str,
        /// What exactly.
        what: String,
    },
    /// User error or limit found by the codegen layer (the kernel name contracts among
    /// them), with the location of the record when there is one.
    #[error("{}{source}", loc.as_ref().map(|l| format!("{l}: ")).unwrap_or_default())]
    Codegen {
        /// The kernel's source location, if the error is about a record.
        loc: Option<String>,
        /// The error.
        source: CodegenError,
    },
    /// Bug: the verifier rejected the function the builder made; `text` is the function
    /// with each error beside its line (and its `loc(...)`).
    #[error("internal error: the built function fails verification ({errors})\n{text}")]
    Verify {
        /// The errors.
        errors: penguin::VerifierErrors,
        /// The function printed with the errors.
        text: String,
    },
    /// Bug: an internal invariant failed.
    #[error("internal error: {0}")]
    Internal(String),
}
