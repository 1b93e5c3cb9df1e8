//! BIR's operation kinds, each declared once (see `declare_ops!`): adding a kind is one
//! entry here plus the code that gives it meaning (verifier, lowering, simulator, cycle model).
//!
//! An entry reads `Variant = "text_name", EngineClass, aps [field: ApRole, ...],
//! attrs [field, ...] { fields }`: `aps` lists the access-pattern fields in text order with
//! what the op does with each, `attrs` the attribute fields in text order (an attribute's
//! key is its type's; see `op_table.rs`). The fields keep their declaration order in the
//! JSON form, and `from_parts` reads them in that order (attributes with a default first).

use serde::{Deserialize, Serialize};

use penguin::{
    ActFunc, AffinePattern, AluOp, CastMode, EngineAccumulationType, Memory, PerfMode, ScalarOperand, ShuffleMask,
    SparsityPattern, TilePosition, TileSize, Top8Mode,
};

use super::ap::HwAp;
use super::engine::EngineClass;
use super::op_table::{attr_key, attr_pair, declare_ops, ApField, ApRole, Field, FromPartsError, Parts};

declare_ops! {
    /// Load the stationary operand (`K` partitions x `M`, or `[P, 2, M]` in double row) into
    /// the PE array.
    LoadStationary = "load_stationary", Pe, aps [src: Read], attrs [perf_mode, tile_position, tile_size] {
        /// The weights.
        src: HwAp,
        /// Perf mode.
        perf_mode: PerfMode,
        /// Array position.
        tile_position: TilePosition,
        /// Array size.
        tile_size: TileSize,
    }
    /// Load a compressed structured-sparse stationary operand with its packed tags (the
    /// layout of `penguin::MatMultSparseData`); the MultiplyMoving that follows streams a
    /// `[K', CR, N]` moving operand against it.
    LoadStationarySparse = "load_stationary_sparse", Pe, aps [src: Read, tags: Read],
        attrs [pattern, tile_position, tile_size] {
        /// The kept weights, `K'` partitions (whole groups of 4) x `M`.
        src: HwAp,
        /// Their 4-bit positions inside each hardware group of `4 x CR` dense rows, four to
        /// an int16 word: `K'` partitions x `ceil(M / 4)`.
        tags: HwAp,
        /// The pattern.
        pattern: SparsityPattern,
        /// Array position.
        tile_position: TilePosition,
        /// Array size.
        tile_size: TileSize,
    }
    /// Stream the moving operand through the array into PSUM.
    MultiplyMoving = "multiply_moving", Pe, aps [dst: Write, src: Read],
        attrs [perf_mode, tile_position, tile_size, acc] {
        /// PSUM result (`M` partitions x `N` fp32).
        dst: HwAp,
        /// Moving operand (`K` partitions x `N`, `[P, 2, N]` in double row, `[K', CR, N]` after a
        /// sparse stationary).
        src: HwAp,
        /// Accumulation flags.
        acc: EngineAccumulationType,
        /// Perf mode.
        perf_mode: PerfMode,
        /// Array position.
        tile_position: TilePosition,
        /// Array size.
        tile_size: TileSize,
    }
    /// PE transpose: `dst[j, i] = src[i, j]` into PSUM (fp32).
    Transpose = "transpose", Pe, aps [dst: Write, src: Read], attrs [] {
        /// PSUM result.
        dst: HwAp,
        /// SBUF source.
        src: HwAp,
    }
    /// A DMA transfer with dtype conversion.
    DmaCopy = "dma_copy", Dma, aps [dst: Write, src: Read], attrs [cast] {
        /// Destination.
        dst: HwAp,
        /// Source.
        src: HwAp,
        /// Rounding of a narrowing conversion.
        cast: CastMode,
    }
    /// Offloaded fused multiply-add on a DMA queue: `dst = src0 * src1 + dst` in fp32, rounded
    /// once to dst's dtype.
    DmaFma = "dma_fma", Dma, aps [dst: Update, src0: Read, src1: Read], attrs [] {
        /// Destination and addend.
        dst: HwAp,
        /// First factor.
        src0: HwAp,
        /// Second factor.
        src1: HwAp,
    }
    /// DMA gather: `dst[i, :] = table[index[i], :]`; the table's partition count is the bound.
    DmaGather = "dma_gather", Dma, aps [dst: Write, table: TableRead, index: Index], attrs [skip] {
        /// Destination rows.
        dst: HwAp,
        /// The table (one partition per table row).
        table: HwAp,
        /// int32 row indices.
        index: HwAp,
        /// An index outside the table skips its row instead of stopping the run.
        skip: bool,
    }
    /// DMA scatter: `table[index[i], :] = src[i, :]`, in index order; other rows kept.
    DmaScatter = "dma_scatter", Dma, aps [table: TableWrite, src: Read, index: Index], attrs [skip] {
        /// The table.
        table: HwAp,
        /// Source rows.
        src: HwAp,
        /// int32 row indices.
        index: HwAp,
        /// An index outside the table skips its row instead of stopping the run.
        skip: bool,
    }
    /// DMA scatter-add: `table[index[i], :] += src[i, :]`.
    DmaScatterAdd = "dma_scatter_add", Dma, aps [table: TableUpdate, src: Read, index: Index], attrs [skip] {
        /// The table.
        table: HwAp,
        /// Source rows.
        src: HwAp,
        /// int32 row indices.
        index: HwAp,
        /// An index outside the table skips its row instead of stopping the run.
        skip: bool,
    }
    /// An on-chip copy with dtype conversion (ACT/DVE/POOL).
    TensorCopy = "tensor_copy", Compute, aps [dst: Write, src: Read], attrs [] {
        /// Destination.
        dst: HwAp,
        /// Source.
        src: HwAp,
    }
    /// Elementwise `dst = lhs op rhs` in fp32 (bit patterns for a bitvec operator), rounded
    /// once (DVE; POOL for power and int32 add/subtract/multiply).
    TensorTensor = "tensor_tensor", VectorOrPool, aps [dst: Write, lhs: Read, rhs: Read], attrs [op] {
        /// The operation.
        op: AluOp,
        /// Destination.
        dst: HwAp,
        /// Left operand.
        lhs: HwAp,
        /// Right operand.
        rhs: HwAp,
    }
    /// Fill with a value (ACT/DVE/POOL/SP).
    Memset = "memset", ComputeOrSp, aps [dst: Write], attrs [value] {
        /// Destination.
        dst: HwAp,
        /// The value (NaN and infinities travel through JSON as strings).
        #[serde(with = "penguin::json_f64")]
        value: f64,
    }
    /// `dst = func(src * scale + bias)` in fp32 on ScalarE; `reduce` (if given) receives each
    /// partition's sum of the results.
    Activation = "activation", Act, aps [dst: Write, src: Read, scale: Read, bias: Read, reduce: Write],
        attrs [func, scale, bias] {
        /// The function.
        func: ActFunc,
        /// Destination.
        dst: HwAp,
        /// Source.
        src: HwAp,
        /// Multiplier: an immediate or a `[P, 1]` column.
        scale: ScalarOperand<HwAp>,
        /// Addend: an immediate or a `[P, 1]` column.
        bias: ScalarOperand<HwAp>,
        /// Row sums, `[P, 1]`.
        reduce: Option<HwAp>,
    }
    /// `dst = (src op0 operand0) op1 operand1` in fp32 (bit patterns for bitvec operators).
    TensorScalar = "tensor_scalar", Compute, aps [dst: Write, src: Read, operand0: Read, operand1: Read],
        attrs [op0, reverse0, op1, reverse1, operand0, operand1] {
        /// First operator.
        op0: AluOp,
        /// `operand0 op0 src`.
        reverse0: bool,
        /// Second operator.
        op1: Option<AluOp>,
        /// `operand1 op1 x`.
        reverse1: bool,
        /// Destination.
        dst: HwAp,
        /// Source.
        src: HwAp,
        /// First operand.
        operand0: ScalarOperand<HwAp>,
        /// Second operand.
        operand1: ScalarOperand<HwAp>,
    }
    /// Scan each partition's elements in order: `x = initial`, then `x = (x op0 data0[i]) op1
    /// data1[i]` in fp32, rounded to `dst`'s dtype, and `dst[i] = x`.
    TensorTensorScan = "tensor_tensor_scan", Dve, aps [dst: Write, data0: Read, data1: Read, initial: Read],
        attrs [op0, op1, initial] {
        /// The operator with `data0`.
        op0: AluOp,
        /// The operator with `data1`.
        op1: AluOp,
        /// Destination.
        dst: HwAp,
        /// First input.
        data0: HwAp,
        /// Second input.
        data1: HwAp,
        /// The value carried into the first element.
        initial: ScalarOperand<HwAp>,
    }
    /// Copy `src` (a tile with `dst`'s dtype, or an immediate converted to it) into the
    /// elements of `dst` whose `predicate` is nonzero (zero with `reverse`); the others keep
    /// their values.
    TensorCopyPredicated = "tensor_copy_predicated", Dve, aps [dst: Update, predicate: Read, src: Read],
        attrs [reverse, src] {
        /// Copy where the predicate is zero instead.
        reverse: bool,
        /// Destination, read and written.
        dst: HwAp,
        /// The predicate (an integer tile).
        predicate: HwAp,
        /// What is copied.
        src: ScalarOperand<HwAp>,
    }
    /// Per partition, `reg = initial`, then `reg = op1(op0(src[i], operand0), reg)` in fp32
    /// (`op0(operand0, src[i])` with `reverse0`) and `dst[i] = reg` rounded to `dst`'s dtype.
    TensorScalarCumulative = "tensor_scalar_cumulative", Dve,
        aps [dst: Write, src: Read, operand0: Read, initial: Read],
        attrs [op0, op1, reverse0, operand0, initial] {
        /// The operator with `operand0`.
        op0: AluOp,
        /// The running operator.
        op1: AluOp,
        /// `operand0 op0 src`.
        reverse0: bool,
        /// Destination.
        dst: HwAp,
        /// Source.
        src: HwAp,
        /// The operand of `op0`.
        operand0: ScalarOperand<HwAp>,
        /// The register's value before the first element.
        initial: ScalarOperand<HwAp>,
    }
    /// Eight values per partition of `src` (read as fp32, row-major): `max8` writes the 8
    /// largest to `dst` in descending order; `find_index8` the positions of `vals`' values
    /// (all ones where absent); `match_replace8` `src` with them replaced by `value` into
    /// `dst`, and their positions into `idx` when given (see `penguin::Top8Data`).
    Top8 = "top8", Dve, aps [dst: Write, src: Read, vals: Read, idx: Write], attrs [mode, value] {
        /// What it computes.
        mode: Top8Mode,
        /// The replacement value (match_replace8).
        #[serde(with = "penguin::json_f64")]
        value: f64,
        /// Destination.
        dst: HwAp,
        /// The elements searched.
        src: HwAp,
        /// The `[P, 8]` values to find.
        vals: Option<HwAp>,
        /// The `[P, 8]` positions of match_replace8's values.
        idx: Option<HwAp>,
    }
    /// In each quadrant `q` of `dst`'s partitions, partition `q * 32 + i` takes `src`'s
    /// partition `q * 32 + mask[i]` (255: keeps its values), bit for bit.
    StreamShuffle = "stream_shuffle", Dve, aps [dst: Update, src: Read], attrs [mask] {
        /// The source partition of each destination partition of a quadrant.
        mask: ShuffleMask,
        /// Destination, read and written.
        dst: HwAp,
        /// Source.
        src: HwAp,
    }
    /// `dst[0, i] = op over src[p, i]`, partition 0 first (fp32; bit patterns for bitvec).
    TensorPartitionReduce = "tensor_partition_reduce", Pool, aps [dst: Write, src: Read], attrs [op] {
        /// The reduction.
        op: AluOp,
        /// Destination, one partition.
        dst: HwAp,
        /// Source.
        src: HwAp,
    }
    /// Reduce each run of `src.free / dst.free` consecutive elements of a partition with `op`
    /// (left to right), optionally negated.
    TensorReduce = "tensor_reduce", Dve, aps [dst: Write, src: Read], attrs [op, negate] {
        /// The operator.
        op: AluOp,
        /// Multiply by -1.
        negate: bool,
        /// Destination.
        dst: HwAp,
        /// Source.
        src: HwAp,
    }
    /// `dst = (offset + channel_multiplier * p + pattern . i) cmp 0 ? src : value`.
    AffineSelect = "affine_select", Pool, aps [dst: Write, src: Read],
        attrs [cmp, offset, channel_multiplier, pattern, value] {
        /// The comparison with 0.
        cmp: AluOp,
        /// Constant.
        offset: i32,
        /// Step per partition.
        channel_multiplier: i32,
        /// Steps over the free elements.
        pattern: AffinePattern,
        /// The value where the comparison fails.
        #[serde(with = "penguin::json_f64")]
        value: f64,
        /// Destination.
        dst: HwAp,
        /// The values where it holds.
        src: HwAp,
    }
    /// `dst = offset + channel_multiplier * p + pattern . i` in int32, converted to dst.
    Iota = "iota", Pool, aps [dst: Write], attrs [offset, channel_multiplier, pattern] {
        /// Constant.
        offset: i32,
        /// Step per partition.
        channel_multiplier: i32,
        /// Steps over the free elements.
        pattern: AffinePattern,
        /// Destination.
        dst: HwAp,
    }
    /// Count, mean and variance * count of the even and of the odd elements of each partition.
    BnStats = "bn_stats", Dve, aps [dst: Write, src: Read], attrs [] {
        /// Destination (6 per partition).
        dst: HwAp,
        /// Source (at most 512 per partition).
        src: HwAp,
    }
    /// Mean and variance of each partition from `bn_stats` triples.
    BnAggr = "bn_aggr", Dve, aps [dst: Write, src: Read], attrs [] {
        /// Destination (2 per partition).
        dst: HwAp,
        /// Source (triples).
        src: HwAp,
    }
}

