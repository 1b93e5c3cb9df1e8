//! Native looped lowering of hand-built nests: a nest of 2^30 instructions lowers in
//! milliseconds to loops with the same trips on every engine and exact affine waits; a small
//! one lowers exactly like its expansion; a wait that is not affine is refused with
//! [`LowerLoopedError::NotAffine`] and `lower_looped` falls back to expanding.

use bir::{lower, lower_looped, lower_looped_native, BirInst, Engine, LowerLoopedError, SemId, Wait};
use penguin::looped::{Item, Loop, PirInst};
use penguin::{
    verify, ComputeEngine, DType, DepKind, Function, InstData, LoopedFunction, Memory, MemsetData, TensorData,
};
use test_support::nests::{dep, memset_copy, ping_pong};

fn inst(op: &BirInst, sem: Engine, value: u64, signal: Engine) -> Item<BirInst> {
    let waits = vec![Wait { sem: SemId(sem.index() as u32), value }];
    Item::Inst(BirInst { op: op.op.clone(), waits, signal: Some(SemId(signal.index() as u32)), origin: None })
}

#[test]
fn a_nest_of_2_to_the_30_lowers_in_milliseconds_with_affine_waits() {
    let (a, b) = (1 << 14, 1 << 15);
    let lf = ping_pong(a, b);
    assert_eq!(lf.unrolled_len(), 2 + (1 << 30));
    let t = std::time::Instant::now();
    let lp = lower_looped_native(&lf, penguin::Target::Trn2).unwrap();
    let dt = t.elapsed();
    assert!(dt.as_millis() < 1000, "{dt:?}");
    assert_eq!(bir::verify_looped(&lp), Ok(()));
    assert_eq!(lp.unrolled_len(), 2 + (1 << 30));
    let (dve, act) = (lp.stream(Engine::Dve), lp.stream(Engine::Act));
    let (Item::Inst(m0), Item::Inst(c0)) = (&dve[0], &act[0]) else { panic!("{dve:?}") };
    assert_eq!((m0.waits.as_slice(), m0.signal), (&[][..], Some(SemId(Engine::Dve.index() as u32))));
    assert_eq!(c0.waits, vec![Wait { sem: SemId(Engine::Dve.index() as u32), value: 1 }]);
    let bs = i64::from(b);
    // The memset of iteration k waits for the copy before it: ACT's count 1 + k.
    let want_dve = Item::Loop(Loop {
        trips: a,
        step: vec![0, 0, bs],
        body: vec![Item::Loop(Loop {
            trips: b,
            step: vec![0, 0, 1],
            body: vec![inst(m0, Engine::Act, 1, Engine::Dve)],
        })],
    });
    // The copy of iteration k waits for the memset before it: DVE's count 2 + k.
    let want_act = Item::Loop(Loop {
        trips: a,
        step: vec![0, 0, 0, 0, bs],
        body: vec![Item::Loop(Loop {
            trips: b,
            step: vec![0, 0, 0, 0, 1],
            body: vec![inst(c0, Engine::Dve, 2, Engine::Act)],
        })],
    });
    assert_eq!(&dve[1..], &[want_dve]);
    assert_eq!(&act[1..], &[want_act]);
    println!("2^30 nest lowered natively in {dt:?}");
}

#[test]
fn a_small_nest_lowers_exactly_like_its_expansion() {
    let lf = ping_pong(3, 4);
    let lp = lower_looped_native(&lf, penguin::Target::Trn2).unwrap();
    let mut want = lower(verify(&lf.expand().unwrap()).unwrap(), penguin::Target::Trn2).unwrap();
    let mut got = lp.expand().unwrap();
    // Signals are uniform over a loop: the last copy signals though nothing waits for it.
    let last = got.streams[Engine::Act.index()].last_mut().unwrap();
    assert_eq!(last.signal.take(), Some(SemId(Engine::Act.index() as u32)));
    want.streams.iter_mut().flatten().for_each(|i| i.origin = None);
    assert_eq!(got, want);
    assert!(matches!(lp.stream(Engine::Dve), [Item::Inst(_), Item::Loop(l)] if l.trips == 3));
}

