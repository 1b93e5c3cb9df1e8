//! Tests of the roll pass: its runs, breaks and nests on a synthetic instruction, then on
//! Penguin functions (edges that step with the loop, irregular instructions that must stay
//! unrolled, program order).

use super::*;
use crate::looped::fixture::{function, header, inst, looped, memset, t, waw, T};
use crate::looped::{expand_items, LoopedFunction, PirInst};
use crate::Function;

/// `items` rolled, checked to expand back to them exactly.
#[track_caller]
fn rolled_t(items: &[Item<T>]) -> Vec<Item<T>> {
    let out = roll_items(items.to_vec());
    let flat: Vec<Item<T>> = expand_items(&out).unwrap().into_iter().map(Item::Inst).collect();
    assert_eq!(flat, items);
    out
}

/// Each item's trips, `None` for an instruction.
fn trips<I>(items: &[Item<I>]) -> Vec<Option<u32>> {
    items
        .iter()
        .map(|i| match i {
            Item::Inst(_) => None,
            Item::Loop(l) => Some(l.trips),
        })
        .collect()
}

#[test]
fn runs_roll_from_two_trips_and_a_step_that_breaks_starts_a_new_loop() {
    assert_eq!(rolled_t(&[t("a", &[0]), t("a", &[64])]), vec![looped(2, vec![t("a", &[0])], vec![64])]);
    let offs = [0, 32, 64, 200, 232, 264, 296];
    assert_eq!(trips(&rolled_t(&offs.map(|o| t("a", &[o])))), vec![Some(3), Some(4)]);
    // A different instruction in between stays unrolled.
    let mut s: Vec<Item<T>> = (0..3).map(|k| t("a", &[32 * k])).collect();
    s.push(t("m", &[0]));
    s.extend((0..3).map(|k| t("a", &[500 + 32 * k])));
    assert_eq!(trips(&rolled_t(&s)), vec![Some(3), None, Some(3)]);
}

#[test]
fn a_grid_nests_with_prologue_and_epilogue() {
    // m; 4 rows of 3: offset 1000 i + 32 j, count 3 i + j; m.
    let mut s = vec![t("m", &[0])];
    for i in 0..4 {
        for j in 0..3 {
            s.push(t("a", &[1000 * i + 32 * j, 3 * i + j]));
        }
    }
    s.push(t("m", &[8]));
    let inner = looped(3, vec![t("a", &[0, 0])], vec![32, 1]);
    assert_eq!(rolled_t(&s), vec![t("m", &[0]), looped(4, vec![inner], vec![1000, 3]), t("m", &[8])]);
}

#[test]
fn bodies_of_several_instructions_roll() {
    // (m, a) pairs: a period-2 body.
    let s: Vec<Item<T>> = (0..6).flat_map(|k| [t("m", &[16 * k]), t("a", &[64 * k])]).collect();
    assert_eq!(rolled_t(&s), vec![looped(6, vec![t("m", &[0]), t("a", &[0])], vec![16, 64])]);
}

/// `f` rolled, checked to expand back to `f` exactly.
#[track_caller]
fn rolled(f: &Function) -> Vec<Item<PirInst>> {
    let lf = LoopedFunction::roll(f);
    assert_eq!(lf.expand().as_ref(), Ok(f));
    assert_eq!(lf.header, header());
    lf.body
}

#[test]
fn an_empty_function_and_a_single_instruction_stay_as_they_are() {
    assert_eq!(rolled(&header()), vec![]);
    assert_eq!(rolled(&function(vec![(memset(0, 0.0), vec![])])), vec![inst(memset(0, 0.0), vec![])]);
}

#[test]
fn a_run_with_an_edge_to_the_previous_iteration_rolls_into_one_loop() {
    // m0 @0; m_k @64k after m_{k-1}, k = 1..5: the first has no edge, so it is peeled.
    let mut insts = vec![(memset(0, 0.0), vec![])];
    insts.extend((1..5u32).map(|k| (memset(64 * i64::from(k), 0.0), waw(&[k - 1]))));
    let items = rolled(&function(insts));
    // Parameters: dst offset, dst start partition, edge 0 from.
    let want = vec![inst(memset(0, 0.0), vec![]), looped(4, vec![inst(memset(64, 0.0), waw(&[0]))], vec![64, 0, 1])];
    assert_eq!(items, want);
}

