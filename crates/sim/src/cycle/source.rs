//! Where the cycle model's replay reads instructions from: the streams of an unrolled
//! [`Program`] (borrowed, nothing copied), or the streams of a [`LoopedProgram`] walked
//! lazily, one cursor per engine holding a frame per open loop.

use std::collections::HashSet;

use bir::looped::param_count;
use bir::{BirInst, Engine, Item, LoopedProgram, Program};

use crate::error::{InstRef, SimError};

/// A source of per-engine instruction streams, read in order.
pub(super) trait Source {
    /// Whether [`Source::advance`] does anything (false: the replay's count is the position).
    const LAZY: bool;
    /// Streams (engines) the source has.
    fn streams(&self) -> usize;
    /// The next instruction of stream `e` (after `done` instructions of it), if it has one
    /// left.
    fn peek(&self, e: usize, done: usize) -> Option<&BirInst>;
    /// Move stream `e` past its next instruction; `at` names that instruction for errors.
    fn advance(&mut self, e: usize, at: InstRef) -> Result<(), SimError>;
}

/// The streams of an unrolled program (the replay's own count of committed instructions
/// is the position).
pub(super) struct Flat<'p> {
    program: &'p Program,
}

impl<'p> Flat<'p> {
    pub(super) fn new(program: &'p Program) -> Self {
        Flat { program }
    }
}

impl Source for Flat<'_> {
    const LAZY: bool = false;
    fn streams(&self) -> usize {
        self.program.streams.len()
    }

    #[inline(always)]
    fn peek(&self, e: usize, done: usize) -> Option<&BirInst> {
        self.program.streams.get(e)?.get(done)
    }

    #[inline(always)]
    fn advance(&mut self, _e: usize, _at: InstRef) -> Result<(), SimError> {
        Ok(())
    }
}

/// One open level of a looped stream: the items being walked and where in them.
#[derive(Clone, Debug)]
pub(super) struct Frame<'p> {
    /// The items of this level (the stream, or a loop's body).
    items: &'p [Item],
    /// The loop's step (empty for the stream itself).
    step: &'p [i64],
    /// The loop's trips (1 for the stream itself).
    pub(super) trips: u32,
    /// The current iteration.
    pub(super) iter: u32,
    /// Index of the current item.
    pub(super) pos: usize,
    /// Parameter offset of the current item within `items`.
    at: usize,
    /// Parameter advance of `items` in this iteration (empty: all zero, the stream itself).
    base: Vec<i64>,
    /// Instructions one pass over `items` unrolls to (one iteration of the loop).
    pub(super) len: u64,
}

/// Where a cursor's next instruction is.
#[derive(Clone, Copy, Debug, Default)]
enum Current<'p> {
    /// Nowhere: the stream is done.
    #[default]
    Done,
    /// In the program as it stands (outside loops).
    Program(&'p BirInst),
    /// In the cursor's cache, at this index.
    Cached(usize),
}

/// An instruction of a loop body with its parameters advanced, kept and re-advanced in
/// place at its next iteration (cloning it each time cost more than the rest of the model).
#[derive(Clone, Debug)]
struct Materialized {
    inst: BirInst,
    /// The parameters of the program's instruction (byte offsets as they are, not clamped
    /// to `i64`).
    params: Vec<i128>,
}

impl Materialized {
    fn new(template: &BirInst) -> Self {
        let mut params = Vec::with_capacity(bir::looped::inst_param_count(template));
        for (_, ap) in template.op.aps() {
            params.extend([i128::from(ap.byte_offset), i128::from(ap.start_partition)]);
        }
        params.extend(template.waits.iter().map(|w| i128::from(w.value)));
        Materialized { inst: template.clone(), params }
    }

    /// The template's parameters advanced by `delta`; false when one leaves its range (the
    /// instruction is then left half-advanced: the model stops there).
    fn advance(&mut self, delta: &[i64]) -> bool {
        let mut moved = self.params.iter().zip(delta).map(|(p, d)| p + i128::from(*d));
        let mut in_range = true;
        self.inst.op.for_each_ap_mut(|_, ap| {
            match (moved.next().map(u64::try_from), moved.next().map(u32::try_from)) {
                (Some(Ok(offset)), Some(Ok(partition))) if in_range => {
                    ap.byte_offset = offset;
                    ap.start_partition = partition;
                }
                _ => in_range = false,
            }
        });
        if !in_range {
            return false;
        }
        for w in &mut self.inst.waits {
            let Some(Ok(value)) = moved.next().map(u64::try_from) else { return false };
            w.value = value;
        }
        true
    }
}

