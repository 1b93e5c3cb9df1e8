//! Engines, the positions of instructions in their streams, and semaphores.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Number of engine streams: PE, ACT, DVE, POOL, SP and 16 DMA queues.
pub const NUM_ENGINES: usize = 5 + penguin::target::NUM_DMA_QUEUES as usize;

/// An engine with its own instruction stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Engine {
    /// TensorE, the 128x128 PE array.
    Pe,
    /// ScalarE (activation).
    Act,
    /// VectorE.
    Dve,
    /// GpSimd.
    Pool,
    /// The sync engine (issues nothing in generated programs; kept for hand-written ones).
    Sp,
    /// DMA queue 0..16.
    Dma(u8),
}

impl Engine {
    /// Every engine, in stream order.
    pub fn all() -> impl Iterator<Item = Engine> {
        [Engine::Pe, Engine::Act, Engine::Dve, Engine::Pool, Engine::Sp]
            .into_iter()
            .chain((0..penguin::target::NUM_DMA_QUEUES as u8).map(Engine::Dma))
    }

    /// Dense index: PE 0, ACT 1, DVE 2, POOL 3, SP 4, DMA q at 5 + q.
    pub fn index(self) -> usize {
        match self {
            Engine::Pe => 0,
            Engine::Act => 1,
            Engine::Dve => 2,
            Engine::Pool => 3,
            Engine::Sp => 4,
            Engine::Dma(q) => 5 + usize::from(q),
        }
    }

    /// The engine with a dense index.
    pub fn from_index(i: usize) -> Option<Engine> {
        Engine::all().nth(i)
    }

    /// Whether this is a compute engine (subject to the partition start rule).
    pub fn is_compute(self) -> bool {
        matches!(self, Engine::Pe | Engine::Act | Engine::Dve | Engine::Pool)
    }

    /// The most free dimensions one access pattern may have on this engine.
    pub fn max_free_dims(self) -> usize {
        match self {
            Engine::Pe | Engine::Act | Engine::Dve | Engine::Pool | Engine::Sp => 3,
            Engine::Dma(_) => 4,
        }
    }

    /// The text name (`pe`, `dma3`).
    pub fn name(self) -> String {
        match self {
            Engine::Pe => "pe".into(),
            Engine::Act => "act".into(),
            Engine::Dve => "dve".into(),
            Engine::Pool => "pool".into(),
            Engine::Sp => "sp".into(),
            Engine::Dma(q) => format!("dma{q}"),
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The position of an instruction: an engine's stream and an index into it; prints as
/// `pe[3]`. Every error about an instruction (verifier, simulator) carries one, and the
/// `.bir` source map is keyed by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct InstRef {
    /// The engine whose stream holds the instruction.
    pub engine: Engine,
    /// Index in that stream.
    pub index: usize,
}

impl fmt::Display for InstRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.engine, self.index)
    }
}

/// The engines an op may run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineClass {
    /// The PE array.
    Pe,
    /// A DMA queue.
    Dma,
    /// ACT, DVE or POOL.
    Compute,
    /// ACT, DVE, POOL or SP.
    ComputeOrSp,
    /// ScalarE only.
    Act,
    /// VectorE only.
    Dve,
    /// GpSimd only.
    Pool,
    /// VectorE or GpSimd (two-input elementwise ops: ScalarE reads one input tensor).
    VectorOrPool,
}

impl EngineClass {
    /// Whether `e` belongs to the class.
    pub fn contains(self, e: Engine) -> bool {
        match self {
            EngineClass::Pe => e == Engine::Pe,
            EngineClass::Dma => matches!(e, Engine::Dma(_)),
            EngineClass::Compute => matches!(e, Engine::Act | Engine::Dve | Engine::Pool),
            EngineClass::ComputeOrSp => matches!(e, Engine::Act | Engine::Dve | Engine::Pool | Engine::Sp),
            EngineClass::Act => e == Engine::Act,
            EngineClass::Dve => e == Engine::Dve,
            EngineClass::Pool => e == Engine::Pool,
            EngineClass::VectorOrPool => matches!(e, Engine::Dve | Engine::Pool),
        }
    }
}

/// A semaphore; prints as `s3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SemId(pub u32);

impl fmt::Display for SemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}", self.0)
    }
}

/// The most signals a semaphore counts: the largest wait value a loop can advance to.
pub const MAX_SEMAPHORE_COUNT: u64 = i64::MAX as u64;

/// Wait until a semaphore has been signalled at least `value` times.
///
/// A semaphore counts every signal over the whole kernel and never resets, as a timeline
/// semaphore does, so its count is 64 bits wide: a 32-bit count would wrap within one kernel
/// (a 1048576^3 GEMM signals one DMA queue's semaphore about 2.3e10 times), while 2^64 signals
/// at one per nanosecond take more than 500 years.
///
/// A looped program advances wait values in an `i64` (see [`crate::looped`]), so the most
/// signals a semaphore counts is [`MAX_SEMAPHORE_COUNT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Wait {
    /// The semaphore.
    pub sem: SemId,
    /// The count to reach.
    pub value: u64,
}
