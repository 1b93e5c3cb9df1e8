//! Chips of two cores sharing HBM: each core's share computed, races between cores caught
//! (and disjoint strided shares not flagged), the `.bir` text of a chip, its verifier, and
//! the cycle model's shared HBM budget.

use bir::{text, verify_chip, Chip, Engine, HbmRole, Op, Program};
use penguin::{CastMode, DType, HwProfile, Target};
use sim::{model_chip, model_with, ChipSimulator};
use test_support::{hbm, sbuf, Builder};

const ROWS: u32 = 256;
const COLS: u32 = 64;

/// A core that copies the window `rows x cols` at (`row0`, `col0`) of `x` [256, 64] fp32 to
/// the same window of `y`, through SBUF, on its queues 0 and 1.
fn copier(target: Target, row0: u32, rows: u32, col0: u32, cols: u32) -> Program {
    let mut b = Builder::new(target);
    let x = b.tensor("x", &[u64::from(ROWS), u64::from(COLS)], DType::Fp32, HbmRole::Input);
    let y = b.tensor("y", &[u64::from(ROWS), u64::from(COLS)], DType::Fp32, HbmRole::Output);
    let loaded = b.sem("loaded");
    let at = |base: u64| base + u64::from(row0 * COLS + col0) * 4;
    for t in 0..rows.div_ceil(128) {
        let parts = (rows - t * 128).min(128);
        let off = u64::from(t * 128 * COLS) * 4;
        let tile = sbuf(DType::Fp32, 0, parts, u64::from(t * cols) * 4, cols);
        let load = Op::DmaCopy {
            dst: tile.clone(),
            src: hbm(DType::Fp32, at(x) + off, parts, i64::from(COLS), cols),
            cast: CastMode::Rne,
        };
        b.push(Engine::Dma(0), load, &[], Some(loaded));
        let store = Op::DmaCopy {
            dst: hbm(DType::Fp32, at(y) + off, parts, i64::from(COLS), cols),
            src: tile,
            cast: CastMode::Rne,
        };
        b.push(Engine::Dma(1), store, &[(loaded, t + 1)], None);
    }
    b.program
}

fn input() -> Vec<f32> {
    (0..ROWS * COLS).map(|i| i as f32 * 0.5 - 100.0).collect()
}

fn run(chip: &Chip) -> (Vec<f32>, sim::ChipStats) {
    verify_chip(chip).unwrap();
    let mut s = ChipSimulator::new(chip);
    s.hbm().unwrap().write_hbm_f32("x", &input()).unwrap();
    let stats = s.run().unwrap();
    (s.hbm().unwrap().read_hbm_f32("y").unwrap(), stats)
}

#[test]
fn two_cores_each_copy_their_rows() {
    let chip = Chip::new(vec![copier(Target::Trn2, 0, 128, 0, COLS), copier(Target::Trn2, 128, 128, 0, COLS)]);
    let (y, stats) = run(&chip);
    assert_eq!(y, input());
    assert!(stats.races.is_empty(), "{:?}", stats.races);
    assert_eq!(stats.cores.len(), 2);
    assert_eq!(stats.instructions(), 4);
    assert_eq!(stats.total().hbm_write_bytes, u64::from(ROWS * COLS) * 4);
}

#[test]
fn interleaved_column_shares_do_not_race() {
    // Every row holds bytes of both cores: only an exact strided check tells them apart.
    let chip = Chip::new(vec![copier(Target::Trn2, 0, ROWS, 0, 32), copier(Target::Trn2, 0, ROWS, 32, 32)]);
    let (y, stats) = run(&chip);
    assert_eq!(y, input());
    assert!(stats.races.is_empty(), "{:?}", stats.races);
}

#[test]
fn cores_writing_the_same_rows_race() {
    let chip = Chip::new(vec![copier(Target::Trn2, 0, 128, 0, COLS), copier(Target::Trn2, 64, 128, 0, COLS)]);
    let (_, stats) = run(&chip);
    assert_eq!(stats.races.len(), 1, "{:?}", stats.races);
    let r = &stats.races[0];
    assert_eq!((r.earlier.core, r.later.core), (0, 1));
    assert!(r.earlier.write && r.later.write);
    // Core 0 wrote y rows 64..128, which core 1 wrote again.
    let y = u64::from(ROWS * COLS) * 4;
    assert_eq!(r.bytes, ((y + 64 * 256) as i64, (y + 128 * 256) as i64));
    let text = r.to_string();
    assert!(text.contains("dma1[0] (write) and core1.dma1[0] (write) run on different cores"), "{text}");
}

#[test]
fn a_core_reading_what_the_other_writes_races() {
    // Core 1 copies y's rows 0..128 (written by core 0) onto y's rows 128..256.
    let mut reader = copier(Target::Trn2, 128, 128, 0, COLS);
    let Op::DmaCopy { src, .. } = &mut reader.streams[Engine::Dma(0).index()][0].op else { panic!() };
    src.byte_offset = u64::from(ROWS * COLS) * 4;
    let chip = Chip::new(vec![copier(Target::Trn2, 0, 128, 0, COLS), reader]);
    let (_, stats) = run(&chip);
    assert_eq!(stats.races.len(), 1, "{:?}", stats.races);
    let r = &stats.races[0];
    assert!(r.earlier.write && !r.later.write);
    assert_eq!((r.earlier.at.to_string(), r.later.at.to_string()), ("dma1[0]".into(), "dma0[0]".into()));
}