/// One engine's cursor into a looped stream.
#[derive(Clone, Debug, Default)]
pub(super) struct Cursor<'p> {
    /// Open levels, outermost (the stream) first.
    pub(super) frames: Vec<Frame<'p>>,
    /// The next instruction, with its parameters advanced.
    current: Current<'p>,
    /// Loop body instructions met so far, and where each is by its address in the program.
    cache: Vec<Materialized>,
    /// Looked up once per replayed instruction, so with a fast hash of the address.
    cached: rustc_hash::FxHashMap<usize, usize>,
}

/// The streams of a looped program, each walked by a [`Cursor`].
pub(super) struct Looped<'p> {
    pub(super) cursors: Vec<Cursor<'p>>,
    /// The loops (by [`Cursor::loop_id`]) with a parameter that leaves its range in some
    /// iteration: no jump may skip their iterations, so the replay meets that iteration and
    /// reports it where it is.
    pub(super) unsafe_loops: HashSet<usize>,
}

/// A loop whose step does not fit its body, or an iteration that moves a parameter out of
/// range, reported at the instruction the model was about to read.
fn bad_loop(at: InstRef, what: &str) -> SimError {
    SimError::BadOperand { at, detail: format!("loop: {what}") }
}

impl<'p> Looped<'p> {
    pub(super) fn new(lp: &'p LoopedProgram) -> Result<Self, SimError> {
        let mut cursors = Vec::with_capacity(lp.streams.len());
        for (e, items) in lp.streams.iter().enumerate() {
            let len = penguin::looped::unrolled_len(items);
            let top = Frame { items, step: &[], trips: 1, iter: 0, pos: 0, at: 0, base: Vec::new(), len };
            let mut c = Cursor { frames: vec![top], ..Cursor::default() };
            c.settle(at(e, 0))?;
            cursors.push(c);
        }
        let mut unsafe_loops = HashSet::new();
        for items in &lp.streams {
            Ranges { enclosing: Vec::new(), unsafe_loops: &mut unsafe_loops }.items(items);
        }
        Ok(Looped { cursors, unsafe_loops })
    }
}

/// The walk that finds the loops with a parameter out of range (as `bir::verify_looped`'s
/// rule 2: a parameter is affine in the loop indices, so its extremes are at the corners).
struct Ranges<'a, 'p> {
    /// The enclosing loops: (trips, step, how far into the step the walk has come, id).
    enclosing: Vec<(u32, &'p [i64], usize, usize)>,
    unsafe_loops: &'a mut HashSet<usize>,
}

impl<'p> Ranges<'_, 'p> {
    fn items(&mut self, items: &'p [Item]) {
        for it in items {
            match it {
                Item::Inst(i) => self.inst(i),
                Item::Loop(l) => {
                    self.enclosing.push((l.trips, &l.step, 0, l.body.as_ptr() as usize));
                    self.items(&l.body);
                    self.enclosing.pop();
                }
            }
        }
    }

    fn inst(&mut self, i: &BirInst) {
        let mut params = Vec::new();
        bir::looped::push_inst_params(i, &mut params);
        let aps = i.op.aps();
        let ok = params.iter().enumerate().all(|(q, &p)| {
            let base = match aps.get(q / 2) {
                Some((_, ap)) if q % 2 == 0 => i128::from(ap.byte_offset),
                _ => i128::from(p),
            };
            let max = match q.checked_sub(2 * aps.len()) {
                // A wait value.
                Some(_) => i128::from(bir::MAX_SEMAPHORE_COUNT),
                None if q % 2 == 0 => i128::from(u64::MAX),
                None => i128::from(u32::MAX),
            };
            let (mut lo, mut hi, mut moved) = (base, base, 0i128);
            for &(trips, step, at, _) in &self.enclosing {
                let s = i128::from(step.get(at + q).copied().unwrap_or(0)) * i128::from(trips.saturating_sub(1));
                moved += s.abs();
                if s < 0 {
                    lo += s;
                } else {
                    hi += s;
                }
            }
            // The cursor adds the advances of the enclosing loops in an i64.
            lo >= 0 && hi <= max && moved <= i128::from(i64::MAX)
        });
        if !ok {
            self.unsafe_loops.extend(self.enclosing.iter().map(|e| e.3));
        }
        for e in &mut self.enclosing {
            e.2 += params.len();
        }
    }
}

