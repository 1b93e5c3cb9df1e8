//! Simulating a planned GEMM and checking its result: the simulation on the planned
//! program, and the fp64 check, whose part that does not need C is prepared on another
//! thread while the kernel is simulated when the operand copies are small enough.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use codegen::{GemmConfig, GemmPlan};
use penguin::{Cancel, DType};

use super::inputs::Inputs;
use super::request::GemmOptions;
use crate::error::DriverError;
use crate::lower::ms;
use crate::reference::{self, Check, CheckOptions, Matrix};

/// What the simulation and the check give.
pub(super) struct Simulated {
    /// C as f32.
    pub c: Vec<f32>,
    /// C's bytes in its own dtype, when the options ask for them.
    pub raw: Option<Vec<u8>>,
    /// The check, unless the options skip it.
    pub check: Option<Check>,
    /// Wall time of the simulation.
    pub simulate_ms: f64,
    /// Wall time of the check after the simulation (its thread's remaining work included).
    pub reference_ms: f64,
}

/// The names of a planned GEMM's HBM tensors.
pub(super) struct Names {
    a: String,
    a_tags: Option<String>,
    b: String,
    c: String,
}

impl Names {
    /// The names in `plan`'s function.
    pub(super) fn of(plan: &GemmPlan) -> Result<Names, DriverError> {
        let name = |id: penguin::TensorId| {
            penguin::FunctionView::tensor(&plan.function, id)
                .map(|t| t.name.clone())
                .ok_or_else(|| DriverError::internal(format!("the plan has no tensor {id} (a bug)")))
        };
        let t = plan.tensors;
        Ok(Names { a: name(t.a)?, a_tags: t.a_tags.map(name).transpose()?, b: name(t.b)?, c: name(t.c)? })
    }
}

