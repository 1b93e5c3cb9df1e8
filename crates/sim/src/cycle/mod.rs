//! The cycle model: an event-driven timeline of a BIR program's engine streams, built from
//! the hardware facts of SPEC section 2 without data.
//!
//! [`model`] (the target's built-in [`HwProfile`]) or [`model_with`] (any profile) replays
//! every stream in order, honouring semaphores, and gives each instruction
//! a start and an end time from per-instruction costs. It needs no memory images and runs in
//! time linear in the instruction count (a few hundred nanoseconds per instruction).
//! [`model_looped`] gives the same figures for a [`bir::LoopedProgram`] without unrolling it,
//! jumping over the repeating periods of its steady state (see the `looped` module).
//!
//! # Scheduling
//! - Streams are in order. An instruction starts at the later of the time its engine can
//!   take it and the time every semaphore it waits on reached its value; the engine's own
//!   readiness is per engine kind (below).
//! - A signal takes effect when its instruction completes. Engines retire in order: a
//!   signal never takes effect before the signals of earlier instructions of the same stream
//!   (this only matters on the PE, whose row tiles may complete out of order), so the
//!   lowering's "count = position in the stream" semaphore scheme stays exact.
//! - The replay always commits the instruction with the earliest possible start (ties to
//!   the lower engine index), so starts are committed in time order. Shared resources (the
//!   weight-load port, the DMA engines, HBM) are therefore granted in start order.
//!
//! # Costs and the SPEC facts they come from
//! - **PE** ("MM issues about every `max(N, 64)` TensorE cycles for bf16/fp16/fp8, fp32
//!   inputs are 4x slower"): a MultiplyMoving occupies its PE cells for `max(N, 64)` cycles
//!   at the TensorE clock, `N` the moving free size (in `double_row` without the pack axis of
//!   2), times 4 when the moving operand or the loaded weights are 4-byte (fp32). `K` does
//!   not change the time (the array is systolic), so `double_row` does K = 256 in the time
//!   of K = 128. Pipeline fill and drain are not modeled: the result counts as written when
//!   the issue slot ends.
//! - **LoadStationary** ("up to 4x faster than an MM of the same free size and can load in
//!   the background while the previous MM runs"): `max(M, 64) / 4` cycles (x4 for fp32), `M`
//!   the stationary free size without the pack axis. Each PE cell has a shadow weight
//!   buffer: an LS may start once the previous LS is done (one load port) and the MM that
//!   consumed the previous weights of its cells has started; the MM that uses the weights
//!   waits for the LS to finish. A sparse LS costs like a dense one of the same free size.
//! - **Sparse matmul** (the data path is `5x128` input elements per cycle on trn2/trn3,
//!   `pe_sparse_input_lanes` [S2][S3]): the MultiplyMoving after a sparse LS streams a moving
//!   operand `[K', CR, N]`; each of its `N` columns needs `CR` moving elements and one
//!   stationary element per PE row, the same count that gives the dense figures (BF16
//!   `2x128` = 1 + 1, double-row FP8 `4x128` = 2 + 2). So it takes `max(N, 64)` cycles times
//!   `max(1, (CR + 1) / lanes)`: with 5 lanes one column per cycle for CR <= 4, the time of a
//!   dense pass over `CR` times the contraction rows (4:16: 4x dense, the 316 TFLOPS sparse
//!   peak of trn2 [S2]).
//! - **Transpose** costs like an MM whose moving free size is the source's free size, on the
//!   whole array; it does not touch the shadow weights.
//! - **Row/column tiling** ("tiles in disjoint PE rows/columns may run concurrently"): the
//!   array is a 4x4 grid of 32x32 cells; an MM occupies the cells of its `tile_position` /
//!   `tile_size`. The PE issues in order (no instruction starts before the previous PE
//!   instruction started), but MMs on disjoint cells overlap.
//! - **DMA** (every figure a key of the [`HwProfile`], with its source): a transfer waits
//!   `dma_fixed_ns` (descriptor setup, synchronization, semaphore-to-start: ~1.3 us [S11]),
//!   then its data moves. A queue keeps up to `dma_queue_depth` transfers in flight, so the
//!   fixed latencies of consecutive transfers on one queue overlap; the next transfer starts
//!   at once, or when the first in-flight one ends once the queue is full. Queues overlap
//!   freely; their data shares the engines and HBM.
//! - **DMA engines** ("a descriptor moves one contiguous run per partition; the 16 engines
//!   each serve 8 partitions"): the transfer is served by the engines of the 8-partition
//!   groups of its on-chip operand (HBM-to-HBM: `ceil(rows / 8)` engines from the queue's
//!   own), each taking an equal share of its descriptors. An engine prepares the next
//!   descriptor while the current one's data streams, so each costs
//!   `max(dma_descriptor_ns, run / dma_engine_bytes_per_ns)`; `dma_descriptor_ns` is the data
//!   time of a 2 KiB run, the run size from which bandwidth approaches peak [S11]. A run is the
//!   element count contiguous in every data operand, in bytes of the widest operand dtype (a
//!   casting copy streams each element at the wider width). Each engine is a server shared by
//!   all queues, granted in start order.
//! - **Transposing DMA** (an HBM operand whose partition stride is 1 and whose innermost free
//!   stride is not): a transposing read on trn2/trn3 is a DMA transpose whose run is the
//!   contiguous extent along the partition dimension, at `dma_transpose_hbm_fraction` of copy
//!   throughput [S2]; trn1 has none, and a transposing write or DMA arithmetic moves one
//!   element per descriptor.
//! - **DMA FMA / gather / scatter-add** use the same model. The engines stream every element
//!   they read: both factors and the addend of an FMA, the indexed table rows and the indices
//!   of a gather, the source, indices and table rows of a scatter-add. A gather/scatter run is
//!   one table row. FMA and scatter-add (arithmetic in the DMA) run at `dma_compute_fraction`
//!   of copy throughput [S3].
//! - **HBM** ("HBM bandwidth per core"): one server shared by all queues, granted in start
//!   order: a transfer's [`Op::hbm_bytes`], each run rounded up to whole `hbm_burst_bytes`
//!   granules, occupy it for `bytes / hbm_bytes_per_ns`; the transfer ends no earlier than HBM
//!   has served them.
//! - **ACT / DVE / POOL**: each instruction's documented cost in engine cycles at the
//!   engine's clock (`compute.rs`; `docs/isa-costs.md` cites each formula), `N` the elements
//!   per partition: `max(MIN_II, N)` for tensor_copy, activation (+ MIN_II with row sums),
//!   tensor_scalar, bn_stats and a tensor_tensor with a PSUM input or all-bf16 contiguous
//!   add/multiply/subtract, `max(MIN_II, 2N)` for other tensor_tensors, `max(MIN_II, 8N)` for
//!   a VectorE reciprocal, `N/2` for a bf16 add/maximum reduction, `13 N / 3` for bn_aggr,
//!   `GPSIMD_START + N` for affine_select and iota, `GPSIMD_START + 4N` for GpSimd's rsqrt,
//!   `max(MIN_II, N/2)` for a zero memset of a 16-bit float tile. SP (which only memsets)
//!   uses the GpSimd clock.
//!
//! # Report
//! Busy time is the union of an engine's instruction intervals (LS overlapping an MM counts
//! once). The DMA figure of [`EngineBusy`] is the mean over the 16 queues. HFU is
//! `matmul_flops / (peak x total)`: FLOPs are `2 K M N` per MultiplyMoving with `K` the
//! contraction rows that multiply (moving partitions, x2 in `double_row`; a sparse matmul's
//! kept stationary rows), `M` the result partitions, `N` the moving columns (the free size
//! without a pack or `CR` axis). The peak is
//! `2 x 128 x 128 x pe_ghz` FLOP/ns, /4 for fp32 operands, x2 in `double_row`, for the
//! matmul flavour that issued the most FLOPs in the program (bf16 dense if it has none).

