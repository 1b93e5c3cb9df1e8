//! A GEMM-shaped looped program in three nested loops, for the tests and benches of the
//! looped cycle model.

use bir::{BirInst, Engine, Item, Loop, LoopedProgram, Op, Program};
use penguin::{CastMode, DType, EngineAccumulationType, PerfMode, Target, TilePosition, TileSize};

use crate::ap::{hbm, psum, sbuf};
use crate::program::inst;

/// 128 partitions of `free` bf16 at `offset` in SBUF.
fn sb(offset: u64, free: u32) -> bir::HwAp {
    sbuf(DType::Bf16, 0, 128, offset, free)
}

/// 128 rows of `cols` bf16 of an HBM matrix of 8192 columns, from byte `offset`.
fn rows(offset: u64, cols: u32) -> bir::HwAp {
    hbm(DType::Bf16, offset, 128, 8192, cols)
}

/// An instruction of a loop nest with, per parameter (in [`bir::looped`] order), its advance
/// per iteration of each enclosing loop, outermost first.
pub struct Nested {
    /// The instruction.
    pub inst: BirInst,
    /// Per parameter, its advance per iteration of each enclosing loop, outermost first.
    pub coef: Vec<Vec<i64>>,
}

/// `body` in loops of `trips` (outermost first): each loop's step is its column of the
/// instructions' coefficients.
pub fn nest(trips: &[u32], body: &[Nested]) -> Item {
    let mut items: Vec<Item> = body.iter().map(|n| Item::Inst(n.inst.clone())).collect();
    for level in (0..trips.len()).rev() {
        let step = body.iter().flat_map(|n| n.coef.iter().map(|c| c[level])).collect();
        items = vec![Item::Loop(Loop { trips: trips[level], body: items, step })];
    }
    items.pop().unwrap()
}

/// The semaphore the stationary operand loads signal.
pub const LOADED_A: u32 = 0;
/// The semaphore the moving operand loads signal.
pub const LOADED_B: u32 = 1;
/// The semaphore the matmuls signal (an operand slot is free).
pub const FREED: u32 = 2;
/// The semaphore the PSUM evacuations signal (a bank is free).
pub const EVACUATED: u32 = 3;
/// The semaphore the stores signal.
pub const STORED: u32 = 4;
/// The semaphore the last memset signals.
pub const DONE: u32 = 5;

/// A GEMM-shaped pipeline in three nested loops: `a` blocks of `b` output tiles of `c` K
/// steps; `n` is the moving free size. See [`gemm_nest_levels`].
pub fn gemm_nest(a: u32, b: u32, c: u32, n: u32) -> LoopedProgram {
    gemm_nest_levels(&[a, b], c, n)
}

/// `v` times `by`, entry by entry.
fn scaled(v: &[i64], by: i64) -> Vec<i64> {
    v.iter().map(|x| x * by).collect()
}

