//! Sampled planning: a loop nest planned in loops, at a cost that does not grow with its
//! trip counts.
//!
//! A regular nest (trip counts `dims`, outermost first) emits its steps software-pipelined
//! (the loads of step `i + 1` before the compute of step `i`, so that with two buffer slots
//! the DMA queues fill one slot while the PE works on the other: the queues are in order, and
//! a load emitted after a compute step could not start before that step's stores), each
//! step's segment marked at the outermost level whose iteration it starts. With
//! [`Planner::sampling`] set, a loop with many iterations emits only its first ones
//! (`2p + 2` for a period of `p` iterations: the rotations of the loop repeat every `p`) and
//! its last `p + 2`, and skips whole periods in between. The skipped iterations repeat the
//! period before them: the same on-chip places, the same instruction shapes, parameters
//! stepping by the same amount. So at a gap the planner
//! - checks that the two periods before it emitted as many instructions, matmuls and
//!   accumulation groups as each other (or refuses: the nest is not periodic there);
//! - renumbers the live accesses of the loop's run ([`NeuronCodegen::skip`]), so that the
//!   edges of the instructions after the gap name the instructions of the whole program;
//! - lets the schedule move its own state past the skipped steps (an open accumulation
//!   group's K offset);
//! - records a [`NestGap`], with which `penguin::looped::roll_nest_gapped` rolls the loop over
//!   the iterations on both sides and the skipped ones, checking that they repeat.
//!
//! The rolled function expands to what the whole plan emits, instruction for instruction
//! (the tests compare them), while the planner emits `O(periods x levels)` iterations.
//!
//! [`NeuronCodegen::skip`]: crate::NeuronCodegen::skip

use penguin::looped::{roll_nest_gapped, Item, NestGap};
use penguin::{FunctionView, IrBuilder, LoopedFunction, PirInst};

use crate::error::CodegenError;
use crate::gemm::{GemmConfig, GemmTensors, Schedule, Tiling};
use crate::neuron::CodegenStats;
use crate::plan::Planning;

use super::{Planner, KERNEL_NAME};

/// Whole iterations emitted before a gap, in periods, beyond the first two iterations (which
/// follow the nest's prologue and so may differ).
const HEAD_PERIODS: usize = 2;
/// Iterations emitted after a gap beyond one period: the last two (an edge tile, a ragged K
/// chunk) may differ.
const TAIL_EXTRA: usize = 2;
/// Steps a sampled nest may have: the step index and the unrolled instruction ids are
/// counted in `u32`-sized budgets well before they overflow.
const MAX_STEPS: u64 = 1 << 30;

/// A GEMM planned in loops ([`plan_sampled`]): the rolled function and what the whole plan
/// would have counted.
#[derive(Clone, Debug)]
pub struct SampledPlan {
    /// The plan's function rolled into loops; [`LoopedFunction::expand`] gives the whole
    /// plan's function.
    pub looped: LoopedFunction,
    /// What the codegen layer counted, skipped iterations included.
    pub stats: CodegenStats,
    /// What was planned.
    pub config: GemmConfig,
    /// How C and K are cut.
    pub tiling: Tiling,
    /// The HBM tensors by role (ids in [`Self::looped`]'s header).
    pub tensors: GemmTensors,
    /// Instructions the planner emitted (the rest were skipped).
    pub emitted: usize,
}

/// Where a loop of the nest skips: iterations `[h, h + g)` of `t`, `g` a multiple of the
/// period `p`, with `ahead` more iterations after it (loads that run that far ahead of their
/// compute reach the loop's last iterations from there); `None` when the loop is too short
/// to skip a whole period.
fn gap(t: usize, p: usize, ahead: usize) -> Option<(usize, usize)> {
    let (head, tail) = (HEAD_PERIODS * p + 2, p + TAIL_EXTRA + ahead);
    if p == 0 || t < head + tail + p {
        return None;
    }
    let g = (t - head - tail) / p * p;
    Some((t - tail - g, g))
}

/// [`plan_sampled_skipping`] plans in loops only a nest that emits at most `1 / SKIP_FACTOR`
/// of its steps (half of them): with fewer skipped, the loops cost more to lower and model
/// than the instructions they save (a looped program that does not jump is modeled about
/// half as fast as the unrolled one, and lowered loop by loop slower). Measured (plan, lower
/// and model, best of two): at 39% of the steps emitted, `hoisted` at 2048x8192x8192 takes
/// 61 ms in loops against 76 ms whole and `blocked-mnk` at 8192^3 with 512x4096x512 blocks 137
/// against 151; at 63%, `blocked-mnk` at 4096x8192x8192 with 1024x2048x512 blocks 178 against
/// 96 and `blocked-mn` at 8192^3 with 512x1024 blocks 286 against 169.
const SKIP_FACTOR: u64 = 2;

