//! Cores ordered by a shared semaphore: a hand-off of HBM data from one core to the other
//! computes the right bytes and is no race (without the wait it is one), cores waiting on
//! each other deadlock with both named, the text and verifier of a chip's `shared` lines,
//! and the cycle model starting the waiting core after the signal.

use bir::{text, verify_chip, Chip, Engine, HbmRole, Op, Program, SemId};
use penguin::{CastMode, DType, Target};
use sim::{model_chip, ChipSimulator, SimError};
use test_support::{hbm, sbuf, Builder};

const ROWS: u64 = 128;
const COLS: u32 = 64;

/// A core of the hand-off: core 0 copies x to y and signals the shared `handed`; core 1
/// (waiting on it when `wait`) copies y to z. Every core declares x, y, z.
fn core(target: Target, second: bool, wait: bool) -> Program {
    let mut b = Builder::new(target);
    let x = b.tensor("x", &[ROWS, u64::from(COLS)], DType::Fp32, HbmRole::Input);
    let y = b.tensor("y", &[ROWS, u64::from(COLS)], DType::Fp32, HbmRole::Internal);
    let z = b.tensor("z", &[ROWS, u64::from(COLS)], DType::Fp32, HbmRole::Output);
    let handed = b.sem("handed");
    let loaded = b.sem("loaded");
    let (from, to) = if second { (y, z) } else { (x, y) };
    let tile = sbuf(DType::Fp32, 0, ROWS as u32, 0, COLS);
    let load = Op::DmaCopy {
        dst: tile.clone(),
        src: hbm(DType::Fp32, from, ROWS as u32, i64::from(COLS), COLS),
        cast: CastMode::Rne,
    };
    let waits: &[(SemId, u32)] = if second && wait { &[(handed, 1)] } else { &[] };
    b.push(Engine::Dma(0), load, waits, Some(loaded));
    let store =
        Op::DmaCopy { dst: hbm(DType::Fp32, to, ROWS as u32, i64::from(COLS), COLS), src: tile, cast: CastMode::Rne };
    b.push(Engine::Dma(1), store, &[(loaded, 1)], (!second).then_some(handed));
    b.program
}

fn hand_off(wait: bool) -> Chip {
    Chip::with_shared(vec![core(Target::Trn2, false, true), core(Target::Trn2, true, wait)], vec!["handed".into()])
}

fn input() -> Vec<f32> {
    (0..ROWS as u32 * COLS).map(|i| i as f32 * 0.25 - 7.0).collect()
}

#[test]
fn a_shared_semaphore_orders_the_cores() {
    let chip = hand_off(true);
    verify_chip(&chip).unwrap();
    let mut s = ChipSimulator::new(&chip);
    s.hbm().unwrap().write_hbm_f32("x", &input()).unwrap();
    let stats = s.run().unwrap();
    assert!(stats.races.is_empty(), "{:?}", stats.races);
    assert_eq!(s.hbm().unwrap().read_hbm_f32("z").unwrap(), input());
    // Core 1 runs first in no order: swapping the cores' places still waits for core 0.
    let swapped =
        Chip::with_shared(vec![core(Target::Trn2, true, true), core(Target::Trn2, false, true)], vec!["handed".into()]);
    let mut s = ChipSimulator::new(&swapped);
    s.hbm().unwrap().write_hbm_f32("x", &input()).unwrap();
    let stats = s.run().unwrap();
    assert!(stats.races.is_empty(), "{:?}", stats.races);
    assert_eq!(s.hbm().unwrap().read_hbm_f32("z").unwrap(), input());
}

#[test]
fn without_the_wait_the_cores_race() {
    let chip = hand_off(false);
    verify_chip(&chip).unwrap();
    let mut s = ChipSimulator::new(&chip);
    let stats = s.run().unwrap();
    assert_eq!(stats.races.len(), 1, "{:?}", stats.races);
    let r = &stats.races[0];
    assert_eq!((r.earlier.core, r.later.core), (0, 1));
    assert_eq!((r.earlier.at.to_string(), r.later.at.to_string()), ("dma1[0]".into(), "dma0[0]".into()));
    // A semaphore of the same name that the chip does not share orders nothing.
    let private = Chip::new(hand_off(true).cores);
    let err = verify_chip(&private).unwrap_err().to_string();
    assert!(err.contains("deadlock: streams wait forever at core1.dma0[0], core1.dma1[0]"), "{err}");
}

#[test]
fn cores_waiting_on_each_other_deadlock() {
    // Core 0's load waits for core 1's signal and core 1's for core 0's.
    let mut a = core(Target::Trn2, false, true);
    a.streams[Engine::Dma(0).index()][0].waits.push(bir::Wait { sem: SemId(0), value: 1 });
    let chip = Chip::with_shared(vec![a, core(Target::Trn2, true, true)], vec!["handed".into()]);
    let err = verify_chip(&chip).unwrap_err().to_string();
    assert!(err.contains("deadlock: streams wait forever at dma0[0], dma1[0], core1.dma0[0], core1.dma1[0]"), "{err}");
    let mut s = ChipSimulator::new(&chip);
    match s.run() {
        Err(SimError::Deadlock { stuck }) => {
            let at: Vec<String> = stuck.iter().map(ToString::to_string).collect();
            let expected = [
                "dma0[0] waits for s0 >= 1 (reached 0)",
                "dma1[0] waits for s1 >= 1 (reached 0)",
                "core1.dma0[0] waits for s0 >= 1 (reached 0)",
                "core1.dma1[0] waits for s1 >= 1 (reached 0)",
            ];
            assert_eq!(at, expected);
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[test]
fn shared_lines_print_parse_and_verify() {
    let chip = hand_off(true);
    let printed = text::print_chip(&chip);
    assert!(printed.contains("@65536 output\nshared \"handed\"\ncore 0 sbuf_peak=0\n"), "{printed}");
    assert_eq!(text::parse_chip(&printed).unwrap(), chip);
    let err = text::parse_chip(&printed.replacen("shared \"handed\"", "shared handed", 1)).unwrap_err().to_string();
    assert!(err.contains("expected `shared \"NAME\"`, found `shared handed`"), "{err}");
    let unknown = Chip::with_shared(chip.cores, vec!["handed".into(), "nobody".into(), "handed".into()]);
    let err = verify_chip(&unknown).unwrap_err().to_string();
    assert!(err.contains("shared semaphore `nobody` is declared by no core"), "{err}");
    assert!(err.contains("shared semaphore `handed` is listed twice"), "{err}");
}

#[test]
fn the_model_starts_the_waiting_core_after_the_signal() {
    let profile = Target::Trn2.profile();
    let report = model_chip(&hand_off(true), &profile).unwrap();
    let store_end = report.cores[0].slices.iter().map(|s| s.end_ns).fold(0.0, f64::max);
    let second_start = report.cores[1].slices.iter().map(|s| s.start_ns).fold(f64::INFINITY, f64::min);
    assert!(second_start >= store_end, "{second_start} < {store_end}");
    // Unordered, core 1 starts at once.
    let free = model_chip(&hand_off(false), &profile).unwrap();
    let start = free.cores[1].slices.iter().map(|s| s.start_ns).fold(f64::INFINITY, f64::min);
    assert!(start < store_end, "{start}");
    assert!(report.total_ns > free.total_ns);
}
