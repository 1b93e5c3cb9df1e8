//! The matmul combine tier: folding K-split matmul sub-tiles into one PSUM accumulation
//! group. These are free functions, as in the seed, each taking the running accumulation and
//! the new sub-tile, and sharing one K-accumulate skeleton ([`accumulate`]): compute the
//! sub-tile's slice `[start, start + k)` of the group's K extent, check that it continues the
//! running offset and writes the group's PSUM region, advance the offset, and give the
//! sub-tile the flags of its position (START first, ACCU in the middle, STOP last).

use penguin::{
    DType, EngineAccumulationType, InstTile, MatMultData, MatMultSparseData, Memory, PerfMode, SparsityPattern,
    TilePosition, TileSize,
};

use crate::error::CodegenError;

/// One K sub-tile of a dense or double-row matmul.
#[derive(Clone, Debug, PartialEq)]
pub struct MatMultSubTile {
    /// The PSUM region the group accumulates into (`M` partitions x `N` fp32).
    pub dst: InstTile,
    /// Stationary operand: `K` partitions x `M`, or `[P, 2, M]` in double row.
    pub stationary: InstTile,
    /// Moving operand: `K` partitions x `N`, or `[P, 2, N]` in double row.
    pub moving: InstTile,
    /// First contraction row of this sub-tile within the group's K extent.
    pub k_start: u32,
    /// Contraction rows this sub-tile covers (`P`, or `2 * P` in double row).
    pub k_len: u32,
    /// PE perf mode.
    pub perf_mode: PerfMode,
    /// PE array position.
    pub tile_position: TilePosition,
    /// PE array size.
    pub tile_size: TileSize,
}

/// One K sub-tile of a structured-sparse matmul. Position and size come as tuples (slices),
/// as an emitter receives them, and must have two entries.
#[derive(Clone, Debug, PartialEq)]
pub struct MatMultSparseSubTile {
    /// The PSUM region the group accumulates into.
    pub dst: InstTile,
    /// Compressed stationary operand, `K'` partitions x `M` (see `penguin::MatMultSparseData`).
    pub stationary: InstTile,
    /// Moving operand, `K'` partitions x `[CR, N]`: `K' x CR` dense contraction rows.
    pub moving: InstTile,
    /// Packed 4-bit tags, `K'` partitions x `ceil(M / 4)` int16 words.
    pub tags: InstTile,
    /// The sparsity pattern.
    pub pattern: SparsityPattern,
    /// First contraction row (of the dense K) of this sub-tile.
    pub k_start: u32,
    /// `(row, column)` on the PE array.
    pub tile_position: Vec<u32>,
    /// `(rows, columns)` on the PE array.
    pub tile_size: Vec<u32>,
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
    /// Contraction rows per partition the group was opened for (1 dense, 2 double row).
    pub pack_factor: u32,
    /// `[start, end)` of every merged sub-tile, in order.
    pub slices: Vec<(u32, u32)>,
}

impl MatMultAccumulation {
    /// Open a dense (or sparse) group over `k_total` contraction rows into `dst` (in PSUM).
    pub fn open(dst: InstTile, k_total: u32) -> Result<Self, CodegenError> {
        if dst.memory != Memory::Psum {
            return Err(CodegenError::ResultNotPsum);
        }
        Ok(MatMultAccumulation { dst, k_total, k_offset: 0, pack_factor: 1, slices: Vec::new() })
    }

    /// Open a double-row group: two contraction rows per partition.
    pub fn open_double_row(dst: InstTile, k_total: u32) -> Result<Self, CodegenError> {
        Ok(MatMultAccumulation { pack_factor: 2, ..Self::open(dst, k_total)? })
    }

    /// Whether every contraction row has been merged (the group is stopped).
    pub fn is_complete(&self) -> bool {
        self.k_offset == self.k_total
    }
}

