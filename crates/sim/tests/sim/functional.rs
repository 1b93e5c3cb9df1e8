//! Functional behaviour of the simulator on hand-built BIR programs.

use bir::{Engine, HbmRole, HwAp, Op};
use penguin::{CastMode, DType, Dim, EngineAccumulationType as Acc, Memory, PerfMode, Target, TilePosition, TileSize};
use sim::{SimError, Simulator};
use test_support::{hbm, psum, sbuf, value, Builder};

fn ls(src: bir::HwAp) -> Op {
    Op::LoadStationary {
        src,
        perf_mode: PerfMode::None,
        tile_position: TilePosition::default(),
        tile_size: TileSize::default(),
    }
}

fn mm(dst: bir::HwAp, src: bir::HwAp, acc: Acc) -> Op {
    Op::MultiplyMoving {
        dst,
        src,
        acc,
        perf_mode: PerfMode::None,
        tile_position: TilePosition::default(),
        tile_size: TileSize::default(),
    }
}

fn dma(dst: bir::HwAp, src: bir::HwAp) -> Op {
    Op::DmaCopy { dst, src, cast: CastMode::Rne }
}

/// Values that exercise bf16 rounding: ties to even, carries into the exponent, overflow,
/// subnormals, signed zeros and NaN.
fn tricky_values() -> Vec<f32> {
    let mut v = vec![
        1.0,
        f32::from_bits(0x3f80_8000), // tie: rounds down to even
        f32::from_bits(0x3f81_8000), // tie: rounds up to even
        f32::from_bits(0x3f80_8001),
        f32::from_bits(0x7f7f_ffff), // f32::MAX rounds to infinity
        f32::from_bits(0x0000_0001), // smallest subnormal
        -0.0,
        f32::NAN,
        f32::NEG_INFINITY,
        0.1,
        -3.0e-39,
        65504.0,
    ];
    v.extend((0..116).map(|i| value(i) * 1000.0));
    v
}

/// `into_hbm_f32` reads what `read_hbm_f32` reads, tensor by tensor in the order asked
/// (bf16 and fp32 ones, and one asked twice), and names an unknown tensor.
#[test]
fn tensors_read_out_of_a_dropped_simulator_are_those_read_in_place() {
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[4, 32], DType::Fp32, HbmRole::Input);
    let z = b.tensor("z", &[4, 32], DType::Bf16, HbmRole::Output);
    b.push(Engine::Dma(0), dma(sbuf(DType::Bf16, 8, 4, 6, 32), hbm(DType::Fp32, x, 4, 32, 32)), &[], None);
    b.push(Engine::Dma(0), dma(hbm(DType::Bf16, z, 4, 32, 32), sbuf(DType::Bf16, 8, 4, 6, 32)), &[], None);
    let run = || {
        let mut s = Simulator::new(&b.program);
        s.write_hbm_f32("x", &tricky_values()).unwrap();
        s.run().unwrap();
        s
    };
    let s = run();
    let (x_in, z_in) = (s.read_hbm_f32("x").unwrap(), s.read_hbm_f32("z").unwrap());
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<u32>>();
    let out = s.into_hbm_f32(&["z", "x", "z"]).unwrap();
    assert_eq!(out.iter().map(|v| bits(v)).collect::<Vec<_>>(), vec![bits(&z_in), bits(&x_in), bits(&z_in)]);
    assert_eq!(bits(&x_in), bits(&tricky_values()));
    assert!(matches!(run().into_hbm_f32(&["x", "w"]), Err(SimError::UnknownTensor { name }) if name == "w"));
}

/// A tensor written in pieces holds the bytes of writing it whole; a piece past its end is
/// refused with the element count it would need.
#[test]
fn a_tensor_written_in_pieces_is_the_tensor_written_whole() {
    let mut b = Builder::new(Target::Trn2);
    b.tensor("x", &[4, 32], DType::Bf16, HbmRole::Input);
    let values = tricky_values();
    let mut whole = Simulator::new(&b.program);
    whole.write_hbm_f32("x", &values).unwrap();
    let mut pieces = Simulator::new(&b.program);
    for (i, piece) in values.chunks(37).enumerate() {
        pieces.write_hbm_f32_at("x", i * 37, piece).unwrap();
    }
    assert_eq!(pieces.read_hbm_tensor("x").unwrap(), whole.read_hbm_tensor("x").unwrap());
    let e = pieces.write_hbm_f32_at("x", 100, &values[..29]).unwrap_err();
    assert!(matches!(e, SimError::TensorSize { expected: 128, got: 129, .. }), "{e:?}");
    assert!(matches!(pieces.write_hbm_f32_at("x", usize::MAX, &values[..2]), Err(SimError::TensorSize { .. })));
    assert!(matches!(pieces.write_hbm_f32_at("y", 0, &values[..2]), Err(SimError::UnknownTensor { .. })));
}

