//! Parsing looped `.bir` text (the syntax is in [`super::loops`]) into a [`LoopedProgram`].
//!
//! The header lines (`program`, `hbm`, `sem`, `stream`) are read by the unrolled parser
//! ([`super::parse_with_source_map`]) with every other line of the stream sections blanked,
//! so their errors and line numbers are the same in both forms. The stream sections are read
//! here: loop lines, and instruction lines whose loop-index terms are found, recorded and
//! blanked (replaced by spaces, so columns stay exact) before the instruction itself is read
//! by the unrolled parser's instruction reader.

use std::collections::HashMap;

use penguin::text::lexer::{numbered_lines, split_comment, Cursor, ParseError, MAX_EXTENT};
use penguin::Memory;

use penguin::text::loop_syntax::{col, is_word, loop_header, loop_term, LoopTerm};

use super::loops::LoopLine;
use super::parse::SourceMap;
use super::parse::{inst, parse_with_source_map};
use super::print::Line;
use crate::looped::{Item, Loop, LoopedProgram};
use crate::program::{Engine, InstRef, NUM_ENGINES};

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
        fn find(items: &[Item], start: u64, n: u64) -> Option<u64> {
            let mut at = start;
            for it in items {
                match it {
                    Item::Inst(_) => {
                        if at == n {
                            return Some(at);
                        }
                        at += 1;
                    }
                    Item::Loop(l) => {
                        let body = penguin::looped::unrolled_len(&l.body);
                        let all = body.saturating_mul(u64::from(l.trips));
                        if n >= at && n - at < all && body > 0 {
                            return find(&l.body, at, at + (n - at) % body);
                        }
                        at = at.saturating_add(all);
                    }
                }
            }
            None
        }
        let first = find(lp.stream(e), 0, n)?;
        Some(LoopLine::Plain(Line::Inst(InstRef { engine: e, index: usize::try_from(first).ok()? })))
    }

    /// The source map of the expansion: the header lines, and every unrolled instruction on
    /// the line of the instruction it is an iteration of. Takes time linear in the unrolled
    /// size.
    pub fn unrolled(&self, lp: &LoopedProgram) -> SourceMap {
        fn walk(
            items: &[Item],
            e: Engine,
            first: &mut usize,
            at: &mut usize,
            map: &LoopSourceMap,
            out: &mut SourceMap,
        ) {
            for it in items {
                match it {
                    Item::Inst(_) => {
                        if let Some(line) =
                            map.line_of(LoopLine::Plain(Line::Inst(InstRef { engine: e, index: *first })))
                        {
                            out.lines.insert(Line::Inst(InstRef { engine: e, index: *at }), line);
                        }
                        *first += 1;
                        *at += 1;
                    }
                    Item::Loop(l) => {
                        let start = *first;
                        for _ in 0..l.trips {
                            *first = start;
                            walk(&l.body, e, first, at, map, out);
                        }
                        let body = *first - start;
                        *first = start + body * l.trips as usize;
                    }
                }
            }
        }
        let mut out = SourceMap::default();
        for (l, n) in &self.lines {
            if let LoopLine::Plain(p) = l {
                if !matches!(p, Line::Inst(..)) {
                    out.lines.insert(*p, *n);
                }
            }
        }
        for e in Engine::all() {
            let (mut first, mut at) = (0, 0);
            walk(lp.stream(e), e, &mut first, &mut at, self, &mut out);
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

/// One `+C*iD` term: its parameter, loop depth, coefficient and byte position.
struct Term<'a> {
    slot: Slot<'a>,
    depth: usize,
    coef: i64,
    pos: usize,
}

/// The terms of an instruction line, and the line with them blanked.
fn take_terms(line_no: usize, code: &str) -> Result<(Vec<Term<'_>>, String), ParseError> {
    let b = code.as_bytes();
    let err = |pos: usize, m: String| ParseError { line: line_no, col: col(code, pos), message: m };
    let mut blanked = b.to_vec();
    let mut terms: Vec<Term<'_>> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let (mut key, mut in_wait, mut waits) = ("", false, 0usize);
    let mut last_end: Option<(usize, Slot<'_>)> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if is_word(c) {
            let j = (i..b.len()).find(|&j| !is_word(b[j])).unwrap_or(b.len());
            let w = &code[i..j];
            if b.get(j) == Some(&b'=') && b.get(j + 1) != Some(&b'=') {
                key = w;
            }
            if w == "wait" && code[j..].trim_start().starts_with('(') {
                (in_wait, waits) = (true, 0);
            }
            i = j;
            continue;
        }
        if c == b'>' && b.get(i + 1) == Some(&b'=') {
            waits += usize::from(in_wait);
            i += 2;
            continue;
        }
        if c == b')' {
            in_wait = false;
        }
        let Some(LoopTerm { coef, depth, end: d1 }) = loop_term(code, i, line_no)? else {
            i += 1;
            continue;
        };
        // The parameter: the number before, or the term before.
        let mut p = i;
        while p > 0 && b[p - 1] == b' ' {
            p -= 1;
        }
        let slot = match last_end {
            Some((end, slot)) if end == p => slot,
            _ => {
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
                    (true, Some(b'p'), Some(b'[')) => Slot::Partition(key),
                    (true, Some(b'@'), _) => Slot::Offset(key),
                    (true, Some(b'='), Some(b'>')) if in_wait => Slot::Wait(waits - 1),
                    _ => {
                        return Err(err(
                            i,
                            format!(
                            "a loop index term (`{}`) may only follow a start partition, a byte offset or a wait value",
                            &code[i..d1]
                        ),
                        ))
                    }
                }
            }
        };
        if !seen.insert((slot, depth)) {
            return Err(err(i, format!("`i{depth}` appears twice in one parameter")));
        }
        terms.push(Term { slot, depth, coef, pos: i });
        blanked[i..d1].fill(b' ');
        last_end = Some((d1, slot));
        i = d1;
    }
    let blanked = String::from_utf8(blanked).map_err(|_| err(0, "the line is not UTF-8".into()))?;
    Ok((terms, blanked))
}

