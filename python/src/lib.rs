//! `ntile._native`: the Rust half of ntile's Python module, a thin shell over the pipeline
//! library ([`driver`]).
//!
//! A GEMM arrives as typed keyword values (the flags of the same names, set in memory; any
//! more `ntile gemm` flags the caller gives as words go through the CLI's parser) and becomes
//! a `driver::GemmRequest`; its operands arrive as flat numpy arrays and are borrowed, not
//! copied, when they already hold float32; the report leaves as the CLI's `--json` text. A
//! kernel run arrives as the kernel's text or path and its input arrays by tensor name, runs
//! through `driver::run_program`, and its outputs leave as bytes of their dtypes. The Python
//! package (`ntile/__init__.py`) turns user arrays and keyword arguments into these calls.
//!
//! Every call releases the GIL while ntile plans, lowers, models or simulates on a thread of
//! its own, while this thread polls for signals and sets the run's cancellation flag on one,
//! so Ctrl-C stops a long run with `KeyboardInterrupt`. Bad input raises `ValueError` with the
//! CLI's message; anything else `RuntimeError`.
#![deny(missing_docs)]
#![expect(
    clippy::needless_pass_by_value,
    reason = "pyfunction arguments arrive owned from Python, and map_err adapters take errors by value"
)]

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use driver::{Array, Cancel, DriverError, Elem, GemmInputs, Operand, RunOptions};
use ntile::gemm::GemmArgs;
use ntile::CliError;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

mod nki;

/// A GEMM operand from Python: a flat C-contiguous array, the dtype its elements are in
/// (`fp32` for float32, else an HBM dtype whose bit patterns the array holds as uint8), and
/// the matrix shape.
type PyOperand<'py> = (Bound<'py, PyAny>, String, u64, u64);

/// A borrowed operand array: float32 values, or the raw bytes of a narrow float dtype.
enum Held<'py> {
    F32(PyReadonlyArray1<'py, f32>),
    Bits(PyReadonlyArray1<'py, u8>, penguin::DType),
}

fn hold<'py>(op: &PyOperand<'py>) -> PyResult<Held<'py>> {
    let (array, dtype, _, _) = op;
    if dtype == "fp32" {
        return Ok(Held::F32(array.extract()?));
    }
    let dtype = penguin::DType::from_str(dtype).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(Held::Bits(array.extract()?, dtype))
}

/// An operand's buffer borrowed from its array, to be read with the GIL released.
enum Slice<'a> {
    F32(&'a [f32]),
    Bits(&'a [u8], penguin::DType),
}

fn slice<'a>(held: &'a Held<'_>) -> PyResult<Slice<'a>> {
    Ok(match held {
        Held::F32(a) => Slice::F32(a.as_slice().map_err(not_contiguous)?),
        Held::Bits(a, dtype) => Slice::Bits(a.as_slice().map_err(not_contiguous)?, *dtype),
    })
}

/// The operand over a borrowed buffer (narrow floats are decoded here, without the GIL).
fn operand<'a>(name: &str, slice: Slice<'a>, rows: u64, cols: u64) -> Result<Operand<'a>, DriverError> {
    match slice {
        Slice::F32(values) => Operand::from_f32(name, rows, cols, values),
        Slice::Bits(bytes, dtype) => Operand::from_bits(name, rows, cols, dtype, bytes),
    }
}

fn not_contiguous(e: numpy::AsSliceError) -> PyErr {
    PyValueError::new_err(format!("operand is not contiguous ({e})"))
}

/// The Python exception of a failure: `ValueError` for bad input, `RuntimeError` else.
fn py_error(e: CliError) -> PyErr {
    if e.code == ntile::error::EXIT_USAGE {
        PyValueError::new_err(e.message)
    } else {
        PyRuntimeError::new_err(e.message)
    }
}

/// Run `work` on a thread of its own with the GIL released, while this thread polls Python
/// for pending signals every 20 ms; a signal handler's exception (`KeyboardInterrupt` for
/// Ctrl-C) sets the run's cancellation flag and is raised once the run has stopped.
fn detached<T: Send>(py: Python<'_>, work: impl FnOnce(&Cancel) -> Result<T, CliError> + Send) -> PyResult<T> {
    let cancel = Cancel::new();
    let (result, raised) = py.detach(|| {
        std::thread::scope(|scope| {
            let worker = scope.spawn(|| work(&cancel));
            let mut raised = None;
            while !worker.is_finished() {
                std::thread::sleep(Duration::from_millis(20));
                if raised.is_none() {
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        raised = Some(e);
                        cancel.cancel();
                    }
                }
            }
            let result =
                worker.join().unwrap_or_else(|_| Err(CliError::internal("the worker thread panicked (a bug)")));
            (result, raised)
        })
    });
    match (result, raised) {
        (Ok(v), None) => Ok(v),
        (Err(e), Some(raised)) if e.code == ntile::error::EXIT_INTERRUPTED => Err(raised),
        (_, Some(raised)) => Err(raised),
        (Err(e), None) => Err(py_error(e)),
    }
}

