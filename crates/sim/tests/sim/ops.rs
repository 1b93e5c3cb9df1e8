//! Elementwise compute, DMA FMA, gather / scatter-add, PE transpose and structured-sparse
//! matmuls against references written from their definitions.

use bir::{Engine, HbmRole, HwAp, Op};
use penguin::{
    AluOp, CastMode, DType, Dim, EngineAccumulationType as Acc, Memory, PerfMode, SparsityPattern, Target,
    TilePosition, TileSize,
};
use sim::{SimError, Simulator};
use test_support::{hbm, psum, sbuf, value, Builder};

fn dma(dst: HwAp, src: HwAp) -> Op {
    Op::DmaCopy { dst, src, cast: CastMode::Rne }
}

/// Load `x` (`[rows, cols]` fp32 in HBM) into SBUF partitions `0..rows` as `dtype` at byte
/// `offset`, on queue `q`, signalling `sem`.
fn load(b: &mut Builder, q: u8, x: u64, shape: (u32, u32), dtype: DType, offset: u64, sem: bir::SemId) {
    let (rows, cols) = shape;
    let src = hbm(DType::Fp32, x, rows, i64::from(cols), cols);
    b.push(Engine::Dma(q), dma(sbuf(dtype, 0, rows, offset, cols), src), &[], Some(sem));
}

#[test]
fn tensor_tensor_rounds_once_and_max_keeps_nan() {
    for (op, f) in [
        (AluOp::Add, (|a, b| a + b) as fn(f32, f32) -> f32),
        (AluOp::Multiply, |a, b| a * b),
        (AluOp::Max, |a: f32, b: f32| if a.is_nan() || b.is_nan() { f32::NAN } else { a.max(b) }),
    ] {
        let mut b = Builder::new(Target::Trn2);
        let x = b.tensor("x", &[4, 8], DType::Fp32, HbmRole::Input);
        let y = b.tensor("y", &[4, 8], DType::Fp32, HbmRole::Input);
        let out = b.tensor("out", &[4, 8], DType::Bf16, HbmRole::Output);
        let (loaded, done) = (b.sem("loaded"), b.sem("done"));
        load(&mut b, 0, x, (4, 8), DType::Fp32, 0, loaded);
        load(&mut b, 1, y, (4, 8), DType::Bf16, 64, loaded);
        let tt = Op::TensorTensor {
            op,
            dst: sbuf(DType::Bf16, 0, 4, 128, 8),
            lhs: sbuf(DType::Fp32, 0, 4, 0, 8),
            rhs: sbuf(DType::Bf16, 0, 4, 64, 8),
        };
        b.push(Engine::Dve, tt, &[(loaded, 2)], Some(done));
        b.push(
            Engine::Dma(2),
            dma(hbm(DType::Bf16, out, 4, 8, 8), sbuf(DType::Bf16, 0, 4, 128, 8)),
            &[(done, 1)],
            None,
        );
        let mut s = Simulator::new(&b.program);
        let xs: Vec<f32> = (0..32).map(|i| if i == 5 { f32::NAN } else { value(i) * 3.0 }).collect();
        let ys: Vec<f32> = (0..32).map(|i| value(100 + i) * 3.0).collect();
        s.write_hbm_f32("x", &xs).unwrap();
        s.write_hbm_f32("y", &ys).unwrap();
        assert!(s.run().unwrap().races.is_empty());
        let got = s.read_hbm_tensor("out").unwrap();
        for i in 0..32 {
            let want = DType::Bf16.encode(f(xs[i], DType::Bf16.round_trip(ys[i])), CastMode::Rne);
            let bits = u32::from(u16::from_le_bytes([got[2 * i], got[2 * i + 1]]));
            assert!(
                bits == want || (i == 5 && DType::Bf16.decode(bits).is_nan()),
                "{op:?} {i}: {bits:#x} vs {want:#x}"
            );
        }
    }
}

#[test]
fn dma_fma_is_one_fused_rounding() {
    let mut b = Builder::new(Target::Trn2);
    let d = b.tensor("d", &[64], DType::Fp32, HbmRole::Output);
    let x = b.tensor("x", &[64], DType::Fp32, HbmRole::Input);
    let y = b.tensor("y", &[64], DType::Fp32, HbmRole::Input);
    let row = |a| hbm(DType::Fp32, a, 1, 64, 64);
    b.push(Engine::Dma(7), Op::DmaFma { dst: row(d), src0: row(x), src1: row(y) }, &[], None);
    let mut s = Simulator::new(&b.program);
    let (ds, xs, ys): (Vec<f32>, Vec<f32>, Vec<f32>) = (0..64)
        .map(|i| (value(i) * 1e-3, 1.0 + value(200 + i) * 1e-4, 1.0 - value(300 + i) * 1e-4))
        .fold((vec![], vec![], vec![]), |(mut a, mut b, mut c), (x, y, z)| {
            a.push(x);
            b.push(y);
            c.push(z);
            (a, b, c)
        });
    s.write_hbm_f32("d", &ds).unwrap();
    s.write_hbm_f32("x", &xs).unwrap();
    s.write_hbm_f32("y", &ys).unwrap();
    let stats = s.run().unwrap();
    assert_eq!(stats.hbm_read_bytes, 3 * 256);
    assert_eq!(stats.hbm_write_bytes, 256);
    let got = s.read_hbm_f32("d").unwrap();
    for i in 0..64 {
        assert_eq!(got[i].to_bits(), xs[i].mul_add(ys[i], ds[i]).to_bits(), "{i}");
    }
}

