//! Deferred PE products: the scheduler hands each matmul's product to a pool of worker
//! threads and goes on; the products are added into PSUM in program order, and before any
//! other instruction touches the PSUM bytes a pending product writes.
//!
//! Everything a later instruction can observe happens in the serial order: operands are
//! decoded when the matmul issues (a later SBUF write cannot change them), accumulation
//! groups and the race detector are updated at issue, and the products that write
//! overlapping PSUM bytes are applied in issue order. Only the arithmetic of `W^T @ X`, a
//! pure function of its operands, runs elsewhere, with the same kernel as the serial path,
//! so the bytes are identical to a one-thread run for every program, racy or not.
//!
//! The thread that schedules also computes: when it needs a product that no worker has
//! started, it computes it itself, so `threads` threads work in all (`threads - 1` workers;
//! with one thread there are none and every product is computed where it is applied).
//!
//! The matmuls of one accumulation group (a START followed by accumulating matmuls into the
//! same PSUM pattern, with no other pending product in between) form one job: each product
//! is accumulated into the job's result by the GEMM kernel itself, which rounds exactly as
//! adding it in fp32 (see `crate::gemm::ONE_PASS_K`), and the group's sum is written into
//! PSUM once instead of once per matmul. A group is handed to the workers when its STOP
//! issues, when another product follows it, or when its result is needed.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use bir::HwAp;
use penguin::{CastMode, DType};

use crate::convert::encode_run;
use crate::gemm::{matmul_tn, PackedStationary, ONE_PASS_K};
use crate::memory::Walk;

/// Products pending at most; beyond it the oldest job is applied first. It bounds memory
/// (each pending product holds its operands, a moving operand of up to 256 KiB often
/// shared with the decode cache, and each job a result of up to 256 KiB) and lets the PE
/// run far enough ahead that the workers stay busy while the scheduling thread moves data
/// (at 24 single products, the scheduling thread computed most products itself).
const MAX_PENDING: usize = 256;

/// Products one job sums at most (a K loop of 64 x 128 rows); a longer group continues in
/// single-product jobs.
const MAX_CHAIN: usize = 64;

/// One PE product: `W^T @ X` with `X` `[w.k, n]`.
pub(crate) struct Link {
    /// The stationary operand.
    pub w: Arc<PackedStationary>,
    /// The moving operand, row-major `[w.k, n]`.
    pub x: Arc<Vec<f32>>,
    /// Its columns.
    pub n: usize,
}

/// Products summed in order into one result: the first replaces it, each later one is
/// added to it in fp32.
struct Job {
    links: Vec<Link>,
    /// A recycled buffer for the result.
    out: Vec<f32>,
}

impl Job {
    fn compute(mut self) -> Vec<f32> {
        for (i, l) in self.links.iter().enumerate() {
            matmul_tn(&l.w, l.n, &l.x, &mut Vec::new(), &mut self.out, i > 0);
        }
        self.out
    }
}

enum State {
    Queued(Job),
    Running,
    Done(Vec<f32>),
    /// The result was taken.
    Taken,
}

/// Where one product is computed and picked up.
struct Slot {
    state: Mutex<State>,
    done: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means a thread panicked while holding it; the data is still whole.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Slot {
    /// Add a product to the job if nobody has started it; else give it back.
    fn extend(&self, link: Link) -> Result<(), Link> {
        match &mut *lock(&self.state) {
            State::Queued(job) => {
                job.links.push(link);
                Ok(())
            }
            _ => Err(link),
        }
    }

    /// Compute the product if nobody has started it.
    fn run(&self) {
        let job = {
            let mut state = lock(&self.state);
            match std::mem::replace(&mut *state, State::Running) {
                State::Queued(job) => job,
                other => {
                    *state = other;
                    return;
                }
            }
        };
        let out = job.compute();
        *lock(&self.state) = State::Done(out);
        self.done.notify_all();
    }

    /// The product, computed here when no worker has started it, else waited for.
    fn take(&self) -> Vec<f32> {
        self.run();
        let mut state = lock(&self.state);
        loop {
            match std::mem::replace(&mut *state, State::Taken) {
                State::Done(out) => return out,
                State::Running => {
                    *state = State::Running;
                    state = self.done.wait(state).unwrap_or_else(PoisonError::into_inner);
                }
                // Only the scheduler takes, once; a queued job was run just above.
                State::Queued(job) => {
                    drop(state);
                    return job.compute();
                }
                State::Taken => return Vec::new(),
            }
        }
    }
}

/// The jobs waiting for a worker.
#[derive(Default)]
pub(crate) struct JobQueue {
    jobs: Mutex<(VecDeque<Arc<Slot>>, bool)>,
    ready: Condvar,
}

impl JobQueue {
    /// A worker's loop: run queued jobs until the queue is closed and empty.
    pub fn work(&self) {
        loop {
            let slot = {
                let mut q = lock(&self.jobs);
                loop {
                    if let Some(slot) = q.0.pop_front() {
                        break slot;
                    }
                    if q.1 {
                        return;
                    }
                    q = self.ready.wait(q).unwrap_or_else(PoisonError::into_inner);
                }
            };
            slot.run();
        }
    }

