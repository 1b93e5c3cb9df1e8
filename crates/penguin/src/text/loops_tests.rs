//! Tests of loops in the `.pir` text: round trips, the unrolled form unchanged, and errors.

use proptest::prelude::*;

use crate::looped::{param_count, Item, Loop, LoopedFunction, PirInst};
use crate::text::parse::{parse, tests::props};
use crate::text::{looped_lines, parse_looped, parse_looped_with_source_map, print_looped, LoopLine};
use crate::{
    whole_tile, CastMode, ComputeEngine, DType, Dep, DepKind, Dim, DmaCopyData, Entity, Function, InstData, InstId,
    Memory, MemsetData, TensorData, TensorId,
};

fn header() -> Function {
    let mut f = Function::new("fill");
    for (name, memory, address) in [("x", Memory::Sbuf, Some(0)), ("y", Memory::Hbm, None)] {
        let t = TensorData { name: name.into(), shape: vec![128, 512], dtype: DType::Fp32, memory, address };
        f.add_tensor(t).unwrap();
    }
    f
}

/// A tile of `t` at `offset`: 32 partitions from `part`, 64 elements each.
fn tile(f: &Function, t: u32, part: u32, offset: i64) -> crate::InstTile {
    let mut tile = whole_tile(TensorId(t), f.tensors.values().nth(t as usize).unwrap());
    tile.ap.start_partition = part;
    tile.ap.partitions.num = 32;
    tile.ap.offset = offset;
    tile.ap.free = vec![Dim::new(1, 64)].into();
    tile
}

fn memset(f: &Function, part: u32, offset: i64, deps: Vec<Dep>) -> Item<PirInst> {
    let data = InstData::Memset(MemsetData { engine: ComputeEngine::Pool, dst: tile(f, 0, part, offset), value: 0.0 });
    Item::Inst(PirInst { data, deps, loc: None })
}

fn dep(from: u32, kind: DepKind) -> Vec<Dep> {
    vec![Dep { from: InstId(from), kind }]
}

/// `i0 = memset; loop x4 { dma_copy; loop x2 { memset } }` with stepped offsets (one
/// negative), partitions and edges.
fn looped() -> LoopedFunction {
    let h = header();
    let copy = InstData::DmaCopy(DmaCopyData {
        dst: tile(&h, 0, 0, 64),
        src: tile(&h, 1, 0, 0),
        cast: CastMode::Rne,
        queue: None,
    });
    let inner = Loop { trips: 2, body: vec![memset(&h, 0, 1024, dep(1, DepKind::Raw))], step: vec![0, 32, 1] };
    let outer = Loop {
        trips: 4,
        body: vec![Item::Inst(PirInst { data: copy, deps: dep(0, DepKind::Waw), loc: None }), Item::Loop(inner)],
        step: vec![64, 0, 512, 0, 3, -128, 0, 3],
    };
    let body = vec![memset(&h, 0, 0, vec![]), Item::Loop(outer)];
    LoopedFunction { header: h, body }
}

const TEXT: &str = "\
kernel fill
tensor t0 \"x\" sbuf fp32 [128, 512] @0
tensor t1 \"y\" hbm fp32 [128, 512]
i0 = memset engine=pool value=0 dst=t0{p0[1, 32] +0 [1, 64]}
loop i0 x4 {
  i1 = dma_copy cast=rne dst=t0{p0[1, 32] +64+64*i0 [1, 64]} src=t1{p0[512, 32] +0+512*i0 [1, 64]} after(i0+3*i0 waw)
  loop i1 x2 {
    i2 = memset engine=pool value=0 dst=t0{p0+32*i1[1, 32] +1024-128*i0 [1, 64]} after(i1+3*i0+1*i1 raw)
  }
}
";

