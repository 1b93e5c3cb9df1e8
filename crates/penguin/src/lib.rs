//! Penguin, ntile's base IR: the "generated layer" that the codegen layer builds on.
//!
//! It holds element types with exact conversions ([`DType`]), memories and tensors, the
//! seven tile types of the seed, access patterns with canonicalization, the instructions of
//! the tiling path ([`InstData`]) with their accumulation flags
//! ([`EngineAccumulationType`]), the [`Function`] that owns them, the [`IrBuilder`] trait
//! with its base implementation [`GeneratedBuilder`], and the
//! [`verify()`](crate::verify::verify) pass. Beside them: the `.pir` text format ([`text`],
//! [`parse`], [`print`](mod@print); its lexer is shared with BIR's), the loops both IRs share
//! ([`looped`]: `Item`/`Loop` over any stepped instruction, the roll pass, a Penguin
//! [`LoopedFunction`] and its verifier), and each target's geometry and hardware profile
//! ([`target`]), which the planner's estimate and the cycle model read.
//!
//! Invariants: ids are dense from 0 and print as `t3` / `i3`; instructions live in an arena
//! and program order is a separate list; a function that [`verify()`](crate::verify::verify)
//! accepts satisfies every rule listed in the [`verify`](mod@crate::verify) module, and
//! consumers ([`FunctionView`] readers such as the `bir` lowering) may rely on them.
//!
//! ```
//! use penguin::{verify, whole_tile, DType, Function, InstData, Memory, MemsetData, ComputeEngine, TensorData};
//!
//! let mut f = Function::new("fill");
//! let t = TensorData { name: "x".into(), shape: vec![128, 64], dtype: DType::Bf16, memory: Memory::Sbuf, address: Some(0) };
//! let id = f.add_tensor(t.clone()).unwrap();
//! f.push_inst(InstData::Memset(MemsetData { engine: ComputeEngine::Pool, dst: whole_tile(id, &t), value: 1.0 }), vec![]);
//! assert!(verify(&f).is_ok());
//! assert!(f.to_string().contains("memset engine=pool value=1"));
//! ```
#![deny(missing_docs)]

pub mod ap;
mod builder;
pub mod cancel;
pub mod deps;
pub mod dtype;
mod entity;
mod error;
mod function;
mod inst;
pub mod json_f64;
pub mod looped;
pub mod srcloc;
pub mod target;
pub mod text;
pub mod tile;
pub mod verify;

pub use ap::{AccessPattern, Dim, FreeDims, Region, Window};
pub use builder::{GeneratedBuilder, IrBuilder};
pub use cancel::Cancel;
pub use deps::DepTracker;
pub use dtype::{CastMode, DType};
pub use entity::{InstId, Memory, TensorId};
pub use error::{Entity, PenguinError, VerifierError, VerifierErrors};
pub use function::{Function, FunctionView, TensorData};
pub use inst::{
    parse_pe_attributes, pe_attributes, sparse_tag, sparse_tag_words, Access, ActFunc, ActivationData, AffineDim,
    AffinePattern, AffineSelectData, AluClass, AluOp, AttrError, BadPattern, BadShuffleMask, BnAggrData, BnStatsData,
    ComputeEngine, Dep, DepKind, DmaCopyData, DmaGatherData, DmaQueueHint, DmaScatterAddData, DmaScatterData,
    EngineAccumulationType, InstData, InstKind, IotaData, MatMultData, MatMultSparseData, MemsetData, OffloadedFmaData,
    OffloadedMemCastData, OffloadedMemCpyData, PerfMode, ScalarOperand, ShuffleMask, SparsityPattern,
    StreamShuffleData, TensorCopyData, TensorCopyPredicatedData, TensorPartitionReduceData, TensorReduceData,
    TensorScalarCumulativeData, TensorScalarData, TensorTensorData, TensorTensorScanData, TilePosition, TileSize,
    Top8Data, Top8Mode, TransposeData, UnknownPerfMode, UnknownSparsity, UnknownTop8Mode, ValidRange, BN_STATS_FMAX,
    MAX_PATTERN_DIMS, PARTITION_REDUCE_OPS, SHUFFLE_KEEP, SHUFFLE_QUADRANT, SPARSE_GROUP_KEPT, SPARSE_TAGS_PER_WORD,
    TOP8_SRC_ELEMS, TOP8_VALUES,
};
pub use looped::{verify_looped, LoopedFunction, PirInst};
pub use srcloc::{LocInterner, SourceLoc, SourceLocs};
pub use target::{HwProfile, Target, TargetInfo};
pub use text::lexer::ParseError;
pub use tile::{DataTile, IndirectMemrefTileND, InstTile, MemrefTile, MemrefTileND, NDTile, NeuronPSUMTensor, Tile};
pub use verify::{verify, whole_tile, Verified, MATMULT_RESULT_NOT_PSUM};

/// The `.pir` parser and the line scanner, at their former path (see [`text::parse`] and
/// [`text::lexer`]).
pub mod parse {
    pub use crate::deps::compute_deps;
    pub use crate::text::lexer::*;
    pub use crate::text::parse::*;
}

/// The `.pir` printer, at its former path (see [`text::print`]).
pub mod print {
    pub use crate::text::print::*;
}
