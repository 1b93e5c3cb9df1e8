//! Tests of the roll pass on Penguin functions: hand-built loops, nests, edges that step
//! with the loop, and irregular instructions that must stay unrolled.

use super::*;
use crate::looped::fixture::{function, header, inst, looped, memset, waw};
use crate::looped::{LoopedFunction, PirInst};
use crate::Function;

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
fn a_grid_rolls_into_nested_loops() {
    // 3 rows of 4 memsets: offset 1024 i + 64 j.
    let insts = (0..3i64).flat_map(|i| (0..4i64).map(move |j| (memset(1024 * i + 64 * j, 0.0), vec![]))).collect();
    let items = rolled(&function(insts));
    let inner = looped(4, vec![inst(memset(0, 0.0), vec![])], vec![64, 0]);
    assert_eq!(items, vec![looped(3, vec![inner], vec![1024, 0])]);
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

#[test]
fn zeroed_sets_every_parameter_to_zero() {
    let i = PirInst { data: memset(640, 0.0), deps: waw(&[7]), loc: None };
    assert_eq!(zeroed(&i), Some(PirInst { data: memset(0, 0.0), deps: waw(&[0]), loc: None }));
    // An offset of i64::MIN has no negation.
    let j = PirInst { data: memset(i64::MIN, 0.0), deps: vec![], loc: None };
    assert_eq!(zeroed(&j), None);
    assert!(j.shape().is_none());
}
