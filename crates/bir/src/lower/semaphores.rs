//! Wiring cross-engine dependencies into semaphores: every engine has one semaphore that its
//! instructions with cross-engine dependents increment, and a consumer waits until the
//! producer's engine semaphore reaches the producer's count.

use penguin::FunctionView;

use super::{LowerCx, Placement};
use crate::error::BirError;
use crate::program::{Engine, SemId, Wait, NUM_ENGINES};

impl<F: FunctionView + ?Sized> LowerCx<'_, F> {
    pub(super) fn wire_semaphores(&mut self, placement: &[Vec<Placement>]) -> Result<(), BirError> {
        self.program.semaphores = Engine::all().map(|e| e.name()).collect();
        // Pass 1: which producers signal.
        let mut needs_signal: Vec<Vec<bool>> = self.program.streams.iter().map(|s| vec![false; s.len()]).collect();
        let mut waits_of: Vec<(Placement, Vec<Placement>)> = Vec::new();
        for &id in self.func.layout() {
            let parts = placement.get(id.index()).map_or(&[][..], Vec::as_slice);
            let mut producers: Vec<Placement> = Vec::new();
            for dep in self.func.deps(id) {
                let from = placement.get(dep.from.index()).map_or(&[][..], Vec::as_slice);
                if from.is_empty() {
                    return Err(BirError::Internal(format!("{id} depends on unplaced {}", dep.from)));
                }
                producers.extend_from_slice(from);
            }
            for &c in parts {
                let cross: Vec<Placement> = producers.iter().copied().filter(|p| p.engine != c.engine).collect();
                for p in &cross {
                    needs_signal[p.engine.index()][p.last] = true;
                }
                if !cross.is_empty() {
                    waits_of.push((c, cross));
                }
            }
        }
        // Pass 2: the semaphore count each signalling instruction reaches.
        let mut count_at: Vec<Vec<u64>> = Vec::with_capacity(NUM_ENGINES);
        for (e, stream) in self.program.streams.iter_mut().enumerate() {
            let mut n = 0u64;
            let mut counts = vec![0u64; stream.len()];
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
            let mut best = [0u64; NUM_ENGINES];
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
