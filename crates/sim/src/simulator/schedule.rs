//! The scheduler: every stream of a core run as far as its semaphores allow, in slices a
//! chip's run interleaves with the other cores'.
//!
//! A run's vector clocks have [`NUM_ENGINES`] components per core of the run (core `c`'s
//! engine `e` is component `c * NUM_ENGINES + e`), so a wait on a semaphore another core
//! signalled learns what that core had done, and the race detector orders accesses across
//! cores as it does across engines.

use std::sync::Arc;

use bir::{Engine, InstRef, Program, NUM_ENGINES};

use super::{Cx, Deferred, JobQueue, Simulator};
use crate::error::{SimError, Stuck};
use crate::race::{join, RaceLog};
use crate::simulator::RunStats;

/// Instructions between two prunings of the race log.
const PRUNE_EVERY: u32 = 64;

/// Where a slice of a core's run stopped.
pub(crate) enum Slice {
    /// Every stream ran to its end.
    Finished,
    /// Every unfinished stream waits on a semaphore not yet at its count.
    Blocked {
        /// Whether the slice executed any instruction.
        progressed: bool,
        /// Each unfinished stream with the wait that holds it.
        stuck: Vec<Stuck>,
    },
}

/// The scheduler's state of one core's run, kept between the slices of a chip's run.
pub(crate) struct CoreRun {
    /// Components of a clock: [`NUM_ENGINES`] per core of the run.
    width: usize,
    /// The core's first component.
    base: usize,
    engines: Vec<Engine>,
    pc: Vec<usize>,
    /// Each semaphore's count.
    pub(crate) sem_count: Vec<u64>,
    /// Each semaphore's published clocks: reaching value `v + 1` publishes components
    /// `[v * width, (v + 1) * width)`.
    pub(crate) sem_clock: Vec<Vec<u32>>,
    /// Each stream's clock, `width` components each.
    clocks: Vec<u32>,
    log: RaceLog,
    stats: RunStats,
    since_prune: u32,
}

impl CoreRun {
    /// The start of a run of `program` as core `core` of `cores`.
    pub(crate) fn new(program: &Program, cores: usize, core: usize) -> Result<CoreRun, SimError> {
        let streams = program.streams.len();
        if streams > NUM_ENGINES {
            return Err(SimError::TooManyStreams { streams, max: NUM_ENGINES });
        }
        let engines = (0..streams)
            .map(|e| Engine::from_index(e).ok_or_else(|| SimError::Internal(format!("no engine with index {e}"))))
            .collect::<Result<_, _>>()?;
        let width = NUM_ENGINES * cores.max(1);
        let nsem = program.semaphores.len();
        Ok(CoreRun {
            width,
            base: NUM_ENGINES * core,
            engines,
            pc: vec![0; streams],
            sem_count: vec![0; nsem],
            sem_clock: vec![Vec::new(); nsem],
            clocks: vec![0; width * streams],
            log: RaceLog::default(),
            stats: RunStats::default(),
            since_prune: 0,
        })
    }

    /// Whether every stream ran to its end.
    pub(crate) fn finished(&self, program: &Program) -> bool {
        program.streams.iter().zip(&self.pc).all(|(s, &pc)| pc >= s.len())
    }

    /// For each component `x`, the smallest `clock[x]` among the streams that still have
    /// instructions to run: everything up to it has been seen by every future access.
    fn seen_by_all(&self, streams: &[Vec<bir::BirInst>]) -> Vec<u32> {
        let mut seen = vec![u32::MAX; self.width];
        for (e, stream) in streams.iter().enumerate() {
            if self.pc[e] < stream.len() {
                let clock = &self.clocks[e * self.width..(e + 1) * self.width];
                for (s, c) in seen.iter_mut().zip(clock) {
                    *s = (*s).min(*c);
                }
            }
        }
        seen
    }
}

