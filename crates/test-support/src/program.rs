//! Building BIR programs by hand: HBM tensors, named semaphores and instructions.

use bir::{BirInst, Engine, HbmRole, HbmTensor, Op, Program, SemId, Wait};
use penguin::{DType, Target};

/// An instruction waiting for semaphore counts `(sem, value)` and signalling `signal`.
pub fn inst(op: Op, waits: &[(u32, u32)], signal: Option<u32>) -> BirInst {
    let waits = waits.iter().map(|&(s, v)| Wait { sem: SemId(s), value: u64::from(v) }).collect();
    BirInst { op, waits, signal: signal.map(SemId), origin: None }
}

/// A program builder with named semaphores.
pub struct Builder {
    /// The program built so far.
    pub program: Program,
}

impl Builder {
    /// An empty program named `test` for `target`.
    pub fn new(target: Target) -> Self {
        Builder { program: Program::new("test", target) }
    }

    /// Add an HBM tensor after the previous ones (64-byte aligned); returns its address.
    pub fn tensor(&mut self, name: &str, shape: &[u64], dtype: DType, role: HbmRole) -> u64 {
        let address = self.program.hbm_size.div_ceil(64) * 64;
        let t = HbmTensor { name: name.into(), shape: shape.to_vec(), dtype, address, role };
        self.program.hbm_size = address + t.num_bytes();
        self.program.hbm.push(t);
        address
    }

    /// Declare a semaphore.
    pub fn sem(&mut self, name: &str) -> SemId {
        self.program.semaphores.push(name.into());
        SemId(self.program.semaphores.len() as u32 - 1)
    }

    /// Append an instruction to an engine's stream; returns its index there.
    pub fn push(&mut self, engine: Engine, op: Op, waits: &[(SemId, u32)], signal: Option<SemId>) -> usize {
        let stream = &mut self.program.streams[engine.index()];
        stream.push(BirInst {
            op,
            waits: waits.iter().map(|&(sem, value)| Wait { sem, value: u64::from(value) }).collect(),
            signal,
            origin: None,
        });
        stream.len() - 1
    }
}