#[test]
fn gather_and_scatter_add_follow_the_indices() {
    let mut b = Builder::new(Target::Trn2);
    let table = b.tensor("table", &[6, 4], DType::Fp32, HbmRole::Input);
    let out = b.tensor("out", &[3, 4], DType::Fp32, HbmRole::Output);
    let idx = b.tensor("idx", &[3], DType::Int32, HbmRole::Input);
    let (loaded, gathered, stored) = (b.sem("loaded"), b.sem("gathered"), b.sem("stored"));
    let index = sbuf(DType::Int32, 0, 1, 0, 3);
    b.push(Engine::Dma(0), dma(index.clone(), hbm(DType::Int32, idx, 1, 3, 3)), &[], Some(loaded));
    let table_ap = hbm(DType::Fp32, table, 6, 4, 4);
    let rows = sbuf(DType::Bf16, 0, 3, 64, 4);
    b.push(
        Engine::Dma(1),
        Op::DmaGather { dst: rows.clone(), table: table_ap.clone(), index: index.clone(), skip: false },
        &[(loaded, 1)],
        Some(gathered),
    );
    b.push(Engine::Dma(2), dma(hbm(DType::Fp32, out, 3, 4, 4), rows.clone()), &[(gathered, 1)], Some(stored));
    b.push(Engine::Dma(3), Op::DmaScatterAdd { table: table_ap, src: rows, index, skip: false }, &[(stored, 1)], None);
    let mut s = Simulator::new(&b.program);
    let t: Vec<f32> = (0..24).map(|i| i as f32 + 0.25).collect();
    s.write_hbm_f32("table", &t).unwrap();
    s.write_hbm_tensor("idx", &[5i32, 0, 5].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let stats = s.run().unwrap();
    assert!(stats.races.is_empty(), "{:?}", stats.races);
    let gathered: Vec<f32> =
        [5usize, 0, 5].iter().flat_map(|&r| t[r * 4..r * 4 + 4].iter().map(|v| DType::Bf16.round_trip(*v))).collect();
    assert_eq!(s.read_hbm_f32("out").unwrap(), gathered);
    // Row 5 received its own (bf16-rounded) value twice, row 0 once.
    let mut want = t.clone();
    for (i, &r) in [5usize, 0, 5].iter().enumerate() {
        for c in 0..4 {
            want[r * 4 + c] += gathered[i * 4 + c];
        }
    }
    assert_eq!(s.read_hbm_f32("table").unwrap(), want);

    for bad in [-1i32, 6] {
        s.write_hbm_tensor("idx", &[0i32, bad, 1].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        let err = s.run().unwrap_err();
        assert!(
            matches!(err, SimError::IndexOutOfRange { position: 1, index, rows: 6, .. } if index == i64::from(bad)),
            "{err}"
        );
    }
}

#[test]
fn transpose_through_psum() {
    let mut b = Builder::new(Target::Trn1);
    let x = b.tensor("x", &[3, 5], DType::Fp32, HbmRole::Input);
    let y = b.tensor("y", &[5, 3], DType::Fp32, HbmRole::Output);
    let (loaded, transposed, copied) = (b.sem("loaded"), b.sem("t"), b.sem("c"));
    load(&mut b, 0, x, (3, 5), DType::Bf16, 0, loaded);
    b.push(
        Engine::Pe,
        Op::Transpose { dst: psum(5, 4096, 3), src: sbuf(DType::Bf16, 0, 3, 0, 5) },
        &[(loaded, 1)],
        Some(transposed),
    );
    b.push(
        Engine::Act,
        Op::TensorCopy { dst: sbuf(DType::Fp32, 0, 5, 64, 3), src: psum(5, 4096, 3) },
        &[(transposed, 1)],
        Some(copied),
    );
    b.push(Engine::Dma(1), dma(hbm(DType::Fp32, y, 5, 3, 3), sbuf(DType::Fp32, 0, 5, 64, 3)), &[(copied, 1)], None);
    let mut s = Simulator::new(&b.program);
    let xs: Vec<f32> = (0..15).map(value).collect();
    s.write_hbm_f32("x", &xs).unwrap();
    s.run().unwrap();
    let got = s.read_hbm_f32("y").unwrap();
    for i in 0..3 {
        for j in 0..5 {
            assert_eq!(got[j * 3 + i], DType::Bf16.round_trip(xs[i * 5 + j]));
        }
    }
    // The transpose replaces the weights: a multiply right after it has no stationary.
    let mm = Op::MultiplyMoving {
        dst: psum(5, 0, 3),
        src: sbuf(DType::Bf16, 0, 3, 0, 3),
        acc: Acc::START | Acc::STOP,
        perf_mode: PerfMode::None,
        tile_position: TilePosition::default(),
        tile_size: TileSize::default(),
    };
    b.push(Engine::Pe, mm, &[], None);
    assert!(matches!(Simulator::new(&b.program).run(), Err(SimError::NoStationary { .. })));
}

/// A sparse matmul of every pattern on the documented layout: a compressed stationary
/// `[K', M]`, packed tags `[K', ceil(M / 4)]` and a moving `[K', CR, N]`, against the formula
/// in fp64.
#[test]
fn sparse_stationary_matches_the_formula() {
    for pattern in SparsityPattern::SUPPORTED {
        let cr = pattern.compression_ratio() as usize;
        let group = 4 * cr;
        // K' = 8 kept rows (2 hardware groups), M = 6 (2 tag words per row), N = 5.
        let (kc, m, n) = (8usize, 6usize, 5usize);
        let words = m.div_ceil(4);
        let w: Vec<f32> = (0..kc * m).map(|i| DType::Bf16.round_trip(value(i as u64))).collect();
        let tag = |kk: usize, j: usize| (kk * 7 + j * 3) % group;
        let mut packed = vec![0u16; kc * words];
        for kk in 0..kc {
            for j in 0..m {
                packed[kk * words + j / 4] |= (tag(kk, j) as u16) << (4 * (j % 4));
            }
        }
        // The moving operand's dense rows `[K' x CR, N]`: partition p holds rows p*CR ...
        let x: Vec<f32> = (0..kc * cr * n).map(|i| DType::Bf16.round_trip(value(50 + i as u64))).collect();
        let mut b = Builder::new(Target::Trn2);
        let wt = b.tensor("w", &[kc as u64, m as u64], DType::Fp32, HbmRole::Input);
        let tt = b.tensor("tags", &[kc as u64, words as u64], DType::Int16, HbmRole::Input);
        let xt = b.tensor("x", &[(kc * cr) as u64, n as u64], DType::Fp32, HbmRole::Input);
        let ct = b.tensor("c", &[m as u64, n as u64], DType::Fp32, HbmRole::Output);
        let (loaded, done, copied) = (b.sem("loaded"), b.sem("done"), b.sem("copied"));
        load(&mut b, 0, wt, (kc as u32, m as u32), DType::Bf16, 0, loaded);
        let tags_sbuf = sbuf(DType::Int16, 0, kc as u32, 64, words as u32);
        let tags_hbm = hbm(DType::Int16, tt, kc as u32, words as i64, words as u32);
        b.push(Engine::Dma(1), dma(tags_sbuf.clone(), tags_hbm), &[], Some(loaded));
        load(&mut b, 2, xt, (kc as u32, (cr * n) as u32), DType::Bf16, 128, loaded);
        let ls = Op::LoadStationarySparse {
            src: sbuf(DType::Bf16, 0, kc as u32, 0, m as u32),
            tags: tags_sbuf,
            pattern,
            tile_position: TilePosition::default(),
            tile_size: TileSize::default(),
        };
        b.push(Engine::Pe, ls, &[(loaded, 3)], None);
        let mm = Op::MultiplyMoving {
            dst: psum(m as u32, 0, n as u32),
            src: sbuf(DType::Bf16, 0, kc as u32, 128, (cr * n) as u32),
            acc: Acc::START | Acc::STOP,
            perf_mode: PerfMode::None,
            tile_position: TilePosition::default(),
            tile_size: TileSize::default(),
        };
        b.push(Engine::Pe, mm, &[], Some(done));
        b.push(
            Engine::Pool,
            Op::TensorCopy { dst: sbuf(DType::Fp32, 0, m as u32, 256, n as u32), src: psum(m as u32, 0, n as u32) },
            &[(done, 1)],
            Some(copied),
        );
        b.push(
            Engine::Dma(3),
            dma(hbm(DType::Fp32, ct, m as u32, n as i64, n as u32), sbuf(DType::Fp32, 0, m as u32, 256, n as u32)),
            &[(copied, 1)],
            None,
        );
        let bytes = |words: &[u16]| words.iter().flat_map(|t| t.to_le_bytes()).collect::<Vec<u8>>();
        let mut s = Simulator::new(&b.program);
        s.write_hbm_f32("w", &w).unwrap();
        s.write_hbm_tensor("tags", &bytes(&packed)).unwrap();
        s.write_hbm_f32("x", &x).unwrap();
        s.run().unwrap();
        let got = s.read_hbm_f32("c").unwrap();
        for j in 0..m {
            for c in 0..n {
                let want: f64 = (0..kc)
                    .map(|kk| f64::from(w[kk * m + j]) * f64::from(x[((kk / 4) * group + tag(kk, j)) * n + c]))
                    .sum();
                let err = (f64::from(got[j * n + c]) - want).abs();
                assert!(err <= 1e-5 * want.abs().max(1.0), "{pattern} ({j}, {c}): {} vs {want}", got[j * n + c]);
            }
        }
        // A tag outside its hardware group of 4 x CR rows is an error (4:16 uses all 16).
        if group < 16 {
            s.write_hbm_tensor("tags", &bytes(&vec![0xffff; kc * words])).unwrap();
            let err = s.run().unwrap_err();
            assert!(matches!(err, SimError::BadOperand { .. }) && err.to_string().contains("outside 0.."), "{err}");
        }
    }
}

#[test]
fn compute_engines_stay_on_chip() {
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[8], DType::Fp32, HbmRole::Input);
    let tt = Op::TensorTensor {
        op: AluOp::Add,
        dst: sbuf(DType::Fp32, 0, 1, 0, 8),
        lhs: hbm(DType::Fp32, x, 1, 8, 8),
        rhs: HwAp::on_chip(Memory::Sbuf, DType::Fp32, 0, 1, 0, vec![Dim::new(1, 8)]),
    };
    b.push(Engine::Dve, tt, &[], None);
    assert!(matches!(Simulator::new(&b.program).run(), Err(SimError::BadOperand { .. })));
}

#[test]
fn tensor_tensor_scan_carries_the_rounded_value_along_each_partition() {
    // x = initial[p]; x = (data0[i] - x) * data1[i], rounded to bf16 each step.
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[4, 8], DType::Fp32, HbmRole::Input);
    let y = b.tensor("y", &[4, 8], DType::Fp32, HbmRole::Input);
    let init = b.tensor("init", &[4, 1], DType::Fp32, HbmRole::Input);
    let out = b.tensor("out", &[4, 8], DType::Bf16, HbmRole::Output);
    let (loaded, done) = (b.sem("loaded"), b.sem("done"));
    load(&mut b, 0, x, (4, 8), DType::Fp32, 0, loaded);
    load(&mut b, 1, y, (4, 8), DType::Fp32, 64, loaded);
    load(&mut b, 2, init, (4, 1), DType::Fp32, 128, loaded);
    let scan = Op::TensorTensorScan {
        op0: AluOp::Subtract,
        op1: AluOp::Multiply,
        dst: sbuf(DType::Bf16, 0, 4, 192, 8),
        data0: sbuf(DType::Fp32, 0, 4, 0, 8),
        data1: sbuf(DType::Fp32, 0, 4, 64, 8),
        initial: penguin::ScalarOperand::Tile(sbuf(DType::Fp32, 0, 4, 128, 1)),
    };
    b.push(Engine::Dve, scan, &[(loaded, 3)], Some(done));
    b.push(Engine::Dma(3), dma(hbm(DType::Bf16, out, 4, 8, 8), sbuf(DType::Bf16, 0, 4, 192, 8)), &[(done, 1)], None);
    let mut s = Simulator::new(&b.program);
    let xs: Vec<f32> = (0..32).map(|i| value(i) * 3.0).collect();
    let ys: Vec<f32> = (0..32).map(|i| value(50 + i) * 1.5).collect();
    let init_v: Vec<f32> = (0..4).map(|p| p as f32 * 0.75 - 1.0).collect();
    s.write_hbm_f32("x", &xs).unwrap();
    s.write_hbm_f32("y", &ys).unwrap();
    s.write_hbm_f32("init", &init_v).unwrap();
    assert!(s.run().unwrap().races.is_empty());
    let got = s.read_hbm_tensor("out").unwrap();
    for (p, &start) in init_v.iter().enumerate() {
        let mut carry = start;
        for i in 0..8 {
            let k = p * 8 + i;
            carry = DType::Bf16.round_trip((xs[k] - carry) * ys[k]);
            let want = DType::Bf16.encode(carry, CastMode::Rne);
            let bits = u32::from(u16::from_le_bytes([got[2 * k], got[2 * k + 1]]));
            assert_eq!(bits, want, "partition {p}, element {i}");
        }
    }
}

