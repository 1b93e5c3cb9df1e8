//! SBUF buffers of the loop nests: slot allocation, sizes and whether they fit (the
//! single-buffering decisions of the planner rest on these).

use penguin::{sparse_tag_words, DType, IrBuilder, NDTile};

use crate::error::CodegenError;
use crate::gemm::{M_TILE, N_TILE};

use super::{chunk_width, Operand, Planner, Slot};

impl<B: IrBuilder> Planner<'_, B> {
    /// Bytes per partition of each allocation [`Self::buffers`] makes, in its order.
    pub(super) fn buffer_sizes(
        &self,
        count: usize,
        chunks: usize,
        free: u64,
        dtype: DType,
        operand: Operand,
    ) -> Vec<u64> {
        let width = self.operand_width(free, operand) * chunks as u64;
        let tags = operand == Operand::Lhs && self.cfg.sparsity.is_some();
        let tag_words = u64::from(sparse_tag_words(free as u32)) * chunks as u64;
        let slot = [Some(width * u64::from(dtype.size_bytes())), tags.then_some(tag_words * 2)];
        (0..count).flat_map(|_| slot.into_iter().flatten()).collect()
    }

    /// Whether allocations of these bytes per partition, made in order after what is already
    /// allocated, fit SBUF (each allocation starts 64-byte aligned, as `alloc_sbuf` places it).
    pub(super) fn fits(&self, sizes: &[u64]) -> bool {
        let capacity = u64::from(self.cfg.target.info().statebuf_par_size_in_bytes);
        let mut next = capacity.saturating_sub(self.cg.sbuf_free_bytes());
        sizes.iter().all(|&bytes| {
            let fits = next + bytes <= capacity;
            next = (next + bytes).div_ceil(64) * 64;
            fits
        })
    }

    /// Whether blocks with these slot counts (A's and B's, then `extra` bytes) fit SBUF.
    pub(super) fn blocks_fit(
        &self,
        (lslots, rslots): (usize, usize),
        (lchunks, rchunks): (usize, usize),
        extra: u64,
    ) -> bool {
        let cfg = self.cfg;
        let mut sizes = self.buffer_sizes(lslots, lchunks, M_TILE, cfg.lhs_dtype, Operand::Lhs);
        sizes.extend(self.buffer_sizes(rslots, rchunks, N_TILE, cfg.rhs_dtype, Operand::Rhs));
        if extra > 0 {
            sizes.push(extra);
        }
        self.fits(&sizes)
    }

    /// Allocate `count` slots of `chunks` K chunks of `free` elements each (times the pack
    /// factor; a sparse moving chunk holds `CR` rows per partition), with an int16 twin of
    /// packed tags (`ceil(free / 4)` words per chunk) for sparse stationary buffers.
    pub(super) fn buffers(
        &mut self,
        name: &str,
        count: usize,
        chunks: usize,
        free: u64,
        dtype: DType,
        operand: Operand,
    ) -> Result<Vec<Slot>, CodegenError> {
        let width = self.operand_width(free, operand) * chunks as u64;
        let nd = NDTile { partitions: 128, free: vec![width as u32], dtype };
        let tag_words = sparse_tag_words(free as u32) * chunks as u32;
        (0..count)
            .map(|i| {
                let tensor = self.cg.alloc_sbuf(&format!("{name}{i}"), &nd)?;
                let tags = if operand == Operand::Lhs && self.cfg.sparsity.is_some() {
                    let t = NDTile { partitions: 128, free: vec![tag_words], dtype: DType::Int16 };
                    Some(self.cg.alloc_sbuf(&format!("{name}_tags{i}"), &t)?)
                } else {
                    None
                };
                Ok(Slot { tensor, offset: 0, tags, row_stride: 0 })
            })
            .collect()
    }

    pub(super) fn lhs_width(&self) -> i64 {
        chunk_width(M_TILE, self.pack)
    }

    pub(super) fn rhs_width(&self) -> i64 {
        chunk_width(N_TILE, self.pack) * i64::from(self.cr())
    }

    /// The sparse compression ratio `CR` (dense rows per moving partition), 1 when dense.
    pub(super) fn cr(&self) -> u32 {
        self.cfg.sparsity.map_or(1, |p| p.compression_ratio())
    }

    /// Elements per partition of one K chunk of an operand tile of `free` columns.
    fn operand_width(&self, free: u64, operand: Operand) -> u64 {
        let rows = if operand == Operand::Rhs { u64::from(self.cr()) } else { 1 };
        chunk_width(free, self.pack) as u64 * rows
    }
}
