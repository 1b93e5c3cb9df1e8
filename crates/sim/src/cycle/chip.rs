//! The cycle model of a [`Chip`]: every core's streams replayed together, each core with
//! its own engines, PE array and DMA engines, all of them drawing on HBM.
//!
//! The streams of core `c` are streams `c * NUM_ENGINES ..` of one replay (each core's
//! semaphores renumbered after the previous cores', the chip's shared semaphores one counter
//! for every core), so the rules of the one-core model hold per core, a wait on a shared
//! semaphore is released by the other core's signal as any wait by its signaller, and the
//! replay still commits instructions in start order across cores.
//! HBM: a transfer's granules pass through its own core's HBM server (`hbm_bytes_per_ns`,
//! what one core draws alone) and then through one server the cores share
//! (`hbm_shared_bytes_per_ns`, the budget of the logical core) [S1][S5][S29]; a one-core
//! chip is modeled exactly as [`super::model_with`] models its program.

use bir::{Chip, Program, SemId, NUM_ENGINES};
use penguin::HwProfile;

use super::report::CycleReport;
use super::source::Flat;
use super::{NoObserver, Polled, Replay};
use crate::error::SimError;

/// What the cycle model found for a chip.
#[derive(Clone, Debug, PartialEq)]
pub struct ChipReport {
    /// Time from the start (0) to the last completion on any core, in ns.
    pub total_ns: f64,
    /// Each core's own report: its slices, busy times, HBM bytes, FLOPs and its own last
    /// completion as `total_ns`.
    pub cores: Vec<CycleReport>,
    /// Time the shared HBM budget was busy (0 for one core).
    pub hbm_shared_busy_ns: f64,
    /// The shared budget's rate, B/ns (the profile's `hbm_shared_bytes_per_ns`).
    pub hbm_shared_bytes_per_ns: f64,
}

impl ChipReport {
    /// The modeled time in microseconds.
    pub fn total_us(&self) -> f64 {
        self.total_ns / 1e3
    }

    /// HBM bytes over every core.
    pub fn hbm_bytes(&self) -> u64 {
        self.cores.iter().map(|c| c.hbm_bytes).fold(0, u64::saturating_add)
    }

    /// Matmul FLOPs over every core.
    pub fn matmul_flops(&self) -> f64 {
        self.cores.iter().map(|c| c.matmul_flops).sum()
    }

    /// Hardware FLOP utilization of the chip: its FLOPs over every core's peak for the chip's
    /// time.
    pub fn hfu(&self) -> f64 {
        let peak: f64 = self.cores.iter().map(|c| c.peak_flops_per_ns).sum();
        let denom = peak * self.total_ns;
        if denom > 0.0 {
            self.matmul_flops() / denom
        } else {
            0.0
        }
    }

    /// The cores' mean busy fractions, each over the chip's time.
    pub fn mean_busy(&self) -> crate::EngineBusy {
        let busy: Vec<crate::EngineBusy> = self.cores.iter().map(|c| c.engine_busy_over(self.total_ns)).collect();
        let n = busy.len().max(1) as f64;
        let mean = |f: fn(&crate::EngineBusy) -> f64| busy.iter().map(f).sum::<f64>() / n;
        crate::EngineBusy {
            pe: mean(|b| b.pe),
            act: mean(|b| b.act),
            dve: mean(|b| b.dve),
            pool: mean(|b| b.pool),
            dma: mean(|b| b.dma),
        }
    }

    /// Fraction of the modeled time the shared HBM budget was busy (0 for one core).
    pub fn hbm_shared_fraction(&self) -> f64 {
        if self.total_ns > 0.0 {
            self.hbm_shared_busy_ns / self.total_ns
        } else {
            0.0
        }
    }
}

/// Model a chip with the figures of `profile` (see the module docs).
pub fn model_chip(chip: &Chip, profile: &HwProfile) -> Result<ChipReport, SimError> {
    model_chip_cancellable(chip, profile, None)
}

