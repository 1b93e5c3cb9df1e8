//! Indirect HBM tiles ([`IndirectMemrefTileND`]): their canonical form for
//! [`NeuronCodegen::combine_tiles`], and the DMA gather emitter that takes one.
//!
//! An indirect tile reads `rows` rows of an HBM tensor chosen by an int32 index tensor. Its
//! canonical [`InstTile`] is the *table* view a `dma_gather` names: the partition dimension
//! walks every row of the tensor that lies inside it (`[row_stride, table_rows]`, the bound an
//! index must stay below) and the free dimensions walk one row. Its logical shape, which
//! `combine_tiles` checks against the other operands, is `rows` partitions of a row each.

use penguin::{
    AccessPattern, DType, Dim, DmaGatherData, FreeDims, FunctionView, IndirectMemrefTileND, InstData, InstId, InstTile,
    IrBuilder, Memory, TensorData, Tile,
};

use crate::error::CodegenError;
use crate::neuron::NeuronCodegen;

/// The table view of an indirect tile over `table` (its tensor), and the gathered row count.
pub(crate) fn table_tile(t: &IndirectMemrefTileND, table: &TensorData) -> Result<InstTile, CodegenError> {
    let bad = |m: String| Err(CodegenError::BadOperand(format!("IndirectMemrefTileND on `{}`: {m}", table.name)));
    if table.memory != Memory::Hbm {
        return bad(format!("the indexed tensor is in {}, expected hbm", table.memory));
    }
    if t.row_stride <= 0 || t.offset < 0 {
        return bad(format!("row stride {} and offset {} must be positive", t.row_stride, t.offset));
    }
    let elems = table.shape.iter().try_fold(1i128, |a, &d| a.checked_mul(i128::from(d))).unwrap_or(i128::MAX);
    // One past the last element a row reads, relative to the row's start.
    let row_end: i128 = 1 + t.free.iter().map(|d| i128::from(d.stride) * (i128::from(d.num.max(1)) - 1)).sum::<i128>();
    let room = elems - i128::from(t.offset) - row_end;
    if room < 0 {
        return bad(format!("not even one row of {row_end} elements fits from offset {}", t.offset));
    }
    let table_rows = u32::try_from(room / i128::from(t.row_stride) + 1).unwrap_or(u32::MAX);
    let ap = AccessPattern {
        start_partition: 0,
        partitions: Dim { stride: t.row_stride, num: table_rows },
        offset: t.offset,
        free: t.free.as_slice().into(),
    };
    Ok(InstTile { tensor: t.tensor, memory: Memory::Hbm, dtype: table.dtype, ap: ap.canonicalize() })
}

/// The logical shape of an operand canonicalized as `c`: an indirect tile's gathered rows
/// and a row, any other tile's access-pattern shape.
pub(crate) fn logical_shape(t: &Tile, c: &InstTile) -> Vec<u64> {
    match t {
        Tile::IndirectMemrefND(i) => {
            std::iter::once(u64::from(i.rows)).chain(i.free.iter().map(|d| u64::from(d.num))).collect()
        }
        _ => c.ap.shape(),
    }
}

/// Partitions and elements per partition of a logical shape (what operands must agree on).
pub(crate) fn rows_and_elems(shape: &[u64]) -> (Option<u64>, u64) {
    (shape.first().copied(), shape.iter().skip(1).fold(1u64, |a, &d| a.saturating_mul(d)))
}

/// The index tile of an indirect tile: `rows` int32 entries, one per partition.
fn index_tile(t: &IndirectMemrefTileND, index: &TensorData) -> Result<InstTile, CodegenError> {
    if index.dtype != DType::Int32 {
        return Err(CodegenError::BadOperand(format!(
            "the index tensor `{}` of an IndirectMemrefTileND is {}, expected int32",
            index.name, index.dtype
        )));
    }
    let ap = AccessPattern {
        start_partition: 0,
        partitions: Dim { stride: 1, num: t.rows },
        offset: 0,
        free: FreeDims::new(),
    };
    Ok(InstTile { tensor: t.index, memory: index.memory, dtype: DType::Int32, ap: ap.canonicalize() })
}