/// 200 memsets alternating DVE and POOL, a DVE loop of 200 memsets, then an ACT loop of 200
/// copies, copy `k` after the memset `k` of the loop (affine) and the memset `k` of the
/// straight run (its engine alternates, so no wait on one engine is affine in `k`).
fn alternating() -> LoopedFunction {
    let (f, memset, copy) = memset_copy();
    let mut lf = LoopedFunction::from_function(&f);
    let pool = match &memset {
        InstData::Memset(m) => InstData::Memset(MemsetData { engine: ComputeEngine::Pool, ..m.clone() }),
        _ => unreachable!(),
    };
    let mut body: Vec<Item<PirInst>> = (0..200)
        .map(|x| {
            Item::Inst(PirInst {
                data: if x % 2 == 0 { memset.clone() } else { pool.clone() },
                deps: vec![],
                loc: None,
            })
        })
        .collect();
    let one = vec![Item::Inst(PirInst { data: memset, deps: vec![], loc: None })];
    body.push(Item::Loop(Loop { trips: 200, body: one, step: vec![0, 0] }));
    let deps = vec![dep(200, DepKind::Raw), dep(0, DepKind::Raw)];
    body.push(Item::Loop(Loop {
        trips: 200,
        body: vec![Item::Inst(PirInst { data: copy, deps, loc: None })],
        step: vec![0, 0, 0, 0, 1, 1],
    }));
    lf.body = body;
    lf
}

#[test]
fn a_wait_that_is_not_affine_is_refused_and_lower_looped_falls_back() {
    let lf = alternating();
    let err = lower_looped_native(&lf, penguin::Target::Trn2).unwrap_err();
    assert!(matches!(err, LowerLoopedError::NotAffine { consumer: 400.., edge: 1 }), "{err}");
    assert!(err.is_native_only());
    let lp = lower_looped(&lf, penguin::Target::Trn2).unwrap();
    let mut want = lower(verify(&lf.expand().unwrap()).unwrap(), penguin::Target::Trn2).unwrap();
    want.streams.iter_mut().flatten().for_each(|i| i.origin = None);
    assert_eq!(lp.expand().unwrap(), want);
}

/// `pool memset; T x { dve memset after(war: the copy before it); act copy after(raw) }`:
/// in the first iteration the memset's edge reaches the POOL memset before the loop, in the
/// others the ACT copy of the iteration before.
fn pipelined(trips: u32) -> LoopedFunction {
    let (f, memset, copy) = memset_copy();
    let mut lf = LoopedFunction::from_function(&f);
    let pool = match &memset {
        InstData::Memset(m) => InstData::Memset(MemsetData { engine: ComputeEngine::Pool, ..m.clone() }),
        _ => unreachable!(),
    };
    let body = vec![
        Item::Inst(PirInst { data: memset, deps: vec![dep(0, DepKind::War)], loc: None }),
        Item::Inst(PirInst { data: copy, deps: vec![dep(1, DepKind::Raw)], loc: None }),
    ];
    lf.body = vec![
        Item::Inst(PirInst { data: pool, deps: vec![], loc: None }),
        Item::Loop(Loop { trips, body, step: vec![0, 0, 2, 0, 0, 0, 0, 2] }),
    ];
    lf
}

#[test]
fn a_first_iteration_that_waits_differently_is_peeled() {
    let lf = pipelined(1000);
    let lp = lower_looped_native(&lf, penguin::Target::Trn2).unwrap();
    assert_eq!(bir::verify_looped(&lp), Ok(()));
    let mut want = lower(verify(&lf.expand().unwrap()).unwrap(), penguin::Target::Trn2).unwrap();
    want.streams.iter_mut().flatten().for_each(|i| i.origin = None);
    let mut got = lp.expand().unwrap();
    // The last copy signals (uniformly with the others) though nothing waits for it.
    let last = got.streams[Engine::Act.index()].last_mut().unwrap();
    assert_eq!(last.signal.take(), Some(SemId(Engine::Act.index() as u32)));
    assert_eq!(got, want);
    let (dve, act) = (lp.stream(Engine::Dve), lp.stream(Engine::Act));
    let (Item::Inst(m0), Item::Inst(c0)) = (&dve[0], &act[0]) else { panic!("{dve:?}") };
    assert_eq!(m0.waits, vec![Wait { sem: SemId(Engine::Pool.index() as u32), value: 1 }]);
    // Iteration k >= 1: the memset waits for ACT's count k, the copy for DVE's count k + 1.
    let want_dve =
        Item::Loop(Loop { trips: 999, step: vec![0, 0, 1], body: vec![inst(m0, Engine::Act, 1, Engine::Dve)] });
    let want_act =
        Item::Loop(Loop { trips: 999, step: vec![0, 0, 0, 0, 1], body: vec![inst(c0, Engine::Dve, 2, Engine::Act)] });
    assert_eq!(&dve[1..], &[want_dve]);
    assert_eq!(&act[1..], &[want_act]);
}

