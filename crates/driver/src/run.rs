//! Running any program: a Penguin function (lowered first) or a BIR program, looped or not,
//! simulated on typed input arrays and cycle-modeled ([`run_program`]; [`Runnable`] for the
//! phases one at a time).
//!
//! Inputs must have the tensor's exact shape. A float tensor takes float32 (or float16)
//! arrays, converted to its dtype as the DMA would (round to nearest even); bf16 and fp8
//! tensors also take their raw bit patterns as uint16 / uint8 arrays; integer tensors take
//! the matching integer arrays. Outputs are each tensor's raw little-endian bytes in its own
//! dtype. An error of the simulator or the cycle model names the source line of the
//! instruction it concerns when the program came from text.

use penguin::{DType, HwProfile, Target};

use crate::cancel::{self, Cancel};
use crate::error::DriverError;
use crate::error::InputProblem;
use crate::program::{bir_loops, check_program_sharing, compile_function, pir_loops, Program, Source};

mod chip;
mod locate;
mod report;

pub use crate::array::{Array, Elem, Output};

pub use chip::{ChipFigures, CoreFigures};
use locate::{inst_line, sim_message, SourceLines};
pub use report::{RunReport, Written};

/// The input arrays of a run, by tensor name, read when the run needs them (after the checks
/// that need none, so a run refused for its size reads nothing).
pub trait Inputs {
    /// The tensors given, in the order they are stored.
    fn names(&self) -> Vec<String>;
    /// The array of `name` (one of [`Inputs::names`]).
    fn array(&mut self, name: &str) -> Result<Array, DriverError>;
}

impl Inputs for Vec<(String, Array)> {
    fn names(&self) -> Vec<String> {
        self.iter().map(|(n, _)| n.clone()).collect()
    }

    fn array(&mut self, name: &str) -> Result<Array, DriverError> {
        let at = self.iter().position(|(n, _)| n == name);
        at.map(|i| std::mem::replace(&mut self[i].1, Array { elem: Elem::U8, shape: Vec::new(), data: Vec::new() }))
            .ok_or_else(|| DriverError::internal(format!("input `{name}` was taken twice (a bug)")))
    }
}

/// How a program is run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Simulate it on its inputs; without, it is only modeled (no input is read).
    pub simulate: bool,
    /// The hardware profile of the cycle model (`None`: the target's built-in one).
    pub hw: Option<HwProfile>,
    /// The memory budget of the simulation's images (default: half of physical memory).
    pub max_memory: Option<u64>,
    /// The tensors to read back after the simulation (`None`: every output tensor).
    pub outputs: Option<Vec<String>>,
    /// Stops the simulation when set.
    pub cancel: Option<Cancel>,
}

/// What a simulation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Simulated {
    /// Instructions executed.
    pub instructions: u64,
    /// MultiplyMoving instructions executed.
    pub matmuls: u64,
    /// Bytes the DMA instructions moved.
    pub dma_bytes: u64,
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// The report (the keys of `ntile run --json`; its `outputs` list names no file).
    pub report: RunReport,
    /// The tensors read back after the simulation (none without one).
    pub outputs: Vec<Output>,
    /// What the simulation did (`None` without one).
    pub simulated: Option<Simulated>,
    /// The cycle model of the program (of core 0's, for a chip).
    pub cycle: sim::CycleReport,
    /// The cycle model of a chip: every core's and the shared HBM budget (`None` for one core).
    pub chip: Option<sim::ChipReport>,
}

/// A program verified (and lowered, for a Penguin function; expanded, when it loops) and
/// ready to run.
#[derive(Debug)]
pub struct Runnable {
    src: Source,
    /// Shared with the simulator of each run, not copied for it.
    program: std::sync::Arc<bir::Program>,
    lines: SourceLines,
    required: Vec<String>,
    penguin_instructions: Option<u64>,
    buffers: Vec<sim::SbufBuffer>,
    /// The cores of a chip beyond this one (core 0) and the chip they form (`None`: one core).
    chip: Option<chip::Cores>,
}

