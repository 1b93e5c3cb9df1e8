//! Matmuls: one tile, K accumulation in PSUM (START / ACCU / STOP exactly), the legacy zero
//! fill + `+=` pattern, `accumulate` true / false / null, numerics against f64.

use nki::trace::{Accumulate, Buffer};
use penguin::{DType, EngineAccumulationType as Acc, InstData, Target};

use crate::support::{abs_ref, floats, ints, matmul_ref, rounded, run};
use crate::tb::{tile, tiled_matmul, window, AccStyle, Tb};

/// The accumulation flags of every matmul, in program order.
fn flags(k: &nki::NkiKernel) -> Vec<Acc> {
    k.function
        .layout
        .iter()
        .filter_map(|&id| match &k.function.insts[id.index()] {
            InstData::MatMult(m) => Some(m.flags()),
            _ => None,
        })
        .collect()
}

fn exact(got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(f64::from(*g), *w, "element {i}");
    }
}

#[test]
fn one_tile_matmul_is_one_start_stop_group_and_exact() {
    let mut t = Tb::new("matmul_one", Target::Trn2);
    let lhs = t.at(2).input("lhsT", DType::Bf16, &[128, 128]);
    let rhs = t.input("rhs", DType::Bf16, &[128, 512]);
    let out = t.output("out", DType::Fp32, &[128, 512]);
    let a = t.at(4).tensor("a", Buffer::Sbuf, DType::Bf16, &[128, 128]);
    let b = t.at(5).tensor("b", Buffer::Sbuf, DType::Bf16, &[128, 512]);
    let ps = t.at(6).tensor("ps", Buffer::Psum, DType::Fp32, &[128, 512]);
    let c = t.at(7).tensor("c", Buffer::Sbuf, DType::Fp32, &[128, 512]);
    t.at(8).dma(tile(a, 128, 128), window(lhs, 128, 0, 128, 0, 128));
    t.at(9).dma(tile(b, 128, 512), window(rhs, 512, 0, 128, 0, 512));
    t.at(10).matmul(tile(ps, 128, 512), tile(a, 128, 128), tile(b, 128, 512), Accumulate::Infer);
    t.at(11).copy(tile(c, 128, 512), tile(ps, 128, 512), None);
    t.at(12).dma(window(out, 512, 0, 128, 0, 512), tile(c, 128, 512));
    let k = t.build().unwrap();
    assert_eq!(flags(&k), vec![Acc::START | Acc::STOP]);
    assert_eq!(k.function.insts.len(), 5);
    let (at, bv) = (ints(128 * 128, 1), ints(128 * 512, 2));
    let got = run(&k, &[("lhsT", at.clone()), ("rhs", bv.clone())]);
    exact(&got["out"], &matmul_ref(&at, &bv, 128, 128, 512));
}

#[test]
fn k_accumulation_flags_are_exact_for_every_accumulate_style() {
    for style in [AccStyle::Infer, AccStyle::Explicit, AccStyle::ZeroFillAdd] {
        let trace = tiled_matmul(256, 512, 1024, DType::Bf16, Target::Trn2, style);
        let k = nki::KernelBuilder::new(Target::Trn2).build(&trace).unwrap();
        let group = [Acc::START, Acc::ACCU, Acc::ACCU, Acc::ACCU | Acc::STOP];
        let want: Vec<Acc> = (0..4).flat_map(|_| group).collect();
        assert_eq!(flags(&k), want, "{style:?}");
        // The zero fills only fed `+=`: none is emitted.
        let memsets = k.function.insts.iter().filter(|i| matches!(i, InstData::Memset(_))).count();
        assert_eq!((memsets, k.dropped_memsets), (0, if style == AccStyle::ZeroFillAdd { 4 } else { 0 }), "{style:?}");
        let (at, bv) = (ints(512 * 256, 3), ints(512 * 1024, 4));
        let got = run(&k, &[("lhsT", at.clone()), ("rhs", bv.clone())]);
        exact(&got["result"], &matmul_ref(&at, &bv, 512, 256, 1024));
    }
}

