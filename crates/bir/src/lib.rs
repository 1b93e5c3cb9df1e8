//! BIR: ntile's engine-level IR and the lowering into it from Penguin.
//!
//! A [`Program`] has one instruction stream per engine (PE, ACT, DVE, POOL, SP and 16 DMA
//! queues), semaphores for cross-engine order, and hardware access patterns ([`HwAp`]:
//! partition start/count, up to 4 `[stride, num]`, byte offset, dtype). [`lower`] reads any
//! producer's function through [`penguin::FunctionView`] and needs proof that it was verified
//! ([`penguin::Verified`]); on such input it never panics. [`verify_program`] checks the
//! engine-level rules listed in its module. Programs that loop ([`LoopedProgram`], in
//! [`looped`]) come from rolling a lowering ([`roll()`]) or from lowering a looped Penguin
//! function loop by loop ([`lower_looped`], [`lower_looped_native`]), and are checked by
//! [`verify_looped`]; [`text`] prints and parses both forms as `.bir`. A kernel for the two
//! physical cores of a logical NeuronCore is a [`Chip`]: one program per core, sharing HBM
//! ([`verify_chip`], [`text::print_chip`], [`text::parse_chip`]).
//!
//! ```
//! use penguin::{verify, whole_tile, ComputeEngine, DType, Function, InstData, Memory, MemsetData, Target, TensorData};
//!
//! let mut f = Function::new("fill");
//! let t = TensorData { name: "x".into(), shape: vec![128, 64], dtype: DType::Fp32, memory: Memory::Sbuf, address: None };
//! let id = f.add_tensor(t.clone()).unwrap();
//! f.push_inst(InstData::Memset(MemsetData { engine: ComputeEngine::Dve, dst: whole_tile(id, &t), value: 0.0 }), vec![]);
//! let program = bir::lower(verify(&f).unwrap(), Target::Trn2).unwrap();
//! bir::verify_program(&program).unwrap();
//! assert_eq!(program.stream(bir::Engine::Dve).len(), 1);
//! ```
#![deny(missing_docs)]

mod chip;
mod error;
pub mod looped;
mod lower;
mod program;
pub mod text;
mod verify;

pub use chip::{verify_chip, Chip, MAX_CORES};
pub use error::{BirError, VerifyError, TOO_MANY_STRIDES};
pub use looped::{roll, roll_owned, verify_looped, verify_looped_sharing, Item, Loop, LoopError, LoopedProgram};
pub use lower::{
    extract_offloaded_memcpy_shape_bases, lower, lower_cancellable, lower_looped, lower_looped_expanded,
    lower_looped_native, lower_looped_native_within, LowerLoopedError, MAX_LOWER_UNROLLED,
};
pub use program::{
    ApRole, BirInst, Dims, Engine, EngineClass, FromPartsError, HbmRole, HbmTensor, HwAp, InstRef, Op, OpPart, Program,
    SemId, Wait, MAX_SEMAPHORE_COUNT, NUM_ENGINES,
};
pub use verify::{partition_start_ok, verify_program, verify_program_sharing};
