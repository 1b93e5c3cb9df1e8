//! The race detector: unordered overlapping accesses are reported, semaphore-ordered ones
//! are not, including orderings that pass through several engines.

use bir::{Engine, HbmRole, Op};
use penguin::{CastMode, DType, Memory, PerfMode, Target, TilePosition, TileSize};
use sim::{Race, Simulator};
use test_support::{hbm, sbuf, Builder};

fn dma(dst: bir::HwAp, src: bir::HwAp) -> Op {
    Op::DmaCopy { dst, src, cast: CastMode::Rne }
}

#[expect(clippy::unwrap_used, reason = "a test helper: unwrapping is how it asserts")]
fn races(b: &Builder) -> Vec<Race> {
    let mut s = Simulator::new(&b.program);
    let stats = s.run().unwrap();
    assert_eq!(stats.races, s.races());
    stats.races
}

/// Two queues load HBM rows into SBUF partitions 0..4; the second tile is shifted by 8 bytes
/// so the two overlap in bytes 8..16 of every partition.
fn two_writers(ordered: bool) -> Builder {
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[4, 4], DType::Fp32, HbmRole::Input);
    let sem = b.sem("first");
    let signal = ordered.then_some(sem);
    b.push(Engine::Dma(0), dma(sbuf(DType::Fp32, 0, 4, 0, 4), hbm(DType::Fp32, x, 4, 4, 4)), &[], signal);
    let waits: &[_] = if ordered { &[(sem, 1)] } else { &[] };
    b.push(Engine::Dma(1), dma(sbuf(DType::Fp32, 2, 4, 8, 4), hbm(DType::Fp32, x, 4, 4, 4)), waits, None);
    b
}

#[test]
fn overlapping_unordered_dma_writes_race() {
    let found = races(&two_writers(false));
    assert_eq!(found.len(), 1, "{found:?}");
    let r = &found[0];
    assert_eq!(r.memory, Memory::Sbuf);
    assert_eq!((r.partitions, r.bytes), ((2, 4), (8, 16)));
    assert_eq!((r.earlier.at.to_string(), r.later.at.to_string()), ("dma0[0]".into(), "dma1[0]".into()));
    assert!(r.earlier.write && r.later.write);
    assert!(r.to_string().contains("race on sbuf partitions 2..4 bytes 8..16"), "{r}");
}

#[test]
fn a_semaphore_orders_the_writes() {
    assert!(races(&two_writers(true)).is_empty());
}

#[test]
fn read_after_write_without_wait_races_with_pe() {
    for ordered in [false, true] {
        let mut b = Builder::new(Target::Trn2);
        let x = b.tensor("x", &[8, 8], DType::Bf16, HbmRole::Input);
        let sem = b.sem("loaded");
        b.push(Engine::Dma(5), dma(sbuf(DType::Bf16, 0, 8, 0, 8), hbm(DType::Bf16, x, 8, 8, 8)), &[], Some(sem));
        let waits: &[_] = if ordered { &[(sem, 1)] } else { &[] };
        let ls = Op::LoadStationary {
            src: sbuf(DType::Bf16, 0, 8, 0, 8),
            perf_mode: PerfMode::None,
            tile_position: TilePosition::default(),
            tile_size: TileSize::default(),
        };
        b.push(Engine::Pe, ls, waits, None);
        let found = races(&b);
        assert_eq!(found.len(), usize::from(!ordered), "{found:?}");
        if let Some(r) = found.first() {
            // The PE stream runs first in the round robin, so it is the earlier access.
            assert_eq!((r.earlier.at.engine, r.earlier.write, r.later.write), (Engine::Pe, false, true));
        }
    }
}

