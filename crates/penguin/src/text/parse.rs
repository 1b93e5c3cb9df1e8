//! Parsing the `.pir` text format (written by [`crate::text::print`]) back into a [`Function`], and
//! the limits check for functions read from elsewhere.
//! Lines are read with the shared scanner of [`crate::text::lexer`].
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
//! iN = OPCODE KEY=VALUE ... OPERAND=TILE ... [after(iM KIND, ...)] [loc("STRING")]
//!
//! TILE  = tN{p START [STRIDE, NUM] OFFSET [STRIDE, NUM]...}      memory and dtype of tN
//!       | tN:MEMORY:DTYPE{...}                                   stated (when they differ)
//! KIND  = raw | war | waw                                        (default raw)
//! ```
//!
//! `loc("kernel.py:41")` is the instruction's source location in its producer's source
//! ([`crate::srcloc`]); an instruction without one has none.
//!
//! The same text may loop its instructions (`loop iD xT {` ... `}`, parameters with `+C*iD`
//! terms): that syntax is in [`crate::text::loops`] and read by [`crate::text::parse_looped`].
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
//! hand-written kernel) gets its edges computed with [`DepTracker`](crate::DepTracker) in program order, as the
//! builders compute them. The printer writes `after()` on the first instruction of a function
//! that has no edges where the tracker would find some, so printing and parsing round-trip.

use std::collections::{HashMap, HashSet};

use crate::ap::AccessPattern;
use crate::deps::compute_deps;
use crate::dtype::DType;
use crate::entity::{InstId, Memory, TensorId};
use crate::error::Entity;
use crate::function::{Function, FunctionView, TensorData};
use crate::inst::{Dep, DepKind, InstData};
use crate::srcloc::LocInterner;
use crate::text::lexer::{numbered_lines, split_comment, tensor_limit, walk_limit, Cursor, ParseError};
use crate::tile::InstTile;

/// Check a function against the limits of the text format
/// ([`MAX_EXTENT`](crate::text::lexer::MAX_EXTENT)); the error names the entity.
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
    loc: Option<String>,
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
    Ok(AccessPattern { start_partition, partitions, offset, free: free.into() })
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
        loc: None,
    };
    // A set, so that a line of many keys is checked for repeats in linear time.
    let mut keys = HashSet::<&'a str>::new();
    while !c.is_at_end() {
        let (col, key) = c.expect_word("`KEY=VALUE`, `OPERAND=tN{...}`, `after(...)` or `loc(...)`")?;
        if key == "after" && c.peek() == Some('(') {
            if inst.deps.is_some() {
                return Err(c.error_at(col, "a second `after(...)` (list every edge in one)"));
            }
            c.expect("(")?;
            inst.deps = Some(c.list(")", dep)?);
            continue;
        }
        if key == "loc" && c.peek() == Some('(') {
            if inst.loc.is_some() {
                return Err(c.error_at(col, "a second `loc(...)`"));
            }
            c.expect("(")?;
            inst.loc = Some(c.string()?);
            c.expect(")")?;
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
/// An instruction's operands resolved against `func`'s tensors, and the instruction built
/// (with its `after(...)` list, if it has one).
fn resolve(p: PendingInst, func: &Function) -> Result<(InstData, Option<Vec<Dep>>), ParseError> {
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
    let inst = InstData::from_parts(&p.opcode, &attrs, operands).map_err(|e| {
        // Point at the attribute written with the key the error names; errors about an
        // operand, a missing attribute or the opcode point at the opcode.
        let col = e
            .key
            .as_deref()
            .and_then(|key| p.attrs.iter().find(|(_, k, _)| k == key))
            .map_or(p.opcode_col, |(col, _, _)| *col);
        ParseError { line: p.line, col, message: e.message }
    })?;
    Ok((inst, p.deps))
}

/// An instruction read from its line: the instruction, its `after(...)` list and its
/// `loc(...)`, each if written.
pub(crate) type LocatedInst = (InstData, Option<Vec<Dep>>, Option<String>);

/// One instruction line after its `iN =` (the looped parser's hook): the instruction, with
/// its operands resolved against `func`'s tensors, its `after(...)` list if it has one, and
/// its `loc(...)` if it has one.
pub(crate) fn inst_after_id(c: &mut Cursor<'_>, id: InstId, func: &Function) -> Result<LocatedInst, ParseError> {
    let mut p = inst_body(c, id)?;
    let loc = p.loc.take();
    let (inst, deps) = resolve(p, func)?;
    Ok((inst, deps, loc))
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
    let mut locs = LocInterner::default();
    for mut p in pending {
        map.insts.push(p.line);
        if let Some(loc) = p.loc.take() {
            func.srclocs.set(p.id, Some(locs.intern(&loc)));
        }
        let (inst, deps) = resolve(p, &func)?;
        func.insts.push(inst);
        func.deps.push(deps.unwrap_or_default());
    }
    func.layout = layout.unwrap_or(textual);
    if !any_after {
        func.deps = compute_deps(&func);
    }
    Ok((func, map))
}

#[cfg(test)]
#[path = "parse_tests.rs"]
pub(crate) mod tests;
