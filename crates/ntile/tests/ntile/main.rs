//! ntile's integration tests: the command line as a user runs it (the `ntile` binary's exit
//! codes, `.npy` files, JSON, reports, timelines, hardware profiles, the corpus of bad inputs),
//! the filetests (`tests/filetests/`), and end-to-end GEMMs through `ntile::gemm` checked
//! against fp64 and numpy references. The layers below the CLI are tested in their crates
//! (`crates/<crate>/tests/<crate>`); the pipeline on planned GEMMs in `crates/driver/tests`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests assert on values")]

mod chip_cli;
mod cli;
mod cli_speed;
mod corpus;
mod e2e_gemm;
mod extrapolate;
mod filetests;
mod hw;
mod ir_commands;
mod loops;
mod loops_pir;
mod nki_cli;
mod offload_examples;
mod parallel_sim;
mod readme;
mod report;
mod run_timing;
mod single_buffered;
mod support;
