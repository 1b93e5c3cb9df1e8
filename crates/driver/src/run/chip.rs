//! Running a chip: one program per physical core of a logical NeuronCore, sharing HBM.
//!
//! Every core's program is lowered and verified as one core's is, then the chip is verified
//! as a whole (`bir::verify_chip`: the same target, kernel and HBM table on every core). The
//! simulation runs the cores on one HBM image (core 0's simulator holds it: inputs go in and
//! outputs come out there) and reports a race between cores as it reports one within a core,
//! on the line of the access that ran later. The cycle model is `sim::model_chip`, with the
//! shared HBM budget of the profile.

use serde::Serialize;

use super::{report, Inputs, RunOptions, RunOutcome, Runnable, Simulated};
use crate::error::DriverError;
use crate::program::CoreSources;
use penguin::Target;

/// The cores of a chip beyond core 0, and the chip all of them form.
#[derive(Debug)]
pub(super) struct Cores {
    /// Cores 1.. (core 0 is the [`Runnable`] that holds this).
    others: Vec<Runnable>,
    /// Every core's program.
    pub(super) chip: bir::Chip,
}

/// What one core of a chip did, in [`ChipFigures::cores`].
#[derive(Clone, Debug, Serialize)]
pub struct CoreFigures {
    /// When its last instruction ends, in microseconds.
    pub modeled_time_us: f64,
    /// Its BIR instructions.
    pub bir_instructions: u64,
    /// Its MultiplyMoving instructions.
    pub matmuls: u64,
    /// Bytes its DMA instructions move to or from HBM.
    pub hbm_bytes: u64,
    /// Its engines' busy fractions over the chip's modeled time.
    pub engine_busy: sim::EngineBusy,
}

/// The cores of a chip run together, in [`RunReport::chip`](super::RunReport::chip).
#[derive(Clone, Debug, Serialize)]
pub struct ChipFigures {
    /// Each physical core's figures, in core order.
    pub cores: Vec<CoreFigures>,
    /// Fraction of the modeled time the cores' shared HBM budget was busy.
    pub hbm_shared_busy: f64,
    /// The shared HBM budget (the profile's `hbm_shared_bytes_per_ns`), GB/s.
    pub hbm_shared_gb_per_s: f64,
}

impl Runnable {
    /// A chip of one program per physical core (`sources.programs[k]` runs on core `k`, the
    /// cores sharing `sources.shared`), named `name` in messages: each verified (and lowered
    /// for `target`) as [`Runnable::new`] does, then the chip as a whole. One program is a
    /// plain [`Runnable`].
    pub fn new_chip(name: &str, sources: CoreSources, target: Option<Target>) -> Result<Runnable, DriverError> {
        let CoreSources { mut programs, shared } = sources;
        match programs.len() {
            0 => return Err(DriverError::internal("a chip without cores (a bug)")),
            1 => return Runnable::new(name, programs.remove(0), target),
            _ => {}
        }
        let mut cores = programs
            .into_iter()
            .enumerate()
            .map(|(k, p)| Runnable::new_sharing(&format!("{name} (core {k})"), p, target, &shared))
            .collect::<Result<Vec<_>, _>>()?;
        let chip = bir::Chip::with_shared(cores.iter().map(|c| (*c.program).clone()).collect(), shared);
        bir::verify_chip(&chip).map_err(|e| DriverError::input(format!("{name}: {e}")))?;
        let mut first = cores.remove(0);
        first.src.name = name.to_string();
        first.chip = Some(Cores { others: cores, chip });
        Ok(first)
    }

    /// How many physical cores the program runs on.
    pub fn num_cores(&self) -> usize {
        self.chip.as_ref().map_or(1, |c| c.chip.cores.len())
    }

    /// Every core's program, in core order.
    pub fn core_programs(&self) -> Vec<&bir::Program> {
        match &self.chip {
            Some(c) => c.chip.cores.iter().collect(),
            None => vec![&self.program],
        }
    }

