//! The reduction of a GEMM split by K over the cores of a chip (`--lnc 2 --split k`).
//!
//! Each core's share is a GEMM over its rows of the contraction whose C is an fp32 partial
//! sum of all of C. Every core's lowered program declares the same A, B and C (the partial
//! sum) at the same addresses; [`chip_of_partials`] gives each core's partial sum a tensor of
//! its own (`c.part0`, `c.part1`) and declares the whole GEMM's C after them, then appends to
//! every core the same second phase:
//!
//! 1. a barrier on SP: a one-element memset that waits until every semaphore of the core has
//!    reached its final count (each stream's last instruction signals one), so all of the
//!    core's first phase is done, and signals the shared semaphore `reduce.partials`;
//! 2. the core's tiles of C (128 rows by up to 512 columns; core `c` takes the `c`-th
//!    contiguous run of them), each after `reduce.partials` reached the number of cores: two
//!    DMA loads of the tile from both partial sums into SBUF, a DVE `tensor_tensor` add that
//!    rounds once to C's dtype, and a DMA store into C; two SBUF slots alternate, so the
//!    loads of a tile overlap the add and store of the one before.
//!
//! Every semaphore of the second phase counts the tiles of one slot, and DMA queues are taken
//! in turn, three per tile.

use bir::{BirInst, Chip, Engine, HbmRole, HbmTensor, HwAp, Op, Program, SemId, Wait};
use penguin::{AluOp, CastMode, DType, Dim, Memory};

use crate::error::DriverError;

/// The shared semaphore the barrier of every core signals.
pub(super) const PARTIALS: &str = "reduce.partials";

/// Columns of C a tile of the reduction covers at most.
const TILE_COLS: u64 = 512;

/// HBM tensors start on this many bytes (as the lowering lays them out).
const HBM_ALIGN: u64 = 64;

/// The chip of the cores' partial-sum programs, with their partial sums moved apart, the
/// whole C (`c_name`, `out_dtype`) declared, and the reduction appended (see the module docs).
pub(super) fn chip_of_partials(mut cores: Vec<Program>, c_name: &str, out_dtype: DType) -> Result<Chip, DriverError> {
    let n = cores.len();
    let first = cores.first().ok_or_else(|| DriverError::internal("a chip without cores (a bug)"))?;
    let part = first
        .hbm_tensor(c_name)
        .cloned()
        .ok_or_else(|| DriverError::internal(format!("the partial sums' program has no `{c_name}` (a bug)")))?;
    let (m, cols) = match part.shape.as_slice() {
        [m, n] => (*m, *n),
        other => return Err(DriverError::internal(format!("a partial sum of shape {other:?} (a bug)"))),
    };
    let part_bytes = part.num_bytes();
    let align = |a: u64| a.div_ceil(HBM_ALIGN) * HBM_ALIGN;
    // The layout: every tensor as lowered, core c's partial sum at `parts[c]`, then C.
    let mut hbm: Vec<HbmTensor> = first.hbm.iter().filter(|t| t.name != c_name).cloned().collect();
    let mut end = align(first.hbm_size);
    let mut parts = Vec::with_capacity(n);
    for c in 0..n {
        let address = if c == 0 {
            part.address
        } else {
            let a = end;
            end = align(a + part_bytes);
            a
        };
        parts.push(address);
        let name = format!("{c_name}.part{c}");
        hbm.push(HbmTensor { name, address, role: HbmRole::Internal, ..part.clone() });
    }
    let c =
        HbmTensor { name: c_name.to_string(), dtype: out_dtype, address: end, role: HbmRole::Output, ..part.clone() };
    let hbm_size = align(end + c.num_bytes());
    hbm.push(c.clone());
    let tiles: Vec<(u64, u64)> = (0..m.div_ceil(128))
        .flat_map(|r| (0..cols.div_ceil(TILE_COLS)).map(move |q| (r * 128, q * TILE_COLS)))
        .collect();
    for (core, p) in cores.iter_mut().enumerate() {
        let delta = parts[core] - part.address;
        if delta > 0 {
            move_hbm(p, (part.address, part.address + part_bytes), delta);
        }
        p.hbm.clone_from(&hbm);
        p.hbm_size = hbm_size;
        let mine = &tiles[core * tiles.len() / n..(core + 1) * tiles.len() / n];
        append_reduction(p, Sums { parts: &parts, c: &c, m, cols }, mine, n as u64)?;
    }
    let chip = Chip::with_shared(cores, vec![PARTIALS.to_string()]);
    bir::verify_chip(&chip)?;
    Ok(chip)
}

/// Add `delta` to every HBM access starting in `[lo, hi)`.
fn move_hbm(p: &mut Program, (lo, hi): (u64, u64), delta: u64) {
    for inst in p.streams.iter_mut().flatten() {
        for (_, ap) in inst.op.aps_mut() {
            if ap.memory == Memory::Hbm && (lo..hi).contains(&ap.byte_offset) {
                ap.byte_offset += delta;
            }
        }
    }
}

