//! Loops in the `.bir` text: printing a [`LoopedProgram`] and parsing it back.
//!
//! A stream section may hold loops around its instructions:
//!
//! ```text
//! stream dma0:
//!   0: memset value=0 dst=sbuf.fp32[p0:128:1 @0 [1, 8]]
//!   loop i0 x32 {
//!     1: dma_copy cast=rne dst=sbuf.bf16[p0:128:1 @4096+512*i0 [1, 256]] src=hbm.bf16[p0:128:1 @0+65536*i0 [1, 256]] wait(s3>=5+1*i0) signal(s4)
//!     loop i1 x4 {
//!       2: memset value=0 dst=sbuf.fp32[p0+32*i1:32:1 @64*i0 [1, 8]]
//!     }
//!   }
//! ```
//!
//! - `loop iD xT {` opens a loop of `T` trips (`1 <= T < 2^32`) whose index is `iD`, `D` its
//!   depth (`i0` outermost); a line `}` closes the innermost open loop. Bodies are indented
//!   two spaces per level and may not be empty.
//! - A *parameter* (a start partition `pN`, a byte offset `@N`, a wait value `sK>=N`) may be
//!   followed by terms `+C*iD` / `-C*iD`: its value in iteration `(i0, i1, ...)` of the
//!   enclosing loops is the number plus each coefficient times its index. The coefficient of
//!   `iD` is the loop's per-iteration step of that parameter. An index must belong to an
//!   enclosing loop, and appear at most once per parameter. `+iD` means `+1*iD`.
//! - The optional `N:` before an instruction is the index in the unrolled stream of its first
//!   iteration (all indices 0).
//! - Nothing else changes from one iteration to the next (see [`crate::looped`]).
//!
//! A stream without loops prints exactly as in an unrolled program; a program without loops
//! is the same text in both forms. The unrolled size of a stream is limited to 2^48
//! instructions ([`penguin::text::lexer::MAX_EXTENT`]).

use std::fmt::Write as _;

use penguin::text::loop_nest::{print_items, text_of, LoopPrinter};
use penguin::text::loop_syntax::param_terms;

use super::print::{lines, Line};
use crate::looped::LoopedProgram;
use crate::program::{BirInst, Engine, HwAp, InstRef};

/// What a line of looped text prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoopLine {
    /// A line of the unrolled format: header lines, stream headers, and instructions (by
    /// engine and the unrolled index of their first iteration).
    Plain(Line),
    /// `loop iD xT {`: engine, unrolled index of its first instruction, depth.
    Open(Engine, u64, usize),
    /// The `}` of that loop.
    Close(Engine, u64, usize),
}

/// An access pattern with its parameters' terms (`part` after the start partition, `off`
/// after the byte offset).
fn ap_text(ap: &HwAp, part: &str, off: &str) -> String {
    let mut s = format!(
        "{}.{}[p{}{}:{}:{} @{}{}",
        ap.memory, ap.dtype, ap.start_partition, part, ap.num_partitions, ap.partition_stride, ap.byte_offset, off
    );
    for d in &ap.dims {
        let _ = write!(s, " {d}");
    }
    s.push(']');
    s
}

/// One instruction whose parameters have the given coefficients (`coefs[q]` for parameter
/// `q`, in [`crate::looped::params`] order); with no loops, the same as
/// [`super::inst_text`].
pub fn inst_text_looped(i: &BirInst, coefs: &[Vec<i64>]) -> String {
    let coef = |q: usize| param_terms(coefs, q);
    let mut s = String::from(i.op.name());
    for (key, value) in i.op.attributes() {
        let _ = write!(s, " {key}={value}");
    }
    let aps = i.op.aps();
    for (a, (name, ap)) in aps.iter().enumerate() {
        let _ = write!(s, " {name}={}", ap_text(ap, &coef(2 * a + 1), &coef(2 * a)));
    }
    if !i.waits.is_empty() {
        let base = 2 * aps.len();
        let waits: Vec<String> =
            i.waits.iter().enumerate().map(|(k, w)| format!("{}>={}{}", w.sem, w.value, coef(base + k))).collect();
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

/// The `.bir` instruction lines of one stream.
struct Printer {
    e: Engine,
}

impl LoopPrinter<BirInst> for Printer {
    type Line = LoopLine;

    fn inst(&mut self, index: u64, i: &BirInst, coefs: &[Vec<i64>], line: &mut String) -> LoopLine {
        let _ = write!(line, "{index}: {}", inst_text_looped(i, coefs));
        LoopLine::Plain(Line::Inst(InstRef { engine: self.e, index: index as usize }))
    }

    fn open(&self, first: u64, depth: usize) -> LoopLine {
        LoopLine::Open(self.e, first, depth)
    }

    fn close(&self, first: u64, depth: usize) -> LoopLine {
        LoopLine::Close(self.e, first, depth)
    }
}

/// The looped program's lines, each with what it prints.
pub fn looped_lines(lp: &LoopedProgram) -> Vec<(LoopLine, String)> {
    let mut header = lp.header.clone();
    header.streams = vec![Vec::new(); crate::NUM_ENGINES];
    let mut out: Vec<(LoopLine, String)> = lines(&header).into_iter().map(|(l, s)| (LoopLine::Plain(l), s)).collect();
    for e in Engine::all() {
        let items = lp.stream(e);
        if items.is_empty() {
            continue;
        }
        out.push((LoopLine::Plain(Line::Stream(e)), format!("stream {e}:")));
        print_items(items, 1, &mut Printer { e }, &mut out);
    }
    out
}

/// The `.bir` text of a looped program.
pub fn print_looped(lp: &LoopedProgram) -> String {
    text_of(looped_lines(lp))
}

impl std::fmt::Display for LoopedProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&print_looped(self))
    }
}

#[cfg(test)]
#[path = "loops_tests.rs"]
mod tests;
