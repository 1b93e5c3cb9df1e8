//! The `.bir` text format: printing a [`Program`] and parsing it back, so that a hand-written
//! program can be verified and simulated.
//!
//! Line-oriented; `;` starts a comment to the end of the line. Grammar:
//!
//! ```text
//! program NAME target=TARGET [hbm_size=BYTES] [sbuf_peak=BYTES]      first line
//! hbm "NAME" DTYPE [D0, D1, ...] @ADDRESS [input|output|internal]    an HBM tensor
//! sem sN "NAME"                                                    semaphores s0, s1, ... in order
//! stream ENGINE:                                                   pe act dve pool sp dma0..dma15
//!   [N:] OPCODE KEY=VALUE ... OPERAND=AP ... [wait(sN>=V, ...)] [signal(sN)] [origin(iN)]
//!
//! AP = MEMORY.DTYPE[pSTART:COUNT:STRIDE @BYTE_OFFSET [STRIDE, NUM]...]
//! ```
//!
//! Numbers are limited as in the `.pir` format ([`penguin::text::lexer::MAX_EXTENT`]): HBM tensors
//! and byte offsets below 2^48, access-pattern walks within 2^48 elements ([`check_limits`]).
//!
//! Instructions belong to the stream section above them, in order; the optional `N:` is the
//! index in the stream and must match. `hbm_size` defaults to the end of the last HBM tensor,
//! `sbuf_peak` to the highest SBUF byte any access pattern touches. Opcodes, attribute and
//! operand names are those of [`Op::name`], [`Op::attributes`] and [`Op::aps`].

use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write as _};

use penguin::text::lexer::{numbered_lines, split_comment, tensor_limit, walk_limit, Cursor, ParseError, MAX_EXTENT};
use penguin::text::print::quote;
use penguin::{DType, InstId, Memory, Target};

use crate::program::{BirInst, Engine, HbmRole, HbmTensor, HwAp, Op, Program, SemId, Wait};

/// `MEMORY.DTYPE[pSTART:COUNT:STRIDE @BYTE_OFFSET [STRIDE, NUM]...]`.
pub fn ap_text(ap: &HwAp) -> String {
    let mut s = format!(
        "{}.{}[p{}:{}:{} @{}",
        ap.memory, ap.dtype, ap.start_partition, ap.num_partitions, ap.partition_stride, ap.byte_offset
    );
    for d in &ap.dims {
        let _ = write!(s, " {d}");
    }
    s.push(']');
    s
}

/// One instruction as its text (without the stream index).
pub fn inst_text(i: &BirInst) -> String {
    let mut s = String::from(i.op.name());
    for (key, value) in i.op.attributes() {
        let _ = write!(s, " {key}={value}");
    }
    for (name, ap) in i.op.aps() {
        let _ = write!(s, " {name}={}", ap_text(ap));
    }
    if !i.waits.is_empty() {
        let waits: Vec<String> = i.waits.iter().map(|w| format!("{}>={}", w.sem, w.value)).collect();
        let _ = write!(s, " wait({})", waits.join(", "));
    }
    if let Some(sig) = i.signal {
        let _ = write!(s, " signal({sig})");
    }
    if let Some(o) = i.origin {
        let _ = write!(s, " origin({o})");
    }
    s
}

/// What a line of the text prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Line {
    /// The `program` line.
    Program,
    /// An `hbm` line (index into [`Program::hbm`]).
    Hbm(usize),
    /// A `sem` line.
    Sem(SemId),
    /// A `stream` header.
    Stream(Engine),
    /// An instruction: its engine and index in the stream.
    Inst(Engine, usize),
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Line::Program => f.write_str("program"),
            Line::Hbm(i) => write!(f, "hbm tensor {i}"),
            Line::Sem(s) => write!(f, "{s}"),
            Line::Stream(e) => write!(f, "stream {e}"),
            Line::Inst(e, n) => write!(f, "{e}[{n}]"),
        }
    }
}

