//! The Penguin verifier. It collects every error, each pointing at the entity it concerns.
//!
//! Rules, in the order they are checked:
//!
//! 1. **Kernel name**: an identifier (`[A-Za-z_][A-Za-z0-9_]*`).
//! 2. **Tensors**: every dimension is at least 1; the size in bytes fits an `i64` (below
//!    2^63, so that every element and byte offset inside a tensor does); on-chip tensors have
//!    at most 128 partitions; an allocated SBUF tensor ends within 256 KiB per partition (the
//!    largest target; lowering checks the target's own capacity); an allocated PSUM tensor
//!    ends within the 8 banks of 2 KiB.
//! 3. **Inputs and outputs** name existing HBM tensors.
//! 4. **Layout**: every instruction appears exactly once in program order, and every
//!    dependency edge comes from an instruction earlier in program order.
//! 5. **Operands**: the tensor exists and the operand's memory and dtype are the tensor's;
//!    at most 4 free dimensions, every `num` at least 1; the elements it enumerates (all
//!    partitions, repeats of a zero stride included) take fewer than 2^63 bytes.
//! 6. **Partition ranges** of on-chip operands lie within partitions `0..128` and within the
//!    tensor (a negative partition stride may not reach below partition 0); HBM operands
//!    have `start_partition` 0.
//! 7. **Bounds**: every element an operand touches lies inside its tensor. Extents are
//!    computed exactly (in 128-bit arithmetic), so strides, counts and offsets near the
//!    limits of their types are reported as out of bounds rather than wrapping around.
//! 8. **Legal memories per operand**: a matmul's (dense or sparse) stationary, moving and
//!    tag operands are in SBUF and its result is in PSUM (`Result buffer of matmult must be
//!    psum!`); DMA copies, tiled offloaded copies and casts move between HBM and SBUF; tensor
//!    copies, tensor-tensor ops and memsets stay on chip; tiled offloaded FMAs work on SBUF
//!    tiles and untiled offloaded FMAs and copies on HBM tensors; a transpose reads SBUF and
//!    writes PSUM; gathers and scatter-adds index an HBM table; activations, tensor-scalar
//!    ops, reductions and batch-norm statistics stay on chip; `affine_select` and `iota`
//!    work in SBUF. No GpSimd (pool) instruction touches PSUM, and a `tensor_tensor` reads at
//!    most one PSUM tile.
//! 9. **PSUM banks**: an access to PSUM stays inside one 2 KiB bank in every partition.
//! 10. **Matmul shapes**: stationary and moving share K partitions (K <= 128, 256 in
//!     `double_row`); the result has M = stationary free size <= 128 partitions and N = moving
//!     free size <= 512 fp32; the result is fp32; `double_row_gen3` is refused; double-row
//!     operands are `[P, 2, F]`; the PE tile (`tile_position`, `tile_size`) uses sizes 128,
//!     64 or 32 at multiples of the size and has at least K rows. A sparse
//!     matmul's pattern is supported; its compressed stationary has `K'` partitions, a
//!     multiple of 4 (whole hardware groups); the moving operand has the same `K'` partitions
//!     and `CR x N` elements each (`[K', CR, N]`, `N` the result's free size); its tags are
//!     `ceil(M / 4)` int16 words on each of the `K'` partitions.
//! 11. **Elementwise shapes**: copies, casts, tensor-tensor ops and FMAs have equal partition
//!     counts and elements per partition on every operand; memcpy does not convert; a
//!     transpose swaps the two and writes fp32 (or its 16-bit float source's dtype); gathers
//!     and scatter-adds move one table row per int32 index. An activation, tensor-scalar op
//!     or `affine_select` has its source's shape; its `scale`, `bias`, `operand0/1` columns
//!     and `reduce` are `[P, 1]` with the source's partitions; a reduction's source has a
//!     multiple of its destination's elements per partition; `iota`'s and `affine_select`'s
//!     pattern enumerates the destination's elements per partition; `bn_stats` reads at most
//!     512 elements and writes 6, `bn_aggr` reads triples and writes 2. The destinations of
//!     these kinds repeat no element (no zero stride).
//! 12. **Accumulation groups**, in program order per PSUM region: START opens a group on a
//!     region with no open group; ACCU and STOP continue the open group on exactly the same
//!     region (ACCU before START is an error); START and ACCU are never set together; reading
//!     a region whose group is open is an error; every group is stopped by the end.
//! 13. **Engines and operators** (NKI ISA): `tensor_tensor` runs on dve, or on pool for
//!     `power` and int32 add/subtract/multiply, never a unary operator; `tensor_scalar` runs
//!     on act only as multiply(+add) or add, on pool only as rsqrt, and with bitvec operators
//!     only on dve; its two operators are both bitvec or both arithmetic, and `operand1` /
//!     `reverse1` need `op1`; a reduction's operator is a reduction operator, `negate` only
//!     arithmetic; `affine_select` compares; bitvec operators take integer tiles of one dtype
//!     (whole-number immediates); scalar columns of arithmetic operators and activation
//!     scales are fp32.
//!
//! Target-dependent rules (an immediate activation bias needs trn2, as does a 16-bit PE
//! transpose) are the lowering's, which knows the target.
//!
//! This module checks rules 1-4; `operands.rs` rules 5-7 and 9, `memories.rs` rule 8,
//! `shapes.rs` rules 10-11 (`compute.rs` the compute-engine kinds' shapes and rule 13) and
//! `groups.rs` rule 12.

