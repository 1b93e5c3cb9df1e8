//! [`KernelBuilder`]: a trace in, an [`NkiKernel`] out. The first pass checks every record
//! (rule 1 of the design) and collects what the later steps need: liveness of each on-chip
//! tile, the accumulation groups and the HBM writes; then tiles are allocated
//! ([`crate::alloc`]), and `emit.rs` emits the instructions and rolls the loops.

use std::collections::HashMap;

use indexmap::IndexMap;
use penguin::looped::NestMark;
use penguin::{Function, LoopedFunction, Memory, Target, TensorId};

use crate::accum::Groups;
use crate::alloc::{AllocationReport, Instance, SiteRequest};
use crate::error::NkiError;
use crate::kinds::{self, Role};
use crate::trace::{Buffer, Record, Trace, TracePerfMode};
use crate::view::{self, Resolved, TensorInfo};

/// Builds the Penguin function of a traced kernel for a target.
#[derive(Clone, Debug)]
pub struct KernelBuilder {
    target: Target,
    kernel_name: Option<String>,
    /// One core's share of a multi-core kernel: its outputs may be another core's to write.
    share_of_chip: bool,
}

/// A traced kernel, built: the verified function, its rolled form, what the allocator did
/// and where the kernel's arguments and results are.
#[derive(Clone, Debug)]
pub struct NkiKernel {
    /// The target it was built for.
    pub target: Target,
    /// The verified function (instructions in program order, each with its `file:line`).
    pub function: Function,
    /// The function rolled along the kernel's loops.
    pub looped: LoopedFunction,
    /// Where each iteration of each loop starts in the function's program order.
    pub marks: Vec<NestMark>,
    /// Per allocation site: buffers, slots, address ranges.
    pub allocations: Vec<AllocationReport>,
    /// The kernel's inputs by parameter name, in order.
    pub inputs: IndexMap<String, TensorId>,
    /// The results by name, in order: the returned tensors, then the arguments written in place.
    pub outputs: IndexMap<String, TensorId>,
    /// Zero fills that were not emitted (they only fed `+=` matmuls).
    pub dropped_memsets: usize,
}

/// What the first pass learned about one record.
#[derive(Clone, Debug)]
pub(crate) struct Checked {
    /// The operands resolved, in [`kinds::operands`] order.
    pub(crate) views: Vec<Resolved>,
    /// Their memories.
    pub(crate) memories: Vec<Memory>,
}

/// Everything the first pass learned.
pub(crate) struct Analysis {
    pub(crate) tensors: Vec<TensorInfo>,
    /// Per record: its operands (`None` for a loop marker).
    pub(crate) records: Vec<Option<Checked>>,
    pub(crate) groups: Groups,
    /// Per on-chip tile `(tensor, block)`: first and last record that access it.
    pub(crate) live: HashMap<(u32, u64), (usize, usize)>,
    /// The `file:line` of each record.
    pub(crate) locs: Vec<String>,
}

impl KernelBuilder {
    /// A builder for `target` (a trace's own target is [`Trace::target`]).
    pub fn new(target: Target) -> Self {
        KernelBuilder { target, kernel_name: None, share_of_chip: false }
    }

    /// Expect the kernel to be named `name` (the name a caller asked to run):
    /// `finalize_kernel` then fails with `Kernel name mismatch` when the trace's differs.
    pub fn expect_kernel_name(mut self, name: impl Into<String>) -> Self {
        self.kernel_name = Some(name.into());
        self
    }

    /// The target.
    pub fn target(&self) -> Target {
        self.target
    }

    /// Build the kernel of `trace`, one kernel per physical core it runs on (see
    /// [`Trace::split_cores`]): each core's is built on its own (its SBUF and PSUM are its
    /// own), a core may leave an output to the other, and every output must be written by
    /// some core. More cores than the target has in one logical core are refused.
    pub fn build_cores(&self, trace: &Trace) -> Result<Vec<NkiKernel>, NkiError> {
        let cores = trace.split_cores()?;
        if cores.len() == 1 {
            return Ok(vec![self.build(&cores[0])?]);
        }
        let most = self.target.info().max_lnc as usize;
        if cores.len() > most {
            let loc = trace.ops.first().map(|r| trace.loc_text(r.loc())).unwrap_or_default();
            return Err(NkiError::Invalid {
                loc,
                message: format!(
                    "the kernel runs on {} physical NeuronCores, but a logical NeuronCore of {} has {most} \
                     (LNC={most}); launch it without the nl.nc axis, or trace it for trn2 or trn3",
                    cores.len(),
                    self.target
                ),
            });
        }
        let share = KernelBuilder { share_of_chip: true, ..self.clone() };
        let kernels = cores.iter().map(|t| share.build(t)).collect::<Result<Vec<_>, _>>()?;
        for &o in &trace.outputs {
            if !cores.iter().any(|t| writes(t, o)) {
                let t = &trace.tensors[o as usize];
                let loc = trace.loc_text(t.loc);
                return Err(NkiError::OutputNeverWritten { loc, tensor: t.name.clone() });
            }
        }
        Ok(kernels)
    }

