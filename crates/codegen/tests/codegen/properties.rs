//! Property tests of the GEMM planner, checked by following the planned dataflow:
//! every output element is produced by exactly one accumulation group with exactly one START
//! and one STOP, and the K sub-tiles of each group tile `[0, K)` exactly once, in order.

use std::collections::HashMap;

use codegen::GemmConfig;
use penguin::{DType, EngineAccumulationType as Acc, FunctionView, InstData, Memory, Target, TensorId};
use proptest::prelude::*;
use test_support::plan_gemm;

/// What the last DMA into an SBUF buffer loaded: which K rows.
#[derive(Clone, Copy, Debug, PartialEq)]
struct KRows {
    start: u64,
    len: u64,
}

struct Group {
    starts: u32,
    stops: u32,
    slices: Vec<(u64, u64)>,
}

fn check_plan(m: u64, k: u64, n: u64, lhs_transposed: bool) -> Result<(), TestCaseError> {
    let mut cfg = GemmConfig::new(m, k, n, DType::Bf16, Target::Trn2);
    cfg.lhs_transposed = lhs_transposed;
    let plan = plan_gemm(&cfg).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let f = &plan.function;
    let (a, b, c) = (TensorId(0), TensorId(1), TensorId(2));
    let mut loaded: HashMap<TensorId, KRows> = HashMap::new();
    let mut open: HashMap<TensorId, usize> = HashMap::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut out_buffer_group: HashMap<TensorId, usize> = HashMap::new();
    let mut produced_by = vec![u32::MAX; (m * n) as usize];
    let mut live = 0u32;
    for &id in f.layout() {
        let inst = f.inst(id).unwrap();
        // Loads that convert are offloaded casts; treat both kinds of load alike.
        let load = match inst {
            InstData::DmaCopy(d) => Some((&d.dst, &d.src)),
            InstData::OffloadedMemCast(c) => Some((&c.dst, &c.src)),
            _ => None,
        };
        match inst {
            InstData::DmaCopy(_) | InstData::OffloadedMemCast(_)
                if load.is_some_and(|(_, src)| src.tensor == a || src.tensor == b) =>
            {
                let Some((dst, src)) = load else { continue };
                let d = penguin::DmaCopyData {
                    dst: dst.clone(),
                    src: src.clone(),
                    cast: penguin::CastMode::Rne,
                    queue: None,
                };
                // A^T tile: partitions walk K. A [K, M] and B: partitions are rows of K.
                let ap = &d.src.ap;
                let row_len = if d.src.tensor == b {
                    n
                } else if lhs_transposed {
                    m
                } else {
                    k
                };
                let start = if d.src.tensor == a && !lhs_transposed {
                    ap.offset as u64 % row_len
                } else {
                    ap.offset as u64 / row_len
                };
                loaded.insert(d.dst.tensor, KRows { start, len: u64::from(ap.partitions.num) });
            }
            InstData::MatMult(mm) => {
                let ks = loaded[&mm.stationary.tensor];
                prop_assert_eq!(ks, loaded[&mm.moving.tensor], "stationary and moving hold different K rows");
                prop_assert_eq!(ks.len, u64::from(mm.stationary.partitions()));
                let flags = mm.flags();
                let g = if flags.contains(Acc::START) {
                    prop_assert!(!open.contains_key(&mm.dst.tensor), "START on a bank with an open group");
                    groups.push(Group { starts: 0, stops: 0, slices: Vec::new() });
                    live += 1;
                    prop_assert!(live <= 8, "more than 8 live groups");
                    open.insert(mm.dst.tensor, groups.len() - 1);
                    groups.len() - 1
                } else {
                    *open.get(&mm.dst.tensor).ok_or_else(|| TestCaseError::fail("ACCU without START"))?
                };
                let grp = &mut groups[g];
                grp.starts += u32::from(flags.contains(Acc::START));
                grp.slices.push((ks.start, ks.start + ks.len));
                if flags.contains(Acc::STOP) {
                    grp.stops += 1;
                    open.remove(&mm.dst.tensor);
                    live -= 1;
                    // The group's K sub-tiles tile [0, K) exactly once, in order.
                    let mut at = 0;
                    for &(s, e) in &grp.slices {
                        prop_assert_eq!(s, at, "gap or overlap in K");
                        at = e;
                    }
                    prop_assert_eq!(at, k);
                    open.insert(TensorId(u32::MAX - mm.dst.tensor.0), g);
                }
            }
            InstData::TensorCopy(tc) => {
                prop_assert_eq!(tc.src.memory, Memory::Psum);
                let g = open
                    .remove(&TensorId(u32::MAX - tc.src.tensor.0))
                    .ok_or_else(|| TestCaseError::fail("copy from PSUM without a stopped group"))?;
                out_buffer_group.insert(tc.dst.tensor, g);
            }
            InstData::DmaCopy(d) if d.dst.tensor == c => {
                let g = out_buffer_group[&d.src.tensor] as u32;
                let ap = &d.dst.ap;
                for p in 0..u64::from(ap.partitions.num) {
                    let mut elems = Vec::new();
                    ap.for_each_free_offset(|o| elems.push(o));
                    for o in elems {
                        let idx = (ap.offset + p as i64 * ap.partitions.stride + o) as usize;
                        prop_assert_eq!(produced_by[idx], u32::MAX, "output element written twice");
                        produced_by[idx] = g;
                    }
                }
            }
            other => prop_assert!(false, "unexpected instruction {}", other.opcode()),
        }
    }
    prop_assert!(produced_by.iter().all(|&g| g != u32::MAX), "an output element was never written");
    for g in &groups {
        prop_assert_eq!((g.starts, g.stops), (1, 1));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_output_element_has_one_start_and_one_stop(m in 1u64..700, k in 1u64..700, n in 1u64..1300, t in any::<bool>()) {
        check_plan(m, k, n, t)?;
    }
}

#[test]
fn exact_multiples_and_edges() {
    for (m, k, n) in [(1, 1, 1), (128, 128, 512), (129, 257, 513), (300, 1000, 777)] {
        check_plan(m, k, n, false).unwrap();
        check_plan(m, k, n, true).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Compressing an A that satisfies the pattern and decompressing it returns A; an A with
    /// the pattern broken is refused.
    #[test]
    fn sparse_compression_round_trips(rows in 1u64..6, k in 1u64..70, which in 0usize..5, seed in any::<u64>()) {
        let pattern = penguin::SparsityPattern::SUPPORTED[which];
        let (n, m) = (u64::from(pattern.n), u64::from(pattern.m));
        let mut state = seed | 1;
        let mut next = || { state ^= state << 13; state ^= state >> 7; state ^= state << 17; state };
        // Keep at most n non-zeros per group of m.
        let mut a = vec![0.0f32; (rows * k) as usize];
        for i in 0..rows {
            for g in 0..k.div_ceil(m) {
                for _ in 0..n {
                    let col = g * m + next() % m;
                    if col < k {
                        a[(i * k + col) as usize] = (next() % 17) as f32 - 8.0;
                    }
                }
            }
        }
        let s = codegen::SparseA::compress(&a, rows, k, pattern).unwrap();
        prop_assert_eq!(s.values.len() as u64, rows * codegen::SparseA::cols(k, pattern));
        prop_assert_eq!(s.decompress(), a.clone());
        // The packed tags hold every row's tags, four rows to a word.
        let [cols, words] = codegen::SparseA::tags_shape(rows, k, pattern);
        let packed = s.packed_tags();
        prop_assert_eq!(packed.len() as u64, cols * words);
        for i in 0..rows as usize {
            for c in 0..cols as usize {
                let word = &packed[c * words as usize..(c + 1) * words as usize];
                prop_assert_eq!(penguin::sparse_tag(word, i), Some(u16::from(s.tags[i * cols as usize + c])));
            }
        }
        if k >= m {
            let mut dense = a;
            for c in 0..=n { dense[c as usize] = 1.0; }
            let err = codegen::SparseA::compress(&dense, rows, k, pattern).unwrap_err();
            prop_assert!(err.to_string().contains("row 0, K group 0"), "{}", err);
        }
    }

    /// Double-row packing followed by unpacking returns the operand.
    #[test]
    fn double_row_packing_round_trips(k in 1u64..700, f in 1u64..5) {
        let op: Vec<f32> = (0..k * f).map(|i| i as f32 + 0.5).collect();
        let blocks = codegen::pack_double_row(&op, k, f);
        prop_assert_eq!(blocks.len() as u64, (k + k % 2).div_ceil(256));
        prop_assert_eq!(codegen::unpack_double_row(&blocks, k, f), op);
    }
}