#[test]
fn tensor_copy_predicated_copies_where_the_predicate_is_nonzero() {
    // dst starts as y; x is copied where pred != 0; then -7.5 where pred == 0 (reverse).
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[4, 8], DType::Fp32, HbmRole::Input);
    let y = b.tensor("y", &[4, 8], DType::Fp32, HbmRole::Input);
    let pred = b.tensor("pred", &[4, 8], DType::Fp32, HbmRole::Input);
    let out = b.tensor("out", &[2, 4, 8], DType::Fp32, HbmRole::Output);
    let (loaded, done) = (b.sem("loaded"), b.sem("done"));
    load(&mut b, 0, x, (4, 8), DType::Fp32, 0, loaded);
    load(&mut b, 1, y, (4, 8), DType::Fp32, 64, loaded);
    load(&mut b, 2, pred, (4, 8), DType::Int32, 128, loaded);
    let copy = |dst: u64, src: penguin::ScalarOperand<HwAp>, reverse: bool| Op::TensorCopyPredicated {
        reverse,
        dst: sbuf(DType::Fp32, 0, 4, dst, 8),
        predicate: sbuf(DType::Int32, 0, 4, 128, 8),
        src,
    };
    b.push(
        Engine::Dve,
        copy(64, penguin::ScalarOperand::Tile(sbuf(DType::Fp32, 0, 4, 0, 8)), false),
        &[(loaded, 3)],
        None,
    );
    b.push(Engine::Dve, copy(0, penguin::ScalarOperand::Imm(-7.5), true), &[], Some(done));
    b.push(Engine::Dma(3), dma(hbm(DType::Fp32, out, 4, 8, 8), sbuf(DType::Fp32, 0, 4, 64, 8)), &[(done, 1)], None);
    b.push(
        Engine::Dma(4),
        dma(hbm(DType::Fp32, out + 32 * 4, 4, 8, 8), sbuf(DType::Fp32, 0, 4, 0, 8)),
        &[(done, 1)],
        None,
    );
    let mut s = Simulator::new(&b.program);
    let xs: Vec<f32> = (0..32).map(|i| value(i) * 3.0).collect();
    let ys: Vec<f32> = (0..32).map(|i| value(50 + i) * 1.5).collect();
    // Loaded as int32 (the DMA casts): 70000 and -3 are nonzero.
    let ps: Vec<f32> = (0..32).map(|i| [0.0, 1.0, -3.0, 0.0, 70000.0][i % 5]).collect();
    s.write_hbm_f32("x", &xs).unwrap();
    s.write_hbm_f32("y", &ys).unwrap();
    s.write_hbm_f32("pred", &ps).unwrap();
    assert!(s.run().unwrap().races.is_empty());
    let got = s.read_hbm_f32("out").unwrap();
    for k in 0..32 {
        let on = ps[k] != 0.0;
        assert_eq!(got[k], if on { xs[k] } else { ys[k] }, "element {k}");
        assert_eq!(got[32 + k], if on { xs[k] } else { -7.5 }, "element {k} of the reversed copy");
    }
}

