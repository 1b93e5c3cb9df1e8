//! One core's share of a GEMM split over the physical cores of a logical NeuronCore
//! (LNC=2): a [`Split`] divides C's rows (`m`), its columns (`n`) or the contraction (`k`)
//! into [`Share`]s, each core's share is planned as a GEMM of its own shape
//! ([`Share::config`]), and [`place_share`] then points that plan's HBM accesses at the
//! share's window of the whole A, B and C, which every core's function declares at full size:
//! the cores' programs then share one HBM layout. A share of K computes a partial sum of all
//! of C in fp32; the driver adds the cores' partial sums after a shared semaphore.

use std::fmt;
use std::str::FromStr;

use penguin::{AccessPattern, Dim, Memory, TensorId, SPARSE_TAGS_PER_WORD};

use super::{GemmConfig, GemmPlan, SparseA};
use crate::error::CodegenError;

/// How a GEMM's output is divided between cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// By rows of C (each core reads its rows of A and all of B).
    M,
    /// By columns of C (each core reads all of A and its columns of B).
    N,
    /// By the contraction (each core reads its columns of A and rows of B, and computes a
    /// partial sum of all of C, which the cores then add).
    K,
}

impl Split {
    /// Every split.
    pub const ALL: [Split; 3] = [Split::M, Split::N, Split::K];

    /// The text name (`m`, `n`, `k`).
    pub fn name(self) -> &'static str {
        match self {
            Split::M => "m",
            Split::N => "n",
            Split::K => "k",
        }
    }

    /// The dimension it divides and that dimension's length in `whole`.
    pub fn dim(self, whole: &GemmConfig) -> (&'static str, u64) {
        match self {
            Split::M => ("M", whole.m),
            Split::N => ("N", whole.n),
            Split::K => ("K", whole.k),
        }
    }

    /// The shares of `cores` cores (`None` when the split dimension is too short to give
    /// every core some of it). Shares are cut at multiples of 128 rows or columns, the first
    /// cores taking the larger ones.
    pub fn shares(self, whole: &GemmConfig, cores: u64) -> Option<Vec<Share>> {
        let (_, len) = self.dim(whole);
        let step = len.div_ceil(cores.max(1)).div_ceil(128) * 128;
        let mut shares = Vec::new();
        let mut at = 0;
        for _ in 0..cores {
            if at >= len {
                return None;
            }
            let size = step.min(len - at);
            let all = Share { m0: 0, m: whole.m, n0: 0, n: whole.n, k0: 0, k: whole.k };
            shares.push(match self {
                Split::M => Share { m0: at, m: size, ..all },
                Split::N => Share { n0: at, n: size, ..all },
                Split::K => Share { k0: at, k: size, ..all },
            });
            at += size;
        }
        Some(shares)
    }
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Split {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "m" => Ok(Split::M),
            "n" => Ok(Split::N),
            "k" => Ok(Split::K),
            _ => Err(format!("unknown split `{s}` (expected m, n or k)")),
        }
    }
}

/// One core's window of C: rows `[m0, m0 + m)`, columns `[n0, n0 + n)`, summed over the
/// contraction's `[k0, k0 + k)` (a share of K when that is not all of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Share {
    /// First row.
    pub m0: u64,
    /// Rows.
    pub m: u64,
    /// First column.
    pub n0: u64,
    /// Columns.
    pub n: u64,
    /// First contraction row.
    pub k0: u64,
    /// Contraction rows.
    pub k: u64,
}

impl Share {
    /// The GEMM a core plans for this share: `whole` with the share's M, N and K, and an
    /// fp32 result when it is a partial sum.
    pub fn config(&self, whole: &GemmConfig) -> GemmConfig {
        let out_dtype = if self.is_partial(whole) { penguin::DType::Fp32 } else { whole.out_dtype };
        GemmConfig { m: self.m, n: self.n, k: self.k, out_dtype, ..whole.clone() }
    }

    /// Whether the share sums part of the contraction only (its C is a partial sum).
    pub fn is_partial(&self, whole: &GemmConfig) -> bool {
        self.k < whole.k
    }
}

/// A row-major matrix of `cols` columns viewed as the window at (`row0`, `col0`) of one of
/// `full_cols` columns.
#[derive(Clone, Copy, Debug)]
struct Window {
    cols: u64,
    full_cols: u64,
    row0: u64,
    col0: u64,
}

