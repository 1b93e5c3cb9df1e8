//! Tests of the looped-function verifier: each error with its exact position, the corner
//! function of a loop too long to expand, and valid loops passing.

use super::*;
use crate::looped::fixture::{function, header, inst, looped, memset, waw, COLS};
use crate::looped::Item;
use crate::{Entity, InstId};

fn lf(body: Vec<Item<PirInst>>) -> LoopedFunction {
    LoopedFunction { header: header(), body }
}

/// A valid two-level nest with edges to the previous iteration, after one memset.
fn valid() -> LoopedFunction {
    // m0 @0; 3 x { 4 x { memset @64 + 1024 i + 64 j after the previous one } }.
    let inner = looped(4, vec![inst(memset(64, 0.0), waw(&[0]))], vec![64, 0, 1]);
    lf(vec![inst(memset(0, 0.0), vec![]), looped(3, vec![inner], vec![1024, 0, 4])])
}

#[test]
fn a_valid_nest_and_its_roll_pass() {
    let v = valid();
    assert_eq!(verify_looped(&v), Ok(()));
    let f = v.expand().unwrap();
    assert_eq!(f.insts.len(), 13);
    assert_eq!(crate::verify(&f).map(|_| ()), Ok(()));
    assert_eq!(verify_looped(&LoopedFunction::roll(&f)), Ok(()));
}

#[test]
fn structural_errors_name_the_loop() {
    let m = || inst(memset(0, 0.0), vec![]);
    // Zero trips at i1, depth 0.
    let got = verify_looped(&lf(vec![m(), looped(0, vec![m()], vec![0, 0])]));
    assert_eq!(got, Err(vec![LoopError::ZeroTrips { at: LoopAt { first: 1, depth: 0 } }]));
    // An empty body inside a 2-trip loop whose body starts with one instruction: i1, depth 1;
    // a step too short for its body at i2, depth 1.
    let empty = looped(3, vec![], vec![]);
    let short = looped(2, vec![m()], vec![1]);
    let got = verify_looped(&lf(vec![looped(2, vec![m(), empty, m(), short], vec![0; 6])]));
    assert_eq!(
        got,
        Err(vec![
            LoopError::EmptyBody { at: LoopAt { first: 1, depth: 1 } },
            LoopError::StepLength { at: LoopAt { first: 2, depth: 1 }, step: 1, params: 2 },
        ])
    );
}

#[test]
fn too_many_instructions_for_ids_is_an_error() {
    let m = || inst(memset(0, 0.0), vec![]);
    let big = looped(u32::MAX, vec![looped(2, vec![m()], vec![0, 0])], vec![0, 0]);
    assert_eq!(verify_looped(&lf(vec![big])), Err(vec![LoopError::TooLong(2 * u64::from(u32::MAX))]));
}

#[test]
fn parameters_out_of_range_in_some_iteration_are_named() {
    let near = i64::MAX - 10;
    // i0 fine, then a 2 x 3 nest whose offset runs past i64 in its last corner.
    let inner = looped(3, vec![inst(memset(near, 0.0), vec![])], vec![8, 0]);
    let got = verify_looped(&lf(vec![inst(memset(0, 0.0), vec![]), looped(2, vec![inner], vec![1, -1])]));
    let hi = i128::from(near) + 2 * 8 + 1;
    let want = vec![
        LoopError::ParamOutOfRange {
            index: 1,
            op: "memset",
            param: "dst offset".into(),
            lo: i128::from(near),
            hi,
            min: i128::from(i64::MIN),
            max: i128::from(i64::MAX),
        },
        LoopError::ParamOutOfRange {
            index: 1,
            op: "memset",
            param: "dst start partition".into(),
            lo: -1,
            hi: 0,
            min: 0,
            max: i128::from(u32::MAX),
        },
    ];
    assert_eq!(got, Err(want));
    // An edge source that goes below 0.
    let body = vec![inst(memset(0, 0.0), waw(&[1]))];
    let got = verify_looped(&lf(vec![
        inst(memset(0, 0.0), vec![]),
        inst(memset(0, 0.0), vec![]),
        looped(3, body, vec![0, 0, -1]),
    ]));
    let want = LoopError::ParamOutOfRange {
        index: 2,
        op: "memset",
        param: "edge 0 from".into(),
        lo: -1,
        hi: 1,
        min: 0,
        max: i128::from(u32::MAX),
    };
    assert_eq!(got, Err(vec![want]));
}

