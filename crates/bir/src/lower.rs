//! Lowering a verified Penguin function to a BIR program.
//!
//! Each Penguin instruction becomes one or more instructions on one engine stream: matmuls
//! on the PE as LoadStationary + MultiplyMoving ([`codegen_mat_mul_op`]), plain DMA copies on
//! the DMA queues (copies into HBM on their own [`STORE_QUEUES`], so that a store never waits
//! in line behind a plain load that is itself waiting for a buffer to be released; offloaded
//! ops, casting loads included, are spread over all 16 queues), tensor copies and memsets on
//! the engine they name.
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

use penguin::{
    CastMode, ComputeEngine, DmaQueueHint, FunctionView, InstData, InstId, InstTile, MatMultData, Memory,
    OffloadedFmaData, OffloadedMemCastData, OffloadedMemCpyData, PerfMode, Target, TensorId, Verified,
};

use crate::error::BirError;
use crate::program::{BirInst, Engine, HbmRole, HbmTensor, HwAp, Op, Program};

mod looped;
mod native;
mod semaphores;

pub use looped::{lower_looped, lower_looped_expanded, LowerLoopedError, MAX_LOWER_UNROLLED};
pub use native::lower_looped_native;

/// Bytes an offloaded op's piece should carry at least (see `spread`).
const SPREAD_PIECE_BYTES: u64 = 64 * 1024;

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

/// Where a Penguin instruction landed: its engine and the index range in that stream.
#[derive(Clone, Copy)]
struct Placement {
    engine: Engine,
    first: usize,
    last: usize,
}