/// `trips` plain loads of 64 columns each from an HBM tensor into one SBUF tile, without
/// queue hints (round robin over the load queues) or with `hint = k * hint_step`.
fn loads(trips: u32, hint_step: Option<i64>) -> LoopedFunction {
    use penguin::{AccessPattern, CastMode, DmaCopyData, DmaQueueHint, InstTile};
    let mut f = Function::new("loads");
    let cols = 64 * u64::from(trips);
    let hbm =
        TensorData { name: "h".into(), shape: vec![128, cols], dtype: DType::Fp32, memory: Memory::Hbm, address: None };
    let sb =
        TensorData { name: "s".into(), shape: vec![128, 64], dtype: DType::Fp32, memory: Memory::Sbuf, address: None };
    let (h, s) = (f.add_tensor(hbm).unwrap(), f.add_tensor(sb).unwrap());
    f.inputs = vec![h];
    let tile = |t, memory, ap| InstTile { tensor: t, memory, dtype: DType::Fp32, ap };
    let copy = InstData::DmaCopy(DmaCopyData {
        dst: tile(s, Memory::Sbuf, AccessPattern::on_chip(0, 128, 0, 64)),
        src: tile(h, Memory::Hbm, AccessPattern::hbm_rows(cols, 0, 128, 0, 64)),
        cast: CastMode::Rne,
        queue: hint_step.map(|_| DmaQueueHint(0)),
    });
    let mut lf = LoopedFunction::from_function(&f);
    let mut step = vec![0, 0, 64, 0];
    step.extend(hint_step);
    lf.body =
        vec![Item::Loop(Loop { trips, body: vec![Item::Inst(PirInst { data: copy, deps: vec![], loc: None })], step })];
    lf
}

#[test]
fn loops_whose_dma_queues_drift_are_unrolled_by_the_queue_period() {
    let loads_queues = penguin::target::DMA_LOAD_QUEUES as usize;
    // Round robin over the 12 load queues, and hints stepping by 8 (period 12 / gcd(8, 12) = 3).
    for (hint, period) in [(None, loads_queues), (Some(8), 3)] {
        let lf = loads(30, hint);
        let lp = lower_looped_native(&lf, penguin::Target::Trn2).unwrap();
        let mut want = lower(verify(&lf.expand().unwrap()).unwrap(), penguin::Target::Trn2).unwrap();
        want.streams.iter_mut().flatten().for_each(|i| i.origin = None);
        assert_eq!(lp.expand().unwrap(), want, "{hint:?}");
        // Each queue used has one loop of 30 / period trips, then the leftover iterations.
        let queues: Vec<Engine> = Engine::all().filter(|e| !lp.stream(*e).is_empty()).collect();
        assert_eq!(queues.len(), period, "{hint:?}");
        for e in queues {
            let s = lp.stream(e);
            assert!(matches!(&s[0], Item::Loop(l) if l.trips == (30 / period) as u32 && l.body.len() == 1), "{s:?}");
            assert_eq!(
                s.len(),
                1 + usize::from(((30 % period) as u32) > e.index() as u32 - Engine::Dma(0).index() as u32),
                "{hint:?} {e:?}"
            );
        }
    }
}

