//! Tests of the nest roll on a synthetic instruction: periods 1 and 2, a ragged last
//! segment, a segment that breaks the pattern, nested marks, and marks that do not fit.

use super::*;
use crate::looped::expand_items;
use crate::looped::fixture::{looped as lp, t, T};

fn i(name: &'static str, p: i64) -> Item<T> {
    t(name, &[p])
}

/// Concatenate segments, marking each one's start at its level; roll; check the result
/// expands back to the sequence.
#[track_caller]
fn rolled(segments: Vec<(Option<u32>, Vec<Item<T>>)>) -> Vec<Item<T>> {
    let mut items = Vec::new();
    let mut marks = Vec::new();
    for (level, seg) in segments {
        if let Some(level) = level {
            marks.push(NestMark { at: items.len() as u32, level });
        }
        items.extend(seg);
    }
    let out = roll_nest(items.clone(), &marks).unwrap();
    let flat: Vec<Item<T>> = expand_items(&out).unwrap().into_iter().map(Item::Inst).collect();
    assert_eq!(flat, items);
    out
}

#[test]
fn period_one_segments_roll_after_their_prologue() {
    let mut segs = vec![(None, vec![i("p", 0)])];
    segs.extend((0..5).map(|k| (Some(0), vec![i("a", 10 * k), i("b", 10 * k + 1)])));
    assert_eq!(rolled(segs), vec![i("p", 0), lp(5, vec![i("a", 0), i("b", 1)], vec![10, 10])]);
}

#[test]
fn period_two_segments_roll_two_at_a_time() {
    // A slot parity: x alternates between offsets 0 and 100 while stepping by 1.
    let segs = (0..6).map(|k| (Some(0), vec![i("x", k % 2 * 100 + k)])).collect();
    assert_eq!(rolled(segs), vec![lp(3, vec![i("x", 0), i("x", 101)], vec![2, 2])]);
}

#[test]
fn a_ragged_last_segment_is_peeled() {
    let mut segs: Vec<_> = (0..4).map(|k| (Some(0), vec![i("a", 10 * k), i("b", 10 * k + 1)])).collect();
    segs.push((Some(0), vec![i("a", 40)]));
    assert_eq!(rolled(segs), vec![lp(4, vec![i("a", 0), i("b", 1)], vec![10, 10]), i("a", 40)]);
}

#[test]
fn a_segment_that_breaks_the_pattern_ends_the_loop() {
    // The last segment's b is one off: the three before it loop, it stays alone.
    let seg = |k: i64| vec![i("a", 10 * k), i("b", 10 * k + 1 + i64::from(k == 3))];
    let segs = (0..4).map(|k| (Some(0), seg(k))).collect();
    let want = vec![lp(3, vec![i("a", 0), i("b", 1)], vec![10, 10]), i("a", 30), i("b", 32)];
    assert_eq!(rolled(segs), want);
    // Two trips take any step: six segments broken at the fourth print shortest as two trips
    // of three.
    let segs = (0..6).map(|k| (Some(0), seg(k))).collect();
    let body = vec![i("a", 0), i("b", 1), i("a", 10), i("b", 11), i("a", 20), i("b", 21)];
    assert_eq!(rolled(segs), vec![lp(2, body, vec![30, 31, 30, 30, 30, 30])]);
    // A segment of another shape in the middle: loops on both sides of it.
    let mut segs: Vec<_> = (0..3).map(|k| (Some(0), seg(k))).collect();
    segs.push((Some(0), vec![i("z", 0)]));
    segs.extend((4..7).map(|k| (Some(0), vec![i("a", 10 * k), i("b", 10 * k + 1)])));
    let want = vec![
        lp(3, vec![i("a", 0), i("b", 1)], vec![10, 10]),
        i("z", 0),
        lp(3, vec![i("a", 40), i("b", 41)], vec![10, 10]),
    ];
    assert_eq!(rolled(segs), want);
}

#[test]
fn a_first_segment_with_another_step_is_peeled_not_paired() {
    // Segment 0 is 5 apart from segment 1, the rest 10: two trips from segment 0 would take
    // any step, but the run from segment 1 has more.
    let mut segs = vec![(Some(0), vec![i("a", 5)])];
    segs.extend((1..8).map(|k| (Some(0), vec![i("a", 10 * k)])));
    assert_eq!(rolled(segs), vec![i("a", 5), lp(7, vec![i("a", 10)], vec![10])]);
}

