//! The functional simulator: memory images, the PE array, PSUM groups and the scheduler.

use std::sync::Arc;

use bir::{HwAp, Program};
use penguin::target::NUM_PARTITIONS;
use penguin::{CastMode, DType, Memory, PerfMode};

use crate::chip::Footprint;
use crate::convert::{decode_all, encode_all};
use crate::error::{InstRef, SimError};
use crate::gemm::PackedStationary;
use crate::memory::{Images, Walk, PSUM_PARTITION_BYTES};
use crate::race::{Race, RaceLog};

mod compute;
mod dataflow;
mod decode_cache;
mod deferred;
mod execute;
mod groups;
mod partition;
mod pe;
mod schedule;
mod top8;

use decode_cache::DecodeCache;
use deferred::{write_product, Deferred, JobQueue};
use execute::psum_position;
use groups::Groups;
pub(crate) use schedule::{with_workers, CoreRun, Slice};

/// The largest HBM image the simulator allocates (4 GiB).
pub const MAX_HBM_BYTES: u64 = 1 << 32;

/// Elements converted per step of a casting or same-memory copy (bounds the scratch space).
const CHUNK: usize = 4096;

/// The most threads a run uses.
pub const MAX_THREADS: usize = 64;

/// What one [`Simulator::run`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RunStats {
    /// Instructions executed.
    pub instructions: u64,
    /// MultiplyMoving instructions executed.
    pub matmuls: u64,
    /// Bytes written by DMA copies (elements x destination element size).
    pub dma_bytes: u64,
    /// Bytes read from HBM by any instruction.
    pub hbm_read_bytes: u64,
    /// Bytes written to HBM by any instruction.
    pub hbm_write_bytes: u64,
    /// Races found, in the order they were detected (at most
    /// [`MAX_REPORTED_RACES`](crate::MAX_REPORTED_RACES)).
    pub races: Vec<Race>,
    /// Races found beyond the reported ones.
    pub races_dropped: u64,
}

/// The weights held by the PE array after a LoadStationary.
struct Stationary {
    perf_mode: PerfMode,
    /// Dense rows per moving partition: the compression ratio of a sparse stationary, 1
    /// otherwise.
    sparse_cr: usize,
    /// Shared with the products still being computed on other threads.
    packed: Arc<PackedStationary>,
}

/// Reusable buffers of the hot paths.
#[derive(Default)]
struct Scratch {
    f32_a: Vec<f32>,
    f32_b: Vec<f32>,
    f32_c: Vec<f32>,
    bytes: Vec<u8>,
    xpack: Vec<f32>,
    product: Vec<f32>,
}

/// Everything an instruction can change, apart from the scheduler's own state.
struct Machine {
    images: Images,
    groups: Groups,
    stationary: Option<Stationary>,
    scratch: Scratch,
    double_row_ok: bool,
    /// Whether a PE transpose may write bf16/fp16 into PSUM (trn2 and later).
    transpose16_ok: bool,
    /// Recently decoded PE operands ([`decode_cache`]).
    decode: DecodeCache,
    /// Products computed on worker threads, during a [`Simulator::run`] with more than one
    /// thread; `None` computes each product where its matmul issues.
    deferred: Option<Deferred>,
}

impl Machine {
    /// Free the decode cache, the loaded stationary and the scratch buffers (up to tens of
    /// MiB): the next run starts without them, and the caller's next allocations (reading C,
    /// the check) reuse that memory instead of touching fresh pages.
    fn release_run_buffers(&mut self) {
        self.decode.clear();
        self.stationary = None;
        self.scratch = Scratch::default();
    }

    /// Forget cached operands that an SBUF write to `ap` may change.
    fn invalidate(&mut self, ap: &HwAp) {
        if ap.memory == Memory::Sbuf {
            self.decode.invalidate(ap.byte_region());
        }
    }
}

