//! The dependency edges of planned GEMMs' output stores: with exact HBM windows a store to C
//! waits on no store of a disjoint tile (their flat element ranges meet when the tiles share
//! rows), while its true edge (the evacuation that wrote its source) remains.

use std::collections::HashSet;

use codegen::{BlockSizes, GemmConfig, Schedule};
use penguin::{Access, AccessPattern, DType, DepKind, Function, InstId, Target, TensorId};
use test_support::plan_gemm;

/// Every element an HBM pattern touches, by brute force.
fn hbm_elems(ap: &AccessPattern) -> HashSet<i64> {
    let mut out = HashSet::new();
    for p in 0..i64::from(ap.partitions.num) {
        ap.for_each_free_offset(|o| {
            out.insert(ap.offset + p * ap.partitions.stride + o);
        });
    }
    out
}

/// The instructions writing `t`, in program order, with the access pattern written.
fn writers(f: &Function, t: TensorId) -> Vec<(InstId, AccessPattern)> {
    f.layout
        .iter()
        .flat_map(|&id| {
            let ops = f.insts[id.index()].operands();
            ops.into_iter()
                .filter(|(tile, access)| tile.tensor == t && *access != Access::Read)
                .map(|(tile, _)| (id, tile.ap.clone()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn stores_of_disjoint_output_tiles_have_no_edges() {
    // 256x2048x1024: 2 m tiles x 2 n tiles of 128 x 512, so two stores share each row range.
    for schedule in [Schedule::Naive, Schedule::Hoisted, Schedule::BlockedMn, Schedule::BlockedMnk] {
        let mut cfg = GemmConfig::new(256, 2048, 1024, DType::Bf16, Target::Trn2);
        cfg.schedule = schedule;
        cfg.blocks = BlockSizes::for_schedule(schedule);
        let plan = plan_gemm(&cfg).unwrap();
        let f = &plan.function;
        let c = f.outputs[0];
        let stores = writers(f, c);
        assert_eq!(stores.len(), 4, "{}", schedule.name());
        let store_ids: HashSet<InstId> = stores.iter().map(|s| s.0).collect();
        let elems: Vec<HashSet<i64>> = stores.iter().map(|s| hbm_elems(&s.1)).collect();
        // The test means something: some stores' flat ranges meet though their tiles do not.
        let boxes_meet = (0..4).any(|i| {
            (0..i).any(|j| {
                stores[i].1.region(false).overlaps(&stores[j].1.region(false)) && elems[i].is_disjoint(&elems[j])
            })
        });
        assert!(boxes_meet, "{}", schedule.name());
        for (i, (id, _)) in stores.iter().enumerate() {
            let deps = &f.deps[id.index()];
            let from_stores: Vec<InstId> = deps.iter().map(|d| d.from).filter(|d| store_ids.contains(d)).collect();
            // No two tiles overlap, so no store may wait on another.
            assert!((0..i).all(|j| elems[i].is_disjoint(&elems[j])));
            assert_eq!(from_stores, [], "{}: store {i}", schedule.name());
            // The true edge: RAW from the last earlier writer of the store's source.
            let inst = &f.insts[id.index()];
            let (src, _) = inst.operands().into_iter().find(|(_, a)| *a == Access::Read).unwrap();
            let pos = |x: InstId| f.layout.iter().position(|&l| l == x);
            let last = writers(f, src.tensor)
                .into_iter()
                .rev()
                .find(|(w, ap)| pos(*w) < pos(*id) && ap.region(true).overlaps(&src.ap.region(true)))
                .map(|(w, _)| w);
            let raw: Vec<InstId> = deps.iter().filter(|d| d.kind == DepKind::Raw).map(|d| d.from).collect();
            assert!(last.is_some() && raw.contains(&last.unwrap()), "{}: store {i} {deps:?}", schedule.name());
        }
    }
}
