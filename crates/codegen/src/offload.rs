//! The offloaded family: fused multiply-add, copy and cast executed by a DMA queue instead
//! of the PE. The tiled emitters take a packed bundle, as the seed's do, and unpack it.
//!
//! A bundle is a list of [`OffloadValue`]s: the operand tensors in the seed's order, then one
//! [`ShapeBases`] giving the common iteration shape `[rows, cols]` and where each operand's
//! window starts. FMA: `(src0, src1, dst, shape_bases)`; memcpy: `(src, dst, shape_bases)`.
//! A window of an on-chip tensor covers partitions `[base.partition, + rows)` and `cols`
//! contiguous elements from `base.offset` in each; a window of an HBM tensor covers `rows`
//! rows of the tensor's row length from element `base.offset`, `cols` elements each.

use penguin::{
    AccessPattern, CastMode, FunctionView, InstData, InstId, InstTile, IrBuilder, OffloadedFmaData,
    OffloadedMemCastData, OffloadedMemCpyData, TensorId,
};

use crate::error::CodegenError;
use crate::neuron::NeuronCodegen;

/// Where one operand's window starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Base {
    /// First partition (on-chip operands; 0 for HBM).
    pub partition: u32,
    /// Element offset (inside the partition on chip; from the tensor's start in HBM).
    pub offset: i64,
}

/// The common iteration shape of an offloaded op and each operand's base.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeBases {
    /// `[rows, cols]`.
    pub shape: [u32; 2],
    /// One base per operand, in bundle order.
    pub bases: Vec<Base>,
}

/// One value of an offloaded emitter's bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OffloadValue {
    /// An operand tensor.
    Tensor(TensorId),
    /// The iteration shape and bases (last).
    ShapeBases(ShapeBases),
}

fn unpack<const N: usize>(
    what: &'static str,
    names: &'static str,
    bundle: &[OffloadValue],
) -> Result<([TensorId; N], ShapeBases), CodegenError> {
    if bundle.len() != N + 1 {
        let direction = if bundle.len() < N + 1 { "too few" } else { "too many" };
        return Err(CodegenError::Bundle(format!(
            "{what}: {direction} values to unpack: expected {} ({names}), got {}",
            N + 1,
            bundle.len()
        )));
    }
    let mut tensors = [TensorId(0); N];
    for (i, v) in bundle[..N].iter().enumerate() {
        match v {
            OffloadValue::Tensor(t) => tensors[i] = *t,
            OffloadValue::ShapeBases(_) => {
                return Err(CodegenError::Bundle(format!("{what}: value {i} of ({names}) must be a tensor")));
            }
        }
    }
    match &bundle[N] {
        OffloadValue::ShapeBases(sb) if sb.bases.len() == N => Ok((tensors, sb.clone())),
        OffloadValue::ShapeBases(sb) => {
            Err(CodegenError::Bundle(format!("{what}: shape_bases has {} bases for {N} operands", sb.bases.len())))
        }
        OffloadValue::Tensor(_) => {
            Err(CodegenError::Bundle(format!("{what}: the last value of ({names}) must be shape_bases")))
        }
    }
}

impl<B: IrBuilder> NeuronCodegen<B> {
    /// The window of `tensor` at `base` with the bundle's shape.
    fn window(&self, tensor: TensorId, [rows, cols]: [u32; 2], base: Base) -> Result<InstTile, CodegenError> {
        let t = self
            .view()
            .tensor(tensor)
            .ok_or_else(|| CodegenError::BadOperand(format!("operand tensor {tensor} does not exist")))?;
        let ap = if t.memory.is_on_chip() {
            AccessPattern::on_chip(base.partition, rows, base.offset, cols)
        } else {
            let row_len = t.shape.last().copied().unwrap_or(1);
            AccessPattern { offset: base.offset, ..AccessPattern::hbm_rows(row_len, 0, rows, 0, cols) }
        };
        Ok(InstTile { tensor, memory: t.memory, dtype: t.dtype, ap })
    }

    /// The seed's `tiled_offloaded_fma_inst`: unpack `(src0, src1, dst, shape_bases)` and emit
    /// a `TiledOffloadedFMA` (`dst = src0 * src1 + dst`, fp32 inside, rounded once to dst's
    /// dtype) through [`Self::process_new_neuroninst`]; a DMA queue executes it.
    pub fn tiled_offloaded_fma_inst(&mut self, bundle: &[OffloadValue]) -> Result<InstId, CodegenError> {
        let ([src0, src1, dst], sb) = unpack::<3>("tiled_offloaded_fma_inst", "src0, src1, dst, shape_bases", bundle)?;
        let f = OffloadedFmaData {
            src0: self.window(src0, sb.shape, sb.bases[0])?,
            src1: self.window(src1, sb.shape, sb.bases[1])?,
            dst: self.window(dst, sb.shape, sb.bases[2])?,
        };
        self.process_new_neuroninst(InstData::TiledOffloadedFma(f))
    }

    /// The seed's `tiled_offloaded_memcpy_inst`: unpack `(src, dst, shape_bases)` and emit a
    /// `TiledOffloadedMemCpy` through [`Self::process_new_neuroninst`].
    pub fn tiled_offloaded_memcpy_inst(&mut self, bundle: &[OffloadValue]) -> Result<InstId, CodegenError> {
        let ([src, dst], sb) = unpack::<2>("tiled_offloaded_memcpy_inst", "src, dst, shape_bases", bundle)?;
        let c = OffloadedMemCpyData {
            src: self.window(src, sb.shape, sb.bases[0])?,
            dst: self.window(dst, sb.shape, sb.bases[1])?,
        };
        self.process_new_neuroninst(InstData::TiledOffloadedMemCpy(c))
    }