#[test]
fn hbm_writes_race_too() {
    let mut b = Builder::new(Target::Trn2);
    let y = b.tensor("y", &[64], DType::Fp32, HbmRole::Output);
    b.push(Engine::Act, Op::Memset { dst: sbuf(DType::Fp32, 0, 1, 0, 64), value: 1.0 }, &[], None);
    // Both stores wait for the memset (through different semaphores) but not for each other.
    let set = b.sem("set");
    b.program.streams[Engine::Act.index()][0].signal = Some(set);
    b.push(Engine::Dma(2), dma(hbm(DType::Fp32, y, 1, 64, 32), sbuf(DType::Fp32, 0, 1, 0, 32)), &[(set, 1)], None);
    b.push(
        Engine::Dma(3),
        dma(hbm(DType::Fp32, y + 120, 1, 64, 32), sbuf(DType::Fp32, 0, 1, 0, 32)),
        &[(set, 1)],
        None,
    );
    let found = races(&b);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].memory, found[0].bytes), (Memory::Hbm, (y as i64 + 120, y as i64 + 128)));
}

#[test]
fn ordering_is_transitive_through_other_engines() {
    // dma0 writes, signals a; act waits a, signals b; pool waits b, signals c; dma1 waits c
    // and overwrites what dma0 wrote: ordered by the chain, no race.
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[4, 4], DType::Fp32, HbmRole::Input);
    let (sa, sb, sc) = (b.sem("a"), b.sem("b"), b.sem("c"));
    b.push(Engine::Dma(0), dma(sbuf(DType::Fp32, 0, 4, 0, 4), hbm(DType::Fp32, x, 4, 4, 4)), &[], Some(sa));
    b.push(Engine::Act, Op::Memset { dst: sbuf(DType::Fp32, 64, 1, 0, 1), value: 0.0 }, &[(sa, 1)], Some(sb));
    b.push(Engine::Pool, Op::Memset { dst: sbuf(DType::Fp32, 96, 1, 0, 1), value: 0.0 }, &[(sb, 1)], Some(sc));
    b.push(Engine::Dma(1), dma(sbuf(DType::Fp32, 0, 4, 0, 4), hbm(DType::Fp32, x, 4, 4, 4)), &[(sc, 1)], None);
    assert!(races(&b).is_empty());
}

#[test]
fn a_shared_semaphore_orders_only_what_its_count_implies() {
    // Two queues write disjoint halves and signal the same semaphore; a third writes both
    // halves after waiting for count `need`. Count 2 orders it after both writers; count 1
    // only after whichever signalled first.
    for (need, expected) in [(2, 0), (1, 1)] {
        let mut b = Builder::new(Target::Trn2);
        let x = b.tensor("x", &[8], DType::Fp32, HbmRole::Input);
        let sem = b.sem("loaded");
        b.push(Engine::Dma(0), dma(sbuf(DType::Fp32, 0, 1, 0, 4), hbm(DType::Fp32, x, 1, 8, 4)), &[], Some(sem));
        b.push(Engine::Dma(1), dma(sbuf(DType::Fp32, 0, 1, 16, 4), hbm(DType::Fp32, x + 16, 1, 8, 4)), &[], Some(sem));
        b.push(Engine::Dma(2), dma(sbuf(DType::Fp32, 0, 1, 0, 8), hbm(DType::Fp32, x, 1, 8, 8)), &[(sem, need)], None);
        assert_eq!(races(&b).len(), expected, "need {need}");
    }
}

#[test]
fn long_ordered_programs_stay_race_free() {
    // 4000 DMAs over 16 queues ping-pong one SBUF tile, each waiting for the previous one:
    // exercises the pruning of the access log.
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[128, 64], DType::Bf16, HbmRole::Input);
    let sems: Vec<_> = (0..16).map(|q| b.sem(&format!("q{q}"))).collect();
    let mut counts = [0u32; 16];
    for i in 0..4000usize {
        let q = i % 16;
        let waits = if i == 0 { vec![] } else { vec![(sems[(i - 1) % 16], counts[(i - 1) % 16])] };
        counts[q] += 1;
        b.push(
            Engine::Dma(q as u8),
            dma(sbuf(DType::Bf16, 0, 128, 0, 64), hbm(DType::Bf16, x, 128, 64, 64)),
            &waits,
            Some(sems[q]),
        );
    }
    let mut s = Simulator::new(&b.program);
    let stats = s.run().unwrap();
    assert!(stats.races.is_empty());
    assert_eq!(stats.dma_bytes, 4000 * 128 * 64 * 2);
}
