//! The GEMM loop nests: how output tiles, K sub-tiles and operand loads are ordered, and
//! which SBUF buffers hold the operands.
//!
//! Every schedule emits the same kinds of steps, so they differ only in reuse:
//! - **load**: a DMA brings an operand tile from HBM into an SBUF buffer; when it converts to
//!   the matmul dtype it is an `OffloadedMemCast` spread over the DMA queues. A^T comes from
//!   A `[M, K]` by a transposing access pattern (trn2/trn3), or by a natural-layout load and PE
//!   transposes through PSUM (trn1, or `pe_transpose` elsewhere) unless A is given as `[K, M]`;
//! - **matmul**: one K sub-tile into the output tile's PSUM accumulation group
//!   (`combine_*_matmult_tiles` gives START / ACCU / STOP);
//! - **evacuate**: copy the stopped group from PSUM to SBUF on ACT or DVE (casting to the
//!   output dtype) and DMA it to HBM.
//!
//! The loop nests:
//! - `naive`: for each m tile, n tile: for each k tile load the A^T tile and the B tile (two
//!   rotating buffers each), matmul; evacuate.
//! - `hoisted`: for each m tile load its whole K stripe of A^T once; for each n tile load its
//!   whole K stripe of B; run the K matmuls; evacuate.
//! - `blocked-mn`: for each M block load the A^T stripes of its tiles; for each N block load
//!   the B stripes of its tiles; for every (m, n) pair in the blocks run its K matmuls;
//!   evacuate. The loop order picks which block loop is outside; the inner loop runs in snake
//!   order and a block still resident in either of its two slots is not loaded again.
//! - `blocked-mnk`: blocks in all three; for each (M block, N block) keep an fp32 result
//!   block in SBUF; for each K block load the A^T and B blocks, accumulate each tile's K-block
//!   partial in PSUM and add it into the result block on VectorE and GpSimd in turn; store the
//!   block once (the store DMA casts to the output dtype).
//!
//! A buffer refilled inside a loop has two slots, so the DMA queues can fill the next slot
//! while the PE works on the other (double buffering): the dependency edges (and so the
//! semaphores) only order a refill after the last read of the same slot. The exceptions have
//! one: a lone block (loaded once), blocked-mn's outer block when two do not fit SBUF (its
//! reload waits for the last reads of the previous one), an outer A transposed on the PE,
//! blocked-mnk's result block when two do not fit, and, with explicit blocks, any refilled
//! block whose two slots do not fit SBUF (the inner block first, then the outer one; see
//! [`crate::Planning::Fixed`]). A single-slot block is loaded by its step's compute, after the previous
//! step's last reads. blocked-mn emits its next inner block in K pieces between the current
//! step's m tiles (the queues run in order: a whole block queued at once would hold back loads
//! the current step still needs). A transposed on the PE is
//! transposed just before its first matmul: hoisted and blocked-mn prefetch its natural stripes
//! two ahead, blocked-mnk loads the natural K block of the next step ahead. Accumulation groups
//! rotate over the PSUM banks (one bank is kept for the PE transposes when there are any);
//! that rotation, the evacuation engines and the DMA queues follow each group's and each
//! transfer's place in the loop nest ([`rotation`]), so the streams repeat from step to step.
//!
//! Every schedule marks where each iteration of its loops starts ([`GemmPlan::nest`], a
//! `penguin::looped::NestMark` per iteration: the place of its first instruction and the
//! loop's depth), so the plan rolls along its own nest ([`GemmPlan::looped`]; see
//! `penguin::looped::nest` for how segments and periods roll). The levels:
//! - `naive`: 0 m tiles, 1 n tiles, 2 K chunks (one pipelined step each);
//! - `hoisted`: 0 m tiles, 1 n tiles;
//! - `blocked-mn`: 0 outer blocks, 1 inner blocks (in snake order), 2 the m tiles of a step;
//! - `blocked-mnk`: 0 outer blocks, 1 (M block, N block) pairs, 2 K blocks.
//!
//! A pipelined step's segment holds the loads of the next step before its own compute, and the
//! rotations above repeat every two steps (or [`K_PERIOD`] chunks), so the segments repeat with
//! a period of one or two iterations.

mod auto;
mod blocked_mn;
mod blocked_mnk;
mod buffers;
mod emit;
mod hoisted;
mod naive;
mod pe_transpose;
mod rotation;
mod sampled;

