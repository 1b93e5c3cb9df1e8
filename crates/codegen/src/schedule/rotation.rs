//! The rotations of a loop nest (PSUM banks, evacuation engines and buffers, DMA queues, PE
//! transpose slots), each a function of a position inside the loop it lives in, never a
//! count over the whole kernel.
//!
//! Why: a rotation counted over the kernel changes phase from one iteration of a loop to the
//! next whenever the iteration's count is not a multiple of the rotation's period (a step
//! whose resident block is not reloaded, an edge step with fewer tiles, 64 K chunks over 12
//! queues), so the instruction streams never repeat and do not roll into loops. Every rule
//! here repeats after at most two steps of the step loop, or after [`K_PERIOD`] K chunks.
//!
//! The rules, for a schedule whose full step holds `G` output tiles (accumulation groups):
//! - **group slot** `q = pos + G * (step mod 2)`, where `pos` is the tile's place in its step
//!   (`m tile * n tiles per full block + n tile`, so an edge step with fewer tiles leaves the
//!   phase of the steps after it alone) and `step` the step's index in the nest.
//! - **PSUM bank**: `q mod b`, `b` the largest number of banks available (8, or 7 beside the
//!   PE-transpose bank) that divides `2G`: a step's groups take banks the previous step's
//!   groups do not (when `2G <= b`), so the PE never waits for the evacuations of the
//!   previous step; with `G = 1` two banks alternate. The banks are one PSUM tensor, bank `j`
//!   at element offset `512 j` of each partition, so a group's bank is an operand offset (a
//!   loop parameter) and the output tiles of a step roll into loops.
//! - **evacuation engine** DVE for even `q`, ACT for odd (DVE first: ACT also takes a third
//!   of the PE transposes' copies, which start first); **output buffer** `out[q mod 2]`.
//! - **loads**: the `n`-th load of K chunk `c` (counting the tiles and double-row halves of
//!   one chunk) gets hint `c * L + n` (`L` loads per chunk), plus one for B, so a chunk's A
//!   and B loads go to neighbouring queues. (Not half the queues apart: chunks `c` and
//!   `c + 6` would then wait on the same two queues with A's and B's roles swapped, and the
//!   K loop would roll with a period of 6 chunks whose semaphore steps change from step to
//!   step.) A casting load (an offloaded op spread over all 16 queues) gets
//!   `2 * (c * L + n)` for A and that plus one for B. The `j`-th natural-layout stripe of A
//!   for PE transposes gets `j mod 2B` (`B` m tiles per block: two blocks' loads take turns),
//!   blocked-mnk's natural K block of tile `t` gets `t`.
//! - **stores**: hint `q` (blocked-mnk: the tile's place in the result block).
//! - **PE transposes** of a stripe: PSUM slot and copy engine from the transpose's place in
//!   the stripe (`chunk * pack + half`), period 12.
//!
//! The *K period*: every rotation along K repeats after [`K_PERIOD`] chunks (12 with plain
//! loads: 12 load queues, 4 transpose slots x 3 copy engines; casting loads repeat after 8 or
//! fewer), so GEMMs whose K differs by a multiple of `K_PERIOD` chunks (24 x 128 rows, x 256
//! in double row) have rolled programs of the same structure; so have GEMMs whose M or N
//! differ by a whole number of block pairs (two steps of the step loop).

use penguin::{ComputeEngine, DmaQueueHint, IrBuilder, TensorId};

use crate::gemm::KChunk;

use super::{Operand, Planner};

/// K chunks after which every rotation along K repeats (see the module doc).
pub const K_PERIOD: usize = 24;

/// Where an accumulation group sits in its loop nest: its step and its place in the step.
#[derive(Clone, Copy, Debug)]
pub(super) struct GroupAt {
    /// The step's index in the step loop (only its parity matters).
    pub(super) step: usize,
    /// The group's place in its step, `< G`.
    pub(super) pos: usize,
}

/// Where the load of one tile of one K chunk sits: tile `t` of the `tiles` loaded for the
/// chunk, in a step of parity `turn` (naive: which natural buffer a PE-transposed chunk
/// goes through, as the stationary slots alternate).
#[derive(Clone, Copy, Debug)]
pub(super) struct TileLoad {
    pub(super) t: usize,
    pub(super) tiles: usize,
    pub(super) turn: usize,
}

/// Which DMA transfer a hint is for.
#[derive(Clone, Copy, Debug)]
pub(super) enum Transfer {
    /// Load number `n` (see the module doc) of an operand.
    Load(Operand, u64),
    /// A store from group slot (or result tile) `n`.
    Store(u64),
}

impl<B: IrBuilder> Planner<'_, B> {
    /// Set the output tiles of a full step; the PSUM banks in rotation follow.
    pub(super) fn set_step_groups(&mut self, groups: usize) {
        let g = groups.max(1);
        self.step_groups = g;
        let available = self.psum_banks.len().max(1);
        self.rotating_banks = (1..=available).rev().find(|b| (2 * g).is_multiple_of(*b)).unwrap_or(1);
    }

    /// The group slot `q` of a group (see the module doc).
    pub(super) fn group_slot(&self, at: GroupAt) -> usize {
        at.pos + self.step_groups * (at.step % 2)
    }

    /// The PSUM bank of a group: the tensor and the bank's offset in it.
    pub(super) fn group_bank(&self, at: GroupAt) -> (TensorId, i64) {
        let q = self.group_slot(at) % self.rotating_banks.max(1);
        self.psum_banks[q.min(self.psum_banks.len() - 1)]
    }

    /// The engine that evacuates (or first copies out) a group.
    pub(super) fn evac_engine(&self, at: GroupAt) -> ComputeEngine {
        if self.group_slot(at).is_multiple_of(2) {
            ComputeEngine::Dve
        } else {
            ComputeEngine::Act
        }
    }

    /// The index of a K chunk in the GEMM's chunks.
    pub(super) fn chunk_index(&self, chunk: KChunk) -> u64 {
        let len = self.chunks.first().map_or(1, |c| u64::from(c.len).max(1));
        chunk.k0 / len
    }

    /// The queue hint of a transfer; `cast` when it is an offloaded (spread) cast.
    pub(super) fn queue_hint(&self, transfer: Transfer, cast: bool) -> DmaQueueHint {
        // Not reduced modulo the queues (lowering does that): a hint affine in the chunk index
        // is a Penguin loop parameter that steps with the K loop.
        let h = match (transfer, cast) {
            (Transfer::Store(n), _) | (Transfer::Load(Operand::Lhs, n), false) => n,
            (Transfer::Load(Operand::Rhs, n), false) => n + 1,
            (Transfer::Load(Operand::Lhs, n), true) => 2 * n,
            (Transfer::Load(Operand::Rhs, n), true) => 2 * n + 1,
        };
        // 3 * 2^30 fits a u32 and is a multiple of 12, 16 and 4: wrapping there moves no queue.
        DmaQueueHint((h % (3 << 30)) as u32)
    }

    /// Loads of one tile of one K chunk: one per double-row half, the stationary values and
    /// their tags when sparse.
    pub(super) fn loads_per_tile(&self, operand: Operand) -> u64 {
        if self.cfg.sparsity.is_some() {
            if operand == Operand::Lhs {
                2
            } else {
                1
            }
        } else {
            u64::from(self.pack)
        }
    }
}
