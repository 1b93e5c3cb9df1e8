//! `ntile nki FILE.py KERNEL`: an NKI kernel file traced by ntile's Python tracer (run from
//! an embedded copy with `python3 -m ntile._nki.cli`, see [`embed`]), built, verified and
//! lowered, then simulated on `.npy` inputs (or modeled without data with `--shape` or
//! `--no-sim`) through `driver::run_nki`; it prints what `ntile run` prints plus the
//! builder's allocation table, and writes `-o` outputs, `--trace`/`--svg` timelines and
//! `--emit` text.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use clap::Args;
use driver::{NkiOptions, NkiRun};
use penguin::Target;

use crate::error::CliError;
use crate::npy;
use crate::run::{binding, output_npy, run_error, Binding, Files};

pub mod embed;

/// Flags of `ntile nki`.
#[derive(Args, Clone, Debug)]
#[command(after_long_help = "\
Examples:
  ntile nki examples/nki/legacy/matmul.py matmul_one_tile --input lhsT=a.npy --input rhs=b.npy -o out=c.npy
  ntile nki examples/nki/legacy/matmul.py matmul_tiled --shape lhsT=8192x4096:bf16 --shape rhs=8192x8192:bf16
  ntile nki examples/nki/current/rmsnorm.py rmsnorm --input x=x.npy --input g=g.npy --json --svg t.svg
  ntile nki my_kernel.py my_kernel --input x=x.npy:bf16 --emit penguin    the rolled Penguin function
  ntile nki examples/nki/current/two_cores.py add_halves --shape a=4096x512:fp32 --shape b=4096x512:fp32 --grid 2

The kernel file is imported with ntile's import hook on, so `import neuronxcc.nki` and
`import nki` in it resolve to ntile's NKI APIs: an unchanged kernel runs. Each tensor argument
is named by its parameter: --input NAME=F.npy gives its data (its shape and dtype from the file;
a `:bf16` / `:fp8e4m3` suffix reads uint16 / uint8 files as those bit patterns), --shape
NAME=DIMSxDIMS:DTYPE only its shape (the kernel is then modeled without data), --arg NAME=VALUE
any other argument (a Python literal). The tracer runs with python3 (only numpy is needed).

After the run: the simulation's counts, the written outputs, the allocation of every SBUF/PSUM
site (bytes per partition, logical tiles, the buffers backing them and their byte ranges) and
the cycle model's timing as `ntile run` prints it (with --grid 2, each core's allocations and
figures and how busy the HBM bandwidth they share was); --json prints the report of `ntile run
--json` plus `allocations` and `times` (tracing, reading, building, running).

