//! Offloaded ops (FMAs, copies and casts done by the DMA queues) spread over the queues.
//!
//! Every DMA transfer pays a fixed cost (~1.3 us) on its queue, so a piece must carry enough
//! bytes to amortize it: an op is cut into `clamp(bytes / 64 KiB, 1, 16)` pieces. Pieces cut
//! the partition range (each queue serving its own partitions), except for a transposing HBM
//! access (contiguous along partitions, strided along the free dimension), which is cut along
//! its outer free dimension so that every piece keeps whole contiguous runs.
//!
//! The cut ([`Spread`]) is computed from the operands alone, so routing (which queue each
//! piece takes, [`LowerCx::route_spread`]) and building (the pieces' ops,
//! [`LowerCx::build_spread`]) compute it each and agree.

use penguin::{CastMode, DmaQueueHint, FunctionView, InstId, InstTile, Memory, OffloadedFmaData};
use penguin::{OffloadedMemCastData, OffloadedMemCpyData};

use super::{Group, LowerCx};
use crate::error::BirError;
use crate::program::{Engine, HwAp, Op};

/// Bytes an offloaded op's piece should carry at least.
const SPREAD_PIECE_BYTES: u64 = 64 * 1024;

/// How an offloaded op is cut: its operands' hardware patterns and the extent cut into
/// pieces of `per` (partitions, or elements of the outer free dimension when `transposing`).
struct Spread {
    hw: Vec<HwAp>,
    transposing: bool,
    extent: u32,
    per: u32,
}

impl Spread {
    /// The start of each piece.
    fn starts(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.extent).step_by(self.per as usize)
    }
}

impl<F: FunctionView + ?Sized> LowerCx<'_, F> {
    /// The cut of an offloaded op with operands `aps`.
    fn spread(&self, id: InstId, aps: &[&InstTile]) -> Result<Spread, BirError> {
        let probe = Engine::Dma(0);
        let hw: Vec<HwAp> = aps.iter().map(|t| self.hw_ap(id, probe, t)).collect::<Result<_, _>>()?;
        let refs: Vec<&HwAp> = hw.iter().collect();
        let (shape, _bases) = extract_offloaded_memcpy_shape_bases(&refs)?;
        let transposing = hw.iter().any(|ap| {
            ap.memory == Memory::Hbm && ap.partition_stride == 1 && ap.dims.first().is_some_and(|d| d.stride != 1)
        }) && hw.iter().all(|ap| ap.dims.len() == 1);
        let extent =
            if transposing { hw.first().and_then(|ap| ap.dims.first()).map_or(1, |d| d.num) } else { shape[0] };
        let bytes: u64 =
            hw.iter().map(|ap| ap.num_elems().saturating_mul(u64::from(ap.dtype.size_bytes()))).max().unwrap_or(0);
        let pieces = (bytes / SPREAD_PIECE_BYTES).clamp(1, u64::from(penguin::target::NUM_DMA_QUEUES)) as u32;
        let per = if transposing {
            extent.div_ceil(pieces).max(1)
        } else {
            extent.div_ceil(pieces).max(penguin::target::NUM_PARTITIONS / penguin::target::NUM_DMA_QUEUES)
        };
        Ok(Spread { hw, transposing, extent, per })
    }

    /// The queues of an offloaded op's pieces, one piece per queue in turn: a hinted op's
    /// pieces take the run of queues from `hint * pieces` (see `DmaQueueHint`), an unhinted
    /// one's the next queues of the round robin.
    pub(super) fn route_spread(
        &mut self,
        id: InstId,
        aps: &[&InstTile],
        hint: Option<DmaQueueHint>,
        out: &mut Vec<Group>,
    ) -> Result<(), BirError> {
        let spread = self.spread(id, aps)?;
        let queues = penguin::target::NUM_DMA_QUEUES;
        let first = hint.map(|DmaQueueHint(h)| {
            (u64::from(h) * u64::from(spread.extent.div_ceil(spread.per)) % u64::from(queues)) as u32
        });
        for start in spread.starts() {
            let engine = match first {
                Some(q) => Engine::Dma(((q + start / spread.per) % queues) as u8),
                None => self.next_queue(),
            };
            out.push(Group { engine, ops: 1 });
        }
        Ok(())
    }

    /// The ops of an offloaded op's pieces, in the order of [`Self::route_spread`]'s queues.
    fn build_spread(
        &self,
        id: InstId,
        aps: &[&InstTile],
        build: &dyn Fn(&[HwAp]) -> Option<Op>,
        out: &mut Vec<Op>,
    ) -> Result<(), BirError> {
        let spread = self.spread(id, aps)?;
        for start in spread.starts() {
            let count = spread.per.min(spread.extent - start);
            let pieces: Vec<HwAp> =
                spread
                    .hw
                    .iter()
                    .map(|ap| {
                        if spread.transposing {
                            free_slice(ap, start, count)
                        } else {
                            partition_slice(ap, start, count)
                        }
                    })
                    .collect::<Option<_>>()
                    .ok_or_else(|| BirError::Internal(format!("{id}: a piece of an offloaded op is out of range")))?;
            let op = build(&pieces).ok_or_else(|| BirError::Internal(format!("{id}: offloaded op lost an operand")))?;
            out.push(op);
        }
        Ok(())
    }
}

