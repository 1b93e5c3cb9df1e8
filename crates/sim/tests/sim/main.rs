//! sim's integration tests, on BIR programs built by hand: the functional simulator's
//! numerics, copies, races and robustness; the compute engines against numpy; the cycle
//! model's single-instruction times, its looped form against the unrolled one (loops, nests,
//! the nests bir's native lowering writes) and runs on several threads. Programs planned by
//! codegen are simulated and modeled in `crates/driver/tests/driver`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests assert on values")]

mod chip;
mod chip_shared;
mod copies;
mod cycle;
mod cycle_dma;
mod cycle_looped;
mod cycle_nested;
mod engine;
mod functional;
mod gemm;
mod native_nest;
mod ops;
mod parallel;
mod races;
mod robustness;