impl Runnable {
    /// Verify `program` (named `name` in messages), lowering a Penguin function for `target`
    /// (default trn2); a BIR program must be for `target` when one is given.
    pub fn new(name: &str, program: Program, target: Option<Target>) -> Result<Runnable, DriverError> {
        Runnable::new_sharing(name, program, target, &[])
    }

    /// [`Runnable::new`] of one core's program of a chip whose cores share the semaphores
    /// `shared` (its waits on them are the chip's to release).
    fn new_sharing(
        name: &str,
        program: Program,
        target: Option<Target>,
        shared: &[String],
    ) -> Result<Runnable, DriverError> {
        let src = Source { name: name.to_string(), extension: String::new(), text: String::new() };
        let mismatch = |program_target: Target, given: Target| DriverError::TargetMismatch {
            program: name.to_string(),
            program_target,
            given,
        };
        let inputs_of =
            |p: &bir::Program| p.hbm.iter().filter(|t| t.role == bir::HbmRole::Input).map(|t| t.name.clone()).collect();
        Ok(match pir_loops::expand(&src, program)? {
            Program::Penguin(f, map) => {
                // The function names its SBUF allocations; the timeline tracks them by name.
                let buffers = crate::timeline::sbuf_buffers(&f);
                let program = compile_function(&src, &f, map.as_ref(), target.unwrap_or(Target::Trn2))?;
                let required = f
                    .inputs
                    .iter()
                    .filter_map(|&t| penguin::FunctionView::tensor(&f, t))
                    .map(|t| t.name.clone())
                    .collect();
                let penguin_instructions = Some(penguin::FunctionView::layout(&f).len() as u64);
                Runnable {
                    src,
                    program: program.into(),
                    lines: SourceLines::Penguin(map),
                    required,
                    penguin_instructions,
                    buffers,
                    chip: None,
                }
            }
            Program::Bir(p, map) => {
                if let Some(t) = target.filter(|t| *t != p.target) {
                    return Err(mismatch(p.target, t));
                }
                check_program_sharing(&src, &p, map.as_ref(), "BIR verifier", shared)?;
                let required = inputs_of(&p);
                Runnable {
                    src,
                    program: p.into(),
                    lines: SourceLines::Bir(map),
                    required,
                    penguin_instructions: None,
                    buffers: Vec::new(),
                    chip: None,
                }
            }
            Program::PenguinLooped(..) => return Err(DriverError::internal("a looped function was not expanded")),
            Program::BirLooped(lp, map) => {
                if let Some(t) = target.filter(|t| *t != lp.header.target) {
                    return Err(mismatch(lp.header.target, t));
                }
                // Verified looped, then run unrolled: the same as its unrolled twin.
                let (p, map) = bir_loops::unroll(&src, &lp, map.as_ref(), shared)?;
                let required = inputs_of(&p);
                Runnable {
                    src,
                    program: p.into(),
                    lines: SourceLines::Bir(map),
                    required,
                    penguin_instructions: None,
                    buffers: Vec::new(),
                    chip: None,
                }
            }
        })
    }

    /// The verified BIR program that runs.
    pub fn program(&self) -> &bir::Program {
        &self.program
    }

    /// The name messages give the program.
    pub fn name(&self) -> &str {
        &self.src.name
    }

    /// The program's HBM tensor `name`.
    pub fn tensor(&self, name: &str) -> Option<&bir::HbmTensor> {
        self.program.hbm_tensor(name)
    }

    /// What the trace and the SVG say of each instruction: its source line and the buffers
    /// it uses.
    pub fn kernel_info(&self) -> sim::KernelInfo {
        let program = &self.program;
        sim::KernelInfo {
            buffers: self.buffers.clone(),
            source: Some(crate::timeline::source_lines(&self.src.name, program, |engine, index| {
                inst_line(program, &self.lines, sim::InstRef { engine, index })
            })),
            ..sim::KernelInfo::default()
        }
    }