/// A keyword value parsed as the flag `flag` (clap id `id`) parses it, with the CLI's message.
fn parsed<T: FromStr>(flag: &str, value: &str) -> PyResult<T>
where
    T::Err: std::fmt::Display,
{
    T::from_str(value).map_err(|e| PyValueError::new_err(format!("invalid value '{value}' for '{flag}': {e}")))
}

/// The flags `fields` sets (keyword values by clap id: `dtype`, `block_m`, `no_sim`, ...),
/// and the ids it set.
fn gemm_args(fields: &Bound<'_, PyDict>) -> PyResult<(GemmArgs, Vec<&'static str>)> {
    let mut args = GemmArgs::default();
    let mut set = Vec::new();
    let text = |key: &str| -> PyResult<Option<String>> {
        match fields.get_item(key)? {
            Some(v) if !v.is_none() => Ok(Some(v.str()?.to_string())),
            _ => Ok(None),
        }
    };
    let number = |key: &str| -> PyResult<Option<u64>> {
        match fields.get_item(key)? {
            Some(v) if !v.is_none() => Ok(Some(v.extract()?)),
            _ => Ok(None),
        }
    };
    let flag = |key: &str| -> PyResult<bool> {
        match fields.get_item(key)? {
            Some(v) => v.is_truthy(),
            None => Ok(false),
        }
    };
    macro_rules! typed {
        ($($id:literal => $field:ident as $flag:literal),* $(,)?) => {
            $(if let Some(v) = text($id)? {
                args.$field = Some(parsed($flag, &v)?);
                set.push($id);
            })*
        };
    }
    typed!(
        "dtype" => dtype as "--dtype <DTYPE>",
        "lhs_dtype" => lhs_dtype as "--lhs-dtype <LHS_DTYPE>",
        "rhs_dtype" => rhs_dtype as "--rhs-dtype <RHS_DTYPE>",
        "hbm_dtype" => hbm_dtype as "--hbm-dtype <DTYPE>",
        "out_dtype" => out_dtype as "--out-dtype <OUT_DTYPE>",
        "target" => target as "--target <TARGET>",
        "schedule" => schedule as "--schedule <SCHEDULE>",
        "perf_mode" => perf_mode as "--perf-mode <MODE>",
        "sparsity" => sparsity as "--sparsity <N:M>",
        "split" => split as "--split <DIM>",
    );
    if let Some(v) = number("lnc")? {
        // The driver refuses a count that is not a logical NeuronCore's (one too large for
        // u32 saturates to such a count).
        args.lnc = Some(u32::try_from(v).unwrap_or(u32::MAX));
        set.push("lnc");
    }
    let numbers = [
        ("m", &mut args.m),
        ("k", &mut args.k),
        ("n", &mut args.n),
        ("block_m", &mut args.block_m),
        ("block_n", &mut args.block_n),
        ("block_k", &mut args.block_k),
    ];
    for (id, slot) in numbers {
        if let Some(v) = number(id)? {
            *slot = Some(v);
            set.push(id);
        }
    }
    let switches =
        [("lhs_transposed", &mut args.lhs_transposed), ("no_sim", &mut args.no_sim), ("no_check", &mut args.no_check)];
    for (id, slot) in switches {
        if flag(id)? {
            *slot = true;
            set.push(id);
        }
    }
    if let Some(hw) = text("hw")? {
        args.hw = Some(PathBuf::from(hw));
        set.push("hw");
    }
    if args.target.is_none() {
        args.target = Some(penguin::Target::Trn2);
    }
    if args.out_dtype.is_none() {
        args.out_dtype = Some(penguin::DType::Fp32);
    }
    if args.schedule.is_none() {
        args.schedule = Some(codegen::Schedule::Auto);
    }
    args.quiet = true;
    Ok((args, set))
}

