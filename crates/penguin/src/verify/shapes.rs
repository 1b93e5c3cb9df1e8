//! Verifier rules 10 and 11: matmul shapes (contraction, PE tile, perf mode, sparsity) and
//! elementwise shapes (copies, casts, tensor-tensor ops, FMAs, transposes, gathers and
//! scatter-adds; the compute-engine kinds' in `compute.rs`).

use crate::dtype::DType;
use crate::entity::InstId;
use crate::error::Entity;
use crate::function::FunctionView;
use crate::inst::{InstData, PerfMode, TilePosition, TileSize, SPARSE_GROUP_KEPT, SPARSE_TAGS_PER_WORD};
use crate::target::{MAX_MOVING_FREE, MAX_STATIONARY_FREE, NUM_PARTITIONS};
use crate::tile::InstTile;

use super::Verifier;

impl<F: FunctionView + ?Sized> Verifier<'_, F> {
    #[expect(clippy::too_many_arguments, reason = "the shape rule reads every operand and the PE tile")]
    fn check_matmul_shape(
        &mut self,
        e: Entity,
        k: u64,
        max_k: u32,
        dst: &InstTile,
        st: &InstTile,
        mv: &InstTile,
        (mm, nn): (u64, u64),
        pos: TilePosition,
        size: TileSize,
    ) {
        if k > u64::from(max_k) {
            self.err(e, format!("matmult contraction K = {k} exceeds {max_k}"));
        }
        for (what, at, len) in [("row", pos.row, size.rows), ("column", pos.col, size.cols)] {
            if ![128, 64, 32].contains(&len)
                || at % len != 0
                || u64::from(at) + u64::from(len) > u64::from(NUM_PARTITIONS)
            {
                self.err(e, format!("PE tile {what} position {at} with size {len} is not legal (sizes 128, 64, 32 at multiples of the size)"));
            }
        }
        if st.partitions() > size.rows {
            self.err(e, format!("matmult uses {} PE rows but its tile_size has {}", st.partitions(), size.rows));
        }
        if mm > u64::from(MAX_STATIONARY_FREE) {
            self.err(e, format!("matmult stationary free size {mm} exceeds {MAX_STATIONARY_FREE}"));
        }
        if nn > u64::from(MAX_MOVING_FREE) {
            self.err(e, format!("matmult moving free size {nn} exceeds {MAX_MOVING_FREE}"));
        }
        if u64::from(dst.partitions()) != mm || dst.free_elems() != nn {
            self.err(
                e,
                format!(
                    "matmult result is [{}, {}] but stationary^T @ moving is [{mm}, {nn}]",
                    dst.partitions(),
                    dst.free_elems()
                ),
            );
        }
        if dst.dtype != DType::Fp32 {
            self.err(e, format!("matmult result must be fp32 (PSUM accumulates in fp32), not {}", dst.dtype));
        }
        for (what, t) in [("stationary", st), ("moving", mv)] {
            if !t.dtype.is_float() && t.dtype != DType::Uint8 {
                self.err(e, format!("matmult {what} dtype {} is not a float or uint8", t.dtype));
            }
        }
    }

    pub(super) fn check_shapes(&mut self, id: InstId, inst: &InstData) {
        let e = Entity::Inst(id);
        match inst {
            InstData::MatMult(m) => {
                if m.perf_mode == PerfMode::DoubleRowGen3 {
                    self.err(e, "perf_mode=`double_row_gen3` is not supported");
                }
                let k = m.stationary.partitions();
                if m.moving.partitions() != k {
                    self.err(
                        e,
                        format!(
                            "matmult contraction mismatch: stationary has {k} partitions, moving has {}",
                            m.moving.partitions()
                        ),
                    );
                }
                let (max_k, pack) = if m.perf_mode == PerfMode::DoubleRow { (256, 2) } else { (NUM_PARTITIONS, 1) };
                if pack == 2 {
                    let first = |t: &InstTile| t.ap.free.first().map_or(0, |d| d.num);
                    if first(&m.stationary) != 2 || first(&m.moving) != 2 {
                        self.err(e, "double_row operands must have a first free dimension of 2 ([P, 2, F])");
                        return;
                    }
                }
                let sizes = (m.stationary.free_elems() / pack, m.moving.free_elems() / pack);
                self.check_matmul_shape(
                    e,
                    u64::from(k) * pack,
                    max_k,
                    &m.dst,
                    &m.stationary,
                    &m.moving,
                    sizes,
                    m.tile_position,
                    m.tile_size,
                );
            }
            InstData::MatMultSparse(m) => {
                if !m.pattern.is_supported() {
                    self.err(e, format!("sparsity pattern {} is not supported", m.pattern));
                }
                let cr = m.pattern.compression_ratio();
                let kc = m.stationary.partitions();
                if !kc.is_multiple_of(SPARSE_GROUP_KEPT) {
                    self.err(
                        e,
                        format!(
                            "matmult_sparse stationary has {kc} partitions, not whole groups of {SPARSE_GROUP_KEPT} kept rows"
                        ),
                    );
                }
                let m_free = m.stationary.free_elems();
                let words = m_free.div_ceil(u64::from(SPARSE_TAGS_PER_WORD));
                if m.tags.partitions() != kc || m.tags.free_elems() != words {
                    self.err(
                        e,
                        format!(
                            "matmult_sparse tags are [{}, {}] but a [{kc}, {m_free}] stationary needs [{kc}, {words}] \
                             (four 4-bit tags per int16 word)",
                            m.tags.partitions(),
                            m.tags.free_elems()
                        ),
                    );
                }
                self.need_dtype(e, "matmult_sparse tags", &m.tags, DType::Int16);
                let n = m.dst.free_elems();
                if m.moving.partitions() != kc || m.moving.free_elems() != u64::from(cr) * n {
                    self.err(
                        e,
                        format!(
                            "matmult_sparse with {} needs moving [{kc}, {cr}, N={n}] ({} elements per partition), \
                             not {} partitions x {}",
                            m.pattern,
                            u64::from(cr) * n,
                            m.moving.partitions(),
                            m.moving.free_elems()
                        ),
                    );
                }
                let sizes = (m_free, m.moving.free_elems() / u64::from(cr));
                self.check_matmul_shape(
                    e,
                    u64::from(kc),
                    NUM_PARTITIONS,
                    &m.dst,
                    &m.stationary,
                    &m.moving,
                    sizes,
                    m.tile_position,
                    m.tile_size,
                );
            }
            InstData::DmaCopy(d) => self.check_copy_shape(e, &d.dst, &d.src),
            InstData::TensorCopy(c) => self.check_copy_shape(e, &c.dst, &c.src),
            InstData::Memset(_) => {}
            InstData::TensorTensor(t) => {
                self.check_copy_shape(e, &t.dst, &t.lhs);
                self.check_copy_shape(e, &t.dst, &t.rhs);
            }
            InstData::TiledOffloadedFma(f) | InstData::OffloadedFma(f) => {
                self.check_copy_shape(e, &f.dst, &f.src0);
                self.check_copy_shape(e, &f.dst, &f.src1);
            }
            InstData::TiledOffloadedMemCpy(c) | InstData::OffloadedMemCpy(c) => {
                if c.dst.dtype != c.src.dtype {
                    self.err(
                        e,
                        format!("memcpy cannot convert {} to {} (use offloaded_memcast)", c.src.dtype, c.dst.dtype),
                    );
                }
                self.check_copy_shape(e, &c.dst, &c.src);
            }
            InstData::OffloadedMemCast(c) => self.check_copy_shape(e, &c.dst, &c.src),
            InstData::Transpose(t) => {
                if u64::from(t.dst.partitions()) != t.src.free_elems()
                    || t.dst.free_elems() != u64::from(t.src.partitions())
                {
                    self.err(
                        e,
                        format!(
                            "transpose result {:?} is not the transpose of {:?}",
                            t.dst.ap.shape(),
                            t.src.ap.shape()
                        ),
                    );
                }
                let sixteen = matches!(t.dst.dtype, DType::Bf16 | DType::Fp16) && t.dst.dtype == t.src.dtype;
                if t.dst.dtype != DType::Fp32 && !sixteen {
                    self.err(
                        e,
                        format!(
                            "transpose result must be fp32, or {} like its {} source (16-bit PSUM output, trn2 and later), not {}",
                            t.src.dtype, t.src.dtype, t.dst.dtype
                        ),
                    );
                }
            }
            InstData::DmaGather(g) => self.check_indexed(e, "dma_gather destination", &g.dst, &g.table, &g.index),
            InstData::DmaScatter(s) => self.check_indexed(e, "dma_scatter source", &s.src, &s.table, &s.index),
            InstData::DmaScatterAdd(s) => self.check_indexed(e, "dma_scatter_add source", &s.src, &s.table, &s.index),
            InstData::Activation(_)
            | InstData::TensorScalar(_)
            | InstData::TensorTensorScan(_)
            | InstData::TensorCopyPredicated(_)
            | InstData::StreamShuffle(_)
            | InstData::Top8(_)
            | InstData::TensorScalarCumulative(_)
            | InstData::TensorReduce(_)
            | InstData::TensorPartitionReduce(_)
            | InstData::AffineSelect(_)
            | InstData::Iota(_)
            | InstData::BnStats(_)
            | InstData::BnAggr(_) => self.check_compute_shapes(e, inst),
        }
    }

    /// A gather or scatter-add: an int32 index with one table row per entry.
    fn check_indexed(&mut self, e: Entity, what: &str, rows: &InstTile, table: &InstTile, index: &InstTile) {
        let op = what.split(' ').next().unwrap_or(what);
        self.need_dtype(e, &format!("{op} index"), index, DType::Int32);
        if u64::from(rows.partitions()) != index.ap.num_elems() || rows.free_elems() != table.free_elems() {
            self.err(
                e,
                format!(
                    "{what} {:?} must have one row per index ({}) of a table row's {} elements",
                    rows.ap.shape(),
                    index.ap.num_elems(),
                    table.free_elems()
                ),
            );
        }
    }

    fn check_copy_shape(&mut self, e: Entity, dst: &InstTile, src: &InstTile) {
        if dst.partitions() != src.partitions() || dst.free_elems() != src.free_elems() {
            self.err(
                e,
                format!("copy shape mismatch: destination {:?} vs source {:?}", dst.ap.shape(), src.ap.shape()),
            );
        }
    }
}