#[test]
fn the_verifier_names_the_core() {
    let ok = copier(Target::Trn2, 0, 128, 0, COLS);
    let mut bad = copier(Target::Trn2, 128, 128, 0, COLS);
    let copy = bad.streams[Engine::Dma(0).index()][0].clone();
    bad.streams[Engine::Pe.index()].push(copy);
    let err = verify_chip(&Chip::new(vec![ok.clone(), bad])).unwrap_err().to_string();
    assert!(err.contains("core1.pe[0] dma_copy: dma_copy cannot run on pe"), "{err}");
    let mut other = ok.clone();
    other.hbm[1].address += 64;
    other.hbm_size += 64;
    let err = verify_chip(&Chip::new(vec![ok, other])).unwrap_err().to_string();
    assert!(err.contains("core 1: its HBM tensors differ from core 0's"), "{err}");
    let trn1 = copier(Target::Trn1, 0, 128, 0, COLS);
    let err = verify_chip(&Chip::new(vec![trn1.clone(), trn1])).unwrap_err().to_string();
    assert!(err.contains("2 cores, but a logical NeuronCore of trn1 groups at most 1"), "{err}");
    assert!(verify_chip(&Chip::new(vec![])).is_err());
}

#[test]
fn a_chip_prints_and_parses_back() {
    let chip = Chip::new(vec![copier(Target::Trn2, 0, 128, 0, COLS), copier(Target::Trn2, 128, 128, 0, COLS)]);
    let printed = text::print_chip(&chip);
    assert!(printed.starts_with("program test target=trn2 hbm_size=131072 cores=2\n"), "{printed}");
    assert!(printed.contains("\ncore 1 sbuf_peak=0\nsem s0 \"loaded\"\n"), "{printed}");
    assert_eq!(text::chip_cores(&printed), Some("2"));
    assert_eq!(text::parse_chip(&printed).unwrap(), chip);
    // One core prints as a plain program.
    let one = Chip::new(vec![chip.cores[0].clone()]);
    assert_eq!(text::print_chip(&one), chip.cores[0].to_string());
    assert_eq!(text::parse_chip(&text::print_chip(&one)).unwrap(), one);
    // Errors keep the line numbers of the whole file.
    let broken = printed.replacen("core 1 sbuf_peak=0\nsem s0", "core 1 sbuf_peak=0\nsem s1", 1);
    let line = broken.lines().position(|l| l == "sem s1 \"loaded\"").unwrap() + 1;
    let err = text::parse_chip(&broken).unwrap_err();
    assert_eq!(err.line, line, "{err}");
    let err = text::parse_chip(&printed.replacen("core 1", "core 2", 1)).unwrap_err().to_string();
    assert!(err.contains("expected `core 1` (cores are numbered in order from 0), found `core 2`"), "{err}");
    let err = text::parse_chip(&printed.replacen("cores=2", "cores=3", 1)).unwrap_err().to_string();
    assert!(err.contains("expected `cores=1` or `cores=2`, found `cores=3`"), "{err}");
    let moved = printed.replacen("core 0 sbuf_peak=0\n", "", 1);
    let err = text::parse_chip(&moved).unwrap_err().to_string();
    assert!(err.contains("`sem` lines go in a `core K` section"), "{err}");
}

/// Two cores moving `bytes` each from HBM to HBM-bound SBUF loads: the shared HBM budget of
/// the profile bounds their time together.
#[test]
fn the_cores_share_the_hbm_budget() {
    let profile = Target::Trn2.profile();
    let one = copier(Target::Trn2, 0, 256, 0, COLS);
    let alone = model_with(&one, &profile).unwrap();
    let chip = Chip::new(vec![one.clone(), one.clone()]);
    // Two copies of the same program would race in the simulator, but the model needs no
    // data: each core alone takes as long as one program; the shared budget of trn2
    // (725 B/ns) is about twice what one core draws, so together they take about as long.
    let both = model_chip(&chip, &profile).unwrap();
    assert_eq!(both.cores.len(), 2);
    assert_eq!(both.cores[0].slices.len(), 4);
    assert_eq!(both.cores[1].slices.len(), 4);
    assert!(both.total_ns >= alone.total_ns);
    assert!(both.total_ns < alone.total_ns * 1.2, "{} vs {}", both.total_ns, alone.total_ns);
    // A budget of a tenth: the cores' HBM time is all of it.
    let tight = HwProfile { hbm_shared_bytes_per_ns: 36.0, ..profile };
    let starved = model_chip(&chip, &tight).unwrap();
    let granules = (both.hbm_bytes() as f64 / profile.hbm_burst_bytes).ceil() * profile.hbm_burst_bytes;
    assert!(starved.total_ns >= granules / 36.0, "{} < {}", starved.total_ns, granules / 36.0);
    assert!(starved.total_ns < granules / 36.0 + alone.total_ns, "{}", starved.total_ns);
    assert!(starved.hbm_shared_fraction() > 0.8, "{}", starved.hbm_shared_fraction());
    // One core is modeled as its program is.
    let single = model_chip(&Chip::new(vec![one]), &profile).unwrap();
    assert_eq!(single.cores[0], alone);
    assert_eq!(single.total_ns, alone.total_ns);
}