/// The program's lines, each with what it prints.
pub fn lines(p: &Program) -> Vec<(Line, String)> {
    let name =
        if penguin::verify::is_identifier(&p.kernel_name) { p.kernel_name.clone() } else { quote(&p.kernel_name) };
    let mut out = vec![(
        Line::Program,
        format!("program {name} target={} hbm_size={} sbuf_peak={}", p.target, p.hbm_size, p.sbuf_peak_bytes),
    )];
    for (i, t) in p.hbm.iter().enumerate() {
        let role = match t.role {
            HbmRole::Input => " input",
            HbmRole::Output => " output",
            HbmRole::Internal => "",
        };
        out.push((Line::Hbm(i), format!("hbm {} {} {:?} @{}{role}", quote(&t.name), t.dtype, t.shape, t.address)));
    }
    for (i, name) in p.semaphores.iter().enumerate() {
        let id = SemId(i as u32);
        out.push((Line::Sem(id), format!("sem {id} {}", quote(name))));
    }
    for e in Engine::all() {
        let stream = p.stream(e);
        if stream.is_empty() {
            continue;
        }
        out.push((Line::Stream(e), format!("stream {e}:")));
        for (n, i) in stream.iter().enumerate() {
            out.push((Line::Inst(e, n), format!("  {n}: {}", inst_text(i))));
        }
    }
    out
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (_, line) in lines(self) {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

/// Where a verifier message points: the instruction named by its `engine[n]` prefix.
pub fn locate(message: &str) -> Option<(Line, &str)> {
    let (head, rest) = message.split_once(": ")?;
    let at = head.split_whitespace().next()?;
    let (engine, index) = at.strip_suffix(']')?.split_once('[')?;
    let engine = Engine::all().find(|e| e.name() == engine)?;
    Some((Line::Inst(engine, index.parse().ok()?), rest))
}

/// The program's text with every verifier message printed under the instruction it names
/// as `; error: ...` (messages that name no instruction go under the `program` line).
pub fn print_with_errors(p: &Program, errors: &[String]) -> String {
    let located: Vec<(Line, &str)> = errors.iter().map(|e| locate(e).unwrap_or((Line::Program, e.as_str()))).collect();
    let mut s = String::new();
    let mut printed = vec![false; errors.len()];
    for (line, text) in lines(p) {
        s.push_str(&text);
        s.push('\n');
        for (i, (at, msg)) in located.iter().enumerate() {
            if *at == line && !printed[i] {
                printed[i] = true;
                let _ = writeln!(s, "; error: {msg}");
            }
        }
    }
    for (i, e) in errors.iter().enumerate() {
        if !printed[i] {
            let _ = writeln!(s, "; error: {e}");
        }
    }
    s
}

/// Where each line of a parsed program was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceMap {
    /// Line number (from 1) of each printed entity.
    pub lines: HashMap<Line, usize>,
}

impl SourceMap {
    /// The line an entity was written on.
    pub fn line_of(&self, what: Line) -> Option<usize> {
        self.lines.get(&what).copied()
    }
}

/// Why an access pattern is beyond the limits of the text format, if it is.
fn ap_limit(ap: &HwAp) -> Option<String> {
    if ap.byte_offset > MAX_EXTENT {
        return Some(format!("byte offset {} is beyond 2^48", ap.byte_offset));
    }
    let partitions = penguin::Dim { stride: ap.partition_stride, num: ap.num_partitions };
    walk_limit(0, std::iter::once(partitions).chain(ap.dims.iter().copied()))
}

/// Check a program against the limits of the text format; the error names the line.
pub fn check_limits(p: &Program) -> Result<(), (Line, String)> {
    for (i, t) in p.hbm.iter().enumerate() {
        if let Some(m) = tensor_limit(&t.shape, t.dtype.size_bytes(), Some(t.address)) {
            return Err((Line::Hbm(i), m));
        }
    }
    for e in Engine::all() {
        for (n, inst) in p.stream(e).iter().enumerate() {
            if let Some(m) = inst.op.aps().into_iter().find_map(|(_, ap)| ap_limit(ap)) {
                return Err((Line::Inst(e, n), m));
            }
        }
    }
    Ok(())
}

/// Parse a `.bir` text into a program.
pub fn parse(text: &str) -> Result<Program, ParseError> {
    parse_with_source_map(text).map(|(p, _)| p)
}

/// `MEMORY.DTYPE[pSTART:COUNT:STRIDE @BYTE_OFFSET [STRIDE, NUM]...]`.
fn hw_ap(c: &mut Cursor<'_>) -> Result<HwAp, ParseError> {
    let col = c.col();
    let memory = c.memory()?;
    c.expect(".")?;
    let dtype = c.parse_word::<DType>("a dtype")?;
    c.expect("[")?;
    if !c.eat("p") {
        return Err(c.expected("`p` and the start partition"));
    }
    let start_partition = c.int("a start partition")?;
    c.expect(":")?;
    let num_partitions = c.int("a partition count")?;
    c.expect(":")?;
    let partition_stride = c.int("a partition stride")?;
    c.expect("@")?;
    let byte_offset = c.int("a byte offset")?;
    let mut dims = Vec::new();
    while c.peek() == Some('[') {
        dims.push(c.dim()?);
    }
    c.expect("]")?;
    let ap = HwAp { memory, dtype, start_partition, num_partitions, partition_stride, byte_offset, dims };
    match ap_limit(&ap) {
        Some(m) => Err(c.error_at(col, m)),
        None => Ok(ap),
    }
}

fn at_ap(c: &mut Cursor<'_>) -> bool {
    let mut probe = c.clone();
    matches!(probe.word(), Some((_, "hbm" | "sbuf" | "psum"))) && probe.eat(".")
}

fn sem_id(c: &mut Cursor<'_>) -> Result<SemId, ParseError> {
    Ok(SemId(c.id('s', "a semaphore id `sN`")?.1))
}

fn engine(c: &mut Cursor<'_>) -> Result<Engine, ParseError> {
    let what = "an engine (pe, act, dve, pool, sp or dma0..dma15)";
    let (col, w) = c.expect_word(what)?;
    Engine::all().find(|e| e.name() == w).ok_or_else(|| c.error_at(col, format!("expected {what}, found `{w}`")))
}

/// `[N:] OPCODE KEY=VALUE ... OPERAND=AP ... [wait(...)] [signal(...)] [origin(...)]`.
fn inst<'a>(c: &mut Cursor<'a>, index: usize) -> Result<BirInst, ParseError> {
    let mut probe = c.clone();
    if let Ok(n) = probe.int::<u64>("an index") {
        let col = c.col();
        if n != index as u64 {
            return Err(
                c.error_at(col, format!("instruction index {n} does not match its place in the stream ({index})"))
            );
        }
        *c = probe;
        c.expect(":")?;
    }
    let (op_col, opcode) = c.expect_word("an opcode")?;
    let mut attrs: Vec<(usize, String, String)> = Vec::new();
    let mut aps: Vec<(String, HwAp)> = Vec::new();
    let (mut waits, mut signal, mut origin) = (None, None, None);
    // A set, so that a line of many keys is checked for repeats in linear time.
    let mut keys = HashSet::<&'a str>::new();
    while !c.is_at_end() {
        let (col, key) = c.expect_word("`KEY=VALUE`, `OPERAND=AP`, `wait(...)`, `signal(...)` or `origin(...)`")?;
        if matches!(key, "wait" | "signal" | "origin") && c.peek() == Some('(') {
            c.expect("(")?;
            let twice = || c.error_at(col, format!("a second `{key}(...)`"));
            match key {
                "wait" => {
                    if waits.is_some() {
                        return Err(twice());
                    }
                    waits = Some(c.list(")", |c| {
                        let sem = sem_id(c)?;
                        c.expect(">=")?;
                        Ok(Wait { sem, value: c.int("a semaphore count")? })
                    })?);
                }
                "signal" => {
                    if signal.is_some() {
                        return Err(twice());
                    }
                    signal = Some(sem_id(c)?);
                    c.expect(")")?;
                }
                _ => {
                    if origin.is_some() {
                        return Err(twice());
                    }
                    origin = Some(InstId(c.id('i', "an instruction id `iN`")?.1));
                    c.expect(")")?;
                }
            }
            continue;
        }
        c.expect("=")?;
        if !keys.insert(key) {
            return Err(c.error_at(col, format!("`{key}=` is given twice")));
        }
        if at_ap(c) {
            aps.push((key.to_string(), hw_ap(c)?));
        } else {
            let (vcol, value) = c.value();
            if value.is_empty() {
                return Err(c.error_at(vcol, format!("expected a value after `{key}=`, found end of line")));
            }
            attrs.push((col, key.to_string(), value.to_string()));
        }
    }
    let plain: Vec<(String, String)> = attrs.iter().map(|(_, k, v)| (k.clone(), v.clone())).collect();
    let op = Op::from_parts(opcode, &plain, aps).map_err(|message| {
        let col = attrs
            .iter()
            .find(|(_, k, v)| message.contains(&format!("`{v}`")) || message.contains(&format!("`{k}")))
            .map_or(op_col, |(col, _, _)| *col);
        c.error_at(col, message)
    })?;
    Ok(BirInst { op, waits: waits.unwrap_or_default(), signal, origin })
}