/// Which parameter of `inst` advancing by `delta` leaves its range, and to what value.
fn out_of_range(inst: &BirInst, delta: &[i64]) -> String {
    let mut params = Vec::new();
    bir::looped::push_inst_params(inst, &mut params);
    let aps = inst.op.aps();
    for (q, (&p, &d)) in params.iter().zip(delta).enumerate() {
        let v = i128::from(p) + i128::from(d);
        let (what, max) = match aps.get(q / 2) {
            Some((name, _)) if q % 2 == 0 => (format!("the {name} byte offset"), i128::from(u64::MAX)),
            Some((name, _)) => (format!("the {name} start partition"), i128::from(u32::MAX)),
            None => {
                let w = q - 2 * aps.len();
                match inst.waits.get(w) {
                    Some(wait) => (
                        format!("the value of wait {w} (on {}; loop parameters advance in an i64)", wait.sem),
                        i128::from(bir::MAX_SEMAPHORE_COUNT),
                    ),
                    None => continue,
                }
            }
        };
        if !(0..=max).contains(&v) {
            return format!("an iteration moves {what} out of its range: to {v}, outside 0..={max}");
        }
    }
    "an iteration moves a parameter out of its range".into()
}

fn at(e: usize, index: usize) -> InstRef {
    InstRef { engine: Engine::from_index(e).unwrap_or(Engine::Pe), index }
}

impl<'p> Cursor<'p> {
    /// Walk forward from the current item to the next instruction (entering loops, starting
    /// their next iteration or leaving them) and materialize it; `None` at the stream's end.
    fn settle(&mut self, at: InstRef) -> Result<(), SimError> {
        loop {
            let depth = self.frames.len();
            let Some(f) = self.frames.last_mut() else {
                self.current = Current::Done;
                return Ok(());
            };
            if let Some(item) = f.items.get(f.pos) {
                match item {
                    Item::Inst(i) => {
                        if f.base.is_empty() {
                            self.current = Current::Program(i);
                            return Ok(());
                        }
                        let n = bir::looped::inst_param_count(i);
                        let delta = f.base.get(f.at..f.at + n).ok_or_else(|| bad_loop(at, "bad parameter count"))?;
                        let slot = *self.cached.entry(std::ptr::from_ref(i) as usize).or_insert_with(|| {
                            self.cache.push(Materialized::new(i));
                            self.cache.len() - 1
                        });
                        let m = self.cache.get_mut(slot).ok_or_else(|| bad_loop(at, "lost instruction"))?;
                        if !m.advance(delta) {
                            return Err(bad_loop(at, &out_of_range(i, delta)));
                        }
                        self.current = Current::Cached(slot);
                        return Ok(());
                    }
                    Item::Loop(l) => {
                        let n = param_count(&l.body);
                        if l.trips == 0 {
                            return Err(bad_loop(at, "a loop has 0 trips"));
                        }
                        if l.step.len() != n {
                            return Err(bad_loop(
                                at,
                                &format!("a step has {} entries but its body has {n} parameters", l.step.len()),
                            ));
                        }
                        let base = if f.base.is_empty() {
                            vec![0; n]
                        } else {
                            f.base.get(f.at..f.at + n).ok_or_else(|| bad_loop(at, "bad parameter count"))?.to_vec()
                        };
                        let len = penguin::looped::unrolled_len(&l.body);
                        let child =
                            Frame { items: &l.body, step: &l.step, trips: l.trips, iter: 0, pos: 0, at: 0, base, len };
                        self.frames.push(child);
                    }
                }
            } else if f.iter + 1 < f.trips {
                f.iter += 1;
                f.pos = 0;
                f.at = 0;
                for (b, s) in f.base.iter_mut().zip(f.step) {
                    *b = b.checked_add(*s).ok_or_else(|| bad_loop(at, "a parameter overflows"))?;
                }
            } else if depth == 1 {
                self.current = Current::Done;
                return Ok(());
            } else {
                let n = f.base.len();
                self.frames.pop();
                if let Some(parent) = self.frames.last_mut() {
                    parent.pos += 1;
                    parent.at += n;
                }
            }
        }
    }