/// The steps a sampled nest emits when every gap is taken: at each level, the iterations
/// around its gap (all of them when it has none), each emitting the level below.
fn sampled_steps(dims: &[usize], periods: &[usize], ahead: usize) -> u64 {
    dims.iter().zip(periods).fold(1u64, |n, (&t, &p)| {
        let kept = gap(t, p.max(1), ahead).map_or(t, |(_, g)| t - g);
        n.saturating_mul(kept as u64)
    })
}

/// What the planner had emitted at the start of an iteration: program instructions (skipped
/// ones included), matmuls, accumulation groups, emitted instructions.
type Snapshot = [u64; 4];

/// A regular nest being emitted: its shape and the schedule's hooks.
pub(super) struct Nest<'n, S, P> {
    /// Trip counts, outermost first.
    pub(super) dims: &'n [usize],
    /// Each level's period in iterations (see the module doc).
    pub(super) periods: &'n [usize],
    /// Iterations by which some loads run ahead of their compute beyond the next step (the
    /// PE transpose queue's prefetch): a loop's tail after its gap is that much longer.
    pub(super) ahead: usize,
    /// The step at an index of the nest (mixed radix over `dims`).
    pub(super) step: &'n dyn Fn(usize) -> S,
    /// The loads of a step (emitted in the segment of the step before it).
    pub(super) load: &'n mut dyn FnMut(&mut P, usize, S) -> Result<(), CodegenError>,
    /// The compute of a step.
    pub(super) compute: &'n mut dyn FnMut(&mut P, usize, S) -> Result<(), CodegenError>,
    /// The schedule's state moved past skipped steps `[from, to)` (whose loads and compute
    /// were not emitted; the loads of step `to` were those of step `from`, the same views).
    pub(super) skip: &'n mut dyn FnMut(&mut P, usize, usize) -> Result<(), CodegenError>,
}

impl<S: Copy, P> Nest<'_, S, P> {
    /// Steps of one iteration of the loop at `level`.
    fn stride(&self, level: usize) -> usize {
        self.dims[level + 1..].iter().product()
    }

    /// The outermost level whose iteration starts at step `i`.
    fn level_of(&self, i: usize) -> u32 {
        let levels = self.dims.len();
        (0..levels).find(|&l| i.is_multiple_of(self.stride(l).max(1))).unwrap_or(levels.saturating_sub(1)) as u32
    }
}

