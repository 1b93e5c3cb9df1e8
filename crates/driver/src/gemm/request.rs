//! What a GEMM run is asked for: the [`GemmRequest`] (the kernel's every choice) and its
//! [`GemmOptions`] (what the run does and keeps).

use std::sync::Arc;

use codegen::{AutoLimits, BlockSizes, GemmConfig, LoopOrder, Schedule};
use penguin::{DType, HwProfile, PerfMode, SparsityPattern, Target};

use crate::budget;
use crate::cancel::{self, Cancel};
use crate::error::DriverError;

/// Block sizes the caller fixed, in elements; each `None` is the schedule's default (shrunk
/// until the blocks fit SBUF when none is fixed; weighed freely by `auto`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockRequest {
    /// Rows of C per block.
    pub m: Option<u64>,
    /// Columns of C per block.
    pub n: Option<u64>,
    /// Contraction rows per block (`blocked-mnk`).
    pub k: Option<u64>,
}

impl BlockRequest {
    /// Whether any block size is fixed.
    pub fn any(&self) -> bool {
        self.m.is_some() || self.n.is_some() || self.k.is_some()
    }
}

/// A phase of a run starting: `plan`, `lower`, `model`, `simulate`, `check`, ...
pub type Progress = dyn Fn(&str) + Send + Sync;

/// How a GEMM is run and what its outcome keeps.
#[derive(Clone)]
pub struct GemmOptions {
    /// Simulate the program on the inputs (given, or drawn from `seed`).
    pub simulate: bool,
    /// Check the simulated C against the fp64 reference.
    pub check: bool,
    /// Extrapolate the program from smaller GEMMs and model it looped even when it could be
    /// planned whole.
    pub extrapolate: bool,
    /// The caller needs the unrolled plan and program (a timeline, the Penguin function): a
    /// GEMM that would be extrapolated is refused ([`DriverError::NotUnrolled`]).
    pub unrolled: bool,
    /// Model an extrapolated program (without it, only its program and figures are made).
    pub model_extrapolated: bool,
    /// Plan in loops when the schedule can be (`codegen::plan_sampled_skipping`: an explicit
    /// schedule whose loops skip at least half of its nest), lower loop by loop and model
    /// looped, when nothing else is asked (no simulation, nothing unrolled, a modeled
    /// program): the outcome then has no unrolled plan or program, as an extrapolated GEMM's.
    /// `ntile gemm --no-sim` sets it.
    pub plan_in_loops: bool,
    /// Keep C's bytes in its own dtype ([`GemmOutcome::c_bytes`](crate::GemmOutcome::c_bytes)).
    pub c_bytes: bool,
    /// Seed of the random inputs (when none are given).
    pub seed: u64,
    /// The memory budget in bytes (default: half of physical memory).
    pub max_memory: Option<u64>,
    /// Stops the run when set.
    pub cancel: Option<Cancel>,
    /// Told the phase each time one starts.
    pub progress: Option<Arc<Progress>>,
}

impl Default for GemmOptions {
    fn default() -> Self {
        GemmOptions {
            simulate: true,
            check: true,
            extrapolate: false,
            unrolled: false,
            model_extrapolated: true,
            plan_in_loops: false,
            c_bytes: false,
            seed: 0,
            max_memory: None,
            cancel: None,
            progress: None,
        }
    }
}

impl std::fmt::Debug for GemmOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GemmOptions")
            .field("simulate", &self.simulate)
            .field("check", &self.check)
            .field("extrapolate", &self.extrapolate)
            .field("unrolled", &self.unrolled)
            .field("model_extrapolated", &self.model_extrapolated)
            .field("c_bytes", &self.c_bytes)
            .field("seed", &self.seed)
            .field("max_memory", &self.max_memory)
            .field("cancel", &self.cancel)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl GemmOptions {
    pub(crate) fn phase(&self, name: &str) {
        if let Some(p) = &self.progress {
            p(name);
        }
    }

    pub(crate) fn check_cancel(&self) -> Result<(), DriverError> {
        cancel::check(self.cancel.as_ref())
    }
}

/// A GEMM to run: `C[M, N] = A[M, K] @ B[K, N]` with everything that decides its kernel.
#[derive(Clone, Debug)]
pub struct GemmRequest {
    /// Rows of A and C.
    pub m: u64,
    /// Contraction length.
    pub k: u64,
    /// Columns of B and C.
    pub n: u64,
    /// Matmul dtype of A.
    pub lhs_dtype: DType,
    /// Matmul dtype of B.
    pub rhs_dtype: DType,
    /// Dtype of C.
    pub out_dtype: DType,
    /// Dtype of A and B in HBM; `None`: the matmul dtype (as a real kernel keeps them), except
    /// for operands given as data, mixed operand dtypes and uint8, which are fp32 in HBM and
    /// cast on load.
    pub hbm_dtype: Option<DType>,
    /// The target.
    pub target: Target,
    /// The loop nest (`auto` searches).
    pub schedule: Schedule,
    /// Block sizes fixed by the caller.
    pub blocks: BlockRequest,
    /// The outer block loop, if fixed.
    pub order: Option<LoopOrder>,
    /// How A `[M, K]` is transposed: `Some(true)` on the PE, `Some(false)` by the DMA, `None`
    /// the target's default (`auto` weighs both).
    pub pe_transpose: Option<bool>,
    /// A is given as `[K, M]`.
    pub lhs_transposed: bool,
    /// PE perf mode.
    pub perf_mode: PerfMode,
    /// Structured sparsity of A along K.
    pub sparsity: Option<SparsityPattern>,
    /// The hardware profile of the planner's estimate and the cycle model (`None`: the
    /// target's built-in one).
    pub hw: Option<HwProfile>,
    /// Physical cores the GEMM runs on (1, or 2 for a logical NeuronCore of LNC=2 on trn2
    /// and trn3): each core computes its share of C (see [`codegen::Split`]).
    pub lnc: u32,
    /// How C is divided between the cores (`None`: the faster of the splits the cycle model
    /// weighs).
    pub split: Option<codegen::Split>,
    /// How it is run.
    pub options: GemmOptions,
}

