//! Tests of the `.bir` text format.

use proptest::prelude::*;

use super::*;
use penguin::text::lexer::MAX_EXTENT;
use penguin::{DType, InstId, Memory, Target};

use crate::program::{BirInst, Engine, HbmRole, HbmTensor, HwAp, Op, Program, SemId, Wait};

/// The hand-written GEMM of `examples/`.
const GEMM: &str = include_str!("../../../../examples/gemm_4x16x8.pir");

fn lowered() -> Program {
    let f = penguin::parse::parse(GEMM).unwrap();
    crate::lower(penguin::verify(&f).unwrap(), Target::Trn2).unwrap()
}

#[test]
fn lowered_programs_round_trip() {
    let p = lowered();
    let text = p.to_string();
    assert!(
        text.contains("  1: multiply_moving perf=none pos=0,0 size=128,128 acc=start dst=psum.fp32[p0:4:1 @0 [1, 8]]"),
        "{text}"
    );
    assert!(text.contains("wait(s5>=1, s7>=1) origin(i4)"), "{text}");
    assert_eq!(parse(&text).unwrap(), p, "{text}");
    crate::verify_program(&parse(&text).unwrap()).unwrap();
}

#[test]
fn sizes_default_from_the_program() {
    let p = lowered();
    let text = p.to_string().replacen(&format!(" hbm_size={} sbuf_peak={}", p.hbm_size, p.sbuf_peak_bytes), "", 1);
    let q = parse(&text).unwrap();
    assert_eq!(q.hbm_size, 768 + 4 * 8 * 4);
    assert_eq!(q.sbuf_peak_bytes, 48 + 32);
}

#[test]
fn verifier_messages_print_beside_their_instruction() {
    let mut p = lowered();
    p.streams[Engine::Pe.index()].remove(0);
    let Err(crate::BirError::Verify(errors)) = crate::verify_program(&p) else { panic!("expected errors") };
    let text = print_with_errors(&p, &errors);
    assert!(text.contains("origin(i4)\n; error: no LoadStationary before it\n"), "{text}");
}

#[track_caller]
fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn errors_say_where_and_what_was_expected() {
    assert_eq!(
        err("hbm \"a\" fp32 [1] @0"),
        "1:1: expected `program NAME target=TARGET` as the first line, found `hbm`"
    );
    assert_eq!(err("program k"), "1:10: expected `target=trn1|trn2|trn3`, found end of line");
    assert_eq!(err("program k target=trn7"), "1:18: unknown target `trn7` (expected trn1, trn2 or trn3)");
    let p = "program k target=trn2\n";
    assert_eq!(
        err(&format!("{p}memset dst=sbuf.fp32[p0:1:1 @0] value=0")),
        "2:1: expected `hbm`, `sem` or `stream ENGINE:` (instructions go in a stream section), found `memset`"
    );
    assert_eq!(
        err(&format!("{p}stream gpu:")),
        "2:8: expected an engine (pe, act, dve, pool, sp or dma0..dma15), found `gpu`"
    );
    assert_eq!(
        err(&format!("{p}sem s1 \"x\"")),
        "2:5: expected `s0` (semaphores are numbered in order from s0), found `s1`"
    );
    let s = format!("{p}stream dve:\n");
    assert_eq!(
        err(&format!("{s}  1: memset value=0 dst=sbuf.fp32[p0:1:1 @0]")),
        "3:3: instruction index 1 does not match its place in the stream (0)"
    );
    assert_eq!(err(&format!("{s}  memset value=0 dst=sbuf.fp32[p0:1:1 0]")), "3:39: expected `@`, found `0`");
    assert_eq!(
        err(&format!("{s}  memset value=zero dst=sbuf.fp32[p0:1:1 @0]")),
        "3:10: memset value `zero` is not a number"
    );
    assert_eq!(
        err(&format!("{s}  memset value=0 dst=sbuf.fp32[p0:1:1 @0] wait(s0>=1) wait(s0>=2)")),
        "3:55: a second `wait(...)`"
    );
    assert_eq!(err(&format!("{s}  jump")), "3:3: unknown BIR op `jump`");
    assert_eq!(err(&format!("{s}stream dve:")), "3:8: a second `stream dve:` section (the first is line 2)");
}

