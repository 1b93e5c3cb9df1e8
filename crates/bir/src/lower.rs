//! Lowering a verified Penguin function to a BIR program.
//!
//! Each Penguin instruction becomes one or more instructions on one engine stream: matmuls
//! on the PE as LoadStationary + MultiplyMoving ([`codegen_mat_mul_op`]), DMA copies on the
//! 16 DMA queues in turn, tensor copies and memsets on the engine they name. A dependency
//! edge between instructions on different engines becomes a semaphore: every engine has one
//! semaphore that its instructions with cross-engine dependents increment, and a consumer
//! waits until the producer's engine semaphore reaches the count of the producer.

use penguin::{
    ComputeEngine, FunctionView, InstData, InstId, InstTile, MatMultData, Memory, PerfMode, Target, TensorId, Verified,
};

use crate::error::BirError;
use crate::program::{BirInst, Engine, HbmRole, HbmTensor, HwAp, Op, Program, SemId, Wait, NUM_ENGINES};

/// HBM tensors are aligned to this many bytes.
const HBM_ALIGN: u64 = 64;

struct LowerCx<'a, F: ?Sized> {
    func: &'a F,
    target: Target,
    /// Per tensor: HBM byte address, or on-chip byte offset inside a partition.
    address: Vec<u64>,
    next_dma_queue: u8,
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
pub fn lower<F: FunctionView + ?Sized>(func: Verified<'_, F>, target: Target) -> Result<Program, BirError> {
    let f = func.get();
    let mut cx = LowerCx {
        func: f,
        target,
        address: Vec::with_capacity(f.num_tensors()),
        next_dma_queue: 0,
        program: Program::new(f.kernel_name(), target),
    };
    cx.assign_addresses()?;
    let mut placement: Vec<Option<Placement>> = vec![None; f.num_insts()];
    for &id in f.layout() {
        let inst = f.inst(id).ok_or_else(|| BirError::Internal(format!("{id} missing from a verified function")))?;
        let (engine, ops) = cx.lower_inst(id, inst)?;
        let stream = &mut cx.program.streams[engine.index()];
        let first = stream.len();
        stream.extend(ops.into_iter().map(|op| BirInst { op, waits: Vec::new(), signal: None, origin: Some(id) }));
        let last = cx.program.streams[engine.index()].len() - 1;
        placement[id.index()] = Some(Placement { engine, first, last });
    }
    cx.wire_semaphores(&placement)?;
    Ok(cx.program)
}

