//! Parsing looped `.bir` text (the syntax is in [`super::loops`]) into a [`LoopedProgram`].
//!
//! The header lines (`program`, `hbm`, `sem`, `stream`) are read by the unrolled parser
//! ([`super::parse_with_source_map`]) with every other line of the stream sections blanked,
//! so their errors and line numbers are the same in both forms. The stream sections are read
//! here with the reader both formats share: loop lines by [`LoopReader`], instruction lines
//! by [`take_terms`], which finds, records and blanks their loop-index terms (replaced by
//! spaces, so columns stay exact) before the instruction itself is read by the unrolled
//! parser's instruction reader. What is `.bir`'s own is which numbers are parameters (the
//! [`TermScan`] of a line), the stream sections, and the `sbuf_peak` default.

use std::collections::HashMap;

use penguin::looped::{first_iteration, for_each_first_iteration};
use penguin::text::lexer::{numbered_lines, split_comment, Cursor, ParseError};
use penguin::text::loop_nest::LoopReader;
use penguin::text::loop_syntax::first_word;
use penguin::text::loop_terms::{operand_param, take_terms, LineTerms, TermScan};
use penguin::Memory;

use super::loops::LoopLine;
use super::parse::SourceMap;
use super::parse::{inst, parse_with_source_map};
use super::print::Line;
use crate::looped::{inst_param_count, Item, LoopedProgram};
use crate::program::{BirInst, Engine, InstRef, NUM_ENGINES};

/// Where each line of a parsed looped program was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopSourceMap {
    /// Line number (from 1) of each printed entity.
    pub lines: HashMap<LoopLine, usize>,
}

impl LoopSourceMap {
    /// The line an entity was written on.
    pub fn line_of(&self, what: LoopLine) -> Option<usize> {
        self.lines.get(&what).copied()
    }

    /// The line of instruction `n` of engine `e`'s unrolled stream: the line of the
    /// instruction it is an iteration of.
    pub fn unrolled_line(&self, lp: &LoopedProgram, e: Engine, n: u64) -> Option<usize> {
        self.line_of(Self::unrolled_at(lp, e, n)?)
    }

    /// The printed line of instruction `n` of engine `e`'s unrolled stream (the instruction
    /// it is an iteration of).
    pub fn unrolled_at(lp: &LoopedProgram, e: Engine, n: u64) -> Option<LoopLine> {
        let first = first_iteration(lp.stream(e), n)?;
        Some(LoopLine::Plain(Line::Inst(InstRef { engine: e, index: usize::try_from(first).ok()? })))
    }

    /// The source map of the expansion: the header lines, and every unrolled instruction on
    /// the line of the instruction it is an iteration of. Takes time linear in the unrolled
    /// size.
    pub fn unrolled(&self, lp: &LoopedProgram) -> SourceMap {
        let mut out = SourceMap::default();
        for (l, n) in &self.lines {
            if let LoopLine::Plain(p) = l {
                if !matches!(p, Line::Inst(..)) {
                    out.lines.insert(*p, *n);
                }
            }
        }
        for e in Engine::all() {
            let mut at = 0;
            for_each_first_iteration(lp.stream(e), |first| {
                let printed = LoopLine::Plain(Line::Inst(InstRef { engine: e, index: first as usize }));
                if let Some(line) = self.line_of(printed) {
                    out.lines.insert(Line::Inst(InstRef { engine: e, index: at }), line);
                }
                at += 1;
            });
        }
        out
    }
}

/// Parse looped `.bir` text.
pub fn parse_looped(text: &str) -> Result<LoopedProgram, ParseError> {
    parse_looped_with_source_map(text).map(|(p, _)| p)
}