use penguin::looped::{NestGap, NestMark};
use penguin::{AccessPattern, DType, FunctionView, InstTile, IrBuilder, Memory, NDTile, PerfMode, TensorId};

use crate::error::CodegenError;
use crate::gemm::{k_chunks, GemmConfig, GemmPlan, GemmTensors, KChunk, Schedule, SparseA, Tiling, M_TILE, N_TILE};
use crate::neuron::NeuronCodegen;

use blocked_mnk::mnk_natural_width;
use pe_transpose::PeQueue;

pub use rotation::K_PERIOD;
pub use sampled::{plan_sampled, plan_sampled_skipping, plans_in_loops, SampledPlan};

pub(crate) use auto::search_plans;
pub use auto::{
    auto_candidates, choose_auto, estimate_ns, estimate_ns_with, AutoChoice, AutoCost, AutoJob, AutoJobCost,
    AUTO_SHORTLIST, AUTO_TIME_TOLERANCE,
};

/// The name of every kernel the planner opens.
const KERNEL_NAME: &str = "gemm";

/// Plan one configuration as given, single-buffering blocks that do not fit twice only when
/// `single` is set (otherwise they fail with [`CodegenError::SbufCapacity`], as shrinking the
/// blocks wants). The planner opens its kernel with `new_base(kernel_name)`, which must return
/// an empty builder for a kernel of that name; [`NeuronCodegen`] drives it (every instruction
/// through `process_new_neuroninst`), and the plan's function is what its `finalize` returns.
///
/// `auto` needs a cost model; planned here (without one) it plans `blocked-mn`.
pub(crate) fn plan_buffered<B: IrBuilder>(
    cfg: &GemmConfig,
    single: bool,
    new_base: &dyn Fn(&str) -> B,
) -> Result<GemmPlan, CodegenError> {
    cfg.validate()?;
    let mut p = Planner::new(cfg, new_base(KERNEL_NAME), false)?;
    p.allow_single = single;
    p.emit_nest()?;
    let single_buffered = p.single_buffered;
    let nest = p.nest;
    let tensors = GemmTensors { a: p.a, a_tags: p.a_tags, b: p.b, c: p.c };
    let mut cg = p.cg;
    cg.finalize_kernel()?;
    let stats = crate::CodegenStats { single_buffered, ..cg.stats() };
    let function = cg.finalize()?;
    Ok(GemmPlan { function, stats, config: cfg.clone(), nest, tiling: Tiling::of(cfg), tensors })
}

/// Plan with `plan_one` (a configuration, whether blocks may be single-buffered) with the
/// configured blocks, or, when they do not fit SBUF, with the largest smaller blocks that do
/// (halving N, then M, then K blocks): what default block sizes should do. Blocks are
/// single-buffered only when no blocking fits with two slots. Each attempt plans afresh.
pub(crate) fn fitting<T>(
    cfg: &GemmConfig,
    plan_one: &dyn Fn(&GemmConfig, bool) -> Result<T, CodegenError>,
) -> Result<T, CodegenError> {
    match shrinking(cfg, false, plan_one) {
        Err(CodegenError::SbufCapacity { .. }) => shrinking(cfg, true, plan_one),
        other => other,
    }
}

/// [`fitting`] with or without single buffering.
fn shrinking<T>(
    cfg: &GemmConfig,
    single: bool,
    plan_one: &dyn Fn(&GemmConfig, bool) -> Result<T, CodegenError>,
) -> Result<T, CodegenError> {
    let mut c = cfg.clone();
    loop {
        match plan_one(&c, single) {
            Err(e @ CodegenError::SbufCapacity { .. }) => {
                let b = &mut c.blocks;
                if b.n > N_TILE {
                    b.n = (b.n / 2).max(N_TILE);
                } else if b.m > M_TILE {
                    b.m = (b.m / 2).max(M_TILE);
                } else if b.k > 128 && c.schedule == Schedule::BlockedMnk {
                    b.k = (b.k / 2).max(128);
                } else {
                    return Err(e);
                }
            }
            other => return other,
        }
    }
}