#[test]
fn a_wait_of_a_million_conditions_parses_in_linear_time() {
    let mut text = String::from(
        "program k target=trn2\nsem s0 \"x\"\nstream dve:\n  memset value=0 dst=sbuf.fp32[p0:1:1 @0] wait(s0>=0",
    );
    let count = 1_000_000u32;
    for i in 1..count {
        text.push_str(&format!(", s0>={i}"));
    }
    text.push(')');
    assert!(text.len() > 10_000_000);
    let p = parse(&text).unwrap();
    let waits = &p.stream(Engine::Dve)[0].waits;
    assert_eq!(waits.len(), count as usize);
    assert_eq!(waits.last(), Some(&Wait { sem: SemId(0), value: u64::from(count - 1) }));
    // The column of an error at the far end of the line is still exact.
    let bad = format!("{}, s0>=z)", &text[..text.len() - 1]);
    let col = bad.lines().nth(3).unwrap().len() - 1;
    assert_eq!(err(&bad), format!("4:{col}: expected a semaphore count, found `z`"));
}

fn ap() -> impl Strategy<Value = HwAp> {
    let memory = prop_oneof![Just(Memory::Hbm), Just(Memory::Sbuf), Just(Memory::Psum)];
    let dims = proptest::collection::vec(
        (-1000i64..1000, 0u32..600).prop_map(|(stride, num)| penguin::Dim { stride, num }),
        0..6,
    );
    (memory, proptest::sample::select(DType::ALL.to_vec()), 0u32..200, 0u32..200, -9i64..300, 0u64..=MAX_EXTENT, dims)
        .prop_map(|(memory, dtype, start_partition, num_partitions, partition_stride, byte_offset, dims)| HwAp {
            memory,
            dtype,
            start_partition,
            num_partitions,
            partition_stride,
            byte_offset,
            dims: dims.into(),
        })
}

fn op() -> impl Strategy<Value = Op> {
    use penguin::{AluOp, CastMode, EngineAccumulationType as Acc, PerfMode, TilePosition, TileSize};
    let perf = prop_oneof![Just(PerfMode::None), Just(PerfMode::DoubleRow), Just(PerfMode::DoubleRowGen3)];
    let pos = (0u32..300, 0u32..300).prop_map(|(row, col)| TilePosition { row, col });
    let size = (0u32..300, 0u32..300).prop_map(|(rows, cols)| TileSize { rows, cols });
    let cast = prop_oneof![Just(CastMode::Rne), Just(CastMode::Saturate)];
    let value = any::<f64>().prop_filter("not NaN", |v| !v.is_nan());
    let pattern = proptest::sample::select(penguin::SparsityPattern::SUPPORTED.to_vec());
    let tt = proptest::sample::select(vec![AluOp::Add, AluOp::Multiply, AluOp::Max]);
    let acc = (0u8..8).prop_map(Acc::from_bits_truncate);
    (0usize..11, [ap(), ap(), ap()], perf, pos, size, acc, cast, value, pattern, tt).prop_map(
        |(kind, [dst, src, third], perf_mode, tile_position, tile_size, acc, cast, value, pattern, op)| match kind {
            0 => Op::LoadStationary { src, perf_mode, tile_position, tile_size },
            1 => Op::LoadStationarySparse { src, tags: third, pattern, tile_position, tile_size },
            2 => Op::MultiplyMoving { dst, src, acc, perf_mode, tile_position, tile_size },
            3 => Op::Transpose { dst, src },
            4 => Op::DmaCopy { dst, src, cast },
            5 => Op::DmaFma { dst, src0: src, src1: third },
            6 => Op::DmaGather { dst, table: src, index: third, skip: false },
            7 => Op::DmaScatterAdd { table: dst, src, index: third, skip: true },
            8 => Op::TensorCopy { dst, src },
            9 => Op::TensorTensor { op, dst, lhs: src, rhs: third },
            _ => Op::Memset { dst, value },
        },
    )
}

