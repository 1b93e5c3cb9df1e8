//! `ntile run`: simulate a Penguin function (lowered first) or a BIR program on `.npy` inputs,
//! write the named tensors as `.npy` files, and report the cycle model's timing of the program
//! (`--json`, `--trace`, `--svg`; `--no-sim` models it without data).
//!
//! Inputs must have the tensor's exact shape. A float tensor accepts float32 (or float16)
//! arrays, converted to its dtype as the DMA would (round to nearest even); bf16 and fp8
//! tensors also accept their raw bit patterns as uint16 / uint8 arrays; integer tensors take
//! the matching integer arrays. Outputs are written as float32 (fp32), float16 (fp16), uint16
//! bit patterns (bf16), uint8 bit patterns (fp8) or the native integer type.

use std::path::{Path, PathBuf};

use clap::Args;
use driver::run::{Elem, Inputs, Output, Runnable};
use driver::{Array, DriverError, InputProblem, RunOptions, RunReport};
use penguin::{DType, Target};

use crate::error::CliError;
use crate::npy::{self, OutKind};

/// `NAME=FILE.npy`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The tensor.
    pub name: String,
    /// The file.
    pub path: PathBuf,
}

pub(crate) fn binding(s: &str) -> Result<Binding, String> {
    match s.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok(Binding { name: name.to_string(), path: PathBuf::from(path) })
        }
        _ => Err(format!("expected NAME=FILE.npy, found `{s}`")),
    }
}

/// Flags of `ntile run`.
#[derive(Args, Clone, Debug)]
#[command(after_long_help = "\
Examples:
  ntile run examples/gemm_4x16x8.pir --input a=a.npy --input b=b.npy --output c=c.npy
  ntile run examples/gemm_4x16x8.bir --input a=a.npy --input b=b.npy --output c=c.npy
  ntile gemm --m 130 --k 300 --n 70 --emit penguin > g.pir && ntile run g.pir --input a=a.npy --input b=b.npy --output c=c.npy
  ntile run my_kernel.pir --no-sim --json --trace t.json   time a kernel without data

After the run the cycle model's timing is printed: modeled time, HFU when the program has
matmuls, HBM traffic and each engine class's busy time (`--json` prints them as one report
with the keys of `ntile gemm --json`). With --no-sim the program is only modeled: no input is
read, no --output can be written and races are not looked for (that needs the simulation).

Every kernel input must be given (unless --no-sim). Float tensors take float32 (or float16)
arrays; bf16 and fp8 tensors also take uint16 / uint8 bit patterns; int16, int32 and uint8
tensors take matching integer arrays. Outputs: float32 for fp32, float16 for fp16, uint16 bits for bf16,
uint8 bits for fp8, native integers otherwise.

Exit codes: 0 ok, 2 bad input (the IR, an array, a name) or a simulation error in the program
(such as a race or a read of an open PSUM group), 3 internal error.")]
pub struct RunArgs {
    /// A .pir or .bir file (or either as JSON); `-` reads stdin
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// An input tensor: NAME=FILE.npy (repeat for each input)
    #[arg(long = "input", value_name = "NAME=FILE.npy", value_parser = binding)]
    pub inputs: Vec<Binding>,
    /// A tensor to write after the run: NAME=FILE.npy (repeatable; `-o` for short)
    #[arg(short = 'o', long = "output", value_name = "NAME=FILE.npy", value_parser = binding)]
    pub outputs: Vec<Binding>,
    /// Target to lower a Penguin function for [default: trn2]; a BIR program names its own
    #[arg(long)]
    pub target: Option<Target>,
    /// Print one JSON report instead of the summary
    #[arg(long)]
    pub json: bool,
    /// Write the modeled engine timeline as Chrome/Perfetto trace-event JSON
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Write the modeled engine timeline as a static SVG
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Model the program's timing without simulating it: no input is read, no output written
    #[arg(long)]
    pub no_sim: bool,
    /// Override hardware profile keys of the cycle model from a JSON file (see `ntile hw show`)
    #[arg(long, value_name = "FILE.json", long_help = crate::hw::HW_HELP)]
    pub hw: Option<PathBuf>,
    /// Refuse a simulation whose memory images (the program's HBM, SBUF and PSUM) exceed this
    /// many bytes; K, M, G, T suffixes are powers of 1024 [default: half of physical memory]
    #[arg(long, value_name = "BYTES", value_parser = crate::budget::parse_bytes)]
    pub max_memory: Option<u64>,
}

/// An `.npy` file's shape, element type string and raw little-endian element bytes.
struct RawArray {
    shape: Vec<u64>,
    descr: String,
    data: Vec<u8>,
}