mod chip;
mod compute;
mod dma;
mod epoch;
mod looped;
mod path;
mod pe;
mod report;
mod signals;
mod source;

use bir::{BirInst, Engine, Op, Program, SemId, NUM_ENGINES};
use penguin::HwProfile;

use crate::error::{InstRef, SimError, Stuck};

use dma::{DmaState, SharedHbm};
use epoch::{Jumped, Ran};
use path::PathTrack;
use pe::PeState;
use signals::SemLog;
use source::{Flat, Source};

pub(crate) use chip::merge_chip;
pub use chip::{model_chip, model_chip_cancellable, ChipReport};
pub use report::{CycleReport, EngineBusy, Slice};

pub use looped::{
    model_looped, model_looped_cancellable, model_looped_critical, model_looped_default, model_looped_stats,
    model_looped_with, LoopedOptions, LoopedStats,
};

/// Model the timeline of a program.
///
/// Errors: [`SimError::TooManyStreams`], [`SimError::WrongEngine`] and
/// [`SimError::UnknownSemaphore`] for malformed programs (a verified program has none), and
/// [`SimError::Deadlock`] when some stream waits for a count its semaphore never reaches.
pub fn model(program: &Program) -> Result<CycleReport, SimError> {
    model_with(program, &program.target.profile())
}