    /// Stop the workers once the queue is empty.
    pub fn close(&self) {
        lock(&self.jobs).1 = true;
        self.ready.notify_all();
    }

    /// Drop every job no worker has taken (an interrupted run needs none of them).
    fn drop_queued(&self) {
        lock(&self.jobs).0.clear();
    }

    fn push(&self, slot: Arc<Slot>) {
        lock(&self.jobs).0.push_back(slot);
        self.ready.notify_one();
    }
}

/// A job not yet added into PSUM.
struct Pending {
    slot: Arc<Slot>,
    /// The PSUM result pattern (checked at issue).
    dst: Walk,
    /// `START`: the result replaces the PSUM values instead of adding to them.
    start: bool,
    /// Its products.
    links: usize,
    /// Not yet handed to the workers: later matmuls of its group may still join it.
    open: bool,
}

/// The scheduler's side: jobs in issue order.
pub(crate) struct Deferred {
    /// Where jobs go to the workers; `None` when there are none.
    queue: Option<Arc<JobQueue>>,
    pending: VecDeque<Pending>,
    /// Products in `pending`.
    links: usize,
    /// Result buffers to reuse.
    free: Vec<Vec<f32>>,
}

/// A PSUM write of a product: `psum[dst] = product` (`start`) or `psum[dst] += product`.
pub(crate) type Apply<'a> = &'a mut dyn FnMut(&Walk, bool, &[f32]);

impl Deferred {
    /// Jobs go to `queue`'s workers, or with `None` are computed where they are applied.
    pub fn new(queue: Option<Arc<JobQueue>>) -> Deferred {
        Deferred { queue, pending: VecDeque::new(), links: 0, free: Vec::new() }
    }

    /// Queue a product for the PSUM pattern `dst` with its matmul's `(START, STOP)` flags;
    /// applies the oldest jobs first when too many products are pending.
    pub fn submit(&mut self, link: Link, dst: Walk, (start, stop): (bool, bool), apply: Apply<'_>) {
        let chainable = link.w.k <= ONE_PASS_K;
        let mut link = link;
        if !start && chainable {
            if let Some(last) = self.pending.back_mut().filter(|p| p.open && p.links < MAX_CHAIN && p.dst == dst) {
                match last.slot.extend(link) {
                    Ok(()) => {
                        last.links += 1;
                        self.links += 1;
                        if stop || last.links >= MAX_CHAIN {
                            self.publish_last();
                        }
                        return;
                    }
                    Err(back) => link = back,
                }
            }
        }
        // Another product follows the last job: its group is complete.
        self.publish_last();
        while self.links >= MAX_PENDING && !self.pending.is_empty() {
            self.apply_first(1, apply);
        }
        let out = self.free.pop().unwrap_or_default();
        let job = Job { links: vec![link], out };
        let slot = Arc::new(Slot { state: Mutex::new(State::Queued(job)), done: Condvar::new() });
        self.pending.push_back(Pending { slot, dst, start, links: 1, open: true });
        self.links += 1;
        // Only a group that starts here may grow: its sum then replaces the PSUM values.
        if !(start && chainable) || stop {
            self.publish_last();
        }
    }

    /// Hand the last job to the workers if it is still open.
    fn publish_last(&mut self) {
        let Some(last) = self.pending.back_mut().filter(|p| p.open) else { return };
        last.open = false;
        if let Some(queue) = &self.queue {
            queue.push(Arc::clone(&last.slot));
        }
    }

    /// Apply every pending product up to the last one whose PSUM bytes overlap partitions
    /// `[p0, p1)` x bytes `[lo, hi)` (earlier ones first, so overlapping products keep their
    /// order).
    pub fn settle(&mut self, (p0, p1, lo, hi): (u32, u32, i64, i64), apply: Apply<'_>) {
        let last = self
            .pending
            .iter()
            .rposition(|p| p.dst.region.is_some_and(|b| b.p0 < p1 && p0 < b.p1 && b.lo() < hi && lo < b.hi()));
        if let Some(last) = last {
            self.apply_first(last + 1, apply);
        }
    }

