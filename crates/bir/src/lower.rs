//! Lowering a verified Penguin function to a BIR program.
//!
//! Each Penguin instruction becomes one or more instructions on one engine stream: matmuls
//! on the PE as LoadStationary + MultiplyMoving (`matmul::codegen_mat_mul_op`), plain DMA copies on
//! the DMA queues (copies into HBM on their own [`STORE_QUEUES`], so that a store never waits
//! in line behind a plain load that is itself waiting for a buffer to be released; offloaded
//! ops, casting loads included, are spread over all 16 queues), tensor copies, memsets,
//! tensor-tensor and tensor-scalar ops on the engine they name, activations on ACT,
//! reductions and batch-norm statistics on DVE, `affine_select` and `iota` on POOL. The
//! target's own rules are checked here: an immediate activation bias and a 16-bit PE
//! transpose need trn2 or later.
//!
//! Which queue: a copy or cast that carries a [`DmaQueueHint`] goes where the hint says
//! (the hint modulo the queues of its class; an offloaded op's pieces on the run of queues
//! from `hint * pieces`), so a producer that numbers its transfers by their place in its loop
//! nest gets the same queues in every iteration and the streams roll into loops
//! ([`crate::roll`]). Without a hint, lowering takes the queues of the class in turn over the
//! whole function (round robin), which spreads the load but makes the queue of a transfer
//! drift from one iteration to the next whenever an iteration's transfer count is not a
//! multiple of the queue count.
//!
//! A dependency
//! edge between instructions on different engines becomes a semaphore: every engine has one
//! semaphore that its instructions with cross-engine dependents increment, and a consumer
//! waits until the producer's engine semaphore reaches the count of the producer.
//!
//! Lowering an instruction is two steps: *routing* (`LowerCx::route`: which engine each of
//! its ops goes to and how many; the queue round robins advance here and only here) and
//! *building* (`LowerCx::build`: the ops, for the engines routed). [`lower`] routes the
//! whole function first, so it knows every stream's length and allocates each once, then
//! builds the ops straight into their streams: a GEMM's streams hold hundreds of thousands of
//! instructions, and memory is the cost that matters (regrown vectors were copied into fresh
//! pages, and fresh pages are slow to fault in). The looped lowerings, which want one
//! instruction's ops at a time, use both steps through `LowerCx::lower_inst`.

use penguin::{
    ComputeEngine, DmaQueueHint, FunctionView, InstData, InstId, InstTile, Memory, Target, TensorId, Verified,
};

use crate::error::BirError;
use crate::program::{BirInst, Dims, Engine, HbmRole, HbmTensor, HwAp, Op, Program, NUM_ENGINES};

mod build;
mod looped;
mod matmul;
mod native;
mod semaphores;
mod spread;

pub use looped::{lower_looped, lower_looped_expanded, LowerLoopedError, MAX_LOWER_UNROLLED};
pub use native::{lower_looped_native, lower_looped_native_within};
pub use spread::extract_offloaded_memcpy_shape_bases;

/// DMA queues reserved for plain copies into HBM (the last ones); the others take every other
/// plain copy. Offloaded ops spread over all queues.
pub const STORE_QUEUES: u8 = penguin::target::DMA_STORE_QUEUES as u8;

/// HBM tensors are aligned to this many bytes.
const HBM_ALIGN: u64 = 64;

struct LowerCx<'a, F: ?Sized> {
    func: &'a F,
    target: Target,
    /// Per tensor: HBM byte address, or on-chip byte offset inside a partition.
    address: Vec<u64>,
    next_dma_queue: u8,
    /// The next load queue (`0..16 - STORE_QUEUES`) and store queue (the rest), in turn.
    next_load_queue: u8,
    next_store_queue: u8,
    program: Program,
}

/// A run of consecutive ops a Penguin instruction puts on one engine (a matmul: two on the
/// PE; an offloaded op: one per piece, each on its queue).
#[derive(Clone, Copy, Debug)]
struct Group {
    engine: Engine,
    ops: u32,
}

/// Where a Penguin instruction landed: its engine and the index range in that stream.
#[derive(Clone, Copy)]
struct Placement {
    engine: Engine,
    first: u32,
    last: u32,
}

/// The placements of every instruction, flat: `span[id]` is the range of `parts` holding
/// instruction `id`'s (empty for an instruction outside the layout).
struct Placements {
    parts: Vec<Placement>,
    span: Vec<(u32, u32)>,
}

impl Placements {
    /// The placements of an instruction, in the order of its groups.
    fn of(&self, id: InstId) -> &[Placement] {
        let (a, b) = self.span.get(id.index()).copied().unwrap_or((0, 0));
        self.parts.get(a as usize..b as usize).unwrap_or(&[])
    }
}