/// An open loop.
struct Frame {
    trips: u32,
    line: usize,
    col: usize,
    start: u64,
    items: Vec<Item>,
    step: Vec<i64>,
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
    frames: Vec<Frame>,
    index: u64,
    sbuf_end: i128,
}

impl Streams {
    fn unclosed(&self) -> Result<(), ParseError> {
        match self.frames.last() {
            Some(f) => Err(ParseError {
                line: f.line,
                col: f.col,
                message: format!("loop i{} is not closed (a `}}` is missing)", self.frames.len() - 1),
            }),
            None => Ok(()),
        }
    }

    fn push(&mut self, e: Engine, item: Item) {
        match self.frames.last_mut() {
            Some(f) => f.items.push(item),
            None => self.streams[e.index()].push(item),
        }
    }

    fn open(&mut self, mut c: Cursor<'_>, line_no: usize) -> Result<(), ParseError> {
        let (col, trips) = loop_header(&mut c, self.frames.len())?;
        self.frames.push(Frame { trips, line: line_no, col, start: self.index, items: Vec::new(), step: Vec::new() });
        Ok(())
    }

    fn close(&mut self, e: Engine, mut c: Cursor<'_>, line_no: usize) -> Result<(), ParseError> {
        let col = c.col();
        c.expect("}")?;
        c.expect_end()?;
        let Some(f) = self.frames.pop() else {
            return Err(c.error_at(col, "a `}` with no open loop"));
        };
        if f.items.is_empty() {
            return Err(c.error_at(col, format!("loop i{} has an empty body", self.frames.len())));
        }
        let body = self.index - f.start;
        let end = u128::from(f.start) + u128::from(body) * u128::from(f.trips);
        if end > u128::from(MAX_EXTENT) {
            return Err(ParseError {
                line: f.line,
                col: f.col,
                message: format!("the stream unrolls to {end} instructions, more than 2^48"),
            });
        }
        self.index = end as u64;
        let depth = self.frames.len();
        self.map.lines.insert(LoopLine::Open(e, f.start, depth), f.line);
        self.map.lines.insert(LoopLine::Close(e, f.start, depth), line_no);
        self.push(e, Item::Loop(Loop { trips: f.trips, body: f.items, step: f.step }));
        Ok(())
    }