/// What is simulated: one core's program, or a chip of several.
#[derive(Clone, Copy)]
pub(super) enum Kernel<'a> {
    /// One core: the program shared with the simulator, not copied for it.
    One(&'a Arc<bir::Program>),
    /// The cores of a logical NeuronCore, sharing HBM.
    Chip(&'a bir::Chip),
}

/// A simulator of a [`Kernel`].
enum Running {
    One(Box<sim::Simulator>),
    Chip(sim::ChipSimulator),
}

impl Running {
    fn new(kernel: Kernel<'_>) -> Result<Running, DriverError> {
        Ok(match kernel {
            Kernel::One(p) => Running::One(Box::new(crate::threads::simulator_shared(Arc::clone(p))?)),
            Kernel::Chip(c) => Running::Chip(crate::threads::chip_simulator(c)?),
        })
    }

    /// The simulator holding the HBM image.
    fn hbm(&mut self) -> Result<&mut sim::Simulator, DriverError> {
        match self {
            Running::One(s) => Ok(s),
            Running::Chip(c) => Ok(c.hbm()?),
        }
    }

    /// The simulator holding the HBM image, the others dropped.
    fn into_hbm(self) -> Result<sim::Simulator, DriverError> {
        match self {
            Running::One(s) => Ok(*s),
            Running::Chip(c) => Ok(c.into_hbm()?),
        }
    }

    /// Run it; the first race it found, if any.
    fn run(self, cancel: Option<&Cancel>) -> Result<(Running, Option<sim::Race>), DriverError> {
        match self {
            Running::One(s) => {
                let (s, stats) = crate::cancel::simulate(*s, cancel)?;
                let race = stats?.races.into_iter().next();
                Ok((Running::One(Box::new(s)), race))
            }
            Running::Chip(mut c) => {
                c.set_cancel(cancel);
                let stats = match c.run() {
                    Err(sim::SimError::Interrupted) => return Err(DriverError::Interrupted),
                    other => other?,
                };
                Ok((Running::Chip(c), stats.races.into_iter().next()))
            }
        }
    }
}

/// The operands a GEMM is simulated on.
pub(super) enum Operands<'a> {
    /// In memory (given, or drawn beforehand): written to HBM whole.
    Values(Inputs<'a>),
    /// The seeded random inputs of [`super::random_inputs`] (not uint8), drawn straight into
    /// HBM a piece at a time, for a GEMM whose check does not keep its operands
    /// ([`keeps_operands`]).
    Drawn { seed: u64 },
}

/// Values drawn at a time into HBM (16 MiB of f32).
const DRAW_PIECE: usize = 1 << 22;

/// Whether the check keeps the operands beside the simulation (rounded, and prepared while
/// it runs) rather than reading them back from HBM after it.
pub(super) fn keeps_operands(opts: &GemmOptions, cfg: &GemmConfig) -> bool {
    let operand_bytes = cfg.m.saturating_mul(cfg.k).saturating_add(cfg.k.saturating_mul(cfg.n)).saturating_mul(4);
    opts.check && operand_bytes <= concurrent_check_bytes()
}

/// Whether the GEMM's drawn inputs are drawn straight into HBM when it is simulated: dense
/// ones (a sparse A is pruned and compressed from its drawn values; uint8 values come from
/// another draw) that the check does not keep beside the simulation ([`keeps_operands`]).
/// Nothing then holds them as f32 (an 8192^3 GEMM's: 512 MiB), and the check reads them
/// back from HBM.
pub(super) fn streams_inputs(opts: &GemmOptions, cfg: &GemmConfig) -> bool {
    cfg.sparsity.is_none()
        && cfg.lhs_dtype != DType::Uint8
        && cfg.rhs_dtype != DType::Uint8
        && !keeps_operands(opts, cfg)
}

/// Simulate `kernel` (the GEMM `cfg`, whose HBM tensors are `names`) on `operands` (A
/// already compressed into `sparse` when A is sparse) and check C against the fp64
/// reference.
pub(super) fn simulate_and_check(
    opts: &GemmOptions,
    (cfg, names): (&GemmConfig, &Names),
    kernel: Kernel<'_>,
    operands: Operands<'_>,
    sparse: Option<codegen::SparseA>,
) -> Result<Simulated, DriverError> {
    let (m, k, n) = (cfg.m, cfg.k, cfg.n);
    let t = Instant::now();
    opts.phase("simulate");
    let mut running = Running::new(kernel)?;
    let simulator = running.hbm()?;
    let concurrent = keeps_operands(opts, cfg);
    // `None`: drawn into HBM.
    let inputs = match operands {
        Operands::Values(inputs) => Some(inputs),
        // Inputs that are not drawn piece by piece (the caller asked for it against the
        // rule) are drawn whole.
        Operands::Drawn { seed } if !streams_inputs(opts, cfg) || sparse.is_some() => {
            Some(super::random_inputs(m, k, n, seed, (cfg.lhs_dtype, cfg.rhs_dtype)))
        }
        Operands::Drawn { seed } => {
            let mut draw = |name: &str, first: u64, len: u64| {
                super::random::uniform_pieces(seed, first, len as usize, DRAW_PIECE, |at, values| {
                    opts.check_cancel()?;
                    Ok::<(), DriverError>(simulator.write_hbm_f32_at(name, at, values)?)
                })
            };
            draw(&names.a, 0, m * k)?;
            draw(&names.b, m * k, k * n)?;
            #[cfg(test)]
            DRAWN_INTO_HBM.set(DRAWN_INTO_HBM.get() + 1);
            None
        }
    };
    match (&sparse, &names.a_tags, &inputs) {
        (Some(s), Some(tags_name), Some(_)) => {
            simulator.write_hbm_f32(&names.a, &s.stationary_values())?;
            let tags: Vec<u8> = s.packed_tags().iter().flat_map(|t| t.to_le_bytes()).collect();
            simulator.write_hbm_tensor(tags_name, &tags)?;
        }
        (None, None, Some(inputs)) => simulator.write_hbm_f32(&names.a, &inputs.a)?,
        (None, None, None) => {}
        _ => return Err(DriverError::internal("a sparse A without tags, or tags without a sparse A (a bug)")),
    }
    if let Some(inputs) = &inputs {
        simulator.write_hbm_f32(&names.b, &inputs.b)?;
    }
    // A sparse A was compressed from its [M, K] layout, so the inputs are [M, K] by now.
    let lhs_transposed = cfg.lhs_transposed && cfg.sparsity.is_none();
    // Operands too large to prepare beside the simulation are not kept through it either:
    // the check reads them back from HBM afterwards (a dense A is stored as drawn or given,
    // rounded to its HBM dtype, which the check's rounding leaves as it is), once their
    // digests show that the kernel left them as they were.
    let from_hbm = opts.check && !concurrent && sparse.is_none();
    let digests = if from_hbm {
        Some((simulator.hbm_tensor_digest(&names.a)?, simulator.hbm_tensor_digest(&names.b)?))
    } else {
        None
    };
    // The inputs wait here for whichever thread prepares the check: the scoped thread during
    // the simulation, or this one after it (the thread could not start); read back from HBM,
    // they are dropped here.
    let slot = Mutex::new(inputs.filter(|_| opts.check && !from_hbm));
    let prepare = || {
        if crate::cancel::stopped(opts.cancel.as_ref()) {
            return None;
        }
        let taken = slot.lock().ok().and_then(|mut i| i.take());
        taken.and_then(|i| CheckOperands::prepare(cfg, lhs_transposed, i, opts.cancel.as_ref()))
    };
    std::thread::scope(|scope| {
        let early = concurrent
            .then(|| std::thread::Builder::new().name("ntile-check".into()).spawn_scoped(scope, prepare).ok())
            .flatten();
        // The simulation's outcome is taken only after the check's thread is joined, so that
        // an error here never leaves it behind (or loses a failure of it).
        let simulated = (|| {
            let (mut running, race) = running.run(opts.cancel.as_ref())?;
            opts.check_cancel()?;
            if let Some(race) = race {
                return Err(DriverError::internal(format!(
                    "the simulator found a race in a generated kernel (a bug): {race}"
                )));
            }
            let simulator = running.hbm()?;
            let raw = opts.c_bytes.then(|| simulator.read_hbm_tensor(&names.c)).transpose()?;
            if let Some(before) = digests {
                let after = (simulator.hbm_tensor_digest(&names.a)?, simulator.hbm_tensor_digest(&names.b)?);
                if after != before {
                    return Err(DriverError::internal(
                        "the kernel wrote into its input A or B in HBM (a bug in the generated kernel)",
                    ));
                }
            }
            // The memory images go before the check, which keeps its own copies of the
            // operands: the bytes of A and B (narrower than f32) are copied out and the
            // images freed before they are decoded, so that their f32 values never sit
            // beside the HBM image.
            let wanted: &[&str] = if digests.is_some() { &[&names.c, &names.a, &names.b] } else { &[&names.c] };
            let mut values = running.into_hbm()?.into_hbm_f32(wanted)?.into_iter();
            let c = values.next().ok_or_else(|| DriverError::internal("C was not read back (a bug)"))?;
            let read_back = match (values.next(), values.next()) {
                (Some(a), Some(b)) => Some(Inputs { a: a.into(), b: b.into() }),
                _ => None,
            };
            drop(sparse);
            Ok((c, raw, read_back, ms(t)))
        })();
        let t = Instant::now();
        let early =
            early.map(|handle| handle.join().map_err(|_| DriverError::internal("the check's thread panicked (a bug)")));
        let (c, raw, read_back, simulate_ms) = simulated?;
        opts.phase("check");
        let operands = match (early, read_back) {
            (Some(joined), _) => joined?,
            (None, Some(inputs)) => CheckOperands::prepare(cfg, lhs_transposed, inputs, opts.cancel.as_ref()),
            (None, None) => prepare(),
        };
        opts.check_cancel()?;
        let check = operands.map(|o| o.check(&c));
        opts.check_cancel()?;
        Ok(Simulated { c, raw, check, simulate_ms, reference_ms: ms(t) })
    })
}

/// Operand copies up to which the check is prepared while the kernel is simulated (its
/// rounded A and B then live beside the simulator's memory; 8192^3 keeps them apart, so that
/// its peak stays under 2 GB).
const CONCURRENT_CHECK_BYTES: u64 = 256 << 20;

#[cfg(test)]
thread_local! {
    /// [`CONCURRENT_CHECK_BYTES`] as this thread's tests set it.
    static CONCURRENT_LIMIT: std::cell::Cell<u64> = const { std::cell::Cell::new(CONCURRENT_CHECK_BYTES) };
}

#[cfg(test)]
thread_local! {
    /// Simulations on this thread whose inputs were drawn straight into HBM.
    static DRAWN_INTO_HBM: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

fn concurrent_check_bytes() -> u64 {
    #[cfg(test)]
    return CONCURRENT_LIMIT.get();
    #[cfg(not(test))]
    CONCURRENT_CHECK_BYTES
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
    /// `None` when `cancel` was set on the way (the reference's sweeps poll it too: what they
    /// give once it is set is discarded by the caller's check of the flag).
    fn prepare(cfg: &GemmConfig, lhs_transposed: bool, inputs: Inputs<'_>, cancel: Option<&Cancel>) -> Option<Self> {
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
        if crate::cancel::stopped(cancel) {
            return None;
        }
        let mut b = b.into_owned();
        reference::round_all(&mut b, cfg.input_dtype, cfg.rhs_dtype);
        if crate::cancel::stopped(cancel) {
            return None;
        }
        let (am, bm) = (Matrix { rows: m, cols: k, data: &a }, Matrix { rows: k, cols: n, data: &b });
        let prepared = reference::prepare(am, bm, cfg.k, cfg.out_dtype, CheckOptions::default(), cancel);
        Some(CheckOperands { a, b, m, k, n, prepared })
    }

    fn check(&self, c: &[f32]) -> Check {
        let a = Matrix { rows: self.m, cols: self.k, data: &self.a };
        let b = Matrix { rows: self.k, cols: self.n, data: &self.b };
        self.prepared.check(a, b, c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm::{gemm, GemmRequest};
    use penguin::Target;

    /// Inputs handed over to be drawn into HBM where the rule says the check keeps them are
    /// drawn whole instead: C and the check are those of `gemm` on the same seed.
    #[test]
    fn drawn_inputs_the_check_keeps_are_drawn_whole() {
        let req = GemmRequest::new(256, 384, 200, DType::Bf16, Target::Trn2);
        let want = gemm(&req, None).expect("gemm");
        let plan = want.plan.clone().expect("the plan");
        let program = Arc::new(want.program.clone().expect("the program"));
        let names = Names::of(&plan).expect("names");
        let opts = &req.options;
        assert!(!streams_inputs(opts, &plan.config), "the check keeps operands this small");
        let drawn = DRAWN_INTO_HBM.get();
        let got = simulate_and_check(
            opts,
            (&plan.config, &names),
            Kernel::One(&program),
            Operands::Drawn { seed: opts.seed },
            None,
        )
        .expect("simulate");
        assert_eq!(DRAWN_INTO_HBM.get(), drawn, "drawn into HBM against the rule");
        assert_eq!(Some(got.c), want.c);
        assert_eq!(got.check, want.report.check);
    }

    /// Operands too large to prepare beside the simulation are drawn straight into HBM and
    /// read back from it for the check: C and the check are those of the concurrent path,
    /// for an A stored as drawn (bf16), cast on load (fp32 in HBM), given as [K, M], and
    /// uint8 operands (drawn whole).
    #[test]
    fn operands_read_back_from_hbm_check_as_the_concurrent_path() {
        let cases: [(DType, Option<DType>, bool); 4] = [
            (DType::Bf16, None, false),
            (DType::Bf16, Some(DType::Fp32), false),
            (DType::Fp16, None, true),
            (DType::Uint8, None, false),
        ];
        for (dtype, hbm, transposed) in cases {
            let mut req = GemmRequest::new(256, 384, 200, dtype, Target::Trn2);
            req.hbm_dtype = hbm;
            req.lhs_transposed = transposed;
            let run = |limit: u64| {
                CONCURRENT_LIMIT.set(limit);
                let drawn = DRAWN_INTO_HBM.get();
                let out = gemm(&req, None);
                CONCURRENT_LIMIT.set(CONCURRENT_CHECK_BYTES);
                out.map(|o| (o.c, o.report.check, DRAWN_INTO_HBM.get() - drawn))
            };
            let (c0, check0, streamed0) = run(u64::MAX).expect("concurrent path");
            let (c1, check1, streamed1) = run(0).expect("read back from HBM");
            let what = format!("{dtype} hbm {hbm:?} transposed {transposed}");
            // Drawn inputs the check does not keep go straight into HBM, but for uint8 ones.
            assert_eq!((streamed0, streamed1), (0, u32::from(dtype != DType::Uint8)), "{what}");
            assert!(check0.as_ref().is_some_and(|c| c.passed && c.checked > 0), "{what}: {check0:?}");
            assert_eq!(c0, c1, "{what}: C differs");
            assert_eq!(check0, check1, "{what}: the check differs");
        }
    }
}