use crate::ap::AccessPattern;
use crate::dtype::DType;
use crate::entity::{InstId, Memory, TensorId};
use crate::error::{Entity, VerifierError, VerifierErrors};
use crate::function::{FunctionView, TensorData};
use crate::target::{NUM_PARTITIONS, PSUM_BANK_BYTES, PSUM_NUM_BANKS};
use crate::tile::InstTile;

mod compute;
mod groups;
mod memories;
mod operands;
mod shapes;

use groups::OpenGroup;
pub use memories::{POOL_PSUM, TWO_PSUM_INPUTS};

/// The message for a matmul whose result is not in PSUM (the seed's text).
pub const MATMULT_RESULT_NOT_PSUM: &str = "Result buffer of matmult must be psum!";

/// Largest SBUF partition of any target, in bytes.
const MAX_SBUF_BYTES: u64 = 256 * 1024;

/// Largest size of a tensor, or of the elements one operand enumerates, in bytes: every byte
/// offset below it fits an `i64`.
const MAX_BYTES: u64 = i64::MAX as u64;

/// Proof that a function passed the verifier: lowering takes this, never a raw function.
#[derive(Clone, Copy, Debug)]
pub struct Verified<'a, F: ?Sized>(&'a F);

impl<'a, F: FunctionView + ?Sized> Verified<'a, F> {
    /// The verified function.
    pub fn get(&self) -> &'a F {
        self.0
    }
}

/// Verify a function, returning proof of success or every error.
pub fn verify<F: FunctionView + ?Sized>(func: &F) -> Result<Verified<'_, F>, VerifierErrors> {
    let mut v = Verifier { func, errors: Vec::new() };
    v.run();
    if v.errors.is_empty() {
        Ok(Verified(func))
    } else {
        Err(VerifierErrors(v.errors))
    }
}

/// Whether `name` is a valid kernel identifier.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

struct Verifier<'a, F: ?Sized> {
    func: &'a F,
    errors: Vec<VerifierError>,
}

