//! Finding the loop-index terms (`+C*iD`) on an instruction line of a looped text, for both
//! formats: the scan of the line, which parameter each term follows, duplicates, and the line
//! with the terms blanked (replaced by spaces, so that columns stay exact) for the format's
//! unrolled instruction reader.
//!
//! Which numbers are parameters is each format's to say ([`TermScan`]): the scan tells it the
//! words and bytes of the line in order, and asks it which parameter, if any, the number
//! before a term is. A term right after another term belongs to the same parameter.

use std::collections::HashSet;
use std::hash::Hash;

use super::lexer::ParseError;
use super::loop_syntax::{col, is_word, loop_term, LoopTerm};

/// A format's view of an instruction line during the scan for terms.
pub trait TermScan<'a> {
    /// Which parameter a term follows.
    type Slot: Copy + Eq + Hash;

    /// What a term may follow, for the error on one that follows nothing else
    /// (`a start partition, a byte offset or a wait value`).
    const FOLLOWS: &'static str;

    /// A word of the line (an identifier or a number); `rest` is the line after it.
    fn word(&mut self, word: &'a str, rest: &'a str);

    /// Byte `i` of the line, outside any word, before a term is looked for at it.
    fn byte(&mut self, b: &[u8], i: usize);

    /// The parameter of the number that ends at byte `end` (the spaces before the term
    /// skipped), with `key` the last `KEY=` of the line so far; `None` when no parameter ends
    /// there.
    fn slot(&self, key: &'a str, b: &[u8], end: usize) -> Option<Self::Slot>;
}

/// One `+C*iD` term of an instruction line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Term<S> {
    /// The parameter it follows.
    pub slot: S,
    /// The loop depth `D`.
    pub depth: usize,
    /// The coefficient `C`.
    pub coef: i64,
    /// Its byte position in the line.
    pub pos: usize,
}

/// The terms of an instruction line, and the line with them blanked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineTerms<S> {
    /// The terms, in order.
    pub terms: Vec<Term<S>>,
    /// The line with every term replaced by spaces.
    pub blanked: String,
}

/// The terms of instruction line `line_no`, and the line with them blanked.
pub fn take_terms<'a, S: TermScan<'a>>(
    line_no: usize,
    code: &'a str,
    mut scan: S,
) -> Result<LineTerms<S::Slot>, ParseError> {
    let b = code.as_bytes();
    let err = |pos: usize, m: String| ParseError { line: line_no, col: col(code, pos), message: m };
    let mut blanked = b.to_vec();
    let mut terms = Vec::new();
    let mut seen = HashSet::new();
    let mut key = "";
    let mut last_end: Option<(usize, S::Slot)> = None;
    let mut i = 0;
    while i < b.len() {
        if is_word(b[i]) {
            let j = (i..b.len()).find(|&j| !is_word(b[j])).unwrap_or(b.len());
            let w = &code[i..j];
            if b.get(j) == Some(&b'=') && b.get(j + 1) != Some(&b'=') {
                key = w;
            }
            scan.word(w, &code[j..]);
            i = j;
            continue;
        }
        scan.byte(b, i);
        let Some(LoopTerm { coef, depth, end }) = loop_term(code, i, line_no)? else {
            i += 1;
            continue;
        };
        // The parameter: the number before, or the term before.
        let mut p = i;
        while p > 0 && b[p - 1] == b' ' {
            p -= 1;
        }
        let slot = match last_end {
            Some((e, slot)) if e == p => slot,
            _ => scan.slot(key, b, p).ok_or_else(|| {
                err(i, format!("a loop index term (`{}`) may only follow {}", &code[i..end], S::FOLLOWS))
            })?,
        };
        if !seen.insert((slot, depth)) {
            return Err(err(i, format!("`i{depth}` appears twice in one parameter")));
        }
        terms.push(Term { slot, depth, coef, pos: i });
        blanked[i..end].fill(b' ');
        last_end = Some((end, slot));
        i = end;
    }
    let blanked = String::from_utf8(blanked).map_err(|_| err(0, "the line is not UTF-8".into()))?;
    Ok(LineTerms { terms, blanked })
}

/// The parameter index of the start partition (`partition`) or the offset of the operand
/// named `key` among `names`: an operand's parameters are its offset, then its start
/// partition, operand by operand. `noun` names an operand in the error.
pub fn operand_param(names: &[&str], key: &str, partition: bool, noun: &str) -> Result<usize, String> {
    let a = names.iter().position(|x| *x == key).ok_or_else(|| format!("no {noun} `{key}`"))?;
    Ok(2 * a + usize::from(partition))
}