/// `trips` casts of `[128, 1024]` fp32 (512 KiB: 8 pieces over the 16 queues, from
/// `hint * 8`) into one bf16 tile, the hint stepping by `hint_step`.
fn casts(trips: u32, hint_step: i64) -> LoopedFunction {
    use penguin::{AccessPattern, CastMode, DmaQueueHint, InstTile, OffloadedMemCastData};
    let mut f = Function::new("casts");
    let cols = 1024 * u64::from(trips);
    let hbm =
        TensorData { name: "h".into(), shape: vec![128, cols], dtype: DType::Fp32, memory: Memory::Hbm, address: None };
    let sb = TensorData {
        name: "s".into(),
        shape: vec![128, 1024],
        dtype: DType::Bf16,
        memory: Memory::Sbuf,
        address: None,
    };
    let (h, s) = (f.add_tensor(hbm).unwrap(), f.add_tensor(sb).unwrap());
    f.inputs = vec![h];
    let cast = InstData::OffloadedMemCast(OffloadedMemCastData {
        dst: InstTile {
            tensor: s,
            memory: Memory::Sbuf,
            dtype: DType::Bf16,
            ap: AccessPattern::on_chip(0, 128, 0, 1024),
        },
        src: InstTile {
            tensor: h,
            memory: Memory::Hbm,
            dtype: DType::Fp32,
            ap: AccessPattern::hbm_rows(cols, 0, 128, 0, 1024),
        },
        cast: CastMode::Rne,
        queue: Some(DmaQueueHint(0)),
    });
    let mut lf = LoopedFunction::from_function(&f);
    let step = vec![0, 0, 1024, 0, hint_step];
    lf.body =
        vec![Item::Loop(Loop { trips, body: vec![Item::Inst(PirInst { data: cast, deps: vec![], loc: None })], step })];
    lf
}

#[test]
fn an_offloaded_op_is_unrolled_by_the_least_period_of_its_queues() {
    // Hint step 2: the 8 pieces move by 16 queues, back on the same ones (period 1, where
    // the hint alone repeats after 8); hint step 1: the pieces alternate halves (period 2).
    for (step, period) in [(2, 1), (1, 2), (3, 2)] {
        let lf = casts(12, step);
        let lp = lower_looped_native(&lf, penguin::Target::Trn2).unwrap();
        let mut want = lower(verify(&lf.expand().unwrap()).unwrap(), penguin::Target::Trn2).unwrap();
        want.streams.iter_mut().flatten().for_each(|i| i.origin = None);
        assert_eq!(lp.expand().unwrap(), want, "{step}");
        let queues: Vec<Engine> = Engine::all().filter(|e| !lp.stream(*e).is_empty()).collect();
        assert_eq!(queues.len(), 8 * period, "{step}");
        for e in queues {
            assert!(matches!(lp.stream(e), [Item::Loop(l)] if l.trips == 12 / period as u32), "{step} {e:?}");
        }
    }
}

/// A DVE memset, a loop of 98 DVE memsets, another DVE memset, then an ACT loop of 100
/// copies, copy `k` after memset `k`: its producer is a different node in the first, the
/// middle and the last iterations, but DVE's count at it is `k + 1` throughout.
#[test]
fn producers_in_three_nodes_with_an_affine_count_need_no_peeling() {
    let (f, memset, copy) = memset_copy();
    let mut lf = LoopedFunction::from_function(&f);
    let one = |data: &InstData| Item::Inst(PirInst { data: data.clone(), deps: vec![], loc: None });
    lf.body = vec![
        one(&memset),
        Item::Loop(Loop { trips: 98, body: vec![one(&memset)], step: vec![0, 0] }),
        one(&memset),
        Item::Loop(Loop {
            trips: 100,
            body: vec![Item::Inst(PirInst { data: copy, deps: vec![dep(0, DepKind::Raw)], loc: None })],
            step: vec![0, 0, 0, 0, 1],
        }),
    ];
    let lp = lower_looped_native(&lf, penguin::Target::Trn2).unwrap();
    let act = lp.stream(Engine::Act);
    let [Item::Loop(l)] = act else { panic!("{act:?}") };
    let [Item::Inst(c)] = l.body.as_slice() else { panic!("{l:?}") };
    assert_eq!((l.trips, l.step.clone()), (100, vec![0, 0, 0, 0, 1]));
    assert_eq!(c.waits, vec![Wait { sem: SemId(Engine::Dve.index() as u32), value: 1 }]);
    let mut want = lower(verify(&lf.expand().unwrap()).unwrap(), penguin::Target::Trn2).unwrap();
    want.streams.iter_mut().flatten().for_each(|i| i.origin = None);
    assert_eq!(lp.expand().unwrap(), want);
}
