//! An explicit blocked schedule given without block sizes plans the blocks the cycle model
//! finds best for it (the search `auto` runs, held to that schedule), never worse than the
//! schedule's default blocks; a block size given stays fixed.

use codegen::Schedule;
use driver::gemm::Searched;
use driver::{gemm, BlockRequest, GemmRequest, Report};
use penguin::{DType, Target};

fn modeled(schedule: Schedule, blocks: BlockRequest, extrapolate: bool) -> Report {
    let mut req = GemmRequest::new(1024, 1024, 1024, DType::Bf16, Target::Trn2);
    req.schedule = schedule;
    req.blocks = blocks;
    req.options.simulate = false;
    req.options.extrapolate = extrapolate;
    gemm(&req, None).unwrap().report
}

fn defaults(schedule: Schedule) -> BlockRequest {
    let d = codegen::BlockSizes::for_schedule(schedule);
    let k = (schedule == Schedule::BlockedMnk).then_some(d.k);
    BlockRequest { m: Some(d.m), n: Some(d.n), k }
}

#[test]
fn an_explicit_schedule_without_blocks_gets_the_best_blocks_for_it() {
    for schedule in [Schedule::BlockedMn, Schedule::BlockedMnk] {
        let searched = modeled(schedule, BlockRequest::default(), false);
        let fixed = modeled(schedule, defaults(schedule), false);
        assert_eq!(searched.schedule, schedule.to_string());
        let a = searched.auto.as_ref().unwrap();
        assert_eq!(a.searched, Searched::Blocks);
        // `--json` names it as the README says.
        assert_eq!(serde_json::to_value(a).unwrap()["searched"], "blocks");
        assert!(a.evaluated > 1, "{a:?}");
        assert!(fixed.auto.is_none());
        // The defaults are among the candidates weighed, so the search is never slower (and
        // at 1024^3 it is much faster: the default blocks are as large as C).
        assert!(searched.modeled_time_us <= fixed.modeled_time_us, "{schedule}");
        assert!(searched.modeled_time_us < 0.8 * fixed.modeled_time_us, "{schedule}");
    }
    // When auto itself picks blocked-mn, the held search finds its blocks and time.
    let auto = modeled(Schedule::Auto, BlockRequest::default(), false);
    assert_eq!(auto.auto.as_ref().unwrap().searched, Searched::Schedule);
    let held: Schedule = auto.schedule.parse().unwrap();
    let searched = modeled(held, BlockRequest::default(), false);
    let (x, y) = (auto.auto.unwrap(), searched.auto.unwrap());
    assert_eq!((x.block_m, x.block_n, x.order), (y.block_m, y.block_n, y.order));
    assert_eq!(auto.modeled_time_us.to_bits(), searched.modeled_time_us.to_bits());
}

#[test]
fn a_block_size_given_stays_fixed_while_the_others_are_searched() {
    let r = modeled(Schedule::BlockedMnk, BlockRequest { m: Some(256), ..BlockRequest::default() }, false);
    let a = r.auto.unwrap();
    assert_eq!((a.searched, a.block_m), (Searched::Blocks, 256));
    // Every block size given: planned exactly as asked, nothing searched.
    let r = modeled(Schedule::BlockedMnk, BlockRequest { m: Some(256), n: Some(512), k: Some(256) }, false);
    assert!(r.auto.is_none());
    assert_eq!(r.blocks.as_ref().map(|b| (b.m, b.n, b.k)), Some((256, 512, 256)));
}

#[test]
fn an_extrapolated_explicit_schedule_searches_its_blocks_too() {
    let r = modeled(Schedule::BlockedMnk, BlockRequest::default(), true);
    assert!(r.extrapolated.is_some());
    assert_eq!(r.schedule, "blocked-mnk");
    assert_eq!(r.auto.unwrap().searched, Searched::Blocks);
}