fn read_raw(path: &Path) -> Result<RawArray, CliError> {
    let what = path.display();
    let bytes = std::fs::read(path).map_err(|e| CliError::usage(format!("cannot read {what}: {e}")))?;
    let bad = |m: String| CliError::usage(format!("{what}: {m}"));
    let mut cursor = std::io::Cursor::new(bytes.as_slice());
    let header = npyz::NpyHeader::from_reader(&mut cursor).map_err(|e| bad(format!("not a valid .npy file ({e})")))?;
    let payload = bytes.get(cursor.position() as usize..).unwrap_or_default();
    let npy = npyz::NpyFile::with_header(header, payload);
    let descr = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => return Err(bad(format!("holds a structured or nested dtype ({})", other.descr()))),
    };
    if npy.order() == npyz::Order::Fortran {
        return Err(bad("Fortran-ordered arrays are not supported; save np.ascontiguousarray(x)".into()));
    }
    let item: u64 = match descr.as_str() {
        "<f4" | "<i4" => 4,
        "<f2" | "<i2" | "<u2" => 2,
        "|u1" | "<u1" | "|i1" | "<i1" => 1,
        d if d.starts_with('>') => return Err(bad(format!("big-endian data ({d}) is not supported"))),
        d => return Err(bad(format!("holds dtype {d}, which no ntile tensor takes"))),
    };
    let shape = npy.shape().to_vec();
    let too_large = || bad(format!("shape {shape:?} is too large"));
    let len = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).ok_or_else(too_large)?;
    let need = len.checked_mul(item).ok_or_else(too_large)?;
    if need > payload.len() as u64 {
        return Err(bad(format!(
            "truncated: shape {shape:?} needs {need} data bytes but the file has {}",
            payload.len()
        )));
    }
    Ok(RawArray { shape, descr, data: payload[..need as usize].to_vec() })
}

/// The `--input` files, each read when the run stores it; the type string of each file read,
/// for messages.
pub(crate) struct Files<'a> {
    pub(crate) bindings: &'a [Binding],
    pub(crate) descrs: Vec<(String, String)>,
}

impl Files<'_> {
    fn binding(&self, name: &str) -> Option<&Binding> {
        self.bindings.iter().find(|b| b.name == name)
    }
}

impl Inputs for Files<'_> {
    fn names(&self) -> Vec<String> {
        self.bindings.iter().map(|b| b.name.clone()).collect()
    }

    fn array(&mut self, name: &str) -> Result<Array, DriverError> {
        let b = self.binding(name).ok_or_else(|| DriverError::Internal(format!("no --input {name} (a bug)")))?;
        let raw = read_raw(&b.path).map_err(|e| DriverError::Input(e.message))?;
        let elem = match raw.descr.as_str() {
            "<f4" => Elem::F32,
            "<i4" => Elem::I32,
            "<f2" => Elem::F16,
            "<i2" => Elem::I16,
            "<u2" => Elem::U16,
            "<u4" => Elem::U32,
            "|i1" | "<i1" => Elem::I8,
            _ => Elem::U8,
        };
        self.descrs.push((name.to_string(), raw.descr));
        Ok(Array { elem, shape: raw.shape, data: raw.data })
    }
}

fn write_int_npy<T: npyz::AutoSerialize + Copy, const N: usize>(
    shape: &[u64],
    data: &[u8],
    conv: impl Fn([u8; N]) -> T,
) -> Result<Vec<u8>, CliError> {
    use npyz::WriterBuilder as _;
    let mut out = Vec::with_capacity(data.len() + 128);
    let written = (|| {
        let mut w = npyz::WriteOptions::new().default_dtype().shape(shape).writer(&mut out).begin_nd()?;
        for chunk in data.chunks_exact(N) {
            let mut b = [0u8; N];
            b.copy_from_slice(chunk);
            w.push(&conv(b))?;
        }
        w.finish()
    })();
    written.map_err(|e| CliError::internal(format!("npy encoding failed: {e}")))?;
    Ok(out)
}

/// The `.npy` bytes of an output tensor.
pub(crate) fn output_npy(t: &Output) -> Result<Vec<u8>, CliError> {
    let raw = &t.data;
    let kind = match t.dtype {
        DType::Fp32 => OutKind::F32,
        DType::Fp16 => OutKind::F16,
        DType::Bf16 => OutKind::U16Bits,
        DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2 | DType::Uint8 => OutKind::U8Bits,
        DType::Int16 => return write_int_npy(&t.shape, raw, i16::from_le_bytes),
        DType::Int32 => return write_int_npy(&t.shape, raw, i32::from_le_bytes),
        DType::Int8 => return write_int_npy(&t.shape, raw, i8::from_le_bytes),
        DType::Uint16 => return write_int_npy(&t.shape, raw, u16::from_le_bytes),
        DType::Uint32 => return write_int_npy(&t.shape, raw, u32::from_le_bytes),
    };
    npy::to_npy_bytes(&t.shape, kind, raw)
}

