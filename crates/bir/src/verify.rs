//! The BIR verifier.
//!
//! Rules:
//! 1. **Engines run their own ops**: PE runs LoadStationary/MultiplyMoving, DMA queues run
//!    DMA copies, ACT/DVE/POOL run tensor copies and memsets, SP runs memsets only.
//! 2. **Strides**: an access pattern has at most as many free dimensions as its engine
//!    supports (`Too many strides!`).
//! 3. **Partition start rule** on compute engines: more than 64 partitions start at 0;
//!    33..=64 start at 0 or 64; 32 or fewer start at a multiple of 32.
//! 4. **Bounds**: on-chip accesses stay within 128 partitions and the target's SBUF bytes
//!    (or the 8 PSUM banks, one bank per access); HBM accesses stay inside `hbm_size`.
//! 5. **Matmul**: a MultiplyMoving follows a LoadStationary on the PE stream, writes fp32
//!    PSUM, and its K matches the stationary operand's.
//! 6. **Copies**: equal partition counts and elements per partition.
//! 7. **Semaphores**: every semaphore id exists; and the program does not deadlock: running
//!    the streams with only their waits and signals finishes every stream.

use penguin::{DType, Memory};

use crate::error::{BirError, TOO_MANY_STRIDES};
use crate::program::{Engine, HwAp, Op, Program};