#[test]
fn dma_round_trip_through_bf16_is_bit_exact() {
    // x: [4, 32] fp32 in HBM -> SBUF bf16 (cast) -> y: fp32 in HBM and z: bf16 in HBM.
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[4, 32], DType::Fp32, HbmRole::Input);
    let y = b.tensor("y", &[4, 32], DType::Fp32, HbmRole::Output);
    let z = b.tensor("z", &[4, 32], DType::Bf16, HbmRole::Output);
    let loaded = b.sem("loaded");
    b.push(Engine::Dma(0), dma(sbuf(DType::Bf16, 8, 4, 6, 32), hbm(DType::Fp32, x, 4, 32, 32)), &[], Some(loaded));
    b.push(Engine::Dma(1), dma(hbm(DType::Fp32, y, 4, 32, 32), sbuf(DType::Bf16, 8, 4, 6, 32)), &[(loaded, 1)], None);
    b.push(Engine::Dma(2), dma(hbm(DType::Bf16, z, 4, 32, 32), sbuf(DType::Bf16, 8, 4, 6, 32)), &[(loaded, 1)], None);
    let mut s = Simulator::new(&b.program);
    let input = tricky_values();
    s.write_hbm_f32("x", &input).unwrap();
    let stats = s.run().unwrap();
    assert_eq!(stats.instructions, 3);
    assert_eq!(stats.dma_bytes, 128 * 2 + 128 * 4 + 128 * 2);
    assert!(stats.races.is_empty(), "{:?}", stats.races);
    let y = s.read_hbm_f32("y").unwrap();
    let z = s.read_hbm_tensor("z").unwrap();
    for (i, x) in input.iter().enumerate() {
        let want = DType::Bf16.encode(*x, CastMode::Rne);
        assert_eq!(u32::from(u16::from_le_bytes([z[2 * i], z[2 * i + 1]])), want, "element {i}: {x:e}");
        assert_eq!(y[i].to_bits(), DType::Bf16.decode(want).to_bits(), "element {i}: {x:e}");
    }
}

#[test]
fn saturating_and_transposing_dma() {
    // x: [3, 5] fp32; load its transpose [5 partitions, 3] as fp8e4m3 with saturation,
    // then store it back transposed as fp32.
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[3, 5], DType::Fp32, HbmRole::Input);
    let y = b.tensor("y", &[3, 5], DType::Fp32, HbmRole::Output);
    let sem = b.sem("s");
    let cols = |addr| HwAp::hbm(DType::Fp32, addr, 5, 1, vec![Dim::new(5, 3)]);
    let tile = sbuf(DType::Fp8e4m3, 32, 5, 3, 3);
    b.push(Engine::Dma(3), Op::DmaCopy { dst: tile.clone(), src: cols(x), cast: CastMode::Saturate }, &[], Some(sem));
    b.push(Engine::Dma(4), dma(cols(y), tile), &[(sem, 1)], None);
    let mut s = Simulator::new(&b.program);
    let input: Vec<f32> = (0..15).map(|i| (i as f32 - 7.0) * 41.3).collect();
    s.write_hbm_f32("x", &input).unwrap();
    s.run().unwrap();
    let out = s.read_hbm_f32("y").unwrap();
    for (x, o) in input.iter().zip(&out) {
        let want = DType::Fp8e4m3.decode(DType::Fp8e4m3.encode(*x, CastMode::Saturate));
        assert_eq!(o.to_bits(), want.to_bits(), "{x}");
        assert!(o.abs() <= 240.0);
    }
}