impl<'a, B: IrBuilder> Planner<'a, B> {
    /// Emit a regular nest software-pipelined (see the module doc): every step, or with
    /// [`Planner::sampling`] set the steps of the iterations around each gap.
    pub(super) fn pipelined_nest<S: Copy>(&mut self, nest: &mut Nest<'_, S, Self>) -> Result<(), CodegenError> {
        let total = nest.dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64)).unwrap_or(u64::MAX);
        if total == 0 || nest.dims.is_empty() {
            return Ok(());
        }
        if self.sampling && total > MAX_STEPS {
            return Err(CodegenError::Unsupported(format!("a nest of {total} steps is too long to plan in loops")));
        }
        if self.sampling {
            self.sampled_steps = match self.gap_rule {
                GapRule::Never => total,
                GapRule::Any | GapRule::SkippingHalf => sampled_steps(nest.dims, nest.periods, nest.ahead),
            };
            let emitted = self.sampled_steps;
            if self.gap_rule == GapRule::SkippingHalf && emitted.saturating_mul(SKIP_FACTOR) > total {
                return Err(CodegenError::Unsupported(format!(
                    "its loops are too short to skip much: {emitted} of the nest's {total} steps would be emitted"
                )));
            }
        }
        let total = total as usize;
        (nest.load)(self, 0, (nest.step)(0))?;
        if !self.sampling {
            for i in 0..total {
                self.segment(nest, i, total)?;
            }
            return Ok(());
        }
        self.sampled_level(nest, 0, 0, total)
    }

    /// Step `i`'s segment: its mark, the loads of step `i + 1`, its compute.
    fn segment<S: Copy>(&mut self, nest: &mut Nest<'_, S, Self>, i: usize, total: usize) -> Result<(), CodegenError> {
        let before = self.cg.function().num_insts();
        self.mark(nest.level_of(i));
        if i + 1 < total {
            (nest.load)(self, i + 1, (nest.step)(i + 1))?;
        }
        (nest.compute)(self, i, (nest.step)(i))?;
        // After the second step of a sampled nest (always emitted; the first also loads what
        // every step shares): room for the rest of its emitted steps, at as many instructions
        // each (a hint: an arena grown by doubling is copied into fresh memory each time).
        if i == 1 && self.sampled_steps > 2 {
            let second = (self.cg.function().num_insts() - before) as u64;
            let room = second.saturating_mul(self.sampled_steps - 2).min(super::MAX_INST_RESERVE);
            self.cg.reserve_insts(usize::try_from(room).unwrap_or(0));
        }
        Ok(())
    }

    fn snapshot(&self) -> Snapshot {
        let stats = self.cg.stats();
        [self.cg.program_len(), stats.matmuls, stats.psum_groups, self.cg.function().num_insts() as u64]
    }

    /// The number in the whole program of emitted instruction `e`.
    fn unrolled(&self, e: usize) -> u64 {
        let k = self.gap_skips.partition_point(|g| g.0 as usize <= e);
        e as u64 + if k == 0 { 0 } else { self.gap_skips[k - 1].1 }
    }

    /// Whether the period from `a` to `b` and the one from `b` to `now` emitted the same:
    /// as many instructions, matmuls and groups, and instruction for instruction edges of the
    /// same kinds, each reaching back as far (it steps with the loop) or to the same
    /// instruction before the loop's run (`run_start`: an access no iteration supersedes), so
    /// that the roll makes one loop of them. A loop whose edges grow from period to period
    /// (reads that no write retires) is emitted whole.
    fn periods_repeat(&self, [a, b, now]: [Snapshot; 3], run_start: u64) -> bool {
        if (0..4).any(|x| b[x] - a[x] != now[x] - b[x]) {
            return false;
        }
        let f = self.cg.function();
        let (a, b, len) = (a[3] as usize, b[3] as usize, (now[3] - b[3]) as usize);
        (0..len).all(|k| {
            let (x, y) = (f.layout[a + k], f.layout[b + k]);
            let (ux, uy) = (self.unrolled(a + k), self.unrolled(b + k));
            let (dx, dy) = (f.deps(x), f.deps(y));
            dx.len() == dy.len()
                && dx.iter().zip(dy).all(|(p, q)| {
                    let (fp, fq) = (u64::from(p.from.0), u64::from(q.from.0));
                    p.kind == q.kind && (ux - fp == uy - fq || fp == fq && fp < run_start)
                })
        })
    }

    /// One run of the loop at `level` whose first step is `base`, with a gap when it is long
    /// and its periods repeat.
    fn sampled_level<S: Copy>(
        &mut self,
        nest: &mut Nest<'_, S, Self>,
        level: usize,
        base: usize,
        total: usize,
    ) -> Result<(), CodegenError> {
        let (trips, stride, period) = (nest.dims[level], nest.stride(level), nest.periods[level].max(1));
        let mut gap = if self.gap_rule == GapRule::Never { None } else { gap(trips, period, nest.ahead) };
        let run_start = self.cg.program_len();
        let mut before: [Snapshot; 2] = [[0; 4]; 2];
        let mut j = 0;
        while j < trips {
            if let Some((h, g)) = gap {
                if j + 2 * period == h {
                    before[0] = self.snapshot();
                } else if j + period == h {
                    before[1] = self.snapshot();
                } else if j == h {
                    gap = None;
                    if self.periods_repeat([before[0], before[1], self.snapshot()], run_start) {
                        self.skip_periods(
                            nest,
                            (level, period),
                            (run_start, before[1]),
                            (base + h * stride, g, stride),
                        )?;
                        j += g;
                        continue;
                    }
                }
            }
            if level + 1 < nest.dims.len() {
                self.sampled_level(nest, level + 1, base + j * stride, total)?;
            } else {
                self.segment(nest, base + j, total)?;
            }
            j += 1;
        }
        Ok(())
    }

    /// Skip `g` iterations of `stride` steps from step `from`, the period before them
    /// starting at `last`: renumber, let the schedule move on, record the gap.
    fn skip_periods<S: Copy>(
        &mut self,
        nest: &mut Nest<'_, S, Self>,
        (level, period): (usize, usize),
        (run_start, last): (u64, Snapshot),
        (from, g, stride): (usize, usize, usize),
    ) -> Result<(), CodegenError> {
        let now = self.snapshot();
        let periods = (g / period) as u64;
        let n = |x: usize| (now[x] - last[x]).saturating_mul(periods);
        self.cg.skip(run_start, (now[0] - last[0], periods), n(1), n(2))?;
        (nest.skip)(self, from, from + g * stride)?;
        let too_many = || CodegenError::Unsupported("the loop skips more periods than a gap can count".into());
        let at = u32::try_from(self.cg.function().num_insts()).map_err(|_| too_many())?;
        let skipped = self.cg.program_len() - self.cg.function().num_insts() as u64;
        self.gap_skips.push((at, skipped));
        self.gaps.push(NestGap {
            at,
            level: level as u32,
            period: u32::try_from(period).map_err(|_| too_many())?,
            skipped: u32::try_from(periods).map_err(|_| too_many())?,
        });
        Ok(())
    }
}

