//! The line scanner of ntile's text formats: comments, numbered lines, a [`Cursor`] over one
//! line, the [`ParseError`] it reports and the numeric limits ([`MAX_EXTENT`]) every format
//! applies. The `.pir` parser ([`crate::text::parse`]) and the `.bir` parser of the `bir`
//! crate both read their lines with it.

use std::cell::Cell;
use std::str::FromStr;

use crate::ap::Dim;
use crate::entity::Memory;

/// A syntax error, located at a 1-based line and column (columns count characters).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {message}")]
pub struct ParseError {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub col: usize,
    /// What was expected and what was found.
    pub message: String,
}

/// The largest tensor (bytes), address, offset or access-pattern span (elements) an IR file
/// may describe: 2^48.
pub const MAX_EXTENT: u64 = 1 << 48;

/// Why a shape or address is beyond [`MAX_EXTENT`], if it is.
pub fn tensor_limit(shape: &[u64], elem_bytes: u32, address: Option<u64>) -> Option<String> {
    let bytes = shape.iter().try_fold(u128::from(elem_bytes), |a, &d| a.checked_mul(u128::from(d)));
    if bytes.is_none_or(|b| b > u128::from(MAX_EXTENT)) {
        return Some(format!("shape {shape:?} is larger than 2^48 bytes"));
    }
    match address {
        Some(a) if a > MAX_EXTENT => Some(format!("address {a} is beyond 2^48")),
        _ => None,
    }
}

/// Why an access pattern (an offset and `[stride, num]` walks) reaches beyond [`MAX_EXTENT`]
/// elements, if it does.
pub fn walk_limit(offset: i128, dims: impl IntoIterator<Item = Dim>) -> Option<String> {
    let max = i128::from(MAX_EXTENT);
    let span: i128 = dims.into_iter().map(|d| i128::from(d.stride).abs() * i128::from(d.num.max(1) - 1)).sum();
    (offset.abs() > max || span > max)
        .then(|| format!("the access pattern reaches beyond 2^48 elements (offset {offset}, span {span})"))
}

/// Split a line into its code and its comment (the text after a `;` outside a string).
pub fn split_comment(line: &str) -> (&str, Option<&str>) {
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                (false, _) => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if c == ';' {
            return (&line[..i], Some(&line[i + 1..]));
        }
    }
    (line, None)
}

/// The lines of a text, numbered from 1, with a trailing `\r` removed.
pub fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n').enumerate().map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
}

