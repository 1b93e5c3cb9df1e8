//! The GEMM planner: `C[M, N] = A[M, K] @ B[K, N]` split into hardware-legal tiles.
//!
//! Tiles are 128 (M) x 128 (K) x 512 (N), ragged at the edges; no padding reaches the user.
//! The kernel's HBM tensors are `a` (`[M, K]`, or `[K, M]` when `lhs_transposed`), `b`
//! (`[K, N]`) in `input_dtype`, and the output `c` (`[M, N]`) in `out_dtype`. Operands are
//! cast to their matmul dtypes by the DMA that loads them; A is transposed on load by the
//! access pattern (partition = k, free = m).
//!
//! The `naive` schedule: for each m tile and n tile, for each k tile load the A^T tile and
//! the B tile into one of two SBUF buffers each, matmul into one PSUM accumulation group
//! (START on the first k tile, STOP on the last, through [`combine_matmult_tiles`]); then
//! copy PSUM to SBUF on ACT or DVE in turn (casting to the output dtype) and store to HBM.
//! Accumulation groups rotate over the 8 PSUM banks.

use std::fmt;
use std::str::FromStr;

use penguin::{
    AccessPattern, ComputeEngine, DType, DmaCopyData, Function, GeneratedBuilder, InstData, InstTile, Memory, NDTile,
    PerfMode, Target, TensorCopyData, TensorId, TilePosition, TileSize,
};
use serde::{Deserialize, Serialize};

use crate::combine::{combine_matmult_tiles, MatMultAccumulation, MatMultSubTile};
use crate::error::CodegenError;
use crate::neuron::{CodegenStats, NeuronCodegen};

/// Rows of C per tile (PE columns / PSUM partitions).
pub const M_TILE: u64 = 128;
/// Contraction rows per matmul (SBUF partitions).
pub const K_TILE: u64 = 128;
/// Columns of C per tile (one PSUM bank of fp32).
pub const N_TILE: u64 = 512;

/// A loop nest for the GEMM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// Loop m, n, k; load both operand tiles every step.
    #[default]
    Naive,
}

impl Schedule {
    /// The text name.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Naive => "naive",
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for a schedule name that is unknown or not available yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("schedule `{0}` is not available (available: naive)")]
pub struct UnknownSchedule(pub String);

impl FromStr for Schedule {
    type Err = UnknownSchedule;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "naive" => Ok(Schedule::Naive),
            _ => Err(UnknownSchedule(s.to_string())),
        }
    }
}

/// What to plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GemmConfig {
    /// Rows of A and C.
    pub m: u64,
    /// Contraction length.
    pub k: u64,
    /// Columns of B and C.
    pub n: u64,
    /// Matmul dtype of A.
    pub lhs_dtype: DType,
    /// Matmul dtype of B.
    pub rhs_dtype: DType,
    /// Dtype of C.
    pub out_dtype: DType,
    /// Dtype of A and B in HBM (cast to the matmul dtypes on load).
    pub input_dtype: DType,
    /// The target.
    pub target: Target,
    /// The loop nest.
    pub schedule: Schedule,
    /// A is given as `[K, M]`.
    pub lhs_transposed: bool,
}

impl GemmConfig {
    /// A dense GEMM with both operands in `dtype`, fp32 inputs and output, naive schedule.
    pub fn new(m: u64, k: u64, n: u64, dtype: DType, target: Target) -> Self {
        GemmConfig {
            m,
            k,
            n,
            lhs_dtype: dtype,
            rhs_dtype: dtype,
            out_dtype: DType::Fp32,
            input_dtype: DType::Fp32,
            target,
            schedule: Schedule::Naive,
            lhs_transposed: false,
        }
    }

    /// Check shapes and dtypes against the target.
    pub fn validate(&self) -> Result<(), CodegenError> {
        const LIMIT: u64 = 1 << 20;
        for (name, v) in [("m", self.m), ("k", self.k), ("n", self.n)] {
            if v == 0 || v > LIMIT {
                return Err(CodegenError::BadGemm(format!("{name} = {v} is out of range (1..={LIMIT})")));
            }
        }
        for (what, d) in [("lhs", self.lhs_dtype), ("rhs", self.rhs_dtype)] {
            if !d.is_float() {
                return Err(CodegenError::BadGemm(format!(
                    "{what} dtype {d} is not supported for a dense GEMM (use fp32, bf16, fp16 or an fp8 type)"
                )));
            }
            if d == DType::Fp8e4m3fn && !self.target.info().fp8e4m3fn {
                return Err(CodegenError::BadGemm(format!(
                    "{what} dtype fp8e4m3fn (OCP, max 448) is only supported on trn3; {} uses fp8e4m3 (IEEE-like, max 240)",
                    self.target
                )));
            }
        }
        if !matches!(self.out_dtype, DType::Fp32 | DType::Bf16 | DType::Fp16) {
            return Err(CodegenError::BadGemm(format!(
                "out dtype {} is not supported (use fp32, bf16 or fp16)",
                self.out_dtype
            )));
        }
        if !matches!(self.input_dtype, DType::Fp32 | DType::Bf16 | DType::Fp16) {
            return Err(CodegenError::BadGemm(format!(
                "input dtype {} is not supported (use fp32, bf16 or fp16)",
                self.input_dtype
            )));
        }
        Ok(())
    }

