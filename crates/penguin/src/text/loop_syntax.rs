//! The loop syntax both text formats share (`.pir` and `.bir`): a loop's opening line
//! `loop iD xT {`, and the `+C*iD` / `-C*iD` terms that follow a parameter. Each format
//! decides which numbers are parameters; the spelling of loops and terms is written and read
//! here once.

use std::fmt::Write as _;

use super::lexer::{Cursor, ParseError};

/// The deepest loop nest a text may open (the walks over a looped body recurse per level).
pub const MAX_LOOP_DEPTH: usize = 64;

/// `+C*iD` terms of one parameter (a coefficient per loop level, outermost first).
pub fn terms(coefs: &[i64]) -> String {
    let mut s = String::new();
    for (d, &c) in coefs.iter().enumerate() {
        if c != 0 {
            let sign = if c < 0 { '-' } else { '+' };
            let _ = write!(s, "{sign}{}*i{d}", c.unsigned_abs());
        }
    }
    s
}

/// The terms of parameter `q` whose coefficients are `coefs[q]` (none when `coefs` has no
/// entry for it).
pub fn param_terms(coefs: &[Vec<i64>], q: usize) -> String {
    coefs.get(q).map_or_else(String::new, |c| terms(c))
}

/// The first word of a line of code, which says what kind of line it is.
pub fn first_word(code: &str) -> Option<&str> {
    Cursor::new(0, code).word().map(|(_, w)| w)
}

/// Whether `b` can be part of a word (an identifier or a number).
pub fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The column of byte `pos` of `code` (count it only for an error, so that a line of many
/// terms is read in linear time).
pub fn col(code: &str, pos: usize) -> usize {
    code.get(..pos).map_or(pos, |s| s.chars().count()) + 1
}

/// One `[+-][C*]iD` term of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopTerm {
    /// The signed coefficient (`+iD` is 1).
    pub coef: i64,
    /// The loop depth `D`.
    pub depth: usize,
    /// The byte just past the term.
    pub end: usize,
}

/// The term starting at byte `i` of `code` (a `+` or `-`), if one does: `[+-] [DIGITS '*']
/// 'i' DIGITS` not followed by a word character. A coefficient or index out of range is an
/// error on line `line`.
pub fn loop_term(code: &str, i: usize, line: usize) -> Result<Option<LoopTerm>, ParseError> {
    let b = code.as_bytes();
    let Some(&sign @ (b'+' | b'-')) = b.get(i) else { return Ok(None) };
    let err = |pos: usize, message: String| ParseError { line, col: col(code, pos), message };
    let digits = |from: usize| (from..b.len()).find(|&j| !b[j].is_ascii_digit()).unwrap_or(b.len());
    let d0 = digits(i + 1);
    let (coef_end, after) = if d0 > i + 1 && b.get(d0) == Some(&b'*') { (d0, d0 + 1) } else { (i + 1, i + 1) };
    let d1 = if b.get(after) == Some(&b'i') { digits(after + 1) } else { after };
    if d1 == after || d1 == after + 1 || b.get(d1).is_some_and(|&x| is_word(x)) {
        return Ok(None);
    }
    let out_of_range = || err(i, format!("loop step `{}` is out of range", &code[i..coef_end]));
    let magnitude: i128 =
        if coef_end > i + 1 { code[i + 1..coef_end].parse().map_err(|_| out_of_range())? } else { 1 };
    let coef = i64::try_from(if sign == b'-' { -magnitude } else { magnitude }).map_err(|_| out_of_range())?;
    let depth: usize =
        code[after + 1..d1].parse().map_err(|_| err(after, format!("unknown loop index `{}`", &code[after..d1])))?;
    Ok(Some(LoopTerm { coef, depth, end: d1 }))
}

/// Read `loop iD xT {` (the rest of the line after the cursor) for a loop opened at `depth`:
/// its column and trip count (`1 <= T < 2^32`).
pub fn loop_header(c: &mut Cursor<'_>, depth: usize) -> Result<(usize, u32), ParseError> {
    let (col, _) = c.expect_word("`loop`")?;
    if depth >= MAX_LOOP_DEPTH {
        return Err(c.error_at(col, format!("loops nest at most {MAX_LOOP_DEPTH} deep")));
    }
    let (icol, id) = c.id('i', "a loop index `iD`")?;
    if id as usize != depth {
        return Err(
            c.error_at(icol, format!("expected loop index `i{depth}` (indices are numbered by depth), found `i{id}`"))
        );
    }
    let (tcol, w) = c.expect_word("a trip count `xT`")?;
    let trips: u64 = match w.strip_prefix('x') {
        Some(d) if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) => {
            d.parse().map_err(|_| c.error_at(tcol, format!("trip count `{w}` is out of range")))?
        }
        _ => return Err(c.error_at(tcol, format!("expected a trip count `xT`, found `{w}`"))),
    };
    let trips = u32::try_from(trips)
        .map_err(|_| c.error_at(tcol, format!("trip count {trips} is out of range (at most {})", u32::MAX)))?;
    if trips == 0 {
        return Err(c.error_at(tcol, "a loop needs at least 1 trip (found x0)"));
    }
    c.expect("{")?;
    c.expect_end()?;
    Ok((col, trips))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_print_and_read_back() {
        assert_eq!(terms(&[0, 512, -3]), "+512*i1-3*i2");
        let code = "@0+512*i1-3*i2 +i0x";
        assert_eq!(loop_term(code, 2, 1), Ok(Some(LoopTerm { coef: 512, depth: 1, end: 9 })));
        assert_eq!(loop_term(code, 9, 1), Ok(Some(LoopTerm { coef: -3, depth: 2, end: 14 })));
        // Followed by a word character: no term.
        assert_eq!(loop_term(code, 15, 1), Ok(None));
        assert_eq!(loop_term(code, 0, 1), Ok(None));
        let e = loop_term("+99999999999999999999*i0", 0, 4).unwrap_err();
        assert_eq!((e.line, e.col, e.message.as_str()), (4, 1, "loop step `+99999999999999999999` is out of range"));
        let e = loop_term("+1*i99999999999999999999", 0, 4).unwrap_err();
        assert_eq!((e.col, e.message.as_str()), (4, "unknown loop index `i99999999999999999999`"));
    }
}
