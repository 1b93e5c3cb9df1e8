//! Parsing the `.pir` text format (written by [`crate::print`]) back into a [`Function`], and
//! the line scanner ([`Cursor`]) that the BIR text format shares.
//!
//! The format is line-oriented; `;` starts a comment that runs to the end of the line (outside
//! strings). Grammar, one construct per line:
//!
//! ```text
//! kernel NAME                                  first line; NAME an identifier or a "string"
//! debug_name "STRING"
//! inputs t0, t1                                kernel inputs, in order
//! outputs t2                                   kernel outputs, in order
//! layout i0, i2, i1                            optional: program order (default: line order)
//! tensor tN "NAME" MEMORY DTYPE [D0, D1, ...] [@ADDRESS]
//! iN = OPCODE KEY=VALUE ... OPERAND=TILE ... [after(iM KIND, ...)]
//!
//! TILE  = tN{p START [STRIDE, NUM] OFFSET [STRIDE, NUM]...}      memory and dtype of tN
//!       | tN:MEMORY:DTYPE{...}                                   stated (when they differ)
//! KIND  = raw | war | waw                                        (default raw)
//! ```
//!
//! Tensor ids are numbered `t0, t1, ...` in the order of their lines; instruction ids must be
//! dense from `i0` but may appear in any order (the line order is the program order unless a
//! `layout` line says otherwise). Attribute and operand names are those of
//! [`InstData::attributes`] and [`InstData::operand_names`].
//!
//! **Limits**: a tensor holds at most 2^48 bytes and its address is below 2^48; an access
//! pattern's offset and the span of its strided walk stay within 2^48 elements. Numbers beyond
//! that describe no real memory, and keeping them out keeps every later computation in range.
//! [`check_limits`] applies the same limits to a function from elsewhere (JSON).
//!
//! **Dependency edges**: an instruction's `after(...)` list is kept exactly as written, and an
//! instruction without one has no incoming edges. A file with *no* `after(...)` anywhere (a
//! hand-written kernel) gets its edges computed with [`DepTracker`] in program order, as the
//! builders compute them. The printer writes `after()` on the first instruction of a function
//! that has no edges where the tracker would find some, so printing and parsing round-trip.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use crate::ap::{AccessPattern, Dim};
use crate::deps::DepTracker;
use crate::dtype::DType;
use crate::entity::{InstId, Memory, TensorId};
use crate::error::Entity;
use crate::function::{Function, FunctionView, TensorData};
use crate::inst::{Dep, DepKind, InstData};
use crate::tile::InstTile;

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

/// Check a function against the limits of the text format ([`MAX_EXTENT`]); the error names
/// the entity.
pub fn check_limits(func: &Function) -> Result<(), (Entity, String)> {
    for (i, t) in func.tensors.values().enumerate() {
        if let Some(m) = tensor_limit(&t.shape, t.dtype.size_bytes(), t.address) {
            return Err((Entity::Tensor(TensorId(i as u32)), m));
        }
    }
    for (i, inst) in func.insts.iter().enumerate() {
        for (tile, _) in inst.operands() {
            let ap = &tile.ap;
            if let Some(m) =
                walk_limit(i128::from(ap.offset), std::iter::once(ap.partitions).chain(ap.free.iter().copied()))
            {
                return Err((Entity::Inst(InstId(i as u32)), m));
            }
        }
    }
    Ok(())
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

/// Where each entity of a parsed function was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceMap {
    /// The `kernel` line.
    pub kernel: usize,
    /// The line of each tensor, by id.
    pub tensors: Vec<usize>,
    /// The line of each instruction, by id.
    pub insts: Vec<usize>,
}

impl SourceMap {
    /// The line an entity was written on.
    pub fn line_of(&self, entity: Entity) -> Option<usize> {
        match entity {
            Entity::Function => Some(self.kernel),
            Entity::Tensor(t) => self.tensors.get(t.index()).copied(),
            Entity::Inst(i) => self.insts.get(i.index()).copied(),
        }
    }
}

