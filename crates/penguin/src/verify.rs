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
//!    writes PSUM; gathers and scatter-adds index an HBM table.
//! 9. **PSUM banks**: an access to PSUM stays inside one 2 KiB bank in every partition.
//! 10. **Matmul shapes**: stationary and moving share K partitions (K <= 128, 256 in
//!     `double_row`); the result has M = stationary free size <= 128 partitions and N = moving
//!     free size <= 512 fp32; the result is fp32; `double_row_gen3` is refused; double-row
//!     operands are `[P, 2, F]`; the PE tile (`tile_position`, `tile_size`) uses sizes 128,
//!     64 or 32 at multiples of the size and has at least K rows. A sparse
//!     matmul's pattern is supported, its int16 tags have the stationary operand's shape, and
//!     it keeps N of every M of the moving operand's K rows.
//! 11. **Elementwise shapes**: copies, casts, tensor-tensor ops and FMAs have equal partition
//!     counts and elements per partition on every operand; memcpy does not convert; a
//!     transpose swaps the two; gathers and scatter-adds move one table row per int32 index.
//! 12. **Accumulation groups**, in program order per PSUM region: START opens a group on a
//!     region with no open group; ACCU and STOP continue the open group on exactly the same
//!     region (ACCU before START is an error); START and ACCU are never set together; reading
//!     a region whose group is open is an error; every group is stopped by the end.

use crate::ap::{AccessPattern, Region, MAX_FREE_DIMS};
use crate::dtype::DType;
use crate::entity::{InstId, Memory, TensorId};
use crate::error::{Entity, VerifierError, VerifierErrors};
use crate::function::{FunctionView, TensorData};
use crate::inst::{Access, EngineAccumulationType as Acc, InstData, PerfMode, TilePosition, TileSize};
use crate::target::{MAX_MOVING_FREE, MAX_STATIONARY_FREE, NUM_PARTITIONS, PSUM_BANK_BYTES, PSUM_NUM_BANKS};
use crate::tile::InstTile;

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

struct OpenGroup {
    tensor: TensorId,
    region: Region,
    opened_by: InstId,
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

    /// Rules 5-7 and 9 for every operand; false if any operand is unusable.
    fn check_operands(&mut self, id: InstId, inst: &InstData) -> bool {
        let mut ok = true;
        for (tile, _) in inst.operands() {
            ok &= self.check_tile(id, tile);
        }
        ok
    }

    fn check_tile(&mut self, id: InstId, tile: &InstTile) -> bool {
        let e = Entity::Inst(id);
        let Some(t) = self.func.tensor(tile.tensor) else {
            self.err(e, format!("operand tensor {} does not exist", tile.tensor));
            return false;
        };
        let mut ok = true;
        if t.memory != tile.memory || t.dtype != tile.dtype {
            self.err(
                e,
                format!(
                    "operand {} is declared {} {} but the tensor is {} {}",
                    tile.tensor, tile.memory, tile.dtype, t.memory, t.dtype
                ),
            );
            ok = false;
        }
        let ap = &tile.ap;
        if ap.free.len() > MAX_FREE_DIMS {
            self.err(
                e,
                format!("operand {} has {} free dimensions (at most {MAX_FREE_DIMS})", tile.tensor, ap.free.len()),
            );
            ok = false;
        }
        if ap.partitions.num == 0 || ap.free.iter().any(|d| d.num == 0) {
            self.err(e, format!("operand {} has an empty dimension", tile.tensor));
            return false;
        }
        if ap.num_elems().saturating_mul(u64::from(tile.dtype.size_bytes())) > MAX_BYTES {
            self.err(
                e,
                format!(
                    "operand {} enumerates too many elements ({:?} {}; at most {MAX_BYTES} bytes)",
                    tile.tensor,
                    ap.shape(),
                    tile.dtype
                ),
            );
            ok = false;
        }
        if t.memory.is_on_chip() {
            ok &= self.check_on_chip_bounds(e, tile, t);
        } else {
            if ap.start_partition != 0 {
                self.err(e, format!("hbm operand {} must have start partition 0", tile.tensor));
                ok = false;
            }
            let [_, _, lo, end] = ap.region_wide(false);
            if lo < 0 || end > i128::from(t.num_elems()) {
                self.err(
                    e,
                    format!(
                        "operand {} reaches elements {lo}..={} outside `{}` ({} elements)",
                        tile.tensor,
                        end - 1,
                        t.name,
                        t.num_elems()
                    ),
                );
                ok = false;
            }
        }
        ok
    }

