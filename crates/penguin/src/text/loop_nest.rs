//! The loop nest of a looped text, for both formats: printing a looped sequence (loop lines
//! with their indentation, instruction lines with each parameter's coefficients) and reading
//! one back (open loops, their bodies and steps, the checks on `}` and on loop indices).
//!
//! Each format prints and reads its own instruction lines ([`LoopPrinter`], and the reader's
//! [`LoopReader::push_inst`] takes what the format read); the nest around them is written
//! here once.

use std::fmt::Write as _;

use super::lexer::{Cursor, ParseError, MAX_EXTENT};
use super::loop_syntax::{col, loop_header};
use super::loop_terms::Term;
use crate::looped::{Item, Loop, Stepped};

/// A format's printing of the instructions and loop lines of a looped sequence.
pub trait LoopPrinter<I> {
    /// What a line prints, as the format's source maps name it.
    type Line;

    /// Append to `line` (which holds the indentation) the text of instruction `index` (the
    /// unrolled index of its first iteration), whose parameter `q` has coefficients
    /// `coefs[q]` (one per enclosing loop, outermost first); what the line prints.
    fn inst(&mut self, index: u64, inst: &I, coefs: &[Vec<i64>], line: &mut String) -> Self::Line;

    /// What the `loop iD xT {` line of the loop at depth `depth` whose first instruction is
    /// `first` prints.
    fn open(&self, first: u64, depth: usize) -> Self::Line;

    /// What that loop's `}` prints.
    fn close(&self, first: u64, depth: usize) -> Self::Line;
}

/// Append the lines of `items` to `out`, each indented two spaces per loop level plus
/// `indent` levels.
pub fn print_items<I: Stepped, P: LoopPrinter<I>>(
    items: &[Item<I>],
    indent: usize,
    printer: &mut P,
    out: &mut Vec<(P::Line, String)>,
) {
    let mut w = Walk { printer, indent, steps: Vec::new(), index: 0, out };
    w.items(items);
}

/// The text of printed lines (from [`print_items`] and the format's header lines): each
/// line, then a newline.
pub fn text_of<L>(lines: Vec<(L, String)>) -> String {
    let mut s = String::with_capacity(lines.iter().map(|(_, line)| line.len() + 1).sum());
    for (_, line) in lines {
        s.push_str(&line);
        s.push('\n');
    }
    s
}

/// The printing walk: the enclosing loops' steps, each with how far into it the walk has come.
struct Walk<'a, 'p, P: LoopPrinter<I>, I> {
    printer: &'p mut P,
    indent: usize,
    steps: Vec<(&'a [i64], usize)>,
    index: u64,
    out: &'p mut Vec<(P::Line, String)>,
}

impl<'a, P: LoopPrinter<I>, I: Stepped> Walk<'a, '_, P, I> {
    fn items(&mut self, items: &'a [Item<I>]) {
        for it in items {
            let indent = "  ".repeat(self.steps.len() + self.indent);
            match it {
                Item::Inst(i) => {
                    let n = i.param_count();
                    let coefs: Vec<Vec<i64>> = (0..n)
                        .map(|q| self.steps.iter().map(|(s, at)| s.get(at + q).copied().unwrap_or(0)).collect())
                        .collect();
                    for (_, at) in &mut self.steps {
                        *at += n;
                    }
                    let mut text = indent;
                    let line = self.printer.inst(self.index, i, &coefs, &mut text);
                    self.out.push((line, text));
                    self.index = self.index.saturating_add(1);
                }
                Item::Loop(l) => self.a_loop(l, indent),
            }
        }
    }

    fn a_loop(&mut self, l: &'a Loop<I>, indent: String) {
        let (start, depth) = (self.index, self.steps.len());
        let mut open = indent.clone();
        let _ = write!(open, "loop i{depth} x{} {{", l.trips);
        self.out.push((self.printer.open(start, depth), open));
        self.steps.push((&l.step, 0));
        self.items(&l.body);
        self.steps.pop();
        self.index = start.saturating_add(crate::looped::unrolled_len(&l.body).saturating_mul(u64::from(l.trips)));
        self.out.push((self.printer.close(start, depth), indent + "}"));
    }
}

/// A loop open while a looped text is read.
struct Open<I> {
    trips: u32,
    line: usize,
    col: usize,
    start: u64,
    items: Vec<Item<I>>,
    step: Vec<i64>,
}

/// A loop that a `}` closed ([`LoopReader::close`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Closed {
    /// The unrolled index of its first instruction.
    pub first: u64,
    /// Its depth.
    pub depth: usize,
    /// The line of its `loop` line.
    pub line: usize,
}