impl<B: IrBuilder> NeuronCodegen<B> {
    /// Emit a DMA gather `dst[i, :] = table[index[i], :]` from an indirect tile: `dst` and the
    /// indirect tile go through [`Self::combine_tiles`] like any operand pair (so their
    /// shapes are checked against each other), then the gather is processed and inserted.
    pub fn dma_gather_inst(&mut self, dst: &Tile, src: &IndirectMemrefTileND) -> Result<InstId, CodegenError> {
        let c = self.combine_tiles(&[dst.clone(), Tile::IndirectMemrefND(src.clone())])?;
        let index = self
            .view()
            .tensor(src.index)
            .ok_or_else(|| CodegenError::BadOperand(format!("index tensor {} does not exist", src.index)))?;
        let index = index_tile(src, index)?;
        let [dst, table] = [c[0].clone(), c[1].clone()];
        self.process_new_neuroninst(InstData::DmaGather(DmaGatherData { dst, table, index, skip: false }))
    }
}

#[cfg(test)]
mod tests {
    use penguin::{DataTile, GeneratedBuilder, NDTile, Target};

    use super::*;

    /// The embedding lookup of `examples/gather.pir`, up to the gather.
    fn lookup() -> (NeuronCodegen<GeneratedBuilder>, Tile, IndirectMemrefTileND) {
        let mut cg = NeuronCodegen::new(GeneratedBuilder::new("gather"), Target::Trn2, "gather");
        let table = cg.add_input("table", vec![1000, 64], DType::Fp32).unwrap();
        let idx = cg.add_input("idx", vec![128], DType::Int32).unwrap();
        cg.add_output("rows", vec![128, 64], DType::Fp32).unwrap();
        let rows = cg.alloc_sbuf("rows_sb", &NDTile { partitions: 128, free: vec![64], dtype: DType::Fp32 }).unwrap();
        let dst = Tile::Data(DataTile { tensor: rows, ap: AccessPattern::on_chip(0, 128, 0, 64) });
        let src = IndirectMemrefTileND {
            tensor: table,
            index: idx,
            offset: 0,
            row_stride: 64,
            rows: 128,
            free: vec![Dim { stride: 1, num: 64 }],
        };
        (cg, dst, src)
    }

    #[test]
    fn an_indirect_tile_becomes_the_gather_of_the_example() {
        let (mut cg, dst, src) = lookup();
        let id = cg.dma_gather_inst(&dst, &src).unwrap();
        let example = penguin::parse::parse(include_str!("../../../examples/gather.pir")).unwrap();
        assert_eq!(cg.function().inst(id), example.layout().first().and_then(|&i| example.inst(i)));
        let Some(InstData::DmaGather(g)) = cg.function().inst(id) else { panic!("not a gather") };
        assert_eq!(g.table.ap.partitions, Dim { stride: 64, num: 1000 });
    }

    #[test]
    fn combine_tiles_checks_an_indirect_tile_like_any_operand() {
        let (mut cg, dst, mut src) = lookup();
        src.rows = 64;
        let e = cg.combine_tiles(&[dst.clone(), Tile::IndirectMemrefND(src.clone())]).unwrap_err();
        assert_eq!(e, CodegenError::IncompatibleTiles { a: vec![128, 64], b: vec![64, 64] });
        src.rows = 128;
        src.offset = 1000 * 64 - 63;
        let e = cg.combine_tiles(&[Tile::IndirectMemrefND(src.clone())]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "IndirectMemrefTileND on `table`: not even one row of 64 elements fits from offset 63937"
        );
        src.offset = 64;
        // Rows 1..1000 of the table: 999 rows are addressable.
        let c = cg.combine_tiles(&[Tile::IndirectMemrefND(src.clone())]).unwrap();
        assert_eq!(c[0].ap.partitions, Dim { stride: 64, num: 999 });
        src.index = src.tensor;
        let e = cg.dma_gather_inst(&dst, &src).unwrap_err();
        assert_eq!(e.to_string(), "the index tensor `table` of an IndirectMemrefTileND is fp32, expected int32");
    }
}