impl Window {
    /// The same elements addressed in the full matrix. A dimension whose stride is a whole
    /// number of rows steps rows; any other must stay inside a row (every access the
    /// planner writes is a row window, a column window or rows of one).
    fn place(&self, ap: &mut AccessPattern) -> Result<(), String> {
        if self.cols == self.full_cols && self.row0 == 0 && self.col0 == 0 {
            return Ok(());
        }
        let (cols, full) = (to_i64(self.cols)?, to_i64(self.full_cols)?);
        let (row, col) = (ap.offset.div_euclid(cols), ap.offset.rem_euclid(cols));
        let mut reach = col;
        let mut step = |d: &mut Dim| -> Result<(), String> {
            if d.num <= 1 {
                return Ok(());
            }
            if d.stride % cols == 0 {
                d.stride = d.stride / cols * full;
                Ok(())
            } else if d.stride > 0 {
                reach += d.stride * (i64::from(d.num) - 1);
                Ok(())
            } else {
                Err(format!("a dimension of stride {} steps backwards across rows", d.stride))
            }
        };
        step(&mut ap.partitions)?;
        for d in ap.free.iter_mut() {
            step(d)?;
        }
        if reach >= cols {
            return Err(format!("an access from column {col} reaches column {reach} of a {cols}-column matrix"));
        }
        ap.offset = (row + to_i64(self.row0)?) * full + col + to_i64(self.col0)?;
        Ok(())
    }
}

fn to_i64(v: u64) -> Result<i64, String> {
    i64::try_from(v).map_err(|_| format!("{v} does not fit an element offset"))
}

/// Point a share's plan at its window of the whole GEMM's tensors: declare A, A's tags, B and
/// C at the whole GEMM's shapes and move every HBM access of them to the share's rows,
/// columns and contraction rows (a partial sum's C keeps its fp32 dtype). The plan's own figures (`config`, `tiling`) stay the share's.
pub fn place_share(plan: &mut GemmPlan, whole: &GemmConfig, share: &Share) -> Result<(), CodegenError> {
    if whole.sparsity.is_some() && share.is_partial(whole) {
        return Err(CodegenError::BadGemm(
            "a share of K of a sparse A: its compressed rows do not divide by the contraction".into(),
        ));
    }
    let part = &plan.config;
    let mut windows: Vec<(TensorId, Vec<u64>, Window)> = Vec::new();
    let t = plan.tensors;
    match whole.sparsity {
        Some(p) => {
            let [_, m] = SparseA::values_shape(part.m, part.k, p);
            let full = SparseA::values_shape(whole.m, whole.k, p);
            windows.push((t.a, full.to_vec(), Window { cols: m, full_cols: full[1], row0: 0, col0: share.m0 }));
            let [_, words] = SparseA::tags_shape(part.m, part.k, p);
            let full_tags = SparseA::tags_shape(whole.m, whole.k, p);
            let col0 = share.m0 / u64::from(SPARSE_TAGS_PER_WORD);
            if let Some(tags) = t.a_tags {
                windows.push((
                    tags,
                    full_tags.to_vec(),
                    Window { cols: words, full_cols: full_tags[1], row0: 0, col0 },
                ));
            }
        }
        None if whole.lhs_transposed => {
            windows.push((
                t.a,
                whole.lhs_shape(),
                Window { cols: part.m, full_cols: whole.m, row0: share.k0, col0: share.m0 },
            ));
        }
        None => {
            windows.push((
                t.a,
                whole.lhs_shape(),
                Window { cols: part.k, full_cols: whole.k, row0: share.m0, col0: share.k0 },
            ));
        }
    }
    windows.push((
        t.b,
        vec![whole.k, whole.n],
        Window { cols: part.n, full_cols: whole.n, row0: share.k0, col0: share.n0 },
    ));
    windows.push((
        t.c,
        vec![whole.m, whole.n],
        Window { cols: part.n, full_cols: whole.n, row0: share.m0, col0: share.n0 },
    ));
    let f = &mut plan.function;
    for (id, shape, _) in &windows {
        let (_, data) = f
            .tensors
            .get_index_mut(id.index())
            .ok_or_else(|| CodegenError::BadGemm(format!("the share's plan has no tensor {id} (a bug)")))?;
        data.shape.clone_from(shape);
    }
    for inst in &mut f.insts {
        for tile in inst.operands_mut() {
            if tile.memory != Memory::Hbm {
                continue;
            }
            if let Some((_, _, w)) = windows.iter().find(|(id, _, _)| *id == tile.tensor) {
                w.place(&mut tile.ap).map_err(|e| CodegenError::BadGemm(format!("placing a core's share: {e}")))?;
            }
        }
    }
    Ok(())
}