#[test]
fn loops_print_with_terms_and_parse_back() {
    let lf = looped();
    assert_eq!(print_looped(&lf), TEXT);
    assert_eq!(lf.to_string(), TEXT);
    assert_eq!(parse_looped(TEXT).unwrap(), lf);
    // Hand-written variants: `+iD`, spaces before a term, terms in any order, a comment.
    let hand = TEXT
        .replace("+1*i1 raw", " +i1 raw")
        .replace("i1+3*i0+1*i1", "i1+1*i1+3*i0")
        .replace("p0+32*i1[1, 32]", "p0 +32*i1 [1, 32]")
        .replace("x2 {", "x2 { ; inner");
    assert_eq!(parse_looped(&hand).unwrap(), lf, "{hand}");
    let (_, map) = parse_looped_with_source_map(TEXT).unwrap();
    assert_eq!(map.line_of(LoopLine::Plain(Entity::Function)), Some(1));
    assert_eq!(map.line_of(LoopLine::Plain(Entity::Tensor(TensorId(1)))), Some(3));
    assert_eq!(map.line_of(LoopLine::Open(1, 0)), Some(5));
    assert_eq!(map.line_of(LoopLine::Close(2, 1)), Some(9));
    assert_eq!(map.line_of(LoopLine::Close(1, 0)), Some(10));
    // Unrolled: i0, then 4 trips of (copy, memset, memset).
    let lines: Vec<Option<usize>> = (0..14).map(|n| map.unrolled_line(&lf, n)).collect();
    let mut want = vec![Some(4)];
    for _ in 0..4 {
        want.extend([Some(6), Some(8), Some(8)]);
    }
    want.push(None);
    assert_eq!(lines, want);
    let full = map.unrolled(&lf);
    assert_eq!(full.insts, want[..13].iter().map(|l| l.unwrap()).collect::<Vec<_>>());
    assert_eq!((full.kernel, full.tensors), (1, vec![2, 3]));
    let kinds: Vec<LoopLine> = looped_lines(&lf).into_iter().map(|(l, _)| l).collect();
    assert_eq!(
        kinds[3..],
        [
            LoopLine::Inst(0),
            LoopLine::Open(1, 0),
            LoopLine::Inst(1),
            LoopLine::Open(2, 1),
            LoopLine::Inst(2),
            LoopLine::Close(2, 1),
            LoopLine::Close(1, 0)
        ]
    );
}

#[test]
fn the_expansion_is_the_text_unrolled() {
    let f = looped().expand().unwrap();
    assert_eq!(f.insts.len(), 13);
    // Trip 2 of the outer loop (i0 = 2) starts at 1 + 2 * 3 = 7; its second memset is i1 = 1.
    let h = header();
    let InstData::DmaCopy(c) = &f.insts[7] else { panic!("{:?}", f.insts[7]) };
    assert_eq!((c.dst.ap.offset, c.src.ap.offset), (64 + 128, 1024));
    assert_eq!(f.deps[7], dep(6, DepKind::Waw));
    let Item::Inst(want) = memset(&h, 32, 1024 - 256, dep(1 + 6 + 1, DepKind::Raw)) else { unreachable!() };
    assert_eq!((&f.insts[9], &f.deps[9]), (&want.data, &want.deps));
}

#[test]
fn a_function_without_loops_is_the_unrolled_text() {
    let text = include_str!("../../../../examples/gemm_4x16x8.pir");
    let f = parse(text).unwrap();
    let lf = LoopedFunction::from_function(&f);
    assert_eq!(lf.to_string(), f.to_string());
    // The edges are computed as the unrolled parser computes them.
    assert_eq!(parse_looped(text).unwrap(), lf);
    assert_eq!(parse_looped(&f.to_string()).unwrap(), lf);
    // No edges where some would be computed: `after()` on the first line, as unrolled.
    let mut bare = f;
    bare.deps.iter_mut().for_each(Vec::clear);
    let lf = LoopedFunction::from_function(&bare);
    assert_eq!(lf.to_string(), bare.to_string());
    assert!(lf.to_string().contains("} after()\n"));
    assert_eq!(parse_looped(&bare.to_string()).unwrap(), lf);
}

#[test]
fn a_loop_without_any_edges_says_after() {
    let mut lf = looped();
    let Item::Loop(outer) = &mut lf.body[1] else { unreachable!() };
    let Item::Inst(copy) = &mut outer.body[0] else { unreachable!() };
    copy.deps.clear();
    let Item::Loop(inner) = &mut outer.body[1] else { unreachable!() };
    let Item::Inst(set) = &mut inner.body[0] else { unreachable!() };
    set.deps.clear();
    outer.step = vec![64, 0, 512, 0, -128, 0];
    inner.step = vec![0, 32];
    let text = lf.to_string();
    assert!(text.contains("i0 = memset engine=pool value=0 dst=t0{p0[1, 32] +0 [1, 64]} after()\n"), "{text}");
    assert_eq!(parse_looped(&text).unwrap(), lf);
}

#[track_caller]
fn err(text: &str) -> String {
    parse_looped(text).unwrap_err().to_string()
}

