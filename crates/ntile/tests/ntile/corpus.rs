//! The corpus of bad inputs (`tests/corpus/cases.txt`): malformed files, flags, arrays,
//! sizes and failing writes, each with the exit code ntile must give and a piece of the
//! message it must print. Every case runs the `ntile` binary; the `.npy` files the cases name
//! under `{d}` are written here, small, into a scratch directory removed afterwards.

use std::path::Path;
use std::process::{Command, Stdio};
use test_support::{path_str, scratch};

/// A version 1.0 `.npy` header for `descr` and `shape`, then `data`.
fn npy(descr: &str, shape: &[u64], fortran: bool, data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let tuple = if shape.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let order = if fortran { "True" } else { "False" };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {tuple}, }}");
    let header = format!("{dict:<118}\n");
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

fn f32s(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

/// The arrays the cases name: two good operands and every kind of bad one.
fn write_arrays(dir: &Path) {
    let mut idx: Vec<i32> = (0..128).collect();
    idx[5] = 1000;
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("a.npy", npy("<f4", &[4, 16], false, &f32s((0..64).map(|i| i as f32 / 64.0)))),
        ("b.npy", npy("<f4", &[16, 8], false, &f32s((0..128).map(|i| 1.0 - i as f32 / 128.0)))),
        ("f64.npy", npy("<f8", &[4, 16], false, &[0; 512])),
        ("be.npy", npy(">f4", &[4, 16], false, &[0; 256])),
        ("i16.npy", npy("<i2", &[4, 16], false, &[0; 128])),
        ("fortran.npy", npy("<f4", &[4, 16], true, &[0; 256])),
        ("trunc.npy", npy("<f4", &[4, 16], false, &[0; 100])),
        ("garbage.npy", b"this is not an npy file at all".to_vec()),
        ("zero.npy", Vec::new()),
        ("empty_shape.npy", npy("<f4", &[0, 16], false, &[])),
        ("r3.npy", npy("<f4", &[2, 2, 2], false, &[0; 32])),
        ("r1.npy", npy("<f4", &[4], false, &[0; 16])),
        ("huge.npy", npy("<f4", &[1 << 32, 1 << 32], false, &[])),
        ("u2.npy", npy("<u2", &[4, 16], false, &[0; 128])),
        ("b_wrong.npy", npy("<f4", &[15, 8], false, &[0; 480])),
        ("table.npy", npy("<f4", &[1000, 64], false, &vec![0; 256_000])),
        ("idx_oob.npy", npy("<i4", &[128], false, &idx.iter().flat_map(|i| i.to_le_bytes()).collect::<Vec<_>>())),
        ("idx_f32.npy", npy("<f4", &[128], false, &[0; 512])),
    ];
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// One line of `cases.txt`: `ARGS | EXIT | PATTERN`.
struct Case {
    line: usize,
    args: Vec<String>,
    stdout_full: bool,
    exit: i32,
    pattern: String,
}

fn cases(text: &str, subst: &[(&str, &str)]) -> Vec<Case> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() || raw.starts_with('#') {
            continue;
        }
        let mut parts = raw.splitn(3, " | ");
        let (Some(args), Some(exit), Some(pattern)) = (parts.next(), parts.next(), parts.next()) else {
            panic!("cases.txt:{}: expected `ARGS | EXIT | PATTERN`", i + 1)
        };
        let mut args: Vec<String> = args
            .split_whitespace()
            .map(|a| subst.iter().fold(a.to_string(), |a, (from, to)| a.replace(from, to)))
            .collect();
        let stdout_full = args.first().is_some_and(|a| a == ">full");
        if stdout_full {
            args.remove(0);
        }
        let exit = exit.trim().parse().unwrap_or_else(|_| panic!("cases.txt:{}: bad exit code", i + 1));
        out.push(Case { line: i + 1, args, stdout_full, exit, pattern: pattern.trim().to_string() });
    }
    out
}