#[test]
fn stream_shuffle_moves_partitions_within_each_quadrant() {
    // 64 partitions (two quadrants): partition q*32 + i takes x's partition q*32 + 31 - i,
    // except where i % 3 == 0 (mask 255): there it keeps y's values.
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[64, 8], DType::Fp32, HbmRole::Input);
    let y = b.tensor("y", &[64, 8], DType::Fp32, HbmRole::Input);
    let out = b.tensor("out", &[64, 8], DType::Fp32, HbmRole::Output);
    let (loaded, done) = (b.sem("loaded"), b.sem("done"));
    load(&mut b, 0, x, (64, 8), DType::Fp32, 0, loaded);
    load(&mut b, 1, y, (64, 8), DType::Fp32, 64, loaded);
    let mut mask = [0u8; 32];
    for (i, m) in mask.iter_mut().enumerate() {
        *m = if i % 3 == 0 { penguin::SHUFFLE_KEEP } else { 31 - i as u8 };
    }
    let shuffle = Op::StreamShuffle {
        mask: penguin::ShuffleMask(mask),
        dst: sbuf(DType::Fp32, 0, 64, 64, 8),
        src: sbuf(DType::Fp32, 0, 64, 0, 8),
    };
    b.push(Engine::Dve, shuffle, &[(loaded, 2)], Some(done));
    b.push(Engine::Dma(2), dma(hbm(DType::Fp32, out, 64, 8, 8), sbuf(DType::Fp32, 0, 64, 64, 8)), &[(done, 1)], None);
    let mut s = Simulator::new(&b.program);
    let xs: Vec<f32> = (0..512).map(|i| value(i) * 3.0).collect();
    let ys: Vec<f32> = (0..512).map(|i| value(900 + i)).collect();
    s.write_hbm_f32("x", &xs).unwrap();
    s.write_hbm_f32("y", &ys).unwrap();
    assert!(s.run().unwrap().races.is_empty());
    let got = s.read_hbm_f32("out").unwrap();
    for p in 0..64 {
        let i = p % 32;
        let from = if i % 3 == 0 { &ys[p * 8..p * 8 + 8] } else { &xs[(p - i + 31 - i) * 8..(p - i + 31 - i) * 8 + 8] };
        assert_eq!(&got[p * 8..p * 8 + 8], from, "partition {p}");
    }
}