    /// The modeled engine timeline of a run as Chrome/Perfetto trace-event JSON (a chip's:
    /// one process per core).
    pub fn trace(&self, outcome: &RunOutcome) -> String {
        if let (Some(cores), Some(report)) = (&self.chip, &outcome.chip) {
            return sim::chrome_trace_chip(&cores.chip, report, &self.kernel_infos());
        }
        sim::chrome_trace_with(&self.program, &outcome.cycle, &self.kernel_info())
    }

    /// The modeled engine timeline of a run as SVG (a chip's: one panel per core).
    pub fn timeline_svg(&self, outcome: &RunOutcome) -> String {
        if let (Some(cores), Some(report)) = (&self.chip, &outcome.chip) {
            return sim::timeline_svg_chip(&cores.chip, report, &self.kernel_infos());
        }
        sim::timeline_svg_with(&self.program, &outcome.cycle, &self.kernel_info())
    }

    /// The cycle model of the program; a program the model cannot replay (a deadlock) is the
    /// user's error, placed on its line like a simulation error.
    pub fn model(&self, hw: &HwProfile) -> Result<sim::CycleReport, DriverError> {
        self.model_cancellable(hw, None)
    }

    /// [`Runnable::model`], stopped by `cancel` ([`DriverError::Interrupted`]).
    pub fn model_cancellable(&self, hw: &HwProfile, cancel: Option<&Cancel>) -> Result<sim::CycleReport, DriverError> {
        sim::model_cancellable(&self.program, hw, cancel).map_err(|e| {
            if matches!(e, sim::SimError::Interrupted) {
                return DriverError::Interrupted;
            }
            let message = sim_message(&self.src, &self.program, &self.lines, &e);
            DriverError::input(message.replacen("simulation failed", "cycle model failed", 1))
        })
    }

    /// The names of the tensors `outputs` asks for (every output tensor when `None`), each
    /// checked to be one of the program's.
    fn wanted(&self, outputs: Option<&[String]>) -> Result<Vec<String>, DriverError> {
        let Some(names) = outputs else {
            let outs = self.program.hbm.iter().filter(|t| t.role == bir::HbmRole::Output);
            return Ok(outs.map(|t| t.name.clone()).collect());
        };
        for n in names {
            if self.tensor(n).is_none() {
                return Err(DriverError::input(format!("output `{n}`: {}", self.not_a_tensor(n))));
            }
        }
        Ok(names.to_vec())
    }

    /// Why `name` names no tensor of the program.
    pub fn not_a_tensor(&self, name: &str) -> String {
        let names: Vec<String> = self.program.hbm.iter().map(|t| format!("`{}`", t.name)).collect();
        format!("`{name}` is not an HBM tensor of {} (it has {})", self.src.name, names.join(", "))
    }

    /// Run the program: simulate it on `inputs` (unless the options only model it), read back
    /// the outputs asked for, and model it. A chip (see [`Runnable::new_chip`]) runs every
    /// core on one HBM image and is modeled with the shared HBM budget.
    pub fn run(&self, inputs: &mut dyn Inputs, options: &RunOptions) -> Result<RunOutcome, DriverError> {
        if self.chip.is_some() {
            return self.run_chip(inputs, options);
        }
        let hw = options.hw.unwrap_or_else(|| self.program.target.profile());
        if !options.simulate {
            let cycle = self.model_cancellable(&hw, options.cancel.as_ref())?;
            let report = report::report(&self.program, &cycle, self.penguin_instructions, None);
            return Ok(RunOutcome { report, outputs: Vec::new(), simulated: None, cycle, chip: None });
        }
        let (given, wanted) = self.prepare(inputs, options, 1)?;
        let mut simulator = crate::threads::simulator_shared(std::sync::Arc::clone(&self.program))?;
        self.write_inputs(&mut simulator, &given, inputs)?;
        let (mut simulator, stats) = cancel::simulate(simulator, options.cancel.as_ref())?;
        let stats = stats.map_err(|e| DriverError::input(sim_message(&self.src, &self.program, &self.lines, &e)))?;
        if let Some(race) = stats.races.first() {
            return Err(self.race_error(race, stats.races.len() as u64 - 1 + stats.races_dropped));
        }
        let outputs = self.read_outputs(&mut simulator, wanted)?;
        drop(simulator);
        let cycle = self.model_cancellable(&hw, options.cancel.as_ref())?;
        let report = report::report(&self.program, &cycle, self.penguin_instructions, Some(stats.dma_bytes));
        let simulated =
            Simulated { instructions: stats.instructions, matmuls: stats.matmuls, dma_bytes: stats.dma_bytes };
        Ok(RunOutcome { report, outputs, simulated: Some(simulated), cycle, chip: None })
    }

