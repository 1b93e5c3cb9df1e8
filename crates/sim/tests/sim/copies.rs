//! Property test: strided, casting copies match a per-element reference written straight
//! from the access-pattern definition (SPEC section 5) and `DType`'s conversions.

use bir::{Engine, HbmRole, HwAp, Op};
use penguin::{CastMode, DType, Dim, Memory, Target};
use proptest::prelude::*;
use sim::Simulator;
use test_support::Builder;

/// Byte addresses of every element of `ap` in enumeration order: on chip as
/// `(partition, byte)`, in HBM as `(0, absolute byte)`.
fn addresses(ap: &HwAp) -> Vec<(i64, i64)> {
    let size = i64::from(ap.dtype.size_bytes());
    let mut frees = vec![0i64];
    for d in &ap.dims {
        frees = frees.iter().flat_map(|&f| (0..i64::from(d.num)).map(move |i| f + i * d.stride)).collect();
    }
    let mut out = Vec::new();
    for i in 0..i64::from(ap.num_partitions) {
        for f in &frees {
            match ap.memory {
                Memory::Hbm => out.push((0, ap.byte_offset as i64 + (i * ap.partition_stride + f) * size)),
                Memory::Sbuf | Memory::Psum => {
                    out.push((
                        i64::from(ap.start_partition) + i * ap.partition_stride,
                        ap.byte_offset as i64 + f * size,
                    ));
                }
            }
        }
    }
    out
}

/// A pattern of `shape` (partitions, then free sizes) with the given strides, shifted so its
/// smallest address is `base` bytes.
fn place(memory: Memory, dtype: DType, shape: &[u32], strides: &[i64], base: i64) -> HwAp {
    let mut ap = HwAp {
        memory,
        dtype,
        start_partition: 0,
        num_partitions: shape[0],
        partition_stride: strides[0],
        byte_offset: 0,
        dims: shape[1..].iter().zip(&strides[1..]).map(|(&n, &s)| Dim::new(s, n)).collect(),
    };
    let size = i64::from(dtype.size_bytes());
    let lo = |dims: &[Dim]| dims.iter().map(|d| (d.stride * (i64::from(d.num) - 1)).min(0)).sum::<i64>();
    let pspan = (ap.partition_stride * (i64::from(ap.num_partitions) - 1)).min(0);
    match memory {
        Memory::Hbm => ap.byte_offset = (base - (lo(&ap.dims) + pspan) * size) as u64,
        Memory::Sbuf | Memory::Psum => {
            ap.byte_offset = (base - lo(&ap.dims) * size) as u64;
            ap.start_partition = (-pspan) as u32;
        }
    }
    ap
}

fn dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(DType::ALL.to_vec())
}

/// `(shape, src strides, dst strides)` with one to four dims of one to four indices.
fn shapes() -> impl Strategy<Value = (Vec<u32>, Vec<i64>, Vec<i64>)> {
    prop::collection::vec(1u32..=4, 1..=4).prop_flat_map(|shape| {
        let n = shape.len();
        (Just(shape), prop::collection::vec(-6i64..=6, n), prop::collection::vec(-6i64..=6, n))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// HBM -> HBM and HBM -> SBUF -> HBM copies with arbitrary strides (negative, zero,
    /// aliasing) and any pair of dtypes.
    #[test]
    fn strided_copies_match_the_reference(
        (shape, s_strides, d_strides) in shapes(),
        src_dtype in dtype(),
        dst_dtype in dtype(),
        saturate in any::<bool>(),
        via_sbuf in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let cast = if saturate { CastMode::Saturate } else { CastMode::Rne };
        let mut b = Builder::new(Target::Trn2);
        let span = 1024u64;
        let src_t = b.tensor("src", &[span], DType::Uint8, HbmRole::Input);
        let dst_t = b.tensor("dst", &[span], DType::Uint8, HbmRole::Output);
        // Partition strides stay within 128 partitions on chip: use |stride| <= 6 of 4.
        let src = place(Memory::Hbm, src_dtype, &shape, &s_strides, src_t as i64 + 8);
        let dst_mem = if via_sbuf { Memory::Sbuf } else { Memory::Hbm };
        let dst_base = if via_sbuf { 8 } else { dst_t as i64 + 8 };
        let dst = place(dst_mem, dst_dtype, &shape, &d_strides, dst_base);
        let src_bytes: Vec<u8> = (0..span).map(|i| (seed.rotate_left((i % 64) as u32) ^ i.wrapping_mul(0x9E37)) as u8).collect();
        let dst_bytes: Vec<u8> = (0..span).map(|i| (i * 7) as u8).collect();

        // Reference.
        let mut sbuf_ref = vec![0xFFu8; 128 * span as usize];
        let mut hbm_ref = dst_bytes.clone();
        let (ssz, dsz) = (src_dtype.size_bytes() as usize, dst_dtype.size_bytes() as usize);
        for ((_, sa), (dp, da)) in addresses(&src).into_iter().zip(addresses(&dst)) {
            let sa = (sa - src_t as i64) as usize;
            let bits = src_dtype.load_bits(&src_bytes[sa..sa + ssz]);
            let out = if src_dtype == dst_dtype { bits } else { dst_dtype.encode(src_dtype.decode(bits), cast) };
            let slot = if via_sbuf {
                &mut sbuf_ref[(dp as usize) * span as usize + da as usize..][..dsz]
            } else {
                &mut hbm_ref[(da - dst_t as i64) as usize..][..dsz]
            };
            dst_dtype.store_bits(out, slot);
        }

        // Simulation.
        let done = b.sem("done");
        b.push(Engine::Dma(0), Op::DmaCopy { dst, src, cast }, &[], Some(done));
        if via_sbuf {
            // Read the touched SBUF window back raw: partitions 0..32, bytes 0..span.
            let window = HwAp::on_chip(Memory::Sbuf, DType::Uint8, 0, 32, 0, vec![Dim::new(1, span as u32)]);
            let out_t = b.tensor("window", &[32, span], DType::Uint8, HbmRole::Output);
            let out = HwAp::hbm(DType::Uint8, out_t, 32, span as i64, window.dims.clone());
            b.push(Engine::Dma(1), Op::DmaCopy { dst: out, src: window, cast: CastMode::Rne }, &[(done, 1)], None);
        }
        let mut s = Simulator::new(&b.program);
        s.write_hbm_tensor("src", &src_bytes).unwrap();
        s.write_hbm_tensor("dst", &dst_bytes).unwrap();
        s.run().unwrap();
        if via_sbuf {
            prop_assert_eq!(s.read_hbm_tensor("window").unwrap(), sbuf_ref[..32 * span as usize].to_vec());
        } else {
            prop_assert_eq!(s.read_hbm_tensor("dst").unwrap(), hbm_ref);
        }
    }
}