    fn instruction(&mut self, e: Engine, code: &str, line_no: usize) -> Result<(), ParseError> {
        let (terms, blanked) = take_terms(line_no, code)?;
        let mut c = Cursor::new(line_no, &blanked);
        let index = usize::try_from(self.index).unwrap_or(usize::MAX);
        let i = inst(&mut c, index)?;
        c.expect_end()?;
        let names: Vec<&str> = i.op.aps().iter().map(|(n, _)| *n).collect();
        let depth = self.frames.len();
        let n = crate::looped::inst_param_count(&i);
        let mut coefs = vec![vec![0i64; depth]; n];
        for t in &terms {
            let at = |m: String| ParseError { line: line_no, col: col(code, t.pos), message: m };
            let q = match t.slot {
                Slot::Partition(k) | Slot::Offset(k) => {
                    let a = names.iter().position(|x| *x == k).ok_or_else(|| at(format!("no access pattern `{k}`")))?;
                    2 * a + usize::from(matches!(t.slot, Slot::Partition(_)))
                }
                Slot::Wait(w) => 2 * names.len() + w,
            };
            if t.depth >= depth {
                let known = match depth {
                    0 => "no loop encloses this instruction".to_string(),
                    1 => "the enclosing loop is i0".to_string(),
                    d => format!("the enclosing loops are i0..i{}", d - 1),
                };
                return Err(at(format!("unknown loop index `i{}`: {known}", t.depth)));
            }
            if let Some(row) = coefs.get_mut(q) {
                row[t.depth] = t.coef;
            }
        }
        for (m, f) in self.frames.iter_mut().enumerate() {
            f.step.extend(coefs.iter().map(|row| row[m]));
        }
        // The highest SBUF byte over every iteration (the corners of the iteration box).
        let reach = |q: usize| -> i128 {
            coefs[q].iter().zip(&self.frames).map(|(&c, f)| (i128::from(c) * (i128::from(f.trips) - 1)).max(0)).sum()
        };
        for (a, (_, ap)) in i.op.aps().iter().enumerate() {
            if ap.memory == Memory::Sbuf {
                let hi: i128 =
                    ap.dims.iter().map(|d| (i128::from(d.stride) * (i128::from(d.num.max(1)) - 1)).max(0)).sum();
                let end = i128::from(ap.byte_offset) + reach(2 * a) + (hi + 1) * i128::from(ap.dtype.size_bytes());
                self.sbuf_end = self.sbuf_end.max(end);
            }
        }
        self.map.lines.insert(LoopLine::Plain(Line::Inst(InstRef { engine: e, index })), line_no);
        self.push(e, Item::Inst(i));
        self.index += 1;
        Ok(())
    }
}

/// Parse looped `.bir` text, also returning the line of every entity.
pub fn parse_looped_with_source_map(text: &str) -> Result<(LoopedProgram, LoopSourceMap), ParseError> {
    let first_word = |code: &str| Cursor::new(0, code).word().map(|(_, w)| w.to_string());
    // The header, read by the unrolled parser with the stream bodies blanked.
    let mut header_text = String::with_capacity(text.len());
    let mut seen_stream = false;
    let mut peak_given = false;
    for (n, raw) in numbered_lines(text) {
        if n > 1 {
            header_text.push('\n');
        }
        let code = split_comment(raw).0;
        let w = first_word(code);
        match w.as_deref() {
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
        frames: Vec::new(),
        index: 0,
        sbuf_end: 0,
    };
    for (line_no, raw) in numbered_lines(text) {
        let code = split_comment(raw).0;
        let mut c = Cursor::new(line_no, code);
        if c.is_at_end() {
            continue;
        }
        match first_word(code).as_deref() {
            Some("program" | "hbm" | "sem") => s.unclosed()?,
            Some("stream") => {
                s.unclosed()?;
                let _ = c.word();
                let (_, name) = c.expect_word("an engine")?;
                s.current = Engine::all().find(|e| e.name() == name);
                s.index = 0;
            }
            w => {
                // The header parser refused instructions outside a stream section.
                let Some(e) = s.current else { continue };
                if w == Some("loop") {
                    s.open(c, line_no)?;
                } else if c.peek() == Some('}') {
                    s.close(e, c, line_no)?;
                } else {
                    s.instruction(e, code, line_no)?;
                }
            }
        }
    }
    s.unclosed()?;
    header.streams = vec![Vec::new(); NUM_ENGINES];
    if !peak_given {
        header.sbuf_peak_bytes = u64::try_from(s.sbuf_end.max(0)).unwrap_or(u64::MAX);
    }
    Ok((LoopedProgram { header, streams: s.streams }, s.map))
}