    /// Build the kernel of `trace` (a trace of several cores: [`KernelBuilder::build_cores`]).
    pub fn build(&self, trace: &Trace) -> Result<NkiKernel, NkiError> {
        if trace.cores.len() > 1 {
            return Err(NkiError::Trace {
                path: "cores".into(),
                message: format!("a kernel of {} cores is built core by core (build_cores)", trace.cores.len()),
            });
        }
        let trace = &*crate::split::split_wide(trace);
        let analysis = self.analyze(trace)?;
        let requests = site_requests(&analysis);
        let plans = crate::alloc::allocate(requests, self.target)?;
        let expected = self.kernel_name.clone().unwrap_or_else(|| trace.kernel.clone());
        crate::emit::emit(trace, &analysis, &plans, self.target, &expected)
    }

    /// The first pass: check every record and collect liveness, groups and HBM writes.
    fn analyze(&self, trace: &Trace) -> Result<Analysis, NkiError> {
        let tensors = view::tensors(trace, self.target)?;
        check_outputs(trace, &tensors)?;
        let mut a = Analysis {
            records: Vec::with_capacity(trace.ops.len()),
            groups: Groups::default(),
            live: HashMap::new(),
            locs: Vec::with_capacity(trace.ops.len()),
            tensors,
        };
        let mut written: Vec<Vec<(i64, i64)>> = vec![Vec::new(); a.tensors.len()];
        let mut loops: Vec<u64> = Vec::new();
        for (r, rec) in trace.ops.iter().enumerate() {
            let loc = trace.loc_text(rec.loc());
            let checked = match kinds::operands(rec, &loc)? {
                None => {
                    check_marker(rec, &mut loops, &loc)?;
                    None
                }
                Some(ops) => {
                    let views = ops
                        .iter()
                        .map(|(_, v, _)| view::resolve(&a.tensors, v, &loc))
                        .collect::<Result<Vec<_>, _>>()?;
                    let memories: Vec<Memory> =
                        views.iter().map(|v| memory(a.tensors[v.tensor as usize].buffer)).collect();
                    kinds::check(rec, &views, &memories, &loc)?;
                    self.check_record(rec, &a.tensors, &views, &loc)?;
                    for ((_, _, role), v) in ops.iter().zip(&views) {
                        let t = &a.tensors[v.tensor as usize];
                        if t.buffer.is_on_chip() {
                            a.live.entry((v.tensor, v.block)).and_modify(|e| e.1 = r).or_insert((r, r));
                            if t.buffer == Buffer::Psum {
                                Self::psum_event(&mut a.groups, rec, r, v, *role, &loc)?;
                            }
                        } else {
                            hbm_access(&mut written, t, v, *role, &loc)?;
                        }
                    }
                    Some(Checked { views, memories })
                }
            };
            a.records.push(checked);
            a.locs.push(loc);
        }
        if !loops.is_empty() {
            let loc = trace.ops.last().map(|r| trace.loc_text(r.loc())).unwrap_or_default();
            return Err(NkiError::Invalid {
                loc,
                message: format!("{} loop(s) are never closed (loop_end)", loops.len()),
            });
        }
        for &o in trace.outputs.iter().filter(|_| !self.share_of_chip) {
            let t = &a.tensors[o as usize];
            if written[o as usize].is_empty() {
                return Err(NkiError::OutputNeverWritten { loc: t.loc.clone(), tensor: t.name.clone() });
            }
        }
        Ok(a)
    }

