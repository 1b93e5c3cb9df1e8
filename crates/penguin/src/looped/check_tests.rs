//! Tests of the generic looped rules on a test-only instruction type, so that the walk, the
//! parameter ranges and the corner sequence are checked apart from either IR.

use super::*;
use crate::looped::expand_items;
use crate::looped::fixture::{looped, t, T};

/// What the walk told of one instruction: its index, parameters, each parameter's range, and
/// the loops around it as (trips, the steps of its parameters, stride).
#[derive(Debug, PartialEq)]
struct Seen {
    index: u64,
    params: Vec<i64>,
    ranges: Vec<(i128, i128)>,
    loops: Vec<(u32, Vec<i64>, u64)>,
}

/// What the walk reported: faults, and every instruction.
#[derive(Default)]
struct Record {
    faults: Vec<(LoopAt, LoopFault)>,
    insts: Vec<Seen>,
}

impl LoopRules<T> for Record {
    fn fault(&mut self, at: LoopAt, fault: LoopFault) {
        self.faults.push((at, fault));
    }
    fn inst(&mut self, index: u64, _: &T, params: &[i64], loops: &[Enclosing<'_>]) {
        let ranges = params.iter().enumerate().map(|(q, &b)| param_range(loops, q, b)).collect();
        let loops = loops.iter().map(|l| (l.trips, (0..params.len()).map(|q| l.step(q)).collect(), l.stride)).collect();
        self.insts.push(Seen { index, params: params.to_vec(), ranges, loops });
    }
}

fn walk(items: &[Item<T>]) -> Record {
    let mut r = Record::default();
    walk_loops(items, &mut r);
    r
}

#[test]
fn the_walk_gives_each_instruction_its_loops_and_ranges() {
    // a(5); 3 x { b(0, 10); 4 x { c(100) } } with steps b: +1, -2; c: +7 outer, -1 inner.
    let inner = looped(4, vec![t("p", &[100])], vec![-1]);
    let items = vec![t("p", &[5]), looped(3, vec![t("p", &[0, 10]), inner], vec![1, -2, 7])];
    let r = walk(&items);
    assert!(r.faults.is_empty());
    let want = vec![
        Seen { index: 0, params: vec![5], ranges: vec![(5, 5)], loops: vec![] },
        Seen { index: 1, params: vec![0, 10], ranges: vec![(0, 2), (6, 10)], loops: vec![(3, vec![1, -2], 5)] },
        // c: 100 + 7 i0 - i1 over i0 < 3, i1 < 4: 97 ..= 114.
        Seen { index: 2, params: vec![100], ranges: vec![(97, 114)], loops: vec![(3, vec![7], 5), (4, vec![-1], 1)] },
    ];
    assert_eq!(r.insts, want);
}

#[test]
fn malformed_loops_are_reported_and_skipped_with_the_steps_kept_in_place() {
    // 2 x { zero-trip loop over x(1); empty loop; y(2) }: y's step is still its own.
    let bad = looped(0, vec![t("p", &[1])], vec![0]);
    let empty = looped(5, vec![], vec![]);
    let short = looped(2, vec![t("p", &[1, 1])], vec![0]);
    let items = vec![looped(2, vec![bad, empty, t("p", &[2]), short], vec![0, 3, 0, 0])];
    let r = walk(&items);
    let at = |first| LoopAt { first, depth: 1 };
    assert_eq!(
        r.faults,
        vec![
            (at(0), LoopFault::ZeroTrips),
            (at(0), LoopFault::EmptyBody),
            (at(1), LoopFault::StepLength { step: 1, params: 2 })
        ]
    );
    // The zero-trip and empty loops unroll to nothing, so y is unrolled instruction 0 (the
    // short loop after it starts at 1); the outer loop's stride counts the short loop's 2.
    assert_eq!(r.insts, vec![Seen { index: 0, params: vec![2], ranges: vec![(2, 5)], loops: vec![(2, vec![3], 3)] }]);
}

#[test]
fn corners_keep_the_first_and_last_trip() {
    // 5 x { a(0); 3 x { b(1) } }, and a 2-trip loop that stays as it is.
    let items = vec![
        looped(5, vec![t("p", &[0]), looped(3, vec![t("p", &[1])], vec![2])], vec![10, 100]),
        looped(2, vec![t("p", &[7])], vec![1]),
    ];
    let c = corner_items(&items, &T::clone, None);
    let want = vec![
        looped(2, vec![t("p", &[0]), looped(2, vec![t("p", &[1])], vec![4])], vec![40, 400]),
        looped(2, vec![t("p", &[7])], vec![1]),
    ];
    assert_eq!(c, want);
    let expanded: Vec<i64> = expand_items(&c).unwrap().into_iter().flat_map(|p| p.1).collect();
    assert_eq!(expanded, vec![0, 1, 5, 40, 401, 405, 7, 8]);
    // Dropping each instruction's second parameter drops its step entries too.
    let two = vec![looped(4, vec![t("p", &[0, 9])], vec![1, i64::MAX])];
    let keep_first = |p: &T, out: &mut Vec<bool>| out.extend((0..p.1.len()).map(|q| q == 0));
    let c = corner_items(&two, &|p: &T| T("p", p.1[..1].to_vec()), Some(&keep_first));
    assert_eq!(c, vec![looped(2, vec![t("p", &[0])], vec![3])]);
    // Steps saturate instead of overflowing.
    let c = corner_items(&two, &T::clone, None);
    assert_eq!(c, vec![looped(2, vec![t("p", &[0, 9])], vec![3, i64::MAX])]);
}

#[test]
fn the_rules_run_on_the_expansion_or_the_corners_or_are_refused() {
    let never = || -> (u8, u64) { unreachable!("the corner sequence is not needed") };
    assert_eq!(rules_form(10, 10, never), Ok(RulesForm::Expansion));
    assert_eq!(rules_form(11, 10, || (7u8, 4)), Ok(RulesForm::Corner(7)));
    // The corner sequence may be as large as MAX_EXPANDED even when less is expanded.
    assert_eq!(rules_form(11, 0, || (7u8, MAX_EXPANDED)), Ok(RulesForm::Corner(7)));
    let refused = CornerTooLarge { unrolled: u64::MAX, corner: MAX_EXPANDED + 1, max: MAX_EXPANDED };
    assert_eq!(rules_form(u64::MAX, 0, || (7u8, MAX_EXPANDED + 1)), Err(refused));
}
