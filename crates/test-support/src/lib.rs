//! ntile's test support: the fixtures and helpers the crates' integration tests (and the
//! benches) share, written once. A dev-dependency only; nothing here is ntile's API.
//!
//! Each crate has one integration-test binary, `crates/<crate>/tests/<crate>/main.rs`, whose
//! modules use this crate with the features of the layers the crate stands on, so that a
//! test cannot reach above its layer (`cargo test -p bir` builds neither codegen nor sim):
//!
//! - always: the workspace's files and scratch directories ([`files`]), numpy through
//!   `python3` ([`mod@python`]), deterministic values ([`value`]) and the Penguin loop nests of
//!   the native lowering's tests ([`nests`]);
//! - `bir`: access-pattern shorthands over `bir::HwAp::on_chip` and `bir::HwAp::hbm`
//!   (`ap`), a builder of hand-written programs (`program`), a hand-built GEMM program
//!   (`hand_gemm`), a GEMM-shaped nest of loops (`nest`) and a small roller of programs
//!   into loops (`roll`);
//! - `sim`: running programs on fixed inputs (`run`), the looped cycle model checked
//!   against the unrolled one (`looped`) and reading a Chrome trace back (`trace`);
//! - `codegen`: planning a GEMM (`plan`).
//!
//! (In a workspace build cargo unifies the features, so the rule is checked by the narrow
//! build: `cargo test -p <crate>`. The modules behind a feature are not in these docs, which
//! are built without features.)
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers: unwrapping and panicking is how they assert"
)]
#![deny(missing_docs)]

pub mod files;
pub mod nests;
pub mod python;

#[cfg(feature = "bir")]
pub mod ap;
#[cfg(feature = "bir")]
pub mod hand_gemm;
#[cfg(feature = "bir")]
pub mod nest;
#[cfg(feature = "bir")]
pub mod program;
#[cfg(feature = "bir")]
pub mod roll;

#[cfg(feature = "sim")]
pub mod looped;
#[cfg(feature = "sim")]
pub mod run;
#[cfg(feature = "sim")]
pub mod trace;

#[cfg(feature = "codegen")]
pub mod plan;

pub use files::{path_str, scratch, write_f32_npy, Scratch};
pub use python::python;

#[cfg(feature = "bir")]
pub use ap::{hbm, psum, sbuf};
#[cfg(feature = "bir")]
pub use program::{inst, Builder};

#[cfg(feature = "codegen")]
pub use plan::{plan_gemm, plan_gemm_fitting};

/// A deterministic pseudo-random value in [-2, 2) with varied low bits (so that products
/// round).
pub fn value(seed: u64) -> f32 {
    let x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ 0x5851_F42D_4C95_7F2D;
    let x = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
    ((x >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
}
