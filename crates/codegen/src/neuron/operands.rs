//! Operand normalization of `process_new_neuroninst`: each instruction kind's operands
//! canonicalized in place (combined where they move element for element), with the matmul
//! family's PSUM, PE-tile and accumulation-group checks.

use penguin::{InstData, IrBuilder, Memory};

use super::NeuronCodegen;
use crate::error::CodegenError;

impl<B: IrBuilder> NeuronCodegen<B> {
    /// Normalize `inst`'s operands for insertion (see the module doc).
    pub(super) fn normalize_operands(&mut self, inst: &mut InstData) -> Result<(), CodegenError> {
        // The operands are already `InstTile`s: they are canonicalized in place, with the
        // checks and errors of `combine_tiles` over `Tile::Inst` operands (the group arms) or
        // of canonicalizing each alone, without copying them.
        match inst {
            InstData::MatMult(m) => {
                if m.dst.memory != Memory::Psum {
                    return Err(CodegenError::ResultNotPsum);
                }
                self.check_pe_tile(m.tile_position, m.tile_size)?;
                self.combine_in_place(&mut [&mut m.dst])?;
                self.combine_in_place(&mut [&mut m.stationary])?;
                self.combine_in_place(&mut [&mut m.moving])?;
                if m.stationary.partitions() != m.moving.partitions() {
                    return Err(CodegenError::IncompatibleTiles { a: m.stationary.ap.shape(), b: m.moving.ap.shape() });
                }
                self.track_psum_group(&m.dst, m.flags())?;
                if m.perf_mode == penguin::PerfMode::DoubleRow {
                    // Keep the pack axis visible: double-row operands are [P, 2, F].
                    for t in [&mut m.stationary, &mut m.moving] {
                        t.ap.free =
                            t.ap.split_outer(2)
                                .ok_or(CodegenError::DoubleRow(crate::combine::DOUBLE_ROW_FIRST_F_DIM))?
                                .into();
                    }
                }
                self.stats.matmuls += 1;
            }
            InstData::DmaCopy(d) => self.combine_in_place(&mut [&mut d.dst, &mut d.src])?,
            InstData::TensorCopy(c) => self.combine_in_place(&mut [&mut c.dst, &mut c.src])?,
            InstData::Memset(m) => self.combine_in_place(&mut [&mut m.dst])?,
            InstData::MatMultSparse(m) => {
                if m.dst.memory != Memory::Psum {
                    return Err(CodegenError::ResultNotPsum);
                }
                // The tags are a quarter of the stationary's width (four per word), so they
                // are canonicalized on their own; their shape was checked by the combine.
                for t in [&mut m.dst, &mut m.stationary, &mut m.moving, &mut m.tags] {
                    self.canonical_in_place(t)?;
                }
                self.track_psum_group(&m.dst, m.flags())?;
                self.stats.matmuls += 1;
            }
            InstData::TensorTensor(t) => self.combine_in_place(&mut [&mut t.dst, &mut t.lhs, &mut t.rhs])?,
            InstData::TiledOffloadedFma(f) | InstData::OffloadedFma(f) => {
                self.combine_in_place(&mut [&mut f.dst, &mut f.src0, &mut f.src1])?;
            }
            InstData::TiledOffloadedMemCpy(c) | InstData::OffloadedMemCpy(c) => {
                self.combine_in_place(&mut [&mut c.dst, &mut c.src])?;
            }
            InstData::OffloadedMemCast(c) => self.combine_in_place(&mut [&mut c.dst, &mut c.src])?,
            InstData::Transpose(t) => {
                for t in [&mut t.dst, &mut t.src] {
                    self.canonical_in_place(t)?;
                }
            }
            InstData::DmaGather(g) => {
                for t in [&mut g.dst, &mut g.table, &mut g.index] {
                    self.canonical_in_place(t)?;
                }
            }
            InstData::DmaScatter(sc) => {
                for t in [&mut sc.table, &mut sc.src, &mut sc.index] {
                    self.canonical_in_place(t)?;
                }
            }
            InstData::DmaScatterAdd(sc) => {
                for t in [&mut sc.table, &mut sc.src, &mut sc.index] {
                    self.canonical_in_place(t)?;
                }
            }
            // The compute-engine kinds: the operands that move element for element must agree
            // (combined); the `[P, 1]` columns, a reduction's result and the statistics are
            // canonicalized alone (their shapes are the verifier's).
            InstData::Activation(a) => {
                self.combine_in_place(&mut [&mut a.dst, &mut a.src])?;
                for t in [a.scale.tile_mut(), a.bias.tile_mut(), a.reduce.as_mut()].into_iter().flatten() {
                    self.canonical_in_place(t)?;
                }
            }
            InstData::TensorScalar(t) => {
                self.combine_in_place(&mut [&mut t.dst, &mut t.src])?;
                for c in [t.operand0.tile_mut(), t.operand1.tile_mut()].into_iter().flatten() {
                    self.canonical_in_place(c)?;
                }
            }
            InstData::TensorTensorScan(t) => {
                // Merging dimensions keeps the enumeration order the scan runs in.
                self.combine_in_place(&mut [&mut t.dst, &mut t.data0, &mut t.data1])?;
                if let Some(c) = t.initial.tile_mut() {
                    self.canonical_in_place(c)?;
                }
            }
            InstData::TensorScalarCumulative(t) => {
                // Merging dimensions keeps the order the running reduction visits.
                self.combine_in_place(&mut [&mut t.dst, &mut t.src])?;
                for c in [t.operand0.tile_mut(), t.initial.tile_mut()].into_iter().flatten() {
                    self.canonical_in_place(c)?;
                }
            }
            InstData::Top8(t) => {
                // Each tile on its own: the positions found count elements in the source's
                // own row-major order.
                for x in [Some(&mut t.dst), Some(&mut t.src), t.vals.as_mut(), t.idx.as_mut()].into_iter().flatten() {
                    self.canonical_in_place(x)?;
                }
            }
            InstData::StreamShuffle(s) => {
                for t in [&mut s.dst, &mut s.src] {
                    self.canonical_in_place(t)?;
                }
            }
            InstData::TensorCopyPredicated(c) => match c.src.tile_mut() {
                Some(s) => self.combine_in_place(&mut [&mut c.dst, &mut c.predicate, s])?,
                None => self.combine_in_place(&mut [&mut c.dst, &mut c.predicate])?,
            },
            InstData::AffineSelect(a) => self.combine_in_place(&mut [&mut a.dst, &mut a.src])?,
            InstData::TensorPartitionReduce(r) => {
                for t in [&mut r.dst, &mut r.src] {
                    self.canonical_in_place(t)?;
                }
            }
            InstData::TensorReduce(r) => {
                for t in [&mut r.dst, &mut r.src] {
                    self.canonical_in_place(t)?;
                }
            }
            InstData::Iota(i) => self.canonical_in_place(&mut i.dst)?,
            InstData::BnStats(b) => {
                for t in [&mut b.dst, &mut b.src] {
                    self.canonical_in_place(t)?;
                }
            }
            InstData::BnAggr(b) => {
                for t in [&mut b.dst, &mut b.src] {
                    self.canonical_in_place(t)?;
                }
            }
        }
        Ok(())
    }
}
