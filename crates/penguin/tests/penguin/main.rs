//! penguin's integration tests: the verifier rule by rule on small kernels, and the float
//! conversions against numpy + ml_dtypes golden vectors (`tests/golden/`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests assert on values")]

mod golden;
mod verifier;
