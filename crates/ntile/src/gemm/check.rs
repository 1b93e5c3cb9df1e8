//! Simulating a planned GEMM and checking its result: the simulation on the planned
//! program, then the fp64 check.
//!
//! The check runs after the simulation, not beside it: the simulation already keeps every
//! core busy (its PE products run on worker threads), so a check prepared on another thread
//! meanwhile only took cores from it (at 2048^3 bf16 on 2 cores it made the simulate phase
//! ~10 ms longer), while after it the check's own sweeps run on every core.

use std::time::Instant;

use codegen::GemmConfig;
use penguin::DType;

use super::{ms, GemmArgs, Inputs};
use crate::api::Watch;
use crate::error::CliError;
use crate::progress::Progress;
use crate::reference::{self, Check, CheckOptions, Matrix};

/// What the simulation and the check give.
pub(super) struct Simulated {
    /// C as f32.
    pub c: Vec<f32>,
    /// C's bytes in its own dtype, when an output file is asked for.
    pub raw: Option<Vec<u8>>,
    /// The check, unless `--no-check`.
    pub check: Option<Check>,
    /// Wall time of the simulation.
    pub simulate_ms: f64,
    /// Wall time of the check, after the simulation.
    pub reference_ms: f64,
}

#[expect(clippy::needless_pass_by_value, reason = "a map_err adapter")]
pub(super) fn sim_error(e: sim::SimError) -> CliError {
    CliError::internal(format!("simulation failed: {e}"))
}

/// Simulate `program` on `inputs` (A already compressed into `sparse` when A is sparse) and
/// check C against the fp64 reference.
pub(super) fn simulate_and_check(
    args: &GemmArgs,
    cfg: &GemmConfig,
    program: &bir::Program,
    inputs: Inputs<'_>,
    sparse: Option<codegen::SparseA>,
    watch: &Watch<'_>,
    progress: &Progress,
) -> Result<Simulated, CliError> {
    let t = Instant::now();
    progress.phase("simulate");
    let mut simulator = crate::threads::simulator(program)?;
    match &sparse {
        Some(s) => {
            simulator.write_hbm_f32("a", &s.values).map_err(sim_error)?;
            let tags: Vec<u8> = s.tags.iter().flat_map(|t| t.to_le_bytes()).collect();
            simulator.write_hbm_tensor("a_tags", &tags).map_err(sim_error)?;
        }
        None => simulator.write_hbm_f32("a", &inputs.a).map_err(sim_error)?,
    }
    simulator.write_hbm_f32("b", &inputs.b).map_err(sim_error)?;
    // A sparse A was compressed from its [M, K] layout, so the inputs are [M, K] by now.
    let lhs_transposed = cfg.lhs_transposed && cfg.sparsity.is_none();
    // The operands wait here for the check (dropped now when there is none).
    let inputs = (!args.no_check).then_some(inputs);
    let (simulator, stats) = watch.simulate(simulator)?;
    let stats = stats.map_err(sim_error)?;
    watch.check()?;
    if let Some(race) = stats.races.first() {
        return Err(CliError::internal(format!("the simulator found a race in a generated kernel (a bug): {race}")));
    }
    let c = simulator.read_hbm_f32("c").map_err(sim_error)?;
    let raw = args.output.as_ref().map(|_| simulator.read_hbm_tensor("c")).transpose().map_err(sim_error)?;
    // The memory images go before the check, which keeps its own copies of the operands.
    drop(simulator);
    drop(sparse);
    let simulate_ms = ms(t);
    let t = Instant::now();
    progress.phase("check");
    let check = inputs.map(|i| CheckOperands::prepare(cfg, lhs_transposed, i).check(&c));
    Ok(Simulated { c, raw, check, simulate_ms, reference_ms: ms(t) })
}

/// The check's operands, rounded as the kernel sees them, with the part of the check that
/// does not need C.
struct CheckOperands {
    a: Vec<f32>,
    b: Vec<f32>,
    m: usize,
    k: usize,
    n: usize,
    prepared: reference::Prepared,
}

impl CheckOperands {
    fn prepare(cfg: &GemmConfig, lhs_transposed: bool, inputs: Inputs<'_>) -> Self {
        let (m, k, n) = (cfg.m as usize, cfg.k as usize, cfg.n as usize);
        // The operands rounded as the kernel sees them: exact in f32, so the check keeps them
        // in f32 (rounded in place) and widens only the parts it multiplies.
        let round = |dtype: DType, v: f32| reference::round_to(dtype, reference::round_to(cfg.input_dtype, v));
        let Inputs { a, b } = inputs;
        let a: Vec<f32> = if lhs_transposed {
            // Stored [K, M].
            (0..m * k).map(|idx| round(cfg.lhs_dtype, a[(idx % k) * m + idx / k])).collect()
        } else {
            let mut a = a.into_owned();
            reference::round_all(&mut a, cfg.input_dtype, cfg.lhs_dtype);
            a
        };
        let mut b = b.into_owned();
        reference::round_all(&mut b, cfg.input_dtype, cfg.rhs_dtype);
        let (am, bm) = (Matrix { rows: m, cols: k, data: &a }, Matrix { rows: k, cols: n, data: &b });
        let prepared = reference::prepare(am, bm, cfg.k, cfg.out_dtype, CheckOptions::default());
        CheckOperands { a, b, m, k, n, prepared }
    }

    fn check(&self, c: &[f32]) -> Check {
        let a = Matrix { rows: self.m, cols: self.k, data: &self.a };
        let b = Matrix { rows: self.k, cols: self.n, data: &self.b };
        self.prepared.check(a, b, c)
    }
}