/// C[M, N] = A[M, K] @ B[K, N] with A given as AT [K, M], bf16 inputs, K split in three
/// sub-tiles accumulated in one PSUM group (START, ACCU, STOP).
#[test]
fn matmul_accumulation_group_matches_f64_reference() {
    let (m, k, n) = (100usize, 300usize, 300usize);
    let k_tiles = [(0usize, 128usize), (128, 128), (256, 44)];
    let mut b = Builder::new(Target::Trn1);
    let at = b.tensor("at", &[k as u64, m as u64], DType::Bf16, HbmRole::Input);
    let bt = b.tensor("b", &[k as u64, n as u64], DType::Bf16, HbmRole::Input);
    let ct = b.tensor("c", &[m as u64, n as u64], DType::Fp32, HbmRole::Output);
    let loaded = b.sem("loaded");
    let multiplied = b.sem("multiplied");
    let copied = b.sem("copied");
    let w_off = |t: usize| (t * m * 2) as u64;
    let x_off = |t: usize| (1024 + t * n * 2) as u64;
    for (t, &(k0, kt)) in k_tiles.iter().enumerate() {
        let (w, x) =
            (sbuf(DType::Bf16, 0, kt as u32, w_off(t), m as u32), sbuf(DType::Bf16, 0, kt as u32, x_off(t), n as u32));
        b.push(
            Engine::Dma(t as u8),
            dma(w, hbm(DType::Bf16, at + (k0 * m * 2) as u64, kt as u32, m as i64, m as u32)),
            &[],
            Some(loaded),
        );
        b.push(
            Engine::Dma(8 + t as u8),
            dma(x, hbm(DType::Bf16, bt + (k0 * n * 2) as u64, kt as u32, n as i64, n as u32)),
            &[],
            Some(loaded),
        );
    }
    for (t, &(_, kt)) in k_tiles.iter().enumerate() {
        let flags = Acc::for_position(t, k_tiles.len());
        let waits: &[_] = if t == 0 { &[(loaded, 6)] } else { &[] };
        b.push(Engine::Pe, ls(sbuf(DType::Bf16, 0, kt as u32, w_off(t), m as u32)), waits, None);
        let signal = (t + 1 == k_tiles.len()).then_some(multiplied);
        b.push(
            Engine::Pe,
            mm(psum(m as u32, 2048, n as u32), sbuf(DType::Bf16, 0, kt as u32, x_off(t), n as u32), flags),
            &[],
            signal,
        );
    }
    let out = sbuf(DType::Fp32, 0, m as u32, 8192, n as u32);
    b.push(
        Engine::Act,
        Op::TensorCopy { dst: out.clone(), src: psum(m as u32, 2048, n as u32) },
        &[(multiplied, 1)],
        Some(copied),
    );
    b.push(Engine::Dma(15), dma(hbm(DType::Fp32, ct, m as u32, n as i64, n as u32), out), &[(copied, 1)], None);
    bir::verify_program(&b.program).unwrap();

    let a_t: Vec<f32> = (0..k * m).map(|i| DType::Bf16.round_trip(value(i as u64))).collect();
    let bm: Vec<f32> = (0..k * n).map(|i| DType::Bf16.round_trip(value(1 << 40 | i as u64))).collect();
    let mut s = Simulator::new(&b.program);
    s.write_hbm_f32("at", &a_t).unwrap();
    s.write_hbm_f32("b", &bm).unwrap();
    let stats = s.run().unwrap();
    assert_eq!(stats.matmuls, 3);
    assert!(stats.races.is_empty(), "{:?}", stats.races);
    let c = s.read_hbm_f32("c").unwrap();
    let eps32 = DType::Fp32.unit_roundoff();
    for i in 0..m {
        for j in 0..n {
            let (mut exact, mut abs, mut fp32_group) = (0f64, 0f64, 0f32);
            for &(k0, kt) in &k_tiles {
                let mut partial = 0f32;
                for kk in k0..k0 + kt {
                    let (a, x) = (a_t[kk * m + i], bm[kk * n + j]);
                    exact += f64::from(a) * f64::from(x);
                    abs += f64::from(a.abs()) * f64::from(x.abs());
                    partial += a * x;
                }
                fp32_group = if k0 == 0 { partial } else { fp32_group + partial };
            }
            let got = c[i * n + j];
            assert!((f64::from(got) - exact).abs() <= 2.0 * k as f64 * eps32 * abs, "({i}, {j}): {got} vs {exact}");
            // The PE sums each K sub-tile in ascending k and PSUM adds the sub-tiles: fp32
            // semantics with one rounding per operation, reproducible bit for bit.
            assert_eq!(got.to_bits(), fp32_group.to_bits(), "({i}, {j})");
        }
    }
}