#[test]
fn nested_marks_make_nested_loops_around_the_leaves_own() {
    // 3 outer x 4 inner iterations; each inner one holds a run of 3 c's the leaf roll finds.
    let mut segs = Vec::new();
    for o in 0..3 {
        for j in 0..4 {
            let base = 1000 * o + 100 * j;
            let mut seg = vec![i("a", base)];
            seg.extend((0..3).map(|c| i("c", base + 1 + c)));
            segs.push((Some(u32::from(j > 0)), seg));
        }
    }
    let leaf = vec![i("a", 0), lp(3, vec![i("c", 1)], vec![1])];
    let want = vec![lp(3, vec![lp(4, leaf, vec![100, 100])], vec![1000, 1000])];
    let got = rolled(segs);
    assert_eq!(got, want);
    let inner = LoopShape { trips: 3, body_items: 1, body_len: 1, inner: vec![] };
    let mid = LoopShape { trips: 4, body_items: 2, body_len: 4, inner: vec![inner] };
    assert_eq!(loop_nest(&got), vec![LoopShape { trips: 3, body_items: 1, body_len: 16, inner: vec![mid] }]);
    assert_eq!(printed_lines(&got), 8);
}

#[test]
fn merging_outer_levels_peels_less_when_it_prints_shorter() {
    // 3 outer x 4 inner iterations, offsets 10 apart throughout; the very first differs.
    let mut items = Vec::new();
    let mut marks = Vec::new();
    for k in 0..12u32 {
        marks.push(NestMark { at: k, level: u32::from(k % 4 > 0) });
        items.push(i(if k == 0 { "z" } else { "a" }, 10 * i64::from(k)));
    }
    // Along the nest: the first outer iteration is peeled whole.
    let nested = roll_nest(items.clone(), &marks).unwrap();
    let inner = lp(4, vec![i("a", 40)], vec![10]);
    // (Three a's print as short as a loop of three: they stay.)
    let want = vec![i("z", 0), i("a", 10), i("a", 20), i("a", 30), lp(2, vec![inner], vec![40])];
    assert_eq!(nested, want);
    assert_eq!(printed_lines(&nested), 9);
    // Merged: only the first inner iteration is.
    let merged = roll_nest_shortest(&items, &marks).unwrap();
    assert_eq!(merged, vec![i("z", 0), lp(11, vec![i("a", 10)], vec![10])]);
    let flat: Vec<Item<T>> = expand_items(&merged).unwrap().into_iter().map(Item::Inst).collect();
    assert_eq!(flat, items);
    // When the nest prints shortest, it is kept: outer iterations 100 apart, inner ones 10.
    let grid: Vec<Item<T>> = (0..12).map(|k| i("a", 100 * (k / 4) + 10 * (k % 4))).collect();
    let by_outer = roll_nest_shortest(&grid, &marks).unwrap();
    let inner = lp(4, vec![i("a", 0)], vec![10]);
    assert_eq!(by_outer, vec![lp(3, vec![inner], vec![100])]);
    assert_eq!(by_outer, roll_nest(grid, &marks).unwrap());
}

#[test]
fn the_nest_is_the_marks_not_the_greedy_roll() {
    // Segments [b, a] after a lone a: the greedy roll starts its loop at the first a and
    // peels the last b; the marks keep the segment boundaries.
    let mut segs = vec![(None, vec![i("a", 0)])];
    segs.extend((0..4).map(|k| (Some(0), vec![i("b", 10 * k), i("a", 10 * k + 10)])));
    assert_eq!(rolled(segs), vec![i("a", 0), lp(4, vec![i("b", 0), i("a", 10)], vec![10, 10])]);
}