    /// The rules of a record that need the tensors (dtypes, matmul limits, PSUM banks).
    fn check_record(
        &self,
        rec: &Record,
        tensors: &[TensorInfo],
        views: &[Resolved],
        loc: &str,
    ) -> Result<(), NkiError> {
        let unsupported = |what: String| NkiError::Unsupported { loc: loc.to_string(), record: rec.kind(), what };
        let dtype = |i: usize| tensors[views[i].tensor as usize].dtype;
        match rec {
            Record::Matmul { perf_mode, .. } => {
                let (d, s, m) = (&views[0], &views[1], &views[2]);
                let pack = if *perf_mode == TracePerfMode::DoubleRow {
                    if !self.target.info().double_row {
                        return Err(unsupported(format!("perf_mode double_row on {}", self.target)));
                    }
                    2
                } else {
                    1
                };
                if s.partitions() != m.partitions() {
                    return Err(NkiError::ShapeMismatch {
                        loc: loc.to_string(),
                        op: "matmul",
                        what: format!(
                            "stationary {:?} and moving {:?} contract different partitions",
                            s.shape, m.shape
                        ),
                    });
                }
                let (mm, nn) = (s.free_elems() / pack, m.free_elems() / pack);
                let max_m = u64::from(penguin::target::MAX_STATIONARY_FREE);
                let max_n = u64::from(penguin::target::MAX_MOVING_FREE);
                if mm > max_m {
                    return Err(NkiError::MatmulTooWide {
                        loc: loc.to_string(),
                        operand: "stationary",
                        size: mm,
                        max: max_m,
                    });
                }
                if nn > max_n {
                    return Err(NkiError::MatmulTooWide {
                        loc: loc.to_string(),
                        operand: "moving",
                        size: nn,
                        max: max_n,
                    });
                }
                if d.partitions() != mm || d.free_elems() != nn {
                    return Err(NkiError::ShapeMismatch {
                        loc: loc.to_string(),
                        op: "matmul",
                        what: format!(
                            "dst {:?} is not [{mm}, {nn}] (stationary {:?}, moving {:?})",
                            d.shape, s.shape, m.shape
                        ),
                    });
                }
                if dtype(0) != penguin::DType::Fp32 {
                    return Err(unsupported(format!("a {} matmul result (ntile's matmul writes fp32 PSUM)", dtype(0))));
                }
            }
            Record::Transpose { .. } if dtype(0) != penguin::DType::Fp32 => {
                // From trn2 on, the PE writes a bf16/fp16 transpose in its own dtype (the
                // 16-bit PSUM output of transpose mode); trn1 writes fp32 only.
                let sixteen = matches!(dtype(0), penguin::DType::Bf16 | penguin::DType::Fp16) && dtype(0) == dtype(1);
                if !sixteen {
                    return Err(unsupported(format!(
                        "a {} transpose result of a {} source (the PE transpose writes fp32, or a bf16/fp16 source's own dtype)",
                        dtype(0),
                        dtype(1)
                    )));
                }
                if self.target == penguin::Target::Trn1 {
                    return Err(unsupported(format!(
                        "a {} transpose result on trn1 (its PE transpose writes fp32 PSUM; 16-bit PSUM output is trn2 and later)",
                        dtype(0)
                    )));
                }
            }
            _ => {}
        }
        for v in views {
            let t = &tensors[v.tensor as usize];
            if t.buffer == Buffer::Psum {
                let size = i64::from(t.dtype.size_bytes());
                let (_, _, lo, hi) = v.tile_box();
                let bank = i64::from(penguin::target::PSUM_BANK_BYTES);
                if t.tile_bytes() > bank as u64 && (lo * size) / bank != (hi * size - 1) / bank {
                    return Err(unsupported(format!("a view of PSUM tile `{}` that crosses a 2 KiB bank", t.name)));
                }
            }
        }
        Ok(())
    }

    /// Feed a PSUM access to the accumulation analysis.
    fn psum_event(
        groups: &mut Groups,
        rec: &Record,
        r: usize,
        v: &Resolved,
        role: Role,
        loc: &str,
    ) -> Result<(), NkiError> {
        let bx = v.tile_box();
        let tile = (v.tensor, v.block);
        match (rec, role) {
            (Record::Matmul { accumulate, .. }, Role::Accumulate) => {
                groups.matmul(r, tile, &v.ap, bx, *accumulate, loc)
            }
            (_, Role::Read) => {
                groups.access(r, tile, bx, true, false, loc);
                Ok(())
            }
            (_, Role::Update) => {
                groups.access(r, tile, bx, true, false, loc);
                groups.access(r, tile, bx, false, false, loc);
                Ok(())
            }
            (_, _) => {
                let zero = matches!(rec, Record::Memset { value, .. } if value.0 == 0.0) && v.ap.region(true).dense;
                groups.access(r, tile, bx, false, zero, loc);
                Ok(())
            }
        }
    }
}

/// The penguin memory of a buffer.
pub(crate) fn memory(b: Buffer) -> Memory {
    match b {
        Buffer::Input | Buffer::SharedHbm | Buffer::PrivateHbm => Memory::Hbm,
        Buffer::Sbuf => Memory::Sbuf,
        Buffer::Psum => Memory::Psum,
    }
}

