//! Tests of the shared looped-text pieces ([`super`] and [`super::super::loop_terms`]) on a
//! toy format, apart from both IRs: an instruction line is `v N N ...`, every number a
//! parameter of a synthetic instruction.

use std::fmt::Write as _;

use super::super::lexer::{numbered_lines, split_comment, Cursor, ParseError};
use super::super::loop_terms::{take_terms, LineTerms, TermScan};
use super::*;
use crate::looped::fixture::{looped, t, T};

/// What a toy line prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ToyLine {
    Inst(u64),
    Open(u64, usize),
    Close(u64, usize),
}

struct Toy;

impl LoopPrinter<T> for Toy {
    type Line = ToyLine;
    fn inst(&mut self, index: u64, v: &T, coefs: &[Vec<i64>], line: &mut String) -> ToyLine {
        line.push_str(v.0);
        for (x, c) in v.1.iter().zip(coefs) {
            let _ = write!(line, " {x}{}", super::super::loop_syntax::terms(c));
        }
        ToyLine::Inst(index)
    }
    fn open(&self, first: u64, depth: usize) -> ToyLine {
        ToyLine::Open(first, depth)
    }
    fn close(&self, first: u64, depth: usize) -> ToyLine {
        ToyLine::Close(first, depth)
    }
}

/// The scan of a toy line: every number is a parameter, counted in order.
#[derive(Default)]
struct Numbers(usize);

impl<'a> TermScan<'a> for Numbers {
    type Slot = usize;
    const FOLLOWS: &'static str = "a number";
    fn word(&mut self, w: &'a str, _: &'a str) {
        self.0 += usize::from(w.bytes().all(|b| b.is_ascii_digit()));
    }
    fn byte(&mut self, _: &[u8], _: usize) {}
    fn slot(&self, _: &'a str, b: &[u8], end: usize) -> Option<usize> {
        (end > 0 && b[end - 1].is_ascii_digit()).then(|| self.0 - 1)
    }
}

/// Read toy text: loop lines, `}` and `v` lines.
fn read(text: &str) -> Result<Vec<Item<T>>, ParseError> {
    let mut top = Vec::new();
    let mut loops = LoopReader::default();
    for (line_no, raw) in numbered_lines(text) {
        let code = split_comment(raw).0;
        let mut c = Cursor::new(line_no, code);
        if c.is_at_end() {
            continue;
        }
        if c.peek() == Some('}') {
            loops.close(c, "sequence", &mut top)?;
            continue;
        }
        if Cursor::new(line_no, code).word().is_some_and(|(_, w)| w == "loop") {
            loops.open(c, line_no)?;
            continue;
        }
        let LineTerms { terms, blanked } = take_terms(line_no, code, Numbers::default())?;
        let mut c = Cursor::new(line_no, &blanked);
        c.expect("v")?;
        let mut v = Vec::new();
        while !c.is_at_end() {
            v.push(c.int::<i64>("a number")?);
        }
        let coefs = loops.coefs(code, line_no, &terms, v.len(), Ok)?;
        loops.push_inst(T("v", v), &coefs, &mut top);
    }
    loops.unclosed()?;
    Ok(top)
}

fn print(items: &[Item<T>]) -> (Vec<ToyLine>, String) {
    let mut out = Vec::new();
    print_items(items, 0, &mut Toy, &mut out);
    let text = out.iter().map(|(_, s)| format!("{s}\n")).collect();
    (out.into_iter().map(|(l, _)| l).collect(), text)
}

const TEXT: &str = "\
v 1
loop i0 x3 {
  v 5+2*i0 7
  loop i1 x2 {
    v 0-1*i0+4*i1
  }
}
v 9
";

fn nest() -> Vec<Item<T>> {
    let inner = looped(2, vec![t("v", &[0])], vec![4]);
    vec![t("v", &[1]), looped(3, vec![t("v", &[5, 7]), inner], vec![2, 0, -1]), t("v", &[9])]
}

#[test]
fn a_nest_prints_with_its_terms_and_reads_back() {
    let (lines, text) = print(&nest());
    assert_eq!(text, TEXT);
    use ToyLine::*;
    assert_eq!(lines, vec![Inst(0), Open(1, 0), Inst(1), Open(2, 1), Inst(2), Close(2, 1), Close(1, 0), Inst(10)]);
    assert_eq!(read(TEXT), Ok(nest()));
    // Terms in another order, `+iD`, spaces before a term.
    assert_eq!(read(&TEXT.replace("0-1*i0+4*i1", "0 +4*i1-i0")), Ok(nest()));
}

#[test]
fn loop_and_term_errors_name_line_and_column() {
    let err = |text: &str| read(text).unwrap_err().to_string();
    assert_eq!(err("loop i0 x2 {\nv 1\n"), "1:1: loop i0 is not closed (a `}` is missing)");
    assert_eq!(err("}\n"), "1:1: a `}` with no open loop");
    assert_eq!(err("loop i0 x2 {\n}\n"), "2:1: loop i0 has an empty body");
    assert_eq!(err("loop i0 x2 {\nv 1+2*i1\n}\n"), "2:4: unknown loop index `i1`: the enclosing loop is i0");
    assert_eq!(err("v 1+2*i0\n"), "1:4: unknown loop index `i0`: no loop encloses this instruction");
    assert_eq!(
        err("loop i0 x2 {\nloop i1 x2 {\nv 1+2*i2\n}\n}\n"),
        "3:4: unknown loop index `i2`: the enclosing loops are i0..i1"
    );
    assert_eq!(err("loop i0 x2 {\nv 1+2*i0-i0\n}\n"), "2:9: `i0` appears twice in one parameter");
    assert_eq!(err("loop i0 x2 {\nv +2*i0\n}\n"), "2:3: a loop index term (`+2*i0`) may only follow a number");
    // The loop line itself.
    assert_eq!(err("loop i0 x0 {\nv 1\n}\n"), "1:9: a loop needs at least 1 trip (found x0)");
    assert_eq!(err("loop i0 x4294967296 {\n"), "1:9: trip count 4294967296 is out of range (at most 4294967295)");
    assert_eq!(err("loop i0 x99999999999999999999 {\n"), "1:9: trip count `x99999999999999999999` is out of range");
    assert_eq!(err("loop i1 x2 {\n"), "1:6: expected loop index `i0` (indices are numbered by depth), found `i1`");
    assert_eq!(err("loop i0 2 {\n"), "1:9: expected a trip count `xT`, found `2`");
    assert_eq!(err("loop i0 x2\n"), "1:11: expected `{`, found end of line");
    let deep: String = (0..65).map(|d| format!("loop i{d} x1 {{\n")).collect();
    assert_eq!(err(&deep), "65:1: loops nest at most 64 deep");
    assert_eq!(
        err("loop i0 x65537 {\nloop i1 x65536 {\nloop i2 x65536 {\nv 1\n}\n}\n}\n"),
        "1:1: the sequence unrolls to 281479271677952 instructions, more than 2^48"
    );
}

#[test]
fn the_reach_of_a_parameter_is_its_greatest_advance() {
    let mut loops: LoopReader<T> = LoopReader::default();
    loops.open(Cursor::new(1, "loop i0 x3 {"), 1).unwrap();
    loops.open(Cursor::new(2, "loop i1 x5 {"), 2).unwrap();
    assert_eq!(loops.depth(), 2);
    // 2 x 10 over i0, -4 x 7 over i1 (which lowers it): at most 20.
    assert_eq!(loops.reach(&[10, -7]), 20);
    assert_eq!(loops.reach(&[0, 3]), 12);
}