#[test]
fn rounded_floats_stay_within_the_fp32_accumulation_bound() {
    let (m, kk, n) = (128usize, 1024usize, 512usize);
    let trace = tiled_matmul(m as u64, kk as u64, n as u64, DType::Bf16, Target::Trn1, AccStyle::Infer);
    let k = nki::KernelBuilder::new(Target::Trn1).build(&trace).unwrap();
    let (at, bv) = (floats(kk * m, 5), floats(kk * n, 6));
    let got = run(&k, &[("lhsT", at.clone()), ("rhs", bv.clone())]);
    let (ra, rb) = (rounded(&at, DType::Bf16), rounded(&bv, DType::Bf16));
    let want = matmul_ref(&ra, &rb, kk, m, n);
    let scale = abs_ref(&ra, &rb, kk, m, n);
    let eps = f64::from(f32::EPSILON) / 2.0;
    for i in 0..m * n {
        let err = (f64::from(got["result"][i]) - want[i]).abs();
        assert!(err <= 2.0 * kk as f64 * eps * scale[i], "element {i}: {} vs {}", got["result"][i], want[i]);
    }
}

/// Two K tiles into one PSUM tile with the given modes, then a copy out and a store.
fn two_matmuls(first: Accumulate, second: Accumulate, read_between: bool) -> Tb {
    let mut t = Tb::new("two", Target::Trn2);
    let lhs = t.at(2).input("lhsT", DType::Bf16, &[256, 128]);
    let rhs = t.input("rhs", DType::Bf16, &[256, 512]);
    let out = t.output("out", DType::Fp32, &[128, 512]);
    let a = t.at(3).tensor("a", Buffer::Sbuf, DType::Bf16, &[2, 128, 128]);
    t.trace.tensors[a as usize].par = 1;
    let b = t.at(4).tensor("b", Buffer::Sbuf, DType::Bf16, &[2, 128, 512]);
    t.trace.tensors[b as usize].par = 1;
    let ps = t.at(5).tensor("ps", Buffer::Psum, DType::Fp32, &[128, 512]);
    let c = t.at(6).tensor("c", Buffer::Sbuf, DType::Fp32, &[128, 512]);
    let blk = |v: nki::trace::View, i: u64| nki::trace::View { block: Some(vec![i]), ..v };
    for i in 0..2 {
        t.at(8).dma(blk(tile(a, 128, 128), i), window(lhs, 128, 128 * i, 128, 0, 128));
        t.at(9).dma(blk(tile(b, 128, 512), i), window(rhs, 512, 128 * i, 128, 0, 512));
    }
    t.at(10).matmul(tile(ps, 128, 512), blk(tile(a, 128, 128), 0), blk(tile(b, 128, 512), 0), first);
    if read_between {
        t.at(11).copy(tile(c, 128, 512), tile(ps, 128, 512), None);
    }
    t.at(12).matmul(tile(ps, 128, 512), blk(tile(a, 128, 128), 1), blk(tile(b, 128, 512), 1), second);
    t.at(13).copy(tile(c, 128, 512), tile(ps, 128, 512), None);
    t.at(14).dma(window(out, 512, 0, 128, 0, 512), tile(c, 128, 512));
    t
}