/// Lower a verified function for a target.
#[expect(clippy::needless_pass_by_value, reason = "the proof of verification is handed over, as a token")]
pub fn lower<F: FunctionView + ?Sized>(func: Verified<'_, F>, target: Target) -> Result<Program, BirError> {
    let f = func.get();
    let mut cx = LowerCx::new(f, target);
    cx.assign_addresses()?;
    let mut placement: Vec<Vec<Placement>> = vec![Vec::new(); f.num_insts()];
    for &id in f.layout() {
        let inst = f.inst(id).ok_or_else(|| BirError::Internal(format!("{id} missing from a verified function")))?;
        for (engine, ops) in cx.lower_inst(id, inst)? {
            let stream = &mut cx.program.streams[engine.index()];
            let first = stream.len();
            stream.extend(ops.into_iter().map(|op| BirInst { op, waits: Vec::new(), signal: None, origin: Some(id) }));
            let last = cx.program.streams[engine.index()].len() - 1;
            placement[id.index()].push(Placement { engine, first, last });
        }
    }
    cx.wire_semaphores(&placement)?;
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
        let dims = tile.ap.canonical_free_indices();
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
        let one = |engine: Engine, op: Op| Ok(vec![(engine, vec![op])]);
        match inst {
            InstData::MatMult(m) => Ok(vec![(Engine::Pe, codegen_mat_mul_op(self, id, m)?.to_vec())]),
            InstData::MatMultSparse(m) => {
                let pe = Engine::Pe;
                let ls = Op::LoadStationarySparse {
                    src: self.hw_ap(id, pe, &m.stationary)?,
                    tags: self.hw_ap(id, pe, &m.tags)?,
                    pattern: m.pattern,
                    tile_position: m.tile_position,
                    tile_size: m.tile_size,
                };
                let mm = Op::MultiplyMoving {
                    dst: self.hw_ap(id, pe, &m.dst)?,
                    src: self.hw_ap(id, pe, &m.moving)?,
                    acc: m.flags(),
                    perf_mode: PerfMode::None,
                    tile_position: m.tile_position,
                    tile_size: m.tile_size,
                };
                Ok(vec![(pe, vec![ls, mm])])
            }
            InstData::Transpose(t) => one(
                Engine::Pe,
                Op::Transpose { dst: self.hw_ap(id, Engine::Pe, &t.dst)?, src: self.hw_ap(id, Engine::Pe, &t.src)? },
            ),
            InstData::DmaCopy(d) => {
                let engine = self.copy_queue(d.dst.memory == Memory::Hbm, d.queue);
                let op = Op::DmaCopy {
                    dst: self.hw_ap(id, engine, &d.dst)?,
                    src: self.hw_ap(id, engine, &d.src)?,
                    cast: d.cast,
                };
                one(engine, op)
            }
            InstData::TensorCopy(c) => {
                let engine = compute_engine(c.engine);
                one(
                    engine,
                    Op::TensorCopy { dst: self.hw_ap(id, engine, &c.dst)?, src: self.hw_ap(id, engine, &c.src)? },
                )
            }
            InstData::TensorTensor(t) => {
                let engine = compute_engine(t.engine);
                one(
                    engine,
                    Op::TensorTensor {
                        op: t.op,
                        dst: self.hw_ap(id, engine, &t.dst)?,
                        lhs: self.hw_ap(id, engine, &t.lhs)?,
                        rhs: self.hw_ap(id, engine, &t.rhs)?,
                    },
                )
            }
            InstData::Memset(m) => {
                let engine = compute_engine(m.engine);
                one(engine, Op::Memset { dst: self.hw_ap(id, engine, &m.dst)?, value: m.value })
            }
            InstData::TiledOffloadedFma(f) => codegen_tiled_offloaded_fma(self, id, f),
            InstData::OffloadedFma(f) => codegen_offloaded_fma(self, id, f),
            InstData::TiledOffloadedMemCpy(c) => codegen_tiled_offloaded_mem_cpy(self, id, c),
            InstData::OffloadedMemCpy(c) => codegen_offloaded_mem_cpy(self, id, c),
            InstData::OffloadedMemCast(c) => codegen_offloaded_mem_cast(self, id, c),
            InstData::DmaGather(g) => {
                let engine = self.next_queue();
                let op = Op::DmaGather {
                    dst: self.hw_ap(id, engine, &g.dst)?,
                    table: self.hw_ap(id, engine, &g.table)?,
                    index: self.hw_ap(id, engine, &g.index)?,
                };
                one(engine, op)
            }
            InstData::DmaScatterAdd(sc) => {
                let engine = self.next_queue();
                let op = Op::DmaScatterAdd {
                    table: self.hw_ap(id, engine, &sc.table)?,
                    src: self.hw_ap(id, engine, &sc.src)?,
                    index: self.hw_ap(id, engine, &sc.index)?,
                };
                one(engine, op)
            }
        }
    }

    /// Spread an offloaded op over the DMA queues, one piece per queue in turn. Every DMA
    /// transfer pays a fixed cost (~1.3 us) on its queue, so a piece must carry enough bytes
    /// to amortize it: an op is cut into `clamp(bytes / 64 KiB, 1, 16)` pieces. Pieces cut
    /// the partition range (each queue serving its own partitions), except for a transposing
    /// HBM access (contiguous along partitions, strided along the free dimension), which is cut
    /// along its outer free dimension so that every piece keeps whole contiguous runs.
    fn spread(
        &mut self,
        id: InstId,
        aps: &[&InstTile],
        hint: Option<DmaQueueHint>,
        build: &dyn Fn(&[HwAp]) -> Option<Op>,
    ) -> Result<Vec<(Engine, Vec<Op>)>, BirError> {
        let probe = Engine::Dma(0);
        let hw: Vec<HwAp> = aps.iter().map(|t| self.hw_ap(id, probe, t)).collect::<Result<_, _>>()?;
        let refs: Vec<&HwAp> = hw.iter().collect();
        let (shape, _bases) = extract_offloaded_memcpy_shape_bases(&refs)?;
        let transposing = hw.iter().any(|ap| {
            ap.memory == Memory::Hbm && ap.partition_stride == 1 && ap.dims.first().is_some_and(|d| d.stride != 1)
        }) && hw.iter().all(|ap| ap.dims.len() == 1);
        let extent =
            if transposing { hw.first().and_then(|ap| ap.dims.first()).map_or(1, |d| d.num) } else { shape[0] };
        let bytes: u64 =
            hw.iter().map(|ap| ap.num_elems().saturating_mul(u64::from(ap.dtype.size_bytes()))).max().unwrap_or(0);
        let pieces = (bytes / SPREAD_PIECE_BYTES).clamp(1, u64::from(penguin::target::NUM_DMA_QUEUES)) as u32;
        let per = if transposing {
            extent.div_ceil(pieces).max(1)
        } else {
            extent.div_ceil(pieces).max(penguin::target::NUM_PARTITIONS / penguin::target::NUM_DMA_QUEUES)
        };
        let mut out = Vec::new();
        let mut start = 0;
        let queues = penguin::target::NUM_DMA_QUEUES;
        // A hinted op's pieces take the run of queues from `hint * pieces` (see `DmaQueueHint`).
        let first =
            hint.map(|DmaQueueHint(h)| (u64::from(h) * u64::from(extent.div_ceil(per)) % u64::from(queues)) as u32);
        while start < extent {
            let count = per.min(extent - start);
            let engine = match first {
                Some(q) => Engine::Dma(((q + start / per) % queues) as u8),
                None => self.next_queue(),
            };
            let pieces: Vec<HwAp> = hw
                .iter()
                .map(|ap| if transposing { free_slice(ap, start, count) } else { partition_slice(ap, start, count) })
                .collect::<Option<_>>()
                .ok_or_else(|| BirError::Internal(format!("{id}: a piece of an offloaded op is out of range")))?;
            let op = build(&pieces).ok_or_else(|| BirError::Internal(format!("{id}: offloaded op lost an operand")))?;
            out.push((engine, vec![op]));
            start += count;
        }
        Ok(out)
    }
}