    /// Shape of the HBM tensor `a`.
    pub fn lhs_shape(&self) -> Vec<u64> {
        if self.lhs_transposed {
            vec![self.k, self.m]
        } else {
            vec![self.m, self.k]
        }
    }
}

/// A planned GEMM kernel.
#[derive(Clone, Debug)]
pub struct GemmPlan {
    /// The verified function.
    pub function: Function,
    /// What the codegen layer counted.
    pub stats: CodegenStats,
    /// What was planned.
    pub config: GemmConfig,
}

/// `[start, start + len)` pieces of `0..total` of at most `tile` each.
fn tiles(total: u64, tile: u64) -> impl Iterator<Item = (u64, u32)> {
    (0..total.div_ceil(tile)).map(move |i| (i * tile, (tile.min(total - i * tile)) as u32))
}

struct Buffers {
    lhs: [TensorId; 2],
    rhs: [TensorId; 2],
    out: [TensorId; 2],
    psum: Vec<TensorId>,
}

/// Plan, emit and verify a GEMM kernel.
pub fn plan_gemm(cfg: &GemmConfig) -> Result<GemmPlan, CodegenError> {
    cfg.validate()?;
    let mut cg = NeuronCodegen::new(GeneratedBuilder::new("gemm"), cfg.target, "gemm");
    let a = cg.add_input("a", cfg.lhs_shape(), cfg.input_dtype)?;
    let b = cg.add_input("b", vec![cfg.k, cfg.n], cfg.input_dtype)?;
    let c = cg.add_output("c", vec![cfg.m, cfg.n], cfg.out_dtype)?;
    let nd = |free: u64, dtype| NDTile { partitions: 128, free: vec![free as u32], dtype };
    let bufs = Buffers {
        lhs: [
            cg.alloc_sbuf("lhs_t0", &nd(M_TILE, cfg.lhs_dtype))?,
            cg.alloc_sbuf("lhs_t1", &nd(M_TILE, cfg.lhs_dtype))?,
        ],
        rhs: [cg.alloc_sbuf("rhs0", &nd(N_TILE, cfg.rhs_dtype))?, cg.alloc_sbuf("rhs1", &nd(N_TILE, cfg.rhs_dtype))?],
        out: [cg.alloc_sbuf("out0", &nd(N_TILE, cfg.out_dtype))?, cg.alloc_sbuf("out1", &nd(N_TILE, cfg.out_dtype))?],
        psum: (0..cfg.target.info().psum_num_banks)
            .map(|bank| cg.alloc_psum_bank(&format!("psum{bank}"), bank, 128))
            .collect::<Result<_, _>>()?,
    };
    match cfg.schedule {
        Schedule::Naive => emit_naive(&mut cg, cfg, [a, b, c], &bufs)?,
    }
    cg.finalize_kernel()?;
    let stats = cg.stats();
    let function = cg.finalize()?;
    Ok(GemmPlan { function, stats, config: cfg.clone() })
}

fn on_chip(tensor: TensorId, memory: Memory, dtype: DType, parts: u32, free: u32) -> InstTile {
    InstTile { tensor, memory, dtype, ap: AccessPattern::on_chip(0, parts, 0, free) }
}

fn hbm(tensor: TensorId, dtype: DType, ap: AccessPattern) -> InstTile {
    InstTile { tensor, memory: Memory::Hbm, dtype, ap }
}