/// A place in an SBUF buffer: the tensor and the element offset inside each partition.
#[derive(Clone, Copy, Debug)]
struct Slot {
    tensor: TensorId,
    offset: i64,
    /// The int16 tag twin of a sparse stationary buffer (its offsets are the value slot's
    /// over 4: four packed tags per word).
    tags: Option<TensorId>,
    /// A sparse moving tile of a block loaded wide: elements between its `CR` rows (the
    /// block's width); 0 when the rows are contiguous (`[CR, nsz]` in one run).
    row_stride: i64,
}

impl Slot {
    fn at(self, elems: i64) -> Slot {
        Slot { offset: self.offset + elems, ..self }
    }
}

/// Which matmul operand a buffer or a load is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operand {
    /// The stationary operand, A^T.
    Lhs,
    /// The moving operand, B.
    Rhs,
}

/// A stationary operand ready for a matmul.
struct Lhs {
    tile: InstTile,
    tags: Option<InstTile>,
}

/// The state of one GEMM being planned over the base builder `B`.
struct Planner<'a, B: IrBuilder> {
    cg: NeuronCodegen<B>,
    cfg: &'a GemmConfig,
    a: TensorId,
    a_tags: Option<TensorId>,
    b: TensorId,
    c: TensorId,
    pack: u32,
    chunks: Vec<KChunk>,
    k_total: u64,
    /// PE rows per matmul and how many row groups rotate (row tiling for small K).
    pe_rows: u32,
    pe_positions: u32,
    /// The PSUM banks of the accumulation groups: one tensor and each bank's offset in it.
    psum_banks: Vec<(TensorId, i64)>,
    /// A transposed on the PE (see [`GemmConfig::transposes_lhs_on_pe`]): the two
    /// natural-layout buffers and the PSUM bank for the transposes.
    pe_transpose: Option<([TensorId; 2], TensorId)>,
    out: [TensorId; 2],
    /// The stripe schedules' queue of just-in-time PE transposes of A.
    pe_queue: PeQueue,
    /// Output tiles of a full step (`G` of [`rotation`]) and the PSUM banks in rotation.
    step_groups: usize,
    rotating_banks: usize,
    /// Whether a refilled block whose two slots do not fit may get one.
    allow_single: bool,
    /// The blocks that got one slot for SBUF capacity.
    single_buffered: crate::SingleBuffered,
    /// Where each iteration of the nest's loops starts ([`Planner::mark`]).
    nest: Vec<NestMark>,
    /// Whether long loops skip repeating iterations ([`sampled`]).
    sampling: bool,
    /// Which gaps a sampled nest takes.
    gap_rule: sampled::GapRule,
    /// The steps a sampled nest emits with its gaps taken (0 unless sampling): room for them
    /// is reserved after the second.
    sampled_steps: u64,
    /// The iterations skipped, in order of place.
    gaps: Vec<NestGap>,
    /// Each gap's place and the instructions skipped up to it.
    gap_skips: Vec<(u32, u64)>,
}

/// Elements per partition one K chunk of an operand occupies in a buffer.
fn chunk_width(free: u64, pack: u32) -> i64 {
    (free * u64::from(pack)) as i64
}

/// A generous estimate of the instructions a plan with `nk` K chunks emits, reserved up front
/// so that the function's instruction arena is not grown by doubling (every doubling copies
/// it into fresh memory, which is most of the planning time of a large GEMM). Reserved room
/// that stays unused is never touched, so over-estimating is nearly free; an estimate that
/// falls short only means that the arena grows as before. It is capped at
/// [`MAX_INST_RESERVE`], so that a plan too large to build does not reserve for it.
///
/// Every matmul comes with at most two operand loads (naive; the other schedules load less
/// often), each of which may take two DMAs and two memsets in double row or a tags load when
/// sparse; every accumulation group (one per output tile, per K block in `blocked-mnk`) adds
/// at most a few evacuation, addition and store steps.
fn inst_estimate(cfg: &GemmConfig, nk: usize) -> usize {
    let tiles = cfg.m.div_ceil(M_TILE).saturating_mul(cfg.n.div_ceil(N_TILE));
    let matmuls = tiles.saturating_mul(nk as u64);
    let per_matmul = match (cfg.perf_mode, cfg.sparsity) {
        (PerfMode::DoubleRow, _) => 9,
        (_, Some(_)) => 5,
        _ if cfg.transposes_lhs_on_pe() => 5,
        _ => 3,
    };
    let k_blocks = if cfg.schedule == Schedule::BlockedMnk { cfg.k.div_ceil(cfg.blocks.k.max(1)) } else { 1 };
    let groups = tiles.saturating_mul(k_blocks);
    let n = matmuls.saturating_mul(per_matmul).saturating_add(groups.saturating_mul(4)).saturating_add(64);
    usize::try_from(n.min(MAX_INST_RESERVE)).unwrap_or(0)
}

