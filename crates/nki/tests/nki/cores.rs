//! Kernels on two physical cores: the trace's core marks cut it into one trace per core, each
//! built on its own, an output may be written by either core but must be written by one, and
//! only targets with two cores per logical NeuronCore take them.

use nki::trace::Buffer;
use nki::{KernelBuilder, NkiError};
use penguin::{DType, Target};

use crate::tb::{tile, window, Tb};

/// `y[256, 64] = x`, core `k` copying rows `128k..128k+128` through its own SBUF tile `a`
/// (`cores` = `[0, 2]`: the two records of core 1 start at record 2). With `only_core_0`,
/// core 1 copies nothing.
fn two_cores(target: Target, only_core_0: bool) -> nki::Trace {
    let mut t = Tb::new("k", target);
    let x = t.at(2).input("x", DType::Fp32, &[256, 64]);
    let y = t.at(3).output("y", DType::Fp32, &[256, 64]);
    let a = t.at(4).tensor("a", Buffer::Sbuf, DType::Fp32, &[128, 64]);
    for core in 0..2u64 {
        if core == 1 && only_core_0 {
            break;
        }
        t.at(10).dma(tile(a, 128, 64), window(x, 64, 128 * core, 128, 0, 64));
        t.at(11).dma(window(y, 64, 128 * core, 128, 0, 64), tile(a, 128, 64));
    }
    let mut trace = t.finish();
    trace.cores = vec![0, 2];
    trace
}

#[test]
fn each_core_gets_its_own_records_and_kernel() {
    let trace = two_cores(Target::Trn2, false);
    let parts = trace.split_cores().unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(trace.num_cores(), 2);
    assert!(parts.iter().all(|p| p.ops.len() == 2 && p.cores.is_empty() && p.tensors == trace.tensors));
    let kernels = KernelBuilder::new(Target::Trn2).build_cores(&trace).unwrap();
    assert_eq!(kernels.len(), 2);
    let text = kernels[1].function.to_string();
    // Core 1 copies the second block of rows (element offset 128 rows x 64).
    assert!(text.contains("src=t0{p0[64, 128] +8192 [1, 64]}"), "{text}");
    assert!(kernels[0].function.to_string().contains("src=t0{p0[64, 128] +0 [1, 64]}"));
}

#[test]
fn one_core_may_leave_an_output_to_the_other_but_someone_writes_it() {
    // Core 1 has no records: core 0 writes the first rows, and y is written.
    let trace = two_cores(Target::Trn2, true);
    assert_eq!(KernelBuilder::new(Target::Trn2).build_cores(&trace).unwrap().len(), 2);
    // Nobody writes y.
    let mut nobody = trace;
    nobody.ops.clear();
    nobody.cores = vec![0, 0];
    let e = KernelBuilder::new(Target::Trn2).build_cores(&nobody).unwrap_err();
    assert!(matches!(e, NkiError::OutputNeverWritten { ref tensor, .. } if tensor == "y"), "{e}");
}

#[test]
fn trn1_refuses_two_cores_and_marks_out_of_order_are_refused() {
    let e = KernelBuilder::new(Target::Trn1).build_cores(&two_cores(Target::Trn1, false)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel.py:10: the kernel runs on 2 physical NeuronCores, but a logical NeuronCore of trn1 has 1 (LNC=1); \
         launch it without the nl.nc axis, or trace it for trn2 or trn3"
    );
    let mut bad = two_cores(Target::Trn2, false);
    bad.cores = vec![0, 9];
    let e = bad.split_cores().unwrap_err();
    assert!(e.to_string().contains("core 0's records [0, 9) are not a range of the trace's 4 records"), "{e}");
    bad.cores = vec![1, 2];
    assert!(bad.split_cores().unwrap_err().to_string().contains("core 0's records must begin at record 0, not 1"));
    // A trace of two cores is built core by core.
    let e = KernelBuilder::new(Target::Trn2).build(&two_cores(Target::Trn2, false)).unwrap_err();
    assert!(e.to_string().contains("a kernel of 2 cores is built core by core (build_cores)"), "{e}");
}
