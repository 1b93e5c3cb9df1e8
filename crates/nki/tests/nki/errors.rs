//! Every validation error of the design's rule 1, each with the kernel's `file:line`, the
//! kernel name contracts, and the records ntile does not support yet.

use nki::trace::{Accumulate, ActivationFunc, Alu, Buffer, EngineName, Imm, Record, Scalar, View};
use nki::{KernelBuilder, NkiError};
use penguin::{DType, Target};

use crate::tb::{cols, tile, window, Tb};

/// A kernel with an input `x [128, 512]`, an output `y`, SBUF tiles `a`, `b` `[128, 512]`
/// fp32 and a PSUM tile `p [128, 512]`; the caller adds records on line 20 on.
fn base(target: Target) -> (Tb, [u32; 5]) {
    let mut t = Tb::new("k", target);
    let x = t.at(2).input("x", DType::Fp32, &[128, 512]);
    let y = t.at(3).output("y", DType::Fp32, &[128, 512]);
    let a = t.at(4).tensor("a", Buffer::Sbuf, DType::Fp32, &[128, 512]);
    let b = t.at(5).tensor("b", Buffer::Sbuf, DType::Fp32, &[128, 512]);
    let p = t.at(6).tensor("p", Buffer::Psum, DType::Fp32, &[128, 512]);
    t.at(7).dma(tile(a, 128, 512), window(x, 512, 0, 128, 0, 512));
    (t, [x, y, a, b, p])
}

/// Store `a` to `y` on line 30 and build.
fn finish(mut t: Tb, y: u32, a: u32) -> Result<nki::NkiKernel, NkiError> {
    t.at(30).dma(window(y, 512, 0, 128, 0, 512), tile(a, 128, 512));
    t.build()
}

#[test]
fn partition_count_over_128() {
    let (mut t, [_, y, a, ..]) = base(Target::Trn2);
    t.at(21).tensor("wide", Buffer::Sbuf, DType::Fp32, &[256, 4]);
    let e = finish(t, y, a).unwrap_err();
    assert_eq!(e.to_string(), "kernel.py:21: tensor `wide` has 256 partitions, more than the 128 of the hardware");
}

#[test]
fn psum_tile_over_a_bank_except_on_trn3() {
    for (target, fails) in [(Target::Trn2, true), (Target::Trn3, false)] {
        let (mut t, [_, y, a, ..]) = base(target);
        t.at(21).tensor("acc", Buffer::Psum, DType::Fp32, &[128, 1024]);
        let r = finish(t, y, a);
        if fails {
            assert_eq!(
                r.unwrap_err().to_string(),
                "kernel.py:21: PSUM tile `acc` needs 4096 bytes per partition, more than the 2048 of a PSUM tile on \
                 trn2 (512 fp32)"
            );
        } else {
            assert!(r.is_ok());
        }
    }
}

/// A matmul on line 22 of `dst = st^T @ mv` with tensors of the given shapes and buffers.
fn matmul(target: Target, st: [u64; 2], mv: [u64; 2], dst_buffer: Buffer) -> NkiError {
    let (mut t, [_, y, a, ..]) = base(target);
    let s = t.at(21).tensor("st", Buffer::Sbuf, DType::Bf16, &st);
    let m = t.tensor("mv", Buffer::Sbuf, DType::Bf16, &mv);
    let dp = st[1].min(128);
    let d = t.tensor("d", dst_buffer, DType::Fp32, &[dp, mv[1]]);
    t.at(22).memset(tile(s, st[0], st[1]), 1.0).memset(tile(m, mv[0], mv[1]), 1.0);
    t.matmul(tile(d, dp, mv[1]), tile(s, st[0], st[1]), tile(m, mv[0], mv[1]), Accumulate::Infer);
    finish(t, y, a).unwrap_err()
}

#[test]
fn matmul_limits_and_the_result_buffer() {
    let e = matmul(Target::Trn2, [128, 128], [128, 512], Buffer::Sbuf);
    assert_eq!(e.to_string(), "kernel.py:22: Result buffer of matmult must be psum!");
    let e = matmul(Target::Trn2, [128, 129], [128, 16], Buffer::Psum);
    assert_eq!(e.to_string(), "kernel.py:22: matmul stationary free size 129 is over the limit of 128");
    let e = matmul(Target::Trn3, [128, 64], [128, 1024], Buffer::Psum);
    assert_eq!(e.to_string(), "kernel.py:22: matmul moving free size 1024 is over the limit of 512");
    let e = matmul(Target::Trn2, [128, 64], [64, 16], Buffer::Psum);
    assert!(matches!(&e, NkiError::ShapeMismatch { loc, op: "matmul", .. } if loc == "kernel.py:22"), "{e}");
}

#[test]
fn memories_an_instruction_cannot_use() {
    let (mut t, [_, y, a, b, p]) = base(Target::Trn2);
    t.at(22).dma(tile(b, 128, 512), tile(p, 128, 512));
    let e = finish(t, y, a).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel.py:22: dma_copy src cannot be in psum: DMA moves between HBM and SBUF, never PSUM"
    );
    let (mut t, [_, y, a, b, p]) = base(Target::Trn2);
    t.at(23).copy(tile(b, 128, 512), tile(p, 128, 512), Some(EngineName::Pool));
    let e = finish(t, y, a).unwrap_err();
    assert_eq!(e.to_string(), "kernel.py:23: tensor_copy src cannot be in psum: GpSimd cannot access PSUM");
    let (mut t, [_, y, a, b, p]) = base(Target::Trn2);
    let q = t.at(21).tensor("q", Buffer::Psum, DType::Fp32, &[128, 512]);
    t.at(24).tensor_tensor(tile(b, 128, 512), tile(p, 128, 512), tile(q, 128, 512), Alu::Add);
    let e = finish(t, y, a).unwrap_err();
    assert_eq!(e.to_string(), "kernel.py:24: tensor_tensor in1 cannot be in psum: at most one input may be in PSUM");
}