fn emit_naive(
    cg: &mut NeuronCodegen<GeneratedBuilder>,
    cfg: &GemmConfig,
    [a, b, c]: [TensorId; 3],
    bufs: &Buffers,
) -> Result<(), CodegenError> {
    let mut kstep = 0usize;
    let mut group = 0usize;
    for (m0, msz) in tiles(cfg.m, M_TILE) {
        for (n0, nsz) in tiles(cfg.n, N_TILE) {
            let bank = bufs.psum[group % bufs.psum.len()];
            let psum = on_chip(bank, Memory::Psum, DType::Fp32, msz, nsz);
            let mut acc = MatMultAccumulation::open(psum.clone(), cfg.k as u32)?;
            for (k0, ksz) in tiles(cfg.k, K_TILE) {
                let slot = kstep % 2;
                kstep += 1;
                let lhs = on_chip(bufs.lhs[slot], Memory::Sbuf, cfg.lhs_dtype, ksz, msz);
                let lhs_src = if cfg.lhs_transposed {
                    AccessPattern::hbm_rows(cfg.m, k0, ksz, m0, msz)
                } else {
                    AccessPattern::hbm_cols(cfg.k, m0, msz, k0, ksz)
                };
                cg.process_new_neuroninst(InstData::DmaCopy(DmaCopyData {
                    dst: lhs.clone(),
                    src: hbm(a, cfg.input_dtype, lhs_src),
                    cast: penguin::CastMode::Rne,
                }))?;
                let rhs = on_chip(bufs.rhs[slot], Memory::Sbuf, cfg.rhs_dtype, ksz, nsz);
                cg.process_new_neuroninst(InstData::DmaCopy(DmaCopyData {
                    dst: rhs.clone(),
                    src: hbm(b, cfg.input_dtype, AccessPattern::hbm_rows(cfg.n, k0, ksz, n0, nsz)),
                    cast: penguin::CastMode::Rne,
                }))?;
                let mm = combine_matmult_tiles(
                    &mut acc,
                    MatMultSubTile {
                        dst: psum.clone(),
                        stationary: lhs,
                        moving: rhs,
                        k_start: k0 as u32,
                        perf_mode: PerfMode::None,
                        tile_position: TilePosition::default(),
                        tile_size: TileSize::default(),
                    },
                )?;
                cg.process_new_neuroninst(InstData::MatMult(mm))?;
            }
            let slot = group % 2;
            let engine = if group % 2 == 0 { ComputeEngine::Act } else { ComputeEngine::Dve };
            group += 1;
            let out = on_chip(bufs.out[slot], Memory::Sbuf, cfg.out_dtype, msz, nsz);
            cg.process_new_neuroninst(InstData::TensorCopy(TensorCopyData { engine, dst: out.clone(), src: psum }))?;
            cg.process_new_neuroninst(InstData::DmaCopy(DmaCopyData {
                dst: hbm(c, cfg.out_dtype, AccessPattern::hbm_rows(cfg.n, m0, msz, n0, nsz)),
                src: out,
                cast: penguin::CastMode::Rne,
            }))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use penguin::{EngineAccumulationType as Acc, FunctionView};

    use super::*;

    #[test]
    fn ragged_tiles_cover_the_range() {
        let t: Vec<_> = tiles(300, 128).collect();
        assert_eq!(t, vec![(0, 128), (128, 128), (256, 44)]);
        assert_eq!(tiles(1, 128).collect::<Vec<_>>(), vec![(0, 1)]);
    }

    #[test]
    fn naive_plan_counts() {
        let plan = plan_gemm(&GemmConfig::new(300, 1000, 777, DType::Bf16, Target::Trn2)).unwrap();
        // 3 m tiles x 2 n tiles x 8 k tiles.
        assert_eq!(plan.stats.matmuls, 48);
        assert_eq!(plan.stats.psum_groups, 6);
        assert_eq!(plan.stats.max_live_psum_groups, 1);
        let f = &plan.function;
        let starts = f
            .layout()
            .iter()
            .filter_map(|&i| match f.inst(i) {
                Some(InstData::MatMult(m)) => Some(m.flags()),
                _ => None,
            })
            .filter(|fl| fl.contains(Acc::START))
            .count();
        assert_eq!(starts, 6);
        assert_eq!(f.outputs, vec![TensorId(2)]);
    }

    #[test]
    fn fp8e4m3fn_is_refused_before_trn3() {
        let mut cfg = GemmConfig::new(4, 4, 4, DType::Fp8e4m3fn, Target::Trn2);
        assert!(matches!(plan_gemm(&cfg), Err(CodegenError::BadGemm(m)) if m.contains("only supported on trn3")));
        cfg.target = Target::Trn3;
        assert!(plan_gemm(&cfg).is_ok());
    }

    #[test]
    fn zero_sized_gemm_is_refused() {
        let cfg = GemmConfig::new(0, 4, 4, DType::Bf16, Target::Trn2);
        assert_eq!(plan_gemm(&cfg).unwrap_err().to_string(), "m = 0 is out of range (1..=1048576)");
    }
}
