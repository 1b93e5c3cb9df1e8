//! The compute-engine records (activation, tensor_scalar, tensor_reduce, affine_select,
//! iota, bn_stats/bn_aggr, every tensor_tensor ALU operator) built, lowered by `bir`,
//! simulated by `sim` and compared with f64 references.

use nki::trace::{ActivationFunc, Alu, Buffer, Cmp, EngineName, Imm, Record, Reduce, Scalar, View};
use penguin::{DType, Target};

use crate::support::{floats, run};
use crate::tb::{tile, window, Tb};

const P: u64 = 128;
const F: u64 = 64;

/// A kernel reading `x [128, 64]` (and a column `c [128, 1]`) into SBUF tiles `a` and `col`,
/// with result tiles `b [128, F]` and `r [128, 1]`; `ops` adds the records under test on
/// line 20, and `b` and `r` are stored to the outputs `y` and `rsum`.
fn kernel(ops: impl FnOnce(&mut Tb, [u32; 4])) -> Tb {
    let mut t = Tb::new("compute", Target::Trn2);
    let x = t.at(2).input("x", DType::Fp32, &[P, F]);
    let c = t.at(3).input("c", DType::Fp32, &[P, 1]);
    let y = t.at(4).output("y", DType::Fp32, &[P, F]);
    let rsum = t.at(5).output("rsum", DType::Fp32, &[P, 1]);
    let a = t.at(6).tensor("a", Buffer::Sbuf, DType::Fp32, &[P, F]);
    let col = t.at(7).tensor("col", Buffer::Sbuf, DType::Fp32, &[P, 1]);
    let b = t.at(8).tensor("b", Buffer::Sbuf, DType::Fp32, &[P, F]);
    let r = t.at(9).tensor("r", Buffer::Sbuf, DType::Fp32, &[P, 1]);
    t.at(10).dma(tile(a, P, F), window(x, F, 0, P, 0, F));
    t.at(11).dma(tile(col, P, 1), window(c, 1, 0, P, 0, 1));
    t.at(12).memset(tile(b, P, F), 0.0).memset(tile(r, P, 1), 0.0);
    t.at(20);
    ops(&mut t, [a, col, b, r]);
    t.at(30).dma(window(y, F, 0, P, 0, F), tile(b, P, F));
    t.at(31).dma(window(rsum, 1, 0, P, 0, 1), tile(r, P, 1));
    t
}

struct Out {
    x: Vec<f64>,
    c: Vec<f64>,
    y: Vec<f32>,
    r: Vec<f32>,
}

fn simulate(t: &Tb) -> Out {
    let k = t.build().unwrap_or_else(|e| panic!("builds: {e}"));
    let x = floats((P * F) as usize, 3);
    let c = floats(P as usize, 5);
    let mut outs = run(&k, &[("x", x.clone()), ("c", c.clone())]);
    Out {
        x: x.iter().map(|&v| f64::from(v)).collect(),
        c: c.iter().map(|&v| f64::from(v)).collect(),
        y: outs.remove("y").unwrap(),
        r: outs.remove("rsum").unwrap(),
    }
}

/// `got` within `rel` (relative to max(1, |want|)) of `want`, elementwise.
fn close(got: &[f32], want: &[f64], rel: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (f64::from(g) - w).abs();
        assert!(err <= rel * w.abs().max(1.0), "element {i}: {g} vs {w}");
    }
}

fn v(t: u32) -> View {
    tile(t, P, F)
}

