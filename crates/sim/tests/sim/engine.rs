//! The compute-engine instructions added for real kernels: each one's documented cost in the
//! cycle model (read from the profile keys), the numpy references of the `; test run`
//! filetests, every activation function against numpy float64 over its domain (dense
//! samples and the edge values), and property tests of the ALU operators, reductions and
//! activations over random shapes and strides against f64 references within the stated
//! bounds (see `docs/isa-costs.md`).

use std::process::Command;

use bir::{Engine, HbmRole, HwAp, Op, Program};
use penguin::{ActFunc, AffineDim, AffinePattern, AluOp, DType, Dim, Memory, ScalarOperand, Target};
use proptest::prelude::*;
use sim::{model, model_with, Simulator};
use test_support::{hbm, psum, python, sbuf, Builder};

#[test]
fn run_filetest_expectations_are_numpys() {
    let script = test_support::files::filetests("sim").join("engine_expected.py");
    let o = Command::new("python3").arg(&script).output().expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "9 files agree with numpy");
}

/// One op on `engine` in a program of its own; its modeled time in ns.
fn time_of(engine: Engine, op: Op, profile: Option<&penguin::HwProfile>) -> f64 {
    let mut p = Program::new("cost", Target::Trn2);
    p.streams[engine.index()].push(bir::BirInst { op, waits: vec![], signal: None, origin: None });
    let r = match profile {
        Some(pr) => model_with(&p, pr).unwrap(),
        None => model(&p).unwrap(),
    };
    r.total_ns
}

fn assert_close(got: f64, want: f64) {
    assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "got {got}, want {want}");
}

fn col(parts: u32, byte_offset: u64) -> HwAp {
    sbuf(DType::Fp32, 0, parts, byte_offset, 1)
}