#[test]
fn loop_syntax_errors_name_line_and_column() {
    // The loop lines and terms are read as in every looped text (see `loop_nest`'s tests);
    // here, how the `.pir` reader places them and what is its own.
    let head = "kernel k\ntensor t0 \"x\" sbuf fp32 [128, 512] @0\n";
    let inst = "i0 = memset engine=pool value=0 dst=t0{p0[1, 32] +0 [1, 64]} after()";
    let body = |inner: &str| format!("{head}loop i0 x2 {{\n  {inner}\n}}\n");
    let cases = [
        (format!("{head}loop i0 x2 {{\n  {inst}\n"), "3:1: loop i0 is not closed (a `}` is missing)"),
        (
            format!("{head}loop i0 x4294967295 {{\nloop i1 x4294967295 {{\n  {inst}\n}}\n}}\n"),
            "3:1: the function unrolls to 18446744065119617025 instructions, more than 2^48",
        ),
        (format!("{head}}}\n"), "3:1: a `}` with no open loop"),
        (format!("{head}loop i0 x2 {{\n}}\n"), "4:1: loop i0 has an empty body"),
        (body(&inst.replace("+0 [", "+0+4*i1 [")), "4:54: unknown loop index `i1`: the enclosing loop is i0"),
        (
            format!("{head}{}\n", inst.replace("+0 [", "+0+4*i0 [")),
            "3:52: unknown loop index `i0`: no loop encloses this instruction",
        ),
        (
            body(&inst.replace("[1, 32]", "[1+1*i0, 32]")),
            "4:46: a loop index term (`+1*i0`) may only follow a start partition, an element offset, an \
             instruction id in `after(...)` or a queue hint",
        ),
        (
            body(&inst.replace("value=0", "value=0+2*i0")),
            "4:34: a loop index term (`+2*i0`) may only follow a start partition, an element offset, an \
             instruction id in `after(...)` or a queue hint",
        ),
        (
            body(&inst.replace("i0 =", "i7 =")),
            "4:3: instruction id i7 does not match its place in the unrolled program order (i0)",
        ),
        (
            format!("{head}{inst}\nloop i0 x3 {{\n  {}\n}}\ni6 = {}\n", inst.replace("i0 =", "i1 ="), &inst[5..]),
            "7:1: instruction id i6 does not match its place in the unrolled program order (i4)",
        ),
        (
            format!("{head}loop i0 x2 {{\n  {}\n}}\n", inst.replace(" after()", "")),
            "3:1: a function with loops lists its dependency edges, but no instruction has `after(...)` (write \
             `after()` on the first instruction if it has none)",
        ),
        (format!("{head}layout i0\n{inst}\n"), "3:1: a looped function has no `layout` line (its line order is the program order)"),
        (
            format!("{head}loop i0 x2 {{\ntensor t1 \"y\" hbm fp32 [4]\n{inst}\n}}\n"),
            "4:1: a `tensor` line inside loop i0 (close the loop first)",
        ),
        (format!("loop i0 x2 {{\n{head}"), "1:1: expected `kernel NAME` as the first line, found `loop`"),
        (format!("{head}bogus\n"), "3:1: expected a line starting with `kernel`, `debug_name`, `inputs`, `outputs`, `tensor`, `loop`, `}` or `iN =`, found `bogus`"),
    ];
    for (text, want) in cases {
        assert_eq!(err(&text), want, "{text}");
    }
    // Header errors are the unrolled parser's, on the same lines.
    assert_eq!(
        err(&format!("{head}loop i0 x2 {{\n  {inst}\n}}\ntensor t5 \"b\" hbm fp32 [4]\n")),
        "6:8: expected `t1` (tensors are numbered in order from t0), found `t5`"
    );
    // Instruction errors are the unrolled parser's too.
    assert_eq!(
        err(&body(&inst.replace("dst=t0", "dst=t9"))),
        "4:39: operand t9 names no tensor (declare `tensor t9` or state it as `t9:MEMORY:DTYPE{...}`)"
    );
}

#[test]
fn a_line_of_many_terms_parses_in_linear_time() {
    // Each term's column was counted from the line start, and each term compared with every
    // earlier one: quadratic, hours for this line. Linear, it takes a moment.
    let count = 200_000;
    let deps: Vec<String> = (0..count).map(|_| "i0+1*i0 raw".to_string()).collect();
    let text = format!(
        "kernel k\ntensor t0 \"x\" sbuf fp32 [128, 512] @0\ni0 = memset engine=pool value=0 \
         dst=t0{{p0[1, 32] +0 [1, 64]}}\nloop i0 x2 {{\n  i1 = memset engine=pool value=0 dst=t0{{p0[1, 32] +0 [1, 64]}} \
         after({})\n}}\n",
        deps.join(", ")
    );
    let lf = parse_looped(&text).unwrap();
    let Item::Loop(l) = &lf.body[1] else { unreachable!() };
    assert_eq!(l.step.len(), 2 + count);
    assert!(l.step[2..].iter().all(|&s| s == 1));
}

