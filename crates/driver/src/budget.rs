//! The memory budget of a GEMM: what planning, lowering, modeling and simulating a GEMM
//! will need, estimated before anything is allocated, and refused ([`DriverError::Budget`])
//! when it exceeds the budget, so that no shape ends in an allocation abort or an
//! out-of-memory kill.
//!
//! The figures are deliberately on the safe side. Planning keeps a Penguin function, its BIR
//! lowering and the cycle model's timeline, all about proportional to the matmul count (output
//! tiles x K sub-tiles): measured in release at 2048^3, 8192^3, 4096x8192x4096 (also sparse
//! and with PE transposes) and 1x65536x65536, 5 to 7 KiB per matmul for an explicit schedule
//! and 11 to 15 KiB for `auto` (which keeps its shortlisted plans); the estimate charges 10
//! and 20 KiB. Simulation holds the HBM image, the f32 inputs, the fp64
//! reference and the result.

use codegen::{GemmConfig, Schedule, M_TILE, N_TILE};

use crate::error::DriverError;

/// Bytes charged per matmul for an explicit schedule.
const PLAN_BYTES_PER_MATMUL: u64 = 10 << 10;
/// Bytes charged per matmul for `auto`.
const AUTO_BYTES_PER_MATMUL: u64 = 20 << 10;
/// Fixed cost of a run (the simulator's SBUF and PSUM images, tables, the binary).
const BASE_BYTES: u64 = 64 << 20;
/// The budget when physical memory cannot be read.
pub const FALLBACK_BUDGET: u64 = 4 << 30;

/// The default budget: half of physical memory (`MemTotal` of `/proc/meminfo`), or
/// [`FALLBACK_BUDGET`] when that cannot be read.
pub fn default_budget() -> u64 {
    std::fs::read_to_string("/proc/meminfo").ok().as_deref().and_then(mem_total).map_or(FALLBACK_BUDGET, |b| b / 2)
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line.split_whitespace().skip(1);
    let value: u64 = words.next()?.parse().ok()?;
    let unit = match words.next() {
        Some("kB") => 1024,
        None => 1,
        Some(_) => return None,
    };
    value.checked_mul(unit)
}

/// A byte count for people.
pub fn human(bytes: u128) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// Matmuls the plan will have: output tiles x K sub-tiles of 128.
pub fn matmuls(m: u64, k: u64, n: u64) -> u128 {
    // Saturating: the shape is checked against its limits elsewhere; this never overflows.
    u128::from(m.div_ceil(M_TILE))
        .saturating_mul(u128::from(n.div_ceil(N_TILE)))
        .saturating_mul(u128::from(k.div_ceil(128)))
}

/// Estimated bytes for planning, lowering and modeling.
pub fn plan_bytes(cfg: &GemmConfig) -> u128 {
    let per = if cfg.schedule == Schedule::Auto { AUTO_BYTES_PER_MATMUL } else { PLAN_BYTES_PER_MATMUL };
    matmuls(cfg.m, cfg.k, cfg.n).saturating_mul(u128::from(per)).saturating_add(u128::from(BASE_BYTES))
}

/// Estimated bytes for simulating and checking, beyond planning: the HBM image, f32 inputs
/// (and a transposed copy), fp64 copies of the inputs, the reference and its magnitudes, and
/// the result.
pub fn sim_bytes(cfg: &GemmConfig) -> u128 {
    let (m, k, n) = (u128::from(cfg.m), u128::from(cfg.k), u128::from(cfg.n));
    let inputs = (m * k).saturating_add(k * n);
    inputs.saturating_mul(4 + 4 + 4 + 8).saturating_add((m * n).saturating_mul(4 + 8 + 8 + 4 + 4))
}

/// Bytes charged per instruction of an expanded looped file (a Penguin instruction with its
/// edges and source-map entry measured about 800 bytes; a BIR one less).
pub const EXPANDED_BYTES_PER_INST: u64 = 1 << 10;

/// Refuse to expand a looped program to `insts` instructions when they would not fit the
/// default memory budget, naming both.
pub fn check_expansion(name: &str, insts: u64) -> Result<(), DriverError> {
    check_expansion_within(name, insts, default_budget())
}

/// [`check_expansion`] against `budget` bytes.
fn check_expansion_within(name: &str, insts: u64, budget: u64) -> Result<(), DriverError> {
    let need = u128::from(insts) * u128::from(EXPANDED_BYTES_PER_INST);
    if need <= u128::from(budget) {
        return Ok(());
    }
    Err(DriverError::Budget(format!(
        "{name}: expanding its loops to {insts} instructions needs about {}, over the memory budget of {}",
        human(need),
        human(u128::from(budget))
    )))
}

