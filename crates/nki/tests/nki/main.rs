//! The nki crate's tests: hand-built traces through the kernel builder, checked on the
//! built function, its allocation report and its errors, and run through `bir` and `sim`
//! against f64 references.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test helpers assert on values")]

mod allocation;
mod compute;
mod cores;
mod errors;
mod loops;
mod matmul;
mod support;
mod tb;
mod trace_format;
