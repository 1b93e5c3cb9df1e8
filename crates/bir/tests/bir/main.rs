//! bir's integration tests: lowering hand-built Penguin functions (engines, semaphores,
//! offloaded ops over the DMA queues, the lowering errors) and the native looped lowering of
//! hand-built nests. Lowering planned GEMMs, and simulating or modeling what was lowered, is
//! tested above bir (`crates/driver/tests/driver`, `crates/sim/tests/sim`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests assert on values")]

mod lower;
mod native_nest;
