//! The Penguin verifier. It collects every error, each pointing at the entity it concerns.
//!
//! Rules, in the order they are checked:
//!
//! 1. **Kernel name**: an identifier (`[A-Za-z_][A-Za-z0-9_]*`).
//! 2. **Tensors**: every dimension is at least 1; on-chip tensors have at most 128
//!    partitions; an allocated SBUF tensor ends within 256 KiB per partition (the largest
//!    target; lowering checks the target's own capacity); an allocated PSUM tensor ends within
//!    the 8 banks of 2 KiB.
//! 3. **Inputs and outputs** name existing HBM tensors.
//! 4. **Layout**: every instruction appears exactly once in program order, and every
//!    dependency edge comes from an instruction earlier in program order.
//! 5. **Operands**: the tensor exists and the operand's memory and dtype are the tensor's;
//!    at most 4 free dimensions, every `num` at least 1.
//! 6. **Partition ranges** of on-chip operands lie within 128 partitions and within the
//!    tensor; HBM operands have `start_partition` 0.
//! 7. **Bounds**: every element an operand touches lies inside its tensor.
//! 8. **Legal memories per operand**: a matmul's stationary and moving operands are in SBUF
//!    and its result is in PSUM (`Result buffer of matmult must be psum!`); DMA copies move
//!    between HBM and SBUF; tensor copies and memsets stay on chip.
//! 9. **PSUM banks**: an access to PSUM stays inside one 2 KiB bank in every partition.
//! 10. **Matmul shapes**: stationary and moving share K partitions (K <= 128); the result has
//!     M = stationary free size <= 128 partitions and N = moving free size <= 512 fp32; the
//!     result is fp32; `double_row_gen3` is refused.
//! 11. **Copy shapes**: source and destination have equal partition counts and equal
//!     elements per partition.
//! 12. **Accumulation groups**, in program order per PSUM region: START opens a group on a
//!     region with no open group; ACCU and STOP continue the open group on exactly the same
//!     region (ACCU before START is an error); START and ACCU are never set together; reading
//!     a region whose group is open is an error; every group is stopped by the end.

use crate::ap::{AccessPattern, Region, MAX_FREE_DIMS};
use crate::dtype::DType;
use crate::entity::{InstId, Memory, TensorId};
use crate::error::{Entity, VerifierError, VerifierErrors};
use crate::function::{FunctionView, TensorData};
use crate::inst::{Access, EngineAccumulationType as Acc, InstData, PerfMode};
use crate::target::{MAX_MOVING_FREE, MAX_STATIONARY_FREE, NUM_PARTITIONS, PSUM_BANK_BYTES, PSUM_NUM_BANKS};
use crate::tile::InstTile;

/// The message for a matmul whose result is not in PSUM (the seed's text).
pub const MATMULT_RESULT_NOT_PSUM: &str = "Result buffer of matmult must be psum!";

