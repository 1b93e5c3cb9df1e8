//! What the trace and the SVG say beyond "what ran when": which tensor and output tile each
//! instruction serves, which signal released each wait, and how full SBUF, PSUM and HBM were.
//!
//! A BIR program alone names only engines, semaphores and byte addresses. [`KernelInfo`]
//! adds what its producer knows (a title, the named SBUF buffers, how the HBM tensors of a
//! GEMM map to output tiles and K steps, the source line of each instruction); every field
//! is optional, and without it the analyses fall back to what the program itself says.
//!
//! The analyses run over a [`CycleReport`](crate::CycleReport) in its commit (start-time)
//! order and cost time linear in the instruction count times the few live buffers:
//! - [`flows`]: the signal that released every semaphore wait, replayed exactly as the
//!   cycle model counted it;
//! - [`labels`]: the tensors and the tile `(m, n)` / K step of each instruction, carried by
//!   data flow from the HBM coordinates of the loads through SBUF, the PE and PSUM to the
//!   stores;
//! - [`counters`]: SBUF bytes in use per buffer, PSUM banks live and the HBM rate over time;
//! - [`critical`]: the critical path's time per engine, and so the bottleneck.

pub(crate) mod counters;
pub(crate) mod critical;
pub(crate) mod flows;
pub(crate) mod grid;
pub(crate) mod kind;
pub(crate) mod labels;
pub(crate) mod occupancy;

use bir::{HbmTensor, Program};

/// A named SBUF allocation whose occupancy the timeline tracks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SbufBuffer {
    /// Its name (the Penguin tensor's).
    pub name: String,
    /// First partition.
    pub start_partition: u32,
    /// Partitions.
    pub num_partitions: u32,
    /// Byte offset inside each partition.
    pub byte_offset: u64,
    /// Bytes per partition.
    pub bytes_per_partition: u64,
}

/// A GEMM dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// Rows of A and C.
    M,
    /// Columns of B and C.
    N,
    /// The contraction.
    K,
}

/// How a row-major 2-D HBM tensor of a GEMM maps to output tiles and K steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorAxes {
    /// The HBM tensor's name.
    pub name: String,
    /// The axis along its rows and the elements of one tile (or K step) along it.
    pub rows: (Axis, u64),
    /// The axis along its columns and the elements of one tile (or K step) along it.
    pub cols: (Axis, u64),
}

/// The output tile grid of a GEMM `C[M, N] = A[M, K] @ B[K, N]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmLayout {
    /// Rows of C.
    pub m: u64,
    /// Columns of C.
    pub n: u64,
    /// Output tile rows.
    pub tile_m: u64,
    /// Output tile columns.
    pub tile_n: u64,
    /// Block rows and columns of C (the schedule's outer blocking), if it blocks.
    pub block: Option<(u64, u64)>,
    /// The HBM tensors: A (its rows/cols M and K in either order), B and C.
    pub tensors: Vec<TensorAxes>,
}

impl GemmLayout {
    /// Output tiles along M and N.
    pub fn tiles(&self) -> (u64, u64) {
        (self.m.div_ceil(self.tile_m.max(1)), self.n.div_ceil(self.tile_n.max(1)))
    }

    /// The role of an HBM tensor: `Some(Axis::M)` for A (it has M and K), `Some(Axis::N)`
    /// for B (K and N), `Some(Axis::K)` for C (M and N, no K).
    pub(crate) fn role(&self, name: &str) -> Option<Axis> {
        let t = self.tensors.iter().find(|t| t.name == name)?;
        let has = |a: Axis| t.rows.0 == a || t.cols.0 == a;
        match (has(Axis::M), has(Axis::N), has(Axis::K)) {
            (true, false, true) => Some(Axis::M),
            (false, true, true) => Some(Axis::N),
            (true, true, false) => Some(Axis::K),
            _ => None,
        }
    }
}

/// The file line of every instruction, per engine stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLines {
    /// The file's name as the user gave it.
    pub file: String,
    /// `lines[engine.index()][index]`: the 1-based line of that instruction, if known.
    pub lines: Vec<Vec<Option<u32>>>,
}

/// What the producer of a program knows about it (every field optional).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelInfo {
    /// One line saying what the kernel is (shape, dtypes, target, schedule, blocks).
    pub title: Option<String>,
    /// Named SBUF allocations; without them each disjoint SBUF range the program writes is
    /// a buffer named by its byte offset.
    pub buffers: Vec<SbufBuffer>,
    /// The GEMM's tile grid, if the program is one.
    pub gemm: Option<GemmLayout>,
    /// Source lines, if the program came from a file.
    pub source: Option<SourceLines>,
}

impl KernelInfo {
    /// The SBUF buffers to track: the given ones, or those the program's writes imply.
    pub(crate) fn buffers_of(&self, program: &Program) -> Vec<SbufBuffer> {
        if self.buffers.is_empty() {
            counters::implied_buffers(program)
        } else {
            self.buffers.clone()
        }
    }
}

/// The HBM tensor holding absolute byte `at`, with its index.
pub(crate) fn hbm_tensor_at(program: &Program, at: i64) -> Option<(usize, &HbmTensor)> {
    let at = u64::try_from(at).ok()?;
    program.hbm.iter().enumerate().find(|(_, t)| at >= t.address && at < t.address.saturating_add(t.num_bytes()))
}
