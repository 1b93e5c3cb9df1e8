//! A hand-built BIR program for `C[M, N] = A[M, K] @ B[K, N]`, written as the lowering would.
//!
//! A is given transposed as `at [K, M]`, B as `b [K, N]` (both `in_dtype` in HBM), C as
//! `c [M, N]` fp32. Schedule: for each 128-row M tile and 512-column N tile, for each
//! 128-row K tile, load both operand tiles (each load split into DMAs of `rows_per_dma`
//! partitions, round-robin over the 16 queues) into one of two SBUF slots, then
//! LoadStationary + MultiplyMoving into one of two PSUM banks (START / ACCU / STOP over K);
//! after the STOP, ACT copies the bank to an SBUF staging slot and DMAs store it.
//!
//! Synchronisation follows the BIR lowering's scheme: every engine has one semaphore it
//! signals after each of its instructions, and a consumer waits for the producer engine's
//! count, which is exact because each stream runs in order. Buffer reuse (operand slots,
//! PSUM banks, staging slots) waits for the previous user, so the program is race-free.

use bir::{BirInst, Engine, HbmRole, HbmTensor, HwAp, Op, Program, SemId, Wait};
use penguin::{CastMode, DType, Dim, EngineAccumulationType, Memory, PerfMode, Target, TilePosition, TileSize};

/// Shape and flavour of the GEMM.
#[derive(Clone, Copy, Debug)]
pub struct GemmSpec {
    /// Rows of A and C.
    pub m: usize,
    /// Contraction.
    pub k: usize,
    /// Columns of B and C.
    pub n: usize,
    /// dtype of A and B in HBM and SBUF.
    pub in_dtype: DType,
    /// Partitions per operand DMA.
    pub rows_per_dma: u32,
}

const MT: usize = 128;
const KT: usize = 128;
const NT: usize = 512;

struct Build {
    program: Program,
    /// Per engine: how many times it has signalled so far.
    count: Vec<u32>,
    next_queue: u8,
}

/// Where an instruction landed: its engine and the count its signal reached.
#[derive(Clone, Copy)]
struct Done {
    engine: usize,
    count: u32,
}

impl Build {
    fn push(&mut self, engine: Engine, op: Op, after: &[Done]) -> Done {
        let mut best = vec![0u32; self.count.len()];
        for d in after {
            best[d.engine] = best[d.engine].max(d.count);
        }
        let waits = best
            .iter()
            .enumerate()
            .filter(|&(e, &v)| v > 0 && e != engine.index())
            .map(|(e, &v)| Wait { sem: SemId(e as u32), value: u64::from(v) })
            .collect();
        let e = engine.index();
        self.count[e] += 1;
        self.program.streams[e].push(BirInst { op, waits, signal: Some(SemId(e as u32)), origin: None });
        Done { engine: e, count: self.count[e] }
    }

    fn queue(&mut self) -> Engine {
        let q = self.next_queue;
        self.next_queue = (q + 1) % 16;
        Engine::Dma(q)
    }

    /// DMA `rows x cols` from HBM (`row_len` elements per row, first element at `hbm_byte`)
    /// into SBUF partitions `0..rows` at `sbuf_byte`, or the reverse when `store`.
    #[allow(clippy::too_many_arguments)]
    fn transfer(
        &mut self,
        store: bool,
        dtype: DType,
        sbuf_dtype: DType,
        hbm_byte: u64,
        row_len: usize,
        rows: usize,
        cols: usize,
        sbuf_byte: u64,
        rows_per_dma: usize,
        after: &[Done],
    ) -> Vec<Done> {
        let size = u64::from(dtype.size_bytes());
        let mut done = Vec::new();
        for r0 in (0..rows).step_by(rows_per_dma.max(1)) {
            let nr = rows_per_dma.max(1).min(rows - r0);
            let run = vec![Dim::new(1, cols as u32)];
            let h = HwAp::hbm(dtype, hbm_byte + (r0 * row_len) as u64 * size, nr as u32, row_len as i64, run.clone());
            let s = HwAp::on_chip(Memory::Sbuf, sbuf_dtype, r0 as u32, nr as u32, sbuf_byte, run);
            let (dst, src) = if store { (h, s) } else { (s, h) };
            let q = self.queue();
            done.push(self.push(q, Op::DmaCopy { dst, src, cast: CastMode::Rne }, after));
        }
        done
    }
}

fn on_chip(memory: Memory, dtype: DType, parts: usize, byte: u64, n: usize) -> HwAp {
    HwAp::on_chip(memory, dtype, 0, parts as u32, byte, vec![Dim::new(1, n as u32)])
}