/// Per-instruction context: where it is and what it may touch in the race log.
struct Cx<'a> {
    at: InstRef,
    /// The engine's component in the run's clocks (engine index + the core's first).
    engine: usize,
    clock: &'a [u32],
    log: &'a mut RaceLog,
    first_race: usize,
    stats: &'a mut RunStats,
    /// Every HBM access, when a chip's run needs them for the races between its cores.
    footprint: Option<&'a mut Footprint>,
}

impl Cx<'_> {
    /// Record an access with the race detector and count its HBM bytes.
    fn record(&mut self, walk: &Walk, write: bool) {
        self.record_race(walk, write);
        self.count_hbm(walk.memory, walk.elems * walk.elem_size() as u64, write);
    }

    /// Record an access with the race detector only.
    fn record_race(&mut self, walk: &Walk, write: bool) {
        if let Some(bx) = walk.region {
            self.log.access(walk.memory, bx, write, self.at, self.engine, self.clock, self.first_race);
            if walk.memory == Memory::Hbm {
                if let Some(f) = self.footprint.as_deref_mut() {
                    f.record(bx, write, self.at, self.engine, self.clock);
                }
            }
        }
    }

    /// Count bytes moved to or from HBM.
    fn count_hbm(&mut self, memory: Memory, bytes: u64, write: bool) {
        match (memory, write) {
            (Memory::Hbm, false) => self.stats.hbm_read_bytes += bytes,
            (Memory::Hbm, true) => self.stats.hbm_write_bytes += bytes,
            (Memory::Sbuf | Memory::Psum, _) => {}
        }
    }
}

/// A functional simulator holding the memory images of one [`bir::Program`].
///
/// Memory persists across [`run`](Simulator::run)s; each run starts every stream from its
/// first instruction with all semaphores at zero.
pub struct Simulator {
    /// Shared with the caller when it handed the program over ([`Simulator::shared`]): a
    /// large program is not copied for the run.
    program: Arc<Program>,
    machine: Machine,
    races: Vec<Race>,
    /// Why the HBM image could not be allocated, reported by every later call.
    alloc_error: Option<SimError>,
    /// Threads a run computes PE products on.
    threads: usize,
    /// Stops a run ([`SimError::Interrupted`]) when set.
    cancel: Option<penguin::Cancel>,
    /// The HBM accesses of the last run, kept when asked ([`crate::ChipSimulator`]).
    footprint: Option<Footprint>,
}

/// Bytes per partition of the SBUF image: the target's capacity, or less when no access of
/// the program reaches that far (filling the unused tail would only cost time). Accesses
/// beyond the capacity stay out of bounds either way.
fn sbuf_image_bytes(program: &Program) -> usize {
    let capacity = program.target.info().statebuf_par_size_in_bytes as usize;
    let mut used = 0i64;
    for inst in program.streams.iter().flatten() {
        for (ap, _) in inst.op.accesses() {
            if ap.memory == Memory::Sbuf {
                let (_, _, _, hi) = ap.byte_region();
                used = used.max(hi);
            }
        }
    }
    usize::try_from(used).map_or(capacity, |u| u.div_ceil(64).saturating_mul(64).min(capacity))
}

impl Simulator {
    /// A simulator for `program`: HBM zeroed, SBUF and PSUM filled with `0xFF` bytes so
    /// every float read before it is written is NaN.
    ///
    /// An HBM size that cannot be allocated does not panic: every later call returns
    /// [`SimError::HbmTooLarge`].
    pub fn new(program: &Program) -> Simulator {
        Simulator::shared(Arc::new(program.clone()))
    }