/// Model the timeline of a program with the figures of `profile` (e.g. one overridden with
/// `--hw` or fitted by `ntile calibrate`); the ISA facts (whether the DMA can transpose) stay
/// those of the program's target. Errors as [`model`].
pub fn model_with(program: &Program, profile: &HwProfile) -> Result<CycleReport, SimError> {
    model_cancellable(program, profile, None)
}

/// [`model_with`], stopped with [`SimError::Interrupted`] within a thousand instructions of
/// `cancel` being set.
pub fn model_cancellable(
    program: &Program,
    profile: &HwProfile,
    cancel: Option<&penguin::Cancel>,
) -> Result<CycleReport, SimError> {
    let profile = HwProfile { target: program.target, ..*profile };
    let mut replay = Replay::new(Flat::new(program), program.semaphores.len(), profile, true, program.num_insts())?;
    // Every signal is kept: size each semaphore's log once instead of regrowing it.
    let mut counts = vec![0usize; replay.signals.len()];
    for sem in program.streams.iter().flatten().filter_map(|inst| inst.signal) {
        if let Some(n) = counts.get_mut(sem.0 as usize) {
            *n += 1;
        }
    }
    for (log, n) in replay.signals.iter_mut().zip(counts) {
        log.times.reserve_exact(n);
    }
    match cancel {
        None => Ok(replay.run(&mut NoObserver)?.report),
        Some(cancel) => Ok(replay.run(&mut Polled { cancel, commits: 0 })?.report),
    }
}

/// Something the replay consults before each commit (the steady-state extrapolation of
/// looped programs); the unrolled replay uses [`NoObserver`], which compiles to nothing.
trait Observer<S> {
    /// Whether the replay needs to call it (false: the call is compiled out).
    const ACTIVE: bool = true;
    /// Engine `e` is about to start its next instruction at `start` (the earliest start of
    /// every engine). Returns whether the observer moved the replay state (then every
    /// engine's state is re-read and the next commit chosen again).
    fn before_commit(&mut self, r: &mut Replay<S>, e: usize, start: f64) -> Result<bool, SimError>;
}

/// The observer that does nothing.
struct NoObserver;

impl<S> Observer<S> for NoObserver {
    const ACTIVE: bool = false;
    #[inline(always)]
    fn before_commit(&mut self, _: &mut Replay<S>, _: usize, _: f64) -> Result<bool, SimError> {
        Ok(false)
    }
}

/// The observer that polls a cancellation flag every [`penguin::cancel::POLL_EVERY`] commits.
struct Polled<'c> {
    cancel: &'c penguin::Cancel,
    commits: usize,
}

impl<S> Observer<S> for Polled<'_> {
    fn before_commit(&mut self, _: &mut Replay<S>, _: usize, _: f64) -> Result<bool, SimError> {
        self.commits += 1;
        if penguin::cancel::stopped_every(Some(self.cancel), self.commits) {
            return Err(SimError::Interrupted);
        }
        Ok(false)
    }
}

/// Where an engine's next instruction stands.
#[derive(Clone, Copy, Debug)]
enum State {
    /// The stream is done.
    Finished,
    /// A wait on this semaphore does not hold yet.
    Blocked(SemId),
    /// Every wait holds; it can start at this time.
    Ready(Candidate),
}

/// Where an engine's next instruction can start, and how long semaphores held it.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    start: f64,
    wait_ns: f64,
}

/// Per-engine replay state.
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    /// Next instruction of the stream.
    next: usize,
    /// When a serial engine (everything but the PE) is free again.
    free_at: f64,
    /// When the latest instruction retired (signals take effect in order).
    retired: f64,
    /// Busy time so far and the end of the covered interval (starts are monotone per engine).
    busy: f64,
    covered_until: f64,
}