/// The K-accumulate skeleton shared by the three matmul combines.
fn accumulate(
    acc: &mut MatMultAccumulation,
    dst: &InstTile,
    k_start: u32,
    k_len: u32,
) -> Result<EngineAccumulationType, CodegenError> {
    if dst.memory != Memory::Psum {
        return Err(CodegenError::ResultNotPsum);
    }
    if *dst != acc.dst {
        return Err(CodegenError::PsumRegionMismatch {
            expected: format!("{}{{{}}}", acc.dst.tensor, acc.dst.ap),
            found: format!("{}{{{}}}", dst.tensor, dst.ap),
        });
    }
    let end = k_start.saturating_add(k_len);
    if k_start != acc.k_offset || end > acc.k_total || k_len == 0 {
        return Err(CodegenError::KSliceMismatch { start: k_start, end, expected: acc.k_offset, total: acc.k_total });
    }
    let mut flags = if k_start == 0 { EngineAccumulationType::START } else { EngineAccumulationType::ACCU };
    if end == acc.k_total {
        flags |= EngineAccumulationType::STOP;
    }
    acc.slices.push((k_start, end));
    acc.k_offset = end;
    Ok(flags)
}

/// Merge the next K sub-tile into the accumulation (the seed's `combine_matmult_tiles`).
///
/// Computes where the sub-tile lands (`[start, start + K)`) and the new running offset,
/// checks that it writes the group's PSUM region, and returns its matmul with the flags of
/// its position: START first, ACCU in the middle, STOP last (`START | STOP` when alone).
pub fn combine_matmult_tiles(acc: &mut MatMultAccumulation, new: MatMultSubTile) -> Result<MatMultData, CodegenError> {
    if new.perf_mode == PerfMode::DoubleRow {
        return combine_trn2_double_row_matmult_tiles(acc, new);
    }
    if new.k_len != new.stationary.partitions() {
        return Err(CodegenError::KSliceMismatch {
            start: new.k_start,
            end: new.k_start.saturating_add(new.k_len),
            expected: new.k_start,
            total: new.stationary.partitions(),
        });
    }
    let flags = accumulate(acc, &new.dst, new.k_start, new.k_len)?;
    Ok(into_matmul(new, flags))
}

fn into_matmul(new: MatMultSubTile, flags: EngineAccumulationType) -> MatMultData {
    MatMultData {
        dst: new.dst,
        stationary: new.stationary,
        moving: new.moving,
        perf_mode: new.perf_mode,
        tile_position: new.tile_position,
        tile_size: new.tile_size,
        acc: Some(flags),
    }
}

/// Message: an operand's pack axis is not 2 (seed text).
pub const DOUBLE_ROW_FIRST_F_DIM: &str = "first F dim of LHS and RHS of the double_row matmult must be 2";
/// Message: the group's pack factor is not 2 (seed text).
pub const DOUBLE_ROW_LAST_DIM: &str = "The last dimension of double_row matmult must have size of 2";
/// Message: the sub-tile's contraction view `[rows per partition, partitions]` does not start
/// with 2 (seed text).
pub const DOUBLE_ROW_FIRST_DIM: &str = "The first dimension of Cayman double_row matmult must have size of 2";
/// Message: a double-row operand is not fp8 (seed text).
pub const DOUBLE_ROW_FP8_ONLY: &str = "The double_row matmult only support fp8e4m3 and fp8e5m2";
/// Message: a uint8 operand is paired with a non-uint8 one (seed text).
pub const DOUBLE_ROW_UINT8_ONLY: &str = "The double_row matmult only support uint8";

/// Merge a double-row K sub-tile (the seed's `combine_trn2_double_row_matmult_tiles`).
///
/// Layout: each operand is `[P, 2, F]`: contraction rows `k` and `k + P` of the sub-tile
/// share partition `k` (with `P = 128` for a full 256-row chunk). The pack factor 2 is
/// enforced four times: the first free dimension of the stationary (LHS) and moving (RHS)
/// operands, the group's pack factor (the last dimension of its `[K / 2, 2]` contraction
/// view), and the sub-tile's contraction view `[2, P]`. Operands are fp8e4m3 / fp8e5m2 (in
/// any mix) or both uint8.
pub fn combine_trn2_double_row_matmult_tiles(
    acc: &mut MatMultAccumulation,
    new: MatMultSubTile,
) -> Result<MatMultData, CodegenError> {
    let pack = |t: &InstTile| t.ap.free.first().map_or(0, |d| d.num);
    if pack(&new.stationary) != 2 || pack(&new.moving) != 2 {
        return Err(CodegenError::DoubleRow(DOUBLE_ROW_FIRST_F_DIM));
    }
    if acc.pack_factor != 2 {
        return Err(CodegenError::DoubleRow(DOUBLE_ROW_LAST_DIM));
    }
    let partitions = new.stationary.partitions();
    if partitions == 0 || new.k_len.div_ceil(partitions) != 2 {
        return Err(CodegenError::DoubleRow(DOUBLE_ROW_FIRST_DIM));
    }
    check_double_row_dtypes(new.stationary.dtype, new.moving.dtype)?;
    let flags = accumulate(acc, &new.dst, new.k_start, new.k_len)?;
    Ok(into_matmul(new, flags))
}