impl GemmRequest {
    /// A GEMM with both operands in `dtype`, C in fp32, `auto`'s schedule and every other
    /// choice left to its default.
    pub fn new(m: u64, k: u64, n: u64, dtype: DType, target: Target) -> Self {
        GemmRequest {
            m,
            k,
            n,
            lhs_dtype: dtype,
            rhs_dtype: dtype,
            out_dtype: DType::Fp32,
            hbm_dtype: None,
            target,
            schedule: Schedule::Auto,
            blocks: BlockRequest::default(),
            order: None,
            pe_transpose: None,
            lhs_transposed: false,
            perf_mode: PerfMode::None,
            sparsity: None,
            hw: None,
            lnc: 1,
            split: None,
            options: GemmOptions::default(),
        }
    }

    /// The planner's configuration (`data_given`: A and B are given as data).
    pub fn config(&self, data_given: bool) -> GemmConfig {
        let defaults = BlockSizes::for_schedule(self.schedule);
        GemmConfig {
            m: self.m,
            k: self.k,
            n: self.n,
            lhs_dtype: self.lhs_dtype,
            rhs_dtype: self.rhs_dtype,
            out_dtype: self.out_dtype,
            input_dtype: self.hbm_dtype.unwrap_or_else(|| self.default_hbm_dtype(data_given)),
            target: self.target,
            schedule: self.schedule,
            lhs_transposed: self.lhs_transposed,
            perf_mode: self.perf_mode,
            sparsity: self.sparsity,
            blocks: BlockSizes {
                m: self.blocks.m.unwrap_or(defaults.m),
                n: self.blocks.n.unwrap_or(defaults.n),
                k: self.blocks.k.unwrap_or(defaults.k),
            },
            order: self.order.unwrap_or_default(),
            pe_transpose: self.pe_transpose,
        }
    }

    /// A and B's HBM dtype when none is given: the matmul dtype, except for operands given as
    /// data, mixed operand dtypes and uint8 (fp32 in HBM, cast on load).
    fn default_hbm_dtype(&self, data_given: bool) -> DType {
        if !data_given && self.lhs_dtype == self.rhs_dtype && self.lhs_dtype.is_float() {
            self.lhs_dtype
        } else {
            DType::Fp32
        }
    }

    /// What `auto` may not choose freely: for an explicit schedule whose blocks are searched
    /// (see [`searches_blocks`](Self::searches_blocks)), the schedule itself.
    pub(crate) fn limits(&self) -> AutoLimits {
        AutoLimits {
            schedule: self.searches_blocks().then_some(self.schedule),
            order: self.order,
            block_m: self.blocks.m,
            block_n: self.blocks.n,
            block_k: self.blocks.k,
        }
    }

    /// Whether an explicit blocked schedule leaves a block size free, so that its blocks (and,
    /// unless fixed, its outer loop and transpose method) are the best the cycle model finds
    /// for that schedule, as `auto` weighs them, rather than the schedule's defaults.
    pub fn searches_blocks(&self) -> bool {
        let free = |b: Option<u64>| b.is_none();
        match self.schedule {
            Schedule::BlockedMn => free(self.blocks.m) || free(self.blocks.n),
            Schedule::BlockedMnk => free(self.blocks.m) || free(self.blocks.n) || free(self.blocks.k),
            Schedule::Naive | Schedule::Hoisted | Schedule::Auto => false,
        }
    }

    /// The configuration `auto`'s search starts from when the plan is searched (`auto`, or an
    /// explicit schedule whose blocks are searched); `None` when `cfg` is planned as it is.
    pub(crate) fn search_config(&self, cfg: &GemmConfig) -> Option<GemmConfig> {
        (cfg.schedule == Schedule::Auto || self.searches_blocks())
            .then(|| GemmConfig { schedule: Schedule::Auto, ..cfg.clone() })
    }

    /// The phase label of planning (`plan`, or which search plans it), with `how` the search
    /// is run (` on a proxy, extrapolated`, or empty).
    pub(crate) fn plan_phase(&self, how: &str) -> String {
        match self.schedule {
            Schedule::Auto => format!("plan (auto search{how})"),
            _ if self.searches_blocks() => format!("plan (block search{how})"),
            _ => "plan".to_string(),
        }
    }

    /// The hardware profile (the target's unless one is given).
    pub(crate) fn profile(&self) -> HwProfile {
        self.hw.unwrap_or_else(|| self.target.profile())
    }

    /// Whether the GEMM is extrapolated from smaller ones rather than planned whole (too
    /// large to unroll without a simulation, or asked to); checks the configuration first.
    pub fn extrapolates(&self, data_given: bool) -> Result<bool, DriverError> {
        let cfg = self.config(data_given);
        cfg.validate()?;
        let budget = self.options.max_memory.unwrap_or_else(budget::default_budget);
        Ok(self.options.extrapolate || !self.options.simulate && budget::too_large(&cfg, budget))
    }
}
