//! `ntile._native`: the Rust half of ntile's Python module.
//!
//! It is a thin layer over the `ntile` CLI library: flags arrive as an argument vector and are
//! parsed by the CLI's own parser, so every flag of `ntile gemm` works here too; GEMM operands
//! arrive as flat numpy arrays and are borrowed, not copied, when they already hold float32;
//! the report leaves as the CLI's `--json` text. The Python package (`ntile/__init__.py`)
//! turns user arrays and keyword arguments into these calls.
//!
//! Every call releases the GIL while ntile plans, lowers, models or simulates, and polls for
//! signals meanwhile, so Ctrl-C stops a long run with `KeyboardInterrupt`. Bad input raises
//! `ValueError` with the CLI's message (its exit code 2); anything else `RuntimeError`.
#![deny(missing_docs)]
#![expect(
    clippy::needless_pass_by_value,
    reason = "pyfunction arguments arrive owned from Python, and map_err adapters take errors by value"
)]

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Mutex;

use ntile::api::{self, GemmInputs, Operand, Watch};
use ntile::{CliError, Command};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

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
fn operand<'a>(name: &str, slice: Slice<'a>, rows: u64, cols: u64) -> Result<Operand<'a>, CliError> {
    match slice {
        Slice::F32(values) => Operand::from_f32(name, rows, cols, values),
        Slice::Bits(bytes, dtype) => Operand::from_bits(name, rows, cols, dtype, bytes),
    }
}

fn not_contiguous(e: numpy::AsSliceError) -> PyErr {
    PyValueError::new_err(format!("operand is not contiguous ({e})"))
}

/// The Python exception of a CLI failure: `ValueError` for bad input, `RuntimeError` else.
fn py_error(e: CliError) -> PyErr {
    if e.code == ntile::error::EXIT_USAGE {
        PyValueError::new_err(e.message)
    } else {
        PyRuntimeError::new_err(e.message)
    }
}

/// Run `work` with the GIL released. Its watch polls Python for pending signals; a signal
/// handler's exception (`KeyboardInterrupt` for Ctrl-C) stops the work and is raised here.
fn detached<T: Send>(py: Python<'_>, work: impl FnOnce(&Watch<'_>) -> Result<T, CliError> + Send) -> PyResult<T> {
    let raised: Mutex<Option<PyErr>> = Mutex::new(None);
    let poll = || {
        Python::attach(|py| match py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                if let Ok(mut slot) = raised.lock() {
                    *slot = Some(e);
                }
                true
            }
        })
    };
    let result = py.detach(|| work(&Watch::new(&poll)));
    match result {
        Ok(v) => Ok(v),
        Err(e) if e.code == api::EXIT_INTERRUPTED => match raised.lock().ok().and_then(|mut s| s.take()) {
            Some(err) => Err(err),
            None => Err(py_error(e)),
        },
        Err(e) => Err(py_error(e)),
    }
}

/// `ntile gemm` with `argv` (flags after `gemm`) and optional in-memory operands `a`, `b`.
/// Returns the `--json` report as text and, when simulated, C as a flat float32 array.
#[pyfunction]
#[pyo3(signature = (argv, a=None, b=None))]
fn gemm<'py>(
    py: Python<'py>,
    argv: Vec<String>,
    a: Option<PyOperand<'py>>,
    b: Option<PyOperand<'py>>,
) -> PyResult<(String, Option<Bound<'py, PyArray1<f32>>>)> {
    let words: Vec<String> = std::iter::once("gemm".to_string()).chain(argv).collect();
    let cli = api::parse(&words).map_err(py_error)?;
    let Command::Gemm(args) = cli.command else {
        return Err(PyRuntimeError::new_err("`gemm` did not parse as the gemm command (a bug)"));
    };
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
    let outcome = detached(py, |watch| {
        let inputs = match slices {
            Some(((sa, ar, ac), (sb, br, bc))) => {
                Some(GemmInputs { a: operand("a", sa, ar, ac)?, b: operand("b", sb, br, bc)? })
            }
            None => None,
        };
        ntile::gemm::run_with(&args, inputs, watch)
    })?;
    let report = serde_json::to_string(&outcome.report)
        .map_err(|e| PyRuntimeError::new_err(format!("cannot encode the report: {e}")))?;
    Ok((report, outcome.result.map(|c| PyArray1::from_vec(py, c))))
}

/// Any `ntile` command line (without the program name): its stdout text and exit code.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<String>) -> PyResult<(String, u8)> {
    let cli = api::parse(&argv).map_err(py_error)?;
    detached(py, |_| ntile::run(&cli))
}

/// The cycle model of the kernel file at `path` (lowered for `target` if it is Penguin), with
/// its HBM tensors, as JSON text.
#[pyfunction]
#[pyo3(signature = (path, target=None))]
fn model_kernel(py: Python<'_>, path: PathBuf, target: Option<String>) -> PyResult<String> {
    let target = match target {
        Some(t) => Some(penguin::Target::from_str(&t).map_err(|e| PyValueError::new_err(e.to_string()))?),
        None => None,
    };
    let report = detached(py, |_| api::model_kernel(&path, target))?;
    serde_json::to_string(&report).map_err(|e| PyRuntimeError::new_err(format!("cannot encode the report: {e}")))
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(gemm, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(model_kernel, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