/// The dtype rule of double row: fp8e4m3/fp8e5m2 in any mix, or uint8 with uint8.
pub fn check_double_row_dtypes(lhs: DType, rhs: DType) -> Result<(), CodegenError> {
    let fp8 = |d: DType| matches!(d, DType::Fp8e4m3 | DType::Fp8e5m2);
    match (lhs, rhs) {
        (DType::Uint8, DType::Uint8) => Ok(()),
        (DType::Uint8, _) | (_, DType::Uint8) => Err(CodegenError::DoubleRow(DOUBLE_ROW_UINT8_ONLY)),
        (l, r) if fp8(l) && fp8(r) => Ok(()),
        _ => Err(CodegenError::DoubleRow(DOUBLE_ROW_FP8_ONLY)),
    }
}

/// Message: sparse tile position is not a pair (seed text).
pub const SPARSE_POSITION_2D: &str = "matmult_sparse tile_position must be a 2D tuple";
/// Message: sparse tile size is not a pair (seed text).
pub const SPARSE_SIZE_2D: &str = "matmult_sparse tile_size must be a 2D tuple";
/// Message: sparse matmul with column tiling (seed text).
pub const SPARSE_NO_COLUMN_TILING: &str = "matmult_sparse cannot work with column tiling";

/// Merge a structured-sparse K sub-tile (the seed's `combine_sparse_matmult_tiles`),
/// carrying its int16 tag tensor through the merge. The sub-tile covers `K' x CR` dense
/// contraction rows for `K'` compressed stationary partitions (`CR` the pattern's
/// compression ratio), and its tags are `ceil(M / 4)` words per partition.
pub fn combine_sparse_matmult_tiles(
    acc: &mut MatMultAccumulation,
    new: MatMultSparseSubTile,
) -> Result<MatMultSparseData, CodegenError> {
    let [row, col] = new.tile_position[..] else {
        return Err(CodegenError::Sparse(SPARSE_POSITION_2D));
    };
    let [rows, cols] = new.tile_size[..] else {
        return Err(CodegenError::Sparse(SPARSE_SIZE_2D));
    };
    if col != 0 || cols != penguin::target::NUM_PARTITIONS {
        return Err(CodegenError::Sparse(SPARSE_NO_COLUMN_TILING));
    }
    if !new.pattern.is_supported() {
        return Err(CodegenError::BadGemm(format!("sparsity pattern {} is not supported", new.pattern)));
    }
    let kc = new.stationary.partitions();
    let k_len = kc * new.pattern.compression_ratio();
    let words = new.stationary.free_elems().div_ceil(u64::from(penguin::SPARSE_TAGS_PER_WORD));
    if new.tags.partitions() != kc || new.tags.free_elems() != words {
        return Err(CodegenError::IncompatibleTiles { a: new.stationary.ap.shape(), b: new.tags.ap.shape() });
    }
    let flags = accumulate(acc, &new.dst, new.k_start, k_len)?;
    Ok(MatMultSparseData {
        dst: new.dst,
        stationary: new.stationary,
        moving: new.moving,
        tags: new.tags,
        pattern: new.pattern,
        tile_position: TilePosition { row, col },
        tile_size: TileSize { rows, cols },
        acc: Some(flags),
    })
}

#[cfg(test)]
mod tests {
    use penguin::{AccessPattern, Dim, TensorId};

    use super::*;

    fn tile(t: u32, memory: Memory, dtype: DType, parts: u32, free: u32) -> InstTile {
        InstTile { tensor: TensorId(t), memory, dtype, ap: AccessPattern::on_chip(0, parts, 0, free) }
    }

