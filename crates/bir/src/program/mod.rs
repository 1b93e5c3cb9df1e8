//! BIR programs: one instruction stream per engine, semaphores and the HBM layout.
//!
//! The parts live in their own modules: [`engine`] (engines, positions, semaphores), [`ap`]
//! (hardware access patterns) and [`op`] (the table of operation kinds).

use serde::{Deserialize, Serialize};

use penguin::{DType, InstId, Target};

mod ap;
mod engine;
mod op;
mod op_table;

#[cfg(test)]
pub(crate) use ap::test_ap;
pub use ap::HwAp;
pub use engine::{Engine, EngineClass, InstRef, SemId, Wait, MAX_SEMAPHORE_COUNT, NUM_ENGINES};
pub use op::Op;
pub use op_table::{ApRole, FromPartsError, OpPart};
/// The free dimensions of a hardware access pattern: Penguin's, one kept inline.
pub use penguin::FreeDims as Dims;

/// One instruction of a stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BirInst {
    /// What it does.
    pub op: Op,
    /// Semaphores to wait on before starting.
    pub waits: Vec<Wait>,
    /// Semaphore to increment when done.
    pub signal: Option<SemId>,
    /// The Penguin instruction it came from.
    pub origin: Option<InstId>,
}

/// Role of an HBM tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HbmRole {
    /// Provided by the caller.
    Input,
    /// Returned to the caller.
    Output,
    /// Scratch.
    Internal,
}

/// An HBM tensor with its address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HbmTensor {
    /// Name.
    pub name: String,
    /// Shape (row-major).
    pub shape: Vec<u64>,
    /// Element type.
    pub dtype: DType,
    /// Byte address.
    pub address: u64,
    /// Role.
    pub role: HbmRole,
}

impl HbmTensor {
    /// Size in bytes, saturating at `u64::MAX`.
    pub fn num_bytes(&self) -> u64 {
        self.shape.iter().fold(u64::from(self.dtype.size_bytes()), |n, &d| n.saturating_mul(d))
    }
}

/// A BIR program: one stream per engine plus semaphores and HBM layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Program {
    /// Kernel name.
    pub kernel_name: String,
    /// Target.
    pub target: Target,
    /// HBM tensors.
    pub hbm: Vec<HbmTensor>,
    /// Total HBM bytes.
    pub hbm_size: u64,
    /// Semaphore names, indexed by `SemId`.
    pub semaphores: Vec<String>,
    /// Streams, indexed by `Engine::index`.
    pub streams: Vec<Vec<BirInst>>,
    /// Highest SBUF byte used in any partition.
    pub sbuf_peak_bytes: u64,
    /// The source location of each Penguin instruction that has one, by the
    /// [`BirInst::origin`] of the instructions it lowered to (copied from the function by
    /// lowering; absent from the JSON when empty).
    #[serde(default, skip_serializing_if = "penguin::SourceLocs::is_empty")]
    pub srclocs: penguin::SourceLocs,
}

impl Program {
    /// An empty program.
    pub fn new(kernel_name: impl Into<String>, target: Target) -> Self {
        Program {
            kernel_name: kernel_name.into(),
            target,
            hbm: Vec::new(),
            hbm_size: 0,
            semaphores: Vec::new(),
            streams: vec![Vec::new(); NUM_ENGINES],
            sbuf_peak_bytes: 0,
            srclocs: penguin::SourceLocs::new(),
        }
    }

    /// The source location of an instruction: that of the Penguin instruction it came from.
    pub fn srcloc(&self, inst: &BirInst) -> Option<&str> {
        self.srclocs.get(inst.origin?)
    }

    /// The stream of an engine.
    pub fn stream(&self, e: Engine) -> &[BirInst] {
        self.streams.get(e.index()).map_or(&[], Vec::as_slice)
    }

    /// Total instruction count.
    pub fn num_insts(&self) -> usize {
        self.streams.iter().map(Vec::len).sum()
    }

    /// Bytes DMA instructions move to or from HBM (each element counted at its HBM dtype),
    /// saturating at `u64::MAX`.
    pub fn hbm_traffic_bytes(&self) -> u64 {
        self.streams.iter().flatten().map(|i| i.op.hbm_bytes()).fold(0, u64::saturating_add)
    }

    /// The HBM tensor with this name.
    pub fn hbm_tensor(&self, name: &str) -> Option<&HbmTensor> {
        self.hbm.iter().find(|t| t.name == name)
    }
}

#[cfg(test)]
mod tests {
    use penguin::{Dim, Memory};

    use super::*;

    use super::test_ap as ap;

    #[test]
    fn byte_counts_saturate() {
        let t = HbmTensor {
            name: "t".into(),
            shape: vec![u64::MAX, 3],
            dtype: DType::Fp32,
            address: 0,
            role: HbmRole::Input,
        };
        assert_eq!(t.num_bytes(), u64::MAX);
        let big = ap(Memory::Hbm, 0, u32::MAX, 0, 0, vec![Dim::new(0, u32::MAX); 4]);
        let fma = Op::DmaFma { dst: big.clone(), src0: big.clone(), src1: big.clone() };
        assert_eq!(fma.hbm_bytes(), u64::MAX);
        let gather = Op::DmaGather { dst: big.clone(), table: big.clone(), index: big, skip: false };
        assert_eq!(gather.hbm_bytes(), u64::MAX);
    }
}