    fn check_on_chip_bounds(&mut self, e: Entity, tile: &InstTile, t: &TensorData) -> bool {
        let mut ok = true;
        let [p0, p1, lo, hi] = tile.ap.region_wide(true);
        if p0 < 0 {
            self.err(e, format!("operand {} uses partitions {p0}..{p1}, below partition 0", tile.tensor));
            ok = false;
        } else if p1 > i128::from(NUM_PARTITIONS) {
            self.err(
                e,
                format!("operand {} uses partitions {p0}..{p1} beyond the {NUM_PARTITIONS} partitions", tile.tensor),
            );
            ok = false;
        } else if p1 > i128::from(t.partitions()) {
            self.err(
                e,
                format!("operand {} uses partitions {p0}..{p1} but `{}` has {}", tile.tensor, t.name, t.partitions()),
            );
            ok = false;
        }
        if lo < 0 || hi > i128::from(t.free_elems()) {
            self.err(
                e,
                format!(
                    "operand {} reaches elements {lo}..{hi} of a partition outside `{}` ({} per partition)",
                    tile.tensor,
                    t.name,
                    t.free_elems()
                ),
            );
            ok = false;
        }
        if ok && t.memory == Memory::Psum {
            // In bounds, so `lo < hi` and both are small; the address is checked per tensor.
            let base = i128::from(t.address.unwrap_or(0));
            let size = i128::from(t.dtype.size_bytes());
            let first = base + lo * size;
            let last = base + hi * size - 1;
            let bank = i128::from(PSUM_BANK_BYTES);
            if first / bank != last / bank {
                self.err(
                    e,
                    format!("psum access {} spans bytes {first}..={last}, crossing a 2 KiB bank boundary", tile.tensor),
                );
                ok = false;
            }
        }
        ok
    }

    fn need(&mut self, e: Entity, what: &str, t: &InstTile, allowed: &[Memory]) {
        if !allowed.contains(&t.memory) {
            let names: Vec<&str> = allowed.iter().map(|m| m.name()).collect();
            self.err(e, format!("{what} must be in {}, not {}", names.join(" or "), t.memory));
        }
    }

    fn need_dtype(&mut self, e: Entity, what: &str, t: &InstTile, dtype: DType) {
        if t.dtype != dtype {
            self.err(e, format!("{what} must be {dtype}, not {}", t.dtype));
        }
    }

