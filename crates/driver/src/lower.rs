//! A plan made a program: verified, lowered and verified again ([`lower`]), and, for `auto`'s
//! search, lowered and cycle-modeled with the cost it is weighed by ([`auto_cost`]).

use std::time::Instant;

use codegen::{AutoCost, CodegenError, GemmPlan};
use penguin::HwProfile;

use crate::cancel::{self, Cancel};
use crate::error::{DriverError, ErrorKind};

/// Milliseconds since `t`.
pub(crate) fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Verify, lower and verify the BIR of a plan.
pub fn lower(plan: &GemmPlan) -> Result<bir::Program, DriverError> {
    lower_cancellable(plan, None)
}

/// [`lower`], stopped by `cancel` ([`DriverError::Interrupted`]).
pub(crate) fn lower_cancellable(plan: &GemmPlan, cancel: Option<&Cancel>) -> Result<bir::Program, DriverError> {
    let verified = penguin::verify(&plan.function)
        .map_err(|e| DriverError::internal(format!("generated kernel failed verification (a bug): {e}")))?;
    cancel::check(cancel)?;
    let program = bir::lower_cancellable(verified, plan.config.target, cancel)?;
    cancel::check(cancel)?;
    bir::verify_program(&program)?;
    Ok(program)
}

/// Lower and cycle-model a plan (what `auto` weighs a candidate by, keeping both for the
/// candidate it chooses), with the time each took in ms.
pub(crate) fn lower_and_model(
    plan: &GemmPlan,
    hw: &HwProfile,
    cancel: Option<&Cancel>,
) -> Result<Lowered, CodegenError> {
    // A candidate that cannot be lowered or modeled is a bug in ntile, not the user's input.
    let t = Instant::now();
    let program = lower_cancellable(plan, cancel).map_err(|e| match e.kind() {
        ErrorKind::Bug => CodegenError::Internal(e.to_string()),
        ErrorKind::Interrupted => CodegenError::Interrupted,
        ErrorKind::Input => CodegenError::Unsupported(e.to_string()),
    })?;
    let lower_ms = ms(t);
    let t = Instant::now();
    let cycle = sim::model_cancellable(&program, hw, cancel).map_err(|e| match e {
        sim::SimError::Interrupted => CodegenError::Interrupted,
        e => CodegenError::Internal(format!("cycle model failed: {e}")),
    })?;
    Ok(Lowered { program, cycle, lower_ms, model_ms: ms(t) })
}

/// A lowered and modeled plan.
pub(crate) struct Lowered {
    pub(crate) program: bir::Program,
    pub(crate) cycle: sim::CycleReport,
    pub(crate) lower_ms: f64,
    pub(crate) model_ms: f64,
}

/// `auto`'s cost of a candidate: the cycle model's time and HBM bytes of its lowering.
pub(crate) fn auto_cost(
    plan: &GemmPlan,
    hw: &HwProfile,
    cancel: Option<&Cancel>,
) -> Result<(AutoCost, Lowered), CodegenError> {
    if cancel::stopped(cancel) {
        return Err(CodegenError::Interrupted);
    }
    let lowered = lower_and_model(plan, hw, cancel)?;
    Ok((AutoCost { time: lowered.cycle.total_ns, hbm_bytes: lowered.cycle.hbm_bytes }, lowered))
}
