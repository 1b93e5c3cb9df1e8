//! Helpers to build small BIR programs by hand.
#![allow(dead_code)]

pub mod gemm;

use bir::{BirInst, Engine, HbmRole, HbmTensor, HwAp, Op, Program, SemId, Wait};
use penguin::{DType, Dim, Memory, Target};

/// An on-chip pattern: `parts` partitions from `start` (step 1), `byte_offset` inside each,
/// the given free dims.
pub fn chip(memory: Memory, dtype: DType, start: u32, parts: u32, byte_offset: u64, dims: Vec<Dim>) -> HwAp {
    HwAp {
        memory,
        dtype,
        start_partition: start,
        num_partitions: parts,
        partition_stride: 1,
        byte_offset,
        dims: dims.into(),
    }
}

/// `parts` SBUF partitions from `start`, a contiguous run of `n` elements at `byte_offset`.
pub fn sbuf(dtype: DType, start: u32, parts: u32, byte_offset: u64, n: u32) -> HwAp {
    chip(Memory::Sbuf, dtype, start, parts, byte_offset, vec![Dim::new(1, n)])
}

/// `parts` PSUM partitions of `n` fp32 at `byte_offset`.
pub fn psum(parts: u32, byte_offset: u64, n: u32) -> HwAp {
    chip(Memory::Psum, DType::Fp32, 0, parts, byte_offset, vec![Dim::new(1, n)])
}

/// A `rows x cols` window of a row-major HBM matrix with `row_len` elements per row whose
/// first selected element is at byte `byte_offset`.
pub fn hbm(dtype: DType, byte_offset: u64, rows: u32, row_len: i64, cols: u32) -> HwAp {
    HwAp {
        memory: Memory::Hbm,
        dtype,
        start_partition: 0,
        num_partitions: rows,
        partition_stride: row_len,
        byte_offset,
        dims: vec![Dim::new(1, cols)].into(),
    }
}

/// A program builder with named semaphores.
pub struct Builder {
    pub program: Program,
}

impl Builder {
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

/// A deterministic pseudo-random value in [-2, 2).
pub fn value(seed: u64) -> f32 {
    let x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ 0x5851_F42D_4C95_7F2D;
    let x = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
    ((x >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
}
