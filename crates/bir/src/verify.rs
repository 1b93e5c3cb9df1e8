//! The BIR verifier.
//!
//! Rules:
//! 1. **Engines run their own ops**: PE runs LoadStationary, LoadStationarySparse,
//!    MultiplyMoving and Transpose; DMA queues run DMA copies, DmaFma, DmaGather and
//!    DmaScatterAdd; ACT/DVE/POOL run tensor copies, TensorScalar ops and memsets; DVE/POOL
//!    run TensorTensor ops; ACT runs Activation; DVE runs TensorReduce, BnStats and BnAggr;
//!    POOL runs AffineSelect and Iota; SP runs memsets only.
//! 2. **Strides**: an access pattern has at most as many free dimensions as its engine
//!    supports (`Too many strides!`).
//! 3. **Partition start rule** on compute engines: more than 64 partitions start at 0;
//!    33..=64 start at 0 or 64; 32 or fewer start at a multiple of 32.
//! 4. **Bounds**: every dimension has at least one index, and the elements an access
//!    enumerates (all partitions, repeats of a zero stride included) take fewer than 2^63
//!    bytes; on-chip accesses stay within partitions `0..128` and the target's SBUF bytes (or
//!    the 8 PSUM banks, one bank per access); HBM accesses stay inside `hbm_size`. Bounds are
//!    computed exactly (in 128-bit arithmetic), so strides, counts and offsets near the
//!    limits of their types are reported as out of bounds rather than wrapping around.
//! 5. **Matmul**: a MultiplyMoving follows a LoadStationary or LoadStationarySparse on the
//!    PE stream, writes fp32 PSUM, and its K (partitions) matches the stationary operand's;
//!    after a sparse one its moving operand is `[K', CR, N]`: `CR` (the pattern's
//!    compression ratio) times the result's `N` elements per partition. A
//!    LoadStationarySparse's tags are int16, on the stationary operand's partitions, with
//!    `ceil(M / 4)` words each (four 4-bit tags per word).
//! 6. **Transpose**: the result is the transpose of the source (its partition count is the
//!    source's elements per partition and vice versa) and is fp32 in PSUM, or from trn2 on
//!    bf16/fp16 like a 16-bit source (transpose mode).
//! 7. **Elementwise shapes**: DmaCopy, TensorCopy, DmaFma, TensorTensor, Activation,
//!    TensorScalar and AffineSelect operands all have equal partition counts and elements per
//!    partition; a scale, bias, operand or reduce column is `[P, 1]`; a TensorReduce's source
//!    has a multiple of its destination's elements per partition; Iota's and AffineSelect's
//!    pattern enumerates the destination's elements per partition; BnStats reads at most 512
//!    elements and writes 6, BnAggr reads triples and writes 2.
//! 8. **Gather and scatter-add**: the index is int32, and the rows moved (DmaGather's
//!    destination, DmaScatterAdd's source) are one table row per index entry: as many
//!    partitions as the index has elements, each with a table row's elements per partition.
//! 9. **Semaphores**: every semaphore id exists; and the program does not deadlock: running
//!    the streams with only their waits and signals finishes every stream.
//! 10. **Memories of compute ops**: nothing on POOL touches PSUM; a TensorTensor reads at most
//!     one PSUM tile; AffineSelect and Iota work in SBUF; an immediate activation bias needs
//!     trn2 or later.

use penguin::{DType, Memory, Target};

use crate::error::{BirError, VerifyError, TOO_MANY_STRIDES};
use crate::program::{Engine, HwAp, InstRef, Op, Program};

/// The errors found so far, each about one instruction or the program.
#[derive(Default)]
struct Errors(Vec<VerifyError>);

/// The instruction being checked: where it is and its opcode name.
#[derive(Clone, Copy)]
struct At {
    inst: InstRef,
    opcode: &'static str,
}

impl Errors {
    fn push(&mut self, at: At, message: impl Into<String>) {
        self.0.push(VerifyError::inst(at.inst, at.opcode, message));
    }
}

/// Verify a program, collecting every error.
pub fn verify_program(p: &Program) -> Result<(), BirError> {
    verify_program_sharing(p, &[])
}

