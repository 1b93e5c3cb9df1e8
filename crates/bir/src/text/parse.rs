//! Parsing `.bir` text back into a [`Program`], with the line of every entity.

use std::collections::{HashMap, HashSet};

use penguin::text::lexer::{numbered_lines, split_comment, tensor_limit, walk_limit, Cursor, ParseError, MAX_EXTENT};
use penguin::{DType, InstId, Memory, Target};

use super::print::Line;
use crate::program::{BirInst, Engine, HbmRole, HbmTensor, HwAp, InstRef, Op, OpPart, Program, SemId, Wait};

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
                return Err((Line::Inst(InstRef { engine: e, index: n }), m));
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
    let mut dims = crate::program::Dims::new();
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
pub(crate) fn inst<'a>(c: &mut Cursor<'a>, index: usize) -> Result<BirInst, ParseError> {
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
    // An error is placed at the `key=` it names when that was written as an attribute, else
    // at the opcode.
    let op = Op::from_parts(opcode, &plain, aps).map_err(|e| {
        let key = match &e.part {
            OpPart::Attribute(key) | OpPart::AccessPattern(key) => Some(key.as_str()),
            OpPart::Opcode => None,
        };
        let col = attrs.iter().find(|(_, k, _)| Some(k.as_str()) == key).map_or(op_col, |(col, _, _)| *col);
        c.error_at(col, e.message)
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
    let mut locs = penguin::LocInterner::default();
    let mut last_line = 1;
    for (line_no, raw) in numbered_lines(text) {
        last_line = line_no;
        let mut c = Cursor::new(line_no, split_comment(raw).0);
        if c.is_at_end() {
            continue;
        }
        let start = c.clone();
        let Some((col, kw)) = c.word().filter(|(_, w)| matches!(*w, "program" | "hbm" | "sem" | "loc" | "stream"))
        else {
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
            map.lines.insert(Line::Inst(InstRef { engine: e, index }), line_no);
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
            "loc" => {
                let id_col = c.col();
                let id = InstId(c.id('i', "a Penguin instruction id `iN`")?.1);
                if p.srclocs.get(id).is_some() {
                    return Err(c.error_at(id_col, format!("a second `loc {id}` line")));
                }
                let loc = c.string()?;
                p.srclocs.set(id, Some(locs.intern(&loc)));
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