/// Parse a `.bir` text, also returning the line of every entity.
pub fn parse_with_source_map(text: &str) -> Result<(Program, SourceMap), ParseError> {
    let mut p = Program::new("", Target::Trn2);
    let mut map = SourceMap::default();
    let mut seen_program = false;
    let (mut hbm_size, mut sbuf_peak) = (None, None);
    let mut current: Option<Engine> = None;
    let mut hbm_names = HashSet::<String>::new();
    let mut last_line = 1;
    for (line_no, raw) in numbered_lines(text) {
        last_line = line_no;
        let mut c = Cursor::new(line_no, split_comment(raw).0);
        if c.is_at_end() {
            continue;
        }
        let start = c.clone();
        let Some((col, kw)) = c.word().filter(|(_, w)| matches!(*w, "program" | "hbm" | "sem" | "stream")) else {
            if !seen_program {
                return Err(start.clone().expected("`program NAME target=TARGET` as the first line"));
            }
            let Some(e) = current else {
                return Err(start
                    .clone()
                    .expected("`hbm`, `sem` or `stream ENGINE:` (instructions go in a stream section)"));
            };
            c = start;
            let index = p.streams[e.index()].len();
            let i = inst(&mut c, index)?;
            p.streams[e.index()].push(i);
            map.lines.insert(Line::Inst(e, index), line_no);
            c.expect_end()?;
            continue;
        };
        if !seen_program && kw != "program" {
            return Err(
                c.error_at(col, format!("expected `program NAME target=TARGET` as the first line, found `{kw}`"))
            );
        }
        match kw {
            "program" => {
                if seen_program {
                    return Err(c.error_at(
                        col,
                        format!("a second `program` line (the first is line {})", map.lines[&Line::Program]),
                    ));
                }
                seen_program = true;
                map.lines.insert(Line::Program, line_no);
                p.kernel_name = c.name("a kernel name")?;
                let mut target = None;
                while !c.is_at_end() {
                    let (kcol, key) = c.expect_word("`target=`, `hbm_size=` or `sbuf_peak=`")?;
                    c.expect("=")?;
                    let slot = match key {
                        "target" => {
                            target = Some(c.parse_word::<Target>("a target")?);
                            continue;
                        }
                        "hbm_size" => &mut hbm_size,
                        "sbuf_peak" => &mut sbuf_peak,
                        _ => {
                            let m = format!("expected `target=`, `hbm_size=` or `sbuf_peak=`, found `{key}=`");
                            return Err(c.error_at(kcol, m));
                        }
                    };
                    *slot = Some(c.int::<u64>("a byte count")?);
                }
                p.target = target.ok_or_else(|| c.expected("`target=trn1|trn2|trn3`"))?;
            }
            "hbm" => {
                let name_col = c.col();
                let name = c.name("a tensor name")?;
                if !hbm_names.insert(name.clone()) {
                    return Err(c.error_at(name_col, format!("hbm tensor name {name:?} is already used")));
                }
                let dtype = c.parse_word::<DType>("a dtype")?;
                let shape_col = c.col();
                let shape = c.shape()?;
                c.expect("@")?;
                let address = c.int("a byte address")?;
                if let Some(m) = tensor_limit(&shape, dtype.size_bytes(), Some(address)) {
                    return Err(c.error_at(shape_col, m));
                }
                let role = match c.word() {
                    None => HbmRole::Internal,
                    Some((_, "input")) => HbmRole::Input,
                    Some((_, "output")) => HbmRole::Output,
                    Some((_, "internal")) => HbmRole::Internal,
                    Some((rcol, w)) => {
                        return Err(
                            c.error_at(rcol, format!("expected a role (input, output or internal), found `{w}`"))
                        );
                    }
                };
                map.lines.insert(Line::Hbm(p.hbm.len()), line_no);
                p.hbm.push(HbmTensor { name, shape, dtype, address, role });
            }
            "sem" => {
                let next = p.semaphores.len();
                let id_col = c.col();
                let id = sem_id(&mut c)?;
                if id.0 as usize != next {
                    return Err(c.error_at(
                        id_col,
                        format!("expected `s{next}` (semaphores are numbered in order from s0), found `{id}`"),
                    ));
                }
                p.semaphores.push(c.name("a semaphore name")?);
                map.lines.insert(Line::Sem(id), line_no);
            }
            _ => {
                let ecol = c.col();
                let e = engine(&mut c)?;
                c.expect(":")?;
                if let Some(first) = map.lines.insert(Line::Stream(e), line_no) {
                    return Err(c.error_at(ecol, format!("a second `stream {e}:` section (the first is line {first})")));
                }
                current = Some(e);
            }
        }
        c.expect_end()?;
    }
    if !seen_program {
        return Err(ParseError {
            line: last_line,
            col: 1,
            message: "expected `program NAME target=TARGET`, found end of file".into(),
        });
    }
    p.hbm_size = hbm_size.unwrap_or_else(|| p.hbm.iter().map(hbm_end).max().unwrap_or(0));
    p.sbuf_peak_bytes = sbuf_peak.unwrap_or_else(|| sbuf_end(&p));
    Ok((p, map))
}

