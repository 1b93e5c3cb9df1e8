//! Hardware targets: their ISA geometry (SPEC section 2) and, in [`profile`], the timing
//! figures the planner's estimate and the cycle model read.

pub mod profile;

pub use profile::{Entry, HwProfile, KeyInfo, ProfileError, GEOMETRY, KEYS};

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// SBUF ("statebuf") partitions, the PE array height and width.
pub const NUM_PARTITIONS: u32 = 128;
/// PSUM banks per partition.
pub const PSUM_NUM_BANKS: u32 = 8;
/// PSUM bytes per bank per partition (512 fp32).
pub const PSUM_BANK_BYTES: u32 = 2048;
/// Number of DMA queues (engines) per core.
pub const NUM_DMA_QUEUES: u32 = 16;
/// DMA queues that lowering keeps for plain copies into HBM (stores): the last ones. The
/// other [`DMA_LOAD_QUEUES`] take every other plain copy (see [`crate::DmaQueueHint`]).
pub const DMA_STORE_QUEUES: u32 = 4;
/// DMA queues that take plain copies other than stores.
pub const DMA_LOAD_QUEUES: u32 = NUM_DMA_QUEUES - DMA_STORE_QUEUES;
/// Largest moving free size of one matmul (one PSUM bank of fp32).
pub const MAX_MOVING_FREE: u32 = 512;
/// Largest stationary free size of one matmul (PE array columns).
pub const MAX_STATIONARY_FREE: u32 = 128;

/// A NeuronCore generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// NeuronCore-v2.
    Trn1,
    /// NeuronCore-v3 ("Cayman").
    Trn2,
    /// NeuronCore-v4.
    Trn3,
}

/// Per-target ISA geometry and features from SPEC section 2 (timing lives in [`HwProfile`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TargetInfo {
    /// SBUF partitions.
    pub statebuf_num_partitions: u32,
    /// SBUF bytes per partition.
    pub statebuf_par_size_in_bytes: u32,
    /// PSUM banks per partition.
    pub psum_num_banks: u32,
    /// PSUM bytes per bank per partition.
    pub psum_par_size_in_bytes: u32,
    /// Whether `double_row` is supported.
    pub double_row: bool,
    /// Whether the OCP fp8e4m3fn type is accepted.
    pub fp8e4m3fn: bool,
    /// Whether 32-row PE tiles are allowed.
    pub pe_tile_32: bool,
    /// Whether the PE has the structured-sparse matmul (new in NeuronCore-v3, trn2 on).
    pub sparse_matmul: bool,
    /// Physical cores one logical NeuronCore can group (the LNC degree): 2 on trn2 and trn3,
    /// whose default is LNC=2; 1 on trn1, which has no logical cores (source S29).
    pub max_lnc: u32,
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 3] = [Target::Trn1, Target::Trn2, Target::Trn3];

    /// The target's facts.
    pub fn info(self) -> TargetInfo {
        let common = TargetInfo {
            statebuf_num_partitions: NUM_PARTITIONS,
            statebuf_par_size_in_bytes: 0,
            psum_num_banks: PSUM_NUM_BANKS,
            psum_par_size_in_bytes: PSUM_BANK_BYTES,
            double_row: false,
            fp8e4m3fn: false,
            pe_tile_32: false,
            sparse_matmul: false,
            max_lnc: 2,
        };
        match self {
            Target::Trn1 => TargetInfo { statebuf_par_size_in_bytes: 192 * 1024, max_lnc: 1, ..common },
            Target::Trn2 => {
                let (double_row, pe_tile_32, sparse_matmul) = (true, true, true);
                TargetInfo { statebuf_par_size_in_bytes: 224 * 1024, double_row, pe_tile_32, sparse_matmul, ..common }
            }
            Target::Trn3 => TargetInfo {
                statebuf_par_size_in_bytes: 256 * 1024,
                double_row: true,
                fp8e4m3fn: true,
                pe_tile_32: true,
                sparse_matmul: true,
                ..common
            },
        }
    }

    /// The built-in hardware profile of the target (see [`HwProfile`]).
    pub fn profile(self) -> HwProfile {
        HwProfile::builtin(self)
    }

    /// The text name (`trn1`, `trn2`, `trn3`).
    pub fn name(self) -> &'static str {
        match self {
            Target::Trn1 => "trn1",
            Target::Trn2 => "trn2",
            Target::Trn3 => "trn3",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for an unknown target name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown target `{0}` (expected trn1, trn2 or trn3)")]
pub struct UnknownTarget(pub String);

impl FromStr for Target {
    type Err = UnknownTarget;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Target::ALL.into_iter().find(|t| t.name() == s).ok_or_else(|| UnknownTarget(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbuf_capacity_per_target() {
        assert_eq!(Target::Trn1.info().statebuf_par_size_in_bytes, 196_608);
        assert_eq!(Target::Trn2.info().statebuf_par_size_in_bytes, 229_376);
        assert_eq!(Target::Trn3.info().statebuf_par_size_in_bytes, 262_144);
        assert!(!Target::Trn1.info().double_row);
        assert_eq!("trn2".parse::<Target>(), Ok(Target::Trn2));
    }
}