#[test]
fn an_edge_that_catches_up_with_its_instruction_is_named_at_its_worst_iteration() {
    // m0; 3 x { memset after i(0 + 2k) } at i(1 + k): k = 1 points at itself, k = 2 past it.
    let body = vec![inst(memset(64, 0.0), waw(&[0]))];
    let got = verify_looped(&lf(vec![inst(memset(0, 0.0), vec![]), looped(3, body, vec![64, 0, 2])]));
    assert_eq!(got, Err(vec![LoopError::ForwardEdge { index: 1, op: "memset", edge: 0, at: 3, from: 4 }]));
    // In a nest, the worst corner takes the outer loop's last trip only where it helps.
    let inner = looped(2, vec![inst(memset(0, 0.0), waw(&[0]))], vec![0, 0, 1]);
    let got = verify_looped(&lf(vec![inst(memset(0, 0.0), vec![]), looped(4, vec![inner], vec![0, 0, 3])]));
    // Positions 1 + 2i + j, sources 3i + j: from - at = i - 1, worst at i = 3, j = 0.
    assert_eq!(got, Err(vec![LoopError::ForwardEdge { index: 1, op: "memset", edge: 0, at: 7, from: 9 }]));
}

#[test]
fn function_rules_are_checked_on_the_expansion() {
    // The third trip writes past the tensor's COLS elements per partition.
    let last = i64::from(COLS) - 64;
    let body = vec![inst(memset(last - 64, 0.0), vec![])];
    let got = verify_looped(&lf(vec![inst(memset(0, 0.0), vec![]), looped(3, body, vec![64, 0])])).unwrap_err();
    assert_eq!(got.len(), 1);
    assert!(matches!(&got[0], LoopError::Function(e) if e.entity == Entity::Inst(InstId(3))), "{got:?}");
}

#[test]
fn a_loop_too_long_to_expand_is_checked_at_its_corners() {
    let trips = u32::try_from(MAX_EXPANDED).unwrap();
    // Every trip rewrites the same 64 elements after the previous trip: valid.
    let same = looped(trips, vec![inst(memset(0, 0.0), waw(&[0]))], vec![0, 0, 1]);
    let ok = lf(vec![inst(memset(0, 0.0), vec![]), same]);
    assert_eq!(ok.unrolled_len(), MAX_EXPANDED + 1);
    assert_eq!(verify_looped(&ok), Ok(()));
    // Moving by one element a trip leaves the tensor long before the last trip; the corner
    // function is (i0, first trip, last trip), and its last instruction is out of bounds.
    let moving = looped(trips, vec![inst(memset(0, 0.0), waw(&[0]))], vec![1, 0, 1]);
    let got = verify_looped(&lf(vec![inst(memset(0, 0.0), vec![]), moving])).unwrap_err();
    assert_eq!(got.len(), 1);
    assert!(matches!(&got[0], LoopError::Function(e) if e.entity == Entity::Inst(InstId(2))), "{got:?}");
}

#[test]
fn the_corner_function_keeps_each_loops_first_and_last_trip_without_edges() {
    // The corner function of the valid nest: i0, then 2 x 2 corners of the 3 x 4 grid.
    let c = corner_function(&valid()).expand().unwrap();
    let offsets: Vec<i64> = c.insts.iter().map(|i| i.operands()[0].0.ap.offset).collect();
    assert_eq!(offsets, vec![0, 64, 256, 2112, 2304]);
    assert!(c.deps.iter().all(Vec::is_empty));
    let f = function(vec![(memset(0, 0.0), vec![])]);
    assert_eq!(verify_looped(&LoopedFunction::from_function(&f)), Ok(()));
}

/// Nested loops of 2 trips keep every iteration in the corner function: past the limit it is
/// refused, not expanded.
#[test]
fn a_corner_function_too_large_to_expand_is_refused() {
    let mut item = inst(memset(0, 0.0), vec![]);
    for _ in 0..22 {
        item = looped(2, vec![item], vec![0, 0]);
    }
    let got = verify_looped(&lf(vec![item.clone()]));
    assert_eq!(got, Err(vec![LoopError::CornerTooLarge { unrolled: 1 << 22, corner: 1 << 22, max: MAX_EXPANDED }]));
    // One trip fewer at the top: the whole function is expanded and passes.
    let Item::Loop(mut top) = item else { unreachable!() };
    top.trips = 1;
    assert_eq!(verify_looped(&lf(vec![Item::Loop(top)])), Ok(()));
}
