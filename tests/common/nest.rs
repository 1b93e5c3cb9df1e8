//! A GEMM-shaped looped program in three nested loops, for the tests and benches of the
//! looped cycle model (`tests/cycle_nested.rs`, `crates/ntile/benches/cycle.rs`).

use bir::{BirInst, Engine, HwAp, Item, Loop, LoopedProgram, Op, Program, SemId, Wait};
use penguin::{CastMode, DType, Dim, EngineAccumulationType, Memory, PerfMode, Target, TilePosition, TileSize};

pub fn on_chip(memory: Memory, dtype: DType, offset: u64, free: u32) -> HwAp {
    HwAp {
        memory,
        dtype,
        start_partition: 0,
        num_partitions: 128,
        partition_stride: 1,
        byte_offset: offset,
        dims: vec![Dim::new(1, free)].into(),
    }
}

pub fn hbm(offset: u64, cols: u32) -> HwAp {
    HwAp {
        memory: Memory::Hbm,
        dtype: DType::Bf16,
        start_partition: 0,
        num_partitions: 128,
        partition_stride: 8192,
        byte_offset: offset,
        dims: vec![Dim::new(1, cols)].into(),
    }
}

pub fn sbuf(offset: u64, free: u32) -> HwAp {
    on_chip(Memory::Sbuf, DType::Bf16, offset, free)
}

pub fn psum(free: u32) -> HwAp {
    on_chip(Memory::Psum, DType::Fp32, 0, free)
}

pub fn inst(op: Op, waits: &[(u32, u32)], signal: u32) -> BirInst {
    let waits = waits.iter().map(|&(s, v)| Wait { sem: SemId(s), value: u64::from(v) }).collect();
    BirInst { op, waits, signal: Some(SemId(signal)), origin: None }
}

/// An instruction of a loop nest with, per parameter (in [`bir::looped`] order), its advance
/// per iteration of each enclosing loop, outermost first.
pub struct Nested {
    pub inst: BirInst,
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

pub const LOADED_A: u32 = 0;
pub const LOADED_B: u32 = 1;
pub const FREED: u32 = 2;
pub const EVACUATED: u32 = 3;
pub const STORED: u32 = 4;
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
        inst: inst(Op::DmaCopy { dst: sbuf(0, 128), src: hbm(0, 128), cast: CastMode::Rne }, &[(FREED, 1)], LOADED_A),
        coef: vec![zero.clone(), zero.clone(), scaled(&step_i, a_bytes), zero.clone(), step_i.clone()],
    };
    let load_b = Nested {
        inst: inst(
            Op::DmaCopy { dst: sbuf(4096, n), src: hbm(1 << 40, n), cast: CastMode::Rne },
            &[(FREED, 1)],
            LOADED_B,
        ),
        coef: vec![zero.clone(), zero.clone(), scaled(&step_i, b_bytes), zero.clone(), step_i.clone()],
    };
    lp.streams[Engine::Dma(0).index()] = vec![nest(&trips, &[load_a])];
    lp.streams[Engine::Dma(1).index()] = vec![nest(&trips, &[load_b])];
    let (tile_position, tile_size) = (TilePosition { row: 0, col: 0 }, TileSize { rows: 128, cols: 128 });
    let ls = Nested {
        inst: BirInst {
            signal: None,
            ..inst(
                Op::LoadStationary { src: sbuf(0, 128), perf_mode: PerfMode::None, tile_position, tile_size },
                &[(LOADED_A, 1)],
                0,
            )
        },
        coef: vec![zero.clone(), zero.clone(), step_i.clone()],
    };
    let mm = Nested {
        inst: inst(
            Op::MultiplyMoving {
                dst: psum(n),
                src: sbuf(4096, n),
                acc: EngineAccumulationType::START | EngineAccumulationType::STOP,
                perf_mode: PerfMode::None,
                tile_position,
                tile_size,
            },
            &[(LOADED_B, 1), (EVACUATED, 1)],
            FREED,
        ),
        coef: vec![zero.clone(), zero.clone(), zero.clone(), zero, step_i, tile_t],
    };
    lp.streams[Engine::Pe.index()] = vec![nest(&trips, &[ls, mm])];
    // The tile loops alone.
    let zero = vec![0; tiles.len()];
    let evac = Nested {
        inst: inst(Op::TensorCopy { dst: sbuf(8192, n), src: psum(n) }, &[(FREED, 2 + c)], EVACUATED),
        coef: vec![zero.clone(), zero.clone(), zero.clone(), zero.clone(), scaled(&tile_only, i64::from(c))],
    };
    lp.streams[Engine::Act.index()] = vec![nest(tiles, &[evac])];
    let store = Nested {
        inst: inst(
            Op::DmaCopy { dst: hbm(1 << 50, n), src: sbuf(8192, n), cast: CastMode::Rne },
            &[(EVACUATED, 3)],
            STORED,
        ),
        coef: vec![scaled(&tile_only, b_bytes), zero.clone(), zero.clone(), zero, tile_only],
    };
    lp.streams[Engine::Dma(3).index()] = vec![nest(tiles, &[store])];
    let memset = |waits: &[(u32, u32)], signal| {
        Item::Inst(inst(Op::Memset { dst: on_chip(Memory::Sbuf, DType::Fp32, 16384, 64), value: 0.0 }, waits, signal))
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
