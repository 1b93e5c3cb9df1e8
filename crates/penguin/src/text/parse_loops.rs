//! Parsing looped `.pir` text (the syntax is in [`super::loops`]) into a [`LoopedFunction`].
//!
//! The header lines (`kernel`, `debug_name`, `inputs`, `outputs`, `tensor`) are read by the
//! unrolled parser ([`super::parse::parse_with_source_map`]) with every other line blanked, so
//! their errors and line numbers are the same in both forms. The rest is read here: loop
//! lines, and instruction lines whose loop-index terms are found, recorded and blanked
//! (replaced by spaces, so columns stay exact) before the instruction itself is read by the
//! unrolled parser's instruction reader.

use std::collections::{HashMap, HashSet};

use super::lexer::{numbered_lines, split_comment, Cursor, ParseError, MAX_EXTENT};
use super::loop_syntax::{col, is_word, loop_header, loop_term, LoopTerm};
use super::loops::{LoopLine, QUEUE_KEY};
use super::parse::{inst_after_id, parse_with_source_map, SourceMap};
use crate::deps::compute_deps;
use crate::entity::InstId;
use crate::error::Entity;
use crate::function::Function;
use crate::looped::{unrolled_len, Item, Loop, LoopedFunction, PirInst, Stepped};

pub use super::loop_syntax::MAX_LOOP_DEPTH;

/// Where each line of a parsed looped function was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopSourceMap {
    /// Line number (from 1) of each printed entity; [`Entity::Function`] is the `kernel` line.
    pub lines: HashMap<LoopLine, usize>,
}

impl LoopSourceMap {
    /// The line an entity was written on.
    pub fn line_of(&self, what: LoopLine) -> Option<usize> {
        self.lines.get(&what).copied()
    }

    /// The printed instruction that unrolled instruction `n` is an iteration of.
    pub fn unrolled_at(lf: &LoopedFunction, n: u64) -> Option<LoopLine> {
        fn find(items: &[Item<PirInst>], start: u64, n: u64) -> Option<u64> {
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
                        let body = unrolled_len(&l.body);
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
        find(&lf.body, 0, n).map(LoopLine::Inst)
    }

    /// The line of the instruction that unrolled instruction `n` is an iteration of.
    pub fn unrolled_line(&self, lf: &LoopedFunction, n: u64) -> Option<usize> {
        self.line_of(Self::unrolled_at(lf, n)?)
    }

    /// The source map of the expansion: the header lines, and every unrolled instruction on
    /// the line of the instruction it is an iteration of. Takes time linear in the unrolled
    /// size.
    pub fn unrolled(&self, lf: &LoopedFunction) -> SourceMap {
        fn walk(items: &[Item<PirInst>], first: &mut u64, map: &LoopSourceMap, out: &mut Vec<usize>) {
            for it in items {
                match it {
                    Item::Inst(_) => {
                        out.push(map.line_of(LoopLine::Inst(*first)).unwrap_or(0));
                        *first += 1;
                    }
                    Item::Loop(l) => {
                        let start = *first;
                        for _ in 0..l.trips {
                            *first = start;
                            walk(&l.body, first, map, out);
                        }
                        *first = start + unrolled_len(&l.body) * u64::from(l.trips);
                    }
                }
            }
        }
        let mut insts = Vec::new();
        walk(&lf.body, &mut 0, self, &mut insts);
        let tensors = (0..lf.header.tensors.len())
            .map(|t| self.line_of(LoopLine::Plain(Entity::Tensor(crate::TensorId(t as u32)))).unwrap_or(0))
            .collect();
        SourceMap { kernel: self.line_of(LoopLine::Plain(Entity::Function)).unwrap_or(0), tensors, insts }
    }
}

/// Parse looped `.pir` text.
pub fn parse_looped(text: &str) -> Result<LoopedFunction, ParseError> {
    parse_looped_with_source_map(text).map(|(f, _)| f)
}

/// Which parameter a term belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Slot<'a> {
    Partition(&'a str),
    Offset(&'a str),
    Dep(usize),
    Queue,
}

/// One `+C*iD` term: its parameter, loop depth, coefficient and byte position.
struct Term<'a> {
    slot: Slot<'a>,
    depth: usize,
    coef: i64,
    pos: usize,
}

/// Where the scan of an instruction line is.
#[derive(Default)]
struct Scan<'a> {
    key: &'a str,
    in_tile: bool,
    in_dim: bool,
    in_after: bool,
    deps: usize,
}