#[test]
fn each_kind_costs_its_documented_formula() {
    // trn2 clocks: ACT 1.2, DVE 0.96, POOL 1.2 GHz; MIN_II 64, GPSIMD_START 150.
    let (act, dve, pool) = (1.2, 0.96, 1.2);
    let x = |n| sbuf(DType::Fp32, 0, 128, 0, n);
    let bf = |n| sbuf(DType::Bf16, 0, 128, 0, n);
    let activation = |n, reduce: Option<HwAp>| Op::Activation {
        func: ActFunc::Exp,
        dst: x(n),
        src: x(n),
        scale: ScalarOperand::Imm(1.0),
        bias: ScalarOperand::Tile(col(128, 4096)),
        reduce,
    };
    // activation: max(MIN_II, N); with the row sums read out, + MIN_II.
    assert_close(time_of(Engine::Act, activation(512, None), None), 512.0 / act);
    assert_close(time_of(Engine::Act, activation(16, None), None), 64.0 / act);
    assert_close(time_of(Engine::Act, activation(512, Some(col(128, 4100))), None), 576.0 / act);
    // tensor_scalar: max(MIN_II, N) for one or two operators; a VectorE reciprocal 8N; the
    // GpSimd rsqrt GPSIMD_START + 4N.
    let ts = |op0, op1| Op::TensorScalar {
        op0,
        reverse0: false,
        op1,
        reverse1: false,
        dst: x(300),
        src: x(300),
        operand0: ScalarOperand::Imm(2.0),
        operand1: ScalarOperand::Imm(0.0),
    };
    assert_close(time_of(Engine::Dve, ts(AluOp::Multiply, Some(AluOp::Add)), None), 300.0 / dve);
    assert_close(time_of(Engine::Act, ts(AluOp::Multiply, None), None), 300.0 / act);
    assert_close(time_of(Engine::Dve, ts(AluOp::Reciprocal, None), None), 2400.0 / dve);
    assert_close(time_of(Engine::Pool, ts(AluOp::Rsqrt, None), None), (150.0 + 1200.0) / pool);
    // tensor_tensor: max(MIN_II, 2N) both in SBUF; N with a PSUM input, or all-bf16
    // contiguous add/multiply/subtract.
    let tt = |op, d: HwAp, l: HwAp, r: HwAp| Op::TensorTensor { op, dst: d, lhs: l, rhs: r };
    assert_close(time_of(Engine::Dve, tt(AluOp::Add, x(512), x(512), x(512)), None), 1024.0 / dve);
    assert_close(time_of(Engine::Dve, tt(AluOp::Add, x(512), x(512), psum(128, 0, 512)), None), 512.0 / dve);
    assert_close(time_of(Engine::Dve, tt(AluOp::Subtract, bf(512), bf(512), bf(512)), None), 512.0 / dve);
    assert_close(time_of(Engine::Dve, tt(AluOp::Max, bf(512), bf(512), bf(512)), None), 1024.0 / dve);
    let strided = HwAp::on_chip(Memory::Sbuf, DType::Bf16, 0, 128, 0, vec![Dim::new(2, 512)]);
    assert_close(time_of(Engine::Dve, tt(AluOp::Add, bf(512), strided, bf(512)), None), 1024.0 / dve);
    // tensor_reduce: N/2 for bf16 add/maximum, N otherwise (at least MIN_II).
    let red = |op, d: HwAp, s: HwAp| Op::TensorReduce { op, negate: false, dst: d, src: s };
    let bcol = sbuf(DType::Bf16, 0, 128, 4096, 1);
    assert_close(time_of(Engine::Dve, red(AluOp::Add, bcol.clone(), bf(512)), None), 256.0 / dve);
    assert_close(time_of(Engine::Dve, red(AluOp::Min, bcol, bf(512)), None), 512.0 / dve);
    assert_close(time_of(Engine::Dve, red(AluOp::Max, col(128, 4096), x(512)), None), 512.0 / dve);
    // affine_select and iota: GPSIMD_START + N.
    let pattern = AffinePattern(vec![AffineDim { step: -1, num: 512 }]);
    let sel = Op::AffineSelect {
        cmp: AluOp::IsGe,
        offset: 0,
        channel_multiplier: 1,
        pattern: pattern.clone(),
        value: -1e30,
        dst: x(512),
        src: x(512),
    };
    assert_close(time_of(Engine::Pool, sel, None), 662.0 / pool);
    let iota = Op::Iota { offset: 0, channel_multiplier: 1, pattern, dst: x(512) };
    assert_close(time_of(Engine::Pool, iota, None), 662.0 / pool);
    // bn_stats max(MIN_II, N); bn_aggr max(MIN_II, 13 N / 3).
    let stats = Op::BnStats { dst: sbuf(DType::Fp32, 0, 128, 4096, 6), src: x(512) };
    assert_close(time_of(Engine::Dve, stats, None), 512.0 / dve);
    let aggr = Op::BnAggr { dst: sbuf(DType::Fp32, 0, 128, 4096, 2), src: x(24) };
    assert_close(time_of(Engine::Dve, aggr, None), 104.0 / dve);
    // tensor_copy max(MIN_II, N); memset of zero into bf16 max(MIN_II, N/2).
    assert_close(time_of(Engine::Act, Op::TensorCopy { dst: bf(512), src: psum(128, 0, 512) }, None), 512.0 / act);
    assert_close(time_of(Engine::Dve, Op::Memset { dst: bf(512), value: 0.0 }, None), 256.0 / dve);
    assert_close(time_of(Engine::Dve, Op::Memset { dst: bf(512), value: 1.0 }, None), 512.0 / dve);
}

#[test]
fn the_cost_constants_are_the_profiles() {
    let mut p = Target::Trn2.profile();
    for (key, value) in [
        ("compute_min_ii_cycles", 100.0),
        ("act_reduce_read_cycles", 10.0),
        ("pool_start_cycles", 1000.0),
        ("bn_aggr_cycles_per_triple", 30.0),
    ] {
        p.set(key, value, None).unwrap();
    }
    let x = |n| sbuf(DType::Fp32, 0, 128, 0, n);
    let act = Op::Activation {
        func: ActFunc::Exp,
        dst: x(80),
        src: x(80),
        scale: ScalarOperand::Imm(1.0),
        bias: ScalarOperand::Imm(0.0),
        reduce: Some(col(128, 4096)),
    };
    assert_close(time_of(Engine::Act, act, Some(&p)), 110.0 / 1.2);
    let iota = Op::Iota {
        offset: 0,
        channel_multiplier: 0,
        pattern: AffinePattern(vec![AffineDim { step: 1, num: 8 }]),
        dst: x(8),
    };
    assert_close(time_of(Engine::Pool, iota, Some(&p)), 1008.0 / 1.2);
    let aggr = Op::BnAggr { dst: sbuf(DType::Fp32, 0, 128, 4096, 2), src: x(30) };
    assert_close(time_of(Engine::Dve, aggr, Some(&p)), 300.0 / 0.96);
}