impl Op {
    /// Bytes this op moves to or from HBM (each element counted at its HBM dtype; a
    /// read-modify-write counts twice, a table only the rows its index names), saturating at
    /// `u64::MAX`.
    pub fn hbm_bytes(&self) -> u64 {
        let mut rows = None;
        self.for_each_ap_role(|_, ap, role| {
            if rows.is_none() && role == ApRole::Index {
                rows = Some(ap.num_elems());
            }
        });
        let mut total = 0u64;
        self.for_each_ap_role(|_, ap, role| {
            if ap.memory != Memory::Hbm {
                return;
            }
            let moved = match rows {
                Some(rows) if role.is_indexed() => rows.saturating_mul(ap.free_elems()),
                Some(_) | None => ap.num_elems(),
            };
            let size = u64::from(ap.dtype.size_bytes());
            total =
                total.saturating_add(moved.saturating_mul(size).saturating_mul(if role.is_update() { 2 } else { 1 }));
        });
        total
    }

    /// Every access pattern with whether it is written (a read-modify-write counts as written).
    pub fn accesses(&self) -> Vec<(&HwAp, bool)> {
        self.ap_roles().into_iter().map(|(_, ap, role)| (ap, role.writes())).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::program::OpPart;

    /// An op's attributes and access patterns, as the parser hands them to `from_parts`.
    type TextParts = (Vec<(String, String)>, Vec<(String, HwAp)>);

    /// The text-format parts of an op.
    fn parts(op: &Op) -> TextParts {
        let attrs = op.attributes().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let aps = op.aps().into_iter().map(|(n, ap)| (n.to_string(), ap.clone())).collect();
        (attrs, aps)
    }

    #[test]
    fn every_kind_round_trips_through_its_text_parts() {
        let ops = Op::examples();
        assert_eq!(ops.len(), 25);
        let names: HashSet<&str> = ops.iter().map(Op::name).collect();
        assert_eq!(names.len(), ops.len(), "two kinds share a name");
        for op in &ops {
            let (attrs, aps) = parts(op);
            assert_eq!(Op::from_parts(op.name(), &attrs, aps).as_ref(), Ok(op), "{}", op.name());
        }
        let (attrs, aps) = parts(&ops[0]);
        let unknown = Op::from_parts("no_such_op", &attrs, aps).map(|_| ()).unwrap_err();
        assert_eq!(unknown.part, OpPart::Opcode);
        assert_eq!(unknown.message, "unknown BIR op `no_such_op`");
    }

    #[test]
    fn for_each_ap_role_visits_ap_roles_in_order() {
        for op in Op::examples() {
            let mut seen = Vec::new();
            op.for_each_ap_role(|name, ap, role| seen.push((name, ap, role)));
            assert_eq!(seen, op.ap_roles(), "{}", op.name());
        }
    }

    #[test]
    fn every_access_pattern_of_every_kind_is_required_and_named() {
        for op in Op::examples() {
            let (attrs, aps) = parts(&op);
            for (i, (name, _)) in aps.iter().enumerate() {
                let mut fewer = aps.clone();
                fewer.remove(i);
                match Op::from_parts(op.name(), &attrs, fewer) {
                    // An optional access pattern (activation's `reduce`).
                    Ok(o) => assert!(o.aps().iter().all(|(n, _)| n != name), "{} {name}", op.name()),
                    Err(e) if matches!(e.part, OpPart::AccessPattern(_)) => {
                        assert_eq!(e.part, OpPart::AccessPattern(name.clone()));
                        assert_eq!(e.message, format!("{} needs access pattern `{name}=`", op.name()));
                    }
                    // A scalar operand: an access pattern or a number.
                    Err(e) => assert_eq!(
                        (e.part, e.message),
                        (OpPart::Attribute(name.clone()), format!("{} needs `{name}=`", op.name()))
                    ),
                }
            }
            let mut more = aps.clone();
            more.push(("extra".into(), aps[0].1.clone()));
            let e = Op::from_parts(op.name(), &attrs, more).map(|_| ()).unwrap_err();
            assert_eq!(e.part, OpPart::AccessPattern("extra".into()));
            let mut odd = attrs.clone();
            odd.push(("extra".into(), "1".into()));
            let e = Op::from_parts(op.name(), &odd, aps).map(|_| ()).unwrap_err();
            assert_eq!(
                (e.part, e.message),
                (OpPart::Attribute("extra".into()), format!("{} has no attribute `extra`", op.name()))
            );
        }
    }

    #[test]
    fn aps_and_aps_mut_agree() {
        for mut op in Op::examples() {
            for (i, (_, ap)) in op.aps_mut().into_iter().enumerate() {
                ap.byte_offset = 64 * i as u64;
            }
            let names: Vec<&str> = op.aps().iter().map(|(n, _)| *n).collect();
            let offsets: Vec<u64> = op.aps().iter().map(|(_, ap)| ap.byte_offset).collect();
            let mut copy = op.clone();
            let names_mut: Vec<&str> = copy.aps_mut().iter().map(|(n, _)| *n).collect();
            let roles: Vec<&str> = op.ap_roles().iter().map(|(n, _, _)| *n).collect();
            assert_eq!((&names_mut, &roles), (&names, &names), "{}", op.name());
            assert_eq!(offsets, (0..names.len() as u64).map(|i| 64 * i).collect::<Vec<_>>(), "{}", op.name());
            assert_eq!(op.ap_count(), names.len(), "{}", op.name());
            let mut visited = Vec::new();
            copy.for_each_ap_mut(|n, ap| {
                visited.push(n);
                ap.byte_offset += 1;
            });
            assert_eq!(visited, names, "{}", op.name());
            let bumped: Vec<u64> = copy.aps().iter().map(|(_, ap)| ap.byte_offset).collect();
            assert_eq!(bumped, offsets.iter().map(|o| o + 1).collect::<Vec<_>>(), "{}", op.name());
        }
    }

    #[test]
    fn a_malformed_attribute_names_its_key() {
        let op = Op::examples().remove(2);
        let (mut attrs, aps) = parts(&op);
        for (key, bad, message) in [
            ("pos", "1", "`pos=1` must be two numbers `a,b`"),
            ("acc", "start|sideways", "unknown accumulation flag `sideways` (expected start, accu, stop)"),
        ] {
            let saved = attrs.clone();
            if let Some(a) = attrs.iter_mut().find(|(k, _)| k == key) {
                a.1 = bad.into();
            }
            let e = Op::from_parts(op.name(), &attrs, aps.clone()).map(|_| ()).unwrap_err();
            assert_eq!((e.part, e.message.as_str()), (OpPart::Attribute(key.into()), message));
            attrs = saved;
        }
    }

    #[test]
    fn hbm_bytes_count_updates_twice_and_tables_by_index() {
        let hbm = |parts: u32, elems: u32| {
            crate::program::test_ap(Memory::Hbm, 0, parts, i64::from(elems), 0, vec![penguin::Dim::new(1, elems)])
        };
        let sbuf = |parts: u32, elems: u32| {
            crate::program::test_ap(Memory::Sbuf, 0, parts, 1, 0, vec![penguin::Dim::new(1, elems)])
        };
        let fma = Op::DmaFma { dst: hbm(2, 8), src0: hbm(2, 8), src1: sbuf(2, 8) };
        assert_eq!(fma.hbm_bytes(), 2 * 64 + 64);
        // A 100-row table, 3 rows named: 3 rows of 8 fp32, the int32 index read too.
        let gather = Op::DmaGather { dst: sbuf(3, 8), table: hbm(100, 8), index: hbm(1, 3), skip: false };
        assert_eq!(gather.hbm_bytes(), 3 * 32 + 12);
        let scatter = Op::DmaScatterAdd { table: hbm(100, 8), src: sbuf(3, 8), index: sbuf(1, 3), skip: false };
        assert_eq!(scatter.hbm_bytes(), 2 * 3 * 32);
        // A plain scatter writes the named rows once.
        let plain = Op::DmaScatter { table: hbm(100, 8), src: sbuf(3, 8), index: sbuf(1, 3), skip: false };
        assert_eq!(plain.hbm_bytes(), 3 * 32);
        let written: Vec<bool> = scatter.accesses().iter().map(|(_, w)| *w).collect();
        assert_eq!(written, [true, false, false]);
    }
}