/// Largest SBUF partition of any target, in bytes.
const MAX_SBUF_BYTES: u64 = 256 * 1024;

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
        let end = addr + t.bytes_per_partition();
        let cap = match t.memory {
            Memory::Sbuf => MAX_SBUF_BYTES,
            Memory::Psum => u64::from(PSUM_NUM_BANKS * PSUM_BANK_BYTES),
            Memory::Hbm => u64::MAX,
        };
        if end > cap {
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
        if t.memory.is_on_chip() {
            ok &= self.check_on_chip_bounds(e, tile, t);
        } else {
            if ap.start_partition != 0 {
                self.err(e, format!("hbm operand {} must have start partition 0", tile.tensor));
                ok = false;
            }
            let (lo, hi) = ap.flat_extent();
            if ap.offset + lo < 0 || (ap.offset + hi) as u64 >= t.num_elems() {
                self.err(
                    e,
                    format!(
                        "operand {} reaches elements {}..={} outside `{}` ({} elements)",
                        tile.tensor,
                        ap.offset + lo,
                        ap.offset + hi,
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
        let ap = &tile.ap;
        let mut ok = true;
        let r = ap.region(true);
        if r.p1 > NUM_PARTITIONS {
            self.err(
                e,
                format!(
                    "operand {} uses partitions {}..{} beyond the {NUM_PARTITIONS} partitions",
                    tile.tensor, r.p0, r.p1
                ),
            );
            ok = false;
        } else if u64::from(r.p1) > t.partitions() {
            self.err(
                e,
                format!(
                    "operand {} uses partitions {}..{} but `{}` has {}",
                    tile.tensor,
                    r.p0,
                    r.p1,
                    t.name,
                    t.partitions()
                ),
            );
            ok = false;
        }
        if r.lo < 0 || r.hi as u64 > t.free_elems() {
            self.err(
                e,
                format!(
                    "operand {} reaches elements {}..{} of a partition outside `{}` ({} per partition)",
                    tile.tensor,
                    r.lo,
                    r.hi,
                    t.name,
                    t.free_elems()
                ),
            );
            ok = false;
        }
        if ok && t.memory == Memory::Psum {
            let base = t.address.unwrap_or(0);
            let size = u64::from(t.dtype.size_bytes());
            let first = base + r.lo as u64 * size;
            let last = base + r.hi as u64 * size - 1;
            let bank = u64::from(PSUM_BANK_BYTES);
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

    fn check_memories(&mut self, id: InstId, inst: &InstData) {
        let e = Entity::Inst(id);
        match inst {
            InstData::MatMult(m) => {
                if m.dst.memory != Memory::Psum {
                    self.err(e, MATMULT_RESULT_NOT_PSUM);
                }
                for (what, t) in [("stationary", &m.stationary), ("moving", &m.moving)] {
                    if t.memory != Memory::Sbuf {
                        self.err(e, format!("matmult {what} operand must be in sbuf, not {}", t.memory));
                    }
                }
            }
            InstData::DmaCopy(d) => {
                for (what, t) in [("destination", &d.dst), ("source", &d.src)] {
                    if t.memory == Memory::Psum {
                        self.err(e, format!("dma_copy {what} must be in hbm or sbuf, not psum"));
                    }
                }
            }
            InstData::TensorCopy(c) => {
                for (what, t) in [("destination", &c.dst), ("source", &c.src)] {
                    if !t.memory.is_on_chip() {
                        self.err(e, format!("tensor_copy {what} must be on chip (sbuf or psum), not hbm"));
                    }
                }
            }
            InstData::Memset(m) => {
                if !m.dst.memory.is_on_chip() {
                    self.err(e, "memset destination must be on chip (sbuf or psum), not hbm");
                }
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
                let max_k = if m.perf_mode == PerfMode::DoubleRow { 256 } else { NUM_PARTITIONS };
                if m.moving.partitions() != k {
                    self.err(
                        e,
                        format!(
                            "matmult contraction mismatch: stationary has {k} partitions, moving has {}",
                            m.moving.partitions()
                        ),
                    );
                }
                if k > max_k {
                    self.err(e, format!("matmult contraction K = {k} exceeds {max_k}"));
                }
                let mm = m.stationary.free_elems();
                let nn = m.moving.free_elems();
                if mm > u64::from(MAX_STATIONARY_FREE) {
                    self.err(e, format!("matmult stationary free size {mm} exceeds {MAX_STATIONARY_FREE}"));
                }
                if nn > u64::from(MAX_MOVING_FREE) {
                    self.err(e, format!("matmult moving free size {nn} exceeds {MAX_MOVING_FREE}"));
                }
                if u64::from(m.dst.partitions()) != mm || m.dst.free_elems() != nn {
                    self.err(
                        e,
                        format!(
                            "matmult result is [{}, {}] but stationary^T @ moving is [{mm}, {nn}]",
                            m.dst.partitions(),
                            m.dst.free_elems()
                        ),
                    );
                }
                if m.dst.dtype != DType::Fp32 {
                    self.err(e, format!("matmult result must be fp32 (PSUM accumulates in fp32), not {}", m.dst.dtype));
                }
                for (what, t) in [("stationary", &m.stationary), ("moving", &m.moving)] {
                    if !t.dtype.is_float() && t.dtype != DType::Uint8 {
                        self.err(e, format!("matmult {what} dtype {} is not a float or uint8", t.dtype));
                    }
                }
            }
            InstData::DmaCopy(d) => self.check_copy_shape(e, &d.dst, &d.src),
            InstData::TensorCopy(c) => self.check_copy_shape(e, &c.dst, &c.src),
            InstData::Memset(_) => {}
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
        if let InstData::MatMult(m) = inst {
            let Some(region) = psum_region(&m.dst) else { return };
            let flags = m.flags();
            let existing = open.iter().position(|g| g.tensor == m.dst.tensor && g.region.overlaps(&region));
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
                    open.push(OpenGroup { tensor: m.dst.tensor, region, opened_by: id });
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

/// A tile over a whole tensor, for tests and small builders.
pub fn whole_tile(id: TensorId, t: &TensorData) -> InstTile {
    let ap = if t.memory.is_on_chip() {
        AccessPattern::on_chip(0, t.partitions() as u32, 0, t.free_elems() as u32)
    } else {
        let rows = t.shape.first().copied().unwrap_or(1);
        let row_len = t.num_elems() / rows.max(1);
        AccessPattern::hbm_rows(row_len, 0, rows as u32, 0, row_len as u32)
    };
    InstTile { tensor: id, memory: t.memory, dtype: t.dtype, ap }
}
