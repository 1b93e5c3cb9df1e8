use penguin::looped::expand_items;
use penguin::{whole_tile, ComputeEngine, DType, Dep, DepKind, Dim, MemsetData, TensorData};

use super::*;

/// A memset of 8 columns at `offset` of a `[128, 1024]` SBUF tensor, after `deps`.
fn memset(offset: i64, deps: &[u32]) -> PItem {
    let t = TensorData {
        name: "x".into(),
        shape: vec![128, 1024],
        dtype: DType::Fp32,
        memory: Memory::Sbuf,
        address: Some(0),
    };
    let mut dst = whole_tile(penguin::TensorId(0), &t);
    dst.ap.offset = offset;
    dst.ap.free = vec![Dim::new(1, 8)].into();
    let data = InstData::Memset(MemsetData { engine: ComputeEngine::Dve, dst, value: 0.0 });
    let deps = deps.iter().map(|&f| Dep { from: InstId(f), kind: DepKind::Waw }).collect();
    Item::Inst(PirInst { data, deps, loc: None })
}

/// `a; outer x5 { b; mid x2 { c; inner x3 { d } } }; e`, each memset after the one before it.
fn nest() -> Vec<PItem> {
    let inner = Item::Loop(Loop { trips: 3, body: vec![memset(24, &[2])], step: vec![8, 0, 1] });
    let mid = Item::Loop(Loop { trips: 2, body: vec![memset(16, &[1]), inner], step: vec![32, 0, 4, 32, 0, 4] });
    let step = vec![72, 0, 9, 72, 0, 9, 72, 0, 9];
    let outer = Item::Loop(Loop { trips: 5, body: vec![memset(8, &[0]), mid], step });
    vec![memset(0, &[]), outer, memset(1000, &[45])]
}

#[test]
fn peeling_or_unrolling_a_nested_loop_keeps_the_expansion() {
    let want = expand_items(&nest()).unwrap();
    assert_eq!(want.len(), 47);
    for path in [vec![1], vec![1, 1], vec![1, 1, 1]] {
        for unroll_by in [None, Some(2), Some(3), Some(7)] {
            let mut items = nest();
            let map = match unroll_by {
                Some(u) => reshape_at(&mut items, &path, &|l| unroll(l, u)),
                None => reshape_at(&mut items, &path, &|l| peel(l, 1)),
            }
            .unwrap();
            assert_eq!(expand_items(&items).unwrap(), want, "{path:?} {unroll_by:?}");
            assert_eq!(map.len(), param_count(&items));
            // Twice in a row, inner first: both paths stay valid.
            let mut items = nest();
            reshape_at(&mut items, &[1, 1, 1], &|l| peel(l, 1)).unwrap();
            reshape_at(&mut items, &[1, 1], &|l| unroll(l, 2)).unwrap();
            reshape_at(&mut items, &[1], &|l| unroll(l, 2)).unwrap();
            assert_eq!(expand_items(&items).unwrap(), want);
        }
    }
}

#[test]
fn unroll_and_peel_shapes() {
    let Item::Loop(outer) = &nest()[1] else { unreachable!() };
    let u = unroll(outer, 2).unwrap();
    // Loop { 2 trips, 2 copies of the body, step x2 } then the fifth iteration inline.
    assert!(matches!(&u[0], Item::Loop(l) if l.trips == 2 && l.body.len() == 4 && l.step[0] == 144));
    assert_eq!(u.len(), 3);
    let p = peel(outer, 1).unwrap();
    assert!(matches!(&p[2], Item::Loop(l) if l.trips == 4 && l.step == outer.step));
    assert_eq!(p.len(), 3);
    // Three iterations at once: their six items, then the last two in a loop, which expands
    // as the loop did; four or more would leave one iteration, which is inlined too.
    let p = peel(outer, 3).unwrap();
    assert!(matches!(&p[6], Item::Loop(l) if l.trips == 2 && l.step == outer.step));
    assert_eq!(p.len(), 7);
    let whole = expand_items(&[Item::Loop(outer.clone())]).unwrap();
    assert_eq!(expand_items(&p).unwrap(), whole);
    for n in [4, 5, 9] {
        let p = peel(outer, n).unwrap();
        // Five iterations of a memset and the middle loop.
        assert_eq!(p.len(), 10, "{n}");
        assert_eq!(expand_items(&p).unwrap(), whole, "{n}");
    }
}