/// A scanner over the code of one line: words, numbers, strings and punctuation, with the
/// column of everything it reads. Whitespace between tokens is skipped.
///
/// Columns are counted from the last column asked for, not from the start of the line, so
/// scanning a line costs time linear in its length however many tokens it holds.
#[derive(Clone, Debug)]
pub struct Cursor<'a> {
    line: usize,
    text: &'a str,
    pos: usize,
    /// The byte position and column of the last column computed.
    col_mark: Cell<(usize, usize)>,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`, which is line `line` (from 1).
    pub fn new(line: usize, text: &'a str) -> Self {
        Cursor { line, text, pos: 0, col_mark: Cell::new((0, 1)) }
    }

    /// The line number.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The column (from 1) of the next character, after skipping whitespace.
    pub fn col(&mut self) -> usize {
        self.skip_ws();
        self.col_at(self.pos)
    }

    fn col_at(&self, pos: usize) -> usize {
        let (mark, col) = self.col_mark.get();
        let col = if pos >= mark {
            self.text.get(mark..pos).map_or(col, |s| col + s.chars().count())
        } else {
            self.text.get(pos..mark).map_or(col, |s| col - s.chars().count())
        };
        self.col_mark.set((pos, col));
        col
    }

    fn rest(&self) -> &'a str {
        self.text.get(self.pos..).unwrap_or("")
    }

    /// Skip whitespace.
    pub fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    /// Whether only whitespace is left.
    pub fn is_at_end(&mut self) -> bool {
        self.skip_ws();
        self.rest().is_empty()
    }

    /// The next character, after whitespace.
    pub fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.rest().chars().next()
    }

    /// An error at the next token.
    pub fn error(&mut self, message: impl Into<String>) -> ParseError {
        let col = self.col();
        self.error_at(col, message)
    }

    /// An error at a column of this line.
    pub fn error_at(&self, col: usize, message: impl Into<String>) -> ParseError {
        ParseError { line: self.line, col, message: message.into() }
    }

    /// A description of the next token for "expected X, found Y" messages.
    pub fn found(&mut self) -> String {
        self.skip_ws();
        let rest = self.rest();
        let word: String = rest.chars().take_while(|&c| is_word_char(c)).take(24).collect();
        match rest.chars().next() {
            None => "end of line".to_string(),
            Some(_) if !word.is_empty() => format!("`{word}`"),
            Some(c) => format!("`{c}`"),
        }
    }

    /// "expected WHAT, found ..." at the next token.
    pub fn expected(&mut self, what: &str) -> ParseError {
        let found = self.found();
        self.error(format!("expected {what}, found {found}"))
    }

    /// Consume `s` if it comes next (after whitespace).
    pub fn eat(&mut self, s: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// Consume `s` or fail with "expected `s`".
    pub fn expect(&mut self, s: &str) -> Result<(), ParseError> {
        if self.eat(s) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{s}`")))
        }
    }

    /// Fail unless only whitespace is left.
    pub fn expect_end(&mut self) -> Result<(), ParseError> {
        if self.is_at_end() {
            Ok(())
        } else {
            Err(self.expected("end of line"))
        }
    }

    /// A word (`[A-Za-z0-9_]+`) with its column, if one comes next.
    pub fn word(&mut self) -> Option<(usize, &'a str)> {
        self.skip_ws();
        let rest = self.rest();
        let len = rest.find(|c: char| !is_word_char(c)).unwrap_or(rest.len());
        if len == 0 {
            return None;
        }
        let col = self.col_at(self.pos);
        self.pos += len;
        Some((col, &rest[..len]))
    }

    /// A word, or "expected WHAT".
    pub fn expect_word(&mut self, what: &str) -> Result<(usize, &'a str), ParseError> {
        match self.word() {
            Some(w) => Ok(w),
            None => Err(self.expected(what)),
        }
    }

    /// A word that names a value of `T` (`T::from_str`); the error is `T`'s own message.
    pub fn parse_word<T: FromStr>(&mut self, what: &str) -> Result<T, ParseError>
    where
        T::Err: std::fmt::Display,
    {
        let (col, w) = self.expect_word(what)?;
        w.parse().map_err(|e: T::Err| self.error_at(col, e.to_string()))
    }

    /// An integer with an optional sign.
    pub fn int<T: FromStr>(&mut self, what: &str) -> Result<T, ParseError> {
        self.skip_ws();
        let rest = self.rest();
        let sign = usize::from(rest.starts_with(['+', '-']));
        let digits = rest[sign..].find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len() - sign);
        if digits == 0 {
            return Err(self.expected(what));
        }
        let col = self.col_at(self.pos);
        let s = &rest[..sign + digits];
        let v = s.parse().map_err(|_| self.error_at(col, format!("{what} `{s}` is out of range")))?;
        self.pos += s.len();
        Ok(v)
    }

    /// An id such as `t3` or `i12` (`prefix` then digits), with its column.
    pub fn id(&mut self, prefix: char, what: &str) -> Result<(usize, u32), ParseError> {
        let save = self.pos;
        if let Some((col, w)) = self.word() {
            if let Some(n) = w.strip_prefix(prefix).filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())) {
                return n
                    .parse()
                    .map(|n| (col, n))
                    .map_err(|_| self.error_at(col, format!("{what} `{w}` is out of range")));
            }
        }
        self.pos = save;
        Err(self.expected(what))
    }

    /// A double-quoted string with the escapes `\\ \" \n \t \r \0 \u{XXXX}`.
    pub fn string(&mut self) -> Result<String, ParseError> {
        self.skip_ws();
        if !self.rest().starts_with('"') {
            return Err(self.expected("a \"string\""));
        }
        let start = self.pos;
        let mut out = String::new();
        let mut chars = self.rest().char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\\' => {
                    let esc_col = self.col_at(start + i);
                    let bad = |m: &str| self.error_at(esc_col, m.to_string());
                    match chars.next().map(|(_, c)| c) {
                        Some('\\') => out.push('\\'),
                        Some('"') => out.push('"'),
                        Some('n') => out.push('\n'),
                        Some('t') => out.push('\t'),
                        Some('r') => out.push('\r'),
                        Some('0') => out.push('\0'),
                        Some('u') => {
                            if chars.next().map(|(_, c)| c) != Some('{') {
                                return Err(bad("expected `{` after `\\u` (write \\u{XXXX})"));
                            }
                            let mut hex = String::new();
                            loop {
                                match chars.next().map(|(_, c)| c) {
                                    Some('}') => break,
                                    Some(h) if h.is_ascii_hexdigit() && hex.len() < 6 => hex.push(h),
                                    _ => return Err(bad("malformed \\u{XXXX} escape")),
                                }
                            }
                            let c = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                            out.push(c.ok_or_else(|| bad("\\u{...} is not a character"))?);
                        }
                        _ => return Err(bad("unknown escape (expected \\\\, \\\", \\n, \\t, \\r, \\0 or \\u{XXXX})")),
                    }
                }
                c => out.push(c),
            }
        }
        let col = self.col_at(start);
        Err(self.error_at(col, "unterminated string (expected a closing `\"`)"))
    }

    /// A name: a word or a string.
    pub fn name(&mut self, what: &str) -> Result<String, ParseError> {
        if self.peek() == Some('"') {
            return self.string();
        }
        match self.word() {
            Some((_, w)) => Ok(w.to_string()),
            None => Err(self.expected(what)),
        }
    }

    /// Everything up to the next whitespace, with its column (empty at the end of the line).
    pub fn value(&mut self) -> (usize, &'a str) {
        self.skip_ws();
        let rest = self.rest();
        let len = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let col = self.col_at(self.pos);
        self.pos += len;
        (col, &rest[..len])
    }

    /// Whether a tile (`tN{` or `tN:`) comes next.
    pub fn at_tile(&mut self) -> bool {
        self.skip_ws();
        let rest = self.rest();
        let Some(after_t) = rest.strip_prefix('t') else { return false };
        let digits = after_t.find(|c: char| !c.is_ascii_digit()).unwrap_or(after_t.len());
        digits > 0 && after_t[digits..].starts_with(['{', ':'])
    }

    /// A comma-separated list of `item`s up to (and including) `close`.
    pub fn list<T>(
        &mut self,
        close: &str,
        mut item: impl FnMut(&mut Self) -> Result<T, ParseError>,
    ) -> Result<Vec<T>, ParseError> {
        let mut out = Vec::new();
        if self.eat(close) {
            return Ok(out);
        }
        loop {
            out.push(item(self)?);
            if self.eat(close) {
                return Ok(out);
            }
            if !self.eat(",") {
                return Err(self.expected(&format!("`,` or `{close}`")));
            }
        }
    }

    /// A memory name.
    pub fn memory(&mut self) -> Result<Memory, ParseError> {
        let (col, w) = self.expect_word("a memory (hbm, sbuf or psum)")?;
        match w {
            "hbm" => Ok(Memory::Hbm),
            "sbuf" => Ok(Memory::Sbuf),
            "psum" => Ok(Memory::Psum),
            _ => Err(self.error_at(col, format!("expected a memory (hbm, sbuf or psum), found `{w}`"))),
        }
    }

    /// A `[stride, num]` dimension.
    pub fn dim(&mut self) -> Result<Dim, ParseError> {
        self.expect("[")?;
        let stride = self.int("a stride")?;
        self.expect(",")?;
        let num = self.int("a count")?;
        self.expect("]")?;
        Ok(Dim { stride, num })
    }

    /// A shape `[d0, d1, ...]`.
    pub fn shape(&mut self) -> Result<Vec<u64>, ParseError> {
        self.expect("[")?;
        self.list("]", |c| c.int("a dimension size"))
    }
}