    /// The checks before a simulation of `cores` cores: the inputs given are tensors of the
    /// program, each once, every required one is there, the outputs asked for exist, and the
    /// memory images fit. The names given and the outputs wanted.
    fn prepare(
        &self,
        inputs: &dyn Inputs,
        options: &RunOptions,
        cores: u64,
    ) -> Result<(Vec<String>, Vec<String>), DriverError> {
        let given = inputs.names();
        for (i, name) in given.iter().enumerate() {
            if self.tensor(name).is_none() {
                return Err(DriverError::input(format!("input `{name}`: {}", self.not_a_tensor(name))));
            }
            if given[..i].contains(name) {
                return Err(DriverError::input(format!("input `{name}` is given twice")));
            }
        }
        let wanted = self.wanted(options.outputs.as_deref())?;
        if let Some(missing) = self.required.iter().find(|n| !given.contains(n)) {
            return Err(DriverError::MissingInput { program: self.src.name.clone(), tensor: missing.clone() });
        }
        self.check_memory(options.max_memory, cores)?;
        Ok((given, wanted))
    }

    /// Store the inputs `given` into the simulator holding the HBM image.
    fn write_inputs(
        &self,
        simulator: &mut sim::Simulator,
        given: &[String],
        inputs: &mut dyn Inputs,
    ) -> Result<(), DriverError> {
        for name in given {
            let t = self.tensor(name).ok_or_else(|| DriverError::internal("an input vanished (a bug)"))?;
            write_input(simulator, t, inputs.array(name)?)?;
        }
        Ok(())
    }

    /// Read the outputs `wanted` back from the simulator holding the HBM image.
    fn read_outputs(&self, simulator: &mut sim::Simulator, wanted: Vec<String>) -> Result<Vec<Output>, DriverError> {
        let mut outputs = Vec::new();
        for name in wanted {
            let t = self.tensor(&name).ok_or_else(|| DriverError::internal("an output vanished (a bug)"))?;
            let data = simulator
                .read_hbm_tensor(&t.name)
                .map_err(|e| DriverError::input(format!("{}: {e}", self.src.name)))?;
            outputs.push(Output { name, dtype: t.dtype, shape: t.shape.clone(), data });
        }
        Ok(outputs)
    }

    /// The error of a race the simulation found (`more` others), placed on the line of the
    /// access that ran later when this program holds it.
    fn race_error(&self, race: &sim::Race, more: u64) -> DriverError {
        let tail = if more > 0 { format!(" (and {more} more)") } else { String::new() };
        let at = match inst_line(&self.program, &self.lines, race.later.at) {
            Some(line) => format!("{}:{line}", self.src.name),
            None => self.src.name.clone(),
        };
        DriverError::input(format!("{at}: {race}{tail}"))
    }