/// The parameter a term starting at `i` follows, if it follows one: the number ending at
/// `p` (after any spaces) read in context.
fn slot_before<'a>(b: &[u8], p: usize, s: &Scan<'a>) -> Option<Slot<'a>> {
    let mut q = p;
    while q > 0 && b[q - 1].is_ascii_digit() {
        q -= 1;
    }
    if q == p {
        return None;
    }
    let before = |k: usize| q.checked_sub(k).map(|x| b[x]);
    if s.in_after && before(1) == Some(b'i') && !before(2).is_some_and(is_word) {
        return Some(Slot::Dep(s.deps.checked_sub(1)?));
    }
    if !s.in_tile && !s.in_after && s.key == QUEUE_KEY && before(1) == Some(b'=') {
        return Some(Slot::Queue);
    }
    if !s.in_tile || s.in_dim {
        return None;
    }
    if matches!(before(1), Some(b'+' | b'-')) && matches!(before(2), Some(b' ' | b']')) {
        return Some(Slot::Offset(s.key));
    }
    // `{p START`, with optional spaces.
    let mut r = q;
    while r > 0 && b[r - 1] == b' ' {
        r -= 1;
    }
    if r > 0 && b[r - 1] == b'p' {
        r -= 1;
        while r > 0 && b[r - 1] == b' ' {
            r -= 1;
        }
        if r > 0 && b[r - 1] == b'{' {
            return Some(Slot::Partition(s.key));
        }
    }
    None
}

