//! The trace and SVG in a kernel author's terms: every wait paired with the signal that
//! released it, counters within capacity, tiles and K steps on every slice, and the tile
//! grid coloured in the modeled finish order. The GEMMs are planned by codegen, so these
//! tests live here rather than in sim (which does not depend on codegen).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bir::{Engine, Program};
use codegen::{GemmConfig, Schedule};
use penguin::{DType, Memory, Target};
use serde_json::Value;
use sim::{chrome_trace_with, model, tile_grid_svg, Axis, CycleReport, GemmLayout, KernelInfo, SbufBuffer, TensorAxes};
use test_support::plan::{lower_plan, plan_gemm};

const M: u64 = 384;
const K: u64 = 640;
const N: u64 = 1100;

/// A planned GEMM, its model, and the context ntile would give.
fn gemm(target: Target, schedule: Schedule, lhs_transposed: bool) -> (Program, CycleReport, KernelInfo) {
    let mut cfg = GemmConfig::new(M, K, N, DType::Bf16, target);
    cfg.schedule = schedule;
    cfg.lhs_transposed = lhs_transposed;
    cfg.input_dtype = DType::Bf16;
    let plan = plan_gemm(&cfg).unwrap();
    let p = lower_plan(&plan, target);
    let r = model(&p).unwrap();
    let buffers = plan
        .function
        .tensors
        .values()
        .filter(|t| t.memory == Memory::Sbuf)
        .map(|t| SbufBuffer {
            name: t.name.clone(),
            start_partition: 0,
            num_partitions: t.shape[0] as u32,
            byte_offset: t.address.unwrap(),
            bytes_per_partition: t.bytes_per_partition(),
        })
        .collect();
    let a = if lhs_transposed { ((Axis::K, 128), (Axis::M, 128)) } else { ((Axis::M, 128), (Axis::K, 128)) };
    let info = KernelInfo {
        title: Some(format!("gemm {M}x{K}x{N}")),
        buffers,
        gemm: Some(GemmLayout {
            m: M,
            n: N,
            tile_m: 128,
            tile_n: 512,
            block: Some((256, 512)),
            tensors: vec![
                TensorAxes { name: "a".into(), rows: a.0, cols: a.1 },
                TensorAxes { name: "b".into(), rows: (Axis::K, 128), cols: (Axis::N, 512) },
                TensorAxes { name: "c".into(), rows: (Axis::M, 128), cols: (Axis::N, 512) },
            ],
        }),
        source: None,
    };
    (p, r, info)
}

fn events(p: &Program, r: &CycleReport, info: &KernelInfo) -> Vec<Value> {
    let v: Value = serde_json::from_str(&chrome_trace_with(p, r, info)).expect("valid JSON");
    v["traceEvents"].as_array().unwrap().clone()
}

fn schedules() -> Vec<(Target, Schedule, bool)> {
    let mut out = Vec::new();
    for target in [Target::Trn1, Target::Trn2] {
        for schedule in [Schedule::Naive, Schedule::Hoisted, Schedule::BlockedMn, Schedule::BlockedMnk] {
            out.push((target, schedule, false));
        }
    }
    out.push((Target::Trn2, Schedule::Hoisted, true));
    out
}