/// Which parameter a term belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Slot<'a> {
    Partition(&'a str),
    Offset(&'a str),
    Wait(usize),
}

/// Where the scan of an instruction line is: inside `wait(...)`, after how many waits.
#[derive(Default)]
struct Scan {
    in_wait: bool,
    waits: usize,
}

impl<'a> TermScan<'a> for Scan {
    type Slot = Slot<'a>;

    const FOLLOWS: &'static str = "a start partition, a byte offset or a wait value";

    fn word(&mut self, w: &'a str, rest: &'a str) {
        if w == "wait" && rest.trim_start().starts_with('(') {
            (self.in_wait, self.waits) = (true, 0);
        }
    }

    fn byte(&mut self, b: &[u8], i: usize) {
        match b[i] {
            b'>' if b.get(i + 1) == Some(&b'=') => self.waits += usize::from(self.in_wait),
            b')' => self.in_wait = false,
            _ => {}
        }
    }

    fn slot(&self, key: &'a str, b: &[u8], p: usize) -> Option<Slot<'a>> {
        let mut q = p;
        while q > 0 && b[q - 1].is_ascii_digit() {
            q -= 1;
        }
        let number = q < p;
        while q > 0 && b[q - 1] == b' ' {
            q -= 1;
        }
        let before = |k: usize| q.checked_sub(k).map(|x| b[x]);
        match (number, before(1), before(2)) {
            (true, Some(b'p'), Some(b'[')) => Some(Slot::Partition(key)),
            (true, Some(b'@'), _) => Some(Slot::Offset(key)),
            (true, Some(b'='), Some(b'>')) if self.in_wait => self.waits.checked_sub(1).map(Slot::Wait),
            _ => None,
        }
    }
}

/// Whether the program line gives `sbuf_peak=`.
fn gives_sbuf_peak(code: &str) -> bool {
    let mut c = Cursor::new(0, code);
    let _ = c.word();
    let _ = c.name("");
    while let Some((_, k)) = c.word() {
        if k == "sbuf_peak" {
            return true;
        }
        c.eat("=");
        let _ = c.value();
    }
    false
}

/// The stream section parser's state.
struct Streams {
    streams: Vec<Vec<Item>>,
    map: LoopSourceMap,
    current: Option<Engine>,
    loops: LoopReader<BirInst>,
    sbuf_end: i128,
}

impl Streams {
    fn close(&mut self, e: Engine, c: Cursor<'_>, line_no: usize) -> Result<(), ParseError> {
        let closed = self.loops.close(c, "stream", &mut self.streams[e.index()])?;
        self.map.lines.insert(LoopLine::Open(e, closed.first, closed.depth), closed.line);
        self.map.lines.insert(LoopLine::Close(e, closed.first, closed.depth), line_no);
        Ok(())
    }

    fn instruction(&mut self, e: Engine, code: &str, line_no: usize) -> Result<(), ParseError> {
        let LineTerms { terms, blanked } = take_terms(line_no, code, Scan::default())?;
        let mut c = Cursor::new(line_no, &blanked);
        let index = usize::try_from(self.loops.index()).unwrap_or(usize::MAX);
        let i = inst(&mut c, index)?;
        c.expect_end()?;
        let names: Vec<&str> = i.op.aps().iter().map(|(n, _)| *n).collect();
        let coefs = self.loops.coefs(code, line_no, &terms, inst_param_count(&i), |slot| match slot {
            Slot::Partition(k) => operand_param(&names, k, true, "access pattern"),
            Slot::Offset(k) => operand_param(&names, k, false, "access pattern"),
            Slot::Wait(w) => Ok(2 * names.len() + w),
        })?;
        // The highest SBUF byte over every iteration (the corners of the iteration box).
        for (a, (_, ap)) in i.op.aps().iter().enumerate() {
            if ap.memory == Memory::Sbuf {
                let hi: i128 =
                    ap.dims.iter().map(|d| (i128::from(d.stride) * (i128::from(d.num.max(1)) - 1)).max(0)).sum();
                let end = i128::from(ap.byte_offset)
                    + self.loops.reach(&coefs[2 * a])
                    + (hi + 1) * i128::from(ap.dtype.size_bytes());
                self.sbuf_end = self.sbuf_end.max(end);
            }
        }
        self.map.lines.insert(LoopLine::Plain(Line::Inst(InstRef { engine: e, index })), line_no);
        self.loops.push_inst(i, &coefs, &mut self.streams[e.index()]);
        Ok(())
    }
}

/// Parse looped `.bir` text, also returning the line of every entity.
pub fn parse_looped_with_source_map(text: &str) -> Result<(LoopedProgram, LoopSourceMap), ParseError> {
    // The header, read by the unrolled parser with the stream bodies blanked.
    let mut header_text = String::with_capacity(text.len());
    let mut seen_stream = false;
    let mut peak_given = false;
    for (n, raw) in numbered_lines(text) {
        if n > 1 {
            header_text.push('\n');
        }
        let code = split_comment(raw).0;
        match first_word(code) {
            Some("program") => {
                peak_given |= gives_sbuf_peak(code);
                header_text.push_str(raw);
            }
            Some("hbm" | "sem") => header_text.push_str(raw),
            Some("stream") => {
                seen_stream = true;
                header_text.push_str(raw);
            }
            _ if seen_stream => {}
            _ => header_text.push_str(raw),
        }
    }
    let (mut header, base_map) = parse_with_source_map(&header_text)?;
    let mut s = Streams {
        streams: vec![Vec::new(); NUM_ENGINES],
        map: LoopSourceMap { lines: base_map.lines.iter().map(|(l, n)| (LoopLine::Plain(*l), *n)).collect() },
        current: None,
        loops: LoopReader::default(),
        sbuf_end: 0,
    };
    for (line_no, raw) in numbered_lines(text) {
        let code = split_comment(raw).0;
        let mut c = Cursor::new(line_no, code);
        if c.is_at_end() {
            continue;
        }
        match first_word(code) {
            Some("program" | "hbm" | "sem") => s.loops.unclosed()?,
            Some("stream") => {
                s.loops.unclosed()?;
                let _ = c.word();
                let (_, name) = c.expect_word("an engine")?;
                s.current = Engine::all().find(|e| e.name() == name);
                s.loops.restart();
            }
            w => {
                // The header parser refused instructions outside a stream section.
                let Some(e) = s.current else { continue };
                if w == Some("loop") {
                    s.loops.open(c, line_no)?;
                } else if c.peek() == Some('}') {
                    s.close(e, c, line_no)?;
                } else {
                    s.instruction(e, code, line_no)?;
                }
            }
        }
    }
    s.loops.unclosed()?;
    header.streams = vec![Vec::new(); NUM_ENGINES];
    if !peak_given {
        header.sbuf_peak_bytes = u64::try_from(s.sbuf_end.max(0)).unwrap_or(u64::MAX);
    }
    Ok((LoopedProgram { header, streams: s.streams }, s.map))
}