#[test]
fn double_row_packs_two_contraction_rows_per_partition() {
    // K = 2 x 3 rows on 3 partitions, M = 2, N = 4: element (p, j, f) is row j * 3 + p.
    let mut b = Builder::new(Target::Trn2);
    let c = b.tensor("c", &[2, 4], DType::Fp32, HbmRole::Output);
    let w: Vec<f32> = (0..12).map(|i| i as f32 - 5.0).collect(); // stationary [3, 2, 2]
    let x: Vec<f32> = (0..24).map(|i| (i % 7) as f32 * 0.5).collect(); // moving [3, 2, 4]
    let wt = b.tensor("w", &[3, 4], DType::Fp32, HbmRole::Input);
    let xt = b.tensor("x", &[3, 8], DType::Fp32, HbmRole::Input);
    let loaded = b.sem("loaded");
    let done = b.sem("done");
    let copied = b.sem("copied");
    b.push(Engine::Dma(0), dma(sbuf(DType::Fp8e4m3, 0, 3, 0, 4), hbm(DType::Fp32, wt, 3, 4, 4)), &[], Some(loaded));
    b.push(Engine::Dma(1), dma(sbuf(DType::Fp8e4m3, 0, 3, 64, 8), hbm(DType::Fp32, xt, 3, 8, 8)), &[], Some(loaded));
    let pe = |src| Op::LoadStationary {
        src,
        perf_mode: PerfMode::DoubleRow,
        tile_position: TilePosition::default(),
        tile_size: TileSize::default(),
    };
    b.push(Engine::Pe, pe(sbuf(DType::Fp8e4m3, 0, 3, 0, 4)), &[(loaded, 2)], None);
    let mv = Op::MultiplyMoving {
        dst: psum(2, 0, 4),
        src: sbuf(DType::Fp8e4m3, 0, 3, 64, 8),
        acc: Acc::START | Acc::STOP,
        perf_mode: PerfMode::DoubleRow,
        tile_position: TilePosition::default(),
        tile_size: TileSize::default(),
    };
    b.push(Engine::Pe, mv, &[], Some(done));
    b.push(
        Engine::Dve,
        Op::TensorCopy { dst: sbuf(DType::Fp32, 0, 2, 128, 4), src: psum(2, 0, 4) },
        &[(done, 1)],
        Some(copied),
    );
    b.push(Engine::Dma(2), dma(hbm(DType::Fp32, c, 2, 4, 4), sbuf(DType::Fp32, 0, 2, 128, 4)), &[(copied, 1)], None);
    let mut s = Simulator::new(&b.program);
    s.write_hbm_f32("w", &w).unwrap();
    s.write_hbm_f32("x", &x).unwrap();
    s.run().unwrap();
    let got = s.read_hbm_f32("c").unwrap();
    let wq = |p: usize, j: usize, f: usize| DType::Fp8e4m3.round_trip(w[p * 4 + j * 2 + f]);
    let xq = |p: usize, j: usize, f: usize| DType::Fp8e4m3.round_trip(x[p * 8 + j * 4 + f]);
    for i in 0..2 {
        for col in 0..4 {
            let want: f32 =
                (0..2).flat_map(|j| (0..3).map(move |p| (p, j))).map(|(p, j)| wq(p, j, i) * xq(p, j, col)).sum();
            assert_eq!(got[i * 4 + col], want, "({i}, {col})");
        }
    }
    // trn1 has no double_row.
    let mut p = b.program.clone();
    p.target = Target::Trn1;
    assert!(matches!(Simulator::new(&p).run(), Err(SimError::Unsupported { .. })));
}

/// A program that loads a 4x4 stationary and runs the given matmul flags, then the extra
/// instructions `more` appends.
fn matmul_program(flags: &[Acc], more: impl FnOnce(&mut Builder)) -> Builder {
    let mut b = Builder::new(Target::Trn2);
    b.push(Engine::Pool, Op::Memset { dst: sbuf(DType::Bf16, 0, 4, 0, 8), value: 1.0 }, &[], None);
    let ready = b.sem("ready");
    b.program.streams[Engine::Pool.index()][0].signal = Some(ready);
    b.push(Engine::Pe, ls(sbuf(DType::Bf16, 0, 4, 0, 4)), &[(ready, 1)], None);
    for f in flags {
        b.push(Engine::Pe, mm(psum(4, 0, 4), sbuf(DType::Bf16, 0, 4, 8, 4), *f), &[], None);
    }
    more(&mut b);
    b
}