/// Lower a verified function for a target.
///
/// Routes the whole layout, allocates every stream once at its final length, then builds the
/// ops straight into their streams (see the module doc).
pub fn lower<F: FunctionView + ?Sized>(func: Verified<'_, F>, target: Target) -> Result<Program, BirError> {
    lower_cancellable(func, target, None)
}

/// [`lower`], stopped with [`BirError::Interrupted`] within a thousand instructions of
/// `cancel` being set.
#[expect(clippy::needless_pass_by_value, reason = "the proof of verification is handed over, as a token")]
pub fn lower_cancellable<F: FunctionView + ?Sized>(
    func: Verified<'_, F>,
    target: Target,
    cancel: Option<&penguin::Cancel>,
) -> Result<Program, BirError> {
    let stop = |i: usize| {
        if penguin::cancel::stopped_every(cancel, i) {
            Err(BirError::Interrupted)
        } else {
            Ok(())
        }
    };
    let f = func.get();
    let mut cx = LowerCx::new(f, target);
    let mut locs = penguin::LocInterner::default();
    cx.assign_addresses()?;
    let layout = f.layout();
    let missing = |id: InstId| BirError::Internal(format!("{id} missing from a verified function"));
    let mut placed = Placements { parts: Vec::with_capacity(layout.len()), span: vec![(0, 0); f.num_insts()] };
    let mut counts = [0u32; NUM_ENGINES];
    let mut groups = Vec::new();
    // An error while routing is reported after the instructions before it are built, so that
    // the first instruction that cannot be lowered is the one named, as when lowering them
    // one by one.
    let mut routed = Ok(());
    let mut until = layout.len();
    for (pos, &id) in layout.iter().enumerate() {
        stop(pos)?;
        groups.clear();
        if let Err(e) = f.inst(id).ok_or_else(|| missing(id)).and_then(|inst| cx.route(id, inst, &mut groups)) {
            (routed, until) = (Err(e), pos);
            break;
        }
        let a = placed.parts.len() as u32;
        for g in &groups {
            let count = &mut counts[g.engine.index()];
            let first = *count;
            *count = first
                .checked_add(g.ops)
                .ok_or_else(|| BirError::Unsupported(format!("more than 2^32 instructions on {}", g.engine.name())))?;
            placed.parts.push(Placement { engine: g.engine, first, last: count.saturating_sub(1) });
        }
        if let Some(slot) = placed.span.get_mut(id.index()) {
            *slot = (a, placed.parts.len() as u32);
        }
    }
    for (stream, n) in cx.program.streams.iter_mut().zip(counts) {
        stream.reserve_exact(n as usize);
    }
    let mut ops = Vec::new();
    for (pos, &id) in layout[..until].iter().enumerate() {
        stop(pos + 1)?;
        let inst = f.inst(id).ok_or_else(|| missing(id))?;
        let parts = placed.of(id);
        ops.clear();
        cx.build(id, inst, parts.first().map_or(Engine::Pe, |p| p.engine), &mut ops)?;
        let mut ops = ops.drain(..);
        for p in parts {
            let stream = &mut cx.program.streams[p.engine.index()];
            if stream.len() != p.first as usize {
                return Err(BirError::Internal(format!(
                    "{id}: routed to {} #{}, built at #{}",
                    p.engine.name(),
                    p.first,
                    stream.len()
                )));
            }
            for _ in p.first..=p.last {
                let op = ops.next().ok_or_else(|| BirError::Internal(format!("{id}: fewer ops built than routed")))?;
                stream.push(BirInst { op, waits: Vec::new(), signal: None, origin: Some(id) });
            }
        }
        if ops.next().is_some() {
            return Err(BirError::Internal(format!("{id}: more ops built than routed")));
        }
    }
    routed?;
    cx.wire_semaphores(&placed)?;
    for &id in layout {
        if let Some(loc) = f.srcloc(id) {
            cx.program.srclocs.set(id, Some(locs.intern(loc)));
        }
    }
    Ok(cx.program)
}

impl<'a, F: FunctionView + ?Sized> LowerCx<'a, F> {
    /// A lowering of `func` with no addresses assigned yet and every queue cursor at 0.
    fn new(func: &'a F, target: Target) -> Self {
        LowerCx {
            func,
            target,
            address: Vec::with_capacity(func.num_tensors()),
            next_dma_queue: 0,
            next_load_queue: 0,
            next_store_queue: 0,
            program: Program::new(func.kernel_name(), target),
        }
    }