/// The most instructions [`inst_estimate`] reserves room for (a few times the largest plan
/// that the CLI's memory budget lets it unroll).
const MAX_INST_RESERVE: u64 = 1 << 21;

fn on_chip(tensor: TensorId, memory: Memory, dtype: DType, start: u32, parts: u32, offset: i64, free: u32) -> InstTile {
    InstTile { tensor, memory, dtype, ap: AccessPattern::on_chip(start, parts, offset, free) }
}

fn hbm(tensor: TensorId, dtype: DType, ap: AccessPattern) -> InstTile {
    InstTile { tensor, memory: Memory::Hbm, dtype, ap }
}

impl<'a, B: IrBuilder> Planner<'a, B> {
    /// The planner of `cfg` over `base`; `sampling` when long loops skip repeating
    /// iterations ([`sampled`]: the instructions emitted do not grow with the GEMM, so none
    /// are reserved).
    fn new(cfg: &'a GemmConfig, base: B, sampling: bool) -> Result<Self, CodegenError> {
        let mut cg = NeuronCodegen::new(base, cfg.target, KERNEL_NAME);
        let (a, a_tags) = match cfg.sparsity {
            Some(p) => {
                let shape = SparseA::values_shape(cfg.m, cfg.k, p).to_vec();
                let tags = SparseA::tags_shape(cfg.m, cfg.k, p).to_vec();
                (cg.add_input("a", shape, cfg.input_dtype)?, Some(cg.add_input("a_tags", tags, DType::Int16)?))
            }
            None => (cg.add_input("a", cfg.lhs_shape(), cfg.input_dtype)?, None),
        };
        let b = cg.add_input("b", vec![cfg.k, cfg.n], cfg.input_dtype)?;
        let c = cg.add_output("c", vec![cfg.m, cfg.n], cfg.out_dtype)?;
        let pack = if cfg.perf_mode == PerfMode::DoubleRow { 2 } else { 1 };
        let (chunks, k_total) = k_chunks(cfg);
        if !sampling {
            cg.reserve_insts(inst_estimate(cfg, chunks.len()));
        }
        let dense = cfg.perf_mode == PerfMode::None && cfg.sparsity.is_none();
        // Row tiling rotates operands over partition groups, which the naive schedule's
        // per-step loads can follow; the stripe schedules keep operands at partition 0.
        let naive = cfg.schedule == Schedule::Naive;
        let (pe_rows, pe_positions) = if !naive {
            (128, 1)
        } else if dense && cfg.k <= 32 && cfg.target.info().pe_tile_32 {
            (32, 4)
        } else if dense && cfg.k <= 64 {
            (64, 2)
        } else {
            (128, 1)
        };
        let out_nd = NDTile { partitions: 128, free: vec![N_TILE as u32], dtype: cfg.out_dtype };
        let out = [cg.alloc_sbuf("out0", &out_nd)?, cg.alloc_sbuf("out1", &out_nd)?];
        let needs_pe_transpose = cfg.transposes_lhs_on_pe();
        let banks = cfg.target.info().psum_num_banks;
        let group_banks = if needs_pe_transpose { banks - 1 } else { banks };
        let psum = cg.alloc_psum_banks("psum", 0, group_banks, 128)?;
        let psum_banks = (0..group_banks).map(|b| (psum, i64::from(b) * N_TILE as i64)).collect();
        let pe_transpose = if needs_pe_transpose {
            // The stripe schedules load a whole K stripe of A in its natural layout at once,
            // `blocked-mnk` the K block of each m tile of its M block.
            let width = match cfg.schedule {
                Schedule::Naive => 128,
                Schedule::BlockedMnk => {
                    let tiles = cfg.blocks.m.div_ceil(M_TILE).clamp(1, cfg.m.div_ceil(M_TILE));
                    (u64::from(mnk_natural_width(cfg)) * tiles) as u32
                }
                _ => cfg.k as u32,
            };
            let nd = NDTile { partitions: 128, free: vec![width], dtype: cfg.lhs_dtype };
            let nat = [cg.alloc_sbuf("a_nat0", &nd)?, cg.alloc_sbuf("a_nat1", &nd)?];
            Some((nat, cg.alloc_psum_bank("psum_transpose", banks - 1, 128)?))
        } else {
            None
        };
        Ok(Planner {
            cg,
            cfg,
            a,
            a_tags,
            b,
            c,
            pack,
            chunks,
            k_total,
            pe_rows,
            pe_positions,
            psum_banks,
            pe_transpose,
            out,
            pe_queue: PeQueue::default(),
            step_groups: 1,
            rotating_banks: 1,
            allow_single: false,
            single_buffered: crate::SingleBuffered::default(),
            nest: Vec::new(),
            sampling,
            gap_rule: sampled::GapRule::Any,
            sampled_steps: 0,
            gaps: Vec::new(),
            gap_skips: Vec::new(),
        })
    }
}