impl<F: FunctionView + ?Sized> Verifier<'_, F> {
    fn err(&mut self, entity: Entity, message: impl Into<String>) {
        self.errors.push(VerifierError { entity, message: message.into() });
    }

    fn run(&mut self) {
        if !is_identifier(self.func.kernel_name()) {
            let name = self.func.kernel_name().to_string();
            self.err(Entity::Function, format!("kernel name `{name}` is not an identifier"));
        }
        for i in 0..self.func.num_tensors() {
            let Some(id) = TensorId::from_index(i) else { break };
            if let Some(t) = self.func.tensor(id) {
                self.check_tensor(id, t);
            }
        }
        for (what, list) in [("input", self.func.inputs()), ("output", self.func.outputs())] {
            for &t in list {
                match self.func.tensor(t) {
                    None => self.err(Entity::Function, format!("{what} {t} does not exist")),
                    Some(td) if td.memory != Memory::Hbm => {
                        self.err(Entity::Tensor(t), format!("kernel {what} must be in hbm, not {}", td.memory));
                    }
                    Some(_) => {}
                }
            }
        }
        if !self.check_layout() {
            return;
        }
        let mut open: Vec<OpenGroup> = Vec::new();
        for &id in self.func.layout() {
            let Some(inst) = self.func.inst(id) else { continue };
            let operands_ok = self.check_operands(id, inst);
            self.check_memories(id, inst);
            if operands_ok {
                self.check_shapes(id, inst);
                self.check_engines(id, inst);
                self.check_groups(id, inst, &mut open);
            }
        }
        for g in open {
            self.err(Entity::Inst(g.opened_by), "accumulation group is never stopped (no STOP)");
        }
    }

    fn check_tensor(&mut self, id: TensorId, t: &TensorData) {
        let e = Entity::Tensor(id);
        if t.shape.is_empty() || t.shape.contains(&0) {
            self.err(e, format!("tensor `{}` has an empty shape {:?}", t.name, t.shape));
            return;
        }
        if t.num_bytes() > MAX_BYTES {
            self.err(
                e,
                format!(
                    "tensor `{}` of shape {:?} {} is too large (at most {MAX_BYTES} bytes)",
                    t.name, t.shape, t.dtype
                ),
            );
        }
        if !t.memory.is_on_chip() {
            return;
        }
        if t.partitions() > u64::from(NUM_PARTITIONS) {
            self.err(
                e,
                format!("on-chip tensor `{}` has {} partitions (at most {NUM_PARTITIONS})", t.name, t.partitions()),
            );
        }
        let Some(addr) = t.address else { return };
        let end = u128::from(addr) + u128::from(t.bytes_per_partition());
        let cap = match t.memory {
            Memory::Sbuf => MAX_SBUF_BYTES,
            Memory::Psum => u64::from(PSUM_NUM_BANKS * PSUM_BANK_BYTES),
            Memory::Hbm => u64::MAX,
        };
        if end > u128::from(cap) {
            self.err(
                e,
                format!(
                    "tensor `{}` ends at byte {end} of its partition, past the {cap} bytes of {}",
                    t.name, t.memory
                ),
            );
        }
    }

    fn check_layout(&mut self) -> bool {
        let n = self.func.num_insts();
        let mut position = vec![usize::MAX; n];
        let mut ok = true;
        for (pos, &id) in self.func.layout().iter().enumerate() {
            match position.get_mut(id.index()) {
                None => {
                    self.err(Entity::Function, format!("layout names {id}, which does not exist"));
                    ok = false;
                }
                Some(p) if *p != usize::MAX => {
                    self.err(Entity::Inst(id), "instruction appears twice in program order");
                    ok = false;
                }
                Some(p) => *p = pos,
            }
        }
        for (i, p) in position.iter().enumerate() {
            let id = InstId(i as u32);
            if *p == usize::MAX {
                self.err(Entity::Inst(id), "instruction is not in program order");
                ok = false;
                continue;
            }
            for dep in self.func.deps(id) {
                match position.get(dep.from.index()) {
                    Some(&q) if q < *p => {}
                    _ => {
                        self.err(
                            Entity::Inst(id),
                            format!("dependency on {} which is not earlier in program order", dep.from),
                        );
                    }
                }
            }
        }
        ok
    }

    /// Rule 8's check: `t` is in one of the `allowed` memories.
    fn need(&mut self, e: Entity, what: &str, t: &InstTile, allowed: &[Memory]) {
        if !allowed.contains(&t.memory) {
            let names: Vec<&str> = allowed.iter().map(|m| m.name()).collect();
            self.err(e, format!("{what} must be in {}, not {}", names.join(" or "), t.memory));
        }
    }

    /// `t` has the dtype `dtype`.
    fn need_dtype(&mut self, e: Entity, what: &str, t: &InstTile, dtype: DType) {
        if t.dtype != dtype {
            self.err(e, format!("{what} must be {dtype}, not {}", t.dtype));
        }
    }
}

/// A tile over a whole tensor, for tests and small builders (a dimension beyond `u32::MAX`
/// saturates, giving a tile over part of the tensor).
pub fn whole_tile(id: TensorId, t: &TensorData) -> InstTile {
    let num = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    let ap = if t.memory.is_on_chip() {
        AccessPattern::on_chip(0, num(t.partitions()), 0, num(t.free_elems()))
    } else {
        let rows = t.shape.first().copied().unwrap_or(1);
        let row_len = t.num_elems() / rows.max(1);
        AccessPattern::hbm_rows(row_len, 0, num(rows), 0, num(row_len))
    };
    InstTile { tensor: id, memory: t.memory, dtype: t.dtype, ap }
}
