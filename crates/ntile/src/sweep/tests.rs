//! Tests of `ntile sweep`: both CSV layouts, rows that name their error, rows that agree
//! with `ntile gemm --no-sim`, and repeated rows modeled once.

use super::*;
use crate::gemm::{self, GemmArgs};

fn args() -> SweepArgs {
    SweepArgs {
        layers: PathBuf::from("layers.csv"),
        target: Target::Trn2,
        dtype: DType::Bf16,
        schedule: Schedule::BlockedMn,
        hbm_dtype: None,
        out_dtype: DType::Fp32,
        json: false,
        quiet: true,
    }
}

#[test]
fn reads_ntile_csv_with_optional_columns_in_any_order() {
    let text = "# a comment\nschedule,name,n,k,m,dtype\n,qkv,768,256,128,\nblocked-mnk,mlp,512,128,64,fp16\n\n";
    let layers = parse(text).unwrap();
    assert_eq!(
        layers,
        vec![
            Layer { line: 3, name: "qkv".into(), m: 128, k: 256, n: 768, dtype: None, schedule: None },
            Layer {
                line: 4,
                name: "mlp".into(),
                m: 64,
                k: 128,
                n: 512,
                dtype: Some(DType::Fp16),
                schedule: Some(Schedule::BlockedMnk)
            },
        ]
    );
}

#[test]
fn reads_scale_sim_gemm_topologies() {
    // SCALE-Sim lists M, N, K (C[M, N] = A[M, K] @ B[K, N]), often with a trailing comma.
    let layers = parse("Layer Name, M, N, K,\nTest 1, 256, 128, 512,\n").unwrap();
    assert_eq!(
        layers,
        vec![Layer { line: 2, name: "Test 1".into(), m: 256, k: 512, n: 128, dtype: None, schedule: None }]
    );
    let layers = parse("Layer,M,N,K\nQKT,1024,1024,64\n").unwrap();
    assert_eq!((layers[0].m, layers[0].k, layers[0].n), (1024, 64, 1024));
}

#[test]
fn bad_rows_name_the_line_and_column() {
    for (text, needle) in [
        ("name,m,k,n\na,128,x,64\n", "line 2 (a), column k: `x` is not a positive integer"),
        ("name,m,k,n\na,128,64,64\nb,0,64,64\n", "line 3 (b), column m: `0` is not a positive integer"),
        ("name,m,k,n\na,128,64\n", "line 2: 3 cells, but the header has 4 columns"),
        ("name,m,k,n,dtype\na,128,64,64,fp64\n", "line 2 (a), column dtype:"),
        ("name,m,k,n,schedule\na,128,64,64,fast\n", "line 2 (a), column schedule:"),
        ("name,m,k,batch\n", "line 1: unknown column `batch`"),
        ("name,m,k\na,1,2\n", "line 1: the header has no `n` column"),
        ("name,m,m,n\n", "line 1: column `m` appears twice"),
        ("name,layer,m,k,n\n", "line 1: column `layer` appears twice"),
        ("\u{feff}name,m,k,n\na,1,x,1\n", "line 2 (a), column k"),
        ("# nothing\n", "no layers"),
        ("name,m,k,n\na,-4,64,64\n", "column m: `-4`"),
    ] {
        let e = parse(text).unwrap_err();
        assert_eq!(e.code, crate::error::EXIT_USAGE, "{text:?}");
        assert!(e.message.contains(needle), "{text:?}: {}", e.message);
    }
}

#[test]
fn a_layer_the_planner_refuses_names_its_row() {
    let layers = parse("name,m,k,n,dtype\nok,128,128,128,\nbad,128,128,128,fp8e4m3fn\n").unwrap();
    let e = sweep(&args(), &layers, &Progress::hidden(), None).unwrap_err();
    assert_eq!(e.code, crate::error::EXIT_USAGE);
    assert!(e.message.contains("layers.csv: line 3 (bad): ") && e.message.contains("trn3"), "{}", e.message);
}