#[test]
fn accumulate_without_start_is_an_error() {
    for flags in [vec![Acc::ACCU], vec![Acc::STOP], vec![Acc::START | Acc::STOP, Acc::ACCU | Acc::STOP]] {
        let b = matmul_program(&flags, |_| {});
        let err = Simulator::new(&b.program).run().unwrap_err();
        match err {
            SimError::AccumulateWithoutStart { at, partition, byte, .. } => {
                assert_eq!((at.engine, at.index), (Engine::Pe, flags.len()), "{flags:?}");
                assert_eq!((partition, byte), (0, 0));
            }
            other => panic!("{flags:?}: {other}"),
        }
    }
    // START, ACCU, STOP is fine.
    let b = matmul_program(&[Acc::START, Acc::ACCU, Acc::STOP], |_| {});
    Simulator::new(&b.program).run().unwrap();
}

#[test]
fn reading_an_open_group_is_an_error() {
    let b = matmul_program(&[Acc::START, Acc::ACCU], |b| {
        let sem = b.sem("mm");
        let pe = &mut b.program.streams[Engine::Pe.index()];
        if let Some(last) = pe.last_mut() {
            last.signal = Some(sem);
        }
        b.push(
            Engine::Act,
            Op::TensorCopy { dst: sbuf(DType::Fp32, 0, 4, 64, 4), src: psum(4, 0, 4) },
            &[(sem, 1)],
            None,
        );
    });
    let err = Simulator::new(&b.program).run().unwrap_err();
    assert!(
        matches!(err, SimError::ReadOpenGroup { at, partition: 0, byte: 0 } if at.engine == Engine::Act && at.index == 0),
        "{err}"
    );
    // After a STOP the same read succeeds and sees 3 x (4 x 1.0 x 1.0).
    let b = matmul_program(&[Acc::START, Acc::ACCU, Acc::ACCU | Acc::STOP], |b| {
        let sem = b.sem("mm");
        if let Some(last) = b.program.streams[Engine::Pe.index()].last_mut() {
            last.signal = Some(sem);
        }
        let out = b.tensor("out", &[4, 4], DType::Fp32, HbmRole::Output);
        let copied = b.sem("copied");
        b.push(
            Engine::Act,
            Op::TensorCopy { dst: sbuf(DType::Fp32, 0, 4, 64, 4), src: psum(4, 0, 4) },
            &[(sem, 1)],
            Some(copied),
        );
        b.push(
            Engine::Dma(0),
            dma(hbm(DType::Fp32, out, 4, 4, 4), sbuf(DType::Fp32, 0, 4, 64, 4)),
            &[(copied, 1)],
            None,
        );
    });
    let mut s = Simulator::new(&b.program);
    s.run().unwrap();
    assert_eq!(s.read_hbm_f32("out").unwrap(), vec![12.0; 16]);
}

#[test]
fn fresh_on_chip_memory_reads_as_nan() {
    let mut b = Builder::new(Target::Trn3);
    let out = b.tensor("out", &[3, 8], DType::Fp32, HbmRole::Output);
    let sems: Vec<_> = (0..3).map(|i| b.sem(&format!("s{i}"))).collect();
    for (row, dtype) in [DType::Fp32, DType::Bf16, DType::Fp8e5m2].into_iter().enumerate() {
        let src = sbuf(dtype, 0, 1, 256 * 1024 - 64, 8);
        b.push(
            Engine::Dma(row as u8),
            dma(hbm(DType::Fp32, out + row as u64 * 32, 1, 8, 8), src),
            &[],
            Some(sems[row]),
        );
    }
    b.push(
        Engine::Dve,
        Op::TensorCopy { dst: sbuf(DType::Fp32, 0, 128, 0, 512), src: psum(128, 14336, 512) },
        &[],
        None,
    );
    let mut s = Simulator::new(&b.program);
    let stats = s.run().unwrap();
    assert!(s.read_hbm_f32("out").unwrap().iter().all(|v| v.is_nan()));
    assert_eq!(stats.hbm_write_bytes, 3 * 32);
    // HBM starts zeroed.
    assert_eq!(Simulator::new(&b.program).read_hbm_tensor("out").unwrap(), vec![0u8; 96]);
}