/// Whether [`plan_sampled`] covers `cfg`: every explicit schedule (`auto` is a search).
pub fn plans_in_loops(cfg: &GemmConfig) -> bool {
    cfg.schedule != Schedule::Auto
}

/// Plan `cfg` in loops ([`SampledPlan`]), its blocks decided as `planning` says: the
/// schedule's nest is emitted with gaps and rolled along them, so planning costs about the
/// same at any size. Covers what [`plans_in_loops`] says; anything else is
/// [`CodegenError::Unsupported`] (plan it whole).
pub fn plan_sampled<B: IrBuilder>(
    cfg: &GemmConfig,
    planning: Planning,
    new_base: &dyn Fn(&str) -> B,
) -> Result<SampledPlan, CodegenError> {
    plan_sampled_with(cfg, planning, GapRule::Any, new_base)
}

/// [`plan_sampled`] of a GEMM whose loops are long enough to skip at least half of the
/// nest's steps; a shorter nest is [`CodegenError::Unsupported`] before anything is emitted
/// (planned whole, it costs less to lower and model than in loops).
pub fn plan_sampled_skipping<B: IrBuilder>(
    cfg: &GemmConfig,
    planning: Planning,
    new_base: &dyn Fn(&str) -> B,
) -> Result<SampledPlan, CodegenError> {
    plan_sampled_with(cfg, planning, GapRule::SkippingHalf, new_base)
}

/// Which gaps a sampled nest takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GapRule {
    /// Every gap whose periods repeat ([`plan_sampled`]).
    Any,
    /// The same, refusing a nest that would skip less than half of its steps
    /// ([`plan_sampled_skipping`]).
    SkippingHalf,
    /// None: the nest is emitted whole and rolled where it repeats (the fallback of a
    /// nest whose gapped roll fails).
    Never,
}

/// [`plan_sampled`] or [`plan_sampled_skipping`], as `rule` says.
fn plan_sampled_with<B: IrBuilder>(
    cfg: &GemmConfig,
    planning: Planning,
    rule: GapRule,
    new_base: &dyn Fn(&str) -> B,
) -> Result<SampledPlan, CodegenError> {
    cfg.validate()?;
    if !plans_in_loops(cfg) {
        return Err(CodegenError::Unsupported("auto is a search: its candidates are planned".into()));
    }
    planning.apply(cfg, &|c, single| sampled_buffered(c, single, rule, new_base))
}

/// The instructions of `f` in program order, moved out of it (copied where its layout is not
/// its arena's order).
fn emitted_items(mut f: penguin::Function) -> Vec<Item<PirInst>> {
    let in_order = f.layout.iter().enumerate().all(|(k, id)| id.index() == k) && f.layout.len() == f.insts.len();
    if !in_order {
        return f
            .layout
            .iter()
            .filter_map(|&id| {
                let data = f.inst(id)?.clone();
                Some(Item::Inst(PirInst { data, deps: f.deps(id).to_vec(), loc: f.srclocs.get_shared(id).cloned() }))
            })
            .collect();
    }
    let locs: Vec<_> = (0..f.insts.len()).map(|k| f.srclocs.get_shared(penguin::InstId(k as u32)).cloned()).collect();
    let (insts, deps) = (std::mem::take(&mut f.insts), std::mem::take(&mut f.deps));
    insts.into_iter().zip(deps).zip(locs).map(|((data, deps), loc)| Item::Inst(PirInst { data, deps, loc })).collect()
}

