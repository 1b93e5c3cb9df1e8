//! The looped cycle model checked against the unrolled one, and the profiles and tile widths
//! its property tests draw.

use bir::LoopedProgram;
use penguin::{HwProfile, Target};
use proptest::prelude::{prop, Strategy};
use sim::{
    critical_path, model_looped_critical, model_looped_stats, model_looped_with, model_with, CriticalPath, CycleReport,
    LoopedOptions, LoopedStats,
};

/// Whether `got` is within `rel` (relative) of `want`.
pub fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs().max(1.0)
}

/// Assert [`close`], naming what differs.
pub fn assert_close(got: f64, want: f64, rel: f64, what: &str) {
    assert!(close(got, want, rel), "{what}: got {got}, want {want}");
}

/// `lp` modeled looped against `model_with` on its expansion (which must verify):
/// - the lazy replay without jumps is the same computation: identical figures and slices;
/// - with jumps, total and busy times are within `rel`, HBM bytes and FLOPs exact, and every
///   unrolled instruction is either replayed or skipped.
///
/// - the critical path followed forward without jumps is the unrolled model's (each class
///   within `1e-9`), and with jumps its shares are within [`PATH_SHARE_TOLERANCE`].
///
/// Returns the report with jumps and what the looped model did.
pub fn check_against_unrolled(lp: &LoopedProgram, profile: &HwProfile, rel: f64) -> (CycleReport, LoopedStats) {
    let unrolled = lp.expand().unwrap();
    bir::verify_program(&unrolled).unwrap();
    let want = model_with(&unrolled, profile).unwrap();
    let exact =
        model_looped_with(lp, profile, LoopedOptions { slices: true, extrapolate: false, ..LoopedOptions::default() })
            .unwrap();
    assert_eq!(exact, want);
    let want_path = critical_path(&unrolled, &want);
    let no_jumps = LoopedOptions { extrapolate: false, ..LoopedOptions::default() };
    let (_, _, path) = model_looped_critical(lp, profile, no_jumps, None).unwrap();
    assert_paths(&path, &want_path, 1e-9, "the forward path without jumps");
    let (jumped, _, path) = model_looped_critical(lp, profile, LoopedOptions::default(), None).unwrap();
    // The charges, moved over every jump, add up to the modeled time.
    let charged: f64 = path.ns.iter().map(|(_, ns)| ns).sum();
    assert_close(charged, jumped.total_ns, 1e-9, "the path's charges with jumps");
    assert_shares(&path, &want_path, PATH_SHARE_TOLERANCE);
    let (got, stats) = model_looped_stats(lp, profile, LoopedOptions::default()).unwrap();
    assert!(got.slices.is_empty());
    assert_close(got.total_ns, want.total_ns, rel, "total_ns");
    for (e, (g, w)) in got.engine_busy_ns.iter().zip(&want.engine_busy_ns).enumerate() {
        assert_close(*g, *w, rel, &format!("busy of engine {e}"));
    }
    assert_eq!(got.hbm_bytes, want.hbm_bytes);
    assert_eq!(got.matmul_flops, want.matmul_flops);
    assert_eq!(got.peak_flops_per_ns, want.peak_flops_per_ns);
    assert_eq!(stats.replayed + stats.skipped, unrolled.num_insts() as u64);
    (got, stats)
}

/// How far a class's share of the critical path followed through steady-state jumps may be
/// from the unrolled model's.
pub const PATH_SHARE_TOLERANCE: f64 = 0.01;

/// `got` and `want` charge the same classes, each within `rel` of the other.
pub fn assert_paths(got: &CriticalPath, want: &CriticalPath, rel: f64, what: &str) {
    let classes = |p: &CriticalPath| {
        let mut c: Vec<String> = p.ns.iter().map(|(c, _)| c.clone()).collect();
        c.sort();
        c
    };
    assert_eq!(classes(got), classes(want), "{what}: {got:?} vs {want:?}");
    for (c, w) in &want.ns {
        let g = got.ns.iter().find(|(x, _)| x == c).map_or(0.0, |(_, v)| *v);
        assert_close(g, *w, rel, &format!("{what}: {c}"));
    }
    assert_close(got.total_ns, want.total_ns, rel, &format!("{what}: total"));
}

/// Each class's share of `got` is within `tol` of its share of `want`.
pub fn assert_shares(got: &CriticalPath, want: &CriticalPath, tol: f64) {
    let share = |p: &CriticalPath, c: &str| p.shares().iter().find(|(x, _)| x == c).map_or(0.0, |(_, v)| *v);
    for c in got.ns.iter().chain(&want.ns).map(|(c, _)| c.as_str()) {
        let (g, w) = (share(got, c), share(want, c));
        assert!(
            (g - w).abs() <= tol,
            "share of {c} on the critical path: {g} with jumps, {w} unrolled\n{got:?}\n{want:?}"
        );
    }
}

/// The hardware profiles the looped-model property tests draw: trn2's, with a DMA queue
/// depth of 1 to 4 and an HBM rate of 50 to 500 bytes per ns (what moves the DMA-bound steady
/// state a looped model must find).
pub fn profiles() -> impl Strategy<Value = HwProfile> {
    (1u32..5, 50.0f64..500.0).prop_map(|(depth, hbm_rate)| {
        let mut profile = Target::Trn2.profile();
        profile.dma_queue_depth = f64::from(depth);
        profile.hbm_bytes_per_ns = hbm_rate;
        profile
    })
}

/// The moving free sizes (tile widths) the looped-model property tests draw, ragged ones
/// included.
pub fn widths() -> impl Strategy<Value = u32> {
    prop::sample::select(vec![64u32, 128, 200, 384, 512])
}