/// The seed's `extract_offloaded_memcpy_shape_bases`: the common iteration shape
/// `[partitions, free elements]` of an offloaded op's operands and each operand's base
/// (byte offset). Operands whose shapes differ are an error naming both shapes.
pub fn extract_offloaded_memcpy_shape_bases(aps: &[&HwAp]) -> Result<(Vec<u32>, Vec<u64>), BirError> {
    let shape_of = |ap: &HwAp| vec![ap.num_partitions, u32::try_from(ap.free_elems()).unwrap_or(u32::MAX)];
    let Some(first) = aps.first() else {
        return Err(BirError::Internal("an offloaded op without operands".into()));
    };
    let shape = shape_of(first);
    for ap in &aps[1..] {
        let other = shape_of(ap);
        if other != shape || ap.free_elems() != first.free_elems() {
            return Err(BirError::ShapeMismatch { a: shape, b: other });
        }
    }
    Ok((shape, aps.iter().map(|ap| ap.byte_offset).collect()))
}

/// Error for tensors whose addresses do not fit a `u64`.
fn too_large(tensor: &str, memory: &str) -> BirError {
    BirError::Unsupported(format!("tensor `{tensor}` does not fit: {memory} addresses would exceed 2^64 bytes"))
}

/// `ap.byte_offset` moved by `index` steps of `stride` elements; `None` if it leaves `u64`.
fn step_bytes(ap: &HwAp, stride: i64, index: u32) -> Option<u64> {
    let step = i128::from(stride) * i128::from(index) * i128::from(ap.dtype.size_bytes());
    u64::try_from(i128::from(ap.byte_offset) + step).ok()
}

/// Elements `[start, start + count)` of the (only) free dimension of an access pattern;
/// `None` if the piece's offset does not fit (never for an access of a verified function).
fn free_slice(ap: &HwAp, start: u32, count: u32) -> Option<HwAp> {
    let mut out = ap.clone();
    if let Some(d) = out.dims.first_mut() {
        out.byte_offset = step_bytes(ap, d.stride, start)?;
        d.num = count;
    }
    Some(out)
}

/// Partitions `[start, start + count)` of an access pattern; `None` if the piece's offset or
/// first partition does not fit (never for an access of a verified function).
fn partition_slice(ap: &HwAp, start: u32, count: u32) -> Option<HwAp> {
    let mut out = ap.clone();
    out.num_partitions = count;
    if ap.memory == Memory::Hbm {
        out.byte_offset = step_bytes(ap, ap.partition_stride, start)?;
    } else {
        let first = i128::from(ap.start_partition) + i128::from(ap.partition_stride) * i128::from(start);
        out.start_partition = u32::try_from(first).ok()?;
    }
    Some(out)
}

/// Lower a tiled offloaded FMA (`dst = src0 * src1 + dst` on SBUF tiles) to DMA-queue FMAs
/// spread over the queues.
fn codegen_tiled_offloaded_fma<F: FunctionView + ?Sized>(
    cx: &mut LowerCx<'_, F>,
    id: InstId,
    f: &OffloadedFmaData,
) -> Result<Vec<(Engine, Vec<Op>)>, BirError> {
    cx.spread(id, &[&f.dst, &f.src0, &f.src1], None, &fma_op)
}

/// Lower an untiled offloaded FMA over whole HBM tensors, spread over the queues by rows.
/// Its operands are already whole-tensor access patterns, so it is the tiled lowering.
fn codegen_offloaded_fma<F: FunctionView + ?Sized>(
    cx: &mut LowerCx<'_, F>,
    id: InstId,
    f: &OffloadedFmaData,
) -> Result<Vec<(Engine, Vec<Op>)>, BirError> {
    codegen_tiled_offloaded_fma(cx, id, f)
}

fn fma_op(v: &[HwAp]) -> Option<Op> {
    match v {
        [dst, src0, src1] => Some(Op::DmaFma { dst: dst.clone(), src0: src0.clone(), src1: src1.clone() }),
        _ => None,
    }
}

fn copy_op(v: &[HwAp], cast: CastMode) -> Option<Op> {
    match v {
        [dst, src] => Some(Op::DmaCopy { dst: dst.clone(), src: src.clone(), cast }),
        _ => None,
    }
}