struct Replay<S> {
    src: S,
    engines: Vec<Engine>,
    cursors: Vec<Cursor>,
    /// Per semaphore: its signals.
    signals: Vec<SemLog>,
    pe: PeState,
    dma: DmaState,
    profile: HwProfile,
    /// Keep one [`Slice`] per instruction (and every signal time, for exact `wait_ns`).
    keep_slices: bool,
    slices: Vec<Slice>,
    total_ns: f64,
    hbm_bytes: u64,
    /// What steady-state jumps skipped (the times above are local: see [`epoch`]).
    jumped: Jumped,
    /// The PE and DMA state of cores 1.. of a chip (core 0's are `pe` and `dma`): stream `e`
    /// is engine `e % NUM_ENGINES` of core `e / NUM_ENGINES`.
    others: Vec<(PeState, DmaState)>,
    /// The HBM bandwidth the cores share (a chip of several cores only).
    shared: Option<SharedHbm>,
    /// The core of each slice (a chip of several cores only).
    slice_cores: Vec<u8>,
    /// HBM bytes per core.
    core_hbm: Vec<u64>,
    /// The critical path followed forward (see the `path` module), when asked for.
    path: Option<PathTrack>,
}

/// Signal logs of a lazy source longer than this are pruned when slices are not kept.
const PRUNE_AT: usize = 256;

impl<S: Source> Replay<S> {
    fn new(src: S, semaphores: usize, profile: HwProfile, keep_slices: bool, insts: usize) -> Result<Self, SimError> {
        Replay::on_cores(src, semaphores, profile, keep_slices, insts, 1)
    }

    /// A replay of `cores` cores' streams, `NUM_ENGINES` per core, sharing HBM.
    fn on_cores(
        src: S,
        semaphores: usize,
        profile: HwProfile,
        keep_slices: bool,
        insts: usize,
        cores: usize,
    ) -> Result<Self, SimError> {
        let max = NUM_ENGINES * cores.max(1);
        if src.streams() > max {
            return Err(SimError::TooManyStreams { streams: src.streams(), max });
        }
        let engines: Vec<Engine> = (0..src.streams()).filter_map(|e| Engine::from_index(e % NUM_ENGINES)).collect();
        let n = engines.len();
        let others = (1..cores).map(|_| (PeState::new(&profile), DmaState::new(profile))).collect();
        let shared =
            (cores > 1).then_some(SharedHbm { free: 0.0, bytes_per_ns: profile.hbm_shared_bytes_per_ns, busy_ns: 0.0 });
        Ok(Replay {
            src,
            cursors: vec![Cursor::default(); n],
            engines,
            signals: vec![SemLog::default(); semaphores],
            pe: PeState::new(&profile),
            dma: DmaState::new(profile),
            profile,
            keep_slices,
            slices: Vec::with_capacity(if keep_slices { insts } else { 0 }),
            total_ns: 0.0,
            hbm_bytes: 0,
            jumped: Jumped::new(n),
            others,
            shared,
            slice_cores: Vec::new(),
            core_hbm: vec![0; cores.max(1)],
            path: None,
        })
    }

    /// The PE state of stream `e`'s core.
    #[inline(always)]
    fn pe_of(&self, e: usize) -> &PeState {
        match e / NUM_ENGINES {
            0 => &self.pe,
            c => self.others.get(c - 1).map_or(&self.pe, |o| &o.0),
        }
    }

    #[inline]
    fn inst(&self, e: usize) -> Option<&BirInst> {
        self.src.peek(e, self.cursors.get(e)?.next)
    }

    /// The time semaphore `sem` reached `value`, if it has.
    #[inline]
    fn reached(&self, sem: SemId, value: u64) -> Option<f64> {
        if value == 0 {
            return Some(0.0);
        }
        let log = self.signals.get(sem.0 as usize)?;
        if !S::LAZY {
            // An unrolled replay keeps every signal.
            return log.times.get(usize::try_from(value - 1).ok()?).copied();
        }
        log.reached(value)
    }

    /// Check engine `e`'s next instruction before it is first considered: its engine and its
    /// semaphores. (The model reads each instruction only when it gets there: the programs
    /// it is for are too large for a separate validation pass.)
    #[inline(always)]
    fn check(&self, e: usize) -> Result<(), SimError> {
        let Some(inst) = self.inst(e) else { return Ok(()) };
        let engine = self.engines[e];
        let at = InstRef { engine, index: self.cursors[e].next };
        if !inst.op.engine_class().contains(engine) {
            return Err(SimError::WrongEngine { at, op: inst.op.name() });
        }
        let count = self.signals.len();
        if let Some(sem) = inst.waits.iter().map(|w| w.sem).chain(inst.signal).find(|s| s.0 as usize >= count) {
            return Err(SimError::UnknownSemaphore { at, sem, count });
        }
        Ok(())
    }

