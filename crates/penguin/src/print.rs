//! The readable text form of a function, and a printer that puts verifier errors beside the
//! lines they concern.
//!
//! ```text
//! kernel gemm
//! tensor t0 "a" hbm fp32 [4, 8] input
//! tensor t3 "at_0" sbuf bf16 [128, 128] @0
//! i0 = dma_copy cast=rne dst=t3{p0[1, 8] +0 [1, 4]} src=t0{p0[1, 8] +0 [8, 4]}
//! i2 = matmult perf=none pos=0,0 size=128,128 acc=start|stop dst=t5{...} stationary=t3{...} moving=t4{...} after(i0 raw, i1 raw)
//! ```

use std::fmt::{self, Write as _};

use crate::entity::{InstId, TensorId};
use crate::error::{Entity, VerifierErrors};
use crate::function::{Function, FunctionView, TensorData};
use crate::inst::InstData;
use crate::tile::InstTile;

fn tile(t: &InstTile) -> String {
    format!("{}{{{}}}", t.tensor, t.ap)
}

fn tensor_line(func: &Function, id: TensorId, t: &TensorData) -> String {
    let mut s = format!("tensor {id} {:?} {} {} {:?}", t.name, t.memory, t.dtype, t.shape);
    if let Some(a) = t.address {
        let _ = write!(s, " @{a}");
    }
    if func.inputs.contains(&id) {
        s.push_str(" input");
    }
    if func.outputs.contains(&id) {
        s.push_str(" output");
    }
    s
}

fn inst_line(func: &Function, id: InstId, inst: &InstData) -> String {
    let mut s = format!("{id} = {}", inst.opcode());
    for (key, value) in inst.attributes() {
        let _ = write!(s, " {key}={value}");
    }
    for ((t, _), name) in inst.operands().into_iter().zip(inst.operand_names()) {
        let _ = write!(s, " {name}={}", tile(t));
    }
    let deps = func.deps(id);
    if !deps.is_empty() {
        let list: Vec<String> = deps.iter().map(|d| format!("{} {}", d.from, d.kind.name())).collect();
        let _ = write!(s, " after({})", list.join(", "));
    }
    s
}

/// The function's lines, each with the entity it prints.
pub fn lines(func: &Function) -> Vec<(Entity, String)> {
    let mut out = vec![(Entity::Function, format!("kernel {}", func.kernel_name))];
    if let Some(d) = &func.debug_kernel_function_name {
        out.push((Entity::Function, format!("debug_name {d:?}")));
    }
    for (i, (_, t)) in func.tensors.iter().enumerate() {
        let id = TensorId(i as u32);
        out.push((Entity::Tensor(id), tensor_line(func, id, t)));
    }
    for &id in &func.layout {
        if let Some(inst) = func.insts.get(id.index()) {
            out.push((Entity::Inst(id), inst_line(func, id, inst)));
        }
    }
    out
}

/// The function's text with every error printed under the line it concerns as
/// `; error: ...`.
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
