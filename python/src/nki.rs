//! `ntile._native.nki_run(trace_json, inputs, options) -> NkiHandle`: an NKI kernel's trace
//! (from the Python tracer) built, simulated and modeled by `driver::run_nki`, as
//! `docs/nki-tracer.md` states it.
//!
//! `inputs` is a dict of numpy arrays by tensor name (converted as `ntile.run` converts them:
//! narrow floats as their bit patterns), or `None` to model without data; `options` holds
//! `target`, `simulate` and `race_check` (the simulator always detects races, and a race is
//! an error). The work runs with the GIL released, and Ctrl-C stops it (`detached`). The
//! handle keeps the run: its outputs as numpy arrays of their dtypes, its report, and the
//! timeline exporters.

use driver::{Array, NkiOptions, NkiRun};
use ntile::CliError;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::{detached, elem, not_contiguous, parsed, PyArrayInput};

/// A built and run NKI kernel.
#[pyclass(module = "ntile._native", name = "NkiHandle")]
pub struct NkiHandle {
    run: NkiRun,
}

/// An option of `options` that is set (absent or None: `None`).
fn option<'py>(options: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(options.get_item(key)?.filter(|v| !v.is_none()))
}

/// Run an NKI trace (see the module doc).
#[pyfunction]
#[pyo3(signature = (trace_json, inputs, options))]
pub fn nki_run(
    py: Python<'_>,
    trace_json: String,
    inputs: Option<Bound<'_, PyDict>>,
    options: Bound<'_, PyDict>,
) -> PyResult<NkiHandle> {
    for key in options.keys() {
        let key: String = key.extract()?;
        if !["target", "simulate", "race_check"].contains(&key.as_str()) {
            return Err(PyValueError::new_err(format!(
                "nki_run option `{key}`: expected target, simulate or race_check"
            )));
        }
    }
    let target: Option<String> = option(&options, "target")?.map(|v| v.extract()).transpose()?;
    let target = target.map(|t| parsed::<penguin::Target>("--target <TARGET>", &t)).transpose()?;
    let simulate: bool = option(&options, "simulate")?.map(|v| v.extract()).transpose()?.unwrap_or(false);
    let mut arrays = Vec::new();
    if let (true, Some(inputs)) = (simulate, &inputs) {
        let ntile = py.import("ntile")?;
        let convert = ntile.getattr("_input")?;
        for (name, value) in inputs.iter() {
            let name: String = name.extract()?;
            let converted = convert.call1((name.as_str(), value))?;
            let (bytes, descr, shape): PyArrayInput<'_> = converted.extract()?;
            let data = bytes.as_slice().map_err(not_contiguous)?.to_vec();
            arrays.push((name.clone(), Array { elem: elem(&name, &descr)?, shape, data }));
        }
    } else if simulate {
        return Err(PyValueError::new_err("nki_run: simulate needs the input arrays"));
    }
    let run = detached(py, move |cancel| {
        let options = NkiOptions { target, simulate, cancel: Some(cancel.clone()), ..NkiOptions::default() };
        let mut arrays = arrays;
        driver::run_nki(&trace_json, &mut arrays, &options).map_err(CliError::from)
    })?;
    Ok(NkiHandle { run })
}

#[pymethods]
impl NkiHandle {
    /// Every output by name, as a numpy array of its dtype (ml_dtypes for bf16/fp8).
    fn outputs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let ntile = py.import("ntile")?;
        let numpy_of = ntile.getattr("_NUMPY_OF")?;
        let np = py.import("numpy")?;
        let uint8 = np.getattr("uint8")?;
        let out = PyDict::new(py);
        for o in &self.run.outcome.outputs {
            let dtype = numpy_of.call_method1("get", (o.dtype.to_string(), &uint8))?;
            let bytes = PyBytes::new(py, &o.data);
            let kwargs = PyDict::new(py);
            kwargs.set_item("dtype", dtype)?;
            let flat = np.call_method("frombuffer", (bytes,), Some(&kwargs))?;
            let arr = flat.call_method1("reshape", (o.shape.clone(),))?.call_method0("copy")?;
            out.set_item(&o.name, arr)?;
        }
        Ok(out)
    }

    /// The report: the keys of `ntile run --json`, `allocations` and `times`.
    #[pyo3(signature = (tracing_s=None))]
    fn report<'py>(&self, py: Python<'py>, tracing_s: Option<f64>) -> PyResult<Bound<'py, PyAny>> {
        let text = self.run.report_json(tracing_s).to_string();
        py.import("json")?.call_method1("loads", (text,))
    }

    /// Write the modeled engine timeline as Chrome/Perfetto trace-event JSON to `path`.
    fn trace(&self, path: std::path::PathBuf) -> PyResult<()> {
        let text = self.run.runnable.trace(&self.run.outcome);
        std::fs::write(&path, text)
            .map_err(|e| PyRuntimeError::new_err(format!("cannot write {}: {e}", path.display())))
    }

    /// The modeled engine timeline as SVG.
    fn svg(&self) -> String {
        self.run.runnable.timeline_svg(&self.run.outcome)
    }

    /// The kernel as `penguin` text (its loops shown) or `bir` text.
    fn emit(&self, form: &str) -> PyResult<String> {
        self.run.emit(form).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The kernel's allocation table and summary, as `ntile nki` prints it.
    fn summary(&self) -> String {
        ntile::nki::summary(&self.run)
    }
}