/// The program of `spec`: HBM tensors `at [K, M]`, `b [K, N]` and `c [M, N]` (in that
/// order, 64-byte aligned).
pub fn gemm_program(spec: GemmSpec) -> Program {
    let GemmSpec { m, k, n, in_dtype, rows_per_dma } = spec;
    let size = in_dtype.size_bytes() as usize;
    let mut program = Program::new("gemm", Target::Trn2);
    program.semaphores = Engine::all().map(|e| e.name()).collect();
    let mut address = 0u64;
    for (name, shape, dtype, role) in [
        ("at", [k, m], in_dtype, HbmRole::Input),
        ("b", [k, n], in_dtype, HbmRole::Input),
        ("c", [m, n], DType::Fp32, HbmRole::Output),
    ] {
        let t = HbmTensor { name: name.into(), shape: shape.iter().map(|&d| d as u64).collect(), dtype, address, role };
        address = (address + t.num_bytes()).div_ceil(64) * 64;
        program.hbm.push(t);
    }
    program.hbm_size = address;
    let (at, b, c) = (program.hbm[0].address, program.hbm[1].address, program.hbm[2].address);
    let mut bld = Build { program, count: vec![0; bir::NUM_ENGINES], next_queue: 0 };
    // SBUF layout per partition: two stationary slots, two moving slots, two staging slots.
    let st_slot = |s: usize| (s * MT * size) as u64;
    let mv_slot = |s: usize| (2 * MT * size + s * NT * size) as u64;
    let out_slot = |s: usize| (2 * MT * size + 2 * NT * size + s * NT * 4) as u64;
    let rows = rows_per_dma as usize;
    let (m_tiles, n_tiles, k_tiles) = (m.div_ceil(MT), n.div_ceil(NT), k.div_ceil(KT));
    // Per slot: the matmul that last read it; per bank / staging slot: its last copy / stores.
    let mut slot_reader: [Option<Done>; 2] = [None, None];
    let mut bank_copy: [Option<Done>; 2] = [None, None];
    let mut staging_stores: [Vec<Done>; 2] = [Vec::new(), Vec::new()];
    let (mut i, mut g) = (0usize, 0usize);
    for mi in 0..m_tiles {
        let (m0, mt) = (mi * MT, MT.min(m - mi * MT));
        for ni in 0..n_tiles {
            let (n0, nt) = (ni * NT, NT.min(n - ni * NT));
            let bank = g % 2;
            let mut last_mm = None;
            for ki in 0..k_tiles {
                let (k0, kt) = (ki * KT, KT.min(k - ki * KT));
                let s = i % 2;
                let reuse: Vec<Done> = slot_reader[s].into_iter().collect();
                let mut loads = bld.transfer(
                    false,
                    in_dtype,
                    in_dtype,
                    at + ((k0 * m + m0) * size) as u64,
                    m,
                    kt,
                    mt,
                    st_slot(s),
                    rows,
                    &reuse,
                );
                loads.extend(bld.transfer(
                    false,
                    in_dtype,
                    in_dtype,
                    b + ((k0 * n + n0) * size) as u64,
                    n,
                    kt,
                    nt,
                    mv_slot(s),
                    rows,
                    &reuse,
                ));
                if ki == 0 {
                    loads.extend(bank_copy[bank]);
                }
                let ls = Op::LoadStationary {
                    src: on_chip(Memory::Sbuf, in_dtype, kt, st_slot(s), mt),
                    perf_mode: PerfMode::None,
                    tile_position: TilePosition::default(),
                    tile_size: TileSize::default(),
                };
                bld.push(Engine::Pe, ls, &loads);
                let mm = Op::MultiplyMoving {
                    dst: on_chip(Memory::Psum, DType::Fp32, mt, (bank * 2048) as u64, nt),
                    src: on_chip(Memory::Sbuf, in_dtype, kt, mv_slot(s), nt),
                    acc: EngineAccumulationType::for_position(ki, k_tiles),
                    perf_mode: PerfMode::None,
                    tile_position: TilePosition::default(),
                    tile_size: TileSize::default(),
                };
                let done = bld.push(Engine::Pe, mm, &[]);
                slot_reader[s] = Some(done);
                last_mm = Some(done);
                i += 1;
            }
            let mut after: Vec<Done> = last_mm.into_iter().collect();
            after.append(&mut staging_stores[bank]);
            let copy = Op::TensorCopy {
                dst: on_chip(Memory::Sbuf, DType::Fp32, mt, out_slot(bank), nt),
                src: on_chip(Memory::Psum, DType::Fp32, mt, (bank * 2048) as u64, nt),
            };
            let copied = bld.push(Engine::Act, copy, &after);
            bank_copy[bank] = Some(copied);
            staging_stores[bank] = bld.transfer(
                true,
                DType::Fp32,
                DType::Fp32,
                c + ((m0 * n + n0) * 4) as u64,
                n,
                mt,
                nt,
                out_slot(bank),
                rows.max(32),
                &[copied],
            );
            g += 1;
        }
    }
    bld.program.sbuf_peak_bytes = out_slot(2);
    bld.program
}