    /// Emit an `OffloadedMemCast`: a DMA copy converting `src` to `dst`'s dtype (RNE, or
    /// saturating).
    pub fn offloaded_memcast_inst(
        &mut self,
        dst: InstTile,
        src: InstTile,
        cast: CastMode,
    ) -> Result<InstId, CodegenError> {
        self.process_new_neuroninst(InstData::OffloadedMemCast(OffloadedMemCastData { dst, src, cast, queue: None }))
    }

    /// The untiled twin of [`Self::tiled_offloaded_fma_inst`]: whole HBM tensors.
    pub fn offloaded_fma_inst(
        &mut self,
        src0: TensorId,
        src1: TensorId,
        dst: TensorId,
    ) -> Result<InstId, CodegenError> {
        let [src0, src1, dst] = [src0, src1, dst].map(|t| self.whole(t));
        let f = OffloadedFmaData { src0: src0?, src1: src1?, dst: dst? };
        self.process_new_neuroninst(InstData::OffloadedFma(f))
    }

    /// The untiled twin of [`Self::tiled_offloaded_memcpy_inst`]: whole HBM tensors.
    pub fn offloaded_memcpy_inst(&mut self, src: TensorId, dst: TensorId) -> Result<InstId, CodegenError> {
        let c = OffloadedMemCpyData { src: self.whole(src)?, dst: self.whole(dst)? };
        self.process_new_neuroninst(InstData::OffloadedMemCpy(c))
    }

    fn whole(&self, tensor: TensorId) -> Result<InstTile, CodegenError> {
        let t = self
            .view()
            .tensor(tensor)
            .cloned()
            .ok_or_else(|| CodegenError::BadOperand(format!("operand tensor {tensor} does not exist")))?;
        if t.memory != penguin::Memory::Hbm {
            return Err(CodegenError::BadOperand(format!("untiled offloaded operand `{}` must be in hbm", t.name)));
        }
        Ok(penguin::whole_tile(tensor, &t))
    }
}

#[cfg(test)]
mod tests {
    use penguin::{DType, GeneratedBuilder, InstData, NDTile, Target};

    use super::*;

    fn cg() -> (NeuronCodegen<GeneratedBuilder>, [TensorId; 3]) {
        let mut c = NeuronCodegen::new(GeneratedBuilder::new("k"), Target::Trn2, "k");
        let nd = NDTile { partitions: 128, free: vec![64], dtype: DType::Fp32 };
        let t = [c.alloc_sbuf("a", &nd).unwrap(), c.alloc_sbuf("b", &nd).unwrap(), c.alloc_sbuf("c", &nd).unwrap()];
        (c, t)
    }

    fn sb(n: usize) -> OffloadValue {
        OffloadValue::ShapeBases(ShapeBases { shape: [128, 64], bases: vec![Base::default(); n] })
    }

    #[test]
    fn fma_bundle_unpacks_and_emits() {
        let (mut c, [a, b, d]) = cg();
        let bundle = [OffloadValue::Tensor(a), OffloadValue::Tensor(b), OffloadValue::Tensor(d), sb(3)];
        let id = c.tiled_offloaded_fma_inst(&bundle).unwrap();
        let Some(InstData::TiledOffloadedFma(f)) = c.function().inst(id) else { panic!("not an FMA") };
        assert_eq!((f.src0.tensor, f.src1.tensor, f.dst.tensor), (a, b, d));
        assert_eq!(f.dst.ap.shape(), vec![128, 64]);
    }

    #[test]
    fn bundles_of_the_wrong_size_say_expected_and_given() {
        let (mut c, [a, b, d]) = cg();
        let short = [OffloadValue::Tensor(a), OffloadValue::Tensor(b), sb(3)];
        assert_eq!(
            c.tiled_offloaded_fma_inst(&short).unwrap_err().to_string(),
            "tiled_offloaded_fma_inst: too few values to unpack: expected 4 (src0, src1, dst, shape_bases), got 3"
        );
        let long = [OffloadValue::Tensor(a), OffloadValue::Tensor(b), OffloadValue::Tensor(d), sb(2)];
        assert_eq!(
            c.tiled_offloaded_memcpy_inst(&long).unwrap_err().to_string(),
            "tiled_offloaded_memcpy_inst: too many values to unpack: expected 3 (src, dst, shape_bases), got 4"
        );
        let no_sb = [OffloadValue::Tensor(a), OffloadValue::Tensor(b), OffloadValue::Tensor(d)];
        assert_eq!(
            c.tiled_offloaded_memcpy_inst(&no_sb).unwrap_err().to_string(),
            "tiled_offloaded_memcpy_inst: the last value of (src, dst, shape_bases) must be shape_bases"
        );
    }

    #[test]
    fn memcpy_of_mismatched_dtypes_is_refused_by_the_verifier() {
        let mut c = NeuronCodegen::new(GeneratedBuilder::new("k"), Target::Trn2, "k");
        let a = c.alloc_sbuf("a", &NDTile { partitions: 8, free: vec![8], dtype: DType::Fp32 }).unwrap();
        let b = c.alloc_sbuf("b", &NDTile { partitions: 8, free: vec![8], dtype: DType::Bf16 }).unwrap();
        let bundle = [
            OffloadValue::Tensor(a),
            OffloadValue::Tensor(b),
            OffloadValue::ShapeBases(ShapeBases { shape: [8, 8], bases: vec![Base::default(); 2] }),
        ];
        c.tiled_offloaded_memcpy_inst(&bundle).unwrap();
        c.finalize_kernel().unwrap();
        let err = c.finalize().unwrap_err();
        assert!(err.to_string().contains("memcpy cannot convert fp32 to bf16"), "{err}");
    }
}