    fn check_memories(&mut self, id: InstId, inst: &InstData) {
        use Memory::{Hbm, Psum, Sbuf};
        let e = Entity::Inst(id);
        let on_chip = [Sbuf, Psum];
        match inst {
            InstData::MatMult(m) => {
                if m.dst.memory != Psum {
                    self.err(e, MATMULT_RESULT_NOT_PSUM);
                }
                self.need(e, "matmult stationary operand", &m.stationary, &[Sbuf]);
                self.need(e, "matmult moving operand", &m.moving, &[Sbuf]);
            }
            InstData::MatMultSparse(m) => {
                if m.dst.memory != Psum {
                    self.err(e, MATMULT_RESULT_NOT_PSUM);
                }
                self.need(e, "matmult_sparse stationary operand", &m.stationary, &[Sbuf]);
                self.need(e, "matmult_sparse moving operand", &m.moving, &[Sbuf]);
                self.need(e, "matmult_sparse tags", &m.tags, &[Sbuf]);
            }
            InstData::DmaCopy(d) => {
                self.need(e, "dma_copy destination", &d.dst, &[Hbm, Sbuf]);
                self.need(e, "dma_copy source", &d.src, &[Hbm, Sbuf]);
            }
            InstData::TensorCopy(c) => {
                self.need(e, "tensor_copy destination", &c.dst, &on_chip);
                self.need(e, "tensor_copy source", &c.src, &on_chip);
            }
            InstData::Memset(m) => self.need(e, "memset destination", &m.dst, &on_chip),
            InstData::TensorTensor(t) => {
                self.need(e, "tensor_tensor destination", &t.dst, &on_chip);
                self.need(e, "tensor_tensor lhs", &t.lhs, &on_chip);
                self.need(e, "tensor_tensor rhs", &t.rhs, &on_chip);
            }
            InstData::TiledOffloadedFma(f) => {
                for (what, t) in [("destination", &f.dst), ("src0", &f.src0), ("src1", &f.src1)] {
                    self.need(e, &format!("tiled_offloaded_fma {what}"), t, &[Sbuf]);
                }
            }
            InstData::OffloadedFma(f) => {
                for (what, t) in [("destination", &f.dst), ("src0", &f.src0), ("src1", &f.src1)] {
                    self.need(e, &format!("offloaded_fma {what}"), t, &[Hbm]);
                }
            }
            InstData::TiledOffloadedMemCpy(c) => {
                self.need(e, "tiled_offloaded_memcpy destination", &c.dst, &[Hbm, Sbuf]);
                self.need(e, "tiled_offloaded_memcpy source", &c.src, &[Hbm, Sbuf]);
            }
            InstData::OffloadedMemCpy(c) => {
                self.need(e, "offloaded_memcpy destination", &c.dst, &[Hbm]);
                self.need(e, "offloaded_memcpy source", &c.src, &[Hbm]);
            }
            InstData::OffloadedMemCast(c) => {
                self.need(e, "offloaded_memcast destination", &c.dst, &[Hbm, Sbuf]);
                self.need(e, "offloaded_memcast source", &c.src, &[Hbm, Sbuf]);
            }
            InstData::Transpose(t) => {
                self.need(e, "transpose destination", &t.dst, &[Psum]);
                self.need(e, "transpose source", &t.src, &[Sbuf]);
            }
            InstData::DmaGather(g) => {
                self.need(e, "dma_gather destination", &g.dst, &[Sbuf]);
                self.need(e, "dma_gather table", &g.table, &[Hbm]);
                self.need(e, "dma_gather index", &g.index, &[Hbm, Sbuf]);
            }
            InstData::DmaScatterAdd(s) => {
                self.need(e, "dma_scatter_add table", &s.table, &[Hbm]);
                self.need(e, "dma_scatter_add source", &s.src, &[Sbuf]);
                self.need(e, "dma_scatter_add index", &s.index, &[Hbm, Sbuf]);
            }
        }
    }

    #[expect(clippy::too_many_arguments, reason = "the shape rule reads every operand and the PE tile")]
    fn check_matmul_shape(
        &mut self,
        e: Entity,
        k: u64,
        max_k: u32,
        dst: &InstTile,
        st: &InstTile,
        mv: &InstTile,
        (mm, nn): (u64, u64),
        pos: TilePosition,
        size: TileSize,
    ) {
        if k > u64::from(max_k) {
            self.err(e, format!("matmult contraction K = {k} exceeds {max_k}"));
        }
        for (what, at, len) in [("row", pos.row, size.rows), ("column", pos.col, size.cols)] {
            if ![128, 64, 32].contains(&len)
                || at % len != 0
                || u64::from(at) + u64::from(len) > u64::from(NUM_PARTITIONS)
            {
                self.err(e, format!("PE tile {what} position {at} with size {len} is not legal (sizes 128, 64, 32 at multiples of the size)"));
            }
        }
        if st.partitions() > size.rows {
            self.err(e, format!("matmult uses {} PE rows but its tile_size has {}", st.partitions(), size.rows));
        }
        if mm > u64::from(MAX_STATIONARY_FREE) {
            self.err(e, format!("matmult stationary free size {mm} exceeds {MAX_STATIONARY_FREE}"));
        }
        if nn > u64::from(MAX_MOVING_FREE) {
            self.err(e, format!("matmult moving free size {nn} exceeds {MAX_MOVING_FREE}"));
        }
        if u64::from(dst.partitions()) != mm || dst.free_elems() != nn {
            self.err(
                e,
                format!(
                    "matmult result is [{}, {}] but stationary^T @ moving is [{mm}, {nn}]",
                    dst.partitions(),
                    dst.free_elems()
                ),
            );
        }
        if dst.dtype != DType::Fp32 {
            self.err(e, format!("matmult result must be fp32 (PSUM accumulates in fp32), not {}", dst.dtype));
        }
        for (what, t) in [("stationary", st), ("moving", mv)] {
            if !t.dtype.is_float() && t.dtype != DType::Uint8 {
                self.err(e, format!("matmult {what} dtype {} is not a float or uint8", t.dtype));
            }
        }
    }