    fn tensor_ids(&self) -> impl Iterator<Item = TensorId> {
        (0..self.func.num_tensors() as u32).map(TensorId)
    }

    /// HBM tensors get consecutive aligned addresses; on-chip tensors keep their address or
    /// are placed after the highest allocated byte; SBUF must fit the target.
    fn assign_addresses(&mut self) -> Result<(), BirError> {
        let capacity = u64::from(self.target.info().statebuf_par_size_in_bytes);
        let mut hbm_next = 0u64;
        let mut sbuf_end = 0u64;
        let mut psum_end = 0u64;
        for id in self.tensor_ids() {
            if let Some(t) = self.func.tensor(id) {
                if let Some(a) = t.address {
                    let end = a.saturating_add(t.bytes_per_partition());
                    match t.memory {
                        Memory::Sbuf => sbuf_end = sbuf_end.max(end),
                        Memory::Psum => psum_end = psum_end.max(end),
                        Memory::Hbm => {}
                    }
                }
            }
        }
        for id in self.tensor_ids() {
            let t = self.func.tensor(id).ok_or_else(|| BirError::Internal(format!("{id} missing")))?;
            let addr = match t.memory {
                Memory::Hbm => {
                    let a = hbm_next;
                    hbm_next = a
                        .checked_add(t.num_bytes())
                        .and_then(|end| end.div_ceil(HBM_ALIGN).checked_mul(HBM_ALIGN))
                        .ok_or_else(|| too_large(&t.name, "HBM"))?;
                    let role = if self.func.outputs().contains(&id) {
                        HbmRole::Output
                    } else if self.func.inputs().contains(&id) {
                        HbmRole::Input
                    } else {
                        HbmRole::Internal
                    };
                    self.program.hbm.push(HbmTensor {
                        name: t.name.clone(),
                        shape: t.shape.clone(),
                        dtype: t.dtype,
                        address: a,
                        role,
                    });
                    a
                }
                Memory::Sbuf | Memory::Psum => {
                    let end = if t.memory == Memory::Sbuf { &mut sbuf_end } else { &mut psum_end };
                    let needed =
                        |a: u64| a.checked_add(t.bytes_per_partition()).ok_or_else(|| too_large(&t.name, "on-chip"));
                    let a = match t.address {
                        Some(a) => a,
                        None => {
                            let a = *end;
                            *end = needed(a)?;
                            a
                        }
                    };
                    let tensor_end = needed(a)?;
                    if t.memory == Memory::Sbuf && tensor_end > capacity {
                        return Err(BirError::SbufCapacity {
                            tensor: t.name.clone(),
                            needed: tensor_end,
                            available: capacity,
                            target: self.target,
                        });
                    }
                    a
                }
            };
            self.address.push(addr);
        }
        self.program.hbm_size = hbm_next;
        self.program.sbuf_peak_bytes = sbuf_end;
        Ok(())
    }

    fn hw_ap(&self, inst: InstId, engine: Engine, tile: &InstTile) -> Result<HwAp, BirError> {
        let size = u64::from(tile.dtype.size_bytes());
        let base = *self
            .address
            .get(tile.tensor.index())
            .ok_or_else(|| BirError::Internal(format!("{} has no address", tile.tensor)))?;
        let offset =
            u64::try_from(tile.ap.offset).map_err(|_| BirError::Internal(format!("{inst}: negative offset")))?;
        let byte_offset = offset
            .checked_mul(size)
            .and_then(|o| o.checked_add(base))
            .ok_or_else(|| BirError::Internal(format!("{inst}: byte offset of {} overflows", tile.tensor)))?;
        let dims = Dims::canonical(&tile.ap.free);
        if dims.len() > engine.max_free_dims() {
            return Err(BirError::TooManyStrides { inst, engine, dims: dims.len(), max: engine.max_free_dims() });
        }
        Ok(HwAp {
            memory: tile.memory,
            dtype: tile.dtype,
            start_partition: tile.ap.start_partition,
            num_partitions: tile.ap.partitions.num,
            partition_stride: tile.ap.partitions.stride,
            byte_offset,
            dims,
        })
    }

    /// The queue of a plain DMA copy: stores (into HBM) and other copies take turns over
    /// separate sets of queues.
    fn next_copy_queue(&mut self, store: bool) -> Engine {
        let loads = penguin::target::NUM_DMA_QUEUES as u8 - STORE_QUEUES;
        if store {
            let q = loads + self.next_store_queue;
            self.next_store_queue = (self.next_store_queue + 1) % STORE_QUEUES;
            Engine::Dma(q)
        } else {
            let q = self.next_load_queue;
            self.next_load_queue = (self.next_load_queue + 1) % loads;
            Engine::Dma(q)
        }
    }