#[test]
fn tensor_scalar_cumulative_keeps_an_fp32_register_and_rounds_each_store() {
    // reg = initial[p]; reg = (x * 3) + reg; dst (bf16) = reg. The register is not rounded:
    // the bf16 results are the rounded fp32 prefix sums.
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[4, 8], DType::Fp32, HbmRole::Input);
    let init = b.tensor("init", &[4, 1], DType::Fp32, HbmRole::Input);
    let out = b.tensor("out", &[4, 8], DType::Bf16, HbmRole::Output);
    let (loaded, done) = (b.sem("loaded"), b.sem("done"));
    load(&mut b, 0, x, (4, 8), DType::Fp32, 0, loaded);
    load(&mut b, 1, init, (4, 1), DType::Fp32, 64, loaded);
    let cumulative = Op::TensorScalarCumulative {
        op0: AluOp::Multiply,
        op1: AluOp::Add,
        reverse0: false,
        dst: sbuf(DType::Bf16, 0, 4, 128, 8),
        src: sbuf(DType::Fp32, 0, 4, 0, 8),
        operand0: penguin::ScalarOperand::Imm(3.0),
        initial: penguin::ScalarOperand::Tile(sbuf(DType::Fp32, 0, 4, 64, 1)),
    };
    b.push(Engine::Dve, cumulative, &[(loaded, 2)], Some(done));
    b.push(Engine::Dma(2), dma(hbm(DType::Bf16, out, 4, 8, 8), sbuf(DType::Bf16, 0, 4, 128, 8)), &[(done, 1)], None);
    let mut s = Simulator::new(&b.program);
    let xs: Vec<f32> = (0..32).map(|i| value(i) * 1.001).collect();
    let init_v: Vec<f32> = (0..4).map(|p| p as f32 * 0.37 - 0.5).collect();
    s.write_hbm_f32("x", &xs).unwrap();
    s.write_hbm_f32("init", &init_v).unwrap();
    assert!(s.run().unwrap().races.is_empty());
    let got = s.read_hbm_tensor("out").unwrap();
    for (p, &start) in init_v.iter().enumerate() {
        let mut reg = start;
        for i in 0..8 {
            let k = p * 8 + i;
            reg += xs[k] * 3.0;
            let want = DType::Bf16.encode(reg, CastMode::Rne);
            let bits = u32::from(u16::from_le_bytes([got[2 * k], got[2 * k + 1]]));
            assert_eq!(bits, want, "partition {p}, element {i}");
        }
    }
}