    fn check_shapes(&mut self, id: InstId, inst: &InstData) {
        let e = Entity::Inst(id);
        match inst {
            InstData::MatMult(m) => {
                if m.perf_mode == PerfMode::DoubleRowGen3 {
                    self.err(e, "perf_mode=`double_row_gen3` is not supported");
                }
                let k = m.stationary.partitions();
                if m.moving.partitions() != k {
                    self.err(
                        e,
                        format!(
                            "matmult contraction mismatch: stationary has {k} partitions, moving has {}",
                            m.moving.partitions()
                        ),
                    );
                }
                let (max_k, pack) = if m.perf_mode == PerfMode::DoubleRow { (256, 2) } else { (NUM_PARTITIONS, 1) };
                if pack == 2 {
                    let first = |t: &InstTile| t.ap.free.first().map_or(0, |d| d.num);
                    if first(&m.stationary) != 2 || first(&m.moving) != 2 {
                        self.err(e, "double_row operands must have a first free dimension of 2 ([P, 2, F])");
                        return;
                    }
                }
                let sizes = (m.stationary.free_elems() / pack, m.moving.free_elems() / pack);
                self.check_matmul_shape(
                    e,
                    u64::from(k) * pack,
                    max_k,
                    &m.dst,
                    &m.stationary,
                    &m.moving,
                    sizes,
                    m.tile_position,
                    m.tile_size,
                );
            }
            InstData::MatMultSparse(m) => {
                if !m.pattern.is_supported() {
                    self.err(e, format!("sparsity pattern {} is not supported", m.pattern));
                }
                let kc = m.stationary.partitions();
                if m.tags.partitions() != kc || m.tags.free_elems() != m.stationary.free_elems() {
                    self.err(e, "matmult_sparse tags must have the stationary operand's shape");
                }
                self.need_dtype(e, "matmult_sparse tags", &m.tags, DType::Int16);
                let (n, group) = (m.pattern.n, m.pattern.m);
                if n > 0 && (kc % n != 0 || u64::from(m.moving.partitions()) != u64::from(kc / n) * u64::from(group)) {
                    self.err(
                        e,
                        format!(
                            "matmult_sparse with {} keeps {kc} of K = {} contraction rows, not {} of every {}",
                            m.pattern,
                            m.moving.partitions(),
                            m.pattern.n,
                            m.pattern.m
                        ),
                    );
                }
                let sizes = (m.stationary.free_elems(), m.moving.free_elems());
                self.check_matmul_shape(
                    e,
                    u64::from(m.moving.partitions()),
                    NUM_PARTITIONS,
                    &m.dst,
                    &m.stationary,
                    &m.moving,
                    sizes,
                    m.tile_position,
                    m.tile_size,
                );
            }
            InstData::DmaCopy(d) => self.check_copy_shape(e, &d.dst, &d.src),
            InstData::TensorCopy(c) => self.check_copy_shape(e, &c.dst, &c.src),
            InstData::Memset(_) => {}
            InstData::TensorTensor(t) => {
                self.check_copy_shape(e, &t.dst, &t.lhs);
                self.check_copy_shape(e, &t.dst, &t.rhs);
            }
            InstData::TiledOffloadedFma(f) | InstData::OffloadedFma(f) => {
                self.check_copy_shape(e, &f.dst, &f.src0);
                self.check_copy_shape(e, &f.dst, &f.src1);
            }
            InstData::TiledOffloadedMemCpy(c) | InstData::OffloadedMemCpy(c) => {
                if c.dst.dtype != c.src.dtype {
                    self.err(
                        e,
                        format!("memcpy cannot convert {} to {} (use offloaded_memcast)", c.src.dtype, c.dst.dtype),
                    );
                }
                self.check_copy_shape(e, &c.dst, &c.src);
            }
            InstData::OffloadedMemCast(c) => self.check_copy_shape(e, &c.dst, &c.src),
            InstData::Transpose(t) => {
                if u64::from(t.dst.partitions()) != t.src.free_elems()
                    || t.dst.free_elems() != u64::from(t.src.partitions())
                {
                    self.err(
                        e,
                        format!(
                            "transpose result {:?} is not the transpose of {:?}",
                            t.dst.ap.shape(),
                            t.src.ap.shape()
                        ),
                    );
                }
                self.need_dtype(e, "transpose result", &t.dst, DType::Fp32);
            }
            InstData::DmaGather(g) => self.check_indexed(e, "dma_gather destination", &g.dst, &g.table, &g.index),
            InstData::DmaScatterAdd(s) => self.check_indexed(e, "dma_scatter_add source", &s.src, &s.table, &s.index),
        }
    }

