//! Verifier rules 11 (the compute-engine kinds' shapes) and 13 (engines, operators and
//! dtypes of the compute-engine instructions), after the NKI ISA documents (see
//! `docs/isa-costs.md` for each rule's source).

use crate::dtype::DType;
use crate::entity::InstId;
use crate::error::Entity;
use crate::function::FunctionView;
use crate::inst::{
    AluClass, AluOp, ComputeEngine, InstData, ScalarOperand, StreamShuffleData, Top8Data, Top8Mode, BN_STATS_FMAX,
    SHUFFLE_QUADRANT, TOP8_SRC_ELEMS, TOP8_VALUES,
};
use crate::tile::InstTile;

use super::Verifier;

/// The operator pairs ScalarE runs in a `tensor_scalar` (the NKI ISA `tensor_scalar` lists
/// them for trn2; no other list is published, so ntile applies it on every target).
const ACT_TENSOR_SCALAR: [(AluOp, Option<AluOp>); 3] =
    [(AluOp::Multiply, Some(AluOp::Add)), (AluOp::Multiply, None), (AluOp::Add, None)];

/// Whether `op` treats its inputs as bit patterns.
fn bitvec(op: AluOp) -> bool {
    op.class() == AluClass::Bitvec
}

fn is_int(t: &InstTile) -> bool {
    !t.dtype.is_float()
}