#[test]
fn activation_with_a_scale_column_a_bias_and_the_row_sum() {
    let t = kernel(|t, [a, col, b, r]| {
        let loc = t.loc();
        t.op(Record::Activation {
            loc,
            dst: v(b),
            src: v(a),
            func: ActivationFunc::Exp,
            scale: Scalar::View(tile(col, P, 1)),
            bias: Some(Scalar::Imm(Imm(0.5))),
            reduce: Some(Reduce { alu: Alu::Add, dst: tile(r, P, 1) }),
        });
    });
    let k = t.build().unwrap();
    assert!(k.function.to_string().contains("activation func=exp"), "{}", k.function);
    let o = simulate(&t);
    let want: Vec<f64> = (0..(P * F) as usize).map(|i| (o.x[i] * o.c[i / F as usize] + 0.5).exp()).collect();
    close(&o.y, &want, 1e-5);
    let sums: Vec<f64> = want.chunks(F as usize).map(|row| row.iter().sum()).collect();
    close(&o.r, &sums, 1e-5);
}

#[test]
fn tensor_scalar_with_a_reversed_column_then_an_immediate() {
    let t = kernel(|t, [a, col, b, _]| {
        let loc = t.loc();
        t.op(Record::TensorScalar {
            loc,
            dst: v(b),
            src: v(a),
            op0: Alu::Subtract,
            s0: Scalar::View(tile(col, P, 1)),
            reverse0: true,
            op1: Some(Alu::Multiply),
            s1: Some(Scalar::Imm(Imm(3.0))),
            reverse1: false,
            engine: None,
        });
    });
    let o = simulate(&t);
    let want: Vec<f64> = (0..(P * F) as usize).map(|i| (o.c[i / F as usize] - o.x[i]) * 3.0).collect();
    close(&o.y, &want, 1e-6);
}

#[test]
fn tensor_scalar_unary_rsqrt_on_pool() {
    let t = kernel(|t, [a, _, b, _]| {
        let loc = t.loc();
        // b = |a| + 1, then rsqrt(b) on GpSimd.
        t.op(Record::TensorScalar {
            loc,
            dst: v(b),
            src: v(a),
            op0: Alu::Abs,
            s0: Scalar::Imm(Imm(0.0)),
            reverse0: false,
            op1: Some(Alu::Add),
            s1: Some(Scalar::Imm(Imm(1.0))),
            reverse1: false,
            engine: None,
        });
        t.op(Record::TensorScalar {
            loc,
            dst: v(b),
            src: v(b),
            op0: Alu::Rsqrt,
            s0: Scalar::Imm(Imm(0.0)),
            reverse0: false,
            op1: None,
            s1: None,
            reverse1: false,
            engine: Some(EngineName::Pool),
        });
    });
    let o = simulate(&t);
    let want: Vec<f64> = o.x.iter().map(|x| 1.0 / (x.abs() + 1.0).sqrt()).collect();
    close(&o.y, &want, 1e-5);
}

#[test]
fn tensor_reduce_negated_max_of_each_row() {
    let t = kernel(|t, [a, _, _, r]| {
        let loc = t.loc();
        t.op(Record::TensorReduce {
            loc,
            dst: tile(r, P, 1),
            src: v(a),
            alu: Alu::Maximum,
            axes: vec![1],
            negate: true,
            keepdims: true,
        });
    });
    let o = simulate(&t);
    let want: Vec<f64> = o.x.chunks(F as usize).map(|row| -row.iter().copied().fold(f64::MIN, f64::max)).collect();
    close(&o.r, &want, 0.0);
}

#[test]
fn tensor_reduce_of_the_last_two_axes() {
    let t = kernel(|t, [a, _, _, r]| {
        let loc = t.loc();
        t.op(Record::TensorReduce {
            loc,
            dst: tile(r, P, 1),
            src: View { t: a, block: None, offset: 0, ap: vec![(F as i64, P), (8, 8), (1, 8)] },
            alu: Alu::Add,
            axes: vec![1, 2],
            negate: false,
            keepdims: false,
        });
    });
    let o = simulate(&t);
    let want: Vec<f64> = o.x.chunks(F as usize).map(|row| row.iter().sum()).collect();
    close(&o.r, &want, 1e-5);
}