/// One past the last byte of an HBM tensor (saturating: the verifier reports what does not fit).
fn hbm_end(t: &HbmTensor) -> u64 {
    let bytes = t.shape.iter().fold(u64::from(t.dtype.size_bytes()), |a, &d| a.saturating_mul(d));
    t.address.saturating_add(bytes)
}

/// One past the highest SBUF byte any access pattern of the program touches (saturating
/// arithmetic: a hand-written pattern may be absurd, and the verifier says so).
fn sbuf_end(p: &Program) -> u64 {
    let end = |ap: &HwAp| -> i128 {
        let span = |stride: i64, num: u32| i128::from(stride) * (i128::from(num.max(1)) - 1);
        let hi: i128 = ap.dims.iter().map(|d| span(d.stride, d.num).max(0)).sum();
        i128::from(ap.byte_offset) + (hi + 1) * i128::from(ap.dtype.size_bytes())
    };
    let max = p
        .streams
        .iter()
        .flatten()
        .flat_map(|i| i.op.aps())
        .filter(|(_, ap)| ap.memory == Memory::Sbuf)
        .map(|(_, ap)| end(ap))
        .max()
        .unwrap_or(0);
    u64::try_from(max.max(0)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The hand-written GEMM of `examples/`.
    const GEMM: &str = include_str!("../../../examples/gemm_4x16x8.pir");

    fn lowered() -> Program {
        let f = penguin::parse::parse(GEMM).unwrap();
        crate::lower(penguin::verify(&f).unwrap(), Target::Trn2).unwrap()
    }

    #[test]
    fn lowered_programs_round_trip() {
        let p = lowered();
        let text = p.to_string();
        assert!(
            text.contains(
                "  1: multiply_moving perf=none pos=0,0 size=128,128 acc=start dst=psum.fp32[p0:4:1 @0 [1, 8]]"
            ),
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
        assert_eq!(waits.last(), Some(&Wait { sem: SemId(0), value: count - 1 }));
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
        (
            memory,
            proptest::sample::select(DType::ALL.to_vec()),
            0u32..200,
            0u32..200,
            -9i64..300,
            0u64..=MAX_EXTENT,
            dims,
        )
            .prop_map(
                |(memory, dtype, start_partition, num_partitions, partition_stride, byte_offset, dims)| HwAp {
                    memory,
                    dtype,
                    start_partition,
                    num_partitions,
                    partition_stride,
                    byte_offset,
                    dims,
                },
            )
    }

    fn op() -> impl Strategy<Value = Op> {
        use penguin::{CastMode, EngineAccumulationType as Acc, PerfMode, TensorTensorOp, TilePosition, TileSize};
        let perf = prop_oneof![Just(PerfMode::None), Just(PerfMode::DoubleRow), Just(PerfMode::DoubleRowGen3)];
        let pos = (0u32..300, 0u32..300).prop_map(|(row, col)| TilePosition { row, col });
        let size = (0u32..300, 0u32..300).prop_map(|(rows, cols)| TileSize { rows, cols });
        let cast = prop_oneof![Just(CastMode::Rne), Just(CastMode::Saturate)];
        let value = any::<f64>().prop_filter("not NaN", |v| !v.is_nan());
        let pattern = proptest::sample::select(penguin::SparsityPattern::SUPPORTED.to_vec());
        let tt = proptest::sample::select(vec![TensorTensorOp::Add, TensorTensorOp::Mul, TensorTensorOp::Max]);
        let acc = (0u8..8).prop_map(Acc::from_bits_truncate);
        (0usize..11, [ap(), ap(), ap()], perf, pos, size, acc, cast, value, pattern, tt).prop_map(
            |(kind, [dst, src, third], perf_mode, tile_position, tile_size, acc, cast, value, pattern, op)| match kind {
                0 => Op::LoadStationary { src, perf_mode, tile_position, tile_size },
                1 => Op::LoadStationarySparse { src, tags: third, pattern, tile_position, tile_size },
                2 => Op::MultiplyMoving { dst, src, acc, perf_mode, tile_position, tile_size },
                3 => Op::Transpose { dst, src },
                4 => Op::DmaCopy { dst, src, cast },
                5 => Op::DmaFma { dst, src0: src, src1: third },
                6 => Op::DmaGather { dst, table: src, index: third },
                7 => Op::DmaScatterAdd { table: dst, src, index: third },
                8 => Op::TensorCopy { dst, src },
                9 => Op::TensorTensor { op, dst, lhs: src, rhs: third },
                _ => Op::Memset { dst, value },
            },
        )
    }

    fn inst() -> impl Strategy<Value = BirInst> {
        let wait = (0u32..30, any::<u32>()).prop_map(|(s, value)| Wait { sem: SemId(s), value });
        (
            op(),
            proptest::collection::vec(wait, 0..3),
            proptest::option::of(0u32..30),
            proptest::option::of(any::<u32>()),
        )
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
}