    /// The queue of a plain DMA copy: the producer's hint mapped onto the queues of its class
    /// (see [`DmaQueueHint`]), or the next one in turn.
    fn copy_queue(&mut self, store: bool, hint: Option<DmaQueueHint>) -> Engine {
        let loads = penguin::target::DMA_LOAD_QUEUES;
        match hint {
            None => self.next_copy_queue(store),
            Some(DmaQueueHint(h)) if store => Engine::Dma((loads + h % u32::from(STORE_QUEUES)) as u8),
            Some(DmaQueueHint(h)) => Engine::Dma((h % loads) as u8),
        }
    }

    fn next_queue(&mut self) -> Engine {
        let e = Engine::Dma(self.next_dma_queue);
        self.next_dma_queue = (self.next_dma_queue + 1) % penguin::target::NUM_DMA_QUEUES as u8;
        e
    }

    /// Lower one instruction: the ops it becomes, grouped by engine.
    fn lower_inst(&mut self, id: InstId, inst: &InstData) -> Result<Vec<(Engine, Vec<Op>)>, BirError> {
        let mut groups = Vec::new();
        self.route(id, inst, &mut groups)?;
        let mut ops = Vec::new();
        self.build(id, inst, groups.first().map_or(Engine::Pe, |g| g.engine), &mut ops)?;
        if ops.len() != groups.iter().map(|g| g.ops as usize).sum::<usize>() {
            return Err(BirError::Internal(format!("{id}: {} ops built for other routes", ops.len())));
        }
        let mut ops = ops.into_iter();
        Ok(groups.iter().map(|g| (g.engine, ops.by_ref().take(g.ops as usize).collect())).collect())
    }

    /// Where one instruction's ops go, group by group, taking its queues (the round robins
    /// advance here, and only here).
    fn route(&mut self, id: InstId, inst: &InstData, out: &mut Vec<Group>) -> Result<(), BirError> {
        let one = |engine: Engine| Group { engine, ops: 1 };
        match inst {
            InstData::MatMult(_) | InstData::MatMultSparse(_) => out.push(Group { engine: Engine::Pe, ops: 2 }),
            InstData::Transpose(_) => out.push(one(Engine::Pe)),
            InstData::DmaCopy(d) => out.push(one(self.copy_queue(d.dst.memory == Memory::Hbm, d.queue))),
            InstData::TensorCopy(c) => out.push(one(compute_engine(c.engine))),
            InstData::TensorTensor(t) => out.push(one(compute_engine(t.engine))),
            InstData::Memset(m) => out.push(one(compute_engine(m.engine))),
            InstData::TiledOffloadedFma(f) | InstData::OffloadedFma(f) => {
                self.route_spread(id, &[&f.dst, &f.src0, &f.src1], None, out)?;
            }
            InstData::TiledOffloadedMemCpy(c) | InstData::OffloadedMemCpy(c) => {
                self.route_spread(id, &[&c.dst, &c.src], None, out)?;
            }
            InstData::OffloadedMemCast(c) => self.route_spread(id, &[&c.dst, &c.src], c.queue, out)?,
            InstData::DmaGather(_) | InstData::DmaScatter(_) | InstData::DmaScatterAdd(_) => {
                out.push(one(self.next_queue()));
            }
            InstData::Activation(_) => out.push(one(Engine::Act)),
            InstData::TensorScalar(t) => out.push(one(compute_engine(t.engine))),
            InstData::TensorTensorScan(_)
            | InstData::TensorCopyPredicated(_)
            | InstData::StreamShuffle(_)
            | InstData::Top8(_)
            | InstData::TensorScalarCumulative(_)
            | InstData::TensorReduce(_)
            | InstData::BnStats(_)
            | InstData::BnAggr(_) => {
                out.push(one(Engine::Dve));
            }
            InstData::AffineSelect(_) | InstData::Iota(_) | InstData::TensorPartitionReduce(_) => {
                out.push(one(Engine::Pool));
            }
        }
        Ok(())
    }
}

/// Error for tensors whose addresses do not fit a `u64`.
fn too_large(tensor: &str, memory: &str) -> BirError {
    BirError::Unsupported(format!("tensor `{tensor}` does not fit: {memory} addresses would exceed 2^64 bytes"))
}

fn compute_engine(e: ComputeEngine) -> Engine {
    match e {
        ComputeEngine::Act => Engine::Act,
        ComputeEngine::Dve => Engine::Dve,
        ComputeEngine::Pool => Engine::Pool,
    }
}

#[cfg(test)]
mod tests;
