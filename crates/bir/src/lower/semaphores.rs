//! Wiring cross-engine dependencies into semaphores: every engine has one semaphore that its
//! instructions with cross-engine dependents increment, and a consumer waits until the
//! producer's engine semaphore reaches the producer's count.
//!
//! The passes walk the dependency edges of the layout again rather than collecting the
//! cross-engine producers of every consumer: the edges are already in the function, and a
//! large kernel has hundreds of thousands of them.

use penguin::{FunctionView, InstId};

use super::{LowerCx, Placement, Placements};
use crate::error::BirError;
use crate::program::{Engine, SemId, Wait, NUM_ENGINES};

impl<'a, F: FunctionView + ?Sized> LowerCx<'a, F> {
    pub(super) fn wire_semaphores(&mut self, placed: &Placements) -> Result<(), BirError> {
        self.program.semaphores = Engine::all().map(|e| e.name()).collect();
        // Pass 1: the producers with a dependent on another engine signal.
        for &id in self.func.layout() {
            let parts = placed.of(id);
            for p in self.producers(placed, id)? {
                if parts.iter().any(|c| c.engine != p.engine) {
                    if let Some(inst) = self.program.streams[p.engine.index()].get_mut(p.last as usize) {
                        inst.signal = Some(SemId(p.engine.index() as u32));
                    }
                }
            }
        }
        // Pass 2: the semaphore count each instruction's engine has reached once it signalled,
        // for every stream in one table (stream `e` from `base[e]`). A u32 holds it: an
        // unrolled stream of 2^32 instructions would need about 900 GB.
        let mut base = [0usize; NUM_ENGINES + 1];
        for (e, stream) in self.program.streams.iter().enumerate().take(NUM_ENGINES) {
            base[e + 1] = base[e] + stream.len();
        }
        let mut count_at: Vec<u32> = Vec::with_capacity(base[NUM_ENGINES]);
        for stream in self.program.streams.iter().take(NUM_ENGINES) {
            let mut n = 0u32;
            count_at.extend(stream.iter().map(|inst| {
                n += u32::from(inst.signal.is_some());
                n
            }));
        }
        let count = |p: &Placement| count_at.get(base[p.engine.index()] + p.last as usize).copied().unwrap_or(0);
        // Pass 3: one wait per producer engine, for the latest producer.
        for &id in self.func.layout() {
            for c in placed.of(id) {
                let mut best = [0u32; NUM_ENGINES];
                let mut cross = false;
                for p in self.producers(placed, id)?.filter(|p| p.engine != c.engine) {
                    let v = count(p);
                    best[p.engine.index()] = best[p.engine.index()].max(v);
                    cross = true;
                }
                if !cross {
                    continue;
                }
                let mut waits = Vec::with_capacity(best.iter().filter(|v| **v > 0).count());
                waits.extend(
                    best.iter()
                        .enumerate()
                        .filter(|(_, v)| **v > 0)
                        .map(|(e, v)| Wait { sem: SemId(e as u32), value: u64::from(*v) }),
                );
                if let Some(inst) = self.program.streams[c.engine.index()].get_mut(c.first as usize) {
                    inst.waits = waits;
                }
            }
        }
        Ok(())
    }

    /// The placements of every instruction `id` depends on; an unplaced one is an error.
    fn producers<'p>(
        &self,
        placed: &'p Placements,
        id: InstId,
    ) -> Result<impl Iterator<Item = &'p Placement> + 'p, BirError>
    where
        'a: 'p,
    {
        let deps: &'a [penguin::Dep] = self.func.deps(id);
        if let Some(dep) = deps.iter().find(|d| placed.of(d.from).is_empty()) {
            return Err(BirError::Internal(format!("{id} depends on unplaced {}", dep.from)));
        }
        Ok(deps.iter().flat_map(move |d| placed.of(d.from)))
    }
}