    /// Where engine `e`'s next instruction stands: finished, blocked on a semaphore, or
    /// ready to start at a time.
    #[inline(always)]
    fn state(&self, e: usize) -> State {
        let Some(inst) = self.inst(e) else { return State::Finished };
        let mut sem_ready = 0.0f64;
        for w in &inst.waits {
            match self.reached(w.sem, w.value) {
                Some(t) => sem_ready = sem_ready.max(t),
                None => return State::Blocked(w.sem),
            }
        }
        let ready = match self.engines[e] {
            Engine::Pe => self.pe_of(e).ready(&inst.op),
            _ => self.cursors[e].free_at,
        };
        State::Ready(Candidate { start: ready.max(sem_ready), wait_ns: (sem_ready - ready).max(0.0) })
    }

    /// Replay every stream: repeatedly commit the ready instruction with the earliest start.
    ///
    /// Only two things change an engine's state: committing its own instruction, and a new
    /// signal on a semaphore it waits on. A signal that lands after every earlier signal of
    /// its semaphore (always, when one in-order engine owns the semaphore, as in lowered
    /// programs) cannot move a count that was already reached, so it only wakes engines
    /// blocked on that semaphore; one that lands earlier re-evaluates every engine waiting
    /// on it.
    fn run<O: Observer<S>>(mut self, observer: &mut O) -> Result<Ran, SimError> {
        let n = self.engines.len();
        let mut states = Vec::with_capacity(n);
        for e in 0..n {
            self.check(e)?;
            states.push(self.state(e));
        }
        loop {
            let mut best: Option<(usize, Candidate)> = None;
            for (e, st) in states.iter().enumerate() {
                if let State::Ready(c) = st {
                    if best.is_none_or(|(_, b)| c.start < b.start) {
                        best = Some((e, *c));
                    }
                }
            }
            let Some((e, cand)) = best else { break };
            if O::ACTIVE && observer.before_commit(&mut self, e, cand.start)? {
                for (o, st) in states.iter_mut().enumerate() {
                    *st = self.state(o);
                }
                continue;
            }
            let signalled = self.commit(e, cand);
            if S::LAZY {
                if let Some((sem, _)) = signalled {
                    self.check_count(e, sem)?;
                }
                let at = InstRef { engine: self.engines[e], index: self.cursors[e].next };
                self.src.advance(e, at)?;
            }
            self.check(e)?;
            states[e] = self.state(e);
            if let Some((sem, appended)) = signalled {
                for other in (0..n).filter(|&o| o != e) {
                    let affected = match states[other] {
                        State::Blocked(s) => s == sem,
                        State::Ready(_) => {
                            !appended && self.inst(other).is_some_and(|i| i.waits.iter().any(|w| w.sem == sem))
                        }
                        State::Finished => false,
                    };
                    if affected {
                        states[other] = self.state(other);
                    }
                }
            }
        }
        self.finish()
    }

