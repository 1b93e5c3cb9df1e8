//! Stopping a run from outside: a flag the caller owns and sets ([`Cancel`]), which every
//! long phase checks (the auto search between candidates, the extrapolation between
//! candidates, the phases between each other, the simulation every few milliseconds).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::DriverError;

/// A cancellation flag shared between the caller and a run. Once set, the run ends with
/// [`DriverError::Interrupted`] at its next check.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag that is not set.
    pub fn new() -> Self {
        Cancel::default()
    }

    /// Ask the runs holding this flag to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the runs holding this flag were asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Whether an optional flag was set.
pub(crate) fn stopped(cancel: Option<&Cancel>) -> bool {
    cancel.is_some_and(Cancel::is_cancelled)
}

/// [`DriverError::Interrupted`] if an optional flag was set.
pub(crate) fn check(cancel: Option<&Cancel>) -> Result<(), DriverError> {
    if stopped(cancel) {
        Err(DriverError::Interrupted)
    } else {
        Ok(())
    }
}

/// Run the simulator to its end. With a flag, the simulation runs on its own thread while
/// this one checks the flag every 20 ms; an interrupted simulation is left to finish in the
/// background and its result dropped.
pub(crate) fn simulate(
    mut simulator: sim::Simulator,
    cancel: Option<&Cancel>,
) -> Result<(sim::Simulator, Result<sim::RunStats, sim::SimError>), DriverError> {
    let Some(cancel) = cancel else {
        let stats = simulator.run();
        return Ok((simulator, stats));
    };
    let worker = std::thread::Builder::new()
        .name("ntile-simulate".into())
        .spawn(move || {
            let stats = simulator.run();
            (simulator, stats)
        })
        .map_err(|e| DriverError::internal(format!("cannot start the simulation thread: {e}")))?;
    while !worker.is_finished() {
        check(Some(cancel))?;
        std::thread::sleep(Duration::from_millis(20));
    }
    worker.join().map_err(|_| DriverError::internal("the simulation thread panicked (a bug)"))
}