#[test]
fn a_scatter_writes_the_named_rows_in_index_order_and_keeps_the_rest() {
    // table rows 4, 1, 4 take src rows 0, 1, 2 (cast fp32 -> bf16): row 4 keeps the later.
    let mut b = Builder::new(Target::Trn2);
    let table = b.tensor("table", &[6, 4], DType::Bf16, HbmRole::Input);
    let src = b.tensor("src", &[3, 4], DType::Fp32, HbmRole::Input);
    let idx = b.tensor("idx", &[3], DType::Int32, HbmRole::Input);
    let loaded = b.sem("loaded");
    let index = sbuf(DType::Int32, 0, 1, 0, 3);
    b.push(Engine::Dma(0), dma(index.clone(), hbm(DType::Int32, idx, 1, 3, 3)), &[], Some(loaded));
    load(&mut b, 1, src, (3, 4), DType::Fp32, 64, loaded);
    let scatter = Op::DmaScatter {
        table: hbm(DType::Bf16, table, 6, 4, 4),
        src: sbuf(DType::Fp32, 0, 3, 64, 4),
        index,
        skip: false,
    };
    b.push(Engine::Dma(2), scatter, &[(loaded, 2)], None);
    let mut s = Simulator::new(&b.program);
    let t: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let rows: Vec<f32> = (0..12).map(|i| value(i) * 7.0).collect();
    s.write_hbm_f32("table", &t).unwrap();
    s.write_hbm_f32("src", &rows).unwrap();
    s.write_hbm_tensor("idx", &[4i32, 1, 4].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let stats = s.run().unwrap();
    assert!(stats.races.is_empty(), "{:?}", stats.races);
    assert_eq!(stats.hbm_write_bytes, 3 * 4 * 2);
    let mut want = t.clone();
    for (k, r) in [(0usize, 4usize), (1, 1), (2, 4)] {
        for c in 0..4 {
            want[r * 4 + c] = DType::Bf16.round_trip(rows[k * 4 + c]);
        }
    }
    assert_eq!(s.read_hbm_f32("table").unwrap(), want);
}

#[test]
fn tensor_partition_reduce_folds_partitions_in_order() {
    // 3 partitions of 4: add in fp32, partition 0 first, then bitwise_or of int32 bit patterns.
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[3, 4], DType::Fp32, HbmRole::Input);
    let out = b.tensor("out", &[2, 4], DType::Fp32, HbmRole::Output);
    let (loaded, done) = (b.sem("loaded"), b.sem("done"));
    load(&mut b, 0, x, (3, 4), DType::Fp32, 0, loaded);
    load(&mut b, 1, x, (3, 4), DType::Int32, 64, loaded);
    let reduce = |op, dtype, src_off, dst_off| Op::TensorPartitionReduce {
        op,
        dst: sbuf(dtype, 0, 1, dst_off, 4),
        src: sbuf(dtype, 0, 3, src_off, 4),
    };
    b.push(Engine::Pool, reduce(AluOp::Add, DType::Fp32, 0, 128), &[(loaded, 2)], None);
    b.push(Engine::Pool, reduce(AluOp::BitwiseOr, DType::Int32, 64, 192), &[], None);
    b.push(
        Engine::Pool,
        Op::TensorCopy { dst: sbuf(DType::Fp32, 0, 1, 256, 4), src: sbuf(DType::Int32, 0, 1, 192, 4) },
        &[],
        Some(done),
    );
    b.push(Engine::Dma(2), dma(hbm(DType::Fp32, out, 1, 4, 4), sbuf(DType::Fp32, 0, 1, 128, 4)), &[(done, 1)], None);
    b.push(
        Engine::Dma(3),
        dma(hbm(DType::Fp32, out + 16, 1, 4, 4), sbuf(DType::Fp32, 0, 1, 256, 4)),
        &[(done, 1)],
        None,
    );
    let mut s = Simulator::new(&b.program);
    let xs: Vec<f32> = vec![1e8, 5.0, 12.0, -1.0, 1.0, 6.0, 3.0, -2.0, -1e8, 9.0, 33.0, 4.0];
    s.write_hbm_f32("x", &xs).unwrap();
    assert!(s.run().unwrap().races.is_empty());
    let got = s.read_hbm_f32("out").unwrap();
    for i in 0..4 {
        assert_eq!(got[i], (xs[i] + xs[4 + i]) + xs[8 + i], "sum {i}");
        let ints = [0, 4, 8].map(|r| xs[r + i] as i32);
        assert_eq!(got[4 + i], (ints[0] | ints[1] | ints[2]) as f32, "or {i}");
    }
    // 1e8 + 1 is 1e8 in fp32: the order is partition 0, 1, 2.
    assert_eq!(got[0], 0.0);
}

