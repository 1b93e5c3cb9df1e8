//! Emission (rules 4 to 7 of the design): the kernel's tensors declared through
//! `NeuronCodegen` (inputs, outputs, HBM scratch, and one tensor per allocation site at the
//! allocator's address), every record's instruction through `process_new_neuroninst` with
//! its source location, matmuls merged into their groups by `combine_matmult_tiles`,
//! `finalize_kernel` with the seed's name contracts, and the function rolled along the
//! kernel's loops.

use std::collections::{HashMap, HashSet};

use codegen::{combine_matmult_tiles, MatMultAccumulation, MatMultSubTile, NeuronCodegen};
use indexmap::IndexMap;
use penguin::looped::NestMark;
use penguin::{
    GeneratedBuilder, InstData, InstTile, LocInterner, LoopedFunction, Memory, PerfMode, Target, TensorData, TensorId,
    TilePosition, TileSize,
};

use crate::alloc::SitePlan;
use crate::build::{memory, Analysis, NkiKernel};
use crate::error::NkiError;
use crate::kinds::{self, Choice};
use crate::trace::{Buffer, Record, Trace, TracePerfMode};
use crate::view::Resolved;

/// Where a logical on-chip tile lives: its site, slot, and partition and byte offset.
#[derive(Clone, Copy, Debug)]
struct Place {
    site: usize,
    slot: u64,
    partition: u32,
    byte: u64,
}

/// Names made unique with a `_N` suffix where two collide.
#[derive(Default)]
struct Names(HashSet<String>);

impl Names {
    fn unique(&mut self, name: &str) -> String {
        let mut n = name.to_string();
        let mut k = 1;
        while !self.0.insert(n.clone()) {
            n = format!("{name}_{k}");
            k += 1;
        }
        n
    }
}

struct Emitter<'a> {
    trace: &'a Trace,
    a: &'a Analysis,
    plans: &'a [SitePlan],
    cg: NeuronCodegen<GeneratedBuilder>,
    hbm: Vec<Option<TensorId>>,
    site_tensor: Vec<TensorId>,
    place: HashMap<(u32, u64), Place>,
}

/// Emit the kernel (see the module doc).
pub(crate) fn emit(
    trace: &Trace,
    a: &Analysis,
    plans: &[SitePlan],
    target: Target,
    expected: &str,
) -> Result<NkiKernel, NkiError> {
    let cg = NeuronCodegen::new(GeneratedBuilder::new(trace.kernel.clone()), target, expected);
    let mut e = Emitter {
        trace,
        a,
        plans,
        cg,
        hbm: vec![None; a.tensors.len()],
        site_tensor: Vec::with_capacity(plans.len()),
        place: HashMap::new(),
    };
    let (inputs, outputs) = e.declare()?;
    let marks = e.instructions()?;
    let mut cg = e.cg;
    cg.finalize_kernel().map_err(|source| NkiError::Codegen { loc: None, source })?;
    if let Err(errors) = penguin::verify(cg.function()) {
        let text = penguin::print::print_with_errors(cg.function(), &errors);
        return Err(NkiError::Verify { errors, text });
    }
    let function = cg.finalize().map_err(|e| NkiError::Internal(format!("finalize after verification: {e}")))?;
    let looped = LoopedFunction::roll_nest(&function, &marks)
        .map_err(|e| NkiError::Internal(format!("the loop marks do not fit the function: {e}")))?;
    Ok(NkiKernel {
        target,
        function,
        looped,
        marks,
        allocations: plans.iter().map(SitePlan::report).collect(),
        inputs,
        outputs,
        dropped_memsets: a.groups.dropped().len(),
    })
}

type ByName = IndexMap<String, TensorId>;

