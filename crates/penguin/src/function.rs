//! `Function`: tensors, the instruction arena, program order, dependency edges, and the
//! read-only [`FunctionView`] through which lowering reads any producer's functions.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::entity::{InstId, Memory, TensorId};
use crate::inst::{Dep, InstData};
use crate::srcloc::SourceLocs;

/// A named allocation.
///
/// On-chip tensors have shape `[partitions, free...]` and occupy partitions
/// `[0, partitions)`; `address` is their byte offset inside each partition (for PSUM, bank
/// `b` starts at `b * 2048`). HBM tensors are row-major and get their address at lowering.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorData {
    /// Unique name.
    pub name: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// Element type.
    pub dtype: DType,
    /// Where it lives.
    pub memory: Memory,
    /// Byte offset inside each partition (on chip), if allocated.
    pub address: Option<u64>,
}

/// The product of `sizes`, saturating at `u64::MAX`.
fn saturating_product<'a>(sizes: impl IntoIterator<Item = &'a u64>) -> u64 {
    sizes.into_iter().fold(1u64, |n, &d| n.saturating_mul(d))
}

impl TensorData {
    /// Total elements, saturating at `u64::MAX` (the verifier rejects tensors whose size in
    /// bytes does not fit an `i64`, so a verified function never saturates).
    pub fn num_elems(&self) -> u64 {
        saturating_product(&self.shape)
    }

    /// Partitions an on-chip tensor occupies.
    pub fn partitions(&self) -> u64 {
        self.shape.first().copied().unwrap_or(1)
    }

    /// Elements per partition of an on-chip tensor, saturating at `u64::MAX`.
    pub fn free_elems(&self) -> u64 {
        saturating_product(self.shape.iter().skip(1))
    }

    /// Bytes per partition of an on-chip tensor, saturating at `u64::MAX`.
    pub fn bytes_per_partition(&self) -> u64 {
        self.free_elems().saturating_mul(u64::from(self.dtype.size_bytes()))
    }

    /// Total bytes of an HBM tensor, saturating at `u64::MAX`.
    pub fn num_bytes(&self) -> u64 {
        self.num_elems().saturating_mul(u64::from(self.dtype.size_bytes()))
    }
}

/// Read-only access to a function, for consumers that must not depend on its producer.
///
/// Ids are dense from 0; queries are cheap and never panic: an id out of range gives `None`.
pub trait FunctionView {
    /// The kernel's name.
    fn kernel_name(&self) -> &str;
    /// Number of tensors (ids `t0 .. tN`).
    fn num_tensors(&self) -> usize;
    /// A tensor.
    fn tensor(&self, id: TensorId) -> Option<&TensorData>;
    /// Instructions in program order.
    fn layout(&self) -> &[InstId];
    /// Number of instructions in the arena.
    fn num_insts(&self) -> usize;
    /// An instruction.
    fn inst(&self, id: InstId) -> Option<&InstData>;
    /// Incoming dependency edges of an instruction.
    fn deps(&self, id: InstId) -> &[Dep];
    /// Kernel inputs (HBM tensors).
    fn inputs(&self) -> &[TensorId];
    /// Kernel outputs (HBM tensors).
    fn outputs(&self) -> &[TensorId];
    /// The source location of an instruction in its producer's source, if it has one.
    fn srcloc(&self, id: InstId) -> Option<&str> {
        let _ = id;
        None
    }
}

/// A Penguin function.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Function {
    /// The kernel name (an identifier).
    pub kernel_name: String,
    /// Stamped by `finalize_kernel`.
    pub debug_kernel_function_name: Option<String>,
    /// Tensors in insertion order; `TensorId(i)` is the i-th.
    pub tensors: IndexMap<String, TensorData>,
    /// The instruction arena; `InstId(i)` is the i-th.
    pub insts: Vec<InstData>,
    /// Program order.
    pub layout: Vec<InstId>,
    /// Incoming dependency edges, indexed by instruction.
    pub deps: Vec<Vec<Dep>>,
    /// Kernel inputs.
    pub inputs: Vec<TensorId>,
    /// Kernel outputs.
    pub outputs: Vec<TensorId>,
    /// The source location of each instruction that has one (a side table; absent from the
    /// JSON when empty).
    #[serde(default, skip_serializing_if = "SourceLocs::is_empty")]
    pub srclocs: SourceLocs,
}

impl Function {
    /// An empty function.
    pub fn new(kernel_name: impl Into<String>) -> Self {
        Function { kernel_name: kernel_name.into(), ..Function::default() }
    }

    /// The function without its instructions (no `insts`, `layout`, `deps` or `srclocs`):
    /// the header of a [`crate::LoopedFunction`], built without copying the instructions.
    pub fn without_insts(&self) -> Function {
        Function {
            kernel_name: self.kernel_name.clone(),
            debug_kernel_function_name: self.debug_kernel_function_name.clone(),
            tensors: self.tensors.clone(),
            inputs: self.inputs.clone(),
            outputs: self.outputs.clone(),
            ..Function::default()
        }
    }

    /// Add a tensor; `None` if the name is taken.
    pub fn add_tensor(&mut self, data: TensorData) -> Option<TensorId> {
        if self.tensors.contains_key(&data.name) {
            return None;
        }
        let id = TensorId::from_index(self.tensors.len())?;
        self.tensors.insert(data.name.clone(), data);
        Some(id)
    }

    /// The id of the tensor with this name.
    pub fn tensor_by_name(&self, name: &str) -> Option<TensorId> {
        self.tensors.get_index_of(name).and_then(TensorId::from_index)
    }

    /// Make room for `additional` more instructions (the arena, program order and the edge
    /// lists) at once, so that a producer that knows roughly how many it will append does not
    /// grow the vectors by doubling (each doubling copies the arena into fresh memory). Space
    /// reserved but never used is never touched. Only a hint: when the room cannot be had the
    /// vectors stay as they are and grow on demand.
    pub fn reserve_insts(&mut self, additional: usize) {
        // A failed reservation (too large) leaves a vector unchanged, which is fine for a hint.
        let _ = self.insts.try_reserve(additional);
        let _ = self.deps.try_reserve(additional);
        let _ = self.layout.try_reserve(additional);
    }

    /// Append an instruction at the end of program order with its incoming edges.
    pub fn push_inst(&mut self, inst: InstData, deps: Vec<Dep>) -> InstId {
        let id = InstId(self.insts.len() as u32);
        self.insts.push(inst);
        self.deps.push(deps);
        self.layout.push(id);
        id
    }
}

impl FunctionView for Function {
    fn kernel_name(&self) -> &str {
        &self.kernel_name
    }

    fn num_tensors(&self) -> usize {
        self.tensors.len()
    }

    fn tensor(&self, id: TensorId) -> Option<&TensorData> {
        self.tensors.get_index(id.index()).map(|(_, t)| t)
    }

    fn layout(&self) -> &[InstId] {
        &self.layout
    }

    fn num_insts(&self) -> usize {
        self.insts.len()
    }

    fn inst(&self, id: InstId) -> Option<&InstData> {
        self.insts.get(id.index())
    }

    fn deps(&self, id: InstId) -> &[Dep] {
        self.deps.get(id.index()).map_or(&[], Vec::as_slice)
    }

    fn inputs(&self) -> &[TensorId] {
        &self.inputs
    }

    fn outputs(&self) -> &[TensorId] {
        &self.outputs
    }

    fn srcloc(&self, id: InstId) -> Option<&str> {
        self.srclocs.get(id)
    }
}
