//! Parsing looped `.pir` text (the syntax is in [`super::loops`]) into a [`LoopedFunction`].
//!
//! The header lines (`kernel`, `debug_name`, `inputs`, `outputs`, `tensor`) are read by the
//! unrolled parser ([`super::parse::parse_with_source_map`]) with every other line blanked, so
//! their errors and line numbers are the same in both forms. The rest is read here with the
//! reader both formats share: loop lines by [`LoopReader`], instruction lines by
//! [`take_terms`], which finds, records and blanks their loop-index terms (replaced by spaces,
//! so columns stay exact) before the instruction itself is read by the unrolled parser's
//! instruction reader. What is `.pir`'s own is which numbers are parameters (the
//! [`TermScan`] of a line), the header lines, and the dependency edges.

use std::collections::HashMap;

use super::lexer::{numbered_lines, split_comment, Cursor, ParseError};
use super::loop_nest::LoopReader;
use super::loop_syntax::first_word;
use super::loop_terms::{operand_param, take_terms, LineTerms, TermScan};
use super::loops::{LoopLine, QUEUE_KEY};
use super::parse::{inst_after_id, parse_with_source_map, SourceMap};
use crate::deps::compute_deps;
use crate::entity::InstId;
use crate::error::Entity;
use crate::function::Function;
use crate::looped::{first_iteration, for_each_first_iteration, Item, LoopedFunction, PirInst, Stepped};

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
        first_iteration(&lf.body, n).map(LoopLine::Inst)
    }

    /// The line of the instruction that unrolled instruction `n` is an iteration of.
    pub fn unrolled_line(&self, lf: &LoopedFunction, n: u64) -> Option<usize> {
        self.line_of(Self::unrolled_at(lf, n)?)
    }

    /// The source map of the expansion: the header lines, and every unrolled instruction on
    /// the line of the instruction it is an iteration of. Takes time linear in the unrolled
    /// size.
    pub fn unrolled(&self, lf: &LoopedFunction) -> SourceMap {
        let mut insts = Vec::new();
        for_each_first_iteration(&lf.body, |first| insts.push(self.line_of(LoopLine::Inst(first)).unwrap_or(0)));
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

/// Where the scan of an instruction line is.
#[derive(Default)]
struct Scan {
    in_tile: bool,
    in_dim: bool,
    in_after: bool,
    deps: usize,
}

impl<'a> TermScan<'a> for Scan {
    type Slot = Slot<'a>;

    const FOLLOWS: &'static str =
        "a start partition, an element offset, an instruction id in `after(...)` or a queue hint";

    fn word(&mut self, w: &'a str, rest: &'a str) {
        if w == "after" && rest.trim_start().starts_with('(') {
            (self.in_after, self.deps) = (true, 0);
        }
        if self.in_after && w.len() > 1 && w.starts_with('i') && w.bytes().skip(1).all(|x| x.is_ascii_digit()) {
            self.deps += 1;
        }
    }

    fn byte(&mut self, b: &[u8], i: usize) {
        match b[i] {
            b'{' => self.in_tile = true,
            b'}' => self.in_tile = false,
            b'[' => self.in_dim = true,
            b']' => self.in_dim = false,
            b')' => self.in_after = false,
            _ => {}
        }
    }

    /// The number ending at `p`, read in context.
    fn slot(&self, key: &'a str, b: &[u8], p: usize) -> Option<Slot<'a>> {
        let mut q = p;
        while q > 0 && b[q - 1].is_ascii_digit() {
            q -= 1;
        }
        if q == p {
            return None;
        }
        let before = |k: usize| q.checked_sub(k).map(|x| b[x]);
        if self.in_after && before(1) == Some(b'i') && !before(2).is_some_and(super::loop_syntax::is_word) {
            return Some(Slot::Dep(self.deps.checked_sub(1)?));
        }
        if !self.in_tile && !self.in_after && key == QUEUE_KEY && before(1) == Some(b'=') {
            return Some(Slot::Queue);
        }
        if !self.in_tile || self.in_dim {
            return None;
        }
        if matches!(before(1), Some(b'+' | b'-')) && matches!(before(2), Some(b' ' | b']')) {
            return Some(Slot::Offset(key));
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
                return Some(Slot::Partition(key));
            }
        }
        None
    }
}

/// The body parser's state.
struct Body {
    items: Vec<Item<PirInst>>,
    map: LoopSourceMap,
    loops: LoopReader<PirInst>,
    /// The line and column of the first loop.
    first_loop: Option<(usize, usize)>,
    any_after: bool,
}

impl Body {
    fn open(&mut self, c: Cursor<'_>, line_no: usize) -> Result<(), ParseError> {
        let col = self.loops.open(c, line_no)?;
        self.first_loop.get_or_insert((line_no, col));
        Ok(())
    }

    fn close(&mut self, c: Cursor<'_>, line_no: usize) -> Result<(), ParseError> {
        let closed = self.loops.close(c, "function", &mut self.items)?;
        self.map.lines.insert(LoopLine::Open(closed.first, closed.depth), closed.line);
        self.map.lines.insert(LoopLine::Close(closed.first, closed.depth), line_no);
        Ok(())
    }

    fn instruction(&mut self, header: &Function, code: &str, line_no: usize) -> Result<(), ParseError> {
        let LineTerms { terms, blanked } = take_terms(line_no, code, Scan::default())?;
        let mut c = Cursor::new(line_no, &blanked);
        let (id_col, n) = c.id(
            'i',
            "a line starting with `kernel`, `debug_name`, `inputs`, `outputs`, `tensor`, `loop`, `}` or `iN =`",
        )?;
        let index = self.loops.index();
        if u64::from(n) != index {
            return Err(c.error_at(
                id_col,
                format!("instruction id i{n} does not match its place in the unrolled program order (i{index})"),
            ));
        }
        c.expect("=")?;
        let (data, deps, loc) = inst_after_id(&mut c, InstId(n), header)?;
        c.expect_end()?;
        self.any_after |= deps.is_some();
        let inst = PirInst { data, deps: deps.unwrap_or_default(), loc: loc.map(crate::SourceLoc::from) };
        let names = inst.data.operand_names();
        let operands = inst.data.operands().len();
        let names = &names[..operands.min(names.len())];
        let coefs = self.loops.coefs(code, line_no, &terms, inst.param_count(), |slot| match slot {
            Slot::Partition(k) => operand_param(names, k, true, "operand"),
            Slot::Offset(k) => operand_param(names, k, false, "operand"),
            Slot::Dep(k) => Ok(2 * operands + k),
            Slot::Queue if inst.data.queue_hint().is_some() => Ok(2 * operands + inst.deps.len()),
            Slot::Queue => Err(format!("{} has no queue hint to step", inst.data.opcode())),
        })?;
        self.map.lines.insert(LoopLine::Inst(index), line_no);
        self.loops.push_inst(inst, &coefs, &mut self.items);
        Ok(())
    }
}

const HEADER_WORDS: [&str; 6] = ["kernel", "debug_name", "inputs", "outputs", "layout", "tensor"];

/// Parse looped `.pir` text, also returning the line of every entity.
pub fn parse_looped_with_source_map(text: &str) -> Result<(LoopedFunction, LoopSourceMap), ParseError> {
    // The header, read by the unrolled parser with every other line blanked.
    let mut header_text = String::with_capacity(text.len());
    for (n, raw) in numbered_lines(text) {
        if n > 1 {
            header_text.push('\n');
        }
        if first_word(split_comment(raw).0).is_some_and(|w| HEADER_WORDS.contains(&w)) {
            header_text.push_str(raw);
        }
    }
    let (header, hmap) = parse_with_source_map(&header_text)?;
    let mut map = LoopSourceMap::default();
    map.lines.insert(LoopLine::Plain(Entity::Function), hmap.kernel);
    for (t, &line) in hmap.tensors.iter().enumerate() {
        map.lines.insert(LoopLine::Plain(Entity::Tensor(crate::TensorId(t as u32))), line);
    }
    let mut body = Body { items: Vec::new(), map, loops: LoopReader::default(), first_loop: None, any_after: false };
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
        match word {
            Some("layout") => {
                return Err(c.error("a looped function has no `layout` line (its line order is the program order)"))
            }
            Some(w) if HEADER_WORDS.contains(&w) => {
                if let Some(depth) = body.loops.depth().checked_sub(1) {
                    return Err(c.error(format!("a `{w}` line inside loop i{depth} (close the loop first)")));
                }
            }
            Some("loop") => body.open(c, line_no)?,
            _ if c.peek() == Some('}') => body.close(c, line_no)?,
            _ => body.instruction(&header, code, line_no)?,
        }
    }
    body.loops.unclosed()?;
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