#[test]
fn views_out_of_range_across_blocks_and_of_other_shapes() {
    let (mut t, [x, y, a, b, _]) = base(Target::Trn2);
    t.at(25).dma(cols(b, 128, 512, 256, 512), window(x, 512, 0, 128, 0, 512));
    let e = finish(t, y, a).unwrap_err();
    assert!(
        matches!(&e, NkiError::ViewOutOfRange { loc, tensor, .. } if loc == "kernel.py:25" && tensor == "b"),
        "{e}"
    );
    let (mut t, [x, y, a, ..]) = base(Target::Trn2);
    let blocks = t.at(21).tensor("blk", Buffer::Sbuf, DType::Fp32, &[2, 128, 256]);
    t.trace.tensors[blocks as usize].par = 1;
    let spanning = View { t: blocks, block: Some(vec![0]), offset: 0, ap: vec![(256, 128), (1, 512)] };
    t.at(26).dma(spanning, window(x, 512, 0, 128, 0, 512));
    let e = finish(t, y, a).unwrap_err();
    assert!(matches!(&e, NkiError::ViewSpansBlocks { loc, .. } if loc == "kernel.py:26"), "{e}");
    let (mut t, [x, y, a, b, _]) = base(Target::Trn2);
    t.at(27).dma(tile(b, 128, 512), window(x, 512, 0, 128, 0, 256));
    let e = finish(t, y, a).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel.py:27: dma_copy shapes do not agree: dst [128, 512] and src [128, 256] differ in partitions or \
         elements per partition"
    );
}

#[test]
fn reading_an_output_before_writing_it() {
    let (mut t, [_, y, a, b, _]) = base(Target::Trn2);
    t.at(28).dma(tile(b, 128, 512), window(y, 512, 0, 128, 0, 512));
    let e = finish(t, y, a).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel.py:28: reads `y` before the kernel wrote it (a kernel that reads an output it never wrote)"
    );
    let (t, _) = base(Target::Trn2);
    let e = t.build().unwrap_err();
    assert_eq!(e.to_string(), "kernel.py:3: the kernel returns `y` but never writes it");
}

#[test]
fn forms_without_instructions_are_unsupported_with_their_location() {
    let (t0, [_, _, a, b, p]) = base(Target::Trn2);
    let v = |x| tile(x, 128, 512);
    let l = nki::trace::Loc(0, 40);
    let records = [
        // The Scalar Engine sums its rows; no other activation reduce.
        Record::Activation {
            loc: l,
            dst: v(b),
            src: v(a),
            func: ActivationFunc::Exp,
            scale: Scalar::Imm(Imm(1.0)),
            bias: None,
            reduce: Some(nki::trace::Reduce { alu: Alu::Maximum, dst: cols(b, 128, 512, 0, 1) }),
        },
        // A reduction of the middle axis of [128, 8, 64].
        Record::TensorReduce {
            loc: l,
            dst: View { t: b, block: None, offset: 0, ap: vec![(512, 128), (1, 64)] },
            src: View { t: a, block: None, offset: 0, ap: vec![(512, 128), (64, 8), (1, 64)] },
            alu: Alu::Add,
            axes: vec![1],
            negate: false,
            keepdims: false,
        },
        // ScalarE's tensor_scalar runs multiply and add only.
        Record::TensorScalar {
            loc: l,
            dst: v(b),
            src: v(a),
            op0: Alu::Maximum,
            s0: Scalar::Imm(Imm(0.0)),
            reverse0: false,
            op1: None,
            s1: None,
            reverse1: false,
            engine: Some(EngineName::Act),
        },
        // The Vector Engine's transpose.
        Record::Transpose {
            loc: l,
            dst: tile(p, 128, 128),
            src: cols(a, 128, 512, 0, 128),
            engine: Some(EngineName::Dve),
        },
        // A unary operator in tensor_tensor.
        Record::TensorTensor { loc: l, dst: v(b), in0: v(a), in1: v(a), alu: Alu::Rsqrt, engine: None },
    ];
    for r in records {
        let kind = r.kind();
        let mut t = Tb { trace: t0.trace.clone(), line: 40, ..Tb::new("k", Target::Trn2) };
        t.op(r);
        let e = t.build().unwrap_err();
        assert!(
            matches!(&e, NkiError::Unsupported { loc, record, .. } if loc == "kernel.py:40" && *record == kind),
            "{e}"
        );
        assert!(e.to_string().starts_with(&format!("kernel.py:40: {kind} is not supported by ntile yet: ")), "{e}");
    }
}

#[test]
fn kernel_name_contracts() {
    let (t, [_, y, a, ..]) = base(Target::Trn2);
    let mut bad = Tb { trace: t.trace.clone(), line: 1, ..Tb::new("k", Target::Trn2) };
    bad.trace.kernel = "1st-kernel".into();
    let e = finish(bad, y, a).unwrap_err();
    assert_eq!(e.to_string(), "Unsupported kernel name 1st-kernel");
    let mut t = t;
    t.at(30).dma(window(y, 512, 0, 128, 0, 512), tile(a, 128, 512));
    let e = KernelBuilder::new(Target::Trn2).expect_kernel_name("other").build(&t.trace).unwrap_err();
    assert_eq!(e.to_string(), "Kernel name mismatch");
    let k = KernelBuilder::new(Target::Trn2).expect_kernel_name("k").build(&t.trace).unwrap();
    assert_eq!(k.function.debug_kernel_function_name.as_deref(), Some("k.trn2"));
}