/// Parse a `.pir` text into a function.
pub fn parse(text: &str) -> Result<Function, ParseError> {
    parse_with_source_map(text).map(|(f, _)| f)
}

struct PendingTile {
    col: usize,
    tensor: TensorId,
    stated: Option<(Memory, DType)>,
    ap: AccessPattern,
}

struct PendingInst {
    line: usize,
    id: InstId,
    opcode_col: usize,
    opcode: String,
    attrs: Vec<(usize, String, String)>,
    operands: Vec<(usize, String, PendingTile)>,
    deps: Option<Vec<Dep>>,
}

/// The tile of an operand: `tN{...}` or `tN:MEMORY:DTYPE{...}`.
fn tile(c: &mut Cursor<'_>) -> Result<PendingTile, ParseError> {
    let (col, n) = c.id('t', "a tensor id `tN`")?;
    let stated = if c.eat(":") {
        let memory = c.memory()?;
        c.expect(":")?;
        Some((memory, c.parse_word::<DType>("a dtype")?))
    } else {
        None
    };
    c.expect("{")?;
    let ap = access_pattern(c)?;
    c.expect("}")?;
    Ok(PendingTile { col, tensor: TensorId(n), stated, ap })
}

/// `p START [STRIDE, NUM] OFFSET [STRIDE, NUM]...` (the inside of a tile's braces).
fn access_pattern(c: &mut Cursor<'_>) -> Result<AccessPattern, ParseError> {
    c.skip_ws();
    if !c.eat("p") {
        return Err(c.expected("`p` and the start partition"));
    }
    let col = c.col();
    let start_partition = c.int("a start partition")?;
    let partitions = c.dim()?;
    let offset = c.int("an element offset such as `+0`")?;
    let mut free = Vec::new();
    while c.peek() == Some('[') {
        free.push(c.dim()?);
    }
    if let Some(m) = walk_limit(i128::from(offset), std::iter::once(partitions).chain(free.iter().copied())) {
        return Err(c.error_at(col, m));
    }
    Ok(AccessPattern { start_partition, partitions, offset, free })
}

fn dep(c: &mut Cursor<'_>) -> Result<Dep, ParseError> {
    let (_, n) = c.id('i', "an instruction id `iN`")?;
    let kind = match c.peek() {
        Some(',' | ')') | None => DepKind::Raw,
        _ => {
            let (col, w) = c.expect_word("a dependency kind (raw, war or waw)")?;
            match w {
                "raw" => DepKind::Raw,
                "war" => DepKind::War,
                "waw" => DepKind::Waw,
                _ => return Err(c.error_at(col, format!("expected a dependency kind (raw, war or waw), found `{w}`"))),
            }
        }
    };
    Ok(Dep { from: InstId(n), kind })
}

/// `OPCODE KEY=VALUE ... OPERAND=TILE ... [after(...)]`, after `iN =`.
fn inst_body<'a>(c: &mut Cursor<'a>, id: InstId) -> Result<PendingInst, ParseError> {
    let (opcode_col, opcode) = c.expect_word("an opcode")?;
    let mut inst = PendingInst {
        line: c.line(),
        id,
        opcode_col,
        opcode: opcode.to_string(),
        attrs: Vec::new(),
        operands: Vec::new(),
        deps: None,
    };
    // A set, so that a line of many keys is checked for repeats in linear time.
    let mut keys = HashSet::<&'a str>::new();
    while !c.is_at_end() {
        let (col, key) = c.expect_word("`KEY=VALUE`, `OPERAND=tN{...}` or `after(...)`")?;
        if key == "after" && c.peek() == Some('(') {
            if inst.deps.is_some() {
                return Err(c.error_at(col, "a second `after(...)` (list every edge in one)"));
            }
            c.expect("(")?;
            inst.deps = Some(c.list(")", dep)?);
            continue;
        }
        c.expect("=")?;
        if !keys.insert(key) {
            return Err(c.error_at(col, format!("`{key}=` is given twice")));
        }
        if c.at_tile() {
            inst.operands.push((col, key.to_string(), tile(c)?));
        } else {
            let (vcol, value) = c.value();
            if value.is_empty() {
                return Err(c.error_at(vcol, format!("expected a value after `{key}=`, found end of line")));
            }
            inst.attrs.push((col, key.to_string(), value.to_string()));
        }
    }
    Ok(inst)
}

