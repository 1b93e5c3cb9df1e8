//! Allocation by liveness: rotation slots, sites sharing bytes, capacity errors, direct
//! addresses.

use nki::trace::{Address, Alu, Buffer};
use nki::{AllocationReport, NkiError};
use penguin::{DType, Target};

use crate::support::{ints, run};
use crate::tb::{tile, tiled_matmul, window, AccStyle, Tb};

fn site<'a>(k: &'a nki::NkiKernel, name: &str) -> &'a AllocationReport {
    k.allocations.iter().find(|a| a.name == name).unwrap_or_else(|| panic!("no site {name}: {:?}", k.allocations))
}

#[test]
fn tiles_allocated_in_a_loop_rotate_through_two_slots() {
    let trace = tiled_matmul(256, 512, 1024, DType::Bf16, Target::Trn2, AccStyle::Infer);
    let k = nki::KernelBuilder::new(Target::Trn2).build(&trace).unwrap();
    let a = site(&k, "lhsT_tile");
    assert_eq!((a.buffer, a.loc.as_str(), a.bytes_per_partition), ("sbuf", "kernel.py:12", 256));
    assert_eq!((a.instances, a.slots, a.rotation, a.rotation_dropped), (16, 2, true, false));
    assert_eq!(a.ranges.len(), 2);
    assert_eq!(a.ranges[1].0 - a.ranges[0].0, 256);
    let p = site(&k, "res_psum");
    assert_eq!((p.buffer, p.instances, p.slots, p.bytes_per_partition), ("psum", 4, 2, 2048));
    assert_eq!(p.ranges[0].0 % 2048, 0);
    assert_eq!(p.ranges[1].0 - p.ranges[0].0, 2048);
}

/// `n` iterations, each loading a `[128, free]` fp32 tile of `x`, adding it to itself and
/// storing it.
fn big_tiles(n: u64, free: u64, target: Target) -> Tb {
    let mut t = Tb::new("big", target);
    let x = t.at(2).input("x", DType::Fp32, &[128 * n, free]);
    let y = t.output("y", DType::Fp32, &[128 * n, free]);
    let s = t.site();
    t.at(3).loop_begin(n);
    for i in 0..n {
        t.at(3).iteration(i);
        let a = t.at(4).tensor_at_site("big_tile", Buffer::Sbuf, DType::Fp32, &[128, free], s);
        t.at(5).dma(tile(a, 128, free), window(x, free, 128 * i, 128, 0, free));
        t.at(6).tensor_tensor(tile(a, 128, free), tile(a, 128, free), tile(a, 128, free), Alu::Add);
        t.at(7).dma(window(y, free, 128 * i, 128, 0, free), tile(a, 128, free));
    }
    t.at(3).loop_end();
    t
}

#[test]
fn a_site_whose_two_slots_do_not_fit_gets_one_and_the_report_says_so() {
    // 100000 bytes per partition: two slots need 200000, trn1 has 196608.
    let k = big_tiles(3, 25_000, Target::Trn1).build().unwrap();
    let a = site(&k, "big_tile");
    assert_eq!((a.instances, a.slots, a.rotation, a.rotation_dropped), (3, 1, false, true));
    // On trn2 (229376 bytes) both fit.
    let k2 = big_tiles(3, 25_000, Target::Trn2).build().unwrap();
    assert_eq!((site(&k2, "big_tile").slots, site(&k2, "big_tile").rotation), (2, true));
    // One slot still computes the right thing (each refill waits for the last reads).
    let x = ints(3 * 128 * 25_000, 9);
    let got = run(&k, &[("x", x.clone())]);
    assert!(got["y"].iter().zip(&x).all(|(y, x)| *y == 2.0 * x));
}