impl<B: IrBuilder> Planner<'_, B> {
    /// Emit the configuration's loop nest (`auto`, planned without a search, plans
    /// `blocked-mn`).
    fn emit_nest(&mut self) -> Result<(), CodegenError> {
        match self.cfg.schedule {
            Schedule::Naive => self.naive(),
            Schedule::Hoisted => self.hoisted(),
            Schedule::BlockedMn | Schedule::Auto => self.blocked_mn(),
            Schedule::BlockedMnk => self.blocked_mnk(),
        }
    }

    /// Record that an iteration of the nest's loop at depth `level` (0 outermost; and of
    /// every deeper loop) starts with the next instruction.
    fn mark(&mut self, level: u32) {
        let at = u32::try_from(self.cg.function().num_insts()).unwrap_or(u32::MAX);
        self.nest.push(NestMark { at, level });
    }
}

/// Step `i` of two nested loops of `inner` iterations in snake order, as (outer, inner): the
/// inner loop runs backwards on odd outer iterations, so the inner blocks still resident at
/// the end of one outer iteration start the next.
fn snake_at(i: usize, inner: usize) -> (usize, usize) {
    let inner = inner.max(1);
    let (o, j) = (i / inner, i % inner);
    (o, if o % 2 == 1 { inner - 1 - j } else { j })
}