    /// What the trace and the SVG say of each core's instructions.
    /// Each titled by its core (`core 1: NAME (trn2)`) when there are several.
    pub(super) fn kernel_infos(&self) -> Vec<sim::KernelInfo> {
        let several = self.chip.is_some();
        cores_of(self)
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let mut info = r.kernel_info();
                if several {
                    let (name, target) = (&r.program.kernel_name, r.program.target);
                    info.title = Some(format!("core {k}: {name} ({target})"));
                }
                info
            })
            .collect()
    }

    /// The runnable of core `k` (this one for core 0 or a core it does not have).
    fn core(&self, k: u32) -> &Runnable {
        match (&self.chip, k) {
            (Some(c), k) if k > 0 => c.others.get(k as usize - 1).unwrap_or(self),
            _ => self,
        }
    }

    /// [`Runnable::run`] for a chip.
    pub(super) fn run_chip(&self, inputs: &mut dyn Inputs, options: &RunOptions) -> Result<RunOutcome, DriverError> {
        let cores = self.chip.as_ref().ok_or_else(|| DriverError::internal("not a chip (a bug)"))?;
        let chip = &cores.chip;
        let hw = options.hw.unwrap_or_else(|| self.program.target.profile());
        let model = || {
            sim::model_chip_cancellable(chip, &hw, options.cancel.as_ref()).map_err(|e| match e {
                sim::SimError::Interrupted => DriverError::Interrupted,
                e => DriverError::input(format!("{}: cycle model failed: {e}", self.src.name)),
            })
        };
        if !options.simulate {
            let report = model()?;
            return Ok(self.chip_outcome(report, Vec::new(), None));
        }
        let (given, wanted) = self.prepare(inputs, options, chip.cores.len() as u64)?;
        let mut simulator = crate::threads::chip_simulator(chip)?;
        simulator.set_cancel(options.cancel.as_ref());
        self.write_inputs(simulator.hbm()?, &given, inputs)?;
        let stats = match simulator.run() {
            Err(sim::SimError::Interrupted) => return Err(DriverError::Interrupted),
            Err(e) => return Err(DriverError::input(format!("{}: simulation failed: {e}", self.src.name))),
            Ok(stats) => stats,
        };
        if let Some(race) = stats.races.first() {
            let more = stats.races.len() as u64 - 1 + stats.races_dropped;
            return Err(self.core(race.later.core).race_error(race, more));
        }
        let outputs = self.read_outputs(simulator.hbm()?, wanted)?;
        drop(simulator);
        let total = stats.total();
        let simulated =
            Simulated { instructions: total.instructions, matmuls: total.matmuls, dma_bytes: total.dma_bytes };
        Ok(self.chip_outcome(model()?, outputs, Some(simulated)))
    }

    /// The outcome of a chip's run from its cycle model.
    fn chip_outcome(
        &self,
        cycle: sim::ChipReport,
        outputs: Vec<super::Output>,
        simulated: Option<Simulated>,
    ) -> RunOutcome {
        let programs = self.core_programs();
        let core0 = sim::CycleReport { total_ns: cycle.total_ns, ..cycle.cores[0].clone() };
        let penguin = self
            .penguin_instructions
            .map(|own| own + cores_of(self).iter().skip(1).filter_map(|r| r.penguin_instructions).sum::<u64>());
        let mut r = report::report(&self.program, &core0, penguin, simulated.map(|s| s.dma_bytes));
        r.bir_instructions = programs.iter().map(|p| p.num_insts() as u64).sum();
        r.matmuls = programs.iter().map(|p| report::count_matmuls(p)).sum();
        r.hbm_bytes = cycle.hbm_bytes();
        r.sbuf_peak_bytes_per_partition = programs.iter().map(|p| p.sbuf_peak_bytes).max().unwrap_or(0);
        r.modeled_time_us = cycle.total_us();
        r.hfu = (cycle.matmul_flops() > 0.0).then(|| cycle.hfu());
        r.engine_busy = cycle.mean_busy();
        r.chip = Some(ChipFigures {
            cores: programs
                .iter()
                .zip(&cycle.cores)
                .map(|(p, c)| CoreFigures {
                    modeled_time_us: c.total_us(),
                    bir_instructions: p.num_insts() as u64,
                    matmuls: report::count_matmuls(p),
                    hbm_bytes: c.hbm_bytes,
                    engine_busy: c.engine_busy_over(cycle.total_ns),
                })
                .collect(),
            hbm_shared_busy: cycle.hbm_shared_fraction(),
            hbm_shared_gb_per_s: cycle.hbm_shared_bytes_per_ns,
        });
        RunOutcome { report: r, outputs, simulated, cycle: core0, chip: Some(cycle) }
    }
}

/// Every core's runnable, in core order.
fn cores_of(r: &Runnable) -> Vec<&Runnable> {
    std::iter::once(r).chain(r.chip.iter().flat_map(|c| c.others.iter())).collect()
}