/// Verify a program, collecting every error.
pub fn verify_program(p: &Program) -> Result<(), BirError> {
    let mut errors = Vec::new();
    let sbuf_cap = i64::from(p.target.info().statebuf_par_size_in_bytes);
    for e in Engine::all() {
        let mut stationary_k: Option<u32> = None;
        for (n, inst) in p.stream(e).iter().enumerate() {
            let at = format!("{e}[{n}] {}", inst.op.name());
            if !inst.op.engine_class().contains(e) {
                errors.push(format!("{at}: {} cannot run on {e}", inst.op.name()));
            }
            for (ap, _) in inst.op.accesses() {
                check_ap(&mut errors, &at, e, ap, sbuf_cap, p.hbm_size);
            }
            let same = |errors: &mut Vec<String>, a: &HwAp, b: &HwAp| {
                if a.num_partitions != b.num_partitions || a.free_elems() != b.free_elems() {
                    errors.push(format!(
                        "{at}: shape mismatch: {} x {} vs {} x {}",
                        a.num_partitions,
                        a.free_elems(),
                        b.num_partitions,
                        b.free_elems()
                    ));
                }
            };
            match &inst.op {
                Op::LoadStationary { src, .. } => stationary_k = Some(src.num_partitions),
                Op::LoadStationarySparse { src, tags, pattern, .. } => {
                    same(&mut errors, src, tags);
                    if tags.dtype != DType::Int16 {
                        errors.push(format!("{at}: tags must be int16, not {}", tags.dtype));
                    }
                    stationary_k = Some(src.num_partitions / pattern.n.max(1) * pattern.m);
                }
                Op::MultiplyMoving { dst, src, .. } => {
                    match stationary_k {
                        None => errors.push(format!("{at}: no LoadStationary before it")),
                        Some(k) if k != src.num_partitions => {
                            errors.push(format!("{at}: K = {} but the loaded stationary has {k}", src.num_partitions));
                        }
                        Some(_) => {}
                    }
                    if dst.memory != Memory::Psum || dst.dtype != DType::Fp32 {
                        errors.push(format!("{at}: result must be fp32 in psum, not {} {}", dst.dtype, dst.memory));
                    }
                }
                Op::Transpose { dst, src } => {
                    if u64::from(dst.num_partitions) != src.free_elems()
                        || dst.free_elems() != u64::from(src.num_partitions)
                    {
                        errors.push(format!("{at}: result is not the transpose of the source"));
                    }
                    if dst.memory != Memory::Psum || dst.dtype != DType::Fp32 {
                        errors.push(format!("{at}: result must be fp32 in psum, not {} {}", dst.dtype, dst.memory));
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
                }
                Op::DmaGather { dst: rows, table, index } | Op::DmaScatterAdd { src: rows, table, index } => {
                    if index.dtype != DType::Int32 {
                        errors.push(format!("{at}: index must be int32, not {}", index.dtype));
                    }
                    if u64::from(rows.num_partitions) != u64::from(index.num_partitions) * index.free_elems()
                        || rows.free_elems() != table.free_elems()
                    {
                        errors.push(format!("{at}: one row of the table per index entry is expected"));
                    }
                }
                Op::Memset { .. } => {}
            }
            for w in &inst.waits {
                if w.sem.0 as usize >= p.semaphores.len() {
                    errors.push(format!("{at}: waits on {}, which does not exist", w.sem));
                }
            }
            if let Some(s) = inst.signal {
                if s.0 as usize >= p.semaphores.len() {
                    errors.push(format!("{at}: signals {s}, which does not exist"));
                }
            }
        }
    }
    if errors.is_empty() {
        if let Some(stuck) = find_deadlock(p) {
            errors.push(stuck);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(BirError::Verify(errors))
    }
}

fn check_ap(errors: &mut Vec<String>, at: &str, e: Engine, ap: &HwAp, sbuf_cap: i64, hbm_size: u64) {
    if ap.dims.len() > e.max_free_dims() {
        errors.push(format!(
            "{at}: {TOO_MANY_STRIDES} ({} free dimensions, {e} supports {})",
            ap.dims.len(),
            e.max_free_dims()
        ));
    }
    if ap.num_partitions == 0 || ap.dims.iter().any(|d| d.num == 0) {
        errors.push(format!("{at}: empty access pattern"));
        return;
    }
    let (p0, p1, lo, hi) = ap.byte_region();
    match ap.memory {
        Memory::Hbm => {
            if lo < 0 || hi as u64 > hbm_size {
                errors.push(format!("{at}: hbm bytes {lo}..{hi} outside the {hbm_size} bytes of HBM"));
            }
        }
        Memory::Sbuf | Memory::Psum => {
            if p1 > penguin::target::NUM_PARTITIONS {
                errors.push(format!("{at}: partitions {p0}..{p1} beyond 128"));
            }
            let cap = if ap.memory == Memory::Sbuf {
                sbuf_cap
            } else {
                i64::from(penguin::target::PSUM_NUM_BANKS * penguin::target::PSUM_BANK_BYTES)
            };
            if lo < 0 || hi > cap {
                errors.push(format!("{at}: {} bytes {lo}..{hi} outside the {cap} bytes per partition", ap.memory));
            }
            let bank = i64::from(penguin::target::PSUM_BANK_BYTES);
            if ap.memory == Memory::Psum && lo >= 0 && hi > lo && lo / bank != (hi - 1) / bank {
                errors.push(format!("{at}: psum bytes {lo}..{hi} cross a bank boundary"));
            }
            if e.is_compute() && !partition_start_ok(ap.start_partition, ap.num_partitions) {
                errors.push(format!(
                    "{at}: {} partitions cannot start at partition {} (partition start rule)",
                    ap.num_partitions, ap.start_partition
                ));
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

/// Run the streams on semaphores alone; describe where they stop if they cannot finish.
fn find_deadlock(p: &Program) -> Option<String> {
    let mut pc = vec![0usize; p.streams.len()];
    let mut sem = vec![0u32; p.semaphores.len()];
    loop {
        let mut progressed = false;
        for (e, stream) in p.streams.iter().enumerate() {
            while let Some(inst) = stream.get(pc[e]) {
                if inst.waits.iter().any(|w| sem.get(w.sem.0 as usize).copied().unwrap_or(0) < w.value) {
                    break;
                }
                if let Some(s) = inst.signal {
                    if let Some(v) = sem.get_mut(s.0 as usize) {
                        *v += 1;
                    }
                }
                pc[e] += 1;
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    let stuck: Vec<String> = p
        .streams
        .iter()
        .enumerate()
        .filter(|(e, s)| pc[*e] < s.len())
        .map(|(e, _)| format!("{}[{}]", Engine::from_index(e).map_or("?".into(), |x| x.name()), pc[e]))
        .collect();
    (!stuck.is_empty()).then(|| format!("deadlock: streams wait forever at {}", stuck.join(", ")))
}
