//! The reduced GEMMs of an extrapolation: each planned on a thread of its own and given to the
//! fit as JSON, at one of two levels ([`Level`]).

use codegen::{GemmConfig, GemmPlan, PlanRequest, Planning};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::figures::Figures;
use crate::cancel::Cancel;
use crate::error::DriverError;
use crate::error::ExtrapolateError;

/// One reduced GEMM, planned and lowered, as JSON.
pub(super) struct Reduced {
    pub(super) program: Value,
    pub(super) figures: Value,
    pub(super) instructions: u64,
}

pub(super) fn encode<T: Serialize>(v: &T) -> Result<Value, ExtrapolateError> {
    serde_json::to_value(v)
        .map_err(|e| ExtrapolateError::reduced(DriverError::internal(format!("cannot encode a reduced program: {e}"))))
}

/// Which program the reduced GEMMs give to the fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Level {
    /// The Penguin function rolled along the schedule's nest (`GemmPlan::looped_nest`), lowered
    /// natively once fitted: every engine stream keeps the nest, so the model jumps.
    Nest,
    /// The BIR lowering rolled by `bir::roll` (streams loop on their own).
    Rolled,
}

/// A looped function as the fit sees it: its tensors as a list (the function keeps them in a
/// map by name, which a JSON document would reorder, renumbering them).
#[derive(Serialize, Deserialize)]
pub(super) struct NestDoc {
    tensors: Vec<penguin::TensorData>,
    function: penguin::LoopedFunction,
}

impl NestDoc {
    pub(super) fn of(mut function: penguin::LoopedFunction) -> NestDoc {
        let tensors = std::mem::take(&mut function.header.tensors).into_values().collect();
        NestDoc { tensors, function }
    }

    pub(super) fn function(self) -> penguin::LoopedFunction {
        let mut f = self.function;
        f.header.tensors = self.tensors.into_iter().map(|t| (t.name.clone(), t)).collect();
        f
    }
}

/// Plan (with `cfg`'s blocks, or `plan` when given) one reduced GEMM and give its program at
/// `level`.
fn reduce(
    cfg: &GemmConfig,
    plan: Option<GemmPlan>,
    (double, level): (bool, Level),
    cancel: Option<&Cancel>,
) -> Result<Reduced, ExtrapolateError> {
    let plan = match plan {
        Some(p) => p,
        None => {
            let planning = if double { Planning::DoubleBuffered } else { Planning::Fixed };
            let request = PlanRequest::new(cfg).with_planning(planning);
            codegen::plan(&request, &crate::cancel::builder(cancel)).map_err(ExtrapolateError::Plan)?.plan
        }
    };
    let mut unrolled = crate::lower::lower_cancellable(&plan, cancel).map_err(ExtrapolateError::reduced)?;
    let figures = Figures::of(&plan, &unrolled);
    // Hold as little as possible at once.
    let program = match level {
        Level::Nest => {
            drop(unrolled);
            encode(&NestDoc::of(plan.looped_nest()))?
        }
        Level::Rolled => {
            drop(plan);
            // Origins change every iteration: they would keep every loop from rolling.
            unrolled.streams.iter_mut().flatten().for_each(|i| i.origin = None);
            encode(&bir::roll_owned(unrolled))?
        }
    };
    Ok(Reduced { program, figures: encode(&figures)?, instructions: figures.bir_instructions })
}

/// A reduced GEMM to plan, and its plan when it was made already.
pub(super) type Job = (GemmConfig, Option<GemmPlan>);

/// Run `jobs` on up to `threads` threads, results in order.
pub(super) fn run_all(
    jobs: Vec<Job>,
    double: bool,
    level: Level,
    threads: usize,
    cancel: Option<&Cancel>,
) -> Vec<Result<Reduced, ExtrapolateError>> {
    let n = jobs.len();
    let slots: Vec<std::sync::Mutex<Option<Job>>> = jobs.into_iter().map(|j| std::sync::Mutex::new(Some(j))).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(slot) = slots.get(i) else { break };
            let job = slot.lock().ok().and_then(|mut s| s.take());
            let r = match job {
                Some(_) if crate::cancel::stopped(cancel) => Err(ExtrapolateError::reduced(DriverError::Interrupted)),
                Some((cfg, plan)) => reduce(&cfg, plan, (double, level), cancel),
                None => Err(ExtrapolateError::reduced(DriverError::internal("a reduced GEMM was taken twice (a bug)"))),
            };
            out.push((i, r));
        }
        out
    };
    let mut results: Vec<(usize, Result<Reduced, ExtrapolateError>)> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads.clamp(1, n.max(1)))
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(scope, work).ok())
            .collect();
        let mut all = work();
        for h in helpers {
            match h.join() {
                Ok(part) => all.extend(part),
                Err(_) => all.push((
                    usize::MAX,
                    Err(ExtrapolateError::reduced(DriverError::internal("a reduced GEMM's thread panicked (a bug)"))),
                )),
            }
        }
        all
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}