/// Simulate `y = op(x)` for an op reading `src` and writing `dst` (fp32 SBUF tiles of `parts`
/// partitions): `x` is loaded from HBM by DMA and `y` stored back. Returns `y`.
fn run_on(
    engine: Engine,
    parts: u32,
    x: &[f32],
    src_n: u32,
    dst_n: u32,
    make: impl Fn(HwAp, HwAp) -> Op,
) -> Result<Vec<f32>, sim::SimError> {
    let mut b = Builder::new(Target::Trn2);
    let xa = b.tensor("x", &[u64::from(parts), u64::from(src_n)], DType::Fp32, HbmRole::Input);
    let ya = b.tensor("y", &[u64::from(parts), u64::from(dst_n)], DType::Fp32, HbmRole::Output);
    let (loaded, done) = (b.sem("loaded"), b.sem("done"));
    let src = sbuf(DType::Fp32, 0, parts, 0, src_n);
    let dst = sbuf(DType::Fp32, 0, parts, 4 * u64::from(src_n), dst_n);
    let load = Op::DmaCopy {
        dst: src.clone(),
        src: hbm(DType::Fp32, xa, parts, i64::from(src_n), src_n),
        cast: penguin::CastMode::Rne,
    };
    b.push(Engine::Dma(0), load, &[], Some(loaded));
    b.push(engine, make(dst.clone(), src), &[(loaded, 1)], Some(done));
    let store = Op::DmaCopy {
        dst: hbm(DType::Fp32, ya, parts, i64::from(dst_n), dst_n),
        src: dst,
        cast: penguin::CastMode::Rne,
    };
    b.push(Engine::Dma(1), store, &[(done, 1)], None);
    let mut s = Simulator::new(&b.program);
    s.write_hbm_f32("x", x)?;
    s.run()?;
    s.read_hbm_f32("y")
}

/// Dense samples and the edge values of a function's domain, as fp32.
fn domain(func: ActFunc) -> Vec<f32> {
    let mut v: Vec<f32> = match func.valid_range() {
        Some(r) if r.pi_bound().is_some() => {
            // The fp32 bound rounds above the true one: the largest fp32 below it bounds the
            // valid samples.
            let bound = r.pi_bound().unwrap() as f32;
            let b = f32::from_bits(bound.to_bits() - 1);
            (0..4096).map(|i| -b + 2.0 * b * i as f32 / 4095.0).filter(|x| r.contains(f64::from(*x))).collect()
        }
        Some(r) => {
            // Log-uniform over [2^lo, 2^hi] (both signs where valid), the ends included.
            let (lo, hi) = (r.lo as f32, r.hi as f32);
            let pos: Vec<f32> = (0..2048)
                .map(|i| (lo + (hi - lo) * i as f32 / 2047.0).exp2())
                .filter(|x| r.contains(f64::from(*x)))
                .collect();
            let neg: Vec<f32> = if r.both_signs { pos.iter().map(|x| -x).collect() } else { vec![] };
            pos.into_iter().chain(neg).chain([f32::NAN]).collect()
        }
        None => {
            let dense = (0..3000).map(|i| -30.0 + 60.0 * i as f32 / 2999.0);
            let wide = (0..1000u32).map(|i| {
                let m = (-126.0 + 253.0 * i as f32 / 999.0).exp2();
                if i.is_multiple_of(2) {
                    m
                } else {
                    -m
                }
            });
            let edges = [
                0.0,
                -0.0,
                f32::from_bits(1),
                -f32::from_bits(1),
                f32::from_bits(0x007f_ffff),
                f32::MIN_POSITIVE,
                1e-30,
                -1e-30,
                f32::MAX,
                f32::MIN,
                1e30,
                -1e30,
                88.7,
                -88.7,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN,
            ];
            dense.chain(wide).chain(edges).collect()
        }
    };
    v.resize(v.len().div_ceil(128) * 128, 1.0);
    v
}

