//! Tests of loops in the `.bir` text: round trips, the unrolled form unchanged, and errors.

use penguin::Target;
use proptest::prelude::*;

use super::super::{parse, parse_looped, parse_looped_with_source_map, print_looped, Line, LoopLine};
use crate::looped::fixture::dma_copy;
use crate::looped::{param_count, Item, Loop, LoopedProgram};
use crate::program::{BirInst, Engine, Op, Program, SemId};

/// A copy to SBUF bytes `off` from partition `part`, from HBM bytes `1024 + off`, after s0
/// reaches `wait`.
fn copy(off: u64, part: u32, wait: u64) -> BirInst {
    dma_copy(part, off, 1024 + off, Some(wait))
}

fn looped() -> LoopedProgram {
    let mut p = Program::new("k", Target::Trn2);
    p.semaphores = vec!["a".into(), "b".into()];
    p.hbm_size = 1 << 20;
    p.sbuf_peak_bytes = 4096;
    let mut lp = LoopedProgram::from_program(&p);
    let inner = Loop { trips: 3, body: vec![Item::Inst(copy(0, 0, 1))], step: vec![32, 32, 32, 0, 1] };
    let outer = Loop {
        trips: 2,
        body: vec![Item::Inst(copy(8, 64, 0)), Item::Loop(inner)],
        step: vec![0, 0, 1000, 0, 0, 96, 0, -96, 0, 3],
    };
    lp.streams[Engine::Dma(0).index()] = vec![Item::Inst(copy(4, 0, 0)), Item::Loop(outer)];
    lp
}

const TEXT: &str = "\
program k target=trn2 hbm_size=1048576 sbuf_peak=4096
sem s0 \"a\"
sem s1 \"b\"
stream dma0:
  0: dma_copy cast=rne dst=sbuf.fp32[p0:4:1 @4 [1, 8]] src=hbm.fp32[p0:4:8 @1028 [1, 8]] wait(s0>=0) signal(s1)
  loop i0 x2 {
    1: dma_copy cast=rne dst=sbuf.fp32[p64:4:1 @8 [1, 8]] src=hbm.fp32[p0:4:8 @1032+1000*i0 [1, 8]] wait(s0>=0) signal(s1)
    loop i1 x3 {
      2: dma_copy cast=rne dst=sbuf.fp32[p0+32*i1:4:1 @0+96*i0+32*i1 [1, 8]] src=hbm.fp32[p0:4:8 @1024-96*i0+32*i1 [1, 8]] wait(s0>=1+3*i0+1*i1) signal(s1)
    }
  }
";

#[test]
fn loops_print_with_affine_terms_and_parse_back() {
    let lp = looped();
    assert_eq!(print_looped(&lp), TEXT);
    assert_eq!(parse_looped(TEXT).unwrap(), lp);
    // Hand-written variants: `+iD`, spaces before a term, terms in any order.
    let hand = TEXT.replace("+1*i1)", " +i1)").replace("@0+96*i0+32*i1", "@0+32*i1+96*i0");
    assert_eq!(parse_looped(&hand).unwrap(), lp);
    let (_, map) = parse_looped_with_source_map(TEXT).unwrap();
    assert_eq!(map.line_of(LoopLine::Open(Engine::Dma(0), 1, 0)), Some(6));
    assert_eq!(map.line_of(LoopLine::Close(Engine::Dma(0), 2, 1)), Some(10));
    // Unrolled instruction 5 is the second trip of i0's copy: line 7.
    assert_eq!(map.unrolled_line(&lp, Engine::Dma(0), 5), Some(7));
    assert_eq!(map.unrolled_line(&lp, Engine::Dma(0), 7), Some(9));
    assert_eq!(map.unrolled_line(&lp, Engine::Dma(0), 9), None);
    let full = map.unrolled(&lp);
    let lines: Vec<Option<usize>> =
        (0..10).map(|n| full.line_of(Line::Inst(crate::InstRef { engine: Engine::Dma(0), index: n }))).collect();
    let want = [5, 7, 9, 9, 9, 7, 9, 9, 9].map(Some);
    assert_eq!(lines[..9], want);
    assert_eq!(lines[9], None);
    assert_eq!(full.line_of(Line::Sem(SemId(1))), Some(3));
}

#[test]
fn the_expansion_is_the_text_unrolled() {
    let x = looped().expand().unwrap();
    let s = x.stream(Engine::Dma(0));
    assert_eq!(s.len(), 9);
    assert_eq!(s[1], copy(8, 64, 0).with_hbm_offset(1032));
    assert_eq!(s[5], copy(8, 64, 0).with_hbm_offset(2032));
    assert_eq!(s[8], copy(96 + 64, 64, 6).with_hbm_offset(1024 - 96 + 64));
}

impl BirInst {
    fn with_hbm_offset(mut self, off: u64) -> BirInst {
        if let Op::DmaCopy { src, .. } = &mut self.op {
            src.byte_offset = off;
        }
        self
    }
}