#[test]
fn every_bad_input_gets_its_exit_code_and_message() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let corpus = root.join("tests/corpus");
    let examples = root.join("examples");
    let dir = scratch("corpus");
    write_arrays(&dir);
    let subst = [("{c}", path_str(&corpus)), ("{ex}", path_str(&examples)), ("{d}", path_str(&dir))];
    let all = cases(&std::fs::read_to_string(corpus.join("cases.txt")).unwrap(), &subst);
    assert!(all.len() >= 100, "only {} cases", all.len());
    let mut failures = Vec::new();
    for case in &all {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ntile"));
        cmd.args(&case.args).stdin(Stdio::null());
        if case.stdout_full {
            cmd.stdout(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap());
        }
        let o = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(case.exit) || !stderr.contains(&case.pattern) {
            failures.push(format!(
                "cases.txt:{}: ntile {}\n  want exit {} and {:?}\n  got  {:?}: {}",
                case.line,
                case.args.join(" "),
                case.exit,
                case.pattern,
                o.status.code(),
                stderr.trim()
            ));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), all.len(), failures.join("\n"));
}

/// `--order` and `--block-*` under `auto` hold in what it chooses (read from `--json`).
#[test]
fn order_and_block_flags_constrain_auto() {
    let shape = ["gemm", "--m", "1024", "--k", "2048", "--n", "2048", "--no-sim", "--json"];
    for (extra, order, block_m, block_k) in [
        (vec!["--order", "n-outer"], "n-outer", None, None),
        (vec!["--order", "m-outer", "--block-m", "256"], "m-outer", Some(256), None),
        (vec!["--block-k", "512"], "", None, Some(512)),
    ] {
        let o = crate::support::ntile(&[&shape[..], &extra[..]].concat());
        assert_eq!(crate::support::code(&o), 0, "{}", crate::support::stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let auto = &v["auto"];
        if !order.is_empty() {
            assert_eq!(auto["order"], order, "{extra:?}: {auto}");
        }
        if let Some(m) = block_m {
            assert_eq!(auto["block_m"], m, "{extra:?}: {auto}");
        }
        if let Some(k) = block_k {
            // Only blocked-mnk blocks K.
            assert_eq!((auto["block_k"].as_u64(), v["schedule"].as_str()), (Some(k), Some("blocked-mnk")), "{v}");
        }
    }
}

/// A candidate `auto` cannot cost is ntile's bug: exit 3, not a user error.
#[test]
fn a_failure_inside_auto_is_internal() {
    let cfg = codegen::GemmConfig {
        schedule: codegen::Schedule::Auto,
        ..codegen::GemmConfig::new(256, 256, 256, penguin::DType::Bf16, penguin::Target::Trn2)
    };
    let cost = |_: &codegen::GemmPlan| Err(codegen::CodegenError::Internal("cycle model failed: boom".into()));
    let hw = cfg.target.profile();
    let search =
        codegen::AutoSearch { limits: codegen::AutoLimits::default(), hw: &hw, shortlist: 4, threads: 1, cost: &cost };
    let request = codegen::PlanRequest::new(&cfg).with_search(search);
    let e = codegen::plan::<_, ()>(&request, &codegen::default_builder).unwrap_err();
    let cli = ntile::CliError::from(driver::DriverError::from(e));
    assert_eq!(cli.code, ntile::error::EXIT_INTERNAL);
    assert_eq!(cli.message, "internal error: cycle model failed: boom (a bug)");
}

/// A reader that stops early (`| head`) is not an error: the run's own exit code stands and
/// nothing is printed; a full disk is (see the `>full` cases).
#[test]
fn a_closed_pipe_is_quiet() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ntile"))
        .args(["gemm", "--m", "256", "--k", "1024", "--n", "1024", "--emit", "penguin"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end before ntile has planned and writes its text: the write fails with
    // EPIPE (no reader left), whatever room the pipe has.
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!((o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned()), (Some(0), String::new()));
}