    /// Refuse a simulation whose memory images exceed the simulator or the budget.
    fn check_memory(&self, max_memory: Option<u64>, cores: u64) -> Result<(), DriverError> {
        let (name, program) = (&self.src.name, &self.program);
        // The program's own size, not an input, is what the simulator cannot hold.
        if program.hbm_size > sim::MAX_HBM_BYTES {
            return Err(DriverError::input(format!(
                "{name}: the program needs {} bytes of HBM (hbm_size), more than the simulator can allocate ({} bytes)",
                program.hbm_size,
                sim::MAX_HBM_BYTES
            )));
        }
        // The simulator allocates the program's whole HBM image and the target's SBUF and PSUM.
        let budget = max_memory.unwrap_or_else(crate::budget::default_budget);
        let chip = program.target.info();
        let on_chip = cores
            * (128 * u64::from(chip.statebuf_par_size_in_bytes)
                + 128 * u64::from(chip.psum_num_banks) * u64::from(chip.psum_par_size_in_bytes));
        let images = program.hbm_size.saturating_add(on_chip);
        if images > budget {
            return Err(DriverError::Budget(format!(
                "{name}: simulating it needs about {} of memory images (hbm_size {} bytes plus SBUF and PSUM), over the \
                 memory budget of {}; raise --max-memory BYTES if the machine has the memory, or time it with --no-sim",
                crate::budget::human(u128::from(images)),
                program.hbm_size,
                crate::budget::human(u128::from(budget))
            )));
        }
        Ok(())
    }
}

/// Run a program on `inputs` as `options` say: [`Runnable::new`] (with `name` in messages,
/// a Penguin function lowered for `target`), then [`Runnable::run`].
pub fn run_program(
    name: &str,
    program: Program,
    target: Option<Target>,
    inputs: &mut dyn Inputs,
    options: &RunOptions,
) -> Result<(Runnable, RunOutcome), DriverError> {
    let runnable = Runnable::new(name, program, target)?;
    let outcome = runnable.run(inputs, options)?;
    Ok((runnable, outcome))
}

/// The element types a tensor of `dtype` takes.
fn accepts(dtype: DType) -> &'static str {
    match dtype {
        DType::Fp32 | DType::Fp16 => "float32 or float16",
        DType::Bf16 => "float32, float16 or uint16 bf16 bit patterns",
        DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2 => "float32, float16 or uint8 fp8 bit patterns",
        DType::Uint8 => "uint8",
        DType::Int16 => "int16",
        DType::Int32 => "int32",
        DType::Int8 => "int8",
        DType::Uint16 => "uint16",
        DType::Uint32 => "uint32",
    }
}

/// Store one input array into the simulator, checking shape and element type against the
/// tensor.
fn write_input(sim: &mut sim::Simulator, t: &bir::HbmTensor, a: Array) -> Result<(), DriverError> {
    let problem = |problem| DriverError::InputArray { tensor: t.name.clone(), problem };
    if a.shape != t.shape {
        return Err(problem(InputProblem::Shape { tensor: t.name.clone(), given: a.shape, want: t.shape.clone() }));
    }
    let need = a.shape.iter().product::<u64>().saturating_mul(a.elem.size() as u64);
    if a.data.len() as u64 != need {
        return Err(DriverError::internal(format!(
            "input `{}`: {} bytes for shape {:?} of {} (a bug)",
            t.name,
            a.data.len(),
            a.shape,
            a.elem.descr()
        )));
    }
    let raw_ok = matches!(
        (t.dtype, a.elem),
        (DType::Int16, Elem::I16)
            | (DType::Int32, Elem::I32)
            | (DType::Int8, Elem::I8)
            | (DType::Uint16, Elem::U16)
            | (DType::Uint32, Elem::U32)
            | (DType::Bf16, Elem::U16)
            | (DType::Uint8 | DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2, Elem::U8)
    );
    let store = |e: sim::SimError| problem(InputProblem::Store(e.to_string()));
    if raw_ok {
        sim.write_hbm_tensor(&t.name, &a.data).map_err(store)
    } else if t.dtype.is_float() && matches!(a.elem, Elem::F32 | Elem::F16) {
        let values: Vec<f32> = match a.elem {
            Elem::F16 => a.data.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
            _ => a.data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        };
        sim.write_hbm_f32(&t.name, &values).map_err(store)
    } else {
        Err(problem(InputProblem::Dtype {
            tensor: t.name.clone(),
            given: a.elem,
            dtype: t.dtype,
            accepts: accepts(t.dtype),
        }))
    }
}