/// A GEMM with the flags `fields` sets (keyword values by clap id) and any more `flags`
/// (words of `ntile gemm` flags), on in-memory operands `a`, `b` when given. `timeline`
/// `"svg"` also returns the modeled engine timeline as SVG text. Returns the `--json` report
/// as text, C as a flat float32 array when simulated, and the timeline.
#[pyfunction]
#[pyo3(signature = (fields, flags, a=None, b=None, timeline=None))]
#[expect(clippy::type_complexity, reason = "the tuple Python unpacks")]
fn gemm<'py>(
    py: Python<'py>,
    fields: Bound<'py, PyDict>,
    flags: Vec<String>,
    a: Option<PyOperand<'py>>,
    b: Option<PyOperand<'py>>,
    timeline: Option<String>,
) -> PyResult<(String, Option<Bound<'py, PyArray1<f32>>>, Option<String>)> {
    let (mut args, set) = gemm_args(&fields)?;
    ntile::gemm::flags::apply(&mut args, &set, &flags).map_err(py_error)?;
    // Flags whose effect the call cannot return are refused, never ignored.
    if args.emit.is_some() && timeline.is_none() {
        return Err(PyValueError::new_err(
            "flags: --emit prints the IR, which ntile.gemm and ntile.model do not return; use \
             ntile.cli('gemm', ..., '--emit', 'bir') for the IR",
        ));
    }
    if a.is_some() && (args.lhs.is_some() || args.rhs.is_some()) {
        return Err(PyValueError::new_err(
            "flags: --lhs/--rhs cannot be used with ntile.gemm(a, b), whose arrays are the operands",
        ));
    }
    let held = match (&a, &b) {
        (Some(a), Some(b)) => Some((hold(a)?, hold(b)?)),
        (None, None) => None,
        _ => return Err(PyValueError::new_err("give both a and b, or neither")),
    };
    let slices = match (&held, &a, &b) {
        (Some((ha, hb)), Some((_, _, ar, ac)), Some((_, _, br, bc))) => {
            Some(((slice(ha)?, *ar, *ac), (slice(hb)?, *br, *bc)))
        }
        _ => None,
    };
    let svg = timeline.as_deref() == Some("svg");
    let (report, c, picture) = detached(py, |cancel| {
        let inputs = match slices {
            Some(((sa, ar, ac), (sb, br, bc))) => {
                Some(GemmInputs { a: operand("a", sa, ar, ac)?, b: operand("b", sb, br, bc)? })
            }
            None => None,
        };
        let (mut req, inputs) = ntile::gemm::prepare(&args, inputs)?;
        req.options.cancel = Some(cancel.clone());
        if svg {
            req.options.unrolled = true;
        }
        let outcome = driver::gemm(&req, inputs).map_err(|e| match e {
            DriverError::NotUnrolled { why } if svg => {
                CliError::usage(format!("--svg needs every instruction's modeled time, but {why}"))
            }
            e => ntile::gemm::refusal(&args, e),
        })?;
        ntile::gemm::finish(&args, &outcome)?;
        let picture = if svg { outcome.timeline_svg() } else { None };
        let report = serde_json::to_string(&outcome.report)
            .map_err(|e| CliError::internal(format!("cannot encode the report: {e}")))?;
        Ok((report, outcome.c, picture))
    })?;
    Ok((report, c.map(|c| PyArray1::from_vec(py, c)), picture))
}

/// Any `ntile` command line (without the program name): its stdout text and exit code.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<String>) -> PyResult<(String, u8)> {
    let cli = ntile::parse(&argv).map_err(py_error)?;
    detached(py, |cancel| ntile::run_with(&cli, Some(cancel)))
}

/// Refuse input arrays of `nbytes` (their copies, as the caller counts them) over the memory
/// budget, with the CLI's message, before the caller makes them.
#[pyfunction]
fn check_input_bytes(nbytes: u64) -> PyResult<()> {
    ntile::budget::check_bytes(u128::from(nbytes), driver::budget::default_budget()).map_err(py_error)
}

/// An input array from Python: a flat C-contiguous uint8 view of its bytes, its numpy type
/// string (`<f4`, `<u2`, `|u1`, ...) and its shape.
type PyArrayInput<'py> = (PyReadonlyArray1<'py, u8>, String, Vec<u64>);

fn elem(name: &str, descr: &str) -> PyResult<Elem> {
    Ok(match descr {
        "<f4" => Elem::F32,
        "<f2" => Elem::F16,
        "<u2" => Elem::U16,
        "|u1" | "<u1" => Elem::U8,
        "|i1" | "<i1" => Elem::I8,
        "<i2" => Elem::I16,
        "<i4" => Elem::I32,
        "<u4" => Elem::U32,
        d => {
            return Err(PyValueError::new_err(format!("input `{name}`: holds dtype {d}, which no ntile tensor takes")))
        }
    })
}