/// Random looped bodies: instructions of the text format's strategy inside random loops.
fn items(depth: u32) -> BoxedStrategy<Vec<Item<PirInst>>> {
    let deps = proptest::collection::vec(
        (0u32..40, proptest::sample::select(vec![DepKind::Raw, DepKind::War, DepKind::Waw]))
            .prop_map(|(from, kind)| Dep { from: InstId(from), kind }),
        0..3,
    );
    let leaf = (props::inst(), deps).prop_map(|(data, deps)| Item::Inst(PirInst { data, deps, loc: None }));
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
    fn every_looped_function_round_trips_through_text(f in props::function(), body in items(2)) {
        let mut lf = LoopedFunction::from_function(&f);
        lf.body = body;
        let text = print_looped(&lf);
        let back = parse_looped(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&back, &lf, "{}", text);
        prop_assert_eq!(print_looped(&back), text);
    }
}

#[test]
fn the_documented_example_parses_and_prints_back() {
    let doc: String = include_str!("loops.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .skip_while(|l| !l.contains("```text"))
        .skip(1)
        .take_while(|l| !l.contains("```"))
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
        .collect();
    let lf = parse_looped(&doc).unwrap();
    assert_eq!(lf.unrolled_len(), 13);
    assert_eq!(lf.to_string(), doc);
    assert_eq!(lf.expand().unwrap().insts.len(), 13);
}

proptest! {
    /// Without loops, the looped text is the unrolled text, and reads back to the same.
    #[test]
    fn a_function_in_program_order_prints_as_unrolled(mut f in props::function()) {
        f.layout = (0..f.insts.len() as u32).map(InstId).collect();
        let n = f.insts.len() as u32;
        f.deps.iter_mut().for_each(|d| d.retain(|d| d.from.0 < n));
        let lf = LoopedFunction::from_function(&f);
        let text = f.to_string();
        prop_assert_eq!(&lf.to_string(), &text);
        let back = parse_looped(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(back, lf);
    }
}

/// A DMA queue hint is a loop parameter: it prints with its terms after the edges' ones,
/// parses back, steps in the expansion, and a term on an instruction without a hint is an
/// error naming the opcode.
#[test]
fn queue_hints_step_with_their_loops() {
    let h = header();
    let copy = |queue| {
        InstData::DmaCopy(DmaCopyData {
            dst: tile(&h, 0, 0, 0),
            src: tile(&h, 1, 0, 0),
            cast: CastMode::Rne,
            queue: Some(crate::DmaQueueHint(queue)),
        })
    };
    // Params: dst offset, dst partition, src offset, src partition, edge, queue.
    let body = vec![Item::Inst(PirInst { data: copy(5), deps: vec![], loc: None })];
    let lf = LoopedFunction {
        header: h.clone(),
        body: vec![
            memset(&h, 0, 4096, vec![]),
            Item::Loop(Loop { trips: 3, body: body.clone(), step: vec![64, 0, 64, 0, 2] }),
        ],
    };
    let text = print_looped(&lf);
    let line = text.lines().find(|l| l.contains("dma_copy")).unwrap();
    assert_eq!(
        line,
        "  i1 = dma_copy cast=rne queue=5+2*i0 dst=t0{p0[1, 32] +0+64*i0 [1, 64]} src=t1{p0[512, 32] +0+64*i0 [1, 64]}"
    );
    assert_eq!(parse_looped(&text).unwrap(), lf);
    let f = lf.expand().unwrap();
    let queues: Vec<Option<u32>> = f.insts.iter().map(|i| i.queue_hint().map(|q| q.0)).collect();
    assert_eq!(queues, vec![None, Some(5), Some(7), Some(9)]);
    // A queue hint may not step below 0.
    let down = LoopedFunction {
        header: h.clone(),
        body: vec![Item::Loop(Loop { trips: 7, body, step: vec![0, 0, 0, 0, -1] })],
    };
    assert!(down.expand().is_err());
    let bad = text.replace("memset engine=pool value=0 dst", "memset engine=pool value=0+1*i0 dst");
    assert!(parse_looped(&bad).is_err());
    let on_memset = "kernel fill\ntensor t0 \"x\" sbuf fp32 [128, 512] @0\nloop i0 x2 {\n  i0 = memset engine=pool value=0 queue=1+1*i0 dst=t0{p0[1, 32] +0 [1, 64]} after()\n}\n";
    let err = parse_looped(on_memset).unwrap_err();
    assert!(err.message.contains("queue"), "{err:?}");
}