/// The terms of an instruction line, and the line with them blanked.
fn take_terms(line_no: usize, code: &str) -> Result<(Vec<Term<'_>>, String), ParseError> {
    let b = code.as_bytes();
    let err = |pos: usize, m: String| ParseError { line: line_no, col: col(code, pos), message: m };
    let mut blanked = b.to_vec();
    let mut terms: Vec<Term<'_>> = Vec::new();
    let mut seen = HashSet::new();
    let mut s = Scan::default();
    let mut last_end: Option<(usize, Slot<'_>)> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if is_word(c) {
            let j = (i..b.len()).find(|&j| !is_word(b[j])).unwrap_or(b.len());
            let w = &code[i..j];
            if b.get(j) == Some(&b'=') && b.get(j + 1) != Some(&b'=') {
                s.key = w;
            }
            if w == "after" && code[j..].trim_start().starts_with('(') {
                (s.in_after, s.deps) = (true, 0);
            }
            if s.in_after && w.len() > 1 && w.starts_with('i') && w.bytes().skip(1).all(|x| x.is_ascii_digit()) {
                s.deps += 1;
            }
            i = j;
            continue;
        }
        match c {
            b'{' => s.in_tile = true,
            b'}' => s.in_tile = false,
            b'[' => s.in_dim = true,
            b']' => s.in_dim = false,
            b')' => s.in_after = false,
            _ => {}
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
            _ => slot_before(b, p, &s).ok_or_else(|| {
                err(
                    i,
                    format!(
                        "a loop index term (`{}`) may only follow a start partition, an element offset, an \
                         instruction id in `after(...)` or a queue hint",
                        &code[i..d1]
                    ),
                )
            })?,
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
    items: Vec<Item<PirInst>>,
    step: Vec<i64>,
}

/// The body parser's state.
struct Body {
    items: Vec<Item<PirInst>>,
    map: LoopSourceMap,
    frames: Vec<Frame>,
    index: u64,
    /// The line and column of the first loop.
    first_loop: Option<(usize, usize)>,
    any_after: bool,
}

impl Body {
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

    fn push(&mut self, item: Item<PirInst>) {
        match self.frames.last_mut() {
            Some(f) => f.items.push(item),
            None => self.items.push(item),
        }
    }

    fn open(&mut self, mut c: Cursor<'_>, line_no: usize) -> Result<(), ParseError> {
        let (col, trips) = loop_header(&mut c, self.frames.len())?;
        self.first_loop.get_or_insert((line_no, col));
        self.frames.push(Frame { trips, line: line_no, col, start: self.index, items: Vec::new(), step: Vec::new() });
        Ok(())
    }

    fn close(&mut self, mut c: Cursor<'_>, line_no: usize) -> Result<(), ParseError> {
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
                message: format!("the function unrolls to {end} instructions, more than 2^48"),
            });
        }
        self.index = end as u64;
        let depth = self.frames.len();
        self.map.lines.insert(LoopLine::Open(f.start, depth), f.line);
        self.map.lines.insert(LoopLine::Close(f.start, depth), line_no);
        self.push(Item::Loop(Loop { trips: f.trips, body: f.items, step: f.step }));
        Ok(())
    }

    fn instruction(&mut self, header: &Function, code: &str, line_no: usize) -> Result<(), ParseError> {
        let (terms, blanked) = take_terms(line_no, code)?;
        let mut c = Cursor::new(line_no, &blanked);
        let (id_col, n) = c.id(
            'i',
            "a line starting with `kernel`, `debug_name`, `inputs`, `outputs`, `tensor`, `loop`, `}` or `iN =`",
        )?;
        if u64::from(n) != self.index {
            return Err(c.error_at(
                id_col,
                format!("instruction id i{n} does not match its place in the unrolled program order (i{})", self.index),
            ));
        }
        c.expect("=")?;
        let (data, deps, loc) = inst_after_id(&mut c, InstId(n), header)?;
        c.expect_end()?;
        self.any_after |= deps.is_some();
        let inst = PirInst { data, deps: deps.unwrap_or_default(), loc: loc.map(crate::SourceLoc::from) };
        let names = inst.data.operand_names();
        let operands = inst.data.operands().len();
        let depth = self.frames.len();
        let mut coefs = vec![vec![0i64; depth]; inst.param_count()];
        for t in &terms {
            let at = |m: String| ParseError { line: line_no, col: col(code, t.pos), message: m };
            let q = match t.slot {
                Slot::Partition(k) | Slot::Offset(k) => {
                    let a = names
                        .iter()
                        .take(operands)
                        .position(|x| *x == k)
                        .ok_or_else(|| at(format!("no operand `{k}`")))?;
                    2 * a + usize::from(matches!(t.slot, Slot::Partition(_)))
                }
                Slot::Dep(k) => 2 * operands + k,
                Slot::Queue if inst.data.queue_hint().is_some() => 2 * operands + inst.deps.len(),
                Slot::Queue => return Err(at(format!("{} has no queue hint to step", inst.data.opcode()))),
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
        self.map.lines.insert(LoopLine::Inst(self.index), line_no);
        self.push(Item::Inst(inst));
        self.index += 1;
        Ok(())
    }
}

const HEADER_WORDS: [&str; 6] = ["kernel", "debug_name", "inputs", "outputs", "layout", "tensor"];

/// Parse looped `.pir` text, also returning the line of every entity.
pub fn parse_looped_with_source_map(text: &str) -> Result<(LoopedFunction, LoopSourceMap), ParseError> {
    let first_word = |code: &str| Cursor::new(0, code).word().map(|(_, w)| w.to_string());
    // The header, read by the unrolled parser with every other line blanked.
    let mut header_text = String::with_capacity(text.len());
    for (n, raw) in numbered_lines(text) {
        if n > 1 {
            header_text.push('\n');
        }
        if first_word(split_comment(raw).0).is_some_and(|w| HEADER_WORDS.contains(&w.as_str())) {
            header_text.push_str(raw);
        }
    }
    let (header, hmap) = parse_with_source_map(&header_text)?;
    let mut map = LoopSourceMap::default();
    map.lines.insert(LoopLine::Plain(Entity::Function), hmap.kernel);
    for (t, &line) in hmap.tensors.iter().enumerate() {
        map.lines.insert(LoopLine::Plain(Entity::Tensor(crate::TensorId(t as u32))), line);
    }
    let mut body = Body { items: Vec::new(), map, frames: Vec::new(), index: 0, first_loop: None, any_after: false };
    for (line_no, raw) in numbered_lines(text) {
        let code = split_comment(raw).0;
        let mut c = Cursor::new(line_no, code);
        if c.is_at_end() {
            continue;
        }
        let word = first_word(code);
        if line_no < hmap.kernel {
            let found = word.map_or_else(|| c.found(), |w| format!("`{w}`"));
            return Err(c.error(format!("expected `kernel NAME` as the first line, found {found}")));
        }
        match word.as_deref() {
            Some("layout") => {
                return Err(c.error("a looped function has no `layout` line (its line order is the program order)"))
            }
            Some(w) if HEADER_WORDS.contains(&w) => {
                if let Some(depth) = body.frames.len().checked_sub(1) {
                    return Err(c.error(format!("a `{w}` line inside loop i{depth} (close the loop first)")));
                }
            }
            Some("loop") => body.open(c, line_no)?,
            _ if c.peek() == Some('}') => body.close(c, line_no)?,
            _ => body.instruction(&header, code, line_no)?,
        }
    }
    body.unclosed()?;
    let mut lf = LoopedFunction { header, body: body.items };
    if !body.any_after {
        if let Some((line, col)) = body.first_loop {
            let message = "a function with loops lists its dependency edges, but no instruction has `after(...)` \
                           (write `after()` on the first instruction if it has none)";
            return Err(ParseError { line, col, message: message.into() });
        }
        // Without loops, as the unrolled parser does: the edges are computed.
        if let Ok(mut f) = lf.expand() {
            f.deps = compute_deps(&f);
            lf = LoopedFunction::from_function(&f);
        }
    }
    Ok((lf, body.map))
}
