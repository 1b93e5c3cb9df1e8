//! Progress on stderr for long runs: the current phase (plan, lower, model, simulate,
//! check) and the time spent, shown only when stderr is a terminal and the work has run for
//! more than a second, and never with `--quiet`.

use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long work runs before progress shows.
const DELAY: Duration = Duration::from_secs(1);

/// A spinner naming the current phase; silent for the first second of work.
pub struct Progress {
    live: Option<Live>,
}

struct Live {
    bar: ProgressBar,
    stop: Sender<()>,
    shower: Option<JoinHandle<()>>,
}

impl Progress {
    /// Progress for a run that starts now: silent if `quiet` or stderr is not a terminal.
    pub fn new(quiet: bool, what: &str) -> Progress {
        if quiet || !std::io::stderr().is_terminal() {
            return Progress { live: None };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template("{spinner} {prefix} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_prefix(what.to_string());
        let (stop, stopped) = mpsc::channel::<()>();
        let shown = bar.clone();
        // A waiting thread shows the spinner once DELAY has passed, unless the run ended.
        let shower = std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(DELAY) {
                shown.set_draw_target(ProgressDrawTarget::stderr());
                shown.enable_steady_tick(Duration::from_millis(120));
            }
        });
        Progress { live: Some(Live { bar, stop, shower: Some(shower) }) }
    }

    /// Progress that never shows.
    pub fn hidden() -> Progress {
        Progress { live: None }
    }

    /// Whether progress may show (stderr is a terminal and not quiet).
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// Name the phase now running.
    pub fn phase(&self, name: &str) {
        if let Some(live) = &self.live {
            live.bar.set_message(name.to_string());
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(live) = &mut self.live {
            // The shower may be waiting: wake it first, so the run never waits for DELAY.
            let _ = live.stop.send(());
            if let Some(h) = live.shower.take() {
                let _ = h.join();
            }
            live.bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under the test harness stderr is captured or a pipe: progress stays silent, and
    /// `--quiet` is silent anywhere.
    #[test]
    fn silent_off_a_terminal_and_when_quiet() {
        let quiet = Progress::new(true, "gemm");
        assert!(!quiet.is_live());
        quiet.phase("plan");
        let auto = Progress::new(false, "gemm");
        assert_eq!(auto.is_live(), std::io::stderr().is_terminal());
        auto.phase("simulate");
        assert!(!Progress::hidden().is_live());
    }
}