    /// [`Simulator::new`] on a program the caller shares rather than copies (an 8192^3
    /// GEMM's program is about 75 MiB).
    pub fn shared(program: Arc<Program>) -> Simulator {
        let sbuf_partition_bytes = sbuf_image_bytes(&program);
        let parts = NUM_PARTITIONS as usize;
        let (hbm, alloc_error) = match alloc_hbm(program.hbm_size) {
            Some(hbm) => (hbm, None),
            None => (Vec::new(), Some(SimError::HbmTooLarge { bytes: program.hbm_size })),
        };
        let images = Images {
            hbm,
            sbuf: vec![0xFF; parts * sbuf_partition_bytes],
            psum: vec![0xFF; parts * PSUM_PARTITION_BYTES],
            sbuf_partition_bytes,
        };
        let words = images.psum.len() / 4;
        let (double_row_ok, transpose16_ok) =
            (program.target.info().double_row, program.target != penguin::Target::Trn1);
        Simulator {
            program,
            machine: Machine {
                images,
                groups: Groups { open: vec![false; words], open_words: 0 },
                stationary: None,
                scratch: Scratch::default(),
                double_row_ok,
                transpose16_ok,
                decode: DecodeCache::new(parts * sbuf_partition_bytes),
                deferred: None,
            },
            races: Vec::new(),
            alloc_error,
            threads: std::thread::available_parallelism().map_or(1, |t| t.get()).min(MAX_THREADS),
            cancel: None,
            footprint: None,
        }
    }

    /// A simulator for one core of a chip whose HBM image another core's simulator holds:
    /// no HBM is allocated; [`swap_hbm`](Simulator::swap_hbm) hands it the image.
    pub(crate) fn without_hbm(program: &Program) -> Simulator {
        let mut small = program.clone();
        small.hbm_size = 0;
        let mut sim = Simulator::new(&small);
        sim.program = Arc::new(program.clone());
        sim
    }

    /// Exchange the HBM image with `hbm` (the cores of a chip pass it along).
    pub(crate) fn swap_hbm(&mut self, hbm: &mut Vec<u8>) {
        std::mem::swap(&mut self.machine.images.hbm, hbm);
    }

    /// Keep every HBM access of the next runs (see [`take_footprint`](Simulator::take_footprint)),
    /// with the clocks that order them when `ordered` (the chip's cores share semaphores).
    pub(crate) fn keep_footprint(&mut self, ordered: bool) {
        let mut f = Footprint::default();
        f.set_ordered(ordered);
        self.footprint = Some(f);
    }

    /// The HBM accesses of the last run, if they were kept.
    pub(crate) fn take_footprint(&mut self) -> Option<Footprint> {
        self.footprint.as_mut().map(std::mem::take)
    }

    /// Why the HBM image could not be allocated, if it could not.
    pub(crate) fn alloc_error(&self) -> Option<&SimError> {
        self.alloc_error.as_ref()
    }

    /// Stop a run with [`SimError::Interrupted`] within a few instructions of `cancel` being
    /// set (the memory images then hold a partial run).
    pub fn set_cancel(&mut self, cancel: Option<penguin::Cancel>) {
        self.cancel = cancel;
    }