#[test]
fn top8_finds_the_largest_their_places_and_replaces_them() {
    // Two partitions of 12 values with a tie: max8 keeps them in descending order,
    // find_index8 names the first occurrence of each (the tie's second value the next one),
    // and match_replace8 writes -1 where they were and the positions into a uint16 tile.
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[2, 12], DType::Fp32, HbmRole::Input);
    let top = b.tensor("top", &[2, 8], DType::Fp32, HbmRole::Output);
    let at = b.tensor("at", &[2, 8], DType::Uint32, HbmRole::Output);
    let rest = b.tensor("rest", &[2, 12], DType::Fp32, HbmRole::Output);
    let idx = b.tensor("idx", &[2, 8], DType::Uint16, HbmRole::Output);
    let (loaded, done) = (b.sem("loaded"), b.sem("done"));
    load(&mut b, 0, x, (2, 12), DType::Fp32, 0, loaded);
    let vals = sbuf(DType::Fp32, 0, 2, 64, 8);
    let top8 = |mode, dst: HwAp, vals: Option<HwAp>, idx: Option<HwAp>| Op::Top8 {
        mode,
        value: -1.0,
        dst,
        src: sbuf(DType::Fp32, 0, 2, 0, 12),
        vals,
        idx,
    };
    use penguin::Top8Mode::{FindIndex8, MatchReplace8, Max8};
    b.push(Engine::Dve, top8(Max8, vals.clone(), None, None), &[(loaded, 1)], None);
    b.push(Engine::Dve, top8(FindIndex8, sbuf(DType::Uint32, 0, 2, 128, 8), Some(vals.clone()), None), &[], None);
    let replace = top8(
        MatchReplace8,
        sbuf(DType::Fp32, 0, 2, 192, 12),
        Some(vals.clone()),
        Some(sbuf(DType::Uint16, 0, 2, 256, 8)),
    );
    b.push(Engine::Dve, replace, &[], Some(done));
    b.push(Engine::Dma(1), dma(hbm(DType::Fp32, top, 2, 8, 8), vals), &[(done, 1)], None);
    b.push(Engine::Dma(2), dma(hbm(DType::Uint32, at, 2, 8, 8), sbuf(DType::Uint32, 0, 2, 128, 8)), &[(done, 1)], None);
    b.push(
        Engine::Dma(3),
        dma(hbm(DType::Fp32, rest, 2, 12, 12), sbuf(DType::Fp32, 0, 2, 192, 12)),
        &[(done, 1)],
        None,
    );
    b.push(
        Engine::Dma(4),
        dma(hbm(DType::Uint16, idx, 2, 8, 8), sbuf(DType::Uint16, 0, 2, 256, 8)),
        &[(done, 1)],
        None,
    );
    let mut s = Simulator::new(&b.program);
    let row0 = [3.0, 9.0, -2.0, 9.0, 0.5, 7.0, 1.0, 4.0, 8.0, -5.0, 6.0, 2.0];
    let row1 = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0, 110.0, 120.0];
    let xs: Vec<f32> = row0.iter().chain(&row1).copied().collect();
    s.write_hbm_f32("x", &xs).unwrap();
    assert!(s.run().unwrap().races.is_empty());
    assert_eq!(
        s.read_hbm_f32("top").unwrap(),
        [9.0, 9.0, 8.0, 7.0, 6.0, 4.0, 3.0, 2.0, 120.0, 110.0, 100.0, 90.0, 80.0, 70.0, 60.0, 50.0]
    );
    assert_eq!(
        s.read_hbm_f32("at").unwrap(),
        [1.0, 3.0, 8.0, 5.0, 10.0, 7.0, 0.0, 11.0, 11.0, 10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0]
    );
    // match_replace8 takes the values from the last: the tie's first 9 pairs with slot 1.
    assert_eq!(
        s.read_hbm_f32("idx").unwrap(),
        [3.0, 1.0, 8.0, 5.0, 10.0, 7.0, 0.0, 11.0, 11.0, 10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0]
    );
    let rest: Vec<f32> = s.read_hbm_f32("rest").unwrap();
    assert_eq!(&rest[..12], &[-1.0, -1.0, -2.0, -1.0, 0.5, -1.0, 1.0, -1.0, -1.0, -5.0, -1.0, -1.0]);
    assert_eq!(&rest[12..], &[10.0, 20.0, 30.0, 40.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0]);
}

