//! codegen's integration tests: properties of planned GEMMs (PSUM groups, K tiling, store
//! edges, single-buffered blocks), their rolls into loops along the schedule's nest, and a
//! second, recording `IrBuilder` that keeps the builder seam honest.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests assert on values")]

mod looped;
mod nest;
mod properties;
mod recording_builder;
mod sampled;
mod single_buffer;
mod store_edges;
