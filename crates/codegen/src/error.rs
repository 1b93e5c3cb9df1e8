//! The codegen crate's errors.

use penguin::{PenguinError, VerifierErrors};

/// Errors of the NeuronCodegen layer and the GEMM planner.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CodegenError {
    /// User error: a matmul result is not in PSUM (the seed's text, verbatim).
    #[error("Result buffer of matmult must be psum!")]
    ResultNotPsum,
    /// User error: an operand that must be a data tile is not (the seed's text, verbatim).
    #[error("value must be a DataTile")]
    NotADataTile,
    /// User error: `finalize_kernel` found a kernel name other than the one opened.
    #[error("Kernel name mismatch")]
    KernelNameMismatch {
        /// The name the builder was opened with.
        expected: String,
        /// The name found.
        found: String,
    },
    /// User error: the kernel name is not an identifier (the seed's prefix, verbatim).
    #[error("Unsupported kernel name {0}")]
    UnsupportedKernelName(String),
    /// Limit: on-chip tiles do not fit the target's SBUF.
    #[error("SBUF capacity exceeded allocating `{tensor}`: it needs {needed} bytes per partition, {used} are already in use, and {target} has {available}")]
    SbufCapacity {
        /// The allocation that failed.
        tensor: String,
        /// Bytes per partition the allocation itself needs.
        needed: u64,
        /// Bytes per partition the target has.
        available: u64,
        /// Bytes per partition already allocated.
        used: u64,
        /// The target.
        target: penguin::Target,
    },
    /// Limit: a tile has more partitions than the state buffer.
    #[error("tile has {partitions} partitions but the statebuf has {statebuf_num_partitions}")]
    TooManyPartitions {
        /// Partitions asked for.
        partitions: u32,
        /// Partitions available.
        statebuf_num_partitions: u32,
    },
    /// Limit: a PSUM tile does not fit one bank.
    #[error("psum tile of {bytes} bytes per partition does not fit a {psum_par_size_in_bytes}-byte bank")]
    PsumBankOverflow {
        /// Bytes per partition asked for.
        bytes: u64,
        /// Bytes per bank per partition.
        psum_par_size_in_bytes: u32,
    },
    /// Limit: more than 8 accumulation groups would be live at once.
    #[error("more than {0} PSUM accumulation groups would be live at once")]
    PsumGroupsExhausted(u32),
    /// User error: a double-row matmul breaks its pack or dtype contract (seed text).
    #[error("{0}")]
    DoubleRow(&'static str),
    /// User error: a sparse matmul breaks its tiling contract (seed text).
    #[error("{0}")]
    Sparse(&'static str),
    /// User error: the A matrix does not satisfy the sparsity pattern.
    #[error("A does not satisfy {pattern} sparsity: row {row}, K group {group} (columns {first}..{end}) has {nonzeros} non-zeros")]
    NotSparse {
        /// The pattern.
        pattern: penguin::SparsityPattern,
        /// First offending row of A.
        row: u64,
        /// Its K group.
        group: u64,
        /// First column of the group.
        first: u64,
        /// One past the last column of the group.
        end: u64,
        /// Non-zeros found.
        nonzeros: u32,
    },
    /// User error: an offloaded emitter's bundle has the wrong number or kind of values.
    #[error("{0}")]
    Bundle(String),
    /// User error: operands of one instruction have incompatible shapes.
    #[error("incompatible operand shapes: {a:?} vs {b:?}")]
    IncompatibleTiles {
        /// First shape.
        a: Vec<u64>,
        /// Second shape.
        b: Vec<u64>,
    },
    /// User error: a K sub-tile does not continue its accumulation group.
    #[error("matmult K sub-tile [{start}, {end}) does not continue its group at {expected} of {total}")]
    KSliceMismatch {
        /// Sub-tile start.
        start: u32,
        /// Sub-tile end.
        end: u32,
        /// Expected start (running offset).
        expected: u32,
        /// K extent of the group.
        total: u32,
    },
    /// User error: a K sub-tile targets a different PSUM region than its group.
    #[error("matmult K sub-tile writes {found} but its accumulation group is {expected}")]
    PsumRegionMismatch {
        /// The group's region.
        expected: String,
        /// The sub-tile's region.
        found: String,
    },
    /// User error: an operand names a tensor that does not exist or lives in the wrong memory.
    #[error("{0}")]
    BadOperand(String),
    /// User error: a GEMM shape or dtype is not accepted.
    #[error("{0}")]
    BadGemm(String),
    /// Unsupported: a feature this layer does not handle yet.
    #[error("{0}")]
    Unsupported(String),
    /// The caller's [`penguin::Cancel`] stopped the planning (its builder reported it).
    #[error("interrupted")]
    Interrupted,
    /// Bug: a step behind this layer (lowering or the cycle model weighing `auto`'s
    /// candidates) failed on a kernel this layer generated.
    #[error("internal error: {0}")]
    Internal(String),
    /// User error or bug, from the base layer.
    #[error(transparent)]
    Penguin(#[from] PenguinError),
    /// Bug in generated code, or user error in hand-built code: the verifier rejected it.
    #[error(transparent)]
    Verify(#[from] VerifierErrors),
}
