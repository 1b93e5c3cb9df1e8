//! Planning GEMMs through codegen's one entry point with the default builder.

use codegen::{CodegenError, GemmConfig, GemmPlan, PlanRequest, Planning};

/// Plan `cfg` with its blocks as given ([`Planning::Fixed`]).
pub fn plan_gemm(cfg: &GemmConfig) -> Result<GemmPlan, CodegenError> {
    codegen::plan(&PlanRequest::new(cfg), &codegen::default_builder).map(|p| p.plan)
}

/// Plan `cfg` with default blocks shrunk until they fit SBUF ([`Planning::Fitting`]), as the
/// CLI plans an explicit schedule.
pub fn plan_gemm_fitting(cfg: &GemmConfig) -> Result<GemmPlan, CodegenError> {
    let request = PlanRequest::new(cfg).with_planning(Planning::Fitting);
    codegen::plan(&request, &codegen::default_builder).map(|p| p.plan)
}

/// The BIR program `plan` lowers to on `target` (verified first).
#[cfg(feature = "bir")]
pub fn lower_plan(plan: &GemmPlan, target: penguin::Target) -> bir::Program {
    bir::lower(penguin::verify(&plan.function).unwrap(), target).unwrap()
}

/// The program of an `m x k x n` bf16 GEMM planned under `schedule` with the blocks of
/// [`GemmConfig::new`] (A transposed in HBM when `lhs_transposed`), lowered for `target`.
#[cfg(feature = "bir")]
pub fn planned(
    target: penguin::Target,
    schedule: codegen::Schedule,
    lhs_transposed: bool,
    m: u64,
    k: u64,
    n: u64,
) -> bir::Program {
    let mut cfg = GemmConfig::new(m, k, n, penguin::DType::Bf16, target);
    cfg.schedule = schedule;
    cfg.lhs_transposed = lhs_transposed;
    lower_plan(&plan_gemm(&cfg).unwrap(), target)
}