Exit codes: 0 ok, 2 a kernel error (it names the kernel's file:line), bad input, or no python3
or numpy, 3 internal error.")]
pub struct NkiArgs {
    /// The kernel's Python file
    #[arg(value_name = "FILE.py")]
    pub file: PathBuf,
    /// The kernel: a function of the file (decorated with @nki.jit or not)
    #[arg(value_name = "KERNEL")]
    pub kernel: String,
    /// A tensor argument's data: NAME=FILE.npy, or NAME=FILE.npy:DTYPE for bit patterns (repeatable)
    #[arg(long = "input", value_name = "NAME=FILE.npy")]
    pub inputs: Vec<String>,
    /// A tensor argument by shape and dtype only: NAME=8192x4096:bf16 (repeatable; models without data)
    #[arg(long = "shape", value_name = "NAME=DIMS:DTYPE")]
    pub shapes: Vec<String>,
    /// Another argument as a Python literal: NAME=VALUE (repeatable)
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    pub args: Vec<String>,
    /// An output to write after the run: NAME=FILE.npy (repeatable; the returned tensors' names
    /// are listed in the summary)
    #[arg(short = 'o', long = "output", value_name = "NAME=FILE.npy", value_parser = binding)]
    pub outputs: Vec<Binding>,
    /// Target [default: the kernel's platform_target, NEURON_PLATFORM_TARGET_OVERRIDE, else trn2]
    #[arg(long)]
    pub target: Option<Target>,
    /// The SPMD launch grid, as the kernel would be indexed: 2 launches it on the two physical
    /// cores of a logical NeuronCore (LNC=2, current API); legacy kernels take axes such as
    /// 'nc(2),4' or 'spmd_dim(nc(2),2),2'
    #[arg(long, value_name = "GRID")]
    pub grid: Option<String>,
    /// Print one JSON report instead of the summary
    #[arg(long)]
    pub json: bool,
    /// Write the modeled engine timeline as Chrome/Perfetto trace-event JSON
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Write the modeled engine timeline as a static SVG
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Print the built kernel instead of running it: penguin (its loops rolled) or bir (a
    /// two-core kernel: each core's after a `core K` line, and its BIR as a chip)
    #[arg(long, value_name = "FORM", value_parser = ["penguin", "bir"])]
    pub emit: Option<String>,
    /// Model the kernel without simulating it (no input data is read)
    #[arg(long)]
    pub no_sim: bool,
    /// Write the trace the tracer made (ntile-nki-trace JSON) to FILE
    #[arg(long, value_name = "FILE")]
    pub save_trace: Option<PathBuf>,
}

/// `--input NAME=FILE.npy[:DTYPE]` split into the binding and the dtype suffix.
fn input_binding(text: &str) -> Result<(Binding, Option<String>), CliError> {
    let b = binding(text).map_err(|e| CliError::usage(format!("--input {text}: {e}")))?;
    let p = b.path.to_string_lossy().to_string();
    match p.rsplit_once(':') {
        Some((path, dtype)) if !dtype.contains(['/', '\\']) && !path.is_empty() => {
            Ok((Binding { name: b.name, path: PathBuf::from(path) }, Some(dtype.to_string())))
        }
        _ => Ok((b, None)),
    }
}

/// Run the tracer: the trace JSON and the seconds it took.
fn trace(args: &NkiArgs, inputs: &[(Binding, Option<String>)]) -> Result<(String, f64), CliError> {
    let dir = embed::package_dir()?;
    let mut cmd = Command::new("python3");
    cmd.arg("-m").arg("ntile._nki.cli").arg(&args.file).arg(&args.kernel);
    for (b, dtype) in inputs {
        let suffix = dtype.as_ref().map(|d| format!(":{d}")).unwrap_or_default();
        cmd.arg("--input").arg(format!("{}={}{suffix}", b.name, b.path.display()));
    }
    for s in &args.shapes {
        cmd.arg("--shape").arg(s);
    }
    for a in &args.args {
        cmd.arg("--arg").arg(a);
    }
    if let Some(t) = args.target {
        cmd.arg("--target").arg(t.to_string());
    }
    if let Some(g) = &args.grid {
        cmd.arg("--grid").arg(g);
    }
    let path = match std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        Some(rest) => {
            let mut all = vec![dir];
            all.extend(std::env::split_paths(&rest));
            std::env::join_paths(all).map_err(|e| CliError::usage(format!("PYTHONPATH: {e}")))?
        }
        None => dir.into_os_string(),
    };
    cmd.env("PYTHONPATH", path).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let start = Instant::now();
    let out = cmd.output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            CliError::usage(
                "ntile nki runs the kernel's Python with python3, which is not on PATH (install Python 3 with numpy)",
            )
        } else {
            CliError::usage(format!("ntile nki: cannot run python3: {e}"))
        }
    })?;
    let secs = start.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
    match out.status.code() {
        Some(0) => {}
        Some(2) => {
            let msg = stderr.strip_prefix("error: ").unwrap_or(&stderr);
            if msg.contains("No module named 'numpy'") {
                return Err(CliError::usage(
                    "ntile nki runs the kernel's Python with python3, which has no numpy (pip install numpy)",
                ));
            }
            return Err(CliError::usage(msg.to_string()));
        }
        code => {
            if stderr.contains("No module named 'numpy'") {
                return Err(CliError::usage(
                    "ntile nki runs the kernel's Python with python3, which has no numpy (pip install numpy)",
                ));
            }
            let code = code.map_or("a signal".to_string(), |c| format!("exit code {c}"));
            return Err(CliError::internal(format!("the NKI tracer failed ({code}):\n{stderr}")));
        }
    }
    let text = String::from_utf8(out.stdout).map_err(|_| CliError::internal("the NKI tracer wrote non-UTF-8 text"))?;
    Ok((text, secs))
}

