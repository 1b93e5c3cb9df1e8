//! Shared test fixtures of the looped modules: DMA copies and memsets of 8 fp32 elements on
//! 4 partitions, and a program around one stream.

use penguin::{Dim, Memory, Target};

use crate::program::{test_ap, BirInst, Engine, Op, Program, SemId, Wait};

/// A DMA copy to SBUF bytes `dst` from partition `part` on, from HBM bytes `src` (rows 8
/// elements apart); it waits for s0 to reach `wait`, when given, and signals s1.
pub fn dma_copy(part: u32, dst: u64, src: u64, wait: Option<u64>) -> BirInst {
    BirInst {
        op: Op::DmaCopy {
            dst: test_ap(Memory::Sbuf, part, 4, 1, dst, vec![Dim::new(1, 8)]),
            src: test_ap(Memory::Hbm, 0, 4, 8, src, vec![Dim::new(1, 8)]),
            cast: penguin::CastMode::Rne,
        },
        waits: wait.map(|value| Wait { sem: SemId(0), value }).into_iter().collect(),
        signal: Some(SemId(1)),
        origin: None,
    }
}

/// [`dma_copy`] at SBUF bytes `off` from HBM bytes `1024 + off`.
pub fn copy(off: u64, wait: Option<u32>) -> BirInst {
    dma_copy(0, off, 1024 + off, wait.map(u64::from))
}

/// A memset of `value` into SBUF bytes `off`.
pub fn memset(off: u64, value: f64) -> BirInst {
    BirInst {
        op: Op::Memset { dst: test_ap(Memory::Sbuf, 0, 4, 1, off, vec![Dim::new(1, 8)]), value },
        waits: Vec::new(),
        signal: None,
        origin: None,
    }
}

/// A trn2 program with semaphores `a` and `b` and `stream` on `engine`.
pub fn program(engine: Engine, stream: Vec<BirInst>) -> Program {
    let mut p = Program::new("k", Target::Trn2);
    p.semaphores = vec!["a".into(), "b".into()];
    p.streams[engine.index()] = stream;
    p
}