    /// Run engine `e`'s next instruction from `cand.start`; returns the semaphore it signalled
    /// and whether the signal landed after all earlier ones of that semaphore.
    #[inline(always)]
    fn commit(&mut self, e: usize, cand: Candidate) -> Option<(SemId, bool)> {
        let engine = self.engines[e];
        let index = self.cursors[e].next;
        let inst = self.src.peek(e, index)?;
        let signal = inst.signal;
        let start = cand.start;
        let released = if self.path.is_some() { self.released(inst, cand.wait_ns) } else { None };
        let core = e / NUM_ENGINES;
        let (end, hbm) = match engine {
            Engine::Pe => {
                let pe = match core {
                    0 => &mut self.pe,
                    c => self.others.get_mut(c - 1).map_or(&mut self.pe, |o| &mut o.0),
                };
                let end = pe.commit(&inst.op, start);
                ((end, end), inst.op.hbm_bytes())
            }
            Engine::Dma(q) => {
                let dma = match core {
                    0 => &mut self.dma,
                    c => self.others.get_mut(c - 1).map_or(&mut self.dma, |o| &mut o.1),
                };
                let c = dma.commit(q, &inst.op, start, self.shared.as_mut());
                ((c.end, c.queue_free), c.hbm_bytes)
            }
            Engine::Act | Engine::Dve | Engine::Pool | Engine::Sp => {
                let end = start + self.compute_ns(engine, &inst.op);
                ((end, end), inst.op.hbm_bytes())
            }
        };
        self.hbm_bytes = self.hbm_bytes.saturating_add(hbm);
        if let Some(slot) = self.core_hbm.get_mut(core) {
            *slot = slot.saturating_add(hbm);
        }
        let (end, free_at) = end;
        let cursor = &mut self.cursors[e];
        cursor.next += 1;
        cursor.free_at = free_at;
        cursor.retired = cursor.retired.max(end);
        cursor.busy += (end - start.max(cursor.covered_until)).max(0.0);
        cursor.covered_until = cursor.covered_until.max(end);
        let retired = cursor.retired;
        self.total_ns = self.total_ns.max(retired);
        if self.keep_slices {
            self.slices.push(Slice { engine, index, start_ns: start, end_ns: end, wait_ns: cand.wait_ns });
            if self.shared.is_some() {
                self.slice_cores.push(core as u8);
            }
        }
        let step = self.path.as_mut().map(|p| {
            let step = p.step(e, engine, start, end, released);
            p.push(e, step);
            step
        });
        let sem = signal?;
        let log = self.signals.get_mut(sem.0 as usize)?;
        let times = &mut log.times;
        let appended = times.last().is_none_or(|&t| t <= retired);
        if appended {
            times.push(retired);
            log.path.steps.extend(step);
        } else {
            let at = times.partition_point(|&t| t <= retired);
            times.insert(at, retired);
            if let Some(step) = step {
                log.path.steps.insert(at.min(log.path.steps.len()), step);
            }
        }
        if S::LAZY && !self.keep_slices && times.len() > PRUNE_AT {
            log.prune(start);
        }
        Some((sem, appended))
    }

    /// Time of an ACT/DVE/POOL/SP instruction: its documented cycles (`compute.rs`) at the
    /// engine's clock.
    fn compute_ns(&self, engine: Engine, op: &Op) -> f64 {
        let p = &self.profile;
        let ghz = match engine {
            Engine::Act => p.act_ghz,
            Engine::Dve => p.dve_ghz,
            Engine::Pe => p.pe_ghz,
            Engine::Pool | Engine::Sp | Engine::Dma(_) => p.pool_ghz,
        };
        compute::compute_cycles(p, engine, op) / ghz
    }

    fn finish(self) -> Result<Ran, SimError> {
        let stuck: Vec<Stuck> = (0..self.engines.len())
            .filter_map(|e| {
                let inst = self.inst(e)?;
                let at = InstRef { engine: self.engines[e], index: self.cursors[e].next };
                let w = inst.waits.iter().find(|w| self.reached(w.sem, w.value).is_none())?;
                let count = self.signals.get(w.sem.0 as usize).map_or(0, SemLog::count);
                Some(Stuck { at, sem: w.sem, needed: w.value, current: count, core: 0 })
            })
            .collect();
        if !stuck.is_empty() {
            return Err(SimError::Deadlock { stuck });
        }
        // Local figures plus what jumps skipped (nothing for an unrolled replay).
        let j = &self.jumped;
        let mut engine_busy_ns = vec![0.0; NUM_ENGINES];
        for ((slot, c), skipped) in engine_busy_ns.iter_mut().zip(&self.cursors).zip(&j.busy) {
            *slot = skipped.add(c.busy).value();
        }
        let local = self.pe.flops_parts();
        let parts: [f64; 4] = std::array::from_fn(|i| j.flops[i].add(local[i]).value());
        let flops =
            j.flops.iter().zip(local).fold(epoch::Dd::default(), |sum, (skipped, l)| sum.add_dd(*skipped).add(l));
        let committed = self.cursors.iter().fold(0u64, |n, c| n.saturating_add(c.next as u64));
        let (cores, shared_busy_ns) = match self.shared {
            Some(h) => (self.core_reports(), h.busy_ns),
            None => (Vec::new(), 0.0),
        };
        let total_ns = j.epoch.add(self.total_ns).value();
        let critical = self.path.as_ref().map(|p| p.finish(self.total_ns, total_ns));
        let report = CycleReport {
            total_ns,
            engine_busy_ns,
            hbm_bytes: self.hbm_bytes,
            matmul_flops: flops.value(),
            peak_flops_per_ns: self.pe.peak_flops_per_ns(&parts),
            slices: self.slices,
        };
        Ok(Ran {
            report,
            replayed: committed.saturating_sub(j.insts),
            skipped: j.insts,
            jumps: j.jumps,
            cores,
            shared_busy_ns,
            critical,
        })
    }
}