/// Verify one core's program of a chip whose cores share the semaphores named `shared`: as
/// [`verify_program`], but a wait on a shared semaphore is taken as satisfied by the deadlock
/// check (another core may signal it; [`crate::verify_chip`] runs the cores together).
pub fn verify_program_sharing(p: &Program, shared: &[String]) -> Result<(), BirError> {
    let mut errors = check_instructions(p);
    if errors.is_empty() {
        let own: Vec<usize> = p
            .semaphores
            .iter()
            .enumerate()
            .map(|(s, name)| if shared.contains(name) { usize::MAX } else { s })
            .collect();
        if let Some(stuck) = find_deadlock(&[(p, &own)], own.len()) {
            errors.push(VerifyError::program(stuck));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(BirError::Verify(errors))
    }
}

/// Every rule but the deadlock check (rules 1 to 8, 10 and the semaphore ids of rule 9).
pub(crate) fn check_instructions(p: &Program) -> Vec<VerifyError> {
    let mut errors = Errors::default();
    let sbuf_cap = i128::from(p.target.info().statebuf_par_size_in_bytes);
    for e in Engine::all() {
        let mut stationary_k: Option<u64> = None;
        // The compression ratio of the loaded stationary (1 when dense).
        let mut stationary_cr = 1u64;
        for (n, inst) in p.stream(e).iter().enumerate() {
            let at = At { inst: InstRef { engine: e, index: n }, opcode: inst.op.name() };
            if !inst.op.engine_class().contains(e) {
                errors.push(at, format!("{} cannot run on {e}", inst.op.name()));
            }
            inst.op.for_each_ap_role(|_, ap, _| check_ap(&mut errors, at, e, ap, sbuf_cap, p.hbm_size));
            let same = |errors: &mut Errors, a: &HwAp, b: &HwAp| {
                if a.num_partitions != b.num_partitions || a.free_elems() != b.free_elems() {
                    errors.push(
                        at,
                        format!(
                            "shape mismatch: {} x {} vs {} x {}",
                            a.num_partitions,
                            a.free_elems(),
                            b.num_partitions,
                            b.free_elems()
                        ),
                    );
                }
            };
            match &inst.op {
                Op::LoadStationary { src, .. } => {
                    stationary_k = Some(u64::from(src.num_partitions));
                    stationary_cr = 1;
                }
                Op::LoadStationarySparse { src, tags, pattern, .. } => {
                    let words = src.free_elems().div_ceil(u64::from(penguin::SPARSE_TAGS_PER_WORD));
                    if tags.num_partitions != src.num_partitions || tags.free_elems() != words {
                        errors.push(
                            at,
                            format!(
                                "tags are {} x {} but a {} x {} stationary needs {} x {words} (four 4-bit tags per word)",
                                tags.num_partitions,
                                tags.free_elems(),
                                src.num_partitions,
                                src.free_elems(),
                                src.num_partitions
                            ),
                        );
                    }
                    if tags.dtype != DType::Int16 {
                        errors.push(at, format!("tags must be int16, not {}", tags.dtype));
                    }
                    stationary_k = Some(u64::from(src.num_partitions));
                    stationary_cr = u64::from(pattern.compression_ratio());
                }
                Op::MultiplyMoving { dst, src, .. } => {
                    match stationary_k {
                        None => errors.push(at, "no LoadStationary before it"),
                        Some(k) if k != u64::from(src.num_partitions) => {
                            errors.push(at, format!("K = {} but the loaded stationary has {k}", src.num_partitions));
                        }
                        Some(_) => {}
                    }
                    if stationary_cr > 1 && src.free_elems() != stationary_cr * dst.free_elems() {
                        errors.push(
                            at,
                            format!(
                                "after a sparse stationary (CR = {stationary_cr}) the moving operand is [K', CR, N]: \
                                 {} elements per partition for a result of N = {}",
                                src.free_elems(),
                                dst.free_elems()
                            ),
                        );
                    }
                    if dst.memory != Memory::Psum || dst.dtype != DType::Fp32 {
                        errors.push(at, format!("result must be fp32 in psum, not {} {}", dst.dtype, dst.memory));
                    }
                }
                Op::Transpose { dst, src } => {
                    if u64::from(dst.num_partitions) != src.free_elems()
                        || dst.free_elems() != u64::from(src.num_partitions)
                    {
                        errors.push(at, "result is not the transpose of the source");
                    }
                    let sixteen = p.target != Target::Trn1
                        && matches!(dst.dtype, DType::Bf16 | DType::Fp16)
                        && dst.dtype == src.dtype;
                    if dst.memory != Memory::Psum || (dst.dtype != DType::Fp32 && !sixteen) {
                        errors.push(
                            at,
                            format!(
                                "result must be fp32 in psum (or its 16-bit source's dtype from trn2 on), not {} {}",
                                dst.dtype, dst.memory
                            ),
                        );
                    }
                }
                Op::DmaCopy { dst, src, .. } | Op::TensorCopy { dst, src } => same(&mut errors, dst, src),
                Op::DmaFma { dst, src0, src1 } => {
                    same(&mut errors, dst, src0);
                    same(&mut errors, dst, src1);
                }
                Op::TensorTensor { dst, lhs, rhs, .. } => {
                    same(&mut errors, dst, lhs);
                    same(&mut errors, dst, rhs);
                    if lhs.memory == Memory::Psum && rhs.memory == Memory::Psum {
                        errors.push(at, "lhs and rhs cannot both be in psum (one PSUM read per instruction)");
                    }
                }
                Op::Activation { .. }
                | Op::TensorScalar { .. }
                | Op::TensorTensorScan { .. }
                | Op::TensorCopyPredicated { .. }
                | Op::StreamShuffle { .. }
                | Op::Top8 { .. }
                | Op::TensorScalarCumulative { .. }
                | Op::TensorReduce { .. }
                | Op::TensorPartitionReduce { .. }
                | Op::AffineSelect { .. }
                | Op::Iota { .. }
                | Op::BnStats { .. }
                | Op::BnAggr { .. } => check_compute(&mut errors, at, p.target, &inst.op, same),
                Op::DmaGather { dst: rows, table, index, .. }
                | Op::DmaScatter { src: rows, table, index, .. }
                | Op::DmaScatterAdd { src: rows, table, index, .. } => {
                    if index.dtype != DType::Int32 {
                        errors.push(at, format!("index must be int32, not {}", index.dtype));
                    }
                    if u64::from(rows.num_partitions) != index.num_elems() || rows.free_elems() != table.free_elems() {
                        errors.push(at, "one row of the table per index entry is expected");
                    }
                }
                Op::Memset { .. } => {}
            }
            if e == Engine::Pool && inst.op.aps().iter().any(|(_, ap)| ap.memory == Memory::Psum) {
                errors.push(at, "GpSimd (pool) cannot access PSUM");
            }
            for w in &inst.waits {
                if w.sem.0 as usize >= p.semaphores.len() {
                    errors.push(at, format!("waits on {}, which does not exist", w.sem));
                }
            }
            if let Some(s) = inst.signal {
                if s.0 as usize >= p.semaphores.len() {
                    errors.push(at, format!("signals {s}, which does not exist"));
                }
            }
        }
    }
    errors.0
}

/// Rules 7 and 10 for the compute ops added for real kernels (activation, tensor_scalar,
/// tensor_reduce, affine_select, iota, bn_stats, bn_aggr).
fn check_compute(errors: &mut Errors, at: At, target: Target, op: &Op, same: impl Fn(&mut Errors, &HwAp, &HwAp)) {
    let column = |errors: &mut Errors, what: &str, c: Option<&HwAp>, src: &HwAp| {
        if let Some(c) = c {
            if c.num_partitions != src.num_partitions || c.free_elems() != 1 {
                errors.push(
                    at,
                    format!(
                        "{what} must be [{}, 1], not {} x {}",
                        src.num_partitions,
                        c.num_partitions,
                        c.free_elems()
                    ),
                );
            }
        }
    };
    let per_partition = |errors: &mut Errors, what: &str, ap: &HwAp, n: u64, src: &HwAp| {
        if ap.num_partitions != src.num_partitions || ap.free_elems() != n {
            errors.push(
                at,
                format!("{what} must be {} x {n}, not {} x {}", src.num_partitions, ap.num_partitions, ap.free_elems()),
            );
        }
    };
    let sbuf = |errors: &mut Errors, aps: &[&HwAp]| {
        if let Some(ap) = aps.iter().find(|ap| ap.memory != Memory::Sbuf) {
            errors.push(at, format!("works in sbuf, not {}", ap.memory));
        }
    };
    match op {
        Op::Activation { dst, src, scale, bias, reduce, .. } => {
            same(errors, dst, src);
            column(errors, "scale", scale.tile(), src);
            column(errors, "bias", bias.tile(), src);
            column(errors, "reduce", reduce.as_ref(), src);
            if target == Target::Trn1 && bias.tile().is_none() && !bias.is_imm(0.0) {
                errors.push(at, "an immediate bias needs trn2 or later (on trn1 the bias is a [P, 1] column)");
            }
        }
        Op::TensorScalar { dst, src, operand0, operand1, .. } => {
            same(errors, dst, src);
            column(errors, "operand0", operand0.tile(), src);
            column(errors, "operand1", operand1.tile(), src);
        }
        Op::TensorScalarCumulative { dst, src, operand0, initial, .. } => {
            same(errors, dst, src);
            column(errors, "operand0", operand0.tile(), src);
            column(errors, "initial", initial.tile(), src);
        }
        Op::TensorTensorScan { dst, data0, data1, initial, .. } => {
            same(errors, dst, data0);
            same(errors, dst, data1);
            column(errors, "initial", initial.tile(), dst);
        }
        Op::TensorCopyPredicated { dst, predicate, src, .. } => {
            same(errors, dst, predicate);
            if let Some(s) = src.tile() {
                same(errors, dst, s);
            }
        }
        Op::TensorPartitionReduce { dst, src, .. } => {
            if dst.num_partitions != 1 || dst.free_elems() != src.free_elems() {
                errors.push(at, format!("one partition of the source's {} elements is expected", src.free_elems()));
            }
            sbuf(errors, &[dst, src]);
        }
        Op::TensorReduce { dst, src, .. } => {
            let (d, n) = (dst.free_elems(), src.free_elems());
            if dst.num_partitions != src.num_partitions || d == 0 || !n.is_multiple_of(d) {
                errors.push(
                    at,
                    format!("{} x {d} does not divide the source's {} x {n}", dst.num_partitions, src.num_partitions),
                );
            }
        }
        Op::AffineSelect { dst, src, pattern, .. } => {
            same(errors, dst, src);
            sbuf(errors, &[dst, src]);
            per_partition(errors, "the pattern's destination", dst, pattern.elems(), dst);
        }
        Op::Iota { dst, pattern, .. } => {
            sbuf(errors, &[dst]);
            per_partition(errors, "the pattern's destination", dst, pattern.elems(), dst);
        }
        Op::BnStats { dst, src } => {
            if src.free_elems() > penguin::BN_STATS_FMAX {
                errors.push(
                    at,
                    format!(
                        "reads at most {} elements per partition, not {}",
                        penguin::BN_STATS_FMAX,
                        src.free_elems()
                    ),
                );
            }
            per_partition(errors, "destination", dst, 6, src);
        }
        Op::BnAggr { dst, src } => {
            if src.free_elems() == 0 || !src.free_elems().is_multiple_of(3) {
                errors.push(at, format!("source has {} elements per partition, not a multiple of 3", src.free_elems()));
            }
            per_partition(errors, "destination", dst, 2, src);
        }
        Op::Top8 { mode, dst, src, vals, idx, .. } => {
            let (lo, hi) = penguin::TOP8_SRC_ELEMS;
            if !(lo..=hi).contains(&src.free_elems()) {
                errors.push(at, format!("{mode} reads {lo} to {hi} elements per partition, not {}", src.free_elems()));
            }
            if *mode == penguin::Top8Mode::MatchReplace8 {
                same(errors, dst, src);
            } else {
                per_partition(errors, "destination", dst, penguin::TOP8_VALUES, src);
            }
            for (what, t) in [("values", vals), ("indices", idx)] {
                if let Some(t) = t {
                    per_partition(errors, what, t, penguin::TOP8_VALUES, src);
                }
            }
            if *mode != penguin::Top8Mode::Max8 && vals.is_none() {
                errors.push(at, format!("{mode} needs its values (vals=)"));
            }
        }
        _ => {}
    }
}

fn check_ap(errors: &mut Errors, at: At, e: Engine, ap: &HwAp, sbuf_cap: i128, hbm_size: u64) {
    if ap.dims.len() > e.max_free_dims() {
        errors.push(
            at,
            format!("{TOO_MANY_STRIDES} ({} free dimensions, {e} supports {})", ap.dims.len(), e.max_free_dims()),
        );
    }
    if ap.num_partitions == 0 || ap.dims.iter().any(|d| d.num == 0) {
        errors.push(at, "empty access pattern");
        return;
    }
    if ap.num_elems().saturating_mul(u64::from(ap.dtype.size_bytes())) > i64::MAX as u64 {
        errors.push(
            at,
            format!(
                "too many elements ({} partitions x {} per partition of {}; at most 2^63 - 1 bytes)",
                ap.num_partitions,
                ap.free_elems(),
                ap.dtype
            ),
        );
    }
    // Exact bounds: a hostile stride, count or offset must not wrap into range.
    let [p0, p1, lo, hi] = ap.byte_region_wide();
    match ap.memory {
        Memory::Hbm => {
            if lo < 0 || hi > i128::from(hbm_size) {
                errors.push(at, format!("hbm bytes {lo}..{hi} outside the {hbm_size} bytes of HBM"));
            }
        }
        Memory::Sbuf | Memory::Psum => {
            if p0 < 0 {
                errors.push(at, format!("partitions {p0}..{p1} below partition 0"));
            }
            if p1 > i128::from(penguin::target::NUM_PARTITIONS) {
                errors.push(at, format!("partitions {p0}..{p1} beyond 128"));
            }
            let cap = if ap.memory == Memory::Sbuf {
                sbuf_cap
            } else {
                i128::from(penguin::target::PSUM_NUM_BANKS * penguin::target::PSUM_BANK_BYTES)
            };
            if lo < 0 || hi > cap {
                errors.push(at, format!("{} bytes {lo}..{hi} outside the {cap} bytes per partition", ap.memory));
            }
            let bank = i128::from(penguin::target::PSUM_BANK_BYTES);
            if ap.memory == Memory::Psum && lo >= 0 && hi > lo && lo / bank != (hi - 1) / bank {
                errors.push(at, format!("psum bytes {lo}..{hi} cross a bank boundary"));
            }
            if e.is_compute() && !partition_start_ok(ap.start_partition, ap.num_partitions) {
                errors.push(
                    at,
                    format!(
                        "{} partitions cannot start at partition {} (partition start rule)",
                        ap.num_partitions, ap.start_partition
                    ),
                );
            }
        }
    }
}

/// The partition start rule of compute-engine access patterns.
pub fn partition_start_ok(start: u32, count: u32) -> bool {
    match count {
        0..=32 => start.is_multiple_of(32),
        33..=64 => start == 0 || start == 64,
        _ => start == 0,
    }
}

/// Run the streams of `programs` on semaphores alone, each program's semaphore `s` being
/// entry `table[s]` of one table of `nsem` counters (the cores of a chip share some);
/// describe where they stop if they cannot finish (a stream of core K > 0 as `coreK.pe[3]`).
pub(crate) fn find_deadlock(programs: &[(&Program, &[usize])], nsem: usize) -> Option<String> {
    let mut pc: Vec<Vec<usize>> = programs.iter().map(|(p, _)| vec![0; p.streams.len()]).collect();
    let mut sem = vec![0u64; nsem];
    loop {
        let mut progressed = false;
        for ((p, table), pc) in programs.iter().zip(&mut pc) {
            let slot = |s: crate::SemId| table.get(s.0 as usize).copied();
            for (e, stream) in p.streams.iter().enumerate() {
                while let Some(inst) = stream.get(pc[e]) {
                    // A semaphore outside the table (another core's to signal) holds no wait.
                    let count = |s| slot(s).map_or(0, |i| sem.get(i).copied().unwrap_or(u64::MAX));
                    if inst.waits.iter().any(|w| count(w.sem) < w.value) {
                        break;
                    }
                    if let Some(v) = inst.signal.and_then(slot).and_then(|i| sem.get_mut(i)) {
                        *v = v.saturating_add(1);
                    }
                    pc[e] += 1;
                    progressed = true;
                }
            }
        }
        if !progressed {
            break;
        }
    }
    let mut stuck: Vec<String> = Vec::new();
    for (core, ((p, _), pc)) in programs.iter().zip(&pc).enumerate() {
        for (e, s) in p.streams.iter().enumerate() {
            if pc[e] < s.len() {
                let at = match Engine::from_index(e) {
                    Some(engine) => InstRef { engine, index: pc[e] }.to_string(),
                    None => format!("?[{}]", pc[e]),
                };
                stuck.push(if core == 0 { at } else { format!("core{core}.{at}") });
            }
        }
    }
    (!stuck.is_empty()).then(|| format!("deadlock: streams wait forever at {}", stuck.join(", ")))
}

#[cfg(test)]
mod tests {
    use penguin::{CastMode, Dim, Target};

    use super::*;
    use crate::program::BirInst;

    use crate::program::test_ap as ap;

    /// The verifier's errors for a program of one op on `engine`.
    fn errors(engine: Engine, op: Op) -> Vec<String> {
        let mut p = Program::new("k", Target::Trn2);
        p.hbm_size = 1 << 20;
        p.streams[engine.index()].push(BirInst { op, waits: Vec::new(), signal: None, origin: None });
        match verify_program(&p) {
            Err(BirError::Verify(errors)) => errors.iter().map(ToString::to_string).collect(),
            other => panic!("expected verifier errors, got {other:?}"),
        }
    }

    #[test]
    fn hostile_access_patterns_are_out_of_bounds_not_wrapped() {
        let memset = |dst| Op::Memset { dst, value: 0.0 };
        let huge = vec![Dim::new(i64::MAX, u32::MAX); 3];
        let cases = [
            // A partition stride of 2^32 used to truncate to partitions 0..1.
            (memset(ap(Memory::Sbuf, 0, 2, 1 << 32, 0, vec![Dim::new(1, 4)])), "beyond 128"),
            (memset(ap(Memory::Sbuf, 0, 2, -1, 0, vec![Dim::new(1, 4)])), "below partition 0"),
            (memset(ap(Memory::Sbuf, 0, 1, 1, 0, huge)), "outside the 229376 bytes per partition"),
            (memset(ap(Memory::Sbuf, 0, 1, 1, u64::MAX, vec![Dim::new(1, 4)])), "outside the 229376 bytes"),
            (memset(ap(Memory::Psum, 0, 1, 1, 0, vec![Dim::new(i64::MIN, 2)])), "outside the 16384 bytes"),
            (memset(ap(Memory::Sbuf, 0, 1, 1, 0, vec![Dim::new(0, u32::MAX); 3])), "too many elements"),
        ];
        for (op, needle) in cases {
            let errs = errors(Engine::Dve, op);
            assert!(errs.iter().any(|e| e.contains(needle)), "no {needle:?} in {errs:?}");
        }
        let sbuf = ap(Memory::Sbuf, 0, 4, 1, 0, vec![Dim::new(1, 8)]);
        let hbm_cases = [
            ap(Memory::Hbm, 0, 4, i64::MAX, 0, vec![Dim::new(1, 8)]),
            ap(Memory::Hbm, 0, 4, i64::MIN, 0, vec![Dim::new(1, 8)]),
            ap(Memory::Hbm, 0, 4, 8, u64::MAX - 8, vec![Dim::new(1, 8)]),
            ap(Memory::Hbm, 0, 4, 8, 0, vec![Dim::new(i64::MAX, 8)]),
        ];
        for src in hbm_cases {
            let errs = errors(Engine::Dma(0), Op::DmaCopy { dst: sbuf.clone(), src, cast: CastMode::Rne });
            assert!(errs.iter().any(|e| e.contains("outside the 1048576 bytes of HBM")), "{errs:?}");
        }
        let sparse = Op::LoadStationarySparse {
            src: ap(Memory::Sbuf, 0, 8, 1, 0, vec![Dim::new(1, 8)]),
            tags: ap(Memory::Sbuf, 0, 8, 1, 64, vec![Dim::new(1, 8)]),
            pattern: penguin::SparsityPattern { n: 1, m: u32::MAX },
            tile_position: penguin::TilePosition::default(),
            tile_size: penguin::TileSize::default(),
        };
        let errs = errors(Engine::Pe, sparse);
        assert!(errs.iter().any(|e| e.contains("tags must be int16")), "{errs:?}");
    }

    #[test]
    fn errors_carry_the_instruction_they_are_about() {
        let mut p = Program::new("k", Target::Trn2);
        p.semaphores.push("never".into());
        let dst = ap(Memory::Sbuf, 0, 1, 1, 0, vec![Dim::new(1, 4)]);
        let memset =
            |waits| BirInst { op: Op::Memset { dst: dst.clone(), value: 0.0 }, waits, signal: None, origin: None };
        p.streams[Engine::Pe.index()].push(memset(Vec::new()));
        let Err(BirError::Verify(errs)) = verify_program(&p) else { panic!("expected verifier errors") };
        let at = InstRef { engine: Engine::Pe, index: 0 };
        assert_eq!(errs, [VerifyError::inst(at, "memset", "memset cannot run on pe")]);
        assert_eq!(errs[0].to_string(), "pe[0] memset: memset cannot run on pe");
        // A deadlock is about the program as a whole.
        p.streams[Engine::Pe.index()].clear();
        p.streams[Engine::Dve.index()]
            .push(memset(vec![crate::program::Wait { sem: crate::program::SemId(0), value: 1 }]));
        let Err(BirError::Verify(errs)) = verify_program(&p) else { panic!("expected verifier errors") };
        assert_eq!(errs, [VerifyError::program("deadlock: streams wait forever at dve[0]")]);
        assert_eq!(errs[0].to_string(), "deadlock: streams wait forever at dve[0]");
    }
}
