//! Lowering of a dense matmul: its LoadStationary and MultiplyMoving, with the double-row
//! access patterns of the PE's double-row perf mode.

use penguin::{FunctionView, InstId, InstTile, MatMultData, PerfMode};

use super::LowerCx;
use crate::error::BirError;
use crate::program::{Dims, Engine, HwAp, Op};

/// Lower one matmul (the seed's `codegenMatMulOp`): a LoadStationary of the weights and a
/// MultiplyMoving that streams the moving operand into the bound PSUM region with the
/// group's accumulation flags and the perf mode.
pub(super) fn codegen_mat_mul_op<F: FunctionView + ?Sized>(
    cx: &LowerCx<'_, F>,
    id: InstId,
    m: &MatMultData,
) -> Result<[Op; 2], BirError> {
    let (stationary, moving) = match m.perf_mode {
        PerfMode::None => (cx.hw_ap(id, Engine::Pe, &m.stationary)?, cx.hw_ap(id, Engine::Pe, &m.moving)?),
        PerfMode::DoubleRow => cayman_matmul_double_row_ap(cx, id, m)?,
        PerfMode::DoubleRowGen3 => {
            return Err(BirError::Unsupported(format!(
                "{id}: perf_mode=`double_row_gen3` is not supported on {}",
                cx.target
            )));
        }
    };
    let ls = Op::LoadStationary {
        src: stationary,
        perf_mode: m.perf_mode,
        tile_position: m.tile_position,
        tile_size: m.tile_size,
    };
    let mm = Op::MultiplyMoving {
        dst: cx.hw_ap(id, Engine::Pe, &m.dst)?,
        src: moving,
        acc: m.flags(),
        perf_mode: m.perf_mode,
        tile_position: m.tile_position,
        tile_size: m.tile_size,
    };
    Ok([ls, mm])
}

/// The double-row access patterns of a matmul (the seed's `cayman_matmul_double_row_ap`):
/// both operands keep their size-2 pack axis, so the PE contracts `2 * P` rows per pass.
fn cayman_matmul_double_row_ap<F: FunctionView + ?Sized>(
    cx: &LowerCx<'_, F>,
    id: InstId,
    m: &MatMultData,
) -> Result<(HwAp, HwAp), BirError> {
    if !cx.target.info().double_row {
        return Err(BirError::Unsupported(format!("{id}: perf_mode=`double_row` is not supported on {}", cx.target)));
    }
    Ok((add_double_row_ap(cx, id, &m.stationary)?, add_double_row_ap(cx, id, &m.moving)?))
}

/// Give an operand's hardware pattern its size-2 pack axis as the outermost free dimension
/// (the seed's `addDoubleRowAP`): contraction rows `k` and `k + P` share a partition.
fn add_double_row_ap<F: FunctionView + ?Sized>(
    cx: &LowerCx<'_, F>,
    id: InstId,
    t: &InstTile,
) -> Result<HwAp, BirError> {
    let mut ap = cx.hw_ap(id, Engine::Pe, t)?;
    ap.dims = Dims::from(
        t.ap.split_outer(2)
            .ok_or_else(|| BirError::Internal(format!("{id}: double_row operand without a size-2 pack axis")))?,
    );
    if ap.dims.len() > Engine::Pe.max_free_dims() {
        return Err(BirError::TooManyStrides {
            inst: id,
            engine: Engine::Pe,
            dims: ap.dims.len(),
            max: Engine::Pe.max_free_dims(),
        });
    }
    Ok(ap)
}