/// Bytes of HBM tensors the simulator must hold: A and B in their HBM dtype, C in its own.
pub fn hbm_bytes(cfg: &GemmConfig) -> u128 {
    let (m, k, n) = (u128::from(cfg.m), u128::from(cfg.k), u128::from(cfg.n));
    let inputs = (m * k).saturating_add(k * n).saturating_mul(u128::from(cfg.input_dtype.size_bytes()));
    inputs.saturating_add((m * n).saturating_mul(u128::from(cfg.out_dtype.size_bytes())))
}

/// Refuse a GEMM whose estimate exceeds `budget`, naming both and what to do; and,
/// when it is to be simulated, one whose HBM tensors exceed what the simulator can hold.
pub fn check(cfg: &GemmConfig, simulate: bool, budget: u64) -> Result<(), DriverError> {
    let hbm = hbm_bytes(cfg);
    if simulate && hbm > u128::from(sim::MAX_HBM_BYTES) {
        return Err(DriverError::Budget(format!(
            "{}x{}x{} is too large to simulate: its HBM tensors need {}, more than the simulator's {}; \
             --no-sim plans and models it without simulating",
            cfg.m,
            cfg.k,
            cfg.n,
            human(hbm),
            human(u128::from(sim::MAX_HBM_BYTES))
        )));
    }
    let plan = plan_bytes(cfg);
    let total = plan.saturating_add(if simulate { sim_bytes(cfg) } else { 0 });
    if total <= u128::from(budget) {
        return Ok(());
    }
    let what = if simulate { "planning, modeling and simulating" } else { "planning and modeling" };
    let advice = if simulate && plan <= u128::from(budget) {
        "; --no-sim plans and models it without simulating, or raise --max-memory BYTES if the machine has the memory"
    } else {
        "; try a smaller shape, or raise --max-memory BYTES if the machine has the memory"
    };
    Err(DriverError::Budget(format!(
        "{}x{}x{} is too large: {what} it needs about {} ({} matmuls), over the memory budget of {}{advice}",
        cfg.m,
        cfg.k,
        cfg.n,
        human(total),
        matmuls(cfg.m, cfg.k, cfg.n),
        human(u128::from(budget)),
    )))
}

/// Above this many matmuls a GEMM is extrapolated even when its unrolled plan would fit the
/// memory budget (planning it whole would take seconds).
pub const MAX_UNROLLED_MATMULS: u128 = 1 << 22;

/// Whether `cfg` is too large to plan unrolled: over the memory budget, or more than
/// [`MAX_UNROLLED_MATMULS`] matmuls.
pub fn too_large(cfg: &GemmConfig, budget: u64) -> bool {
    matmuls(cfg.m, cfg.k, cfg.n) > MAX_UNROLLED_MATMULS || check(cfg, false, budget).is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_total_is_read_in_bytes() {
        assert_eq!(mem_total("MemTotal:       24684092 kB\nMemFree: 1 kB\n"), Some(24684092 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn huge_shapes_are_refused_and_ordinary_ones_pass() {
        let big = GemmConfig::new(65536, 65536, 65536, penguin::DType::Bf16, penguin::Target::Trn2);
        let e = check(&big, false, 16 << 30).unwrap_err().to_string();
        assert!(e.contains("33554432 matmuls"), "{e}");
        assert!(e.contains("over the memory budget of 16.0 GiB"), "{e}");
        let ok = GemmConfig::new(1024, 1024, 1024, penguin::DType::Bf16, penguin::Target::Trn2);
        assert!(check(&ok, true, 1 << 30).is_ok());
        // Too big to simulate in 1 GiB, but plannable: the message suggests --no-sim.
        let wide = GemmConfig::new(16384, 1, 16384, penguin::DType::Bf16, penguin::Target::Trn2);
        let e = check(&wide, true, 1 << 30).unwrap_err().to_string();
        assert!(e.contains("--no-sim"), "{e}");
        assert!(check(&wide, false, 1 << 30).is_ok());
        // Within any budget, C of 32768^2 fp32 is beyond the simulator's HBM.
        let e = check(&GemmConfig::new(32768, 1, 32768, penguin::DType::Bf16, penguin::Target::Trn2), true, u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(e.contains("too large to simulate: its HBM tensors need 4.0 GiB"), "{e}");
        assert!(e.contains("--no-sim"), "{e}");
    }

    #[test]
    fn an_expansion_over_the_budget_is_refused_naming_both() {
        assert!(check_expansion_within("g.pir", 1 << 20, 1 << 30).is_ok());
        let e = check_expansion_within("g.pir", 1 << 22, 1 << 30).unwrap_err();
        assert!(matches!(e, DriverError::Budget(_)));
        assert_eq!(
            e.to_string(),
            "g.pir: expanding its loops to 4194304 instructions needs about 4.0 GiB, over the memory budget of 1.0 GiB"
        );
    }
}