#[test]
fn skipping_indirect_dmas_leave_the_rows_an_index_outside_the_table_names() {
    // Indices [5, 9, -3] into a 6-row table: the gather writes row 0 only (rows 1 and 2 keep
    // what was loaded there), and the scatter-add adds into table row 5 only.
    let mut b = Builder::new(Target::Trn2);
    let table = b.tensor("table", &[6, 4], DType::Fp32, HbmRole::Input);
    let init = b.tensor("init", &[3, 4], DType::Fp32, HbmRole::Input);
    let out = b.tensor("out", &[3, 4], DType::Fp32, HbmRole::Output);
    let idx = b.tensor("idx", &[3], DType::Int32, HbmRole::Input);
    let (loaded, gathered, stored) = (b.sem("loaded"), b.sem("gathered"), b.sem("stored"));
    let index = sbuf(DType::Int32, 0, 1, 0, 3);
    b.push(Engine::Dma(0), dma(index.clone(), hbm(DType::Int32, idx, 1, 3, 3)), &[], Some(loaded));
    load(&mut b, 1, init, (3, 4), DType::Fp32, 64, loaded);
    let (table_ap, rows) = (hbm(DType::Fp32, table, 6, 4, 4), sbuf(DType::Fp32, 0, 3, 64, 4));
    let gather = Op::DmaGather { dst: rows.clone(), table: table_ap.clone(), index: index.clone(), skip: true };
    b.push(Engine::Dma(2), gather, &[(loaded, 2)], Some(gathered));
    b.push(Engine::Dma(3), dma(hbm(DType::Fp32, out, 3, 4, 4), rows.clone()), &[(gathered, 1)], Some(stored));
    let add = Op::DmaScatterAdd { table: table_ap, src: rows, index, skip: true };
    b.push(Engine::Dma(4), add, &[(stored, 1)], None);
    let mut s = Simulator::new(&b.program);
    let t: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let before: Vec<f32> = (0..12).map(|i| -1.0 - i as f32).collect();
    s.write_hbm_f32("table", &t).unwrap();
    s.write_hbm_f32("init", &before).unwrap();
    s.write_hbm_tensor("idx", &[5i32, 9, -3].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    assert!(s.run().unwrap().races.is_empty());
    let got = s.read_hbm_f32("out").unwrap();
    assert_eq!(&got[..4], &t[20..24]);
    assert_eq!(&got[4..], &before[4..]);
    let mut want = t.clone();
    for c in 0..4 {
        want[20 + c] += t[20 + c];
    }
    assert_eq!(s.read_hbm_f32("table").unwrap(), want);
}