#[test]
fn rows_agree_with_gemm_no_sim_and_totals_add_up() {
    let layers = parse("name,m,k,n\nup,256,512,1024\ndown,256,1024,512\ntiny,1,64,100\n").unwrap();
    let rows = sweep(&args(), &layers, &Progress::hidden(), None).unwrap().rows;
    assert_eq!(rows.len(), 3);
    for (row, layer) in rows.iter().zip(&layers) {
        let alone = gemm::run(&GemmArgs {
            m: Some(layer.m),
            k: Some(layer.k),
            n: Some(layer.n),
            schedule: Some(Schedule::BlockedMn),
            no_sim: true,
            ..GemmArgs::default()
        })
        .unwrap()
        .report;
        assert_eq!((row.modeled_time_us, row.hfu, row.hbm_bytes), (alone.modeled_time_us, alone.hfu, alone.hbm_bytes));
        assert_eq!((row.schedule.as_str(), row.dtype.as_str()), ("blocked-mn", "bf16"));
    }
    let t = totals(&rows);
    assert_eq!(t.layers, 3);
    assert_eq!(t.hbm_bytes, rows.iter().map(|r| r.hbm_bytes).sum::<u64>());
    let time: f64 = rows.iter().map(|r| r.modeled_time_us).sum();
    assert!((t.modeled_time_us - time).abs() <= 1e-9 * time);
    let weighted: f64 = rows.iter().map(|r| r.hfu * r.modeled_time_us).sum::<f64>() / time;
    assert!((t.hfu - weighted).abs() <= 1e-12);
    let text = table(Target::Trn2, &rows, &t);
    assert!(text.lines().nth(2).unwrap().starts_with("up "), "{text}");
    assert!(text.lines().last().unwrap().starts_with("total"), "{text}");
}

/// The figures of a row, compared exactly.
fn figures(r: &Row) -> (&str, u64, u64, u64, &str, &str, u64, u64, u64) {
    (&r.name, r.m, r.k, r.n, &r.dtype, &r.schedule, r.modeled_time_us.to_bits(), r.hfu.to_bits(), r.hbm_bytes)
}

#[test]
fn repeated_rows_are_modeled_once_and_equal_each_row_modeled_alone() {
    // Four distinct GEMMs over eight rows: a name is not part of a GEMM, a dtype or a
    // schedule is (even one the flags would also give).
    let text = "name,m,k,n,dtype,schedule\n\
                a,256,512,1024,,\n\
                b,256,1024,512,,\n\
                a2,256,512,1024,,\n\
                c,256,512,1024,fp16,\n\
                d,256,512,1024,,blocked-mnk\n\
                b2,256,1024,512,,\n\
                a3,256,512,1024,bf16,blocked-mn\n\
                c2,256,512,1024,fp16,\n";
    let layers = parse(text).unwrap();
    let swept = sweep(&args(), &layers, &Progress::hidden(), None).unwrap();
    assert_eq!(swept.models, 4);
    assert_eq!(swept.rows.len(), layers.len());
    for (row, layer) in swept.rows.iter().zip(&layers) {
        let alone = sweep(&args(), std::slice::from_ref(layer), &Progress::hidden(), None).unwrap();
        assert_eq!(alone.models, 1);
        assert_eq!(figures(row), figures(&alone.rows[0]), "line {}", layer.line);
    }
    let names: Vec<&str> = swept.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "a2", "c", "d", "b2", "a3", "c2"]);
    assert_eq!(swept.rows[3].dtype, "fp16");
    assert_eq!(swept.rows[4].schedule, "blocked-mnk");
}

#[test]
fn the_first_failing_row_of_a_repeated_gemm_is_the_error() {
    let text =
        "name,m,k,n,dtype\nok,128,128,128,\nbad,128,128,128,fp8e4m3fn\nok2,128,128,128,\nbad2,128,128,128,fp8e4m3fn\n";
    let layers = parse(text).unwrap();
    let e = sweep(&args(), &layers, &Progress::hidden(), None).unwrap_err();
    assert_eq!(e.code, crate::error::EXIT_USAGE);
    assert!(e.message.starts_with("layers.csv: line 3 (bad): "), "{}", e.message);
}

#[test]
fn a_sweep_stopped_at_any_poll_is_interrupted() {
    let text = "name,m,k,n,schedule\na,256,512,384,naive\nb,128,256,512,hoisted\na2,256,512,384,naive\n";
    let layers = parse(text).unwrap();
    // The polls of the whole sweep, counted by a flag that never sets itself.
    let counting = Cancel::after(u64::MAX);
    assert_eq!(sweep(&args(), &layers, &Progress::hidden(), Some(&counting)).unwrap().models, 2);
    let polls = u64::MAX - counting.polls_left().unwrap();
    assert!(polls > 10, "{polls} polls");
    for n in 0..=polls {
        let e = sweep(&args(), &layers, &Progress::hidden(), Some(&Cancel::after(n))).err();
        let e = e.unwrap_or_else(|| panic!("poll {n} of {polls} did not stop the sweep"));
        assert_eq!((e.code, e.message.as_str()), (crate::error::EXIT_INTERRUPTED, "interrupted"), "poll {n}");
    }
}