pub(super) fn inst() -> impl Strategy<Value = BirInst> {
    let wait = (0u32..30, any::<u64>()).prop_map(|(s, value)| Wait { sem: SemId(s), value });
    (op(), proptest::collection::vec(wait, 0..3), proptest::option::of(0u32..30), proptest::option::of(any::<u32>()))
        .prop_map(|(op, waits, signal, origin)| BirInst {
            op,
            waits,
            signal: signal.map(SemId),
            origin: origin.map(InstId),
        })
}

prop_compose! {
    fn program()(
        name in "\\PC{0,10}",
        target in proptest::sample::select(Target::ALL.to_vec()),
        hbm in proptest::collection::vec(("\\PC{0,8}", proptest::sample::select(DType::ALL.to_vec()),
            proptest::collection::vec(0u64..4096, 0..3), 0u64..=1 << 40, 0usize..3), 0..4),
        hbm_size in any::<u64>(),
        sbuf_peak in any::<u64>(),
        semaphores in proptest::collection::vec("\\PC{0,6}", 0..4),
        streams in proptest::collection::vec((0usize..crate::NUM_ENGINES, inst()), 0..12),
    ) -> Program {
        let mut p = Program::new(name, target);
        for (name, dtype, shape, address, role) in hbm {
            if p.hbm.iter().all(|t| t.name != name) {
                let role = [HbmRole::Input, HbmRole::Output, HbmRole::Internal][role];
                p.hbm.push(HbmTensor { name, shape, dtype, address, role });
            }
        }
        p.hbm_size = hbm_size;
        p.sbuf_peak_bytes = sbuf_peak;
        p.semaphores = semaphores;
        for (e, i) in streams {
            p.streams[e].push(i);
        }
        p
    }
}

proptest! {
    #[test]
    fn every_program_round_trips_through_text(p in program()) {
        let text = p.to_string();
        let back = parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&back, &p, "{}", text);
        prop_assert_eq!(back.to_string(), text);
    }
}

#[test]
fn op_errors_point_at_the_part_they_name() {
    let s = "program k target=trn2\nstream dma0:\n";
    let copy = "dma_copy cast=rne dst=sbuf.fp32[p0:1:1 @0] src=hbm.fp32[p0:1:1 @0]";
    // An unknown key is placed at itself, even when another attribute's value spells it.
    assert_eq!(err(&format!("{s}{copy} rne=rne")), "3:68: dma_copy has no attribute `rne`");
    // A cast with a default is checked before the access patterns.
    assert_eq!(
        err(&format!("{s}dma_copy cast=bogus src=hbm.fp32[p0:1:1 @0]")),
        "3:10: unknown cast mode `bogus` (expected rne or saturate)"
    );
    assert_eq!(err(&format!("{s}dma_copy src=hbm.fp32[p0:1:1 @0]")), "3:1: dma_copy needs access pattern `dst=`");
    let pe = "program k target=trn2\nstream pe:\n";
    let mm = "multiply_moving dst=psum.fp32[p0:1:1 @0] src=sbuf.fp32[p0:1:1 @0]";
    // A malformed PE attribute is placed at its key, found without reading the message.
    assert_eq!(
        err(&format!("{pe}{mm} acc=start|foo")),
        "3:67: unknown accumulation flag `foo` (expected start, accu, stop)"
    );
    assert_eq!(err(&format!("{pe}{mm}")), "3:1: multiply_moving needs `acc=`");
    let unknown = mm.replacen("multiply_moving", "multiply_mover", 1);
    assert_eq!(err(&format!("{pe}{unknown} acc=start")), "3:1: unknown BIR op `multiply_mover`");
}