#[test]
fn every_wait_is_paired_with_the_signal_that_released_it() {
    for (target, schedule, t) in schedules() {
        let (p, r, info) = gemm(target, schedule, t);
        let ev = events(&p, &r, &info);
        let waits: usize = p.streams.iter().flatten().map(|i| i.waits.iter().filter(|w| w.value > 0).count()).sum();
        assert!(waits > 0);
        let mut starts: HashMap<u64, &Value> = HashMap::new();
        let mut finishes: HashMap<u64, &Value> = HashMap::new();
        for e in &ev {
            let id = || e["id"].as_u64().unwrap();
            match e["ph"].as_str() {
                Some("s") => assert!(starts.insert(id(), e).is_none()),
                Some("f") => assert!(finishes.insert(id(), e).is_none()),
                _ => {}
            }
        }
        assert_eq!((starts.len(), finishes.len()), (waits, waits), "{target} {schedule}");
        // Slices by track, to find the one each flow end binds to.
        let slices: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "X" && e["name"] != "wait").collect();
        let enclosing = |tid: &Value, ts: f64| {
            let found: Vec<&&Value> = slices
                .iter()
                .filter(|s| {
                    let (t0, d) = (s["ts"].as_f64().unwrap(), s["dur"].as_f64().unwrap());
                    s["tid"] == *tid && t0 <= ts + 1e-9 && ts <= t0 + d + 1e-9
                })
                .collect();
            assert!(!found.is_empty(), "no slice at {ts} on {tid}");
            found
        };
        for (id, s) in &starts {
            let f = finishes[id];
            let name = s["name"].as_str().unwrap();
            let (sem, _) = name.split_once(">=").unwrap();
            // The producer signals that semaphore and ends before the consumer starts.
            let producers = enclosing(&s["tid"], s["ts"].as_f64().unwrap());
            let producer = producers.iter().find(|x| x["args"]["signal"] == sem).expect("a signalling slice");
            let consumers = enclosing(&f["tid"], f["ts"].as_f64().unwrap());
            let consumer = consumers
                .iter()
                .find(|x| x["args"]["waits"].as_str().is_some_and(|w| w.split(", ").any(|w| w == name)))
                .expect("a waiting slice");
            let end = producer["ts"].as_f64().unwrap() + producer["dur"].as_f64().unwrap();
            assert!(end <= consumer["ts"].as_f64().unwrap() + 1e-6, "{name}: {producer} after {consumer}");
            assert_eq!(f["bp"], "e");
        }
        // Wait slices are grouped under one name, with the semaphores and the releaser in args.
        let wait_slices: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "X" && e["cat"] == "wait").collect();
        assert!(!wait_slices.is_empty());
        for w in wait_slices {
            assert_eq!(w["name"], "wait");
            assert!(w["args"]["waits"].as_str().unwrap().contains(">="), "{w}");
            assert!(w["args"]["released_by"].is_string(), "{w}");
        }
    }
}

#[test]
fn counters_never_exceed_capacity_and_hbm_adds_up() {
    for (target, schedule, t) in schedules() {
        let (p, r, info) = gemm(target, schedule, t);
        let ev = events(&p, &r, &info);
        let capacity = u64::from(target.info().statebuf_par_size_in_bytes);
        let sizes: HashMap<String, u64> =
            info.buffers.iter().map(|b| (format!("sbuf {}", b.name), b.bytes_per_partition)).collect();
        // Replay the SBUF counters in time order (ends before starts at one time).
        let mut samples: Vec<(f64, u64, String, u64)> = Vec::new();
        let mut psum_max = 0;
        let mut hbm: Vec<(f64, f64)> = Vec::new();
        for e in ev.iter().filter(|e| e["ph"] == "C") {
            let name = e["name"].as_str().unwrap().to_string();
            let ts = e["ts"].as_f64().unwrap();
            if let Some(&size) = sizes.get(&name) {
                let v = e["args"]["bytes_per_partition"].as_u64().unwrap();
                assert!(v <= size, "{name}: {v} > {size}");
                samples.push((ts, v, name, 0));
            } else if name == "psum banks live" {
                psum_max = psum_max.max(e["args"]["banks"].as_u64().unwrap());
            } else if name == "hbm GB/s" {
                hbm.push((ts, e["args"]["GB/s"].as_f64().unwrap()));
            } else {
                panic!("unexpected counter {name}");
            }
        }
        samples.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut now: BTreeMap<String, u64> = BTreeMap::new();
        let mut peak = 0;
        for (_, v, name, _) in samples {
            now.insert(name, v);
            peak = peak.max(now.values().sum::<u64>());
        }
        assert!(peak > 0 && peak <= capacity, "{target} {schedule}: SBUF peak {peak} of {capacity}");
        assert!((1..=8).contains(&psum_max), "{target} {schedule}: {psum_max} PSUM banks");
        // The rate never exceeds the HBM bandwidth and integrates to the bytes moved.
        let bandwidth = target.profile().hbm_bytes_per_ns;
        for &(ts, rate) in &hbm {
            assert!(rate <= bandwidth * (1.0 + 1e-9), "{target} {schedule}: {rate} GB/s at {ts} us");
        }
        let total: f64 = hbm.windows(2).map(|w| w[0].1 * (w[1].0 - w[0].0) * 1e3).sum();
        let want = r.hbm_bytes as f64;
        assert!((total - want).abs() <= 1e-6 * want, "{target} {schedule}: {total} vs {want}");
    }
}

/// Tile indices of an arg like `3` or `0-2`.
fn span(v: &Value) -> Option<(u64, u64)> {
    let s = v.as_str()?;
    Some(match s.split_once('-') {
        Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
        None => (s.parse().ok()?, s.parse().ok()?),
    })
}

