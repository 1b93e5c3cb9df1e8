//! Loops in the `.pir` text: printing a [`LoopedFunction`] (read back by
//! [`crate::text::parse_loops`]).
//!
//! The instructions of a function may sit in loops:
//!
//! ```text
//! kernel fill
//! tensor t0 "x" sbuf fp32 [128, 512] @0
//! i0 = memset engine=pool value=0 dst=t0{p0[1, 128] +0 [1, 64]}
//! loop i0 x4 {
//!   i1 = memset engine=pool value=0 dst=t0{p0[1, 32] +64+64*i0 [1, 64]} after(i0+1*i0 waw)
//!   loop i1 x2 {
//!     i2 = memset engine=pool value=1 dst=t0{p0+32*i1[1, 32] +0+128*i0 [1, 64]} after(i1+3*i0 raw)
//!   }
//! }
//! ```
//!
//! - `loop iD xT {` opens a loop of `T` trips (`1 <= T < 2^32`) whose index is `iD`, `D` its
//!   depth (`i0` outermost, at most 64 deep); a line `}` closes the innermost open loop. Bodies are indented
//!   two spaces per level and may not be empty.
//! - A *parameter* (a tile's start partition `pN`, its element offset `+N` / `-N`, a
//!   dependency's instruction `iN` in `after(...)`, a DMA queue hint `queue=N`) may be
//!   followed by terms `+C*iD` /
//!   `-C*iD`: its value in iteration `(i0, i1, ...)` of the enclosing loops is the number plus
//!   each coefficient times its index. The coefficient of `iD` is the loop's per-iteration step
//!   of that parameter ([`PirInst`]'s parameters). An index must belong to an enclosing loop
//!   and appear at most once per parameter; `+iD` means `+1*iD`. A loop index is only ever
//!   written after a `+` or `-`, an instruction id never is: that keeps them apart.
//! - An instruction's id `iN` is its place in the unrolled program order in the first
//!   iteration (all indices 0), and must be exactly that.
//! - Nothing else changes from one iteration to the next (see [`crate::looped`]).
//! - There is no `layout` line: the line order is the program order. Dependency edges are
//!   computed (as for an unrolled text without any `after(...)`) only for a function without
//!   loops; a function with loops lists them, with `after()` on its first instruction when it
//!   has none at all.
//!
//! A function without loops prints exactly as the unrolled function does. The unrolled size
//! is limited to 2^48 instructions ([`crate::text::lexer::MAX_EXTENT`]).

use std::fmt::{self, Write as _};

use crate::deps::compute_deps;
use crate::error::Entity;
use crate::function::{Function, FunctionView};
use crate::looped::{Item, LoopedFunction, PirInst};
use crate::text::loop_nest::{print_items, text_of, LoopPrinter};
use crate::text::loop_syntax::param_terms;
use crate::text::print::lines;
use crate::tile::InstTile;

/// What a line of looped `.pir` text prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoopLine {
    /// A header line (the `kernel`, `debug_name`, `inputs` and `outputs` lines are all
    /// [`Entity::Function`]; a tensor line is its tensor).
    Plain(Entity),
    /// An instruction, by the unrolled index of its first iteration.
    Inst(u64),
    /// `loop iD xT {`: the unrolled index of its first instruction, and its depth.
    Open(u64, usize),
    /// The `}` of that loop.
    Close(u64, usize),
}

pub use super::loop_syntax::terms;

/// The attribute key of a DMA queue hint, the one attribute that is a loop parameter.
pub(crate) const QUEUE_KEY: &str = "queue";

/// A tile whose start partition and offset have the given terms; with none, as the
/// unrolled printer writes it.
fn tile_text(header: &Function, t: &InstTile, part: &str, off: &str) -> String {
    let stated = match header.tensor(t.tensor) {
        Some(td) if td.memory == t.memory && td.dtype == t.dtype => String::new(),
        _ => format!(":{}:{}", t.memory, t.dtype),
    };
    let ap = &t.ap;
    let mut s =
        format!("{}{stated}{{p{}{}{} {:+}{}", t.tensor, ap.start_partition, part, ap.partitions, ap.offset, off);
    for d in &ap.free {
        let _ = write!(s, " {d}");
    }
    s.push('}');
    s
}

