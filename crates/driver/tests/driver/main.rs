//! driver's integration tests: the layers together on GEMMs that codegen plans. Planned
//! programs round-trip through the text formats and JSON, lower natively loop by loop like
//! their unrolled form, roll losslessly and simulate and model the same looped or not; their
//! timelines, traces and SVGs are consistent; and mutated inputs through the one loader never
//! panic. (The CLI over the driver is tested in `crates/ntile/tests/ntile`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests assert on values")]

mod cycle_gemm;
mod cycle_looped;
mod lnc;
mod lnc_huge;
mod lnc_k;
mod loops;
mod mutation;
mod native;
mod roundtrip;
mod search;
mod sparse;
mod timeline_gemm;