#[test]
fn matmuls_and_stores_name_their_tile_and_k_step() {
    let (mt, nt, kt) = (M.div_ceil(128), N.div_ceil(512), K.div_ceil(128));
    for (target, schedule, t) in schedules() {
        let (p, r, info) = gemm(target, schedule, t);
        let ev = events(&p, &r, &info);
        let mut matmuls = BTreeSet::new();
        let mut stores = BTreeSet::new();
        for e in ev.iter().filter(|e| e["ph"] == "X") {
            let a = &e["args"];
            match e["name"].as_str().unwrap() {
                "multiply_moving" => {
                    let (m, n, k) = (span(&a["m"]).unwrap(), span(&a["n"]).unwrap(), span(&a["k_step"]).unwrap());
                    assert!(m.0 == m.1 && n.0 == n.1 && k.0 == k.1, "one tile and K step: {a}");
                    assert!(a["tensor"].as_str().unwrap().contains("-> psum bank"), "{a}");
                    assert!(matmuls.insert((m.0, n.0, k.0)), "{target} {schedule}: tile {m:?} {n:?} {k:?} twice");
                    assert!(a["planner_step"].as_str().unwrap().starts_with('i'), "{a}");
                }
                "dma_copy" if a["tensor"].as_str().is_some_and(|s| s.ends_with("-> c")) => {
                    let (m, n) = (span(&a["m"]).unwrap(), span(&a["n"]).unwrap());
                    // A store serves every K step of its tile.
                    assert_eq!(span(&a["k_step"]), Some((0, kt - 1)), "{a}");
                    for i in m.0..=m.1 {
                        for j in n.0..=n.1 {
                            stores.insert((i, j));
                        }
                    }
                }
                _ => {}
            }
        }
        let all: BTreeSet<(u64, u64, u64)> =
            (0..mt).flat_map(|m| (0..nt).flat_map(move |n| (0..kt).map(move |k| (m, n, k)))).collect();
        assert_eq!(matmuls, all, "{target} {schedule}");
        assert_eq!(stores.len() as u64, mt * nt);
    }
}

/// Perceived brightness of `#rrggbb`.
fn luma(hex: &str) -> f64 {
    let c = |i: usize| f64::from(u8::from_str_radix(&hex[i..i + 2], 16).unwrap());
    0.299 * c(1) + 0.587 * c(3) + 0.114 * c(5)
}

/// `name="value"` in an SVG element.
fn attr<'a>(element: &'a str, name: &str) -> &'a str {
    let at = element.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
    &element[at..at + element[at..].find('"').unwrap()]
}

#[test]
fn the_tile_grid_is_coloured_in_the_modeled_finish_order() {
    for (target, schedule, t) in schedules() {
        let (p, r, info) = gemm(target, schedule, t);
        // Finish times straight from the stores' C offsets.
        let c = p.hbm_tensor("c").unwrap();
        let mut want: BTreeMap<(u64, u64), f64> = BTreeMap::new();
        for s in &r.slices {
            let inst = &p.stream(s.engine)[s.index];
            if let bir::Op::DmaCopy { dst, .. } = &inst.op {
                if dst.memory == Memory::Hbm && dst.byte_offset >= c.address {
                    let elem = (dst.byte_offset - c.address) / 4;
                    let key = (elem / N / 128, elem % N / 512);
                    let e = want.entry(key).or_insert(0.0);
                    *e = e.max(s.end_ns);
                }
            }
        }
        let svg = tile_grid_svg(&p, &r, &info).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        let mut cells: Vec<(f64, f64)> = Vec::new();
        for element in svg.split('<').filter(|e| e.starts_with("rect class=\"tile\"")) {
            let key = (attr(element, "data-m").parse().unwrap(), attr(element, "data-n").parse().unwrap());
            let finish: f64 = attr(element, "data-finish-us").parse().unwrap();
            assert!((finish - want[&key] / 1e3).abs() < 1e-3, "{key:?}: {finish} vs {}", want[&key]);
            cells.push((finish, luma(attr(element, "fill"))));
        }
        assert_eq!(cells.len(), want.len());
        cells.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in cells.windows(2) {
            assert!(w[0].1 <= w[1].1 + 1.0, "{target} {schedule}: a later tile is darker: {w:?}");
        }
        assert!(svg.contains("<line class=\"block\""), "block boundaries drawn");
        assert!(tile_grid_svg(&p, &r, &KernelInfo::default()).is_none());
    }
}