#[test]
fn out_of_range_access_patterns_are_errors() {
    let cases = [
        sbuf(DType::Fp32, 120, 16, 0, 4),           // partitions 120..136
        sbuf(DType::Fp32, 0, 1, 192 * 1024 - 8, 4), // past trn1's SBUF
        HwAp::on_chip(Memory::Sbuf, DType::Bf16, 0, 1, 0, vec![Dim::new(-1, 2)]), // before byte 0
        HwAp::on_chip(Memory::Psum, DType::Fp32, 0, 1, 16380, vec![Dim::new(1, 2)]), // past the 8 banks
        HwAp::on_chip(Memory::Sbuf, DType::Fp32, 0, 1, 0, vec![Dim::new(i64::MAX, 3)]), // overflowing stride
    ];
    for (i, bad) in cases.into_iter().enumerate() {
        let mut b = Builder::new(Target::Trn1);
        let x = b.tensor("x", &[4, 4], DType::Fp32, HbmRole::Input);
        let src = hbm(DType::Fp32, x, 1, 4, bad.free_elems().min(4) as u32);
        let engine = if bad.memory == Memory::Psum { Engine::Act } else { Engine::Dma(0) };
        let op = if bad.memory == Memory::Psum {
            Op::Memset { dst: bad, value: 0.0 }
        } else {
            Op::DmaCopy { dst: bad, src, cast: CastMode::Rne }
        };
        b.push(engine, op, &[], None);
        let err = Simulator::new(&b.program).run().unwrap_err();
        assert!(matches!(err, SimError::OutOfRange { .. }), "case {i}: {err}");
    }
    // HBM beyond hbm_size.
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[4, 4], DType::Fp32, HbmRole::Input);
    b.push(Engine::Dma(0), dma(sbuf(DType::Fp32, 0, 2, 0, 4), hbm(DType::Fp32, x + 40, 2, 4, 4)), &[], None);
    let err = Simulator::new(&b.program).run().unwrap_err();
    assert!(matches!(err, SimError::OutOfRange { memory: Memory::Hbm, .. }), "{err}");
    assert!(err.to_string().contains("dma0[0]"), "{err}");
}

#[test]
fn deadlock_names_the_stuck_streams() {
    let mut b = Builder::new(Target::Trn2);
    let (s0, s1) = (b.sem("a"), b.sem("b"));
    b.push(Engine::Pool, Op::Memset { dst: sbuf(DType::Fp32, 0, 1, 0, 1), value: 0.0 }, &[], None);
    b.push(Engine::Act, Op::Memset { dst: sbuf(DType::Fp32, 0, 1, 4, 1), value: 0.0 }, &[(s0, 1)], Some(s1));
    b.push(Engine::Dve, Op::Memset { dst: sbuf(DType::Fp32, 0, 1, 8, 1), value: 0.0 }, &[], None);
    b.push(Engine::Dve, Op::Memset { dst: sbuf(DType::Fp32, 0, 1, 12, 1), value: 0.0 }, &[(s1, 1)], Some(s0));
    let err = Simulator::new(&b.program).run().unwrap_err();
    let SimError::Deadlock { stuck } = &err else { panic!("{err}") };
    let at: Vec<String> = stuck.iter().map(|s| s.at.to_string()).collect();
    assert_eq!(at, vec!["act[0]", "dve[1]"]);
    assert_eq!(err.to_string(), "deadlock: act[0] waits for s0 >= 1 (reached 0), dve[1] waits for s1 >= 1 (reached 0)");
}