/// The seed's `extract_offloaded_memcpy_shape_bases`: the common iteration shape
/// `[partitions, free elements]` of an offloaded op's operands and each operand's base
/// (byte offset). Operands whose shapes differ are an error naming both shapes.
pub fn extract_offloaded_memcpy_shape_bases(aps: &[&HwAp]) -> Result<(Vec<u32>, Vec<u64>), BirError> {
    let shape_of = |ap: &HwAp| vec![ap.num_partitions, u32::try_from(ap.free_elems()).unwrap_or(u32::MAX)];
    let Some(first) = aps.first() else {
        return Err(BirError::Internal("an offloaded op without operands".into()));
    };
    let shape = shape_of(first);
    for ap in &aps[1..] {
        let other = shape_of(ap);
        if other != shape || ap.free_elems() != first.free_elems() {
            return Err(BirError::ShapeMismatch { a: shape, b: other });
        }
    }
    Ok((shape, aps.iter().map(|ap| ap.byte_offset).collect()))
}

/// `ap.byte_offset` moved by `index` steps of `stride` elements; `None` if it leaves `u64`.
fn step_bytes(ap: &HwAp, stride: i64, index: u32) -> Option<u64> {
    let step = i128::from(stride) * i128::from(index) * i128::from(ap.dtype.size_bytes());
    u64::try_from(i128::from(ap.byte_offset) + step).ok()
}

/// Elements `[start, start + count)` of the (only) free dimension of an access pattern;
/// `None` if the piece's offset does not fit (never for an access of a verified function).
fn free_slice(ap: &HwAp, start: u32, count: u32) -> Option<HwAp> {
    let mut out = ap.clone();
    if let Some(d) = out.dims.first_mut() {
        out.byte_offset = step_bytes(ap, d.stride, start)?;
        d.num = count;
    }
    Some(out)
}

/// Partitions `[start, start + count)` of an access pattern; `None` if the piece's offset or
/// first partition does not fit (never for an access of a verified function).
fn partition_slice(ap: &HwAp, start: u32, count: u32) -> Option<HwAp> {
    let mut out = ap.clone();
    out.num_partitions = count;
    if ap.memory == Memory::Hbm {
        out.byte_offset = step_bytes(ap, ap.partition_stride, start)?;
    } else {
        let first = i128::from(ap.start_partition) + i128::from(ap.partition_stride) * i128::from(start);
        out.start_partition = u32::try_from(first).ok()?;
    }
    Some(out)
}

/// Lower a tiled offloaded FMA (`dst = src0 * src1 + dst` on SBUF tiles) to DMA-queue FMAs
/// spread over the queues.
pub(super) fn codegen_tiled_offloaded_fma<F: FunctionView + ?Sized>(
    cx: &LowerCx<'_, F>,
    id: InstId,
    f: &OffloadedFmaData,
    out: &mut Vec<Op>,
) -> Result<(), BirError> {
    cx.build_spread(id, &[&f.dst, &f.src0, &f.src1], &fma_op, out)
}

/// Lower an untiled offloaded FMA over whole HBM tensors, spread over the queues by rows.
/// Its operands are already whole-tensor access patterns, so it is the tiled lowering.
pub(super) fn codegen_offloaded_fma<F: FunctionView + ?Sized>(
    cx: &LowerCx<'_, F>,
    id: InstId,
    f: &OffloadedFmaData,
    out: &mut Vec<Op>,
) -> Result<(), BirError> {
    codegen_tiled_offloaded_fma(cx, id, f, out)
}

fn fma_op(v: &[HwAp]) -> Option<Op> {
    match v {
        [dst, src0, src1] => Some(Op::DmaFma { dst: dst.clone(), src0: src0.clone(), src1: src1.clone() }),
        _ => None,
    }
}

fn copy_op(v: &[HwAp], cast: CastMode) -> Option<Op> {
    match v {
        [dst, src] => Some(Op::DmaCopy { dst: dst.clone(), src: src.clone(), cast }),
        _ => None,
    }
}

/// Lower a tiled offloaded copy to DMA copies spread over the queues.
pub(super) fn codegen_tiled_offloaded_mem_cpy<F: FunctionView + ?Sized>(
    cx: &LowerCx<'_, F>,
    id: InstId,
    c: &OffloadedMemCpyData,
    out: &mut Vec<Op>,
) -> Result<(), BirError> {
    cx.build_spread(id, &[&c.dst, &c.src], &|v| copy_op(v, CastMode::Rne), out)
}

/// Lower an untiled offloaded copy of whole HBM tensors, spread over the queues by rows.
/// Its operands are already whole-tensor access patterns, so it is the tiled lowering.
pub(super) fn codegen_offloaded_mem_cpy<F: FunctionView + ?Sized>(
    cx: &LowerCx<'_, F>,
    id: InstId,
    c: &OffloadedMemCpyData,
    out: &mut Vec<Op>,
) -> Result<(), BirError> {
    codegen_tiled_offloaded_mem_cpy(cx, id, c, out)
}

/// Lower an offloaded cast (a copy that converts to the destination dtype).
pub(super) fn codegen_offloaded_mem_cast<F: FunctionView + ?Sized>(
    cx: &LowerCx<'_, F>,
    id: InstId,
    c: &OffloadedMemCastData,
    out: &mut Vec<Op>,
) -> Result<(), BirError> {
    let cast = c.cast;
    cx.build_spread(id, &[&c.dst, &c.src], &|v| copy_op(v, cast), out)
}
