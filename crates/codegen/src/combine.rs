//! The matmul combine tier: folding K-split matmul sub-tiles into one PSUM accumulation
//! group. These are free functions, as in the seed, taking the running accumulation and the
//! new sub-tile.

use penguin::{EngineAccumulationType, InstTile, MatMultData, Memory, PerfMode, TilePosition, TileSize};

use crate::error::CodegenError;

/// One K sub-tile of a matmul: operands for contraction rows `[k_start, k_start + K)`.
#[derive(Clone, Debug, PartialEq)]
pub struct MatMultSubTile {
    /// The PSUM region the group accumulates into (`M` partitions x `N` fp32).
    pub dst: InstTile,
    /// Stationary operand, `K` partitions x `M`.
    pub stationary: InstTile,
    /// Moving operand, `K` partitions x `N`.
    pub moving: InstTile,
    /// First contraction row of this sub-tile within the group's K extent.
    pub k_start: u32,
    /// PE perf mode.
    pub perf_mode: PerfMode,
    /// PE array position.
    pub tile_position: TilePosition,
    /// PE array size.
    pub tile_size: TileSize,
}

/// The running state of one accumulation group.
#[derive(Clone, Debug, PartialEq)]
pub struct MatMultAccumulation {
    /// The PSUM region every sub-tile writes.
    pub dst: InstTile,
    /// Total contraction length of the group.
    pub k_total: u32,
    /// Running offset: contraction rows merged so far.
    pub k_offset: u32,
    /// `[start, end)` of every merged sub-tile, in order.
    pub slices: Vec<(u32, u32)>,
}

impl MatMultAccumulation {
    /// Open a group over `k_total` contraction rows into `dst`, which must be in PSUM.
    pub fn open(dst: InstTile, k_total: u32) -> Result<Self, CodegenError> {
        if dst.memory != Memory::Psum {
            return Err(CodegenError::ResultNotPsum);
        }
        Ok(MatMultAccumulation { dst, k_total, k_offset: 0, slices: Vec::new() })
    }

    /// Whether every contraction row has been merged (the group is stopped).
    pub fn is_complete(&self) -> bool {
        self.k_offset == self.k_total
    }
}

/// Merge the next K sub-tile into the accumulation (the seed's `combine_matmult_tiles`).
///
/// Computes where the sub-tile lands (`[start, start + K)`) and the new running offset,
/// checks that it writes the group's PSUM region, and returns its matmul with the flags of
/// its position: START first, ACCU in the middle, STOP last (`START | STOP` when alone).
pub fn combine_matmult_tiles(acc: &mut MatMultAccumulation, new: MatMultSubTile) -> Result<MatMultData, CodegenError> {
    if new.dst.memory != Memory::Psum {
        return Err(CodegenError::ResultNotPsum);
    }
    if new.dst != acc.dst {
        return Err(CodegenError::PsumRegionMismatch {
            expected: format!("{}{{{}}}", acc.dst.tensor, acc.dst.ap),
            found: format!("{}{{{}}}", new.dst.tensor, new.dst.ap),
        });
    }
    let k = new.stationary.partitions() * if new.perf_mode == PerfMode::DoubleRow { 2 } else { 1 };
    let (start, end) = (new.k_start, new.k_start.saturating_add(k));
    if start != acc.k_offset || end > acc.k_total || k == 0 {
        return Err(CodegenError::KSliceMismatch { start, end, expected: acc.k_offset, total: acc.k_total });
    }
    let mut flags = if start == 0 { EngineAccumulationType::START } else { EngineAccumulationType::ACCU };
    if end == acc.k_total {
        flags |= EngineAccumulationType::STOP;
    }
    acc.slices.push((start, end));
    acc.k_offset = end;
    Ok(MatMultData {
        dst: new.dst,
        stationary: new.stationary,
        moving: new.moving,
        perf_mode: new.perf_mode,
        tile_position: new.tile_position,
        tile_size: new.tile_size,
        acc: Some(flags),
    })
}

#[cfg(test)]
mod tests {
    use penguin::{AccessPattern, DType, TensorId};

    use super::*;

    fn tile(t: u32, memory: Memory, dtype: DType, parts: u32, free: u32) -> InstTile {
        InstTile { tensor: TensorId(t), memory, dtype, ap: AccessPattern::on_chip(0, parts, 0, free) }
    }

    fn sub(k_start: u32, k: u32, dst_mem: Memory) -> MatMultSubTile {
        MatMultSubTile {
            dst: tile(0, dst_mem, DType::Fp32, 64, 256),
            stationary: tile(1, Memory::Sbuf, DType::Bf16, k, 64),
            moving: tile(2, Memory::Sbuf, DType::Bf16, k, 256),
            k_start,
            perf_mode: PerfMode::None,
            tile_position: TilePosition::default(),
            tile_size: TileSize::default(),
        }
    }

    #[test]
    fn flags_follow_position_in_the_group() {
        let mut acc = MatMultAccumulation::open(sub(0, 1, Memory::Psum).dst, 300).unwrap();
        let a = combine_matmult_tiles(&mut acc, sub(0, 128, Memory::Psum)).unwrap();
        let b = combine_matmult_tiles(&mut acc, sub(128, 128, Memory::Psum)).unwrap();
        let c = combine_matmult_tiles(&mut acc, sub(256, 44, Memory::Psum)).unwrap();
        assert_eq!(a.acc, Some(EngineAccumulationType::START));
        assert_eq!(b.acc, Some(EngineAccumulationType::ACCU));
        assert_eq!(c.acc, Some(EngineAccumulationType::ACCU | EngineAccumulationType::STOP));
        assert_eq!(acc.slices, vec![(0, 128), (128, 256), (256, 300)]);
        assert!(acc.is_complete());
    }

    #[test]
    fn single_subtile_is_start_stop() {
        let mut acc = MatMultAccumulation::open(sub(0, 1, Memory::Psum).dst, 7).unwrap();
        let a = combine_matmult_tiles(&mut acc, sub(0, 7, Memory::Psum)).unwrap();
        assert_eq!(a.acc, Some(EngineAccumulationType::START | EngineAccumulationType::STOP));
    }

    #[test]
    fn result_in_sbuf_is_rejected_with_the_seed_message() {
        let err = MatMultAccumulation::open(sub(0, 1, Memory::Sbuf).dst, 128).unwrap_err();
        assert_eq!(err.to_string(), "Result buffer of matmult must be psum!");
        let mut acc = MatMultAccumulation::open(sub(0, 1, Memory::Psum).dst, 128).unwrap();
        let err = combine_matmult_tiles(&mut acc, sub(0, 128, Memory::Sbuf)).unwrap_err();
        assert_eq!(err, CodegenError::ResultNotPsum);
    }

    #[test]
    fn gaps_and_overruns_are_rejected() {
        let mut acc = MatMultAccumulation::open(sub(0, 1, Memory::Psum).dst, 200).unwrap();
        assert!(matches!(
            combine_matmult_tiles(&mut acc, sub(64, 64, Memory::Psum)),
            Err(CodegenError::KSliceMismatch { start: 64, expected: 0, .. })
        ));
        combine_matmult_tiles(&mut acc, sub(0, 128, Memory::Psum)).unwrap();
        assert!(matches!(
            combine_matmult_tiles(&mut acc, sub(128, 128, Memory::Psum)),
            Err(CodegenError::KSliceMismatch { end: 256, total: 200, .. })
        ));
    }
}