impl<F: FunctionView + ?Sized> LowerCx<'_, F> {
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
                    let end = a + t.bytes_per_partition();
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
                    hbm_next = (a + t.num_bytes()).div_ceil(HBM_ALIGN) * HBM_ALIGN;
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
                    let a = match t.address {
                        Some(a) => a,
                        None => {
                            let a = *end;
                            *end += t.bytes_per_partition();
                            a
                        }
                    };
                    if t.memory == Memory::Sbuf && a + t.bytes_per_partition() > capacity {
                        return Err(BirError::SbufCapacity {
                            tensor: t.name.clone(),
                            needed: a + t.bytes_per_partition(),
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
            byte_offset: base + offset * size,
            dims,
        })
    }

    fn lower_inst(&mut self, id: InstId, inst: &InstData) -> Result<(Engine, Vec<Op>), BirError> {
        match inst {
            InstData::MatMult(m) => Ok((Engine::Pe, codegen_mat_mul_op(self, id, m)?.to_vec())),
            InstData::DmaCopy(d) => {
                let engine = Engine::Dma(self.next_dma_queue);
                self.next_dma_queue = (self.next_dma_queue + 1) % penguin::target::NUM_DMA_QUEUES as u8;
                let op = Op::DmaCopy {
                    dst: self.hw_ap(id, engine, &d.dst)?,
                    src: self.hw_ap(id, engine, &d.src)?,
                    cast: d.cast,
                };
                Ok((engine, vec![op]))
            }
            InstData::TensorCopy(c) => {
                let engine = compute_engine(c.engine);
                let op = Op::TensorCopy { dst: self.hw_ap(id, engine, &c.dst)?, src: self.hw_ap(id, engine, &c.src)? };
                Ok((engine, vec![op]))
            }
            InstData::Memset(m) => {
                let engine = compute_engine(m.engine);
                Ok((engine, vec![Op::Memset { dst: self.hw_ap(id, engine, &m.dst)?, value: m.value }]))
            }
            InstData::MatMultSparse(_)
            | InstData::TensorTensor(_)
            | InstData::TiledOffloadedFma(_)
            | InstData::TiledOffloadedMemCpy(_)
            | InstData::OffloadedFma(_)
            | InstData::OffloadedMemCpy(_)
            | InstData::OffloadedMemCast(_)
            | InstData::Transpose(_)
            | InstData::DmaGather(_)
            | InstData::DmaScatterAdd(_) => {
                Err(BirError::Unsupported(format!("{id}: lowering of {} is not implemented yet", inst.opcode())))
            }
        }
    }

    fn wire_semaphores(&mut self, placement: &[Option<Placement>]) -> Result<(), BirError> {
        self.program.semaphores = Engine::all().map(|e| e.name()).collect();
        // Pass 1: which producers signal.
        let mut needs_signal: Vec<Vec<bool>> = self.program.streams.iter().map(|s| vec![false; s.len()]).collect();
        let mut waits_of: Vec<(Placement, Vec<Placement>)> = Vec::new();
        for &id in self.func.layout() {
            let Some(c) = placement.get(id.index()).copied().flatten() else { continue };
            let mut producers = Vec::new();
            for dep in self.func.deps(id) {
                let p = placement
                    .get(dep.from.index())
                    .copied()
                    .flatten()
                    .ok_or_else(|| BirError::Internal(format!("{id} depends on unplaced {}", dep.from)))?;
                if p.engine != c.engine {
                    needs_signal[p.engine.index()][p.last] = true;
                    producers.push(p);
                }
            }
            if !producers.is_empty() {
                waits_of.push((c, producers));
            }
        }
        // Pass 2: the semaphore count each signalling instruction reaches.
        let mut count_at: Vec<Vec<u32>> = Vec::with_capacity(NUM_ENGINES);
        for (e, stream) in self.program.streams.iter_mut().enumerate() {
            let mut n = 0u32;
            let mut counts = vec![0u32; stream.len()];
            for (i, inst) in stream.iter_mut().enumerate() {
                if needs_signal[e][i] {
                    n += 1;
                    inst.signal = Some(SemId(e as u32));
                }
                counts[i] = n;
            }
            count_at.push(counts);
        }
        // Pass 3: one wait per producer engine, for the latest producer.
        for (c, producers) in waits_of {
            let mut best = [0u32; NUM_ENGINES];
            for p in producers {
                let v = count_at[p.engine.index()][p.last];
                best[p.engine.index()] = best[p.engine.index()].max(v);
            }
            let waits: Vec<Wait> = best
                .iter()
                .enumerate()
                .filter(|(_, v)| **v > 0)
                .map(|(e, v)| Wait { sem: SemId(e as u32), value: *v })
                .collect();
            self.program.streams[c.engine.index()][c.first].waits = waits;
        }
        Ok(())
    }
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
    match m.perf_mode {
        PerfMode::None => {}
        PerfMode::DoubleRow | PerfMode::DoubleRowGen3 => {
            return Err(BirError::Unsupported(format!(
                "{id}: perf_mode={} lowering is not implemented yet; use perf_mode=none",
                m.perf_mode
            )));
        }
    }
    let ls = Op::LoadStationary {
        src: cx.hw_ap(id, Engine::Pe, &m.stationary)?,
        perf_mode: m.perf_mode,
        tile_position: m.tile_position,
        tile_size: m.tile_size,
    };
    let mm = Op::MultiplyMoving {
        dst: cx.hw_ap(id, Engine::Pe, &m.dst)?,
        src: cx.hw_ap(id, Engine::Pe, &m.moving)?,
        acc: m.flags(),
        perf_mode: m.perf_mode,
        tile_position: m.tile_position,
        tile_size: m.tile_size,
    };
    Ok([ls, mm])
}