/// The slot (of `slots`, one or two) holding the inner block of snake step `i`, and whether
/// the step must load it: a block still resident in a slot is used again; otherwise it goes
/// to the slot the previous step did not use (whose last reader is the step before that), or
/// to the only slot. With two slots inner block `b` always lands in slot `b mod 2` (the first
/// run fills them alternately, and each later run starts with the two blocks the last one
/// ended with), and every run after the first finds its first two blocks resident; with one
/// slot only its first.
fn inner_slot_at(i: usize, inner: usize, slots: usize) -> (usize, bool) {
    let inner = inner.max(1);
    let (o, j) = (i / inner, i % inner);
    let (_, b) = snake_at(i, inner);
    let resident_at_start = if slots >= 2 { 2 } else { 1 };
    let slot = if slots >= 2 { b % 2 } else { 0 };
    (slot, o == 0 || j >= resident_at_start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm::BlockSizes;
    use crate::{default_builder, plan, AutoLimits, AutoSearch, PlanRequest};
    use penguin::Target;

    /// `auto` through [`plan`] with `cost` on `threads` threads: the plan and the choice.
    fn auto(
        cfg: &GemmConfig,
        limits: &AutoLimits,
        shortlist: usize,
        threads: usize,
        cost: &(dyn Fn(&GemmPlan) -> Result<AutoCost, CodegenError> + Sync),
    ) -> Result<(GemmPlan, AutoChoice), CodegenError> {
        let hw = cfg.target.profile();
        let cost = |p: &GemmPlan| cost(p).map(|c| (c, ()));
        let search = AutoSearch { limits: *limits, hw: &hw, shortlist, threads, cost: &cost };
        let cfg = GemmConfig { schedule: Schedule::Auto, ..cfg.clone() };
        let planned = plan(&PlanRequest::new(&cfg).with_search(search), &default_builder)?;
        let choice = planned.auto.map(|(c, ())| c).ok_or_else(|| CodegenError::Internal("no choice".into()))?;
        Ok((planned.plan, choice))
    }

    fn snake(outer: usize, inner: usize) -> Vec<(usize, usize)> {
        (0..outer * inner).map(|i| snake_at(i, inner)).collect()
    }

    fn inner_slots(outer: usize, inner: usize, slots: usize) -> (Vec<usize>, Vec<bool>) {
        (0..outer * inner).map(|i| inner_slot_at(i, inner, slots)).unzip()
    }

    #[test]
    fn snake_runs_odd_outer_iterations_backwards() {
        assert_eq!(snake(3, 2), vec![(0, 0), (0, 1), (1, 1), (1, 0), (2, 0), (2, 1)]);
        assert_eq!(snake(2, 1), vec![(0, 0), (1, 0)]);
        assert!(snake(0, 4).is_empty());
    }

    /// The closed form of the slots equals simulating the two slots step by step.
    #[test]
    fn inner_slots_follow_the_resident_blocks() {
        for (outer, inner, slots) in [(3, 3, 2), (4, 4, 2), (5, 2, 2), (3, 5, 1), (4, 1, 1), (2, 7, 2)] {
            let mut resident: [Option<usize>; 2] = [None, None];
            let mut prev = 1;
            for (i, (_, b)) in snake(outer, inner).into_iter().enumerate() {
                let expected = match resident[..slots].iter().position(|r| *r == Some(b)) {
                    Some(s) => (s, false),
                    None => {
                        let s = if slots == 1 { 0 } else { 1 - prev };
                        resident[s] = Some(b);
                        (s, true)
                    }
                };
                prev = expected.0;
                assert_eq!(inner_slot_at(i, inner, slots), expected, "{outer}x{inner}, {slots} slots, step {i}");
            }
        }
    }

    #[test]
    fn resident_inner_blocks_are_not_loaded_again() {
        // Three outer x three inner: the two blocks left at the end of an outer iteration
        // start the next one.
        let (slots, fresh) = inner_slots(3, 3, 2);
        assert_eq!(slots, vec![0, 1, 0, 0, 1, 0, 0, 1, 0]);
        assert_eq!(fresh, vec![true, true, true, false, false, true, false, false, true]);
        // A single inner block is loaded once.
        let (slots, fresh) = inner_slots(4, 1, 1);
        assert_eq!((slots, fresh), (vec![0; 4], vec![true, false, false, false]));
        // One slot: only the block the previous step used is still resident.
        let (slots, fresh) = inner_slots(3, 3, 1);
        assert_eq!(slots, vec![0; 9]);
        assert_eq!(fresh, vec![true, true, true, false, true, true, false, true, true]);
    }

    /// Two candidates of equal modeled time: the one that moves fewer HBM bytes wins; a
    /// leaner one that is slower than the tolerance does not.
    #[test]
    fn auto_prefers_fewer_hbm_bytes_among_equally_fast_candidates() {
        let cfg = GemmConfig::new(512, 256, 2048, DType::Bf16, Target::Trn2);
        for (slowdown, lean_wins) in [(1.0 + AUTO_TIME_TOLERANCE / 2.0, true), (1.0 + 2.0 * AUTO_TIME_TOLERANCE, false)]
        {
            // The lean candidate (the largest M block) is `slowdown` slower.
            let cost = |plan: &GemmPlan| -> Result<AutoCost, CodegenError> {
                let lean = plan.config.schedule == Schedule::BlockedMn && plan.config.blocks.m >= 512;
                let time = if lean { 1000.0 * slowdown } else { 1000.0 };
                Ok(AutoCost { time, hbm_bytes: if lean { 1 } else { 2 } })
            };
            let (plan, choice) = auto(&cfg, &AutoLimits::default(), usize::MAX, 1, &cost).unwrap();
            let lean = plan.config.schedule == Schedule::BlockedMn && plan.config.blocks.m >= 512;
            assert_eq!(lean, lean_wins, "slowdown {slowdown}: chose {:?}", plan.config.blocks);
            assert_eq!(choice.hbm_bytes, if lean_wins { 1 } else { 2 });
            assert!(choice.evaluated > 2);
        }
    }

    /// Weighing candidates on threads weighs the same ones and chooses the same plan as the
    /// sequential search, for any thread count, with candidates that do not fit SBUF among them.
    #[test]
    fn parallel_auto_weighs_and_chooses_as_the_sequential_search() {
        // Cost: the estimate with a twist that depends on the blocks, so the choice is not the
        // estimate's first; HBM bytes from the blocks, so ties are broken.
        let cost = |plan: &GemmPlan| -> Result<AutoCost, CodegenError> {
            let c = &plan.config;
            let twist = 1.0 + ((c.blocks.m / M_TILE + 3 * c.blocks.n / N_TILE + c.blocks.k / 128) % 7) as f64 / 10.0;
            Ok(AutoCost { time: estimate_ns(c) * twist, hbm_bytes: c.blocks.m + c.blocks.n })
        };
        let mut rejections = 0;
        for ((m, k, n), shortlist) in [((512, 256, 2048), 5), ((1024, 16384, 512), usize::MAX), ((256, 16384, 8192), 5)]
        {
            let cfg = GemmConfig::new(m, k, n, DType::Bf16, Target::Trn2);
            let limits = AutoLimits::default();
            let (seq_plan, seq) = auto(&cfg, &limits, shortlist, 1, &cost).unwrap();
            rejections += seq.rejected;
            for threads in [2, 3, 8] {
                let (plan, choice) = auto(&cfg, &limits, shortlist, threads, &cost).unwrap();
                assert_eq!(choice, seq, "{m}x{k}x{n} on {threads} threads");
                assert!(plan.function == seq_plan.function, "{m}x{k}x{n} on {threads} threads: another plan");
            }
        }
        assert!(rejections > 0, "no candidate was rejected for SBUF capacity");
        // The first error in rank order stops the search, as it does sequentially.
        let cfg = GemmConfig::new(1024, 1024, 1024, DType::Bf16, Target::Trn2);
        let failing = |plan: &GemmPlan| -> Result<AutoCost, CodegenError> {
            match plan.config.schedule {
                Schedule::Naive | Schedule::Hoisted => Err(CodegenError::BadGemm(format!("{:?}", plan.config.blocks))),
                _ => cost(plan),
            }
        };
        let limits = AutoLimits::default();
        let seq = auto(&cfg, &limits, usize::MAX, 1, &failing).err();
        assert!(matches!(seq, Some(CodegenError::BadGemm(_))), "{seq:?}");
        assert_eq!(auto(&cfg, &limits, usize::MAX, 4, &failing).err(), seq);
    }

    /// The blocked schedules at their default blocks are always weighed, however the
    /// estimate ranks them: a cost that only they win is found.
    #[test]
    fn auto_weighs_the_blocked_defaults() {
        let cfg = GemmConfig::new(2048, 1024, 4096, DType::Bf16, Target::Trn2);
        for schedule in [Schedule::BlockedMn, Schedule::BlockedMnk] {
            let defaults = BlockSizes::for_schedule(schedule);
            let cost = |plan: &GemmPlan| -> Result<AutoCost, CodegenError> {
                let wanted = plan.config.schedule == schedule && plan.config.blocks == defaults;
                Ok(AutoCost { time: if wanted { 1.0 } else { 2.0 }, hbm_bytes: 0 })
            };
            // The estimate alone would not have picked it.
            let top = auto_candidates(&cfg).into_iter().min_by(|x, y| estimate_ns(x).total_cmp(&estimate_ns(y)));
            assert!(top.is_some_and(|t| (t.schedule, t.blocks) != (schedule, defaults)));
            let (plan, choice) = auto(&cfg, &AutoLimits::default(), 1, 1, &cost).unwrap();
            assert_eq!((plan.config.schedule, plan.config.blocks), (schedule, defaults));
            assert_eq!(choice.evaluated, 3, "two defaults and a shortlist of one");
        }
    }

    /// The estimate charges blocked-mnk's K-block additions: with the same blocks, more K
    /// blocks never estimate faster.
    #[test]
    fn estimate_charges_k_block_additions() {
        let mut cfg = GemmConfig::new(2048, 11008, 4096, DType::Bf16, Target::Trn2);
        cfg.schedule = Schedule::BlockedMnk;
        cfg.blocks = BlockSizes { m: 256, n: 4096, k: 128 };
        let small = estimate_ns(&cfg);
        cfg.blocks.k = 1024;
        assert!(estimate_ns(&cfg) < small);
    }
}
