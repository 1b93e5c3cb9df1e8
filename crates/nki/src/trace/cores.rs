//! A trace of several physical cores, cut into one trace per core.
//!
//! The Python tracer runs a kernel launched on two cores (an `nl.nc(2)` axis in its SPMD grid,
//! or `kernel[2]` in the current API) one core after the other and marks where each core's
//! records begin ([`Trace::cores`]). Every core sees every tensor (HBM is shared, and each
//! core's on-chip tensors are its own), so each core's trace keeps the whole tensor table and
//! the kernel's outputs, and takes its slice of the records.

use super::{Record, Trace};
use crate::error::NkiError;

impl Trace {
    /// How many physical cores the kernel runs on (1 without [`Trace::cores`]).
    pub fn num_cores(&self) -> usize {
        self.cores.len().max(1)
    }

    /// One trace per physical core, in core order (the trace itself, without its core marks,
    /// for a one-core kernel). Core marks that do not start at 0, go backwards or point past
    /// the records are refused.
    pub fn split_cores(&self) -> Result<Vec<Trace>, NkiError> {
        let bad = |message: String| NkiError::Trace { path: "cores".into(), message };
        if self.cores.is_empty() {
            return Ok(vec![self.clone()]);
        }
        if self.cores[0] != 0 {
            return Err(bad(format!("core 0's records must begin at record 0, not {}", self.cores[0])));
        }
        let mut ends: Vec<usize> = self.cores[1..].to_vec();
        ends.push(self.ops.len());
        let mut out = Vec::with_capacity(self.cores.len());
        for (k, (&start, &end)) in self.cores.iter().zip(&ends).enumerate() {
            if end < start || end > self.ops.len() {
                return Err(bad(format!(
                    "core {k}'s records [{start}, {end}) are not a range of the trace's {} records",
                    self.ops.len()
                )));
            }
            let ops: Vec<Record> = self.ops[start..end].to_vec();
            out.push(Trace { ops, cores: Vec::new(), ..self.shallow() });
        }
        Ok(out)
    }

    /// The trace without its records and core marks.
    fn shallow(&self) -> Trace {
        Trace {
            format: self.format.clone(),
            version: self.version,
            kernel: self.kernel.clone(),
            api: self.api,
            target: self.target,
            files: self.files.clone(),
            tensors: self.tensors.clone(),
            ops: Vec::new(),
            outputs: self.outputs.clone(),
            constants: self.constants.clone(),
            cores: Vec::new(),
        }
    }
}
