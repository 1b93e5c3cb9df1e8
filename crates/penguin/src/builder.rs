//! The `IrBuilder` trait and `GeneratedBuilder`, the base ("generated") layer.
//!
//! The codegen layer wraps a builder by composition; the builder only appends and verifies.

use crate::cancel::Cancel;
use crate::entity::{InstId, TensorId};
use crate::error::{PenguinError, VerifierErrors};
use crate::function::{Function, TensorData};
use crate::inst::{Dep, InstData};
use crate::srcloc::SourceLoc;
use crate::verify::verify;

/// What a layer that builds Penguin functions provides.
pub trait IrBuilder {
    /// The function built so far.
    fn function(&self) -> &Function;
    /// Add a tensor; fails when the name is taken.
    fn add_tensor(&mut self, data: TensorData) -> Result<TensorId, PenguinError>;
    /// Append an instruction with its incoming dependency edges.
    fn insert(&mut self, inst: InstData, deps: Vec<Dep>) -> InstId;
    /// A hint that about `additional` more instructions will be inserted (see
    /// [`Function::reserve_insts`]); builders may ignore it, and the default does.
    fn reserve_insts(&mut self, additional: usize) {
        let _ = additional;
    }
    /// Mark kernel inputs.
    fn set_inputs(&mut self, inputs: Vec<TensorId>);
    /// Mark kernel outputs.
    fn set_outputs(&mut self, outputs: Vec<TensorId>);
    /// Set the kernel name.
    fn set_kernel_name(&mut self, name: String);
    /// Stamp the debug kernel function name.
    fn set_debug_kernel_function_name(&mut self, name: String);
    /// Give an inserted instruction a source location ([`crate::srcloc`]); builders that
    /// keep none may ignore it, and the default does.
    fn set_srcloc(&mut self, inst: InstId, loc: SourceLoc) {
        let _ = (inst, loc);
    }
    /// Whether the caller asked the build to stop ([`crate::Cancel`]): the layers above poll
    /// it as they emit and give up with their `Interrupted` error. The default never stops.
    fn cancelled(&self) -> bool {
        false
    }
    /// Verify and return the function.
    fn finalize(self) -> Result<Function, VerifierErrors>;
    /// The function built so far, unverified, taken out of the builder (which then holds an
    /// empty one): for a caller that reshapes it and checks the result otherwise (the
    /// planner's loops). The default copies it; a builder that owns its function moves it.
    fn take_function(&mut self) -> Function {
        self.function().clone()
    }
}

/// The base builder: appends to a [`Function`] and runs the verifier on finalize.
#[derive(Clone, Debug, Default)]
pub struct GeneratedBuilder {
    func: Function,
    cancel: Option<Cancel>,
}

impl GeneratedBuilder {
    /// A builder for an empty kernel with this name.
    pub fn new(kernel_name: impl Into<String>) -> Self {
        GeneratedBuilder { func: Function::new(kernel_name), cancel: None }
    }

    /// The same builder, reporting `cancel` through [`IrBuilder::cancelled`].
    pub fn with_cancel(self, cancel: Option<Cancel>) -> Self {
        GeneratedBuilder { cancel, ..self }
    }
}

impl IrBuilder for GeneratedBuilder {
    fn function(&self) -> &Function {
        &self.func
    }

    fn add_tensor(&mut self, data: TensorData) -> Result<TensorId, PenguinError> {
        let name = data.name.clone();
        self.func.add_tensor(data).ok_or(PenguinError::DuplicateTensor(name))
    }

    fn insert(&mut self, inst: InstData, deps: Vec<Dep>) -> InstId {
        self.func.push_inst(inst, deps)
    }

    fn reserve_insts(&mut self, additional: usize) {
        self.func.reserve_insts(additional);
    }

    fn set_inputs(&mut self, inputs: Vec<TensorId>) {
        self.func.inputs = inputs;
    }

    fn set_outputs(&mut self, outputs: Vec<TensorId>) {
        self.func.outputs = outputs;
    }

    fn set_kernel_name(&mut self, name: String) {
        self.func.kernel_name = name;
    }

    fn set_debug_kernel_function_name(&mut self, name: String) {
        self.func.debug_kernel_function_name = Some(name);
    }

    fn set_srcloc(&mut self, inst: InstId, loc: SourceLoc) {
        self.func.srclocs.set(inst, Some(loc));
    }

    fn cancelled(&self) -> bool {
        crate::cancel::stopped(self.cancel.as_ref())
    }

    fn finalize(self) -> Result<Function, VerifierErrors> {
        verify(&self.func)?;
        Ok(self.func)
    }

    fn take_function(&mut self) -> Function {
        std::mem::take(&mut self.func)
    }
}