/// Where the reduction reads and writes.
#[derive(Clone, Copy)]
struct Sums<'a> {
    /// Each core's partial sum's address (fp32, `m x cols`).
    parts: &'a [u64],
    /// The whole C.
    c: &'a HbmTensor,
    m: u64,
    cols: u64,
}

fn inst(op: Op, waits: Vec<Wait>, signal: Option<SemId>) -> BirInst {
    BirInst { op, waits, signal, origin: None }
}

fn sem(p: &mut Program, name: String) -> SemId {
    p.semaphores.push(name);
    SemId(p.semaphores.len() as u32 - 1)
}

/// Append the barrier and `tiles` (first row, first column) of the reduction to `p`.
fn append_reduction(p: &mut Program, sums: Sums<'_>, tiles: &[(u64, u64)], cores: u64) -> Result<(), DriverError> {
    if sums.parts.len() != 2 {
        return Err(DriverError::internal(format!("a reduction of {} partial sums (two are added)", sums.parts.len())));
    }
    // Each stream's last instruction signals, so the final counts cover every stream.
    let streams = p.streams.len();
    for e in 0..streams {
        if p.streams[e].last().is_some_and(|i| i.signal.is_none()) {
            let name =
                Engine::from_index(e).map_or_else(|| format!("reduce.done{e}"), |en| format!("reduce.done.{en}"));
            let s = sem(p, name);
            if let Some(i) = p.streams[e].last_mut() {
                i.signal = Some(s);
            }
        }
    }
    let mut finals = vec![0u64; p.semaphores.len()];
    for i in p.streams.iter().flatten() {
        if let Some(s) = i.signal {
            finals[s.0 as usize] += 1;
        }
    }
    let done: Vec<Wait> = finals
        .iter()
        .enumerate()
        .filter(|(_, &v)| v > 0)
        .map(|(s, &v)| Wait { sem: SemId(s as u32), value: v })
        .collect();
    let partials = sem(p, PARTIALS.to_string());
    let one = HwAp::on_chip(Memory::Sbuf, DType::Fp32, 0, 1, 0, vec![Dim::new(1, 1)]);
    p.streams[Engine::Sp.index()].push(inst(Op::Memset { dst: one, value: 0.0 }, done, Some(partials)));
    let slots: Vec<[SemId; 3]> =
        (0..2).map(|s| ["loaded", "added", "stored"].map(|what| sem(p, format!("reduce.{what}{s}")))).collect();
    let w = TILE_COLS.min(sums.cols);
    let out = u64::from(sums.c.dtype.size_bytes());
    let slot_bytes = (w * 8 + w * out).div_ceil(64) * 64;
    let started = Wait { sem: partials, value: cores };
    let queues = u64::from(penguin::target::NUM_DMA_QUEUES);
    for (t, &(row0, col0)) in tiles.iter().enumerate() {
        let (slot, j) = (t % 2, (t / 2) as u64);
        let [loaded, added, stored] = slots[slot];
        let rows = (sums.m - row0).min(128) as u32;
        let width = (sums.cols - col0).min(w);
        let base = slot as u64 * slot_bytes;
        let dims = || vec![Dim::new(1, width as u32)];
        let tile = |dtype, offset| HwAp::on_chip(Memory::Sbuf, dtype, 0, rows, offset, dims());
        let at = |address: u64, dtype: DType| {
            let elem = u64::from(dtype.size_bytes());
            HwAp::hbm(dtype, address + (row0 * sums.cols + col0) * elem, rows, sums.cols as i64, dims())
        };
        let queue = |k: u64| Engine::Dma(((3 * t as u64 + k) % queues) as u8);
        let free = |waits: &mut Vec<Wait>, sem: SemId| {
            if j > 0 {
                waits.push(Wait { sem, value: j });
            }
        };
        let ins = [tile(DType::Fp32, base), tile(DType::Fp32, base + width * 4)];
        for (k, (&address, dst)) in sums.parts.iter().zip(&ins).enumerate() {
            let mut waits = vec![started];
            free(&mut waits, added);
            let load = Op::DmaCopy { dst: dst.clone(), src: at(address, DType::Fp32), cast: CastMode::Rne };
            p.streams[queue(k as u64).index()].push(inst(load, waits, Some(loaded)));
        }
        let sum = tile(sums.c.dtype, base + width * 8);
        let mut waits = vec![Wait { sem: loaded, value: 2 * (j + 1) }];
        free(&mut waits, stored);
        let [lhs, rhs] = ins;
        let add = Op::TensorTensor { op: AluOp::Add, dst: sum.clone(), lhs, rhs };
        p.streams[Engine::Dve.index()].push(inst(add, waits, Some(added)));
        let store = Op::DmaCopy { dst: at(sums.c.address, sums.c.dtype), src: sum, cast: CastMode::Rne };
        p.streams[queue(2).index()].push(inst(store, vec![Wait { sem: added, value: j + 1 }], Some(stored)));
    }
    p.sbuf_peak_bytes = p.sbuf_peak_bytes.max(2 * slot_bytes);
    Ok(())
}