/// Lower a tiled offloaded copy to DMA copies spread over the queues.
fn codegen_tiled_offloaded_mem_cpy<F: FunctionView + ?Sized>(
    cx: &mut LowerCx<'_, F>,
    id: InstId,
    c: &OffloadedMemCpyData,
) -> Result<Vec<(Engine, Vec<Op>)>, BirError> {
    cx.spread(id, &[&c.dst, &c.src], None, &|v| copy_op(v, CastMode::Rne))
}

/// Lower an untiled offloaded copy of whole HBM tensors, spread over the queues by rows.
/// Its operands are already whole-tensor access patterns, so it is the tiled lowering.
fn codegen_offloaded_mem_cpy<F: FunctionView + ?Sized>(
    cx: &mut LowerCx<'_, F>,
    id: InstId,
    c: &OffloadedMemCpyData,
) -> Result<Vec<(Engine, Vec<Op>)>, BirError> {
    codegen_tiled_offloaded_mem_cpy(cx, id, c)
}

/// Lower an offloaded cast (a copy that converts to the destination dtype).
fn codegen_offloaded_mem_cast<F: FunctionView + ?Sized>(
    cx: &mut LowerCx<'_, F>,
    id: InstId,
    c: &OffloadedMemCastData,
) -> Result<Vec<(Engine, Vec<Op>)>, BirError> {
    let cast = c.cast;
    cx.spread(id, &[&c.dst, &c.src], c.queue, &|v| copy_op(v, cast))
}

fn compute_engine(e: ComputeEngine) -> Engine {
    match e {
        ComputeEngine::Act => Engine::Act,
        ComputeEngine::Dve => Engine::Dve,
        ComputeEngine::Pool => Engine::Pool,
    }
}

/// Lower one matmul (the seed's `codegenMatMulOp`): a LoadStationary of the weights and a
/// MultiplyMoving that streams the moving operand into the bound PSUM region with the
/// group's accumulation flags and the perf mode.
fn codegen_mat_mul_op<F: FunctionView + ?Sized>(
    cx: &LowerCx<'_, F>,
    id: InstId,
    m: &MatMultData,
) -> Result<[Op; 2], BirError> {
    let (stationary, moving) = match m.perf_mode {
        PerfMode::None => (cx.hw_ap(id, Engine::Pe, &m.stationary)?, cx.hw_ap(id, Engine::Pe, &m.moving)?),
        PerfMode::DoubleRow => cayman_matmul_double_row_ap(cx, id, m)?,
        PerfMode::DoubleRowGen3 => {
            return Err(BirError::Unsupported(format!(
                "{id}: perf_mode=`double_row_gen3` is not supported on {}",
                cx.target
            )));
        }
    };
    let ls = Op::LoadStationary {
        src: stationary,
        perf_mode: m.perf_mode,
        tile_position: m.tile_position,
        tile_size: m.tile_size,
    };
    let mm = Op::MultiplyMoving {
        dst: cx.hw_ap(id, Engine::Pe, &m.dst)?,
        src: moving,
        acc: m.flags(),
        perf_mode: m.perf_mode,
        tile_position: m.tile_position,
        tile_size: m.tile_size,
    };
    Ok([ls, mm])
}

/// The double-row access patterns of a matmul (the seed's `cayman_matmul_double_row_ap`):
/// both operands keep their size-2 pack axis, so the PE contracts `2 * P` rows per pass.
fn cayman_matmul_double_row_ap<F: FunctionView + ?Sized>(
    cx: &LowerCx<'_, F>,
    id: InstId,
    m: &MatMultData,
) -> Result<(HwAp, HwAp), BirError> {
    if !cx.target.info().double_row {
        return Err(BirError::Unsupported(format!("{id}: perf_mode=`double_row` is not supported on {}", cx.target)));
    }
    Ok((add_double_row_ap(cx, id, &m.stationary)?, add_double_row_ap(cx, id, &m.moving)?))
}

/// Give an operand's hardware pattern its size-2 pack axis as the outermost free dimension
/// (the seed's `addDoubleRowAP`): contraction rows `k` and `k + P` share a partition.
fn add_double_row_ap<F: FunctionView + ?Sized>(
    cx: &LowerCx<'_, F>,
    id: InstId,
    t: &InstTile,
) -> Result<HwAp, BirError> {
    let mut ap = cx.hw_ap(id, Engine::Pe, t)?;
    ap.dims =
        t.ap.split_outer(2)
            .ok_or_else(|| BirError::Internal(format!("{id}: double_row operand without a size-2 pack axis")))?;
    if ap.dims.len() > Engine::Pe.max_free_dims() {
        return Err(BirError::TooManyStrides {
            inst: id,
            engine: Engine::Pe,
            dims: ap.dims.len(),
            max: Engine::Pe.max_free_dims(),
        });
    }
    Ok(ap)
}

#[cfg(test)]
mod tests;