/// Every activation function over its domain on the simulator vs numpy float64: at most 1
/// fp32 ulp apart, NaN where numpy is NaN, the same infinities.
#[test]
fn activations_are_within_one_ulp_of_numpy_float64() {
    let dir = std::env::temp_dir().join(format!("ntile-act-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut args = vec![test_support::files::filetests("sim").display().to_string()];
    for &func in ActFunc::ALL {
        let x = domain(func);
        let n = (x.len() / 128) as u32;
        let y = run_on(Engine::Act, 128, &x, n, n, |dst, src| Op::Activation {
            func,
            dst,
            src,
            scale: ScalarOperand::Imm(1.0),
            bias: ScalarOperand::Imm(0.0),
            reduce: None,
        })
        .unwrap();
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits().to_string()).collect::<Vec<_>>().join(" ");
        let path = dir.join(func.name());
        std::fs::write(&path, format!("{}\n{}\n", bits(&x), bits(&y))).unwrap();
        args.push(func.name().to_string());
        args.push(path.display().to_string());
    }
    let script = r#"
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from engine_expected import act

def ordered(a):
    i = a.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)

worst = {}
bad = []
for name, path in zip(sys.argv[2::2], sys.argv[3::2]):
    xs, ys = (np.array([int(t) for t in line.split()], dtype=np.uint32).view(np.float32) for line in open(path))
    ref = act(name, xs)
    nan = np.isnan(ref) | np.isnan(ys)
    ulps = np.abs(ordered(ys) - ordered(ref))
    ok = np.where(nan, np.isnan(ref) & np.isnan(ys), ulps <= 1)
    worst[name] = int(ulps[~nan].max()) if (~nan).any() else 0
    for k in np.flatnonzero(~ok)[:3]:
        bad.append(f"{name}({xs[k]!r}) = {ys[k]!r}, numpy {ref[k]!r}")
print(" ".join(f"{k}:{v}" for k, v in worst.items()))
if bad:
    sys.exit("\n".join(bad))
"#;
    let out = python(script, &args);
    std::fs::remove_dir_all(&dir).unwrap();
    // Every function was compared, each within 1 ulp (the script fails otherwise).
    assert_eq!(out.split_whitespace().count(), ActFunc::ALL.len(), "{out}");
}

#[test]
fn an_input_outside_the_documented_range_stops_the_run() {
    for (func, bad) in [
        (ActFunc::Sqrt, 0.0),
        (ActFunc::Log, -1.0),
        (ActFunc::Sin, 4.0),
        (ActFunc::Reciprocal, 1e-20),
        (ActFunc::Arctan, 1.6),
    ] {
        let x: Vec<f32> = (0..8).map(|i| if i == 5 { bad } else { 1.0 }).collect();
        let e = run_on(Engine::Act, 1, &x, 8, 8, |dst, src| Op::Activation {
            func,
            dst,
            src,
            scale: ScalarOperand::Imm(1.0),
            bias: ScalarOperand::Imm(0.0),
            reduce: None,
        })
        .unwrap_err();
        let range = func.valid_range().unwrap();
        assert_eq!(
            e.to_string(),
            format!("act[0]: activation {func} input {bad} at element 5 is outside its valid range {range}: the Scalar Engine gives invalid output there (NKI ISA, Supported Activation Functions)")
        );
    }
}

/// A random fp32 value, some of them exact small integers (so that ties and equality occur).
fn value() -> impl Strategy<Value = f32> {
    prop_oneof![-1000.0f32..1000.0, (-8i32..8).prop_map(|i| i as f32), -1e-3f32..1e-3]
}

