//! NKI kernels through the pipeline: a traced kernel (the JSON the Python tracer writes, see
//! `docs/nki-trace.md`) read and built by the `nki` crate, then run like any Penguin
//! function by [`Runnable`] (lowered, simulated on its input arrays with fresh SBUF/PSUM
//! reading NaN and the race detector on, and modeled).
//!
//! The report is `ntile run --json`'s plus what an NKI kernel adds: every allocation site of
//! the builder's [`nki::AllocationReport`] and the time each phase took (the caller adds the
//! tracing time, which happens in Python before this).
//!
//! Constants (tensors the kernel made with `nl.shared_constant`) are inputs whose values travel
//! in the trace; a caller that does not pass their arrays gets them from there.

use std::time::Instant;

use nki::{KernelBuilder, NkiKernel, Trace};
use penguin::{HwProfile, Target};

use crate::cancel::Cancel;
use crate::error::DriverError;
use crate::program::Program;
use crate::run::{Array, Elem, Inputs, RunOptions, RunOutcome, Runnable};

/// How an NKI kernel is run.
#[derive(Clone, Debug, Default)]
pub struct NkiOptions {
    /// The target (`None`: the trace's own).
    pub target: Option<Target>,
    /// Simulate it on its inputs; without, it is only modeled (no array is read).
    pub simulate: bool,
    /// The kernel name the caller asked for (`finalize_kernel`'s `Kernel name mismatch`).
    pub kernel_name: Option<String>,
    /// The hardware profile of the cycle model (`None`: the target's built-in one).
    pub hw: Option<HwProfile>,
    /// The memory budget of the simulation's images.
    pub max_memory: Option<u64>,
    /// Stops the simulation when set.
    pub cancel: Option<Cancel>,
}

/// Seconds each phase took.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct NkiTimes {
    /// Reading the trace JSON.
    pub read_s: f64,
    /// Building the kernel (checks, allocation, accumulation groups, emission, loops).
    pub build_s: f64,
    /// Lowering, simulating (when asked) and modeling.
    pub run_s: f64,
}

/// A kernel built and run.
#[derive(Debug)]
pub struct NkiRun {
    /// The built kernel: its function, looped form and allocations (physical core 0's, for a
    /// kernel on several cores).
    pub kernel: NkiKernel,
    /// The kernels of physical cores 1.. (empty for a one-core kernel).
    pub other_cores: Vec<NkiKernel>,
    /// The program that ran (its trace and SVG exporters).
    pub runnable: Runnable,
    /// The outputs, report and cycle model.
    pub outcome: RunOutcome,
    /// How long each phase took.
    pub times: NkiTimes,
}

/// A kernel read, built and lowered, ready to run.
#[derive(Debug)]
pub struct NkiBuilt {
    /// The trace as read.
    pub trace: Trace,
    /// The built kernel: its function, looped form and allocations (core 0's).
    pub kernel: NkiKernel,
    /// The kernels of physical cores 1.. (empty for a one-core kernel).
    pub other_cores: Vec<NkiKernel>,
    /// The program that runs (its trace and SVG exporters; a chip for several cores).
    pub runnable: Runnable,
    /// How long reading and building took (`run_s` is 0 until it runs).
    pub times: NkiTimes,
}

/// Read, build and lower an NKI trace (see [`run_nki`]).
pub fn build_nki(trace_json: &str, options: &NkiOptions) -> Result<NkiBuilt, DriverError> {
    let t0 = Instant::now();
    let trace = Trace::from_json(trace_json)?;
    let t1 = Instant::now();
    let target = options.target.unwrap_or(trace.target);
    let mut builder = KernelBuilder::new(target);
    if let Some(name) = &options.kernel_name {
        builder = builder.expect_kernel_name(name.clone());
    }
    let mut kernels = builder.build_cores(&trace)?;
    let name = trace.files.first().cloned().unwrap_or_else(|| format!("{}.py", trace.kernel));
    let programs = kernels.iter().map(|k| Program::Penguin(k.function.clone(), None)).collect();
    let runnable = Runnable::new_chip(&name, crate::program::CoreSources::unshared(programs), Some(target))?;
    let times = NkiTimes { read_s: (t1 - t0).as_secs_f64(), build_s: t1.elapsed().as_secs_f64(), run_s: 0.0 };
    let kernel = kernels.remove(0);
    Ok(NkiBuilt { trace, kernel, other_cores: kernels, runnable, times })
}

impl NkiBuilt {
    /// Run the built kernel: simulate it on `inputs` (kernel arguments by name; constants
    /// not among them come from the trace) when `options.simulate`, and model it.
    pub fn run(self, inputs: &mut dyn Inputs, options: &NkiOptions) -> Result<NkiRun, DriverError> {
        let t = Instant::now();
        let run_options = RunOptions {
            simulate: options.simulate,
            hw: options.hw,
            max_memory: options.max_memory,
            outputs: Some(self.kernel.outputs.keys().cloned().collect()),
            cancel: options.cancel.clone(),
        };
        let mut with = WithConstants { inner: inputs, constants: constants(&self.trace) };
        let mut outcome = self.runnable.run(&mut with, &run_options)?;
        outcome.report.kernel = self.trace.kernel.clone();
        let times = NkiTimes { run_s: t.elapsed().as_secs_f64(), ..self.times };
        Ok(NkiRun { kernel: self.kernel, other_cores: self.other_cores, runnable: self.runnable, outcome, times })
    }