    /// A gather or scatter-add: an int32 index with one table row per entry.
    fn check_indexed(&mut self, e: Entity, what: &str, rows: &InstTile, table: &InstTile, index: &InstTile) {
        let op = what.split(' ').next().unwrap_or(what);
        self.need_dtype(e, &format!("{op} index"), index, DType::Int32);
        if u64::from(rows.partitions()) != index.ap.num_elems() || rows.free_elems() != table.free_elems() {
            self.err(
                e,
                format!(
                    "{what} {:?} must have one row per index ({}) of a table row's {} elements",
                    rows.ap.shape(),
                    index.ap.num_elems(),
                    table.free_elems()
                ),
            );
        }
    }

    fn check_copy_shape(&mut self, e: Entity, dst: &InstTile, src: &InstTile) {
        if dst.partitions() != src.partitions() || dst.free_elems() != src.free_elems() {
            self.err(
                e,
                format!("copy shape mismatch: destination {:?} vs source {:?}", dst.ap.shape(), src.ap.shape()),
            );
        }
    }

    fn check_groups(&mut self, id: InstId, inst: &InstData, open: &mut Vec<OpenGroup>) {
        let e = Entity::Inst(id);
        let psum_region = |tile: &InstTile| (tile.memory == Memory::Psum).then(|| tile.ap.region(true));
        let accumulating = match inst {
            InstData::MatMult(m) => Some((&m.dst, m.flags())),
            InstData::MatMultSparse(m) => Some((&m.dst, m.flags())),
            _ => None,
        };
        if let Some((dst, flags)) = accumulating {
            let Some(region) = psum_region(dst) else { return };
            let existing = open.iter().position(|g| g.tensor == dst.tensor && g.region.overlaps(&region));
            if flags.is_empty() {
                self.err(e, "matmult has an empty accumulation flag set");
                return;
            }
            if flags.contains(Acc::START | Acc::ACCU) {
                self.err(e, "START and ACCU cannot be set together");
                return;
            }
            if flags.contains(Acc::START) {
                if let Some(g) = existing {
                    self.err(
                        e,
                        format!("START on a PSUM region whose group (opened by {}) is still open", open[g].opened_by),
                    );
                    return;
                }
                if !flags.contains(Acc::STOP) {
                    open.push(OpenGroup { tensor: dst.tensor, region, opened_by: id });
                }
                return;
            }
            match existing {
                None => {
                    let which = if flags.contains(Acc::ACCU) { "ACCU" } else { "STOP" };
                    self.err(e, format!("{which} before START: no open accumulation group on this PSUM region"));
                }
                Some(g) if open[g].region != region => {
                    self.err(
                        e,
                        format!(
                            "accumulates into a different PSUM region than its group (opened by {})",
                            open[g].opened_by
                        ),
                    );
                }
                Some(g) => {
                    if flags.contains(Acc::STOP) {
                        open.swap_remove(g);
                    }
                }
            }
            return;
        }
        for (tile, access) in inst.operands() {
            let Some(region) = psum_region(tile) else { continue };
            if let Some(g) = open.iter().find(|g| g.tensor == tile.tensor && g.region.overlaps(&region)) {
                let verb = if access == Access::Read { "reads" } else { "writes" };
                self.err(
                    e,
                    format!(
                        "{verb} a PSUM region whose accumulation group (opened by {}) has not been stopped",
                        g.opened_by
                    ),
                );
            }
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
