//! `sim`, ntile's execution of BIR: the functional simulator, the cycle model and the
//! exporters of the modeled timeline. It reads BIR only (never Penguin or the planner).
//!
//! - **The functional simulator** (`simulator.rs`, `simulator/`: PE arithmetic, deferred PE
//!   products on worker threads, PSUM accumulation groups, data flow; `memory.rs` the images,
//!   `convert.rs` the casts, `race.rs` the race detector, `looped.rs` looped programs run
//!   expanded): [`Simulator`] runs a [`bir::Program`] on byte-exact memory images.
//! - **The cycle model** (`cycle/`: PE issue, DMA queues and engines, HBM; `cycle/source.rs`
//!   and `cycle/looped.rs` model a [`bir::LoopedProgram`] without unrolling it, jumping over
//!   repeating periods): [`model`] / [`model_with`] give a [`CycleReport`] (per-instruction
//!   [`Slice`]s, engine busy times, HBM bytes, FLOPs) from the hardware profile alone, with no
//!   data; [`model_looped`] the same figures for a looped program.
//! - **The exporters** (`report/`): the Chrome/Perfetto trace ([`chrome_trace_with`],
//!   `report/trace.rs`), the SVG timeline and tile grid ([`timeline_svg_with`],
//!   [`tile_grid_svg`], `report/svg.rs`), and what they derive from a model
//!   (`report/timeline/`: wait flows, tile labels, counters, the [`critical_path`], the tile
//!   grid), told about the kernel by a [`KernelInfo`].
//!
//! A [`Simulator`] holds the HBM, SBUF and PSUM images of one program and executes its
//! engine streams in an order the semaphores allow, with the dtype semantics of
//! [`penguin::DType`] (casts through f32, round to nearest even unless a DMA says saturate;
//! products and PSUM accumulation in fp32). Every [`bir::Op`] runs: dense, double-row and
//! structured-sparse matmuls, PE transposes, DMA copies / FMA / gather / scatter-add, and the
//! compute engines' copies, elementwise and tensor-scalar ops, activations, reductions,
//! affine selects, iotas, batch-norm statistics and memsets (their numerics in the module
//! doc of `alu.rs`).
//!
//! Invariants and guarantees:
//! - No program makes it panic: every access pattern is checked against its memory before
//!   any byte moves ([`SimError::OutOfRange`]), and every other malformed input is a
//!   [`SimError`].
//! - Fresh SBUF and PSUM bytes are `0xFF`, so every float read before it is written is NaN.
//! - PSUM accumulation groups are tracked per fp32 word: ACCU without an open group is
//!   [`SimError::AccumulateWithoutStart`], reading an open group is
//!   [`SimError::ReadOpenGroup`].
//! - Results are deterministic and independent of the host CPU and of the stream order
//!   chosen (for race-free programs); races are reported in [`RunStats::races`], not fatal.
//! - PE products run on worker threads ([`Simulator::set_threads`], default every core)
//!   while the scheduler goes on, and land in PSUM in program order before anything else
//!   touches their bytes: bytes, statistics, races and errors are those of one thread, for
//!   every program.
//!
//! ```
//! use bir::{BirInst, Engine, HbmRole, HbmTensor, HwAp, Op, Program};
//! use penguin::{CastMode, DType, Dim, Memory, Target};
//!
//! // Copy a 2x4 fp32 HBM tensor into SBUF as bf16, then back out to another tensor.
//! let mut p = Program::new("roundtrip", Target::Trn2);
//! for (name, address, role) in [("x", 0, HbmRole::Input), ("y", 64, HbmRole::Output)] {
//!     p.hbm.push(HbmTensor { name: name.into(), shape: vec![2, 4], dtype: DType::Fp32, address, role });
//! }
//! p.hbm_size = 128;
//! // Two rows of 4 fp32 in HBM (rows 4 elements apart); two SBUF partitions of 4 bf16.
//! let hbm = |offset| HwAp::hbm(DType::Fp32, offset, 2, 4, vec![Dim::new(1, 4)]);
//! let sbuf = HwAp::on_chip(Memory::Sbuf, DType::Bf16, 0, 2, 0, vec![Dim::new(1, 4)]);
//! let inst = |op| BirInst { op, waits: vec![], signal: None, origin: None };
//! p.semaphores.push("loaded".into());
//! p.streams[Engine::Dma(0).index()].push(BirInst { signal: Some(bir::SemId(0)), ..inst(Op::DmaCopy { dst: sbuf.clone(), src: hbm(0), cast: CastMode::Rne }) });
//! p.streams[Engine::Dma(1).index()].push(BirInst { waits: vec![bir::Wait { sem: bir::SemId(0), value: 1 }], ..inst(Op::DmaCopy { dst: hbm(64), src: sbuf, cast: CastMode::Rne }) });
//!
//! let mut sim = sim::Simulator::new(&p);
//! sim.write_hbm_f32("x", &[1.0, 1.00390625, 3.0, -2.5, 0.1, f32::MAX, 7.0, 8.0])?;
//! let stats = sim.run()?;
//! assert!(stats.races.is_empty());
//! assert_eq!(sim.read_hbm_f32("y")?, vec![1.0, 1.0, 3.0, -2.5, 0.10009765625, f32::INFINITY, 7.0, 8.0]);
//! # Ok::<(), sim::SimError>(())
//! ```
#![deny(missing_docs)]

mod alu;
mod chip;
mod convert;
mod error;
mod gemm;
mod looped;
mod memory;
mod race;
mod simulator;

pub use chip::{ChipSimulator, ChipStats};
pub use error::{InstRef, SimError, Stuck};
pub use gemm::{gemm_f32, gemm_f64};
pub use memory::MAX_ACCESS_ELEMS;
pub use race::{Race, RaceAccess, MAX_REPORTED_RACES};
pub use simulator::{RunStats, Simulator, MAX_HBM_BYTES, MAX_THREADS};
mod cycle;
mod report;
pub use cycle::{
    model, model_cancellable, model_chip, model_chip_cancellable, model_looped, model_looped_cancellable,
    model_looped_critical, model_looped_default, model_looped_stats, model_looped_with, model_with, ChipReport,
    CycleReport, EngineBusy, LoopedOptions, LoopedStats, Slice,
};
pub use report::svg::{tile_grid_svg, timeline_svg, timeline_svg_chip, timeline_svg_with};
pub use report::timeline::critical::{critical_path, critical_path_chip, CriticalPath};
pub use report::timeline::{Axis, GemmLayout, KernelInfo, SbufBuffer, SourceLines, TensorAxes};
pub use report::trace::{chrome_trace, chrome_trace_chip, chrome_trace_with};