    /// The kernel as text (see [`NkiRun::emit`]).
    pub fn emit(&self, form: &str) -> Result<String, DriverError> {
        emit(&self.kernel, &self.other_cores, &self.runnable, form)
    }
}

/// Read, build and run an NKI trace: [`build_nki`], then [`NkiBuilt::run`].
pub fn run_nki(trace_json: &str, inputs: &mut dyn Inputs, options: &NkiOptions) -> Result<NkiRun, DriverError> {
    build_nki(trace_json, options)?.run(inputs, options)
}

/// The constants' arrays (float32, row-major), by tensor name.
fn constants(trace: &Trace) -> Vec<(String, Array)> {
    let mut out = Vec::new();
    for c in &trace.constants {
        let Some(t) = trace.tensors.get(c.t as usize) else { continue };
        let data = c.values.iter().flat_map(|v| (v.0 as f32).to_le_bytes()).collect();
        out.push((t.name.clone(), Array { elem: Elem::F32, shape: t.shape.clone(), data }));
    }
    out
}

/// The caller's inputs, and the constants it did not give.
struct WithConstants<'a> {
    inner: &'a mut dyn Inputs,
    constants: Vec<(String, Array)>,
}

impl Inputs for WithConstants<'_> {
    fn names(&self) -> Vec<String> {
        let mut names = self.inner.names();
        for (n, _) in &self.constants {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
        names
    }

    fn array(&mut self, name: &str) -> Result<Array, DriverError> {
        if self.inner.names().iter().any(|n| n == name) {
            return self.inner.array(name);
        }
        self.constants.array(name)
    }
}

/// The kernel as text; a kernel on several cores prints each core's function after a
/// `core K` line (which `ntile run` and `ntile verify` read back), and its BIR as a chip
/// (`bir::text::print_chip`).
fn emit(kernel: &NkiKernel, others: &[NkiKernel], runnable: &Runnable, form: &str) -> Result<String, DriverError> {
    let chip = runnable.num_cores() > 1;
    match form {
        "penguin" | "pir" if chip => Ok(std::iter::once(kernel)
            .chain(others)
            .enumerate()
            .map(|(k, c)| format!("core {k}\n{}", c.looped))
            .collect::<Vec<_>>()
            .join("\n")),
        "penguin" | "pir" => Ok(kernel.looped.to_string()),
        "bir" if chip => {
            let chip = bir::Chip::new(runnable.core_programs().into_iter().cloned().collect());
            Ok(bir::text::print_chip(&chip))
        }
        "bir" => Ok(runnable.program().to_string()),
        other => Err(DriverError::input(format!("emit form `{other}`: expected penguin or bir"))),
    }
}

impl NkiRun {
    /// The report: the keys of `ntile run --json`, `allocations` (one per site; with its
    /// `core` for a kernel on several cores) and `times` (`tracing_s` is the caller's, when it
    /// traced the kernel).
    pub fn report_json(&self, tracing_s: Option<f64>) -> serde_json::Value {
        let mut report = serde_json::to_value(&self.outcome.report).unwrap_or_default();
        let chip = !self.other_cores.is_empty();
        let allocations: Vec<serde_json::Value> = std::iter::once(&self.kernel)
            .chain(&self.other_cores)
            .enumerate()
            .flat_map(|(core, k)| k.allocations.iter().map(move |a| (core, a)))
            .map(|(core, a)| {
                let mut v = serde_json::json!({
                    "name": a.name,
                    "loc": a.loc,
                    "buffer": a.buffer,
                    "dtype": a.dtype,
                    "partitions": a.partitions,
                    "bytes_per_partition": a.bytes_per_partition,
                    "instances": a.instances,
                    "buffers": a.slots,
                    "rotation": a.rotation,
                    "rotation_dropped": a.rotation_dropped,
                    "direct": a.direct,
                    "ranges": a.ranges,
                });
                if let (true, Some(map)) = (chip, v.as_object_mut()) {
                    map.insert("core".into(), core.into());
                }
                v
            })
            .collect();
        if let Some(map) = report.as_object_mut() {
            map.insert("allocations".into(), allocations.into());
            map.insert(
                "times".into(),
                serde_json::json!({
                    "tracing_s": tracing_s,
                    "read_s": self.times.read_s,
                    "build_s": self.times.build_s,
                    "run_s": self.times.run_s,
                }),
            );
        }
        report
    }

    /// The kernel as text: `penguin` (the looped function, its loops shown) or `bir` (the
    /// lowered program).
    pub fn emit(&self, form: &str) -> Result<String, DriverError> {
        emit(&self.kernel, &self.other_cores, &self.runnable, form)
    }
}