    /// Apply every pending product.
    pub fn settle_all(&mut self, apply: Apply<'_>) {
        self.apply_first(self.pending.len(), apply);
    }

    /// Forget every product not yet added into PSUM, computing none of them (an interrupted
    /// run's memory images are not read).
    pub fn abandon(&mut self) {
        if let Some(q) = &self.queue {
            q.drop_queued();
        }
        self.pending.clear();
        self.links = 0;
    }

    fn apply_first(&mut self, count: usize, apply: Apply<'_>) {
        // Compute whatever no worker has started before waiting for any of them, so this
        // thread never idles while products it needs are still queued.
        for p in self.pending.iter().take(count) {
            p.slot.run();
        }
        for _ in 0..count {
            let Some(p) = self.pending.pop_front() else { return };
            self.links -= p.links;
            let product = p.slot.take();
            apply(&p.dst, p.start, &product);
            self.free.push(product);
        }
    }
}

impl super::Machine {
    /// Add the pending products that write PSUM bytes `ap` may touch (and those before
    /// them) into PSUM, so the access sees what a serial run would.
    pub(super) fn settle(&mut self, ap: &HwAp) {
        let super::Machine { deferred: Some(d), images, .. } = self else { return };
        d.settle(ap.byte_region(), &mut |dst, start, product| write_product(&mut images.psum, dst, start, product));
    }

    /// Add every pending product into PSUM.
    pub(super) fn settle_all(&mut self) {
        let super::Machine { deferred: Some(d), images, .. } = self else { return };
        d.settle_all(&mut |dst, start, product| write_product(&mut images.psum, dst, start, product));
    }