#[test]
fn sites_not_live_at_once_share_bytes() {
    // Two different sites of 150000 bytes per partition, one after the other: they only fit
    // trn1's 196608 bytes together by sharing.
    let mut t = Tb::new("share", Target::Trn1);
    let x = t.at(2).input("x", DType::Fp32, &[128, 37_500]);
    let y = t.output("y", DType::Fp32, &[128, 37_500]);
    let z = t.output("z", DType::Fp32, &[128, 37_500]);
    let a = t.at(3).tensor("first", Buffer::Sbuf, DType::Fp32, &[128, 37_500]);
    let b = t.at(4).tensor("second", Buffer::Sbuf, DType::Fp32, &[128, 37_500]);
    let (va, vb, vx) = (tile(a, 128, 37_500), tile(b, 128, 37_500), window(x, 37_500, 0, 128, 0, 37_500));
    t.at(5).dma(va.clone(), vx.clone());
    t.at(6).tensor_tensor(va.clone(), va.clone(), va.clone(), Alu::Add);
    t.at(7).dma(window(y, 37_500, 0, 128, 0, 37_500), va);
    t.at(8).dma(vb.clone(), vx);
    t.at(9).tensor_tensor(vb.clone(), vb.clone(), vb.clone(), Alu::Multiply);
    t.at(10).dma(window(z, 37_500, 0, 128, 0, 37_500), vb);
    let k = t.build().unwrap();
    let (f, s) = (site(&k, "first"), site(&k, "second"));
    assert_eq!((f.slots, s.slots), (1, 1));
    assert_eq!(f.ranges[0].0, s.ranges[0].0, "{f:?} {s:?}");
    // The reuse is ordered: the second site's load waits for the first site's store.
    let xv = ints(128 * 37_500, 10);
    let got = run(&k, &[("x", xv.clone())]);
    assert!(got["y"].iter().zip(&xv).all(|(y, x)| *y == 2.0 * x));
    assert!(got["z"].iter().zip(&xv).all(|(z, x)| *z == x * x));
}

#[test]
fn capacity_error_names_the_allocation_what_is_live_and_the_capacity() {
    let mut t = Tb::new("full", Target::Trn1);
    let x = t.at(2).input("x", DType::Fp32, &[128, 30_000]);
    let a = t.at(3).tensor("a", Buffer::Sbuf, DType::Fp32, &[128, 30_000]);
    let b = t.at(4).tensor("b", Buffer::Sbuf, DType::Fp32, &[128, 30_000]);
    let y = t.output("y", DType::Fp32, &[128, 30_000]);
    let v = |t| tile(t, 128, 30_000);
    t.at(5).dma(v(a), window(x, 30_000, 0, 128, 0, 30_000));
    t.at(6).dma(v(b), window(x, 30_000, 0, 128, 0, 30_000));
    t.at(7).tensor_tensor(v(a), v(a), v(b), Alu::Add);
    t.at(8).dma(window(y, 30_000, 0, 128, 0, 30_000), v(a));
    let e = t.build().unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel.py:4: sbuf capacity exceeded allocating `b` (120000 bytes per partition): live there `a` \
         (kernel.py:3, 120000 bytes), and trn1 has 196608 bytes per partition"
    );
    assert!(matches!(e, NkiError::Capacity { bytes: 120_000, capacity: 196_608, .. }));
}

#[test]
fn direct_addresses_are_honoured_and_checked() {
    let mut t = Tb::new("direct", Target::Trn2);
    let x = t.at(2).input("x", DType::Fp32, &[128, 64]);
    let y = t.output("y", DType::Fp32, &[128, 64]);
    let a = t.at(3).tensor("a", Buffer::Sbuf, DType::Fp32, &[128, 64]);
    t.trace.tensors[a as usize].address = Some(Address::At { partition: 0, byte: 4096 });
    t.at(4).dma(tile(a, 128, 64), window(x, 64, 0, 128, 0, 64));
    t.at(5).dma(window(y, 64, 0, 128, 0, 64), tile(a, 128, 64));
    let k = t.build().unwrap();
    let r = site(&k, "a");
    assert_eq!((r.direct, r.ranges.clone()), (true, vec![(4096, 4096 + 256)]));
    let xv = ints(128 * 64, 11);
    assert_eq!(run(&k, &[("x", xv.clone())])["y"], xv);
    t.trace.tensors[a as usize].address = Some(Address::At { partition: 0, byte: 229_376 - 128 });
    let e = t.build().unwrap_err();
    assert!(matches!(&e, NkiError::Invalid { loc, .. } if loc == "kernel.py:3"), "{e}");
    assert!(e.to_string().contains("outside the 229376 bytes per partition of sbuf on trn2"), "{e}");
}
