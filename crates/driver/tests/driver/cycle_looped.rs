//! The looped cycle model on planned GEMMs rolled by a small roller where they repeat: the
//! figures of the unrolled model (the hand-built loops and nests are sim's,
//! `crates/sim/tests/sim/cycle_looped.rs`).

use codegen::Schedule;
use penguin::Target;
use test_support::looped::check_against_unrolled;
use test_support::plan::planned;
use test_support::roll::roll;

#[test]
fn planned_gemms_rolled_where_they_repeat_match_the_unrolled_model() {
    // The lowering spreads loads over queues and semaphores, so this small roller finds few
    // loops in planned programs (BlockedMn 512 -> 437 items on trn2); the lazy walk over the
    // rest must still give the unrolled figures.
    let mut rolled = 0;
    for target in [Target::Trn1, Target::Trn2] {
        for schedule in [Schedule::Naive, Schedule::Hoisted, Schedule::BlockedMn] {
            let p = planned(target, schedule, false, 512, 1024, 2048);
            let lp = roll(&p, 8);
            rolled += p.num_insts() - lp.streams.iter().map(Vec::len).sum::<usize>();
            check_against_unrolled(&lp, &target.profile(), 1e-3);
        }
    }
    assert!(rolled > 100, "rolled away {rolled} instructions");
}
