//! The `ntile` binary: parse flags, run the command, map failures to exit codes.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::Parser as _;

/// mimalloc instead of the system allocator: planning and lowering make and drop millions of
/// small instruction records, and the simulator's worker threads allocate decode buffers
/// concurrently, both of which the system allocator serves slowly.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Keep freed memory for reuse for half a second instead of mimalloc's default 10 ms before
/// returning it to the OS. Extrapolation and `auto` plan, lower and drop GEMM after GEMM
/// within milliseconds: memory returned at once comes back as fresh pages the kernel must
/// zero again, which took a third of a `--no-sim` 65536^3 run (27,600 page faults against 480
/// when kept). Memory never returned, on the other hand, counts in the peak long after its
/// last use (the drawn inputs of a simulated 8192^3 while C is read back). Against never
/// returning it, half a second ran `--no-sim` 65536^3 as fast (6.4 s against 6.7 s, medians
/// of three) at 524 MiB peak instead of 917, and 2048^3 simulated equally.
fn keep_freed_memory() {
    /// Milliseconds freed memory is kept.
    const PURGE_DELAY_MS: std::ffi::c_long = 500;
    /// `mi_option_purge_delay` in mimalloc's `mi_option_t` (v2 and v3).
    const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
    extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    #[expect(unsafe_code, reason = "setting a mimalloc option: no pointers, any value is valid")]
    // SAFETY: mi_option_set only stores the value.
    unsafe {
        mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
    }
}

/// Ctrl-C (SIGINT) sets the run's cancellation flag: every long phase stops at its next poll
/// (within milliseconds), nothing more is written, and the exit code is 130. A second Ctrl-C,
/// with the flag already set, exits at once. `None` when the handler cannot be installed (the
/// default action, ending the process, then stays).
fn interrupt_flag() -> Option<driver::Cancel> {
    use signal_hook::consts::SIGINT;
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register_conditional_shutdown(
        SIGINT,
        i32::from(ntile::error::EXIT_INTERRUPTED),
        Arc::clone(&flag),
    )
    .ok()?;
    signal_hook::flag::register(SIGINT, Arc::clone(&flag)).ok()?;
    Some(driver::Cancel::from_flag(flag))
}

fn main() -> ExitCode {
    keep_freed_memory();
    let cli = match ntile::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { ntile::error::EXIT_USAGE } else { 0 };
            if let Err(w) = e.print() {
                return write_failed(&w, code);
            }
            return ExitCode::from(code);
        }
    };
    let cancel = interrupt_flag();
    match ntile::run_with(&cli, cancel.as_ref()) {
        Ok((text, code)) => {
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Ok(()) => ExitCode::from(code),
                Err(e) => write_failed(&e, code),
            }
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            ExitCode::from(e.code)
        }
    }
}

/// A failed write to stdout: exit 2 with a message, except for a closed pipe (`| head`),
/// where the reader asked for no more and the run's own exit code stands.
fn write_failed(e: &std::io::Error, code: u8) -> ExitCode {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        return ExitCode::from(code);
    }
    let _ = writeln!(std::io::stderr(), "error: cannot write the output to stdout: {e}");
    ExitCode::from(ntile::error::EXIT_USAGE)
}
