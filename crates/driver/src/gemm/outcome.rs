//! What a GEMM run gives: the [`GemmOutcome`], with the exporters of its modeled timeline.

use codegen::GemmPlan;

use super::report::Report;
use crate::extrapolate::Extrapolated;

/// What a GEMM run produced.
#[derive(Debug)]
pub struct GemmOutcome {
    /// The report (the `--json` report of `ntile gemm`).
    pub report: Report,
    /// The plan (`None` for an extrapolated GEMM).
    pub plan: Option<GemmPlan>,
    /// The verified lowering of the plan (`None` for an extrapolated GEMM).
    pub program: Option<bir::Program>,
    /// The cycle model of [`Self::program`].
    pub cycle: Option<sim::CycleReport>,
    /// The extrapolated GEMM (its looped program and figures), when it was not planned whole.
    pub extrapolated: Option<Extrapolated>,
    /// The simulated C as f32, row-major.
    pub c: Option<Vec<f32>>,
    /// C's bytes in its own dtype, when [`GemmOptions::c_bytes`](crate::GemmOptions::c_bytes) asked for them.
    pub c_bytes: Option<Vec<u8>>,
}

impl GemmOutcome {
    pub(super) fn planned(report: Report, plan: GemmPlan, program: bir::Program, cycle: sim::CycleReport) -> Self {
        GemmOutcome {
            report,
            plan: Some(plan),
            program: Some(program),
            cycle: Some(cycle),
            extrapolated: None,
            c: None,
            c_bytes: None,
        }
    }

    /// What the timelines say of the kernel (title, buffers, the tile grid), when it was
    /// planned whole.
    pub fn kernel_info(&self) -> Option<sim::KernelInfo> {
        self.plan.as_ref().map(crate::timeline::kernel_info)
    }

    /// The modeled engine timeline as Chrome/Perfetto trace-event JSON (`None` for an
    /// extrapolated GEMM, which has no per-instruction timeline).
    pub fn trace(&self) -> Option<String> {
        let (program, cycle, info) = (self.program.as_ref()?, self.cycle.as_ref()?, self.kernel_info()?);
        Some(sim::chrome_trace_with(program, cycle, &info))
    }

    /// The modeled engine timeline as SVG, with SBUF occupancy and the tile grid.
    pub fn timeline_svg(&self) -> Option<String> {
        let (program, cycle, info) = (self.program.as_ref()?, self.cycle.as_ref()?, self.kernel_info()?);
        Some(sim::timeline_svg_with(program, cycle, &info))
    }

    /// The tile grid alone as SVG.
    pub fn tile_grid_svg(&self) -> Option<String> {
        let (program, cycle, info) = (self.program.as_ref()?, self.cycle.as_ref()?, self.kernel_info()?);
        sim::tile_grid_svg(program, cycle, &info)
    }

    pub(super) fn extrapolated(report: Report, x: Extrapolated) -> Self {
        GemmOutcome { report, plan: None, program: None, cycle: None, extrapolated: Some(x), c: None, c_bytes: None }
    }
}
