//! The looped cycle model on a nest as bir's native looped lowering writes it (every engine's
//! stream one loop nest with affine waits): it jumps over the steady state.

use test_support::nests::ping_pong;

/// All engines share the nest, so the looped cycle model jumps over the steady state: a
/// 2^20-iteration nest models in well under a second, to the time the unrolled model gives
/// for small nests extrapolated linearly (each iteration costs the same).
#[test]
fn the_looped_model_jumps_over_a_natively_lowered_nest() {
    let model = |a: u32, b: u32| {
        let lp = bir::lower_looped_native(&ping_pong(a, b), penguin::Target::Trn2).unwrap();
        let (r, st) = sim::model_looped_stats(&lp, &lp.header.target.profile(), sim::LoopedOptions::default()).unwrap();
        (lp, r.total_ns, st)
    };
    let flat = |lp: &bir::LoopedProgram| sim::model(&lp.expand().unwrap()).unwrap().total_ns;
    let (small, t_small, _) = model(8, 16);
    let (mid, t_mid, st) = model(64, 64);
    assert_eq!((t_small, t_mid), (flat(&small), flat(&mid)));
    assert!(st.jumps >= 1, "{st:?}");
    let per_iteration = (t_mid - t_small) / f64::from(64 * 64 - 8 * 16);
    let t = std::time::Instant::now();
    let (_, t_big, st) = model(1 << 10, 1 << 10);
    assert!(st.jumps >= 1 && st.replayed < 10_000, "{st:?}");
    assert!(t.elapsed().as_millis() < 1000);
    let want = t_small + per_iteration * f64::from((1 << 20) - 8 * 16);
    assert!((t_big - want).abs() <= 1e-9 * want, "{t_big} vs {want}");
}