#[test]
fn an_edge_to_the_same_instruction_one_iteration_back_steps_by_the_body_length() {
    // a_k @128k after a_{k-1}; b_k @128k+64 after a_k. a_0 has no edge and is peeled, so the
    // loop body is (b_k, a_{k+1}), and the last b stays after it.
    let mut insts = Vec::new();
    for k in 0..5u32 {
        let a = 2 * k;
        insts.push((memset(128 * i64::from(k), 1.0), if k == 0 { vec![] } else { waw(&[a - 2]) }));
        insts.push((memset(128 * i64::from(k) + 64, 2.0), waw(&[a])));
    }
    let items = rolled(&function(insts));
    let body = vec![inst(memset(64, 2.0), waw(&[0])), inst(memset(128, 1.0), waw(&[0]))];
    let want = vec![
        inst(memset(0, 1.0), vec![]),
        looped(4, body, vec![128, 0, 2, 128, 0, 2]),
        inst(memset(4 * 128 + 64, 2.0), waw(&[8])),
    ];
    assert_eq!(items, want);
}

#[test]
fn an_irregular_epilogue_stays_unrolled() {
    // 6 regular memsets, then three that differ in value (so in shape) and a step that breaks.
    let mut insts: Vec<_> = (0..6i64).map(|k| (memset(64 * k, 0.0), vec![])).collect();
    insts.push((memset(0, 1.0), waw(&[5])));
    insts.push((memset(5, 2.0), waw(&[6])));
    insts.push((memset(17, 3.0), waw(&[5, 7])));
    let f = function(insts);
    let items = rolled(&f);
    assert_eq!(items.len(), 4);
    assert_eq!(items[0], looped(6, vec![inst(memset(0, 0.0), vec![])], vec![64, 0]));
    let tail: Vec<_> = f.insts[6..].iter().zip(&f.deps[6..]).map(|(d, e)| inst(d.clone(), e.clone())).collect();
    assert_eq!(items[1..], tail[..]);
}

#[test]
fn instructions_that_never_equal_themselves_never_roll() {
    // NaN != NaN: the shapes never match, and the result is still the function.
    let f = function((0..3i64).map(|k| (memset(64 * k, f64::NAN), vec![])).collect());
    let lf = LoopedFunction::roll(&f);
    assert_eq!(lf.body.len(), 3);
    assert_eq!(lf.expand().map(|g| g.to_string()), Ok(f.to_string()));
}

#[test]
fn roll_renumbers_an_arena_out_of_program_order() {
    // Arena order b, a; program order a, b with b after a.
    let mut f = header();
    let b = f.push_inst(memset(64, 0.0), vec![]);
    let a = f.push_inst(memset(0, 0.0), vec![]);
    f.layout = vec![a, b];
    f.deps[b.index()] = waw(&[a.0]);
    let want = function(vec![(memset(0, 0.0), vec![]), (memset(64, 0.0), waw(&[0]))]);
    assert_eq!(LoopedFunction::roll(&f).expand(), Ok(want));
}

/// A looped function's header is the function without its instructions, whatever they were.
#[test]
fn the_header_keeps_everything_but_the_instructions() {
    let mut f = header();
    let a = f.push_inst(memset(0, 0.0), vec![]);
    f.layout = vec![a];
    f.debug_kernel_function_name = Some("k".into());
    let mut bare = f.clone();
    (bare.insts, bare.layout, bare.deps) = (Vec::new(), Vec::new(), Vec::new());
    bare.srclocs = Default::default();
    assert_eq!(f.without_insts(), bare);
    assert_eq!(LoopedFunction::from_function(&f).header, bare);
}

#[test]
fn zeroed_sets_every_parameter_to_zero() {
    let i = PirInst { data: memset(640, 0.0), deps: waw(&[7]), loc: None };
    assert_eq!(zeroed(&i), Some(PirInst { data: memset(0, 0.0), deps: waw(&[0]), loc: None }));
    // The shape is the zeroed instruction, built in place.
    assert_eq!(i.shape().map(|s| s.0), zeroed(&i));
    // An offset of i64::MIN has no negation.
    let j = PirInst { data: memset(i64::MIN, 0.0), deps: vec![], loc: None };
    assert_eq!(zeroed(&j), None);
    assert!(j.shape().is_none());
}