/// One output tensor for Python: its name, dtype name, shape and bytes.
type PyOutput<'py> = (String, String, Vec<u64>, Bound<'py, PyBytes>);

/// Simulate a kernel (`.pir`/`.bir` text or JSON, looped or not; read from `path`, or `text`
/// given in memory and named `<kernel>`) on input arrays by tensor name, lowering a Penguin
/// function for `target`. Returns each output tensor asked for (every output tensor when
/// `outputs` is None), the run's report with the kernel's HBM tensors as JSON text, and what
/// `ntile run` prints of it.
#[pyfunction]
#[pyo3(signature = (path, text, inputs, target=None, outputs=None))]
fn run<'py>(
    py: Python<'py>,
    path: Option<PathBuf>,
    text: Option<String>,
    inputs: Vec<(String, PyArrayInput<'py>)>,
    target: Option<String>,
    outputs: Option<Vec<String>>,
) -> PyResult<(Vec<PyOutput<'py>>, String, String)> {
    let target = target.map(|t| parsed::<penguin::Target>("--target <TARGET>", &t)).transpose()?;
    let mut arrays = Vec::with_capacity(inputs.len());
    for (name, (bytes, descr, shape)) in &inputs {
        let data = bytes.as_slice().map_err(not_contiguous)?.to_vec();
        arrays.push((name.clone(), Array { elem: elem(name, descr)?, shape: shape.clone(), data }));
    }
    let (outs, report, stdout) = detached(py, |cancel| {
        let src = match (path, text) {
            (Some(path), _) => ntile::fmt::read_source(&path)?,
            (None, Some(text)) => driver::Source { name: "<kernel>".into(), extension: String::new(), text },
            (None, None) => return Err(CliError::usage("give the kernel's path or its text")),
        };
        // A chip's text (`cores=2`) runs both cores on one HBM image.
        let programs = driver::program::load_cores(&src)?;
        let options = RunOptions { simulate: true, outputs, cancel: Some(cancel.clone()), ..RunOptions::default() };
        let runnable = driver::Runnable::new_chip(&src.name, programs, target)?;
        let outcome = runnable.run(&mut arrays, &options)?;
        let report = kernel_report(&runnable, &outcome)?;
        let program = runnable.program();
        let ran = outcome.simulated.map_or_else(String::new, |s| {
            format!(
                "ran {} on {}{}: {} instructions, {} matmuls, {} bytes moved by DMA\n",
                program.kernel_name,
                program.target,
                ntile::run::cores_note(runnable.num_cores()),
                s.instructions,
                s.matmuls,
                s.dma_bytes
            )
        });
        Ok((outcome.outputs, report, ran + &ntile::run::summary(&outcome.report)))
    })?;
    let outs = outs.into_iter().map(|o| (o.name, o.dtype.to_string(), o.shape, PyBytes::new(py, &o.data))).collect();
    Ok((outs, report, stdout))
}

/// The report `ntile.run` returns: the kernel, its cycle model and its HBM tensors.
fn kernel_report(runnable: &driver::Runnable, outcome: &driver::RunOutcome) -> Result<String, CliError> {
    let program = runnable.program();
    let tensors: Vec<serde_json::Value> = program
        .hbm
        .iter()
        .map(|t| {
            let role = match t.role {
                bir::HbmRole::Input => "input",
                bir::HbmRole::Output => "output",
                bir::HbmRole::Internal => "internal",
            };
            serde_json::json!({ "name": t.name, "dtype": t.dtype.to_string(), "shape": t.shape, "role": role })
        })
        .collect();
    let r = &outcome.report;
    let hfu = match &outcome.chip {
        Some(chip) => chip.hfu(),
        None => outcome.cycle.hfu(),
    };
    let mut report = serde_json::json!({
        "kernel": r.kernel,
        "target": r.target,
        "bir_instructions": r.bir_instructions,
        "hbm_bytes": r.hbm_bytes,
        "modeled_time_us": r.modeled_time_us,
        "hfu": hfu,
        "engine_busy": r.engine_busy,
        "tensors": tensors,
    });
    // A chip's text: each core's figures and the shared HBM budget.
    if let (Some(chip), Some(map)) = (&r.chip, report.as_object_mut()) {
        let figures = serde_json::to_value(chip).map_err(|e| CliError::internal(format!("cannot encode: {e}")))?;
        map.insert("chip".into(), figures);
    }
    serde_json::to_string(&report).map_err(|e| CliError::internal(format!("cannot encode the report: {e}")))
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(gemm, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(check_input_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(nki::nki_run, m)?)?;
    m.add_class::<nki::NkiHandle>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