/// The CLI's message of a failed run: flags and files named as the command line gave them.
pub(crate) fn run_error(e: DriverError, files: &Files<'_>) -> CliError {
    match e {
        DriverError::MissingInput { program, tensor } => {
            CliError::usage(format!("{program}: input `{tensor}` is not given (pass --input {tensor}=FILE.npy)"))
        }
        DriverError::InputArray { tensor, problem } => {
            let path = files.binding(&tensor).map_or_else(String::new, |b| b.path.display().to_string());
            let problem = match problem {
                InputProblem::Dtype { tensor: t, dtype, accepts, given } => {
                    let descr = files.descrs.iter().find(|(n, _)| *n == tensor).map_or(given.descr(), |(_, d)| d);
                    format!("holds {descr} but tensor `{t}` is {dtype} (it takes {accepts})")
                }
                other => other.to_string(),
            };
            CliError::usage(format!("--input {tensor}={path}: {problem}"))
        }
        other => other.into(),
    }
}

/// Run `ntile run`.
pub fn run(args: &RunArgs) -> Result<String, CliError> {
    run_with(args, None)
}

/// Run `ntile run`, stopped by `cancel` (nothing is written then).
pub fn run_with(args: &RunArgs, cancel: Option<&driver::Cancel>) -> Result<String, CliError> {
    if let (true, Some(b)) = (args.no_sim, args.inputs.first()) {
        return Err(CliError::usage(format!(
            "--input {}=... cannot be used with --no-sim: without a simulation no input is read",
            b.name
        )));
    }
    if let (true, Some(b)) = (args.no_sim, args.outputs.first()) {
        return Err(CliError::usage(format!(
            "--output {}=... cannot be used with --no-sim: without a simulation no tensor has contents to write",
            b.name
        )));
    }
    if args.no_sim && args.max_memory.is_some() {
        return Err(CliError::usage(
            "--max-memory cannot be used with --no-sim: it bounds the simulation's memory images, and --no-sim allocates none",
        ));
    }
    let src = crate::fmt::read_source(&args.file)?;
    let programs = driver::program::load_cores(&src)?;
    let runnable = Runnable::new_chip(&src.name, programs, args.target).map_err(|e| match e {
        DriverError::TargetMismatch { program, program_target, given } => {
            CliError::usage(format!("{program}: the program is for {program_target}, but --target says {given}"))
        }
        other => other.into(),
    })?;
    let tensor = |b: &Binding, flag: &str| {
        runnable
            .tensor(&b.name)
            .ok_or_else(|| CliError::usage(format!("--{flag} {}: {}", b.name, runnable.not_a_tensor(&b.name))))
    };
    for (i, b) in args.inputs.iter().enumerate() {
        tensor(b, "input")?;
        if args.inputs[..i].iter().any(|o| o.name == b.name) {
            return Err(CliError::usage(format!("--input {} is given twice", b.name)));
        }
    }
    for b in &args.outputs {
        tensor(b, "output")?;
    }
    let program = runnable.program();
    let cores = cores_note(runnable.num_cores());
    let hw = crate::hw::load_profile(args.hw.as_deref(), program.target)?;
    let options = RunOptions {
        simulate: !args.no_sim,
        hw: Some(hw),
        max_memory: args.max_memory,
        outputs: Some(args.outputs.iter().map(|b| b.name.clone()).collect()),
        cancel: cancel.cloned(),
    };
    let mut files = Files { bindings: &args.inputs, descrs: Vec::new() };
    let mut outcome = runnable.run(&mut files, &options).map_err(|e| run_error(e, &files))?;
    let Some(simulated) = outcome.simulated else {
        write_timelines(&runnable, &outcome, args)?;
        let report = &outcome.report;
        if args.json {
            return json(report);
        }
        let head = format!(
            "modeled {} on {}{cores} without data (--no-sim): {} instructions, {} matmuls, {} bytes to or from HBM\n",
            program.kernel_name, program.target, report.bir_instructions, report.matmuls, report.hbm_bytes
        );
        return Ok(head + &summary(report));
    };
    let mut out = format!(
        "ran {} on {}{cores}: {} instructions, {} matmuls, {} bytes moved by DMA\n",
        program.kernel_name, program.target, simulated.instructions, simulated.matmuls, simulated.dma_bytes
    );
    for (b, t) in args.outputs.iter().zip(&outcome.outputs) {
        npy::write_atomic(&b.path, &output_npy(t)?)?;
        out += &format!("  wrote {} {} {:?} to {}\n", t.name, t.dtype, t.shape, b.path.display());
        let (name, dtype, shape, path) = (t.name.clone(), t.dtype.to_string(), t.shape.clone(), b.path.clone());
        outcome.report.outputs.push(driver::run::Written { name, dtype, shape, path });
    }
    write_timelines(&runnable, &outcome, args)?;
    if args.json {
        return json(&outcome.report);
    }
    Ok(out + &summary(&outcome.report))
}