    fn packed(t: u32, dtype: DType, parts: u32, pack: u32, free: u32) -> InstTile {
        let ap = AccessPattern {
            start_partition: 0,
            partitions: Dim::new(1, parts),
            offset: 0,
            free: vec![Dim::new(i64::from(free), pack), Dim::new(1, free)].into(),
        };
        InstTile { tensor: TensorId(t), memory: Memory::Sbuf, dtype, ap }
    }

    fn sub(k_start: u32, k: u32, dst_mem: Memory) -> MatMultSubTile {
        MatMultSubTile {
            dst: tile(0, dst_mem, DType::Fp32, 64, 256),
            stationary: tile(1, Memory::Sbuf, DType::Bf16, k, 64),
            moving: tile(2, Memory::Sbuf, DType::Bf16, k, 256),
            k_start,
            k_len: k,
            perf_mode: PerfMode::None,
            tile_position: TilePosition::default(),
            tile_size: TileSize::default(),
        }
    }

    fn dr(k_start: u32, parts: u32, lhs: DType, rhs: DType) -> MatMultSubTile {
        MatMultSubTile {
            dst: tile(0, Memory::Psum, DType::Fp32, 64, 256),
            stationary: packed(1, lhs, parts, 2, 64),
            moving: packed(2, rhs, parts, 2, 256),
            k_start,
            k_len: 2 * parts,
            perf_mode: PerfMode::DoubleRow,
            tile_position: TilePosition::default(),
            tile_size: TileSize::default(),
        }
    }

    fn psum() -> InstTile {
        sub(0, 1, Memory::Psum).dst
    }

    #[test]
    fn flags_follow_position_in_the_group() {
        let mut acc = MatMultAccumulation::open(psum(), 300).unwrap();
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
        let mut acc = MatMultAccumulation::open(psum(), 7).unwrap();
        let a = combine_matmult_tiles(&mut acc, sub(0, 7, Memory::Psum)).unwrap();
        assert_eq!(a.acc, Some(EngineAccumulationType::START | EngineAccumulationType::STOP));
    }

    #[test]
    fn result_in_sbuf_is_rejected_with_the_seed_message() {
        let err = MatMultAccumulation::open(sub(0, 1, Memory::Sbuf).dst, 128).unwrap_err();
        assert_eq!(err.to_string(), "Result buffer of matmult must be psum!");
        let mut acc = MatMultAccumulation::open(psum(), 128).unwrap();
        let err = combine_matmult_tiles(&mut acc, sub(0, 128, Memory::Sbuf)).unwrap_err();
        assert_eq!(err, CodegenError::ResultNotPsum);
    }

