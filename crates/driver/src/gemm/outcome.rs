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
    /// The cores of a GEMM run with `lnc` 2 (`plan`, `program` and `cycle` are then `None`).
    pub chip: Option<ChipOutcome>,
}

/// A GEMM divided between the cores of a logical NeuronCore.
#[derive(Debug)]
pub struct ChipOutcome {
    /// The dimension of C divided.
    pub split: codegen::Split,
    /// Each core's window of C.
    pub shares: Vec<codegen::Share>,
    /// Each core's plan, placed at its window.
    pub plans: Vec<GemmPlan>,
    /// The verified programs, one per core.
    pub chip: bir::Chip,
    /// The cycle model of the chip.
    pub cycle: sim::ChipReport,
}

impl ChipOutcome {
    /// What the timelines say of each core's kernel.
    pub fn kernel_infos(&self) -> Vec<sim::KernelInfo> {
        self.plans
            .iter()
            .zip(&self.shares)
            .enumerate()
            .map(|(i, (p, s))| {
                let mut info = crate::timeline::kernel_info(p);
                info.title = info.title.map(|t| {
                    format!("core {i}: rows {}..{} cols {}..{} of C  {t}", s.m0, s.m0 + s.m, s.n0, s.n0 + s.n)
                });
                info
            })
            .collect()
    }
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
            chip: None,
        }
    }

    /// A report and nothing else (the cores of a GEMM too large to unroll, modeled apart).
    pub(super) fn report_only(report: Report) -> Self {
        GemmOutcome {
            report,
            plan: None,
            program: None,
            cycle: None,
            extrapolated: None,
            c: None,
            c_bytes: None,
            chip: None,
        }
    }

    pub(super) fn chip(report: Report, chip: ChipOutcome) -> Self {
        GemmOutcome { chip: Some(chip), ..GemmOutcome::report_only(report) }
    }

    /// What the timelines say of the kernel (title, buffers, the tile grid), when it was
    /// planned whole.
    pub fn kernel_info(&self) -> Option<sim::KernelInfo> {
        self.plan.as_ref().map(crate::timeline::kernel_info)
    }

    /// The modeled engine timeline as Chrome/Perfetto trace-event JSON (`None` for an
    /// extrapolated GEMM, which has no per-instruction timeline).
    pub fn trace(&self) -> Option<String> {
        if let Some(c) = &self.chip {
            return Some(sim::chrome_trace_chip(&c.chip, &c.cycle, &c.kernel_infos()));
        }
        let (program, cycle, info) = (self.program.as_ref()?, self.cycle.as_ref()?, self.kernel_info()?);
        Some(sim::chrome_trace_with(program, cycle, &info))
    }

    /// The modeled engine timeline as SVG, with SBUF occupancy and the tile grid.
    pub fn timeline_svg(&self) -> Option<String> {
        if let Some(c) = &self.chip {
            return Some(sim::timeline_svg_chip(&c.chip, &c.cycle, &c.kernel_infos()));
        }
        let (program, cycle, info) = (self.program.as_ref()?, self.cycle.as_ref()?, self.kernel_info()?);
        Some(sim::timeline_svg_with(program, cycle, &info))
    }

    /// The tile grid alone as SVG.
    pub fn tile_grid_svg(&self) -> Option<String> {
        let (program, cycle, info) = (self.program.as_ref()?, self.cycle.as_ref()?, self.kernel_info()?);
        sim::tile_grid_svg(program, cycle, &info)
    }

    pub(super) fn extrapolated(report: Report, x: Extrapolated) -> Self {
        GemmOutcome {
            report,
            plan: None,
            program: None,
            cycle: None,
            extrapolated: Some(x),
            c: None,
            c_bytes: None,
            chip: None,
        }
    }
}