/// One instruction line (without indentation) whose parameters have the given coefficients
/// (`coefs[q]` for parameter `q`, in [`PirInst`]'s order); with no loops, the line the
/// unrolled printer writes.
pub fn inst_text_looped(header: &Function, index: u64, i: &PirInst, coefs: &[Vec<i64>], empty_after: bool) -> String {
    let coef = |q: usize| param_terms(coefs, q);
    let mut s = format!("i{index} = {}", i.data.opcode());
    let operands = i.data.operands();
    // The queue hint is the last parameter, after the edges.
    let queue = coef(2 * operands.len() + i.deps.len());
    for (key, value) in i.data.attributes() {
        let stepped = if key == QUEUE_KEY { queue.as_str() } else { "" };
        let _ = write!(s, " {key}={value}{stepped}");
    }
    for (a, ((t, _), name)) in operands.iter().zip(i.data.operand_names()).enumerate() {
        let _ = write!(s, " {name}={}", tile_text(header, t, &coef(2 * a + 1), &coef(2 * a)));
    }
    if !i.deps.is_empty() || empty_after {
        let base = 2 * operands.len();
        let list: Vec<String> =
            i.deps.iter().enumerate().map(|(k, d)| format!("{}{} {}", d.from, coef(base + k), d.kind.name())).collect();
        let _ = write!(s, " after({})", list.join(", "));
    }
    if let Some(loc) = &i.loc {
        let _ = write!(s, " {}", crate::text::print::loc_text(loc));
    }
    s
}

/// Whether any item is a loop.
fn has_loops(items: &[Item<PirInst>]) -> bool {
    items.iter().any(|it| matches!(it, Item::Loop(_)))
}

/// Whether any instruction has an edge.
fn has_edges(items: &[Item<PirInst>]) -> bool {
    items.iter().any(|it| match it {
        Item::Inst(i) => !i.deps.is_empty(),
        Item::Loop(l) => has_edges(&l.body),
    })
}

/// Whether the first instruction must say `after()`: the function has no edges, and a
/// parser would compute some (without loops) or needs them listed (with loops).
fn needs_empty_after(lf: &LoopedFunction) -> bool {
    if has_edges(&lf.body) {
        return false;
    }
    if has_loops(&lf.body) {
        return true;
    }
    lf.expand().is_ok_and(|f| compute_deps(&f).iter().any(|d| !d.is_empty()))
}

/// The `.pir` instruction lines of a looped function.
struct Printer<'a> {
    header: &'a Function,
    /// Whether the next instruction must say `after()` (see [`needs_empty_after`]).
    empty_after: bool,
}

impl LoopPrinter<PirInst> for Printer<'_> {
    type Line = LoopLine;

    fn inst(&mut self, index: u64, i: &PirInst, coefs: &[Vec<i64>], line: &mut String) -> LoopLine {
        line.push_str(&inst_text_looped(self.header, index, i, coefs, self.empty_after));
        self.empty_after = false;
        LoopLine::Inst(index)
    }

    fn open(&self, first: u64, depth: usize) -> LoopLine {
        LoopLine::Open(first, depth)
    }

    fn close(&self, first: u64, depth: usize) -> LoopLine {
        LoopLine::Close(first, depth)
    }
}

/// The looped function's lines, each with what it prints.
pub fn looped_lines(lf: &LoopedFunction) -> Vec<(LoopLine, String)> {
    let mut header = lf.header.clone();
    header.insts.clear();
    header.layout.clear();
    header.deps.clear();
    let mut out: Vec<(LoopLine, String)> = lines(&header).into_iter().map(|(e, s)| (LoopLine::Plain(e), s)).collect();
    let mut printer = Printer { header: &header, empty_after: needs_empty_after(lf) };
    print_items(&lf.body, 0, &mut printer, &mut out);
    out
}

/// The `.pir` text of a looped function.
pub fn print_looped(lf: &LoopedFunction) -> String {
    text_of(looped_lines(lf))
}

impl fmt::Display for LoopedFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_looped(self))
    }
}

#[cfg(test)]
#[path = "loops_tests.rs"]
mod tests;