/// [`model_chip`], stopped with [`SimError::Interrupted`] soon after `cancel` is set.
pub fn model_chip_cancellable(
    chip: &Chip,
    profile: &HwProfile,
    cancel: Option<&penguin::Cancel>,
) -> Result<ChipReport, SimError> {
    let target = chip.target();
    let profile = HwProfile { target, ..*profile };
    if let [one] = chip.cores.as_slice() {
        let report = super::model_cancellable(one, &profile, cancel)?;
        return Ok(ChipReport {
            total_ns: report.total_ns,
            cores: vec![report],
            hbm_shared_busy_ns: 0.0,
            hbm_shared_bytes_per_ns: profile.hbm_shared_bytes_per_ns,
        });
    }
    let merged = merge_chip(chip);
    let n = chip.cores.len();
    let replay = Replay::on_cores(Flat::new(&merged), merged.semaphores.len(), profile, true, merged.num_insts(), n)?;
    let mut ran = match cancel {
        None => replay.run(&mut NoObserver)?,
        Some(cancel) => replay.run(&mut Polled { cancel, commits: 0 })?,
    };
    let cores = std::mem::take(&mut ran.cores);
    Ok(ChipReport {
        total_ns: ran.report.total_ns,
        cores,
        hbm_shared_busy_ns: ran.shared_busy_ns,
        hbm_shared_bytes_per_ns: profile.hbm_shared_bytes_per_ns,
    })
}

/// One program holding every core's streams (`NUM_ENGINES` per core) and the chip's
/// semaphores as one table ([`Chip::semaphore_table`]: the shared ones, then each core's).
pub(crate) fn merge_chip(chip: &Chip) -> Program {
    let (table, nsem) = chip.semaphore_table();
    let mut merged = Program::new(chip.kernel_name(), chip.target());
    merged.streams.clear();
    merged.semaphores = vec![String::new(); nsem];
    for (p, map) in chip.cores.iter().zip(&table) {
        let global = |s: SemId| SemId(map.get(s.0 as usize).map_or(u32::MAX, |&g| g as u32));
        for (s, &g) in map.iter().enumerate() {
            if merged.semaphores[g].is_empty() {
                merged.semaphores[g].clone_from(&p.semaphores[s]);
            }
        }
        for e in 0..NUM_ENGINES {
            let mut stream = p.streams.get(e).cloned().unwrap_or_default();
            for inst in &mut stream {
                for w in &mut inst.waits {
                    w.sem = global(w.sem);
                }
                if let Some(s) = &mut inst.signal {
                    *s = global(*s);
                }
            }
            merged.streams.push(stream);
        }
    }
    merged
}

impl<S> Replay<S> {
    /// Each core's report, from a finished replay of several cores.
    pub(super) fn core_reports(&self) -> Vec<CycleReport> {
        let cores = self.others.len() + 1;
        (0..cores)
            .map(|c| {
                let range = c * NUM_ENGINES..((c + 1) * NUM_ENGINES).min(self.cursors.len());
                let cursors = self.cursors.get(range).unwrap_or(&[]);
                let mut engine_busy_ns: Vec<f64> = cursors.iter().map(|k| k.busy).collect();
                engine_busy_ns.resize(NUM_ENGINES, 0.0);
                let pe = if c == 0 { &self.pe } else { &self.others[c - 1].0 };
                let parts = pe.flops_parts();
                let slices = self
                    .slices
                    .iter()
                    .zip(&self.slice_cores)
                    .filter(|(_, &k)| usize::from(k) == c)
                    .map(|(s, _)| *s)
                    .collect();
                CycleReport {
                    total_ns: cursors.iter().map(|k| k.retired).fold(0.0, f64::max),
                    engine_busy_ns,
                    hbm_bytes: self.core_hbm.get(c).copied().unwrap_or(0),
                    matmul_flops: parts.iter().sum(),
                    peak_flops_per_ns: pe.peak_flops_per_ns(&parts),
                    slices,
                }
            })
            .collect()
    }
}
