//! The `.pir` text form of a function (its grammar is in [`crate::text::parse`], which reads it
//! back), and a printer that puts verifier errors beside the lines they concern.
//!
//! ```text
//! kernel gemm
//! inputs t0, t1
//! outputs t2
//! tensor t0 "a" hbm fp32 [4, 8]
//! tensor t3 "at_0" sbuf bf16 [8, 4] @0
//! i0 = dma_copy cast=rne dst=t3{p0[1, 8] +0 [1, 4]} src=t0{p0[1, 8] +0 [8, 4]}
//! i2 = matmult perf=none pos=0,0 size=128,128 acc=start|stop dst=t5{...} stationary=t3{...} moving=t4{...} after(i0 raw, i1 raw) loc("kernel.py:41")
//! ```
//!
//! A tile prints as `tN{p START [STRIDE, NUM] OFFSET [STRIDE, NUM]...}`; its memory and dtype
//! are the tensor's, and are stated (`tN:MEMORY:DTYPE{...}`) only when they are not (or the
//! tensor does not exist), so that every function prints, valid or not, and parses back to
//! itself.

use std::fmt::{self, Write as _};

use crate::ap::AccessPattern;
use crate::deps::compute_deps;
use crate::entity::{InstId, TensorId};
use crate::error::{Entity, VerifierErrors};
use crate::function::{Function, FunctionView, TensorData};
use crate::inst::InstData;
use crate::tile::InstTile;
use crate::verify::is_identifier;

/// `s` as a double-quoted string that [`crate::text::lexer::Cursor::string`] reads back.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `p START [STRIDE, NUM] OFFSET [STRIDE, NUM]...`, the inside of a tile's braces.
pub fn ap_text(ap: &AccessPattern) -> String {
    let mut s = format!("p{}{} {:+}", ap.start_partition, ap.partitions, ap.offset);
    for d in &ap.free {
        let _ = write!(s, " {d}");
    }
    s
}

fn tile(func: &Function, t: &InstTile) -> String {
    let stated = match func.tensor(t.tensor) {
        Some(td) if td.memory == t.memory && td.dtype == t.dtype => String::new(),
        _ => format!(":{}:{}", t.memory, t.dtype),
    };
    format!("{}{stated}{{{}}}", t.tensor, ap_text(&t.ap))
}

fn tensor_line(id: TensorId, t: &TensorData) -> String {
    let mut s = format!("tensor {id} {} {} {} {:?}", quote(&t.name), t.memory, t.dtype, t.shape);
    if let Some(a) = t.address {
        let _ = write!(s, " @{a}");
    }
    s
}

fn inst_line(func: &Function, id: InstId, inst: &InstData, empty_after: bool) -> String {
    let mut s = format!("{id} = {}", inst.opcode());
    for (key, value) in inst.attributes() {
        let _ = write!(s, " {key}={value}");
    }
    for ((t, _), name) in inst.operands().into_iter().zip(inst.operand_names()) {
        let _ = write!(s, " {name}={}", tile(func, t));
    }
    let deps = func.deps(id);
    if !deps.is_empty() || empty_after {
        let list: Vec<String> = deps.iter().map(|d| format!("{} {}", d.from, d.kind.name())).collect();
        let _ = write!(s, " after({})", list.join(", "));
    }
    if let Some(loc) = func.srclocs.get(id) {
        let _ = write!(s, " {}", loc_text(loc));
    }
    s
}

/// An instruction's source location as it ends its line: `loc("kernel.py:41")`.
pub fn loc_text(loc: &str) -> String {
    format!("loc({})", quote(loc))
}

fn id_list<T: fmt::Display>(ids: &[T]) -> String {
    ids.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// Whether every instruction appears exactly once in program order (then the line order of
/// the instructions says the order and no `layout` line is needed).
fn layout_is_permutation(func: &Function) -> bool {
    let mut seen = vec![false; func.insts.len()];
    func.layout.len() == func.insts.len()
        && func.layout.iter().all(|id| seen.get_mut(id.index()).is_some_and(|s| !std::mem::replace(s, true)))
}

/// The function's lines, each with the entity it prints.
pub fn lines(func: &Function) -> Vec<(Entity, String)> {
    let name = if is_identifier(&func.kernel_name) { func.kernel_name.clone() } else { quote(&func.kernel_name) };
    let mut out = vec![(Entity::Function, format!("kernel {name}"))];
    if let Some(d) = &func.debug_kernel_function_name {
        out.push((Entity::Function, format!("debug_name {}", quote(d))));
    }
    if !func.inputs.is_empty() {
        out.push((Entity::Function, format!("inputs {}", id_list(&func.inputs))));
    }
    if !func.outputs.is_empty() {
        out.push((Entity::Function, format!("outputs {}", id_list(&func.outputs))));
    }
    let order: Vec<InstId> = if layout_is_permutation(func) {
        func.layout.clone()
    } else {
        out.push((Entity::Function, format!("layout {}", id_list(&func.layout)).trim_end().to_string()));
        (0..func.insts.len() as u32).map(InstId).collect()
    };
    for (i, (_, t)) in func.tensors.iter().enumerate() {
        let id = TensorId(i as u32);
        out.push((Entity::Tensor(id), tensor_line(id, t)));
    }
    // Without any `after(...)` the parser computes the edges; say "none" where that differs.
    let mut empty_after = func.deps.iter().all(Vec::is_empty) && compute_deps(func).iter().any(|d| !d.is_empty());
    for id in order {
        if let Some(inst) = func.insts.get(id.index()) {
            out.push((Entity::Inst(id), inst_line(func, id, inst, empty_after)));
            empty_after = false;
        }
    }
    out
}

/// The function's text with every error printed under the line it concerns as
/// `; error: ...` (errors about the function as a whole go under the `kernel` line).
pub fn print_with_errors(func: &Function, errors: &VerifierErrors) -> String {
    let mut s = String::new();
    let mut printed = vec![false; errors.0.len()];
    for (entity, line) in lines(func) {
        s.push_str(&line);
        s.push('\n');
        for (i, e) in errors.0.iter().enumerate() {
            if e.entity == entity && !printed[i] {
                printed[i] = true;
                let _ = writeln!(s, "; error: {}", e.message);
            }
        }
    }
    for (i, e) in errors.0.iter().enumerate() {
        if !printed[i] {
            let _ = writeln!(s, "; error: {e}");
        }
    }
    s
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (_, line) in lines(self) {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}