impl Simulator {
    /// Run the streams of `run` as far as their waits allow (for a chip's core, the counts and
    /// clocks of the semaphores the chip shares are handed in for the slice).
    pub(crate) fn run_slice(&mut self, run: &mut CoreRun) -> Result<Slice, SimError> {
        let streams = &self.program.streams;
        let nsem = self.program.semaphores.len();
        let w = run.width;
        let mut footprint = self.footprint.as_mut();
        if run.stats.instructions == 0 && run.pc.iter().all(|&pc| pc == 0) {
            self.machine.stationary = None;
            if let Some(f) = footprint.as_deref_mut() {
                f.clear();
            }
        }
        let mut any = false;
        loop {
            let mut progressed = false;
            for (e, stream) in streams.iter().enumerate() {
                let own = run.base + e;
                while let Some(inst) = stream.get(run.pc[e]) {
                    let at = InstRef { engine: run.engines[e], index: run.pc[e] };
                    let unknown = |sem: bir::SemId| SimError::UnknownSemaphore { at, sem, count: nsem };
                    let mut ready = true;
                    for wt in &inst.waits {
                        let count = *run.sem_count.get(wt.sem.0 as usize).ok_or_else(|| unknown(wt.sem))?;
                        ready &= count >= wt.value;
                    }
                    if let Some(s) = inst.signal {
                        if s.0 as usize >= nsem {
                            return Err(unknown(s));
                        }
                    }
                    if !ready {
                        break;
                    }
                    let clock = &mut run.clocks[e * w..(e + 1) * w];
                    for wt in inst.waits.iter().filter(|wt| wt.value > 0) {
                        let v = usize::try_from(wt.value - 1).unwrap_or(usize::MAX);
                        let published = run
                            .sem_clock
                            .get(wt.sem.0 as usize)
                            .and_then(|c| c.get(v.saturating_mul(w)..v.saturating_mul(w).saturating_add(w)))
                            .ok_or_else(|| {
                                SimError::Internal(format!("{at}: no clock for {} = {}", wt.sem, wt.value))
                            })?;
                        join(clock, published);
                    }
                    clock[own] += 1;
                    let mut cx = Cx {
                        at,
                        engine: own,
                        clock: &*clock,
                        first_race: run.log.races.len(),
                        log: &mut run.log,
                        stats: &mut run.stats,
                        footprint: footprint.as_deref_mut(),
                    };
                    self.machine.execute(&inst.op, &mut cx)?;
                    if let Some(s) = inst.signal {
                        let s = s.0 as usize;
                        run.sem_count[s] = run.sem_count[s].saturating_add(1);
                        let clocks = &mut run.sem_clock[s];
                        let prev = clocks.len().checked_sub(w);
                        clocks.extend_from_slice(&run.clocks[e * w..(e + 1) * w]);
                        if let Some(prev) = prev {
                            let (old, new) = clocks.split_at_mut(prev + w);
                            join(new, &old[prev..]);
                        }
                    }
                    run.pc[e] += 1;
                    run.stats.instructions += 1;
                    // Instructions move up to a few MiB each: poll often.
                    if run.stats.instructions.is_multiple_of(64) && penguin::cancel::stopped(self.cancel.as_ref()) {
                        return Err(SimError::Interrupted);
                    }
                    progressed = true;
                    run.since_prune += 1;
                    if run.since_prune >= PRUNE_EVERY {
                        run.since_prune = 0;
                        let seen = run.seen_by_all(streams);
                        run.log.prune(&seen);
                    }
                }
            }
            any |= progressed;
            if run.finished(&self.program) {
                return Ok(Slice::Finished);
            }
            // Nothing more can start: another core may release a wait of this one.
            if !progressed {
                break;
            }
        }
        let stuck = (0..streams.len())
            .filter_map(|e| {
                let inst = streams[e].get(run.pc[e])?;
                let wt = inst.waits.iter().find(|wt| run.sem_count[wt.sem.0 as usize] < wt.value)?;
                Some(Stuck {
                    at: InstRef { engine: run.engines[e], index: run.pc[e] },
                    sem: wt.sem,
                    needed: wt.value,
                    current: run.sem_count[wt.sem.0 as usize],
                    core: 0,
                })
            })
            .collect();
        Ok(Slice::Blocked { progressed: any, stuck })
    }

    /// The statistics of a finished run (its races kept for [`Simulator::races`]).
    pub(crate) fn finish(&mut self, mut run: CoreRun) -> RunStats {
        run.stats.races = std::mem::take(&mut run.log.races);
        run.stats.races_dropped = run.log.dropped;
        self.races.clone_from(&run.stats.races);
        run.stats
    }
}

/// Run `body` on `sims` with their PE products computed on worker threads (the first
/// simulator's thread count; one computes each product where its matmul issues), then add
/// the products still pending into PSUM (or drop them when the run was interrupted).
pub(crate) fn with_workers<R>(
    sims: &mut [Simulator],
    body: impl FnOnce(&mut [Simulator]) -> Result<R, SimError>,
) -> Result<R, SimError> {
    let threads = sims.first().map_or(1, |s| s.threads);
    let finish = |sims: &mut [Simulator], result: &Result<R, SimError>| {
        for sim in sims.iter_mut() {
            sim.settle(matches!(result, Err(SimError::Interrupted)));
            sim.machine.deferred = None;
        }
    };
    if threads <= 1 {
        // No workers: products are computed where they are applied, in the same jobs.
        for sim in sims.iter_mut() {
            sim.machine.deferred = Some(Deferred::new(None));
        }
        let result = body(sims);
        finish(sims, &result);
        return result;
    }
    let queue = Arc::new(JobQueue::default());
    std::thread::scope(|s| {
        for i in 1..threads {
            let q = Arc::clone(&queue);
            // A worker that cannot be started leaves its share to the others and to the
            // scheduling thread, which computes whatever no worker has taken.
            let _ = std::thread::Builder::new().name(format!("sim-pe-{i}")).spawn_scoped(s, move || q.work());
        }
        for sim in sims.iter_mut() {
            sim.machine.deferred = Some(Deferred::new(Some(Arc::clone(&queue))));
        }
        let result = body(sims);
        finish(sims, &result);
        queue.close();
        result
    })
}