#[test]
fn a_program_without_loops_is_the_unrolled_text() {
    let text = include_str!("../../../../examples/gemm_4x16x8.bir");
    let p = parse(text).unwrap();
    let lp = parse_looped(text).unwrap();
    assert_eq!(lp, LoopedProgram::from_program(&p));
    assert_eq!(print_looped(&lp), p.to_string());
    // Defaults (sbuf_peak from the accesses) agree too.
    let bare = p.to_string().replacen(&format!(" sbuf_peak={}", p.sbuf_peak_bytes), "", 1);
    assert_eq!(parse_looped(&bare).unwrap().header.sbuf_peak_bytes, parse(&bare).unwrap().sbuf_peak_bytes);
    // A rolled lowering prints and parses back.
    let rolled = crate::roll(&p);
    assert_eq!(parse_looped(&print_looped(&rolled)).unwrap(), rolled);
}

#[test]
fn sbuf_peak_defaults_to_the_highest_byte_of_any_iteration() {
    let bare = TEXT.replace(" sbuf_peak=4096", "");
    // dst of the inner copy: offset up to 0 + 96 + 64, 8 fp32 elements.
    assert_eq!(parse_looped(&bare).unwrap().header.sbuf_peak_bytes, 160 + 32);
}

#[track_caller]
fn err(text: &str) -> String {
    parse_looped(text).unwrap_err().to_string()
}

#[test]
fn loop_syntax_errors_name_line_and_column() {
    // The loop lines and terms are read as in every looped text (see penguin's `loop_nest`
    // tests); here, how the `.bir` reader places them and what is its own.
    let head = "program k target=trn2\nsem s0 \"a\"\nstream dma0:\n";
    let inst = "dma_copy dst=sbuf.fp32[p0:4:1 @0 [1, 8]] src=hbm.fp32[p0:4:8 @0 [1, 8]]";
    let cases = [
        (format!("{head}  loop i0 x2 {{\n    {inst}\n"), "4:3: loop i0 is not closed (a `}` is missing)"),
        (format!("{head}  loop i0 x2 {{\n    {inst}\nstream dma1:\n"), "4:3: loop i0 is not closed (a `}` is missing)"),
        (
            format!("{head}  loop i0 x4294967295 {{\n  loop i1 x4294967295 {{\n    {inst}\n  }}\n  }}\n"),
            "4:3: the stream unrolls to 18446744065119617025 instructions, more than 2^48",
        ),
        (format!("{head}  }}\n"), "4:3: a `}` with no open loop"),
        (format!("{head}  loop i0 x2 {{\n  }}\n"), "5:3: loop i0 has an empty body"),
        (
            format!("{head}  loop i0 x2 {{\n    {}\n  }}\n", inst.replace("@0 [1", "@0+4*i1 [1")),
            "5:37: unknown loop index `i1`: the enclosing loop is i0",
        ),
        (
            format!("{head}    {}\n", inst.replace("@0 [1", "@0+4*i0 [1")),
            "4:37: unknown loop index `i0`: no loop encloses this instruction",
        ),
        (
            format!("{head}  loop i0 x2 {{\n    {}\n  }}\n", inst.replace("p0:4:1", "p0:4+1*i0:1")),
            "5:32: a loop index term (`+1*i0`) may only follow a start partition, a byte offset or a wait value",
        ),
        (
            format!("{head}  loop i0 x2 {{\n    7: {inst}\n  }}\n"),
            "5:5: instruction index 7 does not match its place in the stream (0)",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(err(&text), want, "{text}");
    }
    // Header errors are the unrolled parser's, on the same lines.
    assert_eq!(
        err(&format!("{head}  loop i0 x2 {{\n    {inst}\n  }}\nsem s5 \"b\"\n")),
        "7:5: expected `s1` (semaphores are numbered in order from s0), found `s5`"
    );
    assert_eq!(
        err("program k target=trn2\n  loop i0 x2 {\n"),
        "2:3: expected `hbm`, `sem` or `stream ENGINE:` (instructions go in a stream section), found `loop`"
    );
}

/// Random looped streams: instructions of the text format's strategy inside random loops.
fn items(depth: u32) -> BoxedStrategy<Vec<Item>> {
    let leaf = super::super::tests::inst().prop_map(Item::Inst);
    let item = if depth == 0 {
        leaf.boxed()
    } else {
        let nested = (items(depth - 1), 1u32..5, any::<u64>()).prop_map(|(body, trips, seed)| {
            let n = param_count(&body);
            // Steps of any size, from small strides to the extremes of i64.
            let step = (0..n)
                .map(|q| {
                    let x = seed.rotate_left(q as u32 * 7) as i64;
                    match q % 4 {
                        0 => x % 1000,
                        1 => 0,
                        2 => x,
                        _ => -(x % 50),
                    }
                })
                .collect();
            Item::Loop(Loop { trips, body, step })
        });
        prop_oneof![leaf, nested].boxed()
    };
    proptest::collection::vec(item, 1..4).boxed()
}

proptest! {
    #[test]
    fn every_looped_program_round_trips_through_text(
        streams in proptest::collection::vec((0usize..crate::NUM_ENGINES, items(2)), 0..3),
    ) {
        let mut p = Program::new("k", Target::Trn3);
        p.semaphores = vec!["x".into()];
        let mut lp = LoopedProgram::from_program(&p);
        for (e, s) in streams {
            lp.streams[e] = s;
        }
        let text = print_looped(&lp);
        let back = parse_looped(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&back, &lp, "{}", text);
        prop_assert_eq!(print_looped(&back), text);
    }
}