#[test]
fn the_critical_path_accounts_for_the_whole_modeled_time() {
    for (target, schedule, t) in schedules() {
        let (p, r, _) = gemm(target, schedule, t);
        let path = sim::critical_path(&p, &r);
        let sum: f64 = path.ns.iter().map(|(_, ns)| ns).sum();
        assert!((sum - r.total_ns).abs() <= 1e-6 * r.total_ns, "{target} {schedule}: {sum} vs {}", r.total_ns);
        // No class is charged more than its engines were busy (the DMA queues together).
        for (class, ns) in &path.ns {
            let busy: f64 = match class.as_str() {
                "pe" => r.engine_busy_ns[Engine::Pe.index()],
                "act" => r.engine_busy_ns[Engine::Act.index()],
                "dve" => r.engine_busy_ns[Engine::Dve.index()],
                "pool" => r.engine_busy_ns[Engine::Pool.index()],
                "dma" => (0..16).map(|q| r.engine_busy_ns[Engine::Dma(q).index()]).sum(),
                _ => f64::INFINITY,
            };
            assert!(*ns <= busy + 1e-6, "{target} {schedule}: {class} {ns} > busy {busy}");
        }
        let (top, share) = path.bottleneck().unwrap();
        assert!(top != "idle" && share > 0.0 && share <= 1.0);
    }
}

/// A DMA queue with room starts a transfer once the one before it started: the walk steps
/// to that one (and on to what held it), not across the gap since an older transfer ended.
/// A blocked-mnk GEMM whose loads are issued far ahead charged 61% of its time to `idle`
/// when the walk only looked for what had ended.
#[test]
fn transfers_held_by_in_order_issue_charge_no_idle() {
    let mut cfg = GemmConfig::new(4096, 4096, 4096, DType::Bf16, Target::Trn2);
    cfg.schedule = Schedule::BlockedMnk;
    cfg.blocks = codegen::BlockSizes { m: 1024, n: 2048, k: 512 };
    cfg.input_dtype = DType::Bf16;
    let p = lower_plan(&plan_gemm(&cfg).unwrap(), Target::Trn2);
    let r = model(&p).unwrap();
    let path = sim::critical_path(&p, &r);
    let idle = path.shares().into_iter().find(|(c, _)| c == "idle").map_or(0.0, |(_, s)| s);
    assert!(idle < 0.01, "{path:?}");
    // The PE is busy 87% of the time; the path runs through it and the loads it waited for.
    let share = |c: &str| path.shares().into_iter().find(|(x, _)| x == c).map_or(0.0, |(_, s)| s);
    assert!(share("pe") > 0.3 && share("dma") > 0.3, "{path:?}");
    assert!((r.engine_busy_ns[bir::Engine::Pe.index()] / r.total_ns - 0.87).abs() < 0.01);
}

#[test]
fn slices_name_their_source_line_when_known() {
    let (p, r, mut info) = gemm(Target::Trn2, Schedule::Naive, false);
    // Every instruction on line 100 + its stream index.
    info.source = Some(sim::SourceLines {
        file: "k.bir".into(),
        lines: p.streams.iter().map(|s| (0..s.len()).map(|i| Some(100 + i as u32)).collect()).collect(),
    });
    let ev = events(&p, &r, &info);
    let slices: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "X" && e["name"] != "wait").collect();
    assert_eq!(slices.len(), r.slices.len());
    for s in slices {
        let want = format!("k.bir:{}", 100 + s["args"]["index"].as_u64().unwrap());
        assert_eq!(s["args"]["source"], want.as_str(), "{s}");
        assert!(s["args"].get("planner_step").is_none());
    }
}

#[test]
fn slices_name_the_source_location_lowering_carried_from_their_origin() {
    let (mut p, r, info) = gemm(Target::Trn2, Schedule::Naive, false);
    // Every Penguin instruction on a line of kernel.py, as a traced NKI kernel's would be.
    let origins: Vec<penguin::InstId> = p.streams.iter().flatten().filter_map(|i| i.origin).collect();
    for &o in &origins {
        p.srclocs.set(o, Some(format!("kernel.py:{}", o.0 + 1).into()));
    }
    let ev = events(&p, &r, &info);
    let slices: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "X" && e["name"] != "wait").collect();
    assert!(!slices.is_empty());
    for s in slices {
        let origin: u32 = s["args"]["origin"].as_str().unwrap()[1..].parse().unwrap();
        assert_eq!(s["args"]["source"], format!("kernel.py:{}", origin + 1).as_str(), "{s}");
        assert!(s["args"].get("planner_step").is_none());
    }
}
