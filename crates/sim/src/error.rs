//! The simulator's errors and the instruction positions they name.

use std::fmt;

use bir::SemId;
use penguin::Memory;

// The position of an instruction, shared with bir's verifier and text format.
pub use bir::InstRef;

/// Where one stream of a deadlocked program stopped: the first wait that never held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stuck {
    /// The instruction that cannot start.
    pub at: InstRef,
    /// The semaphore it waits on.
    pub sem: SemId,
    /// The count it needs.
    pub needed: u64,
    /// The count the semaphore reached.
    pub current: u64,
    /// The physical core whose program holds the instruction (0 for a one-core program).
    pub core: u32,
}

impl fmt::Display for Stuck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.core > 0 {
            write!(f, "core{}.", self.core)?;
        }
        write!(f, "{} waits for {} >= {} (reached {})", self.at, self.sem, self.needed, self.current)
    }
}

fn list_stuck(stuck: &[Stuck]) -> String {
    stuck.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// Everything that stops the simulator.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The caller's [`penguin::Cancel`] stopped the run or the model.
    #[error("interrupted")]
    Interrupted,
    /// User error: no HBM tensor of the program has this name.
    #[error("no HBM tensor named `{name}` in the program")]
    UnknownTensor {
        /// The name asked for.
        name: String,
    },
    /// User error: the bytes or values given for a tensor do not match its size.
    #[error("tensor `{name}` holds {expected} {unit} but {got} were given")]
    TensorSize {
        /// The tensor.
        name: String,
        /// Its size.
        expected: u64,
        /// What was given.
        got: u64,
        /// `bytes` or `elements`.
        unit: &'static str,
    },
    /// User error: an HBM tensor of the program lies (partly) outside the program's HBM.
    #[error("HBM tensor `{name}` at byte {address} does not fit the {hbm_size} bytes of HBM")]
    TensorOutsideHbm {
        /// The tensor.
        name: String,
        /// Its address.
        address: u64,
        /// The program's HBM size.
        hbm_size: u64,
    },
    /// Limit: the program's HBM image is too large to allocate.
    #[error("the program needs {bytes} bytes of HBM, more than the simulator can allocate")]
    HbmTooLarge {
        /// The program's `hbm_size`.
        bytes: u64,
    },
    /// User error: the program has more streams than there are engines.
    #[error("the program has {streams} streams but there are only {max} engines")]
    TooManyStreams {
        /// Streams in the program.
        streams: usize,
        /// Engines.
        max: usize,
    },
    /// User error: an instruction runs on an engine that cannot execute it.
    #[error("{at}: {op} cannot run on {engine}", engine = at.engine)]
    WrongEngine {
        /// The instruction.
        at: InstRef,
        /// Its opcode name.
        op: &'static str,
    },
    /// User error: an instruction waits on or signals a semaphore the program does not declare.
    #[error("{at}: semaphore {sem} does not exist (the program declares {count})")]
    UnknownSemaphore {
        /// The instruction.
        at: InstRef,
        /// The semaphore.
        sem: SemId,
        /// Declared semaphores.
        count: usize,
    },
    /// User error: an access pattern reaches outside its memory.
    #[error("{at}: access pattern {ap} is outside {memory}: {detail}")]
    OutOfRange {
        /// The instruction.
        at: InstRef,
        /// The memory.
        memory: Memory,
        /// The access pattern as printed by BIR.
        ap: String,
        /// What exactly is outside.
        detail: String,
    },
    /// User error: source and destination of a copy have different element counts.
    #[error("{at}: copy of {src} elements into {dst} elements")]
    CopyShape {
        /// The instruction.
        at: InstRef,
        /// Destination elements.
        dst: u64,
        /// Source elements.
        src: u64,
    },
    /// User error: an operand is in a memory or of a type its instruction cannot use.
    #[error("{at}: {detail}")]
    BadOperand {
        /// The instruction.
        at: InstRef,
        /// What is wrong.
        detail: String,
    },
    /// User error: a MultiplyMoving runs with no stationary operand loaded.
    #[error("{at}: multiply_moving without a load_stationary before it")]
    NoStationary {
        /// The instruction.
        at: InstRef,
    },
    /// User error or limit: matmul operand shapes disagree or exceed the PE array.
    #[error("{at}: {detail}")]
    MatmulShape {
        /// The instruction.
        at: InstRef,
        /// What is wrong.
        detail: String,
    },
    /// User error: a gather or scatter-add index does not name a row of its table.
    #[error("{at}: index entry {position} is {index}, outside the {rows} rows of the table")]
    IndexOutOfRange {
        /// The instruction.
        at: InstRef,
        /// Which index entry (enumeration order).
        position: u64,
        /// Its value.
        index: i64,
        /// Rows of the table.
        rows: u32,
    },
    /// Unsupported: a feature the simulator does not model.
    #[error("{at}: {detail}")]
    Unsupported {
        /// The instruction.
        at: InstRef,
        /// What is unsupported.
        detail: String,
    },
    /// User error: a matmul accumulates (ACCU, or STOP without START) into a PSUM word
    /// whose accumulation group is not open.
    #[error(
        "{at}: accumulation without START: psum partition {partition} byte {byte} has no open group (flags {flags})"
    )]
    AccumulateWithoutStart {
        /// The instruction.
        at: InstRef,
        /// The PSUM partition.
        partition: u32,
        /// Byte offset of the word inside the partition.
        byte: u32,
        /// The matmul's flags.
        flags: String,
    },
    /// User error: an instruction reads a PSUM word whose accumulation group has not been
    /// stopped.
    #[error("{at}: reads psum partition {partition} byte {byte} while its accumulation group is open (no STOP yet)")]
    ReadOpenGroup {
        /// The instruction.
        at: InstRef,
        /// The PSUM partition.
        partition: u32,
        /// Byte offset inside the partition.
        byte: u32,
    },
    /// User error: no stream can make progress but some have not finished.
    #[error("deadlock: {}", list_stuck(.stuck))]
    Deadlock {
        /// Every unfinished stream with the wait it is blocked on.
        stuck: Vec<Stuck>,
    },
    /// Limit: the looped model replayed its limit of instructions one by one without a
    /// repeating period to jump over (see `LoopedOptions::max_replayed`).
    #[error(
        "the looped cycle model replayed {replayed} of the {unrolled} instructions the program unrolls to \
         without finding a repeating period to jump over, and stops there"
    )]
    NoSteadyState {
        /// Instructions replayed one by one.
        replayed: u64,
        /// The unrolled length of the program.
        unrolled: u64,
    },
    /// Bug: an internal invariant of the simulator failed.
    #[error("internal simulator error: {0}")]
    Internal(String),
}