/// The loops open while the body of a looped sequence is read, and the unrolled index of the
/// next instruction. Items outside every loop go to the sequence the caller passes.
pub struct LoopReader<I> {
    open: Vec<Open<I>>,
    index: u64,
}

impl<I> Default for LoopReader<I> {
    fn default() -> Self {
        LoopReader { open: Vec::new(), index: 0 }
    }
}

impl<I: Stepped> LoopReader<I> {
    /// How many loops are open.
    pub fn depth(&self) -> usize {
        self.open.len()
    }

    /// The unrolled index of the next instruction.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Start a new sequence (a `.bir` stream section): the next instruction is its first.
    pub fn restart(&mut self) {
        self.index = 0;
    }

    /// An error at the innermost open loop, if any: it is not closed.
    pub fn unclosed(&self) -> Result<(), ParseError> {
        match self.open.last() {
            Some(f) => Err(ParseError {
                line: f.line,
                col: f.col,
                message: format!("loop i{} is not closed (a `}}` is missing)", self.open.len() - 1),
            }),
            None => Ok(()),
        }
    }

    /// Read `loop iD xT {` (the cursor at `loop`) on line `line_no`; the column of `loop`.
    pub fn open(&mut self, mut c: Cursor<'_>, line_no: usize) -> Result<usize, ParseError> {
        let (col, trips) = loop_header(&mut c, self.open.len())?;
        self.open.push(Open { trips, line: line_no, col, start: self.index, items: Vec::new(), step: Vec::new() });
        Ok(col)
    }

    /// Read `}` (the cursor at it), closing the innermost loop into its parent or `top`. The
    /// unrolled `sequence` ("function", "stream") is limited to [`MAX_EXTENT`] instructions.
    pub fn close(&mut self, mut c: Cursor<'_>, sequence: &str, top: &mut Vec<Item<I>>) -> Result<Closed, ParseError> {
        let col = c.col();
        c.expect("}")?;
        c.expect_end()?;
        let Some(f) = self.open.pop() else {
            return Err(c.error_at(col, "a `}` with no open loop"));
        };
        if f.items.is_empty() {
            return Err(c.error_at(col, format!("loop i{} has an empty body", self.open.len())));
        }
        let body = self.index - f.start;
        let end = u128::from(f.start) + u128::from(body) * u128::from(f.trips);
        if end > u128::from(MAX_EXTENT) {
            return Err(ParseError {
                line: f.line,
                col: f.col,
                message: format!("the {sequence} unrolls to {end} instructions, more than 2^48"),
            });
        }
        self.index = end as u64;
        let closed = Closed { first: f.start, depth: self.open.len(), line: f.line };
        self.push(Item::Loop(Loop { trips: f.trips, body: f.items, step: f.step }), top);
        Ok(closed)
    }

    /// The coefficients of an instruction's `params` parameters (one per open loop,
    /// outermost first) from the `terms` of its line `line_no` (`code`); `param` gives the
    /// parameter a term's slot is, or the error on it.
    pub fn coefs<S: Copy>(
        &self,
        code: &str,
        line_no: usize,
        terms: &[Term<S>],
        params: usize,
        param: impl Fn(S) -> Result<usize, String>,
    ) -> Result<Vec<Vec<i64>>, ParseError> {
        let depth = self.open.len();
        let mut coefs = vec![vec![0i64; depth]; params];
        for t in terms {
            let at = |m: String| ParseError { line: line_no, col: col(code, t.pos), message: m };
            let q = param(t.slot).map_err(at)?;
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
        Ok(coefs)
    }

    /// The most that a parameter with these coefficients adds to its first value over the
    /// iteration box of the open loops.
    pub fn reach(&self, coefs: &[i64]) -> i128 {
        coefs.iter().zip(&self.open).map(|(&c, f)| (i128::from(c) * (i128::from(f.trips) - 1)).max(0)).sum()
    }

    /// Add an instruction read with these coefficients (from [`Self::coefs`]) to the innermost
    /// open loop (its steps grow by them) or to `top`.
    pub fn push_inst(&mut self, inst: I, coefs: &[Vec<i64>], top: &mut Vec<Item<I>>) {
        for (m, f) in self.open.iter_mut().enumerate() {
            f.step.extend(coefs.iter().map(|row| row[m]));
        }
        self.push(Item::Inst(inst), top);
        self.index += 1;
    }

    fn push(&mut self, item: Item<I>, top: &mut Vec<Item<I>>) {
        match self.open.last_mut() {
            Some(f) => f.items.push(item),
            None => top.push(item),
        }
    }
}

#[cfg(test)]
#[path = "loop_nest_tests.rs"]
mod tests;