impl Emitter<'_> {
    /// Declare the HBM tensors (inputs, outputs in return order, scratch) and one tensor per
    /// allocation site.
    fn declare(&mut self) -> Result<(ByName, ByName), NkiError> {
        let codegen = |loc: &str| {
            let loc = loc.to_string();
            move |source| NkiError::Codegen { loc: Some(loc.clone()), source }
        };
        let mut names = Names::default();
        let (mut inputs, mut outputs) = (ByName::new(), ByName::new());
        let tensors = &self.a.tensors;
        for (i, t) in tensors.iter().enumerate() {
            if t.buffer == Buffer::Input {
                let name = names.unique(&t.name);
                let id = self.cg.add_input(&name, t.shape.clone(), t.dtype).map_err(codegen(&t.loc))?;
                self.hbm[i] = Some(id);
                inputs.insert(name, id);
            }
        }
        for &o in &self.trace.outputs {
            let t = &tensors[o as usize];
            if let Some(id) = self.hbm[o as usize] {
                // A kernel argument written in place: the input tensor is also a result.
                let name = inputs.iter().find(|(_, &i)| i == id).map(|(n, _)| n.clone()).unwrap_or_default();
                outputs.insert(name, id);
                continue;
            }
            let name = names.unique(&t.name);
            let id = self.cg.add_output(&name, t.shape.clone(), t.dtype).map_err(codegen(&t.loc))?;
            self.hbm[o as usize] = Some(id);
            outputs.insert(name, id);
        }
        for (i, t) in tensors.iter().enumerate() {
            if !t.buffer.is_on_chip() && self.hbm[i].is_none() {
                let name = names.unique(&t.name);
                self.hbm[i] = Some(self.cg.add_internal_hbm(&name, t.shape.clone(), t.dtype).map_err(codegen(&t.loc))?);
            }
        }
        for (s, p) in self.plans.iter().enumerate() {
            let r = &p.request;
            let size = u64::from(r.dtype.size_bytes());
            let bytes = if p.slots == 0 || p.stride == 0 { p.tile_bytes } else { p.slots * p.stride };
            let data = TensorData {
                name: names.unique(&r.name),
                shape: vec![p.partitions, (bytes / size).max(1)],
                dtype: r.dtype,
                memory: r.memory,
                address: Some(p.address),
            };
            self.site_tensor.push(self.cg.add_tensor_at(data).map_err(codegen(&r.loc))?);
            for (inst, &(slot, partition, byte)) in r.instances.iter().zip(&p.placement) {
                self.place.insert((inst.tensor, inst.block), Place { site: s, slot, partition, byte });
            }
        }
        Ok((inputs, outputs))
    }

    /// The operand of a resolved view.
    fn tile(&self, v: &Resolved, loc: &str) -> Result<InstTile, NkiError> {
        let t = &self.a.tensors[v.tensor as usize];
        let mut ap = v.ap.clone();
        if !t.buffer.is_on_chip() {
            let tensor = self.hbm[v.tensor as usize]
                .ok_or_else(|| NkiError::Internal(format!("{loc}: `{}` undeclared", t.name)))?;
            return Ok(InstTile { tensor, memory: Memory::Hbm, dtype: t.dtype, ap });
        }
        let p = self
            .place
            .get(&(v.tensor, v.block))
            .ok_or_else(|| NkiError::Internal(format!("{loc}: tile of `{}` was not allocated", t.name)))?;
        let size = u64::from(t.dtype.size_bytes());
        ap.start_partition += p.partition;
        ap.offset += i64::try_from(p.byte / size).unwrap_or(i64::MAX);
        Ok(InstTile { tensor: self.site_tensor[p.site], memory: memory(t.buffer), dtype: t.dtype, ap })
    }

    /// Emit every record; returns the loop marks.
    fn instructions(&mut self) -> Result<Vec<NestMark>, NkiError> {
        let a = self.a;
        let dropped: HashSet<usize> = a.groups.dropped().into_iter().collect();
        let k_len = |r: usize| -> u64 {
            let Some(c) = &a.records[r] else { return 0 };
            let pack = match &self.trace.ops[r] {
                Record::Matmul { perf_mode: TracePerfMode::DoubleRow, .. } => 2,
                _ => 1,
            };
            c.views[1].partitions() * pack
        };
        let k_total: Vec<u64> = a.groups.groups.iter().map(|g| g.members.iter().map(|&m| k_len(m)).sum()).collect();
        let mut open: HashMap<usize, MatMultAccumulation> = HashMap::new();
        let mut locs = LocInterner::default();
        let mut marks: Vec<NestMark> = Vec::new();
        let mut depth = 0u32;
        let (mut loads, mut stores) = (0u32, 0u32);
        for (r, rec) in self.trace.ops.iter().enumerate() {
            let loc = &a.locs[r];
            match rec {
                Record::LoopBegin { .. } => depth += 1,
                Record::LoopEnd { .. } => depth = depth.saturating_sub(1),
                Record::Iteration { .. } => {
                    let at = self.cg.function().layout.len() as u32;
                    let level = depth.saturating_sub(1);
                    match marks.last_mut() {
                        Some(m) if m.at == at => m.level = m.level.min(level),
                        _ => marks.push(NestMark { at, level }),
                    }
                }
                _ => {}
            }
            let Some(c) = &a.records[r] else { continue };
            if dropped.contains(&r) {
                continue;
            }
            self.cg.set_srcloc(Some(locs.intern(loc)));
            let tiles = c.views.iter().map(|v| self.tile(v, loc)).collect::<Result<Vec<_>, _>>()?;
            let inst = if let Record::Matmul { perf_mode, tile_position, tile_size, .. } = rec {
                let g = *a
                    .groups
                    .group_of
                    .get(&r)
                    .ok_or_else(|| NkiError::Internal(format!("{loc}: matmul without a group")))?;
                let [dst, mut stationary, mut moving]: [InstTile; 3] =
                    tiles.try_into().map_err(|_| NkiError::Internal(format!("{loc}: matmul operands")))?;
                let double = *perf_mode == TracePerfMode::DoubleRow;
                if double {
                    // A `[K, 2, F]` operand whose pair is contiguous merged into one free
                    // dimension of 2F: the PE reads it as the pair of rows it is.
                    unmerge_pair(&mut stationary, &c.views[1].shape);
                    unmerge_pair(&mut moving, &c.views[2].shape);
                }
                let codegen = |source| NkiError::Codegen { loc: Some(loc.clone()), source };
                let acc = match open.entry(g) {
                    std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::hash_map::Entry::Vacant(e) => {
                        let total = u32::try_from(k_total[g]).map_err(|_| NkiError::Invalid {
                            loc: loc.clone(),
                            message: format!("an accumulation group of {} contraction rows", k_total[g]),
                        })?;
                        let acc = if double {
                            MatMultAccumulation::open_double_row(dst.clone(), total)
                        } else {
                            MatMultAccumulation::open(dst.clone(), total)
                        };
                        e.insert(acc.map_err(codegen)?)
                    }
                };
                let [row, col] = tile_position.unwrap_or([0, 0]);
                let [rows, cols] = tile_size.unwrap_or([128, 128]);
                let sub = MatMultSubTile {
                    k_start: acc.k_offset,
                    k_len: k_len(r) as u32,
                    dst,
                    stationary,
                    moving,
                    perf_mode: if double { PerfMode::DoubleRow } else { PerfMode::None },
                    tile_position: TilePosition { row, col },
                    tile_size: TileSize { rows, cols },
                };
                let m = combine_matmult_tiles(acc, sub).map_err(codegen)?;
                if acc.is_complete() {
                    open.remove(&g);
                }
                InstData::MatMult(m)
            } else {
                let mut choice = Choice::default();
                if let (Record::TensorCopy { .. }, Some(src)) = (rec, c.views.get(1)) {
                    if c.memories[1] == Memory::Psum {
                        choice.psum_slot = self.place.get(&(src.tensor, src.block)).map(|p| p.slot);
                    }
                }
                if let Record::DmaCopy { .. } = rec {
                    let counter = if c.memories[0] == Memory::Hbm { &mut stores } else { &mut loads };
                    choice.queue = *counter;
                    *counter = counter.wrapping_add(1) % (3 << 28);
                }
                kinds::inst(rec, tiles, choice, loc)?
            };
            self.cg
                .process_new_neuroninst(inst)
                .map_err(|source| NkiError::Codegen { loc: Some(loc.clone()), source })?;
        }
        self.cg.set_srcloc(None);
        Ok(marks)
    }
}

/// A double-row operand of logical shape `[K, 2, F]` whose access pattern merged the pair and
/// `F` into one contiguous free dimension: its pair made the outer free dimension again (as
/// `NeuronCodegen` keeps it once the combine has checked it).
fn unmerge_pair(t: &mut InstTile, shape: &[u64]) {
    if let [_, 2, _] = shape {
        if let Some(free) = t.ap.split_outer(2) {
            t.ap.free = free.into();
        }
    }
}
