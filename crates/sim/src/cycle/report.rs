//! The cycle model's report: the timeline's slices, each engine's busy time, and the
//! figures derived from them (total, HFU, busy fractions).

use bir::Engine;
use serde::Serialize;

/// One executed instruction on the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Slice {
    /// The engine that ran it.
    pub engine: Engine,
    /// Its index in that engine's stream.
    pub index: usize,
    /// Start, in ns from the program start.
    pub start_ns: f64,
    /// End, in ns.
    pub end_ns: f64,
    /// Time it was blocked on semaphores just before `start_ns` (its engine was ready).
    pub wait_ns: f64,
}

/// Busy fractions of the engine classes over the modeled time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct EngineBusy {
    /// TensorE (PE array).
    pub pe: f64,
    /// ScalarE.
    pub act: f64,
    /// VectorE.
    pub dve: f64,
    /// GpSimd.
    pub pool: f64,
    /// Mean over the 16 DMA queues.
    pub dma: f64,
}

/// What the cycle model found for one program.
#[derive(Clone, Debug, PartialEq)]
pub struct CycleReport {
    /// Time from the program start (0) to the last completion, in ns.
    pub total_ns: f64,
    /// Busy time per engine (union of its instruction intervals), indexed by
    /// [`Engine::index`].
    pub engine_busy_ns: Vec<f64>,
    /// Bytes moved to or from HBM ([`bir::Op::hbm_bytes`] summed over the program).
    pub hbm_bytes: u64,
    /// Hardware matmul FLOPs issued (`2 K M N` per MultiplyMoving).
    pub matmul_flops: f64,
    /// The target's peak FLOP/ns for the program's matmul flavour.
    pub peak_flops_per_ns: f64,
    /// Every executed instruction, in the order the model committed them (by start time).
    pub slices: Vec<Slice>,
}

impl CycleReport {
    /// Hardware FLOP utilization: `matmul_flops / (peak x total)`; 0 for an empty program.
    pub fn hfu(&self) -> f64 {
        self.hfu_over(self.total_ns)
    }

    /// [`CycleReport::hfu`] over `total_ns` instead of the program's own time (a core's FLOPs
    /// over its peak for its chip's time).
    pub fn hfu_over(&self, total_ns: f64) -> f64 {
        let denom = self.peak_flops_per_ns * total_ns;
        if denom > 0.0 {
            self.matmul_flops / denom
        } else {
            0.0
        }
    }

    /// The modeled time in microseconds.
    pub fn total_us(&self) -> f64 {
        self.total_ns / 1e3
    }

    /// Busy fraction of one engine over the modeled time (0 for an empty program).
    pub fn busy_fraction(&self, e: Engine) -> f64 {
        self.busy_fraction_over(e, self.total_ns)
    }

    /// Busy fraction of one engine over `total_ns` (a chip's time, for one of its cores).
    fn busy_fraction_over(&self, e: Engine, total_ns: f64) -> f64 {
        let busy = self.engine_busy_ns.get(e.index()).copied().unwrap_or(0.0);
        if total_ns > 0.0 {
            busy / total_ns
        } else {
            0.0
        }
    }

    /// Busy fractions per engine class; DMA is the mean over the 16 queues.
    pub fn engine_busy_summary(&self) -> EngineBusy {
        self.engine_busy_over(self.total_ns)
    }

    /// [`CycleReport::engine_busy_summary`] over `total_ns` instead of the program's own time
    /// (a core's share of its chip's time).
    pub fn engine_busy_over(&self, total_ns: f64) -> EngineBusy {
        let queues = penguin::target::NUM_DMA_QUEUES;
        let frac = |e| self.busy_fraction_over(e, total_ns);
        let dma = (0..queues as u8).map(|q| frac(Engine::Dma(q))).sum::<f64>() / f64::from(queues);
        EngineBusy {
            pe: frac(Engine::Pe),
            act: frac(Engine::Act),
            dve: frac(Engine::Dve),
            pool: frac(Engine::Pool),
            dma,
        }
    }
}