/// The incoming edges of every instruction, computed by [`DepTracker`] in program order.
pub fn compute_deps(func: &Function) -> Vec<Vec<Dep>> {
    let mut deps = vec![Vec::new(); func.insts.len()];
    let mut seen = vec![false; func.insts.len()];
    let mut tracker = DepTracker::new();
    for &id in &func.layout {
        let (Some(inst), Some(done)) = (func.insts.get(id.index()), seen.get_mut(id.index())) else { continue };
        if std::mem::replace(done, true) {
            continue;
        }
        deps[id.index()] = tracker.process(id, inst, |t| func.tensor(t));
    }
    deps
}

/// Parse a `.pir` text, also returning the line of every entity.
pub fn parse_with_source_map(text: &str) -> Result<(Function, SourceMap), ParseError> {
    let mut func = Function::default();
    let mut map = SourceMap::default();
    let mut seen_kernel = false;
    let mut seen = HashMap::<&str, usize>::new();
    let mut layout: Option<Vec<InstId>> = None;
    let mut pending: Vec<PendingInst> = Vec::new();
    let mut inst_lines = HashMap::<u32, usize>::new();
    let mut last_line = 1;
    for (line_no, raw) in numbered_lines(text) {
        last_line = line_no;
        let mut c = Cursor::new(line_no, split_comment(raw).0);
        if c.is_at_end() {
            continue;
        }
        let start = c.clone();
        let (col, kw) = c.word().ok_or_else(|| {
            c.expected("`kernel`, `debug_name`, `inputs`, `outputs`, `layout`, `tensor` or an instruction `iN = ...`")
        })?;
        if !seen_kernel && kw != "kernel" {
            return Err(c.error_at(col, format!("expected `kernel NAME` as the first line, found `{kw}`")));
        }
        if matches!(kw, "kernel" | "debug_name" | "inputs" | "outputs" | "layout") {
            if let Some(first) = seen.insert(kw, line_no) {
                return Err(c.error_at(col, format!("a second `{kw}` line (the first is line {first})")));
            }
        }
        match kw {
            "kernel" => {
                seen_kernel = true;
                map.kernel = line_no;
                func.kernel_name = c.name("a kernel name")?;
            }
            "debug_name" => func.debug_kernel_function_name = Some(c.string()?),
            "inputs" | "outputs" => {
                let list = if c.is_at_end() {
                    Vec::new()
                } else {
                    let mut ids = vec![TensorId(c.id('t', "a tensor id `tN`")?.1)];
                    while c.eat(",") {
                        ids.push(TensorId(c.id('t', "a tensor id `tN`")?.1));
                    }
                    ids
                };
                if kw == "inputs" {
                    func.inputs = list;
                } else {
                    func.outputs = list;
                }
            }
            "layout" => {
                let mut ids = Vec::new();
                if !c.is_at_end() {
                    ids.push(InstId(c.id('i', "an instruction id `iN`")?.1));
                    while c.eat(",") {
                        ids.push(InstId(c.id('i', "an instruction id `iN`")?.1));
                    }
                }
                layout = Some(ids);
            }
            "tensor" => {
                let next = func.tensors.len();
                let (id_col, n) = c.id('t', &format!("the tensor id `t{next}`"))?;
                if n as usize != next {
                    return Err(c.error_at(
                        id_col,
                        format!("expected `t{next}` (tensors are numbered in order from t0), found `t{n}`"),
                    ));
                }
                let name_col = c.col();
                let name = c.name("a tensor name")?;
                let memory = c.memory()?;
                let dtype = c.parse_word::<DType>("a dtype")?;
                let shape_col = c.col();
                let shape = c.shape()?;
                let address = if c.eat("@") { Some(c.int("a byte address")?) } else { None };
                if let Some(m) = tensor_limit(&shape, dtype.size_bytes(), address) {
                    return Err(c.error_at(shape_col, m));
                }
                if func.tensors.contains_key(&name) {
                    return Err(c.error_at(name_col, format!("tensor name {:?} is already used", name)));
                }
                func.tensors.insert(name.clone(), TensorData { name, shape, dtype, memory, address });
                map.tensors.push(line_no);
            }
            _ => {
                c = start;
                let (id_col, n) = c.id(
                    'i',
                    "a line starting with `kernel`, `debug_name`, `inputs`, `outputs`, `layout`, `tensor` or `iN =`",
                )?;
                if let Some(first) = inst_lines.insert(n, line_no) {
                    return Err(c.error_at(id_col, format!("i{n} is defined twice (first on line {first})")));
                }
                c.expect("=")?;
                pending.push(inst_body(&mut c, InstId(n))?);
            }
        }
        c.expect_end()?;
    }
    if !seen_kernel {
        return Err(ParseError {
            line: last_line,
            col: 1,
            message: "expected `kernel NAME`, found end of file".into(),
        });
    }
    let textual: Vec<InstId> = pending.iter().map(|p| p.id).collect();
    pending.sort_by_key(|p| p.id);
    for (k, p) in pending.iter().enumerate() {
        if p.id.index() != k {
            let message = format!("instruction ids must be dense from i0, but i{k} is missing (found {})", p.id);
            return Err(ParseError { line: p.line, col: 1, message });
        }
    }
    let any_after = pending.iter().any(|p| p.deps.is_some());
    for p in pending {
        map.insts.push(p.line);
        let mut operands = Vec::with_capacity(p.operands.len());
        for (_, name, t) in p.operands {
            let (memory, dtype) = match (t.stated, func.tensor(t.tensor)) {
                (Some(s), _) => s,
                (None, Some(td)) => (td.memory, td.dtype),
                (None, None) => {
                    let message = format!(
                        "operand {} names no tensor (declare `tensor {}` or state it as `{}:MEMORY:DTYPE{{...}}`)",
                        t.tensor, t.tensor, t.tensor
                    );
                    return Err(ParseError { line: p.line, col: t.col, message });
                }
            };
            operands.push((name, InstTile { tensor: t.tensor, memory, dtype, ap: t.ap }));
        }
        let attrs: Vec<(String, String)> = p.attrs.iter().map(|(_, k, v)| (k.clone(), v.clone())).collect();
        let inst = InstData::from_parts(&p.opcode, &attrs, operands).map_err(|message| {
            // Point at the attribute the message names, if any.
            let col = p
                .attrs
                .iter()
                .find(|(_, k, v)| message.contains(&format!("`{v}`")) || message.contains(&format!("`{k}")))
                .map_or(p.opcode_col, |(col, _, _)| *col);
            ParseError { line: p.line, col, message }
        })?;
        func.insts.push(inst);
        func.deps.push(p.deps.unwrap_or_default());
    }
    func.layout = layout.unwrap_or(textual);
    if !any_after {
        func.deps = compute_deps(&func);
    }
    Ok((func, map))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GEMM: &str = "\
; C[4, 8] = A[4, 16] @ B[16, 8] in two K sub-tiles.
kernel gemm_4x16x8
inputs t0, t1
outputs t2
tensor t0 \"a\" hbm fp32 [4, 16]
tensor t1 \"b\" hbm fp32 [16, 8]
tensor t2 \"c\" hbm fp32 [4, 8]
tensor t3 \"at\" sbuf bf16 [8, 8] @0
tensor t4 \"bs\" sbuf bf16 [8, 16] @16
tensor t5 \"acc\" psum fp32 [4, 8] @0
tensor t6 \"cs\" sbuf fp32 [4, 8] @48
i0 = dma_copy dst=t3{p0[1, 8] +0 [1, 4]} src=t0{p0[1, 8] +0 [16, 4]}
i1 = dma_copy dst=t3{p0[1, 8] +4 [1, 4]} src=t0{p0[1, 8] +8 [16, 4]}
i2 = dma_copy dst=t4{p0[1, 8] +0 [1, 8]} src=t1{p0[8, 8] +0 [1, 8]}
i3 = dma_copy dst=t4{p0[1, 8] +8 [1, 8]} src=t1{p0[8, 8] +64 [1, 8]}
i4 = matmult acc=start dst=t5{p0[1, 4] +0 [1, 8]} stationary=t3{p0[1, 8] +0 [1, 4]} moving=t4{p0[1, 8] +0 [1, 8]}
i5 = matmult acc=stop dst=t5{p0[1, 4] +0 [1, 8]} stationary=t3{p0[1, 8] +4 [1, 4]} moving=t4{p0[1, 8] +8 [1, 8]}
i6 = tensor_copy engine=act dst=t6{p0[1, 4] +0 [1, 8]} src=t5{p0[1, 4] +0 [1, 8]}
i7 = dma_copy dst=t2{p0[8, 4] +0 [1, 8]} src=t6{p0[1, 4] +0 [1, 8]}   ; store C
";

    #[test]
    fn hand_written_gemm_parses_verifies_and_round_trips() {
        let f = parse(GEMM).unwrap();
        crate::verify(&f).unwrap();
        assert_eq!(f.inputs, vec![TensorId(0), TensorId(1)]);
        // No `after(...)` anywhere: the edges are computed.
        assert_eq!(
            f.deps[4],
            vec![Dep { from: InstId(0), kind: DepKind::Raw }, Dep { from: InstId(2), kind: DepKind::Raw }]
        );
        assert_eq!(f.deps[5].iter().map(|d| d.from.0).collect::<Vec<_>>(), vec![4, 1, 3]);
        let printed = f.to_string();
        assert_eq!(parse(&printed).unwrap(), f, "{printed}");
        assert_eq!(parse(&printed).unwrap().to_string(), printed);
    }

    #[test]
    fn explicit_edges_are_kept_as_written() {
        let text = GEMM.replace("i1 = dma_copy", "i1 = dma_copy after()").replace("; store C", "after(i6 war)");
        let f = parse(&text).unwrap();
        assert!(f.deps[4].is_empty());
        assert_eq!(f.deps[7], vec![Dep { from: InstId(6), kind: DepKind::War }]);
    }

    #[test]
    fn a_function_without_edges_prints_an_empty_after() {
        let mut f = parse(GEMM).unwrap();
        f.deps.iter_mut().for_each(Vec::clear);
        let printed = f.to_string();
        assert!(
            printed.contains("i0 = dma_copy cast=rne dst=t3{p0[1, 8] +0 [1, 4]} src=t0{p0[1, 8] +0 [16, 4]} after()\n"),
            "{printed}"
        );
        assert_eq!(parse(&printed).unwrap(), f);
    }

    #[test]
    fn out_of_order_layout_and_odd_tiles_round_trip() {
        let mut f = parse(GEMM).unwrap();
        f.layout.swap(0, 1);
        f.kernel_name = "not an identifier".into();
        f.debug_kernel_function_name = Some("tab\there \"q\" \u{1} é".into());
        if let InstData::DmaCopy(d) = &mut f.insts[0] {
            d.src.dtype = DType::Int16;
            d.src.ap.offset = -3;
            d.src.tensor = TensorId(40);
        }
        f.layout.push(InstId(9));
        f.layout.push(InstId(0));
        let printed = f.to_string();
        assert!(printed.contains("layout i1, i0, i2"), "{printed}");
        assert!(printed.contains("src=t40:hbm:int16{p0[1, 8] -3 [16, 4]}"), "{printed}");
        assert_eq!(parse(&printed).unwrap(), f, "{printed}");
    }

    #[track_caller]
    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn errors_say_where_and_what_was_expected() {
        assert_eq!(err(""), "1:1: expected `kernel NAME`, found end of file");
        assert_eq!(
            err("tensor t0 \"a\" hbm fp32 [1]"),
            "1:1: expected `kernel NAME` as the first line, found `tensor`"
        );
        assert_eq!(
            err("kernel k\ntensor t1 \"a\" hbm fp32 [1]"),
            "2:8: expected `t0` (tensors are numbered in order from t0), found `t1`"
        );
        assert_eq!(
            err("kernel k\ntensor t0 \"a\" dram fp32 [1]"),
            "2:15: expected a memory (hbm, sbuf or psum), found `dram`"
        );
        assert!(err("kernel k\ntensor t0 \"a\" hbm fp64 [1]").starts_with("2:19: unknown dtype `fp64`"));
        assert_eq!(err("kernel k\ntensor t0 \"a\" hbm fp32 [1, ]"), "2:28: expected a dimension size, found `]`");
        assert_eq!(err("kernel k\ntensor t0 \"a\" hbm fp32 [1] extra"), "2:28: expected end of line, found `extra`");
        assert_eq!(err("kernel k\ntensor t0 \"a"), "2:11: unterminated string (expected a closing `\"`)");
        let base = "kernel k\ntensor t0 \"x\" sbuf fp32 [4, 4]\n";
        assert_eq!(
            err(&format!("{base}i0 = memset engine=pool value=1 dst=t0{{p0[1, 4] +0 [1, 4]")),
            "3:58: expected `}`, found end of line"
        );
        assert_eq!(
            err(&format!("{base}i0 = memset engine=gpu value=1 dst=t0{{p0[1, 4] +0 [1, 4]}}")),
            "3:13: unknown engine `gpu` (expected act, dve or pool)"
        );
        assert_eq!(
            err(&format!("{base}i0 = memset engine=dve dst=t0{{p0[1, 4] +0 [1, 4]}}")),
            "3:6: memset needs `value=`"
        );
        assert_eq!(err(&format!("{base}i0 = memset engine=dve value=1 value=2")), "3:32: `value=` is given twice");
        assert_eq!(
            err(&format!("{base}i0 = memset engine=dve value=1 dst=t1{{p0[1, 4] +0 [1, 4]}}")),
            "3:36: operand t1 names no tensor (declare `tensor t1` or state it as `t1:MEMORY:DTYPE{...}`)"
        );
        assert_eq!(
            err(&format!("{base}i1 = memset engine=dve value=1 dst=t0{{p0[1, 4] +0 [1, 4]}}")),
            "3:1: instruction ids must be dense from i0, but i0 is missing (found i1)"
        );
        let m = "i0 = memset engine=dve value=1 dst=t0{p0[1, 4] +0 [1, 4]}\n";
        assert_eq!(err(&format!("{base}{m}\n{m}")), "5:1: i0 is defined twice (first on line 3)");
        assert_eq!(err("kernel k\nkernel j"), "2:1: a second `kernel` line (the first is line 1)");
        assert_eq!(err("kernel k\n  frob"), "2:3: expected a line starting with `kernel`, `debug_name`, `inputs`, `outputs`, `layout`, `tensor` or `iN =`, found `frob`");
        assert_eq!(
            err("kernel k\ni0 = memset after(i1 wax)"),
            "2:22: expected a dependency kind (raw, war or waw), found `wax`"
        );
        assert_eq!(
            err("kernel k\ntensor t0 \"a\" hbm fp32 [99999999999999999999]"),
            "2:25: a dimension size `99999999999999999999` is out of range"
        );
    }

    #[test]
    fn comments_and_strings() {
        assert_eq!(split_comment("a \"b;c\" ; d"), ("a \"b;c\" ", Some(" d")));
        assert_eq!(split_comment("a \"b\\\";c\" d"), ("a \"b\\\";c\" d", None));
        let f = parse("kernel \"x;y\" ; comment\n\n; only a comment\r\n").unwrap();
        assert_eq!(f.kernel_name, "x;y");
    }

    /// An `inputs` line of about 10 MB: `count` ids, then `tail`.
    fn long_inputs_line(count: u32, tail: &str) -> String {
        let mut text = String::from("kernel k\ninputs t0");
        for i in 1..count {
            text.push_str(", t");
            text.push_str(&i.to_string());
        }
        text.push_str(tail);
        text
    }

    #[test]
    fn a_ten_megabyte_line_parses_in_linear_time() {
        let count = 1_200_000;
        let text = long_inputs_line(count, "");
        assert!(text.len() > 10_000_000, "{}", text.len());
        let started = std::time::Instant::now();
        let f = parse(&text).unwrap();
        // Counting columns from the line start for every token took hours here; linear
        // scanning takes well under a second in release and a few seconds in a debug build.
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
        assert_eq!(f.inputs.len(), count as usize);
        assert_eq!(f.inputs.last(), Some(&TensorId(count - 1)));
    }

    #[test]
    fn columns_stay_exact_far_into_a_line_and_after_backtracking() {
        let text = long_inputs_line(1000, ", tx");
        let line = text.lines().nth(1).unwrap();
        let col = line.chars().count() - 1;
        assert_eq!(err(&text), format!("2:{col}: expected a tensor id `tN`, found `tx`"));
        // Multi-byte characters count as one column each, also after a long line.
        let text = format!("kernel \"{}\"\ninputs t0 é", "é".repeat(5000));
        assert_eq!(err(&text), "2:11: expected end of line, found `é`");
        let text = format!("kernel \"{}\" junk", "é".repeat(5000));
        assert_eq!(err(&text), "1:5011: expected end of line, found `junk`");
    }

    #[test]
    fn many_keys_on_one_line_are_checked_in_linear_time() {
        let mut text = String::from("kernel k\ni0 = memset");
        for i in 0..200_000 {
            text.push_str(&format!(" k{i}=1"));
        }
        text.push_str(" k7=2");
        let col = text.lines().nth(1).unwrap().len() - 3;
        assert_eq!(err(&text), format!("2:{col}: `k7=` is given twice"));
    }

    mod props {
        use proptest::prelude::*;

        use super::*;
        use crate::dtype::CastMode;
        use crate::inst::*;

        fn memory() -> impl Strategy<Value = Memory> {
            prop_oneof![Just(Memory::Hbm), Just(Memory::Sbuf), Just(Memory::Psum)]
        }

        fn dtype() -> impl Strategy<Value = DType> {
            proptest::sample::select(DType::ALL.to_vec())
        }

        fn dim() -> impl Strategy<Value = Dim> {
            (-300i64..300, 0u32..200).prop_map(|(stride, num)| Dim { stride, num })
        }

        fn tile() -> impl Strategy<Value = InstTile> {
            (0u32..8, memory(), dtype(), 0u32..130, dim(), -50i64..5000, proptest::collection::vec(dim(), 0..6))
                .prop_map(|(t, memory, dtype, start_partition, partitions, offset, free)| InstTile {
                    tensor: TensorId(t),
                    memory,
                    dtype,
                    ap: AccessPattern { start_partition, partitions, offset, free },
                })
        }

        fn inst() -> impl Strategy<Value = InstData> {
            let acc = proptest::option::of((0u8..8).prop_map(EngineAccumulationType::from_bits_truncate));
            let pos = (0u32..200, 0u32..200).prop_map(|(row, col)| TilePosition { row, col });
            let size = (0u32..200, 0u32..200).prop_map(|(rows, cols)| TileSize { rows, cols });
            let engine = prop_oneof![Just(ComputeEngine::Act), Just(ComputeEngine::Dve), Just(ComputeEngine::Pool)];
            let cast = prop_oneof![Just(CastMode::Rne), Just(CastMode::Saturate)];
            let perf = prop_oneof![Just(PerfMode::None), Just(PerfMode::DoubleRow), Just(PerfMode::DoubleRowGen3)];
            let value = prop_oneof![any::<f64>().prop_filter("not NaN (NaN != NaN)", |v| !v.is_nan()), -4.0f64..4.0];
            let tiles = proptest::collection::vec(tile(), 4);
            (0usize..14, tiles, acc, pos, size, engine, cast, perf, value, 0usize..5, 0usize..3).prop_map(
                |(kind, t, acc, tile_position, tile_size, engine, cast, perf_mode, value, pattern, op)| {
                    let [a, b, c, d]: [InstTile; 4] = t.try_into().unwrap();
                    match kind {
                        0 => InstData::MatMult(MatMultData {
                            dst: a,
                            stationary: b,
                            moving: c,
                            perf_mode,
                            tile_position,
                            tile_size,
                            acc,
                        }),
                        1 => InstData::MatMultSparse(MatMultSparseData {
                            dst: a,
                            stationary: b,
                            moving: c,
                            tags: d,
                            pattern: SparsityPattern::SUPPORTED[pattern],
                            tile_position,
                            tile_size,
                            acc,
                        }),
                        2 => InstData::DmaCopy(DmaCopyData { dst: a, src: b, cast }),
                        3 => InstData::TensorCopy(TensorCopyData { engine, dst: a, src: b }),
                        4 => InstData::Memset(MemsetData { engine, dst: a, value }),
                        5 => InstData::TensorTensor(TensorTensorData {
                            engine,
                            op: [TensorTensorOp::Add, TensorTensorOp::Mul, TensorTensorOp::Max][op],
                            dst: a,
                            lhs: b,
                            rhs: c,
                        }),
                        6 => InstData::TiledOffloadedFma(OffloadedFmaData { dst: a, src0: b, src1: c }),
                        7 => InstData::OffloadedFma(OffloadedFmaData { dst: a, src0: b, src1: c }),
                        8 => InstData::TiledOffloadedMemCpy(OffloadedMemCpyData { dst: a, src: b }),
                        9 => InstData::OffloadedMemCpy(OffloadedMemCpyData { dst: a, src: b }),
                        10 => InstData::OffloadedMemCast(OffloadedMemCastData { dst: a, src: b, cast }),
                        11 => InstData::Transpose(TransposeData { dst: a, src: b }),
                        12 => InstData::DmaGather(DmaGatherData { dst: a, table: b, index: c }),
                        _ => InstData::DmaScatterAdd(DmaScatterAddData { table: a, src: b, index: c }),
                    }
                },
            )
        }

        fn tensor() -> impl Strategy<Value = TensorData> {
            (
                "\\PC{0,12}",
                memory(),
                dtype(),
                proptest::collection::vec(0u64..300, 0..4),
                proptest::option::of(0u64..70000),
            )
                .prop_map(|(name, memory, dtype, shape, address)| TensorData {
                    name,
                    shape,
                    dtype,
                    memory,
                    address,
                })
        }

        fn dep() -> impl Strategy<Value = Dep> {
            (0u32..12, prop_oneof![Just(DepKind::Raw), Just(DepKind::War), Just(DepKind::Waw)])
                .prop_map(|(from, kind)| Dep { from: InstId(from), kind })
        }

        prop_compose! {
            fn function()(
                name in "\\PC{0,10}",
                debug in proptest::option::of("[ -~]{0,10}"),
                tensors in proptest::collection::vec(tensor(), 0..8),
                insts in proptest::collection::vec((inst(), proptest::collection::vec(dep(), 0..3)), 0..10),
                edges in any::<bool>(),
                layout in proptest::option::of(proptest::collection::vec((0u32..12).prop_map(InstId), 0..12)),
                inputs in proptest::collection::vec((0u32..10).prop_map(TensorId), 0..3),
                outputs in proptest::collection::vec((0u32..10).prop_map(TensorId), 0..3),
            ) -> Function {
                let mut f = Function::new(name);
                f.debug_kernel_function_name = debug;
                for t in tensors {
                    let _ = f.add_tensor(t);
                }
                for (inst, deps) in insts {
                    f.push_inst(inst, if edges { deps } else { Vec::new() });
                }
                if let Some(layout) = layout {
                    f.layout = layout;
                }
                f.inputs = inputs;
                f.outputs = outputs;
                f
            }
        }

        proptest! {
            #[test]
            fn every_function_round_trips_through_text(f in function()) {
                let text = f.to_string();
                let back = parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
                prop_assert_eq!(&back, &f, "{}", text);
                prop_assert_eq!(back.to_string(), text);
            }
        }
    }
}
