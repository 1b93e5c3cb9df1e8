//! Tests of the looped verifier.

use super::*;
use crate::looped::fixture::{dma_copy, program};
use crate::looped::Loop;
use crate::program::{SemId, Wait};

/// A copy between SBUF and HBM bytes `off`.
fn copy(off: u64, wait: Option<u32>) -> BirInst {
    dma_copy(0, off, off, wait.map(u64::from))
}

/// A program of 64 KiB of HBM with `stream` on dma1.
fn with(stream: Vec<Item>) -> LoopedProgram {
    let mut p = program(Engine::Dma(1), Vec::new());
    p.hbm_size = 1 << 16;
    let mut lp = LoopedProgram::from_program(&p);
    lp.streams[Engine::Dma(1).index()] = stream;
    lp
}

fn one_loop(trips: u32, body: Vec<Item>, step: Vec<i64>) -> Vec<Item> {
    vec![Item::Inst(copy(0, None)), Item::Loop(Loop { trips, body, step })]
}

const AT: LoopAt = LoopAt { engine: Engine::Dma(1), first: 1, depth: 0 };

#[test]
fn a_good_loop_verifies() {
    let lp = with(one_loop(4, vec![Item::Inst(copy(64, None))], vec![128, 0, 128, 0]));
    assert_eq!(verify_looped(&lp), Ok(()));
}

#[test]
fn structural_errors_name_the_loop() {
    let body = vec![Item::Inst(copy(0, None))];
    let lp = with(one_loop(0, body.clone(), vec![0; 4]));
    assert_eq!(verify_looped(&lp), Err(vec![LoopError::ZeroTrips { at: AT }]));
    let lp = with(one_loop(2, body, vec![0; 3]));
    assert_eq!(verify_looped(&lp), Err(vec![LoopError::StepLength { at: AT, step: 3, params: 4 }]));
    let lp = with(one_loop(2, Vec::new(), Vec::new()));
    assert_eq!(verify_looped(&lp), Err(vec![LoopError::EmptyBody { at: AT }]));
    assert_eq!(LoopError::EmptyBody { at: AT }.to_string(), "dma1[1] loop i0: the body is empty");
}

#[test]
fn parameters_are_checked_at_the_corners_of_the_iteration_box() {
    // Nested: the inner loop's wait goes down by 1 per trip of i1 and up by 3 per trip of
    // i0; the low corner (i0 = 0, i1 = 2) is -1.
    let inner = Loop { trips: 3, body: vec![Item::Inst(copy(0, Some(1)))], step: vec![0, 0, 0, 0, -1] };
    let lp = with(one_loop(2, vec![Item::Loop(inner)], vec![0, 0, 0, 0, 3]));
    let want = LoopError::ParamOutOfRange {
        engine: Engine::Dma(1),
        index: 1,
        op: "dma_copy",
        param: "wait 0".into(),
        lo: -1,
        hi: 4,
        max: i128::from(i64::MAX),
    };
    assert_eq!(verify_looped(&lp), Err(vec![want.clone()]));
    assert_eq!(
        want.to_string(),
        "dma1[1] dma_copy: wait 0 takes values -1..=4 over the loop iterations, outside 0..=9223372036854775807"
    );
    // A start partition past u32 in the last trip.
    let lp = with(one_loop(3, vec![Item::Inst(copy(0, None))], vec![0, 1 << 31, 0, 0]));
    assert!(
        matches!(&verify_looped(&lp), Err(e) if matches!(&e[0], LoopError::ParamOutOfRange { param, .. } if param == "dst start partition"))
    );
}

#[test]
fn engine_rules_run_on_the_expansion() {
    // The last of 600 trips reads HBM bytes past hbm_size; the first 512 do not.
    let lp = with(one_loop(600, vec![Item::Inst(copy(0, None))], vec![0, 0, 128, 0]));
    let Err(errors) = verify_looped(&lp) else { panic!("accepted") };
    let [LoopError::Program(BirError::Verify(msgs))] = errors.as_slice() else { panic!("{errors:?}") };
    assert!(msgs[0].to_string().starts_with("dma1[513] dma_copy: hbm bytes 65536..65664 outside"), "{msgs:?}");
    // A wait that no iteration can satisfy deadlocks.
    let lp = with(one_loop(3, vec![Item::Inst(copy(0, Some(5)))], vec![0, 0, 0, 0, 1]));
    let Err(errors) = verify_looped(&lp) else { panic!("accepted") };
    assert!(errors[0].to_string().contains("deadlock"), "{errors:?}");
}

#[test]
fn a_huge_program_is_checked_at_its_corners() {
    // 2^32 - 2 trips: far past MAX_EXPANDED; bounds are still exact. (With the copy before
    // the loop, `b` is signalled u32::MAX times, as many as it counts.)
    let big = u32::MAX - 1;
    let lp = with(one_loop(big, vec![Item::Inst(copy(0, Some(0)))], vec![0, 0, 0, 0, 0]));
    assert_eq!(verify_looped(&lp), Ok(()));
    let lp = with(one_loop(big, vec![Item::Inst(copy(0, None))], vec![0, 0, 1, 0]));
    let Err(errors) = verify_looped(&lp) else { panic!("accepted") };
    assert!(errors[0].to_string().contains("outside the 65536 bytes of HBM"), "{errors:?}");
    // A wait on a semaphore that does not exist.
    let mut bad = copy(0, None);
    bad.waits.push(Wait { sem: SemId(9), value: 0 });
    let lp = with(one_loop(big, vec![Item::Inst(bad)], vec![0; 5]));
    let Err(errors) = verify_looped(&lp) else { panic!("accepted") };
    assert!(errors[0].to_string().contains("waits on s9, which does not exist"), "{errors:?}");
}

/// Nested loops of 2 trips keep every iteration in the corner program: past the limit it is
/// refused, not expanded.
#[test]
fn a_corner_program_too_large_to_expand_is_refused() {
    let mut item = Item::Inst(copy(0, None));
    for _ in 0..22 {
        item = Item::Loop(Loop { trips: 2, body: vec![item], step: vec![0; 4] });
    }
    let got = verify_looped(&with(vec![item]));
    assert_eq!(got, Err(vec![LoopError::CornerTooLarge { unrolled: 1 << 22, corner: 1 << 22 }]));
}

#[test]
fn a_semaphore_signalled_past_i64_is_refused() {
    // Loops of `trips` (outermost first) of copies that each signal `b`, after one before the
    // loops.
    let nest = |trips: &[u32]| {
        let mut body = vec![Item::Inst(copy(0, None))];
        for &t in trips[1..].iter().rev() {
            body = vec![Item::Loop(Loop { trips: t, body, step: vec![0; 4] })];
        }
        with(one_loop(trips[0], body, vec![0; 4]))
    };
    // 2^63 + 1 signals: one more than a wait can name.
    let Err(errors) = verify_looped(&nest(&[1 << 21, 1 << 21, 1 << 21])) else { panic!("verified") };
    let [LoopError::Program(e)] = errors.as_slice() else { panic!("{errors:?}") };
    assert_eq!(
        e.to_string(),
        "BIR verifier: semaphore s1 (b) is signalled 9223372036854775809 times, more than the 9223372036854775807 a semaphore counts"
    );
    // 2^32 + 1 signals (past a 32-bit count) are fine.
    assert_eq!(verify_looped(&nest(&[65_536, 65_536])), Ok(()));
}