    /// Drop the products not yet added into PSUM (see [`Deferred::abandon`]).
    pub(super) fn abandon_deferred(&mut self) {
        if let Some(d) = &mut self.deferred {
            d.abandon();
        }
    }
}

/// Write a PE product into its PSUM result pattern `dw` (fp32): replace the values on
/// `START`, else add to them in fp32.
pub(super) fn write_product(psum: &mut [u8], dw: &Walk, start: bool, product: &[f32]) {
    let mut pos = 0;
    for run in dw.runs() {
        let Some(out) = product.get(pos..pos + run.len) else { return };
        if start {
            encode_run(DType::Fp32, CastMode::Rne, out, psum, run);
        } else if run.contiguous(4) {
            // Whole 4-byte words, so the loop vectorises.
            let (words, _) = psum[run.span(4)].as_chunks_mut::<4>();
            for (word, v) in words.iter_mut().zip(out) {
                *word = (f32::from_le_bytes(*word) + v).to_le_bytes();
            }
        } else {
            for (j, v) in out.iter().enumerate() {
                let a = run.at(j);
                let old = f32::from_le_bytes([psum[a], psum[a + 1], psum[a + 2], psum[a + 3]]);
                psum[a..a + 4].copy_from_slice(&(old + v).to_le_bytes());
            }
        }
        pos += run.len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{Images, PSUM_PARTITION_BYTES};
    use penguin::{Dim, Memory};

    /// Far more products than may be pending, all accumulating into one PSUM region with
    /// values whose fp32 sum depends on the order: the deferred run (one worker plus this
    /// thread) leaves the bytes of applying them one by one.
    #[test]
    fn more_products_than_the_limit_land_in_issue_order() {
        let mut images = Images {
            hbm: Vec::new(),
            sbuf: Vec::new(),
            psum: vec![0; 128 * PSUM_PARTITION_BYTES],
            sbuf_partition_bytes: 0,
        };
        let ap = HwAp::on_chip(Memory::Psum, DType::Fp32, 0, 2, 8, vec![Dim::new(1, 3)]);
        let dst = Walk::new(&ap, &images).unwrap();
        let count = MAX_PENDING * 2 + 7;
        let operands: Vec<(Arc<PackedStationary>, Arc<Vec<f32>>)> = (0..count)
            .map(|i| {
                let mut w = PackedStationary::default();
                let scale = if i % 3 == 0 { 1.0e8 } else { 1.0 + i as f32 / 7.0 };
                w.hold(1, 2, &mut vec![scale, -scale * 0.5]);
                (Arc::new(w), Arc::new(vec![1.0, -3.0, 0.25 * i as f32]))
            })
            .collect();
        let mut serial = images.psum.clone();
        for (i, (w, x)) in operands.iter().enumerate() {
            let mut out = Vec::new();
            matmul_tn(w, 3, x, &mut Vec::new(), &mut out, false);
            write_product(&mut serial, &dst, i == 0, &out);
        }
        let queue = Arc::new(JobQueue::default());
        std::thread::scope(|s| {
            let q = Arc::clone(&queue);
            s.spawn(move || q.work());
            let mut d = Deferred::new(Some(Arc::clone(&queue)));
            let psum = &mut images.psum;
            for (i, (w, x)) in operands.iter().enumerate() {
                let link = Link { w: Arc::clone(w), x: Arc::clone(x), n: 3 };
                d.submit(link, dst.clone(), (i == 0, false), &mut |dw, start, p| {
                    write_product(psum, dw, start, p);
                });
                assert!(d.links <= MAX_PENDING);
            }
            d.settle_all(&mut |dw, start, p| write_product(psum, dw, start, p));
            queue.close();
        });
        assert!(images.psum == serial);
        assert_ne!(serial.iter().filter(|&&b| b != 0).count(), 0);
    }

    /// Groups that interleave, restart, stop, are settled part-way and run past the longest
    /// job, with and without workers: the PSUM bytes of applying every product one by one.
    #[test]
    fn interleaved_and_settled_groups_land_as_applied_one_by_one() {
        let images = Images {
            hbm: Vec::new(),
            sbuf: Vec::new(),
            psum: vec![0; 128 * PSUM_PARTITION_BYTES],
            sbuf_partition_bytes: 0,
        };
        let region = |byte_offset| {
            let ap = HwAp::on_chip(Memory::Psum, DType::Fp32, 1, 2, byte_offset, vec![Dim::new(1, 4)]);
            Walk::new(&ap, &images).unwrap()
        };
        let regions = [region(0), region(64)];
        // (region, START, STOP, settle region 0 afterwards)
        let mut steps = vec![(0, true, false, false)];
        steps.extend((0..5).map(|_| (0, false, false, false)));
        steps.extend([(1, true, false, false), (1, false, false, false), (0, false, false, true)]);
        steps.extend([(0, false, false, false), (0, true, true, false), (1, false, true, false)]);
        steps.push((1, true, false, false));
        steps.extend((0..MAX_CHAIN + 9).map(|i| (1, false, i == MAX_CHAIN + 8, false)));
        steps.extend([(0, true, false, false), (0, false, false, true), (0, false, true, false)]);
        let operands: Vec<(Arc<PackedStationary>, Arc<Vec<f32>>)> = (0..steps.len())
            .map(|i| {
                let mut w = PackedStationary::default();
                let scale = if i % 4 == 1 { 3.0e7 } else { 1.0 - i as f32 / 11.0 };
                w.hold(3, 2, &mut vec![scale, 0.5, -scale * 0.25, 1.5, 0.125, -2.0]);
                let x = (0..12).map(|j| (j as f32 - 5.5) * (1.0 + i as f32 / 13.0)).collect();
                (Arc::new(w), Arc::new(x))
            })
            .collect();
        let mut serial = images.psum.clone();
        for (&(r, start, _, _), (w, x)) in steps.iter().zip(&operands) {
            let mut out = Vec::new();
            matmul_tn(w, 4, x, &mut Vec::new(), &mut out, false);
            write_product(&mut serial, &regions[r], start, &out);
        }
        for workers in [false, true] {
            let mut psum = images.psum.clone();
            let queue = Arc::new(JobQueue::default());
            std::thread::scope(|s| {
                if workers {
                    let q = Arc::clone(&queue);
                    s.spawn(move || q.work());
                }
                let mut d = Deferred::new(workers.then(|| Arc::clone(&queue)));
                let psum = &mut psum;
                for (&(r, start, stop, settle), (w, x)) in steps.iter().zip(&operands) {
                    let link = Link { w: Arc::clone(w), x: Arc::clone(x), n: 4 };
                    d.submit(link, regions[r].clone(), (start, stop), &mut |dw, start, p| {
                        write_product(psum, dw, start, p);
                    });
                    if settle {
                        let b = regions[0].region.unwrap();
                        d.settle((b.p0, b.p1, b.lo(), b.hi()), &mut |dw, start, p| write_product(psum, dw, start, p));
                        assert!(d.pending.iter().all(|p| p.dst != regions[0]));
                    }
                }
                d.settle_all(&mut |dw, start, p| write_product(psum, dw, start, p));
                queue.close();
            });
            assert!(psum == serial, "workers: {workers}");
        }
        assert_ne!(serial.iter().filter(|&&b| b != 0).count(), 0);
    }
}
