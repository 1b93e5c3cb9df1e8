//! The planner's one entry point: [`plan`] takes a [`PlanRequest`] (what to plan and how its
//! blocks are decided, or `auto`'s search with its cost) and a factory of base builders, and
//! returns the [`Planned`] GEMM.

use penguin::{GeneratedBuilder, HwProfile, IrBuilder};

use crate::auto_limits::AutoLimits;
use crate::error::CodegenError;
use crate::gemm::{GemmConfig, GemmPlan, Schedule};
use crate::schedule::{fitting, plan_buffered, search_plans, AutoChoice, AutoCost};

/// How a configuration's blocks are planned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Planning {
    /// The blocks as given; a blocked schedule's refilled block whose two slots do not fit
    /// SBUF gets one (the inner block first, then the outer one), reported in
    /// [`crate::CodegenStats::single_buffered`].
    #[default]
    Fixed,
    /// Default blocks, shrunk until they fit SBUF (halving N, then M, then K blocks); blocks
    /// are single-buffered only when no blocking fits with two slots.
    Fitting,
    /// The blocks as given with two slots per refilled block, or
    /// [`CodegenError::SbufCapacity`] when they do not fit: how `auto` plans a shortlisted
    /// candidate.
    DoubleBuffered,
}

impl Planning {
    /// Plan `cfg` this way over builders from `new_base`.
    pub(crate) fn plan<B: IrBuilder>(
        self,
        cfg: &GemmConfig,
        new_base: &dyn Fn(&str) -> B,
    ) -> Result<GemmPlan, CodegenError> {
        self.apply(cfg, &|c, single| plan_buffered(c, single, new_base))
    }

    /// Plan `cfg` this way with `plan_one` (a configuration, whether blocks that do not fit
    /// twice may be single-buffered), whole or in loops.
    pub(crate) fn apply<T>(
        self,
        cfg: &GemmConfig,
        plan_one: &dyn Fn(&GemmConfig, bool) -> Result<T, CodegenError>,
    ) -> Result<T, CodegenError> {
        match self {
            Planning::Fixed => plan_one(cfg, true),
            Planning::Fitting => fitting(cfg, plan_one),
            Planning::DoubleBuffered => plan_one(cfg, false),
        }
    }
}

/// What `auto` weighs a planned candidate by: its cost and whatever the cost made of it on
/// the way (its lowered program and cycle report, say), which the chosen candidate keeps so
/// that it is not made again.
pub type AutoCostFn<'a, X> = dyn Fn(&GemmPlan) -> Result<(AutoCost, X), CodegenError> + Sync + 'a;

/// `auto`'s search: its constraints, the profile its estimate ranks candidates under, how
/// many it weighs with `cost` and on how many threads.
pub struct AutoSearch<'a, X> {
    /// What the user fixed (loop order, block sizes).
    pub limits: AutoLimits,
    /// The hardware profile the estimate ranks candidates under (`cost` should model with
    /// the same one).
    pub hw: &'a HwProfile,
    /// Candidates weighed besides the blocked schedules' defaults ([`crate::AUTO_SHORTLIST`]).
    pub shortlist: usize,
    /// Candidates planned and costed at once (1: one after the other on this thread); the
    /// choice is the same for any number.
    pub threads: usize,
    /// The cost of a planned candidate.
    pub cost: &'a AutoCostFn<'a, X>,
}

/// What to plan: a configuration, how its blocks are planned, and `auto`'s search when its
/// schedule is `auto` (without one, `auto` plans `blocked-mn`).
pub struct PlanRequest<'a, X = ()> {
    /// The GEMM.
    pub config: &'a GemmConfig,
    /// How an explicit schedule's blocks are planned (`auto` decides for each candidate).
    pub planning: Planning,
    /// The search, for a configuration whose schedule is `auto`.
    pub search: Option<AutoSearch<'a, X>>,
}

impl<'a> PlanRequest<'a> {
    /// Plan `config` with its blocks as given ([`Planning::Fixed`]), without a search.
    pub fn new(config: &'a GemmConfig) -> Self {
        PlanRequest { config, planning: Planning::Fixed, search: None }
    }
}

impl<'a, X> PlanRequest<'a, X> {
    /// The same request planning its blocks as `planning` says.
    pub fn with_planning(self, planning: Planning) -> Self {
        PlanRequest { planning, ..self }
    }

    /// The same request with `auto`'s search.
    pub fn with_search<Y>(self, search: AutoSearch<'a, Y>) -> PlanRequest<'a, Y> {
        PlanRequest { config: self.config, planning: self.planning, search: Some(search) }
    }
}

/// A planned GEMM, and for `auto` what it chose with what its cost made of the choice.
#[derive(Debug)]
pub struct Planned<X = ()> {
    /// The plan (of the chosen candidate for `auto`).
    pub plan: GemmPlan,
    /// `auto`'s choice and the chosen candidate's cost companion (`None` for an explicit
    /// schedule).
    pub auto: Option<(AutoChoice, X)>,
}

/// Plan, emit and verify a GEMM kernel as `request` says, over base builders from
/// `new_base`: the planner opens each kernel it plans with `new_base(kernel_name)`, which
/// must return an empty builder for a kernel of that name ([`default_builder`] gives the
/// [`GeneratedBuilder`]); `auto` opens one per candidate, on the search's threads.
pub fn plan<B: IrBuilder, X: Send>(
    request: &PlanRequest<'_, X>,
    new_base: &(dyn Fn(&str) -> B + Sync),
) -> Result<Planned<X>, CodegenError> {
    match (&request.search, request.config.schedule) {
        (Some(search), Schedule::Auto) => {
            let (plan, choice, x) = search_plans(request.config, search, new_base)?;
            Ok(Planned { plan, auto: Some((choice, x)) })
        }
        _ => Ok(Planned { plan: request.planning.plan(request.config, new_base)?, auto: None }),
    }
}

/// The default base builder: a [`GeneratedBuilder`] for a kernel named `kernel_name`.
pub fn default_builder(kernel_name: &str) -> GeneratedBuilder {
    GeneratedBuilder::new(kernel_name)
}