/// A free-dim layout of `n` elements per partition: contiguous, or split in two with a gap.
fn layout(n: u32, split: u32, gap: i64) -> Vec<Dim> {
    if split > 1 && n.is_multiple_of(split) {
        vec![Dim::new(i64::from(n / split) + gap, split), Dim::new(1, n / split)]
    } else {
        vec![Dim::new(1, n)]
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// tensor_scalar's arithmetic is one correctly rounded fp32 operation per operator: the
    /// f64 result of the fp32 operands rounded to fp32, exactly.
    #[test]
    fn tensor_scalar_is_correctly_rounded(
        parts in 1u32..=8, n in 1u32..=24, split in 1u32..=3, gap in 0i64..3,
        xs in proptest::collection::vec(value(), 8 * 24),
        ops in (0usize..6, any::<bool>(), 0usize..6, any::<bool>()),
        c in (value(), value()),
    ) {
        let arith = [AluOp::Add, AluOp::Subtract, AluOp::Multiply, AluOp::Divide, AluOp::Max, AluOp::Min];
        let (op0, r0, op1, r1) = (arith[ops.0], ops.1, arith[ops.2], ops.3);
        let x = &xs[..(parts * n) as usize];
        let dims = layout(n, split, gap);
        let span = dims.iter().map(|d| d.stride * (i64::from(d.num) - 1)).sum::<i64>() as u32 + 1;
        let y = run_on(Engine::Dve, parts, x, n, span, |dst, src| Op::TensorScalar {
            op0, reverse0: r0, op1: Some(op1), reverse1: r1,
            dst: HwAp { dims: dims.clone().into(), ..dst },
            src,
            operand0: ScalarOperand::Imm(f64::from(c.0)),
            operand1: ScalarOperand::Imm(f64::from(c.1)),
        });
        let y = match y { Ok(y) => y, Err(e) => return Err(TestCaseError::fail(e.to_string())) };
        let f = |op: AluOp, a: f32, b: f32| -> f32 {
            let (a, b) = (f64::from(a), f64::from(b));
            match op {
                AluOp::Add => (a + b) as f32,
                AluOp::Subtract => (a - b) as f32,
                AluOp::Multiply => (a * b) as f32,
                AluOp::Divide => (a / b) as f32,
                // max and min propagate NaN (a 0/0 of the first operator, say).
                AluOp::Max if a.is_nan() || b.is_nan() => f32::NAN,
                AluOp::Max => a.max(b) as f32,
                _ if a.is_nan() || b.is_nan() => f32::NAN,
                _ => a.min(b) as f32,
            }
        };
        // The destination's element offsets in enumeration order (outer dimension first).
        let offsets: Vec<usize> = dims
            .iter()
            .fold(vec![0i64], |acc, d| acc.iter().flat_map(|a| (0..i64::from(d.num)).map(move |i| a + i * d.stride)).collect())
            .into_iter()
            .map(|o| o as usize)
            .collect();
        let mut k = 0usize;
        for p in 0..parts as usize {
            let row = &y[p * span as usize..(p + 1) * span as usize];
            for &o in &offsets {
                let t = if r0 { f(op0, c.0, x[k]) } else { f(op0, x[k], c.0) };
                let want = if r1 { f(op1, c.1, t) } else { f(op1, t, c.1) };
                let got = row[o];
                prop_assert!(got == want || (got.is_nan() && want.is_nan()), "element {} of partition {}: {} vs {}", k, p, got, want);
                k += 1;
            }
        }
    }

    /// A sum reduction over the trailing r elements is within (r - 1) eps32 sum |x| of the
    /// exact (f64) sum, whatever the order; max and min are exact.
    #[test]
    fn reductions_meet_their_bounds(
        parts in 1u32..=8, groups in 1u32..=6, r in 1u32..=40,
        xs in proptest::collection::vec(value(), 8 * 6 * 40),
        kind in 0usize..3, negate in any::<bool>(),
    ) {
        let op = [AluOp::Add, AluOp::Max, AluOp::Min][kind];
        let n = groups * r;
        let x = &xs[..(parts * n) as usize];
        let y = run_on(Engine::Dve, parts, x, n, groups, |dst, src| Op::TensorReduce { op, negate, dst, src }).unwrap();
        for (g, (chunk, got)) in x.chunks(r as usize).zip(&y).enumerate() {
            let sign = if negate { -1.0 } else { 1.0 };
            let want = match op {
                AluOp::Add => chunk.iter().map(|v| f64::from(*v)).sum::<f64>(),
                AluOp::Max => f64::from(chunk.iter().copied().fold(f32::MIN, f32::max)),
                _ => f64::from(chunk.iter().copied().fold(f32::MAX, f32::min)),
            } * sign;
            let bound = if op == AluOp::Add {
                f64::from(r - 1) * f64::from(f32::EPSILON) * chunk.iter().map(|v| f64::from(v.abs())).sum::<f64>()
            } else {
                0.0
            };
            prop_assert!((f64::from(*got) - want).abs() <= bound, "group {}: {} vs {} (bound {})", g, got, want, bound);
        }
    }

    /// Activations with a [P, 1] scale and bias column: within 1 ulp of the f64 function of
    /// the fp32 input `fma(x, scale, bias)`, and the row sums within their bound.
    #[test]
    fn activations_with_columns_meet_their_bounds(
        parts in 1u32..=8, n in 1u32..=32,
        xs in proptest::collection::vec(-4.0f32..4.0, 8 * 32 + 16),
        kind in 0usize..4,
    ) {
        let func = [ActFunc::Exp, ActFunc::Tanh, ActFunc::Sigmoid, ActFunc::Silu][kind];
        let reference = |v: f64| -> f64 {
            match func {
                ActFunc::Exp => v.exp(),
                ActFunc::Tanh => v.tanh(),
                ActFunc::Sigmoid => 1.0 / (1.0 + (-v).exp()),
                _ => v / (1.0 + (-v).exp()),
            }
        };
        // Columns: the scale at byte 4n, the bias at 4n + 4, the sums at 4n + 8, in a tile
        // laid out as [x | scale | bias | y | sum] per partition.
        let mut b = Builder::new(Target::Trn2);
        let w = n + 2;
        let xa = b.tensor("x", &[u64::from(parts), u64::from(w)], DType::Fp32, HbmRole::Input);
        let ya = b.tensor("y", &[u64::from(parts), u64::from(n + 1)], DType::Fp32, HbmRole::Output);
        let (loaded, done) = (b.sem("loaded"), b.sem("done"));
        let tile = sbuf(DType::Fp32, 0, parts, 0, w);
        b.push(Engine::Dma(0), Op::DmaCopy { dst: tile, src: hbm(DType::Fp32, xa, parts, i64::from(w), w), cast: penguin::CastMode::Rne }, &[], Some(loaded));
        let at = |byte: u64, len: u32| sbuf(DType::Fp32, 0, parts, byte, len);
        let y0 = 4 * u64::from(w);
        let op = Op::Activation {
            func,
            dst: at(y0, n),
            src: at(0, n),
            scale: ScalarOperand::Tile(at(4 * u64::from(n), 1)),
            bias: ScalarOperand::Tile(at(4 * u64::from(n) + 4, 1)),
            reduce: Some(at(y0 + 4 * u64::from(n), 1)),
        };
        b.push(Engine::Act, op, &[(loaded, 1)], Some(done));
        b.push(Engine::Dma(1), Op::DmaCopy { dst: hbm(DType::Fp32, ya, parts, i64::from(n + 1), n + 1), src: at(y0, n + 1), cast: penguin::CastMode::Rne }, &[(done, 1)], None);
        let mut s = Simulator::new(&b.program);
        let x = &xs[..(parts * w) as usize];
        s.write_hbm_f32("x", x).unwrap();
        s.run().unwrap();
        let y = s.read_hbm_f32("y").unwrap();
        for p in 0..parts as usize {
            let row = &x[p * w as usize..(p + 1) * w as usize];
            let (scale, bias) = (row[n as usize], row[n as usize + 1]);
            let out = &y[p * (n + 1) as usize..(p + 1) * (n + 1) as usize];
            let mut exact = 0.0f64;
            let mut mag = 0.0f64;
            for f in 0..n as usize {
                let input = row[f].mul_add(scale, bias);
                let want = reference(f64::from(input)) as f32;
                let ulps = (i64::from(out[f].to_bits() as i32) - i64::from(want.to_bits() as i32)).abs();
                prop_assert!(ulps <= 1 || out[f] == want, "{}({}) = {} vs {}", func, input, out[f], want);
                exact += f64::from(out[f]);
                mag += f64::from(out[f].abs());
            }
            let bound = f64::from(n.saturating_sub(1)) * f64::from(f32::EPSILON) * mag;
            prop_assert!((f64::from(out[n as usize]) - exact).abs() <= bound, "row sum {} vs {}", out[n as usize], exact);
        }
    }
}

/// Parse, verify and lower an example, run it on `inputs`, and return its output `y`.
fn run_example(name: &str, inputs: &[(&str, &[f32])]) -> Vec<f32> {
    let path = test_support::files::example(name);
    let f = penguin::parse::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let program = bir::lower(penguin::verify(&f).unwrap(), Target::Trn2).unwrap();
    bir::verify_program(&program).unwrap();
    let mut s = Simulator::new(&program);
    for (tensor, values) in inputs {
        s.write_hbm_f32(tensor, values).unwrap();
    }
    let stats = s.run().unwrap();
    assert!(stats.races.is_empty(), "{:?}", stats.races);
    s.read_hbm_f32("y").unwrap()
}

/// The two hand-written kernels of `examples/` against f64 references: a few fp32 roundings
/// of a well-conditioned computation, so within a small multiple of eps32.
#[test]
fn the_softmax_and_rmsnorm_examples_match_f64() {
    let x: Vec<f32> = (0..32).map(|i| test_support::value(i) * 3.0).collect();
    let w: Vec<f32> = (0..8).map(|i| test_support::value(100 + i)).collect();
    let y = run_example("rmsnorm.pir", &[("x", &x), ("w", &w)]);
    for (p, row) in x.chunks(8).enumerate() {
        let ms = row.iter().map(|v| f64::from(*v).powi(2)).sum::<f64>() / 8.0;
        for f in 0..8 {
            let want = f64::from(row[f]) / (ms + 1e-6).sqrt() * f64::from(w[f]);
            let got = f64::from(y[p * 8 + f]);
            assert!((got - want).abs() <= 1e-6 * want.abs().max(1.0), "rmsnorm[{p}, {f}] = {got}, f64 {want}");
        }
    }
    let y = run_example("softmax.pir", &[("x", &x)]);
    for (p, row) in x.chunks(8).enumerate() {
        let keep = |f: usize| f <= p + 4;
        let max = (0..8).filter(|&f| keep(f)).map(|f| f64::from(row[f])).fold(f64::MIN, f64::max);
        let sum: f64 = (0..8).filter(|&f| keep(f)).map(|f| (f64::from(row[f]) - max).exp()).sum();
        for f in 0..8 {
            let want = if keep(f) { (f64::from(row[f]) - max).exp() / sum } else { 0.0 };
            let got = f64::from(y[p * 8 + f]);
            assert!((got - want).abs() <= 1e-6, "softmax[{p}, {f}] = {got}, f64 {want}");
        }
    }
}

/// The operators beyond the first ones (mod, fmod, the logical ones, abs_max, abs_min) as
/// tensor_scalar's op0 against numpy's float32 operators, bit for bit (each is exact in fp32,
/// or one fp32 rounding as numpy's own), over values with signs, zeros, halves and NaN.
#[test]
fn the_remainder_logical_and_absolute_operators_match_numpy() {
    let mut x: Vec<f32> = vec![7.0, -7.0, 6.0, -6.0, 0.5, -0.5, 0.0, -0.0, 2.75, -2.75, 1e-30, -1e-30, 1e6, f32::NAN];
    x.extend((0..114).map(|i| (i as f32 - 57.0) * 0.37));
    let ops =
        [AluOp::Mod, AluOp::Fmod, AluOp::LogicalAnd, AluOp::LogicalOr, AluOp::LogicalXor, AluOp::AbsMax, AluOp::AbsMin];
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits().to_string()).collect::<Vec<_>>().join(",");
    let mut args = vec![bits(&x)];
    for op in ops {
        for c in [3.0f32, -2.5, 0.0] {
            let y = run_on(Engine::Dve, 1, &x, x.len() as u32, x.len() as u32, |dst, src| Op::TensorScalar {
                op0: op,
                reverse0: false,
                op1: None,
                reverse1: false,
                dst,
                src,
                operand0: ScalarOperand::Imm(f64::from(c)),
                operand1: ScalarOperand::Imm(0.0),
            })
            .unwrap();
            args.push(format!("{op}:{c}:{}", bits(&y)));
        }
    }
    let script = r#"
import sys
import numpy as np
np.seterr(all="ignore")
f = lambda s: np.array([int(t) for t in s.split(",")], dtype=np.uint32).view(np.float32)
x = f(sys.argv[1])
ref = {
    "mod": np.mod, "fmod": np.fmod,
    "logical_and": lambda a, b: np.logical_and(a, b).astype(np.float32),
    "logical_or": lambda a, b: np.logical_or(a, b).astype(np.float32),
    "logical_xor": lambda a, b: np.logical_xor(a, b).astype(np.float32),
    "abs_max": lambda a, b: np.maximum(np.abs(a), np.abs(b)),
    "abs_min": lambda a, b: np.minimum(np.abs(a), np.abs(b)),
}
bad = []
for arg in sys.argv[2:]:
    name, c, ys = arg.split(":")
    want = ref[name](x, np.float32(c)).astype(np.float32)
    got = f(ys)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    for k in np.flatnonzero(~same)[:3]:
        bad.append(f"{name}({x[k]!r}, {c}) = {got[k]!r}, numpy {want[k]!r}")
print(len(sys.argv) - 2)
if bad:
    sys.exit("\n".join(bad))
"#;
    let out = python(script, &args);
    assert_eq!(out.trim(), (ops.len() * 3).to_string());
}