/// Write the `--trace` and `--svg` timelines of the model, atomically.
fn write_timelines(runnable: &Runnable, outcome: &driver::RunOutcome, args: &RunArgs) -> Result<(), CliError> {
    if let Some(path) = &args.trace {
        npy::write_atomic(path, runnable.trace(outcome).as_bytes())?;
    }
    if let Some(path) = &args.svg {
        npy::write_atomic(path, runnable.timeline_svg(outcome).as_bytes())?;
    }
    Ok(())
}

/// The report as one pretty-printed JSON object.
pub fn json(report: &RunReport) -> Result<String, CliError> {
    serde_json::to_string_pretty(report)
        .map(|s| s + "\n")
        .map_err(|e| CliError::internal(format!("cannot encode the report: {e}")))
}

/// What the first line of a summary adds after the target for a kernel on several physical
/// cores (` x 2 cores`; nothing for one).
pub fn cores_note(cores: usize) -> String {
    if cores > 1 {
        format!(" x {cores} cores")
    } else {
        String::new()
    }
}

/// The summary lines of the model: time, HFU, HBM traffic and a bar per engine class.
pub fn summary(r: &RunReport) -> String {
    let hfu = match r.hfu {
        Some(h) => format!("HFU {h:.2}"),
        None => "no matmuls".to_string(),
    };
    let mut s = format!(
        "  model   {:.1} us modeled, {hfu}; HBM traffic {:.1} KiB\n",
        r.modeled_time_us,
        r.hbm_bytes as f64 / 1024.0
    );
    let b = &r.engine_busy;
    for (name, frac) in [("pe", b.pe), ("act", b.act), ("dve", b.dve), ("pool", b.pool), ("dma", b.dma)] {
        let filled = (frac.clamp(0.0, 1.0) * 20.0).round() as usize;
        s += &format!(
            "          {name:<4} [{}{}] {:>3.0}%\n",
            "#".repeat(filled),
            ".".repeat(20 - filled),
            frac * 100.0
        );
    }
    if let Some(chip) = &r.chip {
        s += &format!(
            "  cores   {} physical cores sharing HBM ({:.0} GB/s); the shared budget was busy {:.0}% of the time\n",
            chip.cores.len(),
            chip.hbm_shared_gb_per_s,
            chip.hbm_shared_busy * 100.0
        );
        for (k, c) in chip.cores.iter().enumerate() {
            let b = &c.engine_busy;
            s += &format!(
                "          core {k}: {:.1} us, {} instructions, {} matmuls, HBM {:.1} KiB; busy pe {:.0}% act {:.0}% \
                 dve {:.0}% pool {:.0}% dma {:.0}%\n",
                c.modeled_time_us,
                c.bir_instructions,
                c.matmuls,
                c.hbm_bytes as f64 / 1024.0,
                b.pe * 100.0,
                b.act * 100.0,
                b.dve * 100.0,
                b.pool * 100.0,
                b.dma * 100.0
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report_with(hfu: Option<f64>, busy: sim::EngineBusy) -> RunReport {
        RunReport {
            kernel: "k".into(),
            target: "trn2".into(),
            penguin_instructions: None,
            bir_instructions: 3,
            matmuls: 0,
            sbuf_peak_bytes_per_partition: 0,
            hbm_bytes: 2048,
            simulated: false,
            dma_bytes: None,
            outputs: Vec::new(),
            modeled_time_us: 2.5,
            hfu,
            engine_busy: busy,
            chip: None,
        }
    }

    #[test]
    fn summary_shows_time_traffic_and_a_bar_per_engine() {
        let busy = sim::EngineBusy { pe: 0.5, act: 0.0, dve: 0.25, pool: 0.0, dma: 1.0 };
        let s = summary(&report_with(None, busy));
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "  model   2.5 us modeled, no matmuls; HBM traffic 2.0 KiB");
        assert_eq!(lines[1], "          pe   [##########..........]  50%");
        assert_eq!(lines[3], "          dve  [#####...............]  25%");
        assert_eq!(lines[5], "          dma  [####################] 100%");
        assert!(summary(&report_with(Some(0.3), busy)).starts_with("  model   2.5 us modeled, HFU 0.30;"));
    }
}
