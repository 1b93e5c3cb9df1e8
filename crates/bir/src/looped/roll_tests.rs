//! Tests of the roll pass on BIR programs: a BIR instruction's parameters and shape, and a
//! property test over random streams (the pass's own cases are penguin's `roll_tests.rs`).

use proptest::prelude::*;

use super::*;
use crate::looped::fixture::{copy, memset, program};
use crate::looped::Item;
use crate::program::Engine;

/// The rolled stream of dma0, checked to expand back to the program.
#[track_caller]
fn rolled(p: &Program) -> Vec<Item> {
    let lp = roll(p);
    assert_eq!(&lp.expand().unwrap(), p);
    lp.stream(Engine::Dma(0)).to_vec()
}

#[test]
fn empty_streams_stay_empty() {
    let p = program(Engine::Dma(0), Vec::new());
    let lp = roll(&p);
    assert!(lp.streams.iter().all(Vec::is_empty));
    assert_eq!(lp.expand().unwrap(), p);
    assert_eq!(rolled(&program(Engine::Dma(0), vec![copy(0, None)])), vec![Item::Inst(copy(0, None))]);
}

#[test]
fn a_period_one_run_becomes_one_loop() {
    let p = program(Engine::Dma(0), (0..5).map(|k| copy(32 * k, Some(1 + k as u32))).collect());
    let items = rolled(&p);
    assert_eq!(
        items,
        vec![Item::Loop(Loop { trips: 5, body: vec![Item::Inst(copy(0, Some(1)))], step: vec![32, 0, 32, 0, 1] })]
    );
}

#[test]
fn unsteppable_instructions_stay_unrolled() {
    // Offsets past i64 and NaN memsets are never equal in shape, so never roll; the result is
    // still the program.
    let huge: Vec<BirInst> = (0..3).map(|k| copy((1 << 63) + 8 * k, None)).collect();
    let items = rolled(&program(Engine::Dma(0), huge));
    assert!(items.len() == 3 && items.iter().all(|i| matches!(i, Item::Inst(_))), "{items:?}");
    let nan: Vec<BirInst> = (0..3).map(|k| memset(8 * k, f64::NAN)).collect();
    let p = program(Engine::Dma(0), nan);
    let lp = roll(&p);
    assert_eq!(lp.stream(Engine::Dma(0)).len(), 3);
    // NaN != NaN, so compare the text.
    assert_eq!(lp.expand().unwrap().to_string(), p.to_string());
}

/// A random stream: nested affine runs of a few instruction kinds, with noise between them.
fn stream() -> impl Strategy<Value = Vec<BirInst>> {
    let block = (0usize..3, 1u32..5, 1u32..4, -40i64..40, -40i64..40, 0u64..4000, 0u32..3, any::<bool>());
    proptest::collection::vec(block, 0..6).prop_map(|blocks| {
        let mut s = Vec::new();
        for (kind, outer, inner, so, si, base, ws, noise) in blocks {
            for a in 0..outer {
                for b in 0..inner {
                    let off = base as i64 + 4096 + so * i64::from(a) * 8 + si * i64::from(b);
                    let off = off.max(0) as u64;
                    let wait = (ws > 0).then_some(ws * a + b);
                    s.push(match kind {
                        0 => copy(off, wait),
                        1 => memset(off, f64::from(ws)),
                        _ => {
                            let mut c = copy(off, wait);
                            c.signal = None;
                            c
                        }
                    });
                }
                if noise && a % 2 == 1 {
                    s.push(memset(base, 7.0));
                }
            }
        }
        s
    })
}

proptest! {
    #[test]
    fn rolling_is_lossless(streams in proptest::collection::vec(stream(), 1..3)) {
        let mut p = program(Engine::Dma(0), Vec::new());
        for (e, s) in streams.into_iter().enumerate() {
            p.streams[e] = s;
        }
        let lp = roll(&p);
        prop_assert_eq!(lp.expand().unwrap(), p.clone());
        prop_assert_eq!(lp.unrolled_len(), p.num_insts() as u64);
        let items: usize = lp.streams.iter().map(Vec::len).sum();
        prop_assert!(items <= p.num_insts());
    }
}