#[test]
fn unknown_semaphores_and_wrong_engines_are_errors() {
    let mut b = Builder::new(Target::Trn2);
    b.push(Engine::Act, Op::Memset { dst: sbuf(DType::Fp32, 0, 1, 0, 1), value: 0.0 }, &[(bir::SemId(3), 1)], None);
    assert!(matches!(Simulator::new(&b.program).run(), Err(SimError::UnknownSemaphore { .. })));
    let mut b = Builder::new(Target::Trn2);
    b.push(Engine::Act, dma(sbuf(DType::Fp32, 0, 1, 0, 1), sbuf(DType::Fp32, 0, 1, 4, 1)), &[], None);
    assert!(matches!(Simulator::new(&b.program).run(), Err(SimError::WrongEngine { .. })));
    let mut b = Builder::new(Target::Trn2);
    b.push(Engine::Pe, mm(psum(1, 0, 1), sbuf(DType::Fp32, 0, 1, 0, 1), Acc::START), &[], None);
    assert!(matches!(Simulator::new(&b.program).run(), Err(SimError::NoStationary { .. })));
    let mut b = Builder::new(Target::Trn2);
    b.push(Engine::Pe, ls(sbuf(DType::Fp32, 0, 1, 0, 129)), &[], None);
    assert!(matches!(Simulator::new(&b.program).run(), Err(SimError::MatmulShape { .. })));
    let mut b = Builder::new(Target::Trn2);
    let x = b.tensor("x", &[4], DType::Fp32, HbmRole::Input);
    b.push(Engine::Pool, Op::Memset { dst: hbm(DType::Fp32, x, 1, 4, 4), value: 0.0 }, &[], None);
    assert!(matches!(Simulator::new(&b.program).run(), Err(SimError::BadOperand { .. })));
    // Zero strides can describe enormous accesses inside a few bytes: a limit, not a hang.
    let mut b = Builder::new(Target::Trn2);
    let huge = HwAp::on_chip(Memory::Sbuf, DType::Fp32, 0, 128, 0, vec![Dim::new(0, u32::MAX), Dim::new(0, 4)]);
    b.push(Engine::Act, Op::Memset { dst: huge, value: 0.0 }, &[], None);
    let err = Simulator::new(&b.program).run().unwrap_err();
    assert!(matches!(err, SimError::OutOfRange { .. }) && err.to_string().contains("limit"), "{err}");
}

#[test]
fn tensor_io_errors() {
    let mut b = Builder::new(Target::Trn2);
    b.tensor("x", &[2, 3], DType::Bf16, HbmRole::Input);
    let mut s = Simulator::new(&b.program);
    assert!(matches!(s.write_hbm_f32("nope", &[]), Err(SimError::UnknownTensor { .. })));
    assert!(matches!(s.write_hbm_tensor("x", &[0; 11]), Err(SimError::TensorSize { expected: 12, got: 11, .. })));
    assert!(matches!(s.write_hbm_f32("x", &[0.0; 5]), Err(SimError::TensorSize { expected: 6, got: 5, .. })));
    s.write_hbm_tensor("x", &[0x80, 0x3f, 0, 0x40, 0, 0, 0, 0, 0, 0, 0xc0, 0x7f]).unwrap();
    let v = s.read_hbm_f32("x").unwrap();
    assert_eq!(&v[..2], &[1.0, 2.0]);
    assert!(v[5].is_nan());
    let mut p = b.program.clone();
    p.hbm[0].shape = vec![u64::MAX, 2];
    assert!(matches!(Simulator::new(&p).read_hbm_tensor("x"), Err(SimError::TensorOutsideHbm { .. })));
    p.hbm_size = u64::MAX;
    assert!(matches!(Simulator::new(&p).run(), Err(SimError::HbmTooLarge { .. })));
}

#[test]
fn memset_and_psum_writes_close_groups() {
    // A memset over an open group closes it: a later read is fine.
    let b = matmul_program(&[Acc::START], |b| {
        let sem = b.sem("mm");
        if let Some(last) = b.program.streams[Engine::Pe.index()].last_mut() {
            last.signal = Some(sem);
        }
        let cleared = b.sem("cleared");
        b.push(Engine::Pool, Op::Memset { dst: psum(4, 0, 4), value: -1.5 }, &[(sem, 1)], Some(cleared));
        b.push(
            Engine::Act,
            Op::TensorCopy { dst: sbuf(DType::Bf16, 0, 4, 64, 4), src: psum(4, 0, 4) },
            &[(cleared, 1)],
            None,
        );
    });
    Simulator::new(&b.program).run().unwrap();
}

#[test]
fn pe_results_of_the_wrong_shape_are_errors() {
    // Stationary [K=4, M=2], moving [K=4, N=3]: the product is [2, 3], not [3, 3].
    let mut b = Builder::new(Target::Trn2);
    b.push(Engine::Pe, ls(sbuf(DType::Fp32, 0, 4, 0, 2)), &[], None);
    b.push(Engine::Pe, mm(psum(3, 0, 3), sbuf(DType::Fp32, 0, 4, 64, 3), Acc::START | Acc::STOP), &[], None);
    let err = Simulator::new(&b.program).run().unwrap_err();
    assert_eq!(err.to_string(), "pe[1]: result has 3 partitions x 3 elements but the product is [M=2, N=3]");
    // The transpose of [4, 2] is [2, 4], not [4, 2].
    let mut b = Builder::new(Target::Trn2);
    b.push(Engine::Pe, Op::Transpose { dst: psum(4, 0, 2), src: sbuf(DType::Fp32, 0, 4, 0, 2) }, &[], None);
    let err = Simulator::new(&b.program).run().unwrap_err();
    assert_eq!(err.to_string(), "pe[0]: result has 4 partitions x 2 elements but the transpose of [4, 2] is [2, 4]");
}