/// Outputs name distinct HBM tensors the kernel created or kernel arguments it wrote;
/// constants name input tensors and hold one value per element.
fn check_outputs(trace: &Trace, tensors: &[TensorInfo]) -> Result<(), NkiError> {
    for (i, &o) in trace.outputs.iter().enumerate() {
        let Some(t) = tensors.get(o as usize) else {
            return Err(NkiError::Trace {
                path: format!("outputs[{i}]"),
                message: format!("tensor {o} does not exist ({} tensors)", tensors.len()),
            });
        };
        if !matches!(t.buffer, Buffer::SharedHbm | Buffer::PrivateHbm | Buffer::Input) {
            return Err(NkiError::Unsupported {
                loc: t.loc.clone(),
                record: "return",
                what: format!("returning `{}` from {} (a kernel returns HBM tensors it created)", t.name, t.buffer),
            });
        }
        if trace.outputs[..i].contains(&o) {
            return Err(NkiError::Unsupported {
                loc: t.loc.clone(),
                record: "return",
                what: format!("returning `{}` twice", t.name),
            });
        }
    }
    for (i, c) in trace.constants.iter().enumerate() {
        let path = format!("constants[{i}]");
        let Some(t) = tensors.get(c.t as usize).filter(|t| t.buffer == Buffer::Input) else {
            return Err(NkiError::Trace { path, message: format!("tensor {} is not an input tensor", c.t) });
        };
        if c.values.len() as u64 != t.free {
            return Err(NkiError::Trace {
                path,
                message: format!("{} values for `{}` of shape {:?}", c.values.len(), t.name, t.shape),
            });
        }
    }
    Ok(())
}

/// Loop markers: balanced, iterations inside a loop and within its trips.
fn check_marker(rec: &Record, loops: &mut Vec<u64>, loc: &str) -> Result<(), NkiError> {
    let invalid = |message: String| NkiError::Invalid { loc: loc.to_string(), message };
    match rec {
        Record::LoopBegin { trips, .. } => loops.push(*trips),
        Record::Iteration { index, .. } => match loops.last() {
            None => return Err(invalid("an iteration record outside any loop".into())),
            Some(&trips) if *index >= trips => {
                return Err(invalid(format!("iteration {index} of a loop of {trips} trips")));
            }
            Some(_) => {}
        },
        Record::LoopEnd { .. } if loops.pop().is_none() => {
            return Err(invalid("a loop_end without its loop_begin".into()));
        }
        _ => {}
    }
    Ok(())
}

/// Track HBM writes; a read of a tensor the kernel created must be of bytes written before.
/// Whether a record of `trace` writes tensor `t`.
fn writes(trace: &Trace, t: u32) -> bool {
    trace.ops.iter().any(|rec| {
        let ops = kinds::operands(rec, "").ok().flatten().unwrap_or_default();
        ops.iter().any(|(_, v, role)| v.t == t && matches!(role, Role::Write | Role::Accumulate | Role::Update))
    })
}

fn hbm_access(
    written: &mut [Vec<(i64, i64)>],
    t: &TensorInfo,
    v: &Resolved,
    role: Role,
    loc: &str,
) -> Result<(), NkiError> {
    let (lo, hi) = v.ap.flat_extent();
    let extent = (v.ap.offset + lo, v.ap.offset + hi + 1);
    let list = &mut written[v.tensor as usize];
    match role {
        Role::Write | Role::Accumulate | Role::Update => list.push(extent),
        Role::Read if t.buffer == Buffer::Input => {}
        Role::Read => {
            let mut parts: Vec<(i64, i64)> =
                list.iter().copied().filter(|&(a, b)| a < extent.1 && extent.0 < b).collect();
            parts.sort_unstable();
            let mut reach = extent.0;
            for (a, b) in parts {
                if a > reach {
                    break;
                }
                reach = reach.max(b);
            }
            if reach < extent.1 {
                return Err(NkiError::ReadBeforeWrite { loc: loc.to_string(), tensor: t.name.clone() });
            }
        }
    }
    Ok(())
}

/// The allocation requests: the on-chip tiles that are accessed, grouped by site, memory and
/// dtype, in order of each site's first appearance.
fn site_requests(a: &Analysis) -> Vec<SiteRequest> {
    type Key = (u32, Memory, penguin::DType, bool);
    let mut order: Vec<Key> = Vec::new();
    let mut by_key: HashMap<Key, SiteRequest> = HashMap::new();
    let mut tiles: Vec<((u32, u64), (usize, usize))> = a.live.iter().map(|(k, v)| (*k, *v)).collect();
    tiles.sort_by_key(|&(k, v)| (v.0, k));
    for ((tensor, block), (first, last)) in tiles {
        let t = &a.tensors[tensor as usize];
        let key = (t.site, memory(t.buffer), t.dtype, t.direct.is_some());
        let req = by_key.entry(key).or_insert_with(|| {
            order.push(key);
            SiteRequest {
                name: t.name.clone(),
                loc: t.loc.clone(),
                memory: key.1,
                dtype: t.dtype,
                instances: Vec::new(),
            }
        });
        req.instances.push(Instance {
            tensor,
            block,
            first,
            last,
            partitions: t.partitions,
            bytes: t.tile_bytes(),
            direct: t.direct.as_ref().and_then(|d| d.get(block as usize).copied()),
        });
    }
    order.into_iter().filter_map(|k| by_key.remove(&k)).collect()
}