impl<F: FunctionView + ?Sized> Verifier<'_, F> {
    /// Rule 11 for the compute-engine kinds (and the `[P, 1]` columns of any kind).
    pub(super) fn check_compute_shapes(&mut self, e: Entity, inst: &InstData) {
        match inst {
            InstData::Activation(a) => {
                self.check_same(e, "activation", &a.dst, &a.src);
                self.check_column(e, "activation scale", &a.scale, &a.src);
                self.check_column(e, "activation bias", &a.bias, &a.src);
                if let Some(r) = &a.reduce {
                    self.check_column_tile(e, "activation reduce", r, &a.src);
                }
            }
            InstData::TensorScalar(t) => {
                self.check_same(e, "tensor_scalar", &t.dst, &t.src);
                self.check_column(e, "tensor_scalar operand0", &t.operand0, &t.src);
                self.check_column(e, "tensor_scalar operand1", &t.operand1, &t.src);
            }
            InstData::TensorTensorScan(t) => {
                self.check_same(e, "tensor_tensor_scan", &t.dst, &t.data0);
                self.check_same(e, "tensor_tensor_scan", &t.dst, &t.data1);
                self.check_column(e, "tensor_tensor_scan initial", &t.initial, &t.dst);
            }
            InstData::StreamShuffle(s) => self.check_shuffle(e, s),
            InstData::Top8(t) => self.check_top8(e, t),
            InstData::TensorScalarCumulative(t) => {
                self.check_same(e, "tensor_scalar_cumulative", &t.dst, &t.src);
                self.check_column(e, "tensor_scalar_cumulative operand0", &t.operand0, &t.src);
                self.check_column(e, "tensor_scalar_cumulative initial", &t.initial, &t.src);
            }
            InstData::TensorCopyPredicated(c) => {
                self.check_same(e, "tensor_copy_predicated predicate", &c.dst, &c.predicate);
                if let ScalarOperand::Tile(s) = &c.src {
                    self.check_same(e, "tensor_copy_predicated", &c.dst, s);
                }
            }
            InstData::TensorReduce(r) => {
                let (d, s) = (r.dst.free_elems(), r.src.free_elems());
                if r.dst.partitions() != r.src.partitions() || d == 0 || !s.is_multiple_of(d) {
                    self.err(
                        e,
                        format!(
                            "tensor_reduce destination {:?} does not divide source {:?} (same partitions, the source's elements per partition a multiple of the destination's)",
                            r.dst.ap.shape(),
                            r.src.ap.shape()
                        ),
                    );
                }
            }
            InstData::TensorPartitionReduce(r)
                if r.dst.partitions() != 1 || r.dst.free_elems() != r.src.free_elems() =>
            {
                self.err(
                    e,
                    format!(
                        "tensor_partition_reduce destination {:?} must be one partition of the source's {} elements per partition",
                        r.dst.ap.shape(),
                        r.src.free_elems()
                    ),
                );
            }
            InstData::AffineSelect(a) => {
                self.check_same(e, "affine_select", &a.dst, &a.src);
                self.check_pattern(e, "affine_select", a.pattern.elems(), &a.dst);
            }
            InstData::Iota(i) => self.check_pattern(e, "iota", i.pattern.elems(), &i.dst),
            InstData::BnStats(b) => {
                if b.src.free_elems() > BN_STATS_FMAX {
                    self.err(
                        e,
                        format!(
                            "bn_stats reads at most {BN_STATS_FMAX} elements per partition, not {} (bn_stats each 512-element chunk, then bn_aggr the results)",
                            b.src.free_elems()
                        ),
                    );
                }
                self.check_stats(e, "bn_stats", &b.dst, 6, &b.src);
            }
            InstData::BnAggr(b) => {
                let n = b.src.free_elems();
                if n == 0 || !n.is_multiple_of(3) {
                    self.err(e, format!("bn_aggr source has {n} elements per partition, not a multiple of 3 (count, mean, variance * count triples)"));
                }
                self.check_stats(e, "bn_aggr", &b.dst, 2, &b.src);
            }
            _ => {}
        }
        if let Some(dst) = new_kind_dst(inst) {
            if dst.ap.free.iter().any(|d| d.stride == 0 && d.num > 1)
                || (dst.ap.partitions.stride == 0 && dst.partitions() > 1)
            {
                self.err(
                    e,
                    format!(
                        "{} destination repeats elements (a zero stride): each element is written once",
                        inst.opcode()
                    ),
                );
            }
        }
    }

    /// Rule 13: the engine may run the instruction and its operators, with the dtypes they
    /// need.
    pub(super) fn check_engines(&mut self, id: InstId, inst: &InstData) {
        let e = Entity::Inst(id);
        match inst {
            InstData::TensorTensor(t) => {
                let ints = [&t.dst, &t.lhs, &t.rhs].iter().all(|x| x.dtype == DType::Int32);
                match t.op.class() {
                    AluClass::Unary => {
                        self.err(e, format!("tensor_tensor op `{}` is unary (use tensor_scalar)", t.op));
                    }
                    AluClass::Bitvec => self.check_bitvec(e, "tensor_tensor", t.op, &[&t.dst, &t.lhs, &t.rhs]),
                    AluClass::Arithmetic | AluClass::Compare => {}
                }
                match t.engine {
                    ComputeEngine::Act => self.err(
                        e,
                        "tensor_tensor cannot run on act: ScalarE reads one input tensor per instruction (NKI ISA tensor_tensor runs on dve or pool)",
                    ),
                    ComputeEngine::Pool
                        if !(t.op == AluOp::Pow
                            || (ints && matches!(t.op, AluOp::Add | AluOp::Subtract | AluOp::Multiply))) =>
                    {
                        self.err(
                            e,
                            format!("tensor_tensor op `{}` cannot run on pool: GpSimd runs power, and add, subtract, multiply of int32 tiles (NKI ISA tensor_tensor)", t.op),
                        );
                    }
                    ComputeEngine::Pool | ComputeEngine::Dve => {}
                }
            }
            InstData::TensorScalar(t) => self.check_tensor_scalar(e, t),
            InstData::TensorTensorScan(t) => {
                for op in [t.op0, t.op1] {
                    if !matches!(op.class(), AluClass::Arithmetic | AluClass::Compare) {
                        self.err(
                            e,
                            format!("tensor_tensor_scan op `{op}` is not an arithmetic or comparison operator"),
                        );
                    }
                }
                if let ScalarOperand::Tile(c) = &t.initial {
                    self.need_dtype(e, "tensor_tensor_scan initial", c, DType::Fp32);
                }
            }
            InstData::TensorScalarCumulative(t) => {
                if !matches!(t.op0.class(), AluClass::Arithmetic) {
                    self.err(e, format!("tensor_scalar_cumulative op0 `{}` is not an arithmetic operator", t.op0));
                }
                if !matches!(t.op1, AluOp::Add | AluOp::Subtract | AluOp::Multiply | AluOp::Max | AluOp::Min) {
                    self.err(
                        e,
                        format!(
                            "tensor_scalar_cumulative op1 `{}` is not add, subtract, multiply, maximum or minimum",
                            t.op1
                        ),
                    );
                }
                for (what, s) in [("operand0", &t.operand0), ("initial", &t.initial)] {
                    if let ScalarOperand::Tile(c) = s {
                        self.need_dtype(e, &format!("tensor_scalar_cumulative {what}"), c, DType::Fp32);
                    }
                }
            }
            InstData::TensorCopyPredicated(c) => {
                if c.predicate.dtype.is_float() {
                    self.err(
                        e,
                        format!(
                            "tensor_copy_predicated predicate must be an integer tile (nonzero copies), not {}",
                            c.predicate.dtype
                        ),
                    );
                }
                if let ScalarOperand::Tile(s) = &c.src {
                    if s.dtype != c.dst.dtype {
                        self.err(
                            e,
                            format!(
                                "tensor_copy_predicated source and destination must share a dtype (the copy is bit for bit), not {} and {}",
                                s.dtype, c.dst.dtype
                            ),
                        );
                    }
                }
            }
            InstData::TensorReduce(r) => {
                if !r.op.reduces() {
                    self.err(
                        e,
                        format!("tensor_reduce op `{}` is not a reduction operator (add, subtract, multiply, maximum, minimum, bitwise_and, bitwise_or, bitwise_xor)", r.op),
                    );
                } else if bitvec(r.op) {
                    self.check_bitvec(e, "tensor_reduce", r.op, &[&r.dst, &r.src]);
                    if r.negate {
                        self.err(e, "tensor_reduce negate applies to arithmetic operators only");
                    }
                }
            }
            InstData::TensorPartitionReduce(r) => {
                if !crate::inst::PARTITION_REDUCE_OPS.contains(&r.op) {
                    self.err(
                        e,
                        format!("tensor_partition_reduce op `{}` is not add, maximum, minimum, multiply, bitwise_and, bitwise_or or bitwise_xor", r.op),
                    );
                } else if bitvec(r.op) {
                    self.check_bitvec(e, "tensor_partition_reduce", r.op, &[&r.dst, &r.src]);
                }
            }
            InstData::AffineSelect(a) if !a.cmp.is_comparison() => {
                self.err(e, format!("affine_select cmp `{}` is not a comparison (equal, not_equal, greater, greater_equal, less, less_equal)", a.cmp));
            }
            InstData::Activation(a) => {
                if let ScalarOperand::Tile(t) = &a.scale {
                    self.need_dtype(e, "activation scale", t, DType::Fp32);
                }
            }
            _ => {}
        }
    }

    fn check_tensor_scalar(&mut self, e: Entity, t: &crate::inst::TensorScalarData) {
        let ops: Vec<AluOp> = std::iter::once(t.op0).chain(t.op1).collect();
        if t.op1.is_none() && (!t.operand1.is_imm(0.0) || t.reverse1) {
            self.err(e, "tensor_scalar operand1 or reverse1 is given without op1");
        }
        let bits = ops.iter().filter(|op| bitvec(**op)).count();
        if bits != 0 && bits != ops.len() {
            self.err(e, "tensor_scalar op0 and op1 must both be bitvec or both arithmetic operators");
        }
        if bits != 0 {
            self.check_bitvec(e, "tensor_scalar", t.op0, &[&t.dst, &t.src]);
            if t.engine != ComputeEngine::Dve {
                self.err(e, format!("tensor_scalar with bitvec operators runs on dve, not {}", t.engine));
            }
            for (what, s) in [("operand0", &t.operand0), ("operand1", &t.operand1)] {
                match s {
                    ScalarOperand::Imm(v) if v.fract() != 0.0 || v.abs() > f64::from(u32::MAX) => {
                        self.err(e, format!("tensor_scalar {what} `{v}` of a bitvec operator must be a whole number"));
                    }
                    ScalarOperand::Tile(c) if !is_int(c) => {
                        self.err(
                            e,
                            format!(
                                "tensor_scalar {what} of a bitvec operator must be an integer tile, not {}",
                                c.dtype
                            ),
                        );
                    }
                    ScalarOperand::Imm(_) | ScalarOperand::Tile(_) => {}
                }
            }
        } else {
            for (what, s) in [("operand0", &t.operand0), ("operand1", &t.operand1)] {
                if let ScalarOperand::Tile(c) = s {
                    self.need_dtype(e, &format!("tensor_scalar {what}"), c, DType::Fp32);
                }
            }
        }
        match t.engine {
            ComputeEngine::Act if !ACT_TENSOR_SCALAR.contains(&(t.op0, t.op1)) => self.err(
                e,
                format!(
                    "tensor_scalar op0={}{} cannot run on act: ScalarE runs multiply then add, multiply, or add (NKI ISA tensor_scalar)",
                    t.op0,
                    t.op1.map(|o| format!(" op1={o}")).unwrap_or_default()
                ),
            ),
            ComputeEngine::Pool if !(t.op0 == AluOp::Rsqrt && t.op1.is_none()) => {
                self.err(e, "tensor_scalar runs on pool only as op0=rsqrt (NKI ISA tensor_scalar)");
            }
            ComputeEngine::Act | ComputeEngine::Pool | ComputeEngine::Dve => {}
        }
    }

    /// Operands of a bitvec operator are integer tiles of one dtype.
    fn check_bitvec(&mut self, e: Entity, what: &str, op: AluOp, tiles: &[&InstTile]) {
        if let Some(t) = tiles.iter().find(|t| !is_int(t)) {
            self.err(e, format!("{what} op `{op}` works on integer tiles, not {}", t.dtype));
        } else if tiles.iter().any(|t| t.dtype != tiles[0].dtype) {
            self.err(e, format!("{what} op `{op}` needs every tile in one integer dtype"));
        }
    }

    /// A search for eight values: a source of 8..=16384 elements per partition; `[P, 8]`
    /// values (each mode's `vals`, max8's result), indices (uint16 or uint32) and, for
    /// match_replace8, a destination of the source's shape.
    fn check_top8(&mut self, e: Entity, t: &Top8Data) {
        let mode = t.mode;
        let (lo, hi) = TOP8_SRC_ELEMS;
        let n = t.src.free_elems();
        if n < lo || n > hi {
            self.err(e, format!("{mode} reads {n} elements per partition (it takes {lo} to {hi})"));
        }
        let parts = t.src.partitions();
        let eight = |tile: &InstTile| tile.partitions() == parts && tile.free_elems() == TOP8_VALUES;
        let index = |tile: &InstTile| matches!(tile.dtype, DType::Uint16 | DType::Uint32);
        let need_vals = mode != Top8Mode::Max8;
        match (&t.vals, need_vals) {
            (Some(v), true) if !eight(v) => {
                self.err(e, format!("{mode} values must be [{parts}, 8], not {:?}", v.ap.shape()));
            }
            (None, true) => self.err(e, format!("{mode} needs its 8 values per partition (vals=)")),
            (Some(_), false) => self.err(e, "max8 takes no vals"),
            _ => {}
        }
        match mode {
            Top8Mode::Max8 | Top8Mode::FindIndex8 if !eight(&t.dst) => {
                self.err(e, format!("{mode} destination must be [{parts}, 8], not {:?}", t.dst.ap.shape()));
            }
            Top8Mode::FindIndex8 if !index(&t.dst) => {
                self.err(e, format!("find_index8 writes uint16 or uint32 indices, not {}", t.dst.dtype));
            }
            Top8Mode::MatchReplace8 => self.check_same(e, "match_replace8", &t.dst, &t.src),
            _ => {}
        }
        match (&t.idx, mode) {
            (Some(i), Top8Mode::MatchReplace8) if !eight(i) || !index(i) => self.err(
                e,
                format!(
                    "match_replace8 indices must be [{parts}, 8] uint16 or uint32, not {} {:?}",
                    i.dtype,
                    i.ap.shape()
                ),
            ),
            (Some(_), Top8Mode::Max8 | Top8Mode::FindIndex8) => {
                self.err(e, format!("{mode} writes no second index tile (idx=)"));
            }
            _ => {}
        }
    }

    /// A shuffle: one dtype and row length; every source partition its mask names exists.
    fn check_shuffle(&mut self, e: Entity, s: &StreamShuffleData) {
        if s.dst.free_elems() != s.src.free_elems() || s.dst.dtype != s.src.dtype {
            self.err(
                e,
                format!(
                    "stream_shuffle source and destination must have one dtype and row length, not {} {:?} and {} {:?}",
                    s.src.dtype,
                    s.src.ap.shape(),
                    s.dst.dtype,
                    s.dst.ap.shape()
                ),
            );
        }
        let (dst, src) = (s.dst.partitions() as usize, s.src.partitions() as usize);
        let worst =
            (0..dst).filter_map(|j| s.mask.source(j).map(|m| (j / SHUFFLE_QUADRANT) * SHUFFLE_QUADRANT + m)).max();
        if let Some(w) = worst.filter(|&w| w >= src) {
            self.err(
                e,
                format!("stream_shuffle reads source partition {w} of a {src}-partition source (quadrant by quadrant: partition q * 32 + mask[i])"),
            );
        }
    }

    fn check_same(&mut self, e: Entity, what: &str, dst: &InstTile, src: &InstTile) {
        if dst.partitions() != src.partitions() || dst.free_elems() != src.free_elems() {
            self.err(
                e,
                format!("{what} shape mismatch: destination {:?} vs source {:?}", dst.ap.shape(), src.ap.shape()),
            );
        }
    }

    /// A scalar operand that is a column is `[P, 1]` with the source's partitions.
    fn check_column(&mut self, e: Entity, what: &str, s: &ScalarOperand, src: &InstTile) {
        if let ScalarOperand::Tile(t) = s {
            self.check_column_tile(e, what, t, src);
        }
    }

    fn check_column_tile(&mut self, e: Entity, what: &str, t: &InstTile, src: &InstTile) {
        if t.partitions() != src.partitions() || t.free_elems() != 1 {
            self.err(
                e,
                format!(
                    "{what} must be a [P, 1] column with the source's {} partitions, not {:?}",
                    src.partitions(),
                    t.ap.shape()
                ),
            );
        }
    }

    fn check_pattern(&mut self, e: Entity, what: &str, elems: u64, dst: &InstTile) {
        if elems != dst.free_elems() {
            self.err(
                e,
                format!(
                    "{what} pattern enumerates {elems} elements but the destination has {} per partition",
                    dst.free_elems()
                ),
            );
        }
    }

    fn check_stats(&mut self, e: Entity, what: &str, dst: &InstTile, n: u64, src: &InstTile) {
        if dst.partitions() != src.partitions() || dst.free_elems() != n {
            self.err(e, format!("{what} destination must be [{}, {n}], not {:?}", src.partitions(), dst.ap.shape()));
        }
    }
}

/// The destination of a compute-engine kind added with `activation` (their destinations may
/// not repeat elements).
fn new_kind_dst(inst: &InstData) -> Option<&InstTile> {
    match inst {
        InstData::Activation(a) => Some(&a.dst),
        InstData::TensorScalar(t) => Some(&t.dst),
        InstData::TensorTensorScan(t) => Some(&t.dst),
        InstData::TensorCopyPredicated(c) => Some(&c.dst),
        InstData::StreamShuffle(s) => Some(&s.dst),
        InstData::Top8(t) => Some(&t.dst),
        InstData::TensorScalarCumulative(t) => Some(&t.dst),
        InstData::TensorReduce(r) => Some(&r.dst),
        InstData::TensorPartitionReduce(r) => Some(&r.dst),
        InstData::AffineSelect(a) => Some(&a.dst),
        InstData::Iota(i) => Some(&i.dst),
        InstData::BnStats(b) => Some(&b.dst),
        InstData::BnAggr(b) => Some(&b.dst),
        _ => None,
    }
}