    /// Compute PE products on `threads` threads (at least 1; 1 computes each product where
    /// its matmul issues). The default is the number of cores, at most [`MAX_THREADS`].
    /// The results are the same bytes for any number.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.clamp(1, MAX_THREADS);
    }

    /// The number of threads a run uses (see [`set_threads`](Simulator::set_threads)).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The program being simulated.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The races found by the last [`run`](Simulator::run).
    pub fn races(&self) -> &[Race] {
        &self.races
    }

    /// The byte range of an HBM tensor in the image, checked.
    fn tensor_range(&self, name: &str) -> Result<(DType, std::ops::Range<usize>), SimError> {
        if let Some(e) = &self.alloc_error {
            return Err(e.clone());
        }
        let t = self.program.hbm_tensor(name).ok_or_else(|| SimError::UnknownTensor { name: name.to_string() })?;
        let outside = || SimError::TensorOutsideHbm {
            name: name.to_string(),
            address: t.address,
            hbm_size: self.program.hbm_size,
        };
        let bytes = t
            .shape
            .iter()
            .try_fold(u64::from(t.dtype.size_bytes()), |acc, d| acc.checked_mul(*d))
            .ok_or_else(outside)?;
        let end = t.address.checked_add(bytes).ok_or_else(outside)?;
        if end > self.machine.images.hbm.len() as u64 {
            return Err(outside());
        }
        Ok((t.dtype, t.address as usize..end as usize))
    }

    /// Store the raw little-endian element bytes of an HBM tensor.
    pub fn write_hbm_tensor(&mut self, name: &str, bytes: &[u8]) -> Result<(), SimError> {
        let (_, range) = self.tensor_range(name)?;
        if bytes.len() != range.len() {
            return Err(SimError::TensorSize {
                name: name.to_string(),
                expected: range.len() as u64,
                got: bytes.len() as u64,
                unit: "bytes",
            });
        }
        self.machine.images.hbm[range].copy_from_slice(bytes);
        Ok(())
    }

    /// Store f32 values into an HBM tensor, each converted to the tensor's dtype (RNE).
    pub fn write_hbm_f32(&mut self, name: &str, values: &[f32]) -> Result<(), SimError> {
        let (dtype, range) = self.tensor_range(name)?;
        let size = dtype.size_bytes() as usize;
        let elems = range.len() / size;
        if values.len() != elems {
            return Err(SimError::TensorSize {
                name: name.to_string(),
                expected: elems as u64,
                got: values.len() as u64,
                unit: "elements",
            });
        }
        self.write_hbm_f32_at(name, 0, values)
    }

    /// Store f32 values into elements `first..first + values.len()` of an HBM tensor (its
    /// elements in storage order), each converted to the tensor's dtype (RNE), so that a
    /// large tensor can be written piece by piece: the pieces leave the bytes that
    /// [`write_hbm_f32`](Self::write_hbm_f32) of the whole leaves.
    pub fn write_hbm_f32_at(&mut self, name: &str, first: usize, values: &[f32]) -> Result<(), SimError> {
        let (dtype, range) = self.tensor_range(name)?;
        let size = dtype.size_bytes() as usize;
        let elems = range.len() / size;
        let end = first.checked_add(values.len()).filter(|&e| e <= elems).ok_or_else(|| SimError::TensorSize {
            name: name.to_string(),
            expected: elems as u64,
            got: (first as u64).saturating_add(values.len() as u64),
            unit: "elements",
        })?;
        let bytes = range.start + first * size..range.start + end * size;
        encode_all(dtype, CastMode::Rne, values, &mut self.machine.images.hbm[bytes]);
        Ok(())
    }

    /// The raw little-endian element bytes of an HBM tensor.
    pub fn read_hbm_tensor(&self, name: &str) -> Result<Vec<u8>, SimError> {
        let (_, range) = self.tensor_range(name)?;
        Ok(self.machine.images.hbm[range].to_vec())
    }

    /// A digest of an HBM tensor's bytes (not cryptographic: equal bytes give equal
    /// digests, and a changed byte almost surely changes it), to tell that a run left an
    /// input as it was without keeping a copy of it.
    pub fn hbm_tensor_digest(&self, name: &str) -> Result<u64, SimError> {
        let (_, range) = self.tensor_range(name)?;
        let bytes = &self.machine.images.hbm[range];
        let mix = |h: u64, x: u64| (h ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
        let mut words = bytes.chunks_exact(8);
        let mut h = (bytes.len() as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        for w in &mut words {
            h = mix(h, u64::from_le_bytes(w.try_into().unwrap_or_default()));
        }
        Ok(words.remainder().iter().fold(h, |h, &b| mix(h, u64::from(b))))
    }

    /// The values of an HBM tensor, decoded to f32.
    pub fn read_hbm_f32(&self, name: &str) -> Result<Vec<f32>, SimError> {
        let (dtype, range) = self.tensor_range(name)?;
        let size = dtype.size_bytes() as usize;
        let mut out = vec![0f32; range.len() / size];
        decode_all(dtype, &self.machine.images.hbm[range], &mut out);
        Ok(out)
    }

    /// The HBM tensors `names`, decoded to f32 in that order, with this simulator dropped
    /// before any narrower than f32 is decoded: fp32 tensors are decoded from the image, the
    /// bytes of the others are copied out of it, the image and the on-chip memories are
    /// freed, and each copy is decoded and freed in turn. Reading a large kernel's output and
    /// inputs this way never holds their widened values beside the HBM image (an 8192^3
    /// GEMM's fp32 C and its bf16 A and B: 1.0 GiB at most, against 1.25 GiB with
    /// [`read_hbm_f32`](Simulator::read_hbm_f32) of each).
    pub fn into_hbm_f32(self, names: &[&str]) -> Result<Vec<Vec<f32>>, SimError> {
        let decode = |dtype: DType, bytes: &[u8]| {
            let mut out = vec![0f32; bytes.len() / dtype.size_bytes() as usize];
            decode_all(dtype, bytes, &mut out);
            out
        };
        /// A tensor decoded, or its bytes to decode.
        enum Read {
            Values(Vec<f32>),
            Bytes(DType, Vec<u8>),
        }
        let read = names
            .iter()
            .map(|name| {
                let (dtype, range) = self.tensor_range(name)?;
                let bytes = &self.machine.images.hbm[range];
                Ok(if dtype.size_bytes() >= 4 {
                    Read::Values(decode(dtype, bytes))
                } else {
                    Read::Bytes(dtype, bytes.to_vec())
                })
            })
            .collect::<Result<Vec<_>, SimError>>()?;
        drop(self);
        Ok(read
            .into_iter()
            .map(|r| match r {
                Read::Values(values) => values,
                Read::Bytes(dtype, bytes) => decode(dtype, &bytes),
            })
            .collect())
    }

    /// Execute every stream to its end, in an order that respects the semaphores.
    ///
    /// Engines are visited round-robin, each running as far as its waits allow. Races do
    /// not stop the run; they are returned in [`RunStats::races`] and kept for
    /// [`races`](Simulator::races).
    ///
    /// With more than one thread (see [`set_threads`](Simulator::set_threads)) the PE
    /// products are computed on worker threads while the scheduler goes on; the results,
    /// statistics, races and errors are the same as with one.
    pub fn run(&mut self) -> Result<RunStats, SimError> {
        if let Some(e) = &self.alloc_error {
            return Err(e.clone());
        }
        with_workers(std::slice::from_mut(self), |sims| {
            let sim = sims.first_mut().ok_or_else(|| SimError::Internal("no simulator".into()))?;
            let mut run = CoreRun::new(&sim.program, 1, 0)?;
            match sim.run_slice(&mut run)? {
                Slice::Finished => Ok(sim.finish(run)),
                Slice::Blocked { stuck, .. } => Err(SimError::Deadlock { stuck }),
            }
        })
    }

    /// Add the products still pending into PSUM, or, for an interrupted run, drop them; then
    /// give back what only the run needed.
    fn settle(&mut self, interrupted: bool) {
        if interrupted {
            self.machine.abandon_deferred();
        } else {
            self.machine.settle_all();
        }
        self.machine.release_run_buffers();
    }
}

/// Allocate a zeroed HBM image, or `None` when it is too large.
fn alloc_hbm(bytes: u64) -> Option<Vec<u8>> {
    if bytes > MAX_HBM_BYTES {
        return None;
    }
    let n = usize::try_from(bytes).ok()?;
    // Probe that the allocation can be made (an error, not an abort, when it cannot), then
    // take zeroed memory from the allocator: the operating system's zero pages, not a memset.
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(n).ok()?;
    drop(probe);
    Some(vec![0; n])
}