/// The simulator keeps decoded PE operands by access pattern; a DMA that rewrites the SBUF
/// bytes of a stationary or moving operand must drop them. Two matmuls read the same SBUF
/// places, the second after both operands were reloaded with other values: its product must
/// be the new one.
#[test]
fn rewritten_operands_are_decoded_again() {
    let (k, m, n) = (4u32, 4u32, 4u32);
    let mut b = Builder::new(Target::Trn2);
    let w1 = b.tensor("w1", &[4, 4], DType::Fp32, HbmRole::Input);
    let w2 = b.tensor("w2", &[4, 4], DType::Fp32, HbmRole::Input);
    let x1 = b.tensor("x1", &[4, 4], DType::Fp32, HbmRole::Input);
    let x2 = b.tensor("x2", &[4, 4], DType::Fp32, HbmRole::Input);
    let c1 = b.tensor("c1", &[4, 4], DType::Fp32, HbmRole::Output);
    let c2 = b.tensor("c2", &[4, 4], DType::Fp32, HbmRole::Output);
    let (loaded, first, reloaded, second, copied) =
        (b.sem("loaded"), b.sem("first"), b.sem("reloaded"), b.sem("second"), b.sem("copied"));
    let (w, x) = (sbuf(DType::Fp32, 0, k, 0, m), sbuf(DType::Fp32, 0, k, 64, n));
    let from = |t: u64| hbm(DType::Fp32, t, 4, 4, 4);
    b.push(Engine::Dma(0), dma(w.clone(), from(w1)), &[], Some(loaded));
    b.push(Engine::Dma(0), dma(x.clone(), from(x1)), &[], Some(loaded));
    b.push(Engine::Pe, ls(w.clone()), &[(loaded, 2)], None);
    b.push(Engine::Pe, mm(psum(m, 0, n), x.clone(), Acc::START | Acc::STOP), &[], Some(first));
    b.push(Engine::Dma(1), dma(w.clone(), from(w2)), &[(first, 1)], Some(reloaded));
    b.push(Engine::Dma(1), dma(x.clone(), from(x2)), &[], Some(reloaded));
    b.push(Engine::Pe, ls(w), &[(reloaded, 2)], None);
    b.push(Engine::Pe, mm(psum(m, 2048, n), x, Acc::START | Acc::STOP), &[], Some(second));
    for (i, (bank, out)) in [(0u64, c1), (2048, c2)].into_iter().enumerate() {
        let staged = sbuf(DType::Fp32, 0, m, 128 + 64 * i as u64, n);
        b.push(
            Engine::Act,
            Op::TensorCopy { dst: staged.clone(), src: psum(m, bank, n) },
            &[(second, 1)],
            Some(copied),
        );
        b.push(Engine::Dma(2), dma(hbm(DType::Fp32, out, 4, 4, 4), staged), &[(copied, i as u32 + 1)], None);
    }
    bir::verify_program(&b.program).unwrap();
    let vals = |seed: u64| (0..16).map(|i| (value(seed + i) * 4.0).round()).collect::<Vec<f32>>();
    let (wv1, wv2, xv1, xv2) = (vals(0), vals(100), vals(200), vals(300));
    let mut s = Simulator::new(&b.program);
    for (name, v) in [("w1", &wv1), ("w2", &wv2), ("x1", &xv1), ("x2", &xv2)] {
        s.write_hbm_f32(name, v).unwrap();
    }
    let stats = s.run().unwrap();
    assert!(stats.races.is_empty(), "{:?}", stats.races);
    // C = W^T X with W [K, M] and X [K, N]: small integers, so exact.
    let product = |w: &[f32], x: &[f32]| {
        let mut c = vec![0f32; 16];
        for i in 0..4 {
            for j in 0..4 {
                c[i * 4 + j] = (0..4).map(|kk| w[kk * 4 + i] * x[kk * 4 + j]).sum();
            }
        }
        c
    };
    assert_eq!(s.read_hbm_f32("c1").unwrap(), product(&wv1, &xv1));
    assert_eq!(s.read_hbm_f32("c2").unwrap(), product(&wv2, &xv2));
}
