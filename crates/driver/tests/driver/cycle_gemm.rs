//! Cycle model tests on GEMMs planned by codegen (every schedule, A transposed by DMA or on
//! the PE): each timeline is consistent with the program's semaphores, engines and DMA queue
//! depth, and the trace has one track per used engine. They live here rather than in sim,
//! which does not depend on codegen; the single-instruction tests are sim's
//! (`crates/sim/tests/sim/cycle.rs`).

use bir::{Engine, Program};
use codegen::Schedule;
use penguin::Target;
use sim::{model, CycleReport};
use test_support::plan::planned;
use test_support::trace::{thread_names, trace_json};

/// Every slice starts after the semaphore counts it waits for were reached, engines never
/// overlap themselves (except the PE's documented overlaps and the DMA queues' transfers in
/// flight, at most the queue depth), and the figures are sane.
fn check_timeline(p: &Program, r: &CycleReport) {
    assert_eq!(r.slices.len(), p.num_insts());
    let mut signals: Vec<Vec<f64>> = vec![Vec::new(); p.semaphores.len()];
    for s in &r.slices {
        if let Some(sem) = p.streams[s.engine.index()][s.index].signal {
            signals[sem.0 as usize].push(s.end_ns);
        }
    }
    for v in &mut signals {
        v.sort_by(f64::total_cmp);
    }
    let mut last_end = [0.0f64; bir::NUM_ENGINES];
    let mut in_flight: Vec<Vec<f64>> = vec![Vec::new(); bir::NUM_ENGINES];
    let depth = p.target.profile().queue_depth();
    for s in &r.slices {
        let inst = &p.streams[s.engine.index()][s.index];
        for w in &inst.waits {
            if w.value > 0 {
                assert!(s.start_ns >= signals[w.sem.0 as usize][w.value as usize - 1] - 1e-9);
            }
        }
        assert!(s.end_ns >= s.start_ns && s.wait_ns >= 0.0 && s.end_ns <= r.total_ns + 1e-9);
        if let Engine::Dma(_) = s.engine {
            let flight = &mut in_flight[s.engine.index()];
            flight.retain(|&e| e > s.start_ns + 1e-9);
            assert!(flight.len() < depth, "{s:?} exceeds the queue depth");
            flight.push(s.end_ns);
        } else if s.engine != Engine::Pe {
            assert!(s.start_ns >= last_end[s.engine.index()] - 1e-9, "{:?} overlaps its predecessor", s);
            last_end[s.engine.index()] = s.end_ns;
        }
    }
    assert!(r.hfu() > 0.0 && r.hfu() <= 1.0, "hfu {}", r.hfu());
    for e in Engine::all() {
        assert!(r.busy_fraction(e) <= 1.0 + 1e-9);
    }
    assert_eq!(r.hbm_bytes, p.hbm_traffic_bytes());
}

#[test]
fn planned_gemms_have_consistent_timelines() {
    for target in [Target::Trn1, Target::Trn2] {
        for schedule in [Schedule::Naive, Schedule::Hoisted, Schedule::BlockedMn, Schedule::BlockedMnk] {
            for lhs_transposed in [false, true] {
                let p = planned(target, schedule, lhs_transposed, 384, 1024, 1100);
                let r = model(&p).unwrap();
                check_timeline(&p, &r);
                let trace = trace_json(&p, &r);
                let names = thread_names(&trace);
                for e in Engine::all().filter(|e| !p.stream(*e).is_empty()) {
                    assert_eq!(names.iter().filter(|n| **n == e.name()).count(), 1, "{e} in {names:?}");
                }
            }
        }
    }
}
