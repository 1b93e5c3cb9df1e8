//! Stopping a run from outside: the caller's flag ([`Cancel`], shared with every layer so that
//! their inner loops poll it: the planner's instructions, the lowering's, the cycle model's,
//! the simulator's, the reference's rows), checked also between the phases and between the
//! candidates of `auto` and of the extrapolation.

pub use penguin::Cancel;

use crate::error::DriverError;

/// Whether an optional flag was set.
pub(crate) fn stopped(cancel: Option<&Cancel>) -> bool {
    penguin::cancel::stopped(cancel)
}

/// [`DriverError::Interrupted`] if an optional flag was set.
pub(crate) fn check(cancel: Option<&Cancel>) -> Result<(), DriverError> {
    if stopped(cancel) {
        Err(DriverError::Interrupted)
    } else {
        Ok(())
    }
}

/// A cycle model's failure: [`DriverError::Interrupted`] when the flag stopped it, else a bug
/// saying what failed.
pub(crate) fn model_error(e: sim::SimError, what: &str) -> DriverError {
    match e {
        sim::SimError::Interrupted => DriverError::Interrupted,
        e => DriverError::internal(format!("{what} failed (a bug): {e}")),
    }
}

/// The base builders of a plan, reporting `cancel` to the planner (which polls it as it
/// emits instructions).
pub(crate) fn builder(cancel: Option<&Cancel>) -> impl Fn(&str) -> penguin::GeneratedBuilder + Sync + '_ {
    move |name: &str| penguin::GeneratedBuilder::new(name).with_cancel(cancel.cloned())
}

/// Run the simulator to its end, or until the flag stops it ([`DriverError::Interrupted`]:
/// the simulator polls it every few instructions).
pub(crate) fn simulate(
    mut simulator: sim::Simulator,
    cancel: Option<&Cancel>,
) -> Result<(sim::Simulator, Result<sim::RunStats, sim::SimError>), DriverError> {
    simulator.set_cancel(cancel.cloned());
    let stats = simulator.run();
    if matches!(stats, Err(sim::SimError::Interrupted)) {
        return Err(DriverError::Interrupted);
    }
    Ok((simulator, stats))
}
