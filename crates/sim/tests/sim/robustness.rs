//! Property test: no program, however malformed, makes the simulator panic.

use bir::{BirInst, Engine, HbmRole, HbmTensor, HwAp, Op, Program, SemId, Wait};
use penguin::{
    AluOp, CastMode, DType, Dim, EngineAccumulationType as Acc, Memory, PerfMode, SparsityPattern, Target,
    TilePosition, TileSize,
};
use proptest::prelude::*;
use sim::Simulator;

fn wild_i64() -> impl Strategy<Value = i64> {
    prop_oneof![4 => -8i64..=8, 1 => -5000i64..=5000, 1 => Just(i64::MAX), 1 => Just(i64::MIN)]
}

fn wild_u32(small: u32) -> impl Strategy<Value = u32> {
    prop_oneof![6 => 0..=small, 1 => Just(u32::MAX), 1 => 0u32..=600]
}

fn ap() -> impl Strategy<Value = HwAp> {
    (
        prop::sample::select(vec![Memory::Hbm, Memory::Sbuf, Memory::Psum]),
        prop::sample::select(DType::ALL.to_vec()),
        prop_oneof![4 => 0u32..=4, 1 => 0u32..=200],
        wild_u32(5),
        wild_i64(),
        prop_oneof![4 => 0u64..=64, 1 => 0u64..=300_000, 1 => Just(u64::MAX)],
        prop::collection::vec((wild_i64(), wild_u32(5)), 0..=5),
    )
        .prop_map(|(memory, dtype, start_partition, num_partitions, partition_stride, byte_offset, dims)| HwAp {
            memory,
            dtype,
            start_partition,
            num_partitions,
            partition_stride,
            byte_offset,
            dims: dims.into_iter().map(|(s, n)| Dim::new(s, n)).collect(),
        })
}

fn op() -> impl Strategy<Value = Op> {
    let acc = (0u8..8).prop_map(Acc::from_bits_truncate);
    let mode = prop::sample::select(vec![PerfMode::None, PerfMode::DoubleRow, PerfMode::DoubleRowGen3]);
    let size = (0u32..=200, 0u32..=200).prop_map(|(rows, cols)| TileSize { rows, cols });
    prop_oneof![
        (ap(), mode.clone(), size.clone()).prop_map(|(src, perf_mode, tile_size)| Op::LoadStationary {
            src,
            perf_mode,
            tile_position: TilePosition::default(),
            tile_size
        }),
        (ap(), ap(), acc, mode, size).prop_map(|(dst, src, acc, perf_mode, tile_size)| Op::MultiplyMoving {
            dst,
            src,
            acc,
            perf_mode,
            tile_position: TilePosition::default(),
            tile_size
        }),
        (ap(), ap(), any::<bool>()).prop_map(|(dst, src, sat)| Op::DmaCopy {
            dst,
            src,
            cast: if sat { CastMode::Saturate } else { CastMode::Rne }
        }),
        (ap(), ap()).prop_map(|(dst, src)| Op::TensorCopy { dst, src }),
        (ap(), ap(), 0u32..6, 0u32..18).prop_map(|(src, tags, n, m)| Op::LoadStationarySparse {
            src,
            tags,
            pattern: SparsityPattern { n, m },
            tile_position: TilePosition::default(),
            tile_size: TileSize::default()
        }),
        (ap(), ap()).prop_map(|(dst, src)| Op::Transpose { dst, src }),
        (ap(), ap(), ap()).prop_map(|(dst, src0, src1)| Op::DmaFma { dst, src0, src1 }),
        (ap(), ap(), ap()).prop_map(|(dst, table, index)| Op::DmaGather { dst, table, index, skip: false }),
        (ap(), ap(), ap()).prop_map(|(table, src, index)| Op::DmaScatterAdd { table, src, index, skip: true }),
        (ap(), ap(), ap()).prop_map(|(table, src, index)| Op::DmaScatter { table, src, index, skip: false }),
        (ap(), ap(), ap(), prop::sample::select(vec![AluOp::Add, AluOp::Multiply, AluOp::Max]))
            .prop_map(|(dst, lhs, rhs, op)| Op::TensorTensor { op, dst, lhs, rhs }),
        (ap(), prop_oneof![Just(f64::NAN), Just(1e300), -3.0f64..3.0])
            .prop_map(|(dst, value)| Op::Memset { dst, value }),
    ]
}

/// An engine that can run the op (the fuzz mostly respects it, to reach the deeper checks).
fn legal_engine(op: &Op, pick: usize) -> Engine {
    let legal: Vec<Engine> = Engine::all().filter(|&e| op.engine_class().contains(e)).collect();
    legal.get(pick % legal.len().max(1)).copied().unwrap_or(Engine::Sp)
}

fn inst() -> impl Strategy<Value = (usize, BirInst)> {
    (
        prop_oneof![4 => Just(None), 1 => (0usize..bir::NUM_ENGINES).prop_map(Some)],
        0usize..48,
        op(),
        prop::collection::vec((0u32..4, 0u32..3), 0..=2),
        prop::option::of(0u32..4),
    )
        .prop_map(|(engine, pick, op, waits, signal)| {
            let engine = engine.unwrap_or_else(|| legal_engine(&op, pick).index());
            let waits = waits.into_iter().map(|(s, value)| Wait { sem: SemId(s), value: u64::from(value) }).collect();
            (engine, BirInst { op, waits, signal: signal.map(SemId), origin: None })
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn malformed_programs_are_errors_not_panics(
        insts in prop::collection::vec(inst(), 1..12),
        hbm_size in prop_oneof![Just(0u64), 0u64..4096],
        pe_first in any::<bool>(),
    ) {
        let mut p = Program::new("fuzz", Target::Trn1);
        p.semaphores = vec!["a".into(), "b".into(), "c".into()];
        p.hbm_size = hbm_size;
        p.hbm.push(HbmTensor { name: "t".into(), shape: vec![16], dtype: DType::Fp32, address: 0, role: HbmRole::Input });
        if pe_first {
            // Give matmuls a chance to get past the missing-stationary check.
            let src = HwAp::on_chip(Memory::Sbuf, DType::Bf16, 0, 4, 0, vec![Dim::new(1, 4)]);
            let ls = Op::LoadStationary { src, perf_mode: PerfMode::None, tile_position: TilePosition::default(), tile_size: TileSize::default() };
            p.streams[Engine::Pe.index()].push(BirInst { op: ls, waits: vec![], signal: None, origin: None });
        }
        for (engine, inst) in insts {
            p.streams[engine].push(inst);
        }
        let mut s = Simulator::new(&p);
        let _ = s.write_hbm_f32("t", &[1.5; 16]);
        let _ = s.run();
        let _ = s.read_hbm_tensor("t");
    }
}

#[test]
fn more_streams_than_engines_is_an_error() {
    let mut p = Program::new("fuzz", Target::Trn2);
    p.streams.push(Vec::new());
    assert!(matches!(Simulator::new(&p).run(), Err(sim::SimError::TooManyStreams { .. })));
    p.streams.truncate(3);
    Simulator::new(&p).run().unwrap();
}