    /// Move past the current instruction.
    fn step(&mut self, at: InstRef) -> Result<(), SimError> {
        let n = self.inst().map(bir::looped::inst_param_count);
        if let (Some(f), Some(n)) = (self.frames.last_mut(), n) {
            f.pos += 1;
            f.at += n;
        }
        self.settle(at)
    }

    /// The next instruction, if the stream has one left.
    #[inline]
    fn inst(&self) -> Option<&BirInst> {
        match self.current {
            Current::Done => None,
            Current::Program(i) => Some(i),
            Current::Cached(slot) => self.cache.get(slot).map(|m| &m.inst),
        }
    }

    /// The outermost loop level `l` such that the next instruction is the first of an
    /// iteration of every open loop from level `l` in (`None` when it starts no iteration:
    /// it is not the first item of the innermost loop's body). Level 0 is the stream itself,
    /// so `l >= 1`.
    pub(super) fn iteration_start(&self) -> Option<usize> {
        self.inst()?;
        let last = self.frames.len().checked_sub(1).filter(|&l| l > 0)?;
        if self.frames.get(last)?.pos != 0 {
            return None;
        }
        // Loop `l` is at its first iteration and is the first item of its parent's body: its
        // first instruction starts the parent's iteration too.
        let mut l = last;
        while l > 1 && self.frames[l].iter == 0 && self.frames[l - 1].pos == 0 {
            l -= 1;
        }
        Some(l)
    }

    /// The identity of the loop of level `level` (the address of its body in the program,
    /// which no other loop shares).
    pub(super) fn loop_id(&self, level: usize) -> Option<usize> {
        self.frames.get(level).map(|f| f.items.as_ptr() as usize)
    }

    /// Jump `iters` iterations ahead in the loop of level `level` (its inner levels keep
    /// their positions), then re-read the current instruction.
    pub(super) fn jump(&mut self, level: usize, iters: u32, at: InstRef) -> Result<(), SimError> {
        let overflow = || bad_loop(at, "a parameter overflows");
        let Some(f) = self.frames.get_mut(level) else { return Ok(()) };
        f.iter = f.iter.checked_add(iters).filter(|&i| i < f.trips).ok_or_else(overflow)?;
        let k = i64::from(iters);
        let mut delta: Vec<i64> =
            f.step.iter().map(|s| s.checked_mul(k).ok_or_else(overflow)).collect::<Result<_, _>>()?;
        let mut lvl = level;
        while let Some(f) = self.frames.get_mut(lvl) {
            for (b, d) in f.base.iter_mut().zip(&delta) {
                *b = b.checked_add(*d).ok_or_else(overflow)?;
            }
            let (from, n) = (f.at, self.frames.get(lvl + 1).map_or(0, |c| c.base.len()));
            delta = delta.get(from..from + n).map(<[i64]>::to_vec).unwrap_or_default();
            lvl += 1;
        }
        self.settle(at)
    }

    /// The loop of level `level`: its body and step.
    pub(super) fn level_body(&self, level: usize) -> Option<(&'p [Item], &'p [i64])> {
        self.frames.get(level).map(|f| (f.items, f.step))
    }
}

impl Source for Looped<'_> {
    const LAZY: bool = true;
    fn streams(&self) -> usize {
        self.cursors.len()
    }

    fn peek(&self, e: usize, _done: usize) -> Option<&BirInst> {
        self.cursors.get(e)?.inst()
    }

    fn advance(&mut self, e: usize, at: InstRef) -> Result<(), SimError> {
        match self.cursors.get_mut(e) {
            Some(c) => c.step(at),
            None => Ok(()),
        }
    }
}