/// [`plan_sampled`] of one configuration as given, single-buffering blocks that do not fit
/// twice when `single` is set (as [`super::plan_buffered`] does), taking gaps as `rule` says.
fn sampled_buffered<B: IrBuilder>(
    cfg: &GemmConfig,
    single: bool,
    rule: GapRule,
    new_base: &dyn Fn(&str) -> B,
) -> Result<SampledPlan, CodegenError> {
    match sampled_once(cfg, single, rule, new_base)? {
        Ok(plan) => Ok(plan),
        // Periods that the planner's check passed but the roll finds different in shape: the
        // nest is emitted without gaps (and rolled where it repeats), unless only a plan that
        // skips is wanted.
        Err(e) if rule != GapRule::Any => Err(CodegenError::Unsupported(e)),
        Err(_) => sampled_once(cfg, single, GapRule::Never, new_base)?.map_err(CodegenError::Unsupported),
    }
}

/// One sampled planning of `cfg` with gaps as `rule` says: the plan, or why its roll failed.
fn sampled_once<B: IrBuilder>(
    cfg: &GemmConfig,
    single: bool,
    rule: GapRule,
    new_base: &dyn Fn(&str) -> B,
) -> Result<Result<SampledPlan, String>, CodegenError> {
    let mut p = Planner::new(cfg, new_base(KERNEL_NAME), true)?;
    p.allow_single = single;
    p.gap_rule = rule;
    p.emit_nest()?;
    let (nest, gaps) = (std::mem::take(&mut p.nest), std::mem::take(&mut p.gaps));
    let tensors = GemmTensors { a: p.a, a_tags: p.a_tags, b: p.b, c: p.c };
    let single_buffered = p.single_buffered;
    let mut cg = p.cg;
    cg.finalize_kernel()?;
    let (stats, unrolled) = (CodegenStats { single_buffered, ..cg.stats() }, cg.program_len());
    let f = cg.take_function();
    let header = f.without_insts();
    let body = emitted_items(f);
    let emitted = body.len();
    let body = match roll_nest_gapped(body, &nest, &gaps) {
        Ok(body) => body,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let looped = LoopedFunction { header, body };
    if looped.unrolled_len() != unrolled {
        return Err(CodegenError::Internal(format!(
            "the rolled plan unrolls to {} instructions, the planner counted {unrolled}",
            looped.unrolled_len()
        )));
    }
    Ok(Ok(SampledPlan { looped, stats, config: cfg.clone(), tiling: Tiling::of(cfg), tensors, emitted }))
}

#[cfg(test)]
mod tests {
    use penguin::{whole_tile, ComputeEngine, DType, Dep, DepKind, Function, InstData, InstId, Memory, MemsetData};

    use super::*;

    /// A function of memsets of `values`, each after the one before it.
    fn memsets(values: &[f64]) -> Function {
        let mut f = Function::new("k");
        let t = penguin::TensorData {
            name: "x".into(),
            shape: vec![128, 8],
            dtype: DType::Fp32,
            memory: Memory::Sbuf,
            address: Some(0),
        };
        let dst = whole_tile(penguin::TensorId(0), &t);
        f.add_tensor(t);
        for (k, &value) in values.iter().enumerate() {
            let deps =
                k.checked_sub(1).map(|p| Dep { from: InstId(p as u32), kind: DepKind::Waw }).into_iter().collect();
            f.push_inst(InstData::Memset(MemsetData { engine: ComputeEngine::Dve, dst: dst.clone(), value }), deps);
        }
        f
    }

    /// The value and edges of each item.
    fn values(items: &[Item<PirInst>]) -> Vec<(f64, Vec<Dep>)> {
        items
            .iter()
            .map(|it| match it {
                Item::Inst(PirInst { data: InstData::Memset(m), deps, .. }) => (m.value, deps.clone()),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    /// The emitted instructions come out in program order, moved from the arena or, where
    /// the layout is not the arena's order, copied in the layout's.
    #[test]
    fn emitted_items_follow_the_layout() {
        let f = memsets(&[1.0, 2.0, 3.0]);
        let edge = |p: u32| vec![Dep { from: InstId(p), kind: DepKind::Waw }];
        let in_order = vec![(1.0, vec![]), (2.0, edge(0)), (3.0, edge(1))];
        assert_eq!(values(&emitted_items(f.clone())), in_order);
        let mut reordered = f;
        reordered.layout.swap(0, 2);
        let want = vec![(3.0, edge(1)), (2.0, edge(0)), (1.0, vec![])];
        assert_eq!(values(&emitted_items(reordered)), want);
    }
}