/// A GEMM-shaped pipeline: output tiles in the loops of `tiles` (outermost first), each of
/// `c` K steps in an innermost loop; `n` is the moving free size.
///
/// - POOL signals FREED and EVACUATED twice at the start (two free operand slots, two free
///   PSUM banks) and memsets once every tile is stored.
/// - Queues 0 and 1 load K step `i` of the stationary and moving operands (the whole nest)
///   once FREED reached `i + 1` (the matmul of step `i - 2` is done: double buffering).
/// - The PE loads the stationary chunk of step `i` (waits LOADED_A) and multiplies (waits
///   LOADED_B, and for its tile `t` EVACUATED >= `t + 1`, the PSUM bank free); each matmul
///   signals FREED.
/// - ACT evacuates tile `t` (the tile loops only) once its `c` matmuls are done; queue 3
///   stores it once evacuated.
pub fn gemm_nest_levels(tiles: &[u32], c: u32, n: u32) -> LoopedProgram {
    let mut p = Program::new("nested", Target::Trn2);
    p.hbm_size = 1 << 60;
    p.semaphores = ["loaded_a", "loaded_b", "freed", "evacuated", "stored", "done"].map(String::from).to_vec();
    let mut lp = LoopedProgram::from_program(&p);
    let trips: Vec<u32> = tiles.iter().copied().chain([c]).collect();
    // Per loop level, the advance of the K step index `i` and of the tile index `t`.
    let after = |l: usize, of: &[u32]| of[l + 1..].iter().map(|&t| i64::from(t)).product::<i64>();
    let step_i: Vec<i64> = (0..trips.len()).map(|l| after(l, &trips)).collect();
    let tile_only: Vec<i64> = (0..tiles.len()).map(|l| after(l, tiles)).collect();
    let tile_t: Vec<i64> = tile_only.iter().copied().chain([0]).collect();
    let zero = vec![0; trips.len()];
    let a_bytes = 128 * 128 * 2;
    let b_bytes = 128 * i64::from(n) * 2;
    // dst offset, dst partition, src offset, src partition, wait.
    let load_a = Nested {
        inst: inst(
            Op::DmaCopy { dst: sb(0, 128), src: rows(0, 128), cast: CastMode::Rne },
            &[(FREED, 1)],
            Some(LOADED_A),
        ),
        coef: vec![zero.clone(), zero.clone(), scaled(&step_i, a_bytes), zero.clone(), step_i.clone()],
    };
    let load_b = Nested {
        inst: inst(
            Op::DmaCopy { dst: sb(4096, n), src: rows(1 << 40, n), cast: CastMode::Rne },
            &[(FREED, 1)],
            Some(LOADED_B),
        ),
        coef: vec![zero.clone(), zero.clone(), scaled(&step_i, b_bytes), zero.clone(), step_i.clone()],
    };
    lp.streams[Engine::Dma(0).index()] = vec![nest(&trips, &[load_a])];
    lp.streams[Engine::Dma(1).index()] = vec![nest(&trips, &[load_b])];
    let (tile_position, tile_size) = (TilePosition { row: 0, col: 0 }, TileSize { rows: 128, cols: 128 });
    let ls = Nested {
        inst: inst(
            Op::LoadStationary { src: sb(0, 128), perf_mode: PerfMode::None, tile_position, tile_size },
            &[(LOADED_A, 1)],
            None,
        ),
        coef: vec![zero.clone(), zero.clone(), step_i.clone()],
    };
    let mm = Nested {
        inst: inst(
            Op::MultiplyMoving {
                dst: psum(128, 0, n),
                src: sb(4096, n),
                acc: EngineAccumulationType::START | EngineAccumulationType::STOP,
                perf_mode: PerfMode::None,
                tile_position,
                tile_size,
            },
            &[(LOADED_B, 1), (EVACUATED, 1)],
            Some(FREED),
        ),
        coef: vec![zero.clone(), zero.clone(), zero.clone(), zero, step_i, tile_t],
    };
    lp.streams[Engine::Pe.index()] = vec![nest(&trips, &[ls, mm])];
    // The tile loops alone.
    let zero = vec![0; tiles.len()];
    let evac = Nested {
        inst: inst(Op::TensorCopy { dst: sb(8192, n), src: psum(128, 0, n) }, &[(FREED, 2 + c)], Some(EVACUATED)),
        coef: vec![zero.clone(), zero.clone(), zero.clone(), zero.clone(), scaled(&tile_only, i64::from(c))],
    };
    lp.streams[Engine::Act.index()] = vec![nest(tiles, &[evac])];
    let store = Nested {
        inst: inst(
            Op::DmaCopy { dst: rows(1 << 50, n), src: sb(8192, n), cast: CastMode::Rne },
            &[(EVACUATED, 3)],
            Some(STORED),
        ),
        coef: vec![scaled(&tile_only, b_bytes), zero.clone(), zero.clone(), zero, tile_only],
    };
    lp.streams[Engine::Dma(3).index()] = vec![nest(tiles, &[store])];
    let memset = |waits: &[(u32, u32)], signal| {
        Item::Inst(inst(Op::Memset { dst: sbuf(DType::Fp32, 0, 128, 16384, 64), value: 0.0 }, waits, Some(signal)))
    };
    let count = tiles.iter().product();
    lp.streams[Engine::Pool.index()] = vec![
        memset(&[], FREED),
        memset(&[], FREED),
        memset(&[], EVACUATED),
        memset(&[], EVACUATED),
        memset(&[(STORED, count)], DONE),
    ];
    lp
}