/// Run `ntile nki`.
pub fn run(args: &NkiArgs) -> Result<String, CliError> {
    if let (true, Some(b)) = (args.no_sim, args.outputs.first()) {
        return Err(CliError::usage(format!(
            "--output {}=... cannot be used with --no-sim: without a simulation no tensor has contents to write",
            b.name
        )));
    }
    if !args.file.is_file() {
        return Err(CliError::usage(format!("{}: no such kernel file", args.file.display())));
    }
    let inputs = args.inputs.iter().map(|t| input_binding(t)).collect::<Result<Vec<_>, _>>()?;
    for (i, (b, _)) in inputs.iter().enumerate() {
        if inputs[..i].iter().any(|(o, _)| o.name == b.name) {
            return Err(CliError::usage(format!("--input {} is given twice", b.name)));
        }
        if !b.path.is_file() {
            return Err(CliError::usage(format!("--input {}={}: no such file", b.name, b.path.display())));
        }
    }
    let (json, tracing_s) = trace(args, &inputs)?;
    if let Some(path) = &args.save_trace {
        npy::write_atomic(path, json.as_bytes())?;
    }
    let simulate = !args.no_sim && args.shapes.is_empty() && args.emit.is_none();
    let options = NkiOptions { target: args.target, simulate, ..NkiOptions::default() };
    let built = driver::build_nki(&json, &options)?;
    if let Some(form) = &args.emit {
        return Ok(built.emit(form)?);
    }
    let names: Vec<String> = built.kernel.outputs.keys().cloned().collect();
    for b in &args.outputs {
        if !names.contains(&b.name) {
            return Err(CliError::usage(format!(
                "--output {}: the kernel's results are {}",
                b.name,
                names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    let bindings: Vec<Binding> = inputs.iter().map(|(b, _)| b.clone()).collect();
    let mut files = Files { bindings: &bindings, descrs: Vec::new() };
    let run = built.run(&mut files, &options).map_err(|e| run_error(e, &files))?;
    let mut out = String::new();
    let cores = crate::run::cores_note(run.runnable.num_cores());
    if let Some(s) = run.outcome.simulated {
        out += &format!(
            "ran {} on {}{cores}: {} instructions, {} matmuls, {} bytes moved by DMA\n",
            run.outcome.report.kernel, run.outcome.report.target, s.instructions, s.matmuls, s.dma_bytes
        );
        for b in &args.outputs {
            if let Some(t) = run.outcome.outputs.iter().find(|t| t.name == b.name) {
                npy::write_atomic(&b.path, &output_npy(t)?)?;
                out += &format!("  wrote {} {} {:?} to {}\n", t.name, t.dtype, t.shape, b.path.display());
            }
        }
    } else {
        let r = &run.outcome.report;
        out += &format!(
            "modeled {} on {}{cores} without data: {} instructions, {} matmuls, {} bytes to or from HBM\n",
            r.kernel, r.target, r.bir_instructions, r.matmuls, r.hbm_bytes
        );
    }
    if let Some(path) = &args.trace {
        npy::write_atomic(path, run.runnable.trace(&run.outcome).as_bytes())?;
    }
    if let Some(path) = &args.svg {
        npy::write_atomic(path, run.runnable.timeline_svg(&run.outcome).as_bytes())?;
    }
    if args.json {
        let report = run.report_json(Some(tracing_s));
        return serde_json::to_string_pretty(&report)
            .map(|s| s + "\n")
            .map_err(|e| CliError::internal(format!("cannot encode the report: {e}")));
    }
    let t = &run.times;
    out += &format!(
        "  times   traced in {tracing_s:.2} s, read in {:.2} s, built in {:.2} s, ran in {:.2} s\n",
        t.read_s, t.build_s, t.run_s
    );
    Ok(out + &summary(&run))
}

/// The allocation table and the model's lines (what `ntile nki` prints after the run's
/// first lines).
pub fn summary(run: &NkiRun) -> String {
    let mut s =
        format!("  results {}\n", run.kernel.outputs.keys().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "));
    if run.other_cores.is_empty() {
        s += &allocations(&run.kernel);
    } else {
        for (k, kernel) in std::iter::once(&run.kernel).chain(&run.other_cores).enumerate() {
            s += &format!("  core {k}\n");
            s += &allocations(kernel);
        }
    }
    s + &crate::run::summary(&run.outcome.report)
}

/// One line per allocation site: where, buffer, bytes per partition, tiles, buffers, ranges.
fn allocations(kernel: &driver::NkiKernel) -> String {
    let sites = &kernel.allocations;
    if sites.is_empty() {
        return String::new();
    }
    let name_w = sites.iter().map(|a| a.name.len()).max().unwrap_or(4).max(4);
    let loc_w = sites.iter().map(|a| a.loc.len()).max().unwrap_or(5).max(5);
    let mut s =
        format!("  alloc   {:<name_w$}  {:<loc_w$}  buffer  bytes/part  tiles  buffers  ranges\n", "site", "where");
    for a in sites {
        let ranges = ranges_text(&a.ranges);
        let note = if a.rotation_dropped {
            " (no room to rotate)"
        } else if a.direct {
            " (placed by the kernel)"
        } else {
            ""
        };
        s += &format!(
            "          {:<name_w$}  {:<loc_w$}  {:<6}  {:>10}  {:>5}  {:>7}  {}{note}\n",
            a.name, a.loc, a.buffer, a.bytes_per_partition, a.instances, a.slots, ranges
        );
    }
    s
}

/// The byte ranges of a site's buffers: each one while there are few, else the span they
/// tile when they are equal and back to back (`[0, 33792) as 33 x 1024`).
fn ranges_text(ranges: &[(u64, u64)]) -> String {
    let each = || ranges.iter().map(|(lo, hi)| format!("[{lo}, {hi})")).collect::<Vec<_>>().join(" ");
    if ranges.len() <= 4 {
        return each();
    }
    let size = ranges[0].1 - ranges[0].0;
    let packed = ranges.windows(2).all(|w| w[1].0 == w[0].1 && w[1].1 - w[1].0 == size);
    match (packed, ranges.first(), ranges.last()) {
        (true, Some(first), Some(last)) => format!("[{}, {}) as {} x {size}", first.0, last.1, ranges.len()),
        _ => each(),
    }
}

#[cfg(test)]
mod tests {
    use super::ranges_text;

    #[test]
    fn many_packed_buffers_print_as_their_span() {
        assert_eq!(ranges_text(&[(0, 2048), (2048, 4096)]), "[0, 2048) [2048, 4096)");
        let many: Vec<(u64, u64)> = (0..33).map(|i| (i * 256, (i + 1) * 256)).collect();
        assert_eq!(ranges_text(&many), "[0, 8448) as 33 x 256");
        let gaps: Vec<(u64, u64)> = (0..5).map(|i| (i * 512, i * 512 + 256)).collect();
        assert!(ranges_text(&gaps).starts_with("[0, 256) [512, 768) "));
    }
}
