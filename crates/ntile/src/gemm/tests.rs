//! Tests of `ntile gemm` as a library: what `-o` says it wrote, and a run stopped by its flag
//! in each phase writing nothing.

use super::*;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ntile-gemm-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn small(output: PathBuf) -> GemmArgs {
    GemmArgs { m: Some(4), k: Some(16), n: Some(8), output: Some(output), quiet: true, ..GemmArgs::default() }
}

#[test]
fn the_summary_says_what_o_wrote() {
    let dir = scratch("wrote");
    let path = dir.join("c.npy");
    let out = run(&small(path.clone())).unwrap();
    let want = format!("wrote C [4, 8] (fp32, as float32) to {}", path.display());
    assert_eq!(out.stdout.lines().last(), Some(want.as_str()), "{}", out.stdout);
    assert!(path.is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The run of `args` with `cancel`, and the last phase it started.
fn run_recording(args: &GemmArgs, cancel: &driver::Cancel) -> (Result<Outcome, CliError>, String) {
    let phase = Arc::new(std::sync::Mutex::new(String::from("prepare")));
    let (mut req, inputs) = prepare(args, None).unwrap();
    req.options.cancel = Some(cancel.clone());
    let seen = Arc::clone(&phase);
    req.options.progress = Some(Arc::new(move |p: &str| *seen.lock().unwrap() = p.to_string()));
    let result = driver::gemm(&req, inputs).map_err(CliError::from).and_then(|outcome| {
        let stdout = finish(args, &outcome)?;
        Ok(Outcome { report: outcome.report, stdout, result: outcome.c })
    });
    let last = phase.lock().unwrap().clone();
    (result, last)
}

#[test]
fn a_run_stopped_at_any_poll_writes_nothing() {
    let dir = scratch("cancel");
    let path = dir.join("c.npy");
    let args =
        GemmArgs { m: Some(512), k: Some(1024), n: Some(512), schedule: Some(Schedule::Naive), ..small(path.clone()) };
    // The polls of a whole run, counted by a flag that never sets itself.
    let counting = driver::Cancel::after(u64::MAX);
    assert!(run_recording(&args, &counting).0.is_ok());
    let polls = u64::MAX - counting.polls_left().unwrap();
    std::fs::remove_file(&path).unwrap();
    // Stopped at each of them: interrupted, nothing written; the phases polled in between.
    let mut phases = std::collections::BTreeSet::new();
    for n in 1..=polls {
        let (result, phase) = run_recording(&args, &driver::Cancel::after(n));
        let e = result.err().unwrap_or_else(|| panic!("poll {n} of {polls} did not stop the run"));
        assert_eq!((e.code, e.message.as_str()), (crate::error::EXIT_INTERRUPTED, "interrupted"), "poll {n}");
        assert!(!path.exists(), "poll {n}");
        phases.insert(phase);
    }
    for phase in ["plan", "lower", "model", "simulate", "check"] {
        assert!(phases.contains(phase), "no poll in {phase}: {phases:?} ({polls} polls)");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_extrapolated_run_stopped_at_any_poll_is_interrupted() {
    let args = GemmArgs {
        m: Some(1024),
        k: Some(2048),
        n: Some(1024),
        schedule: Some(Schedule::BlockedMnk),
        block_m: Some(256),
        block_n: Some(512),
        block_k: Some(512),
        no_sim: true,
        extrapolate: true,
        quiet: true,
        ..GemmArgs::default()
    };
    let counting = driver::Cancel::after(u64::MAX);
    let (result, _) = run_recording(&args, &counting);
    assert!(result.unwrap().report.extrapolated.is_some());
    let polls = u64::MAX - counting.polls_left().unwrap();
    let mut phases = std::collections::BTreeSet::new();
    // Every poll when there are few, else an even spread of them with the last.
    let step = (polls / 400).max(1);
    for n in (1..=polls).step_by(step as usize).chain([polls]) {
        let (result, phase) = run_recording(&args, &driver::Cancel::after(n));
        let e = result.err().unwrap_or_else(|| panic!("poll {n} of {polls} did not stop the run"));
        assert_eq!((e.code, e.message.as_str()), (crate::error::EXIT_INTERRUPTED, "interrupted"), "poll {n}");
        phases.insert(phase);
    }
    for phase in ["plan (extrapolated)", "model"] {
        assert!(phases.contains(phase), "no poll in {phase}: {phases:?} ({polls} polls)");
    }
}

#[test]
fn an_explicit_schedule_without_blocks_says_which_blocks_it_chose() {
    let args = GemmArgs {
        m: Some(512),
        k: Some(512),
        n: Some(1024),
        schedule: Some(Schedule::BlockedMnk),
        no_sim: true,
        ..GemmArgs::default()
    };
    let out = run(&args).unwrap();
    let a = out.report.auto.as_ref().unwrap();
    let want = format!(
        "  blocks  chose {}x{}x{} {} of {} modeled blocked-mnk candidates ({} did not fit SBUF)",
        a.block_m, a.block_n, a.block_k, a.order, a.evaluated, a.rejected
    );
    assert!(out.stdout.lines().any(|l| l == want), "{}", out.stdout);
    assert!(!out.stdout.contains("  auto    chose"), "{}", out.stdout);
    // With every block size given nothing is searched, and the summary has no such line.
    let fixed = GemmArgs { block_m: Some(256), block_n: Some(512), block_k: Some(256), ..args };
    let out = run(&fixed).unwrap();
    assert!(out.report.auto.is_none());
    assert!(!out.stdout.contains("  blocks  chose"), "{}", out.stdout);
}