#[test]
fn accumulate_true_false_and_null() {
    let (at, bv) = (ints(256 * 128, 7), ints(256 * 512, 8));
    let full = matmul_ref(&at, &bv, 256, 128, 512);
    let second = matmul_ref(&at[128 * 128..], &bv[128 * 512..], 128, 128, 512);
    let cases = [
        (Accumulate::Overwrite, Accumulate::Accumulate, vec![Acc::START, Acc::ACCU | Acc::STOP], &full),
        (Accumulate::Infer, Accumulate::Infer, vec![Acc::START, Acc::ACCU | Acc::STOP], &full),
        (Accumulate::Overwrite, Accumulate::Overwrite, vec![Acc::START | Acc::STOP; 2], &second),
        (Accumulate::Infer, Accumulate::Overwrite, vec![Acc::START | Acc::STOP; 2], &second),
    ];
    for (first, then, want, result) in cases {
        let k = two_matmuls(first, then, false).build().unwrap();
        assert_eq!(flags(&k), want, "{first:?} {then:?}");
        let got = run(&k, &[("lhsT", at.clone()), ("rhs", bv.clone())]);
        exact(&got["out"], result);
    }
    // A read between them ends the group: null starts a new one there.
    let k = two_matmuls(Accumulate::Infer, Accumulate::Infer, true).build().unwrap();
    assert_eq!(flags(&k), vec![Acc::START | Acc::STOP; 2]);
    let got = run(&k, &[("lhsT", at), ("rhs", bv)]);
    exact(&got["out"], &second);
}

#[test]
fn accumulating_without_a_group_names_both_locations() {
    let e = two_matmuls(Accumulate::Infer, Accumulate::Accumulate, true).build().unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel.py:12: accumulate=True adds into a PSUM region that was read at kernel.py:11 since its last matmul \
         at kernel.py:10; start a new group (accumulate=False) or accumulate before reading"
    );
    let e = two_matmuls(Accumulate::Accumulate, Accumulate::Accumulate, false).build().unwrap_err();
    assert!(matches!(&e, nki::NkiError::Accumulation { loc, .. } if loc == "kernel.py:10"), "{e}");
    assert!(e.to_string().contains("no matmul started and no zero fill covers"), "{e}");
    let e = two_matmuls(Accumulate::Add, Accumulate::Add, false).build().unwrap_err();
    assert!(e.to_string().starts_with("kernel.py:10: `+=` (accumulate \"add\") adds into"), "{e}");
}

#[test]
fn engines_left_open_follow_the_planners_rules() {
    let trace = tiled_matmul(256, 256, 1024, DType::Bf16, Target::Trn2, AccStyle::ZeroFillAdd);
    let k = nki::KernelBuilder::new(Target::Trn2).build(&trace).unwrap();
    // PSUM -> SBUF copies alternate DVE and ACT with the PSUM tile's slot (two slots).
    let copies: Vec<penguin::ComputeEngine> = k
        .function
        .insts
        .iter()
        .filter_map(|i| match i {
            InstData::TensorCopy(c) => Some(c.engine),
            _ => None,
        })
        .collect();
    use penguin::ComputeEngine::{Act, Dve, Pool};
    assert_eq!(copies, vec![Dve, Act, Dve, Act]);
    // Memsets: GpSimd for SBUF, DVE for PSUM (a PSUM fill another op reads is kept).
    let mut t = Tb::new("fills", Target::Trn2);
    let out = t.at(2).output("out", DType::Fp32, &[128, 512]);
    let s = t.at(3).tensor("s", Buffer::Sbuf, DType::Fp32, &[128, 512]);
    let p = t.at(4).tensor("p", Buffer::Psum, DType::Fp32, &[128, 512]);
    t.at(5).memset(tile(s, 128, 512), 1.0).memset(tile(p, 128, 512), 0.0);
    t.at(6).tensor_tensor(tile(s, 128, 512), tile(s, 128, 512), tile(p, 128, 512), nki::trace::Alu::Add);
    t.at(7).dma(window(out, 512, 0, 128, 0, 512), tile(s, 128, 512));
    let k = t.build().unwrap();
    let engines: Vec<(String, penguin::ComputeEngine)> = k
        .function
        .insts
        .iter()
        .filter_map(|i| match i {
            InstData::Memset(m) => Some(("memset".to_string(), m.engine)),
            InstData::TensorTensor(x) => Some(("tensor_tensor".to_string(), x.engine)),
            _ => None,
        })
        .collect();
    let want = [("memset", Pool), ("memset", Dve), ("tensor_tensor", Dve)];
    assert_eq!(engines, want.map(|(n, e)| (n.to_string(), e)).to_vec());
    assert_eq!(run(&k, &[])["out"], vec![1.0; 128 * 512]);
}