#[test]
fn no_marks_is_the_greedy_roll_and_bad_marks_are_refused() {
    let items: Vec<Item<T>> = (0..4).map(|k| i("a", k)).collect();
    assert_eq!(roll_nest(items.clone(), &[]), Ok(roll_items(items.clone())));
    let past = [NestMark { at: 5, level: 0 }];
    assert_eq!(roll_nest(items.clone(), &past), Err(NestError::PastEnd { at: 5, len: 4 }));
    let unordered = [NestMark { at: 2, level: 0 }, NestMark { at: 1, level: 0 }];
    assert_eq!(roll_nest(items, &unordered), Err(NestError::Unordered { index: 1, at: 1 }));
}

/// A sampled sequence: the emitted items, their marks, the gaps, and the whole sequence.
type Sampled = (Vec<Item<T>>, Vec<NestMark>, Vec<NestGap>, Vec<Item<T>>);

/// The segments `0..n` of a loop of period two: the iterations `keep` says are emitted,
/// with their marks; the place of the first one after each skipped run is a gap.
fn sampled(n: i64, keep: &dyn Fn(i64) -> bool, seg: &dyn Fn(i64) -> Vec<Item<T>>, level: u32) -> Sampled {
    let (mut items, mut marks, mut gaps, mut full) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut skipped = 0;
    for k in 0..n {
        full.extend(seg(k));
        if !keep(k) {
            skipped += 1;
            continue;
        }
        if skipped > 0 {
            gaps.push(NestGap { at: items.len() as u32, level, period: 2, skipped: skipped / 2 });
            skipped = 0;
        }
        marks.push(NestMark { at: items.len() as u32, level });
        items.extend(seg(k));
    }
    (items, marks, gaps, full)
}

#[test]
fn a_gap_rolls_into_the_loop_it_skipped() {
    // x alternates between two slots while stepping; iterations 6..14 are skipped.
    let seg = |k: i64| vec![i("x", k % 2 * 100 + k), i("y", 7 * k)];
    let (items, marks, gaps, full) = sampled(20, &|k| !(6..14).contains(&k), &seg, 0);
    assert_eq!(gaps, vec![NestGap { at: 12, level: 0, period: 2, skipped: 4 }]);
    let out = roll_nest_gapped(items, &marks, &gaps).unwrap();
    assert_eq!(out, vec![lp(10, vec![i("x", 0), i("y", 0), i("x", 101), i("y", 7)], vec![2, 14, 2, 14])]);
    let flat: Vec<Item<T>> = expand_items(&out).unwrap().into_iter().map(Item::Inst).collect();
    assert_eq!(flat, full);
}

#[test]
fn nested_gaps_expand_to_the_whole_nest() {
    // Outer o, inner k, both of period two; a peeled first inner iteration and a ragged last.
    let inner = |o: i64| {
        move |k: i64| {
            let name = if k == 0 {
                "first"
            } else if k == 11 {
                "last"
            } else {
                "x"
            };
            vec![i(name, 1000 * o + 10 * k + k % 2 * 3 + o % 2 * 5)]
        }
    };
    let keep = |k: i64| !(6..8).contains(&k);
    let (mut items, mut marks, mut gaps, mut full) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut skipped = 0;
    for o in 0..14 {
        let (its, ms, gs, f) = sampled(12, &keep, &inner(o), 1);
        full.extend(f);
        if (4..10).contains(&o) {
            skipped += 1;
            continue;
        }
        let at = items.len() as u32;
        if skipped > 0 {
            gaps.push(NestGap { at, level: 0, period: 2, skipped: skipped / 2 });
            skipped = 0;
        }
        marks.push(NestMark { at, level: 0 });
        marks.extend(ms.iter().skip(1).map(|m| NestMark { at: m.at + at, level: 1 }));
        gaps.extend(gs.iter().map(|g| NestGap { at: g.at + at, ..*g }));
        items.extend(its);
    }
    let out = roll_nest_gapped(items.clone(), &marks, &gaps).unwrap();
    let flat: Vec<Item<T>> = expand_items(&out).unwrap().into_iter().map(Item::Inst).collect();
    assert_eq!(flat, full);
    assert!(printed_lines(&out) < 20, "{out:?}");
    // A gap the iterations do not fit is refused.
    let wrong: Vec<NestGap> = gaps.iter().map(|g| NestGap { skipped: g.skipped + 1, ..*g }).collect();
    assert!(matches!(roll_nest_gapped(items, &marks, &wrong), Err(NestError::Gap { .. })));
}
