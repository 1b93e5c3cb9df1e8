//! How many threads the simulator computes PE products on, and `auto` weighs candidates on:
//! every core, or the `NTILE_THREADS` environment variable (a positive integer; 1 runs on one
//! thread). The simulated bytes and the schedule chosen are the same for any number.

use crate::error::DriverError;

/// The environment variable that sets the simulator's threads.
pub const THREADS_VAR: &str = "NTILE_THREADS";

/// A simulator for `program`, shared with the caller (not copied), with the threads
/// `NTILE_THREADS` asks for (the default: all cores); a value that is not a positive integer
/// is the user's error, naming it.
pub fn simulator_shared(program: std::sync::Arc<bir::Program>) -> Result<sim::Simulator, DriverError> {
    let mut s = sim::Simulator::shared(program);
    if let Some(threads) = threads_from_env()? {
        s.set_threads(threads);
    }
    Ok(s)
}

/// A chip's simulator on the threads `NTILE_THREADS` asks for (as [`simulator_shared`]).
pub fn chip_simulator(chip: &bir::Chip) -> Result<sim::ChipSimulator, DriverError> {
    let mut s = sim::ChipSimulator::new(chip);
    if let Some(threads) = threads_from_env()? {
        s.set_threads(threads);
    }
    Ok(s)
}

/// The threads `NTILE_THREADS` asks for, or every core (at most [`sim::MAX_THREADS`]).
pub fn threads() -> Result<usize, DriverError> {
    let cores = std::thread::available_parallelism().map_or(1, |t| t.get()).min(sim::MAX_THREADS);
    Ok(threads_from_env()?.unwrap_or(cores))
}

/// The value of `NTILE_THREADS`, if set.
fn threads_from_env() -> Result<Option<usize>, DriverError> {
    let Some(v) = std::env::var_os(THREADS_VAR) else { return Ok(None) };
    let text = v.to_string_lossy();
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=sim::MAX_THREADS).contains(&n) => Ok(Some(n)),
        _ => Err(DriverError::input(format!(
            "{THREADS_VAR}={text} is not a thread count (an integer from 1 to {})",
            sim::MAX_THREADS
        ))),
    }
}