    #[test]
    fn gaps_and_overruns_are_rejected() {
        let mut acc = MatMultAccumulation::open(psum(), 200).unwrap();
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

    #[test]
    fn double_row_accumulates_256_rows_per_pass() {
        let mut acc = MatMultAccumulation::open_double_row(psum(), 300).unwrap();
        let a = combine_trn2_double_row_matmult_tiles(&mut acc, dr(0, 128, DType::Fp8e4m3, DType::Fp8e5m2)).unwrap();
        let b = combine_trn2_double_row_matmult_tiles(&mut acc, dr(256, 22, DType::Fp8e4m3, DType::Fp8e4m3)).unwrap();
        assert_eq!(a.acc, Some(EngineAccumulationType::START));
        assert_eq!(b.acc, Some(EngineAccumulationType::ACCU | EngineAccumulationType::STOP));
        assert_eq!(acc.slices, vec![(0, 256), (256, 300)]);
    }

    #[test]
    fn double_row_seed_messages() {
        let msg =
            |acc: &mut MatMultAccumulation, t| combine_trn2_double_row_matmult_tiles(acc, t).unwrap_err().to_string();
        let fp8 = DType::Fp8e4m3;
        let mut acc = MatMultAccumulation::open_double_row(psum(), 256).unwrap();
        let mut t = dr(0, 128, fp8, fp8);
        t.moving = packed(2, fp8, 128, 3, 256);
        assert_eq!(msg(&mut acc, t), DOUBLE_ROW_FIRST_F_DIM);
        let mut dense = MatMultAccumulation::open(psum(), 256).unwrap();
        assert_eq!(msg(&mut dense, dr(0, 128, fp8, fp8)), DOUBLE_ROW_LAST_DIM);
        let mut t = dr(0, 128, fp8, fp8);
        t.k_len = 128;
        assert_eq!(msg(&mut acc, t), DOUBLE_ROW_FIRST_DIM);
        assert_eq!(msg(&mut acc, dr(0, 128, DType::Bf16, fp8)), DOUBLE_ROW_FP8_ONLY);
        assert_eq!(msg(&mut acc, dr(0, 128, DType::Fp8e4m3fn, fp8)), DOUBLE_ROW_FP8_ONLY);
        assert_eq!(msg(&mut acc, dr(0, 128, DType::Uint8, fp8)), DOUBLE_ROW_UINT8_ONLY);
        assert!(combine_trn2_double_row_matmult_tiles(&mut acc, dr(0, 128, DType::Uint8, DType::Uint8)).is_ok());
    }

    fn sparse(k_start: u32, kc: u32, pos: Vec<u32>, size: Vec<u32>) -> MatMultSparseSubTile {
        MatMultSparseSubTile {
            dst: psum(),
            stationary: tile(1, Memory::Sbuf, DType::Bf16, kc, 64),
            moving: tile(2, Memory::Sbuf, DType::Bf16, kc, 2 * 256),
            tags: tile(3, Memory::Sbuf, DType::Int16, kc, 16),
            pattern: SparsityPattern { n: 2, m: 4 },
            k_start,
            tile_position: pos,
            tile_size: size,
        }
    }

    #[test]
    fn sparse_subtiles_cover_dense_k_and_carry_tags() {
        let mut acc = MatMultAccumulation::open(psum(), 384).unwrap();
        let a = combine_sparse_matmult_tiles(&mut acc, sparse(0, 64, vec![0, 0], vec![128, 128])).unwrap();
        let b = combine_sparse_matmult_tiles(&mut acc, sparse(128, 128, vec![0, 0], vec![128, 128])).unwrap();
        assert_eq!(a.acc, Some(EngineAccumulationType::START));
        assert_eq!(b.acc, Some(EngineAccumulationType::ACCU | EngineAccumulationType::STOP));
        assert_eq!(b.tags.tensor, TensorId(3));
        assert_eq!(acc.slices, vec![(0, 128), (128, 384)]);
    }

    #[test]
    fn sparse_tags_are_a_quarter_of_the_stationary_width() {
        let mut acc = MatMultAccumulation::open(psum(), 256).unwrap();
        let mut t = sparse(0, 128, vec![0, 0], vec![128, 128]);
        t.tags = tile(3, Memory::Sbuf, DType::Int16, 128, 64);
        assert!(matches!(combine_sparse_matmult_tiles(&mut acc, t), Err(CodegenError::IncompatibleTiles { .. })));
        // 4:16 compresses by 4: 128 kept rows stand for 512 dense ones.
        let mut t = sparse(0, 128, vec![0, 0], vec![128, 128]);
        t.pattern = SparsityPattern { n: 4, m: 16 };
        let mut acc = MatMultAccumulation::open(psum(), 512).unwrap();
        let mm = combine_sparse_matmult_tiles(&mut acc, t).unwrap();
        assert_eq!(mm.acc, Some(EngineAccumulationType::START | EngineAccumulationType::STOP));
        assert_eq!(acc.slices, vec![(0, 512)]);
    }

    #[test]
    fn sparse_seed_messages() {
        let mut acc = MatMultAccumulation::open(psum(), 128).unwrap();
        let msg = |acc: &mut MatMultAccumulation, t| combine_sparse_matmult_tiles(acc, t).unwrap_err().to_string();
        assert_eq!(msg(&mut acc, sparse(0, 64, vec![0], vec![128, 128])), SPARSE_POSITION_2D);
        assert_eq!(msg(&mut acc, sparse(0, 64, vec![0, 0], vec![128, 128, 1])), SPARSE_SIZE_2D);
        assert_eq!(msg(&mut acc, sparse(0, 64, vec![0, 64], vec![128, 64])), SPARSE_NO_COLUMN_TILING);
    }
}