#[test]
fn affine_select_keeps_the_lower_triangle() {
    let t = kernel(|t, [a, _, b, _]| {
        let loc = t.loc();
        t.op(Record::AffineSelect {
            loc,
            dst: v(b),
            src: v(a),
            pattern: vec![(-1, F)],
            channel_multiplier: 1,
            offset: 0,
            cmp: Cmp::GreaterEqual,
            value: Imm(-9.0),
        });
    });
    let o = simulate(&t);
    let want: Vec<f64> =
        (0..(P * F) as usize).map(|i| if i / F as usize >= i % F as usize { o.x[i] } else { -9.0 }).collect();
    close(&o.y, &want, 0.0);
}

#[test]
fn iota_writes_its_affine_values() {
    let t = kernel(|t, [_, _, b, _]| {
        let loc = t.loc();
        t.op(Record::Iota { loc, dst: v(b), pattern: vec![(2, F)], offset: -5, channel_multiplier: 3 });
    });
    let o = simulate(&t);
    let want: Vec<f64> = (0..(P * F) as i64).map(|i| (-5 + 3 * (i / F as i64) + 2 * (i % F as i64)) as f64).collect();
    close(&o.y, &want, 0.0);
}

#[test]
fn bn_stats_then_bn_aggr_give_mean_and_variance() {
    let mut t = Tb::new("stats", Target::Trn2);
    let x = t.at(2).input("x", DType::Fp32, &[P, F]);
    let y = t.at(3).output("y", DType::Fp32, &[P, 2]);
    let a = t.at(4).tensor("a", Buffer::Sbuf, DType::Fp32, &[P, F]);
    let s = t.at(5).tensor("s", Buffer::Sbuf, DType::Fp32, &[P, 6]);
    let m = t.at(6).tensor("m", Buffer::Sbuf, DType::Fp32, &[P, 2]);
    t.at(7).dma(tile(a, P, F), window(x, F, 0, P, 0, F));
    let loc = t.at(8).loc();
    t.op(Record::BnStats { loc, dst: tile(s, P, 6), src: v(a) });
    t.op(Record::BnAggr { loc, dst: tile(m, P, 2), src: tile(s, P, 6) });
    t.at(9).dma(window(y, 2, 0, P, 0, 2), tile(m, P, 2));
    let k = t.build().unwrap();
    let xs = floats((P * F) as usize, 9);
    let got = run(&k, &[("x", xs.clone())]).remove("y").unwrap();
    let mut want = Vec::new();
    for row in xs.chunks(F as usize) {
        let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / F as f64;
        let var = row.iter().map(|&v| (f64::from(v) - mean).powi(2)).sum::<f64>() / F as f64;
        want.extend([mean, var]);
    }
    close(&got, &want, 1e-5);
}

/// An f64 reference of a binary operator.
type BinaryF64 = fn(f64, f64) -> f64;

#[test]
fn tensor_tensor_takes_every_binary_operator() {
    let cases: [(Alu, BinaryF64); 6] = [
        (Alu::Subtract, |a, b| a - b),
        (Alu::Divide, |a, b| a / b),
        (Alu::Minimum, f64::min),
        (Alu::Maximum, f64::max),
        (Alu::Greater, |a, b| f64::from(u8::from(a > b))),
        (Alu::LessEqual, |a, b| f64::from(u8::from(a <= b))),
    ];
    for (alu, f) in cases {
        let t = kernel(|t, [a, col, b, _]| {
            // b = a ALU (c broadcast along the row, through a zero-stride view).
            let bcast = View { t: col, block: None, offset: 0, ap: vec![(1, P), (0, F)] };
            let loc = t.loc();
            t.op(Record::TensorCopy { loc, dst: v(b), src: bcast, engine: None });
            t.tensor_tensor(v(b), v(a), v(b), alu);
        });
        let o = simulate(&t);
        let want: Vec<f64> = (0..(P * F) as usize).map(|i| f(o.x[i], o.c[i / F as usize])).collect();
        close(&o.y, &want, 1e-6);
    }
}
