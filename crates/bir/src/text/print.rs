//! Printing a [`Program`] as `.bir` text, with verifier errors beside their lines.

use std::fmt::{self, Write as _};

use penguin::text::print::quote;

use crate::error::VerifyError;
use crate::program::{BirInst, Engine, HbmRole, HwAp, InstRef, Program, SemId};

/// `MEMORY.DTYPE[pSTART:COUNT:STRIDE @BYTE_OFFSET [STRIDE, NUM]...]`.
pub fn ap_text(ap: &HwAp) -> String {
    let mut s = format!(
        "{}.{}[p{}:{}:{} @{}",
        ap.memory, ap.dtype, ap.start_partition, ap.num_partitions, ap.partition_stride, ap.byte_offset
    );
    for d in &ap.dims {
        let _ = write!(s, " {d}");
    }
    s.push(']');
    s
}

/// One instruction as its text (without the stream index).
pub fn inst_text(i: &BirInst) -> String {
    let mut s = String::from(i.op.name());
    for (key, value) in i.op.attributes() {
        let _ = write!(s, " {key}={value}");
    }
    for (name, ap) in i.op.aps() {
        let _ = write!(s, " {name}={}", ap_text(ap));
    }
    if !i.waits.is_empty() {
        let waits: Vec<String> = i.waits.iter().map(|w| format!("{}>={}", w.sem, w.value)).collect();
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

/// What a line of the text prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Line {
    /// The `program` line.
    Program,
    /// An `hbm` line (index into [`Program::hbm`]).
    Hbm(usize),
    /// A `sem` line.
    Sem(SemId),
    /// A `stream` header.
    Stream(Engine),
    /// An instruction.
    Inst(InstRef),
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Line::Program => f.write_str("program"),
            Line::Hbm(i) => write!(f, "hbm tensor {i}"),
            Line::Sem(s) => write!(f, "{s}"),
            Line::Stream(e) => write!(f, "stream {e}"),
            Line::Inst(at) => write!(f, "{at}"),
        }
    }
}

/// The program's lines, each with what it prints.
pub fn lines(p: &Program) -> Vec<(Line, String)> {
    let name =
        if penguin::verify::is_identifier(&p.kernel_name) { p.kernel_name.clone() } else { quote(&p.kernel_name) };
    let mut out = vec![(
        Line::Program,
        format!("program {name} target={} hbm_size={} sbuf_peak={}", p.target, p.hbm_size, p.sbuf_peak_bytes),
    )];
    for (i, t) in p.hbm.iter().enumerate() {
        let role = match t.role {
            HbmRole::Input => " input",
            HbmRole::Output => " output",
            HbmRole::Internal => "",
        };
        out.push((Line::Hbm(i), format!("hbm {} {} {:?} @{}{role}", quote(&t.name), t.dtype, t.shape, t.address)));
    }
    for (i, name) in p.semaphores.iter().enumerate() {
        let id = SemId(i as u32);
        out.push((Line::Sem(id), format!("sem {id} {}", quote(name))));
    }
    for (id, loc) in p.srclocs.iter() {
        out.push((Line::Program, format!("loc {id} {}", quote(loc))));
    }
    for e in Engine::all() {
        let stream = p.stream(e);
        if stream.is_empty() {
            continue;
        }
        out.push((Line::Stream(e), format!("stream {e}:")));
        for (n, i) in stream.iter().enumerate() {
            out.push((Line::Inst(InstRef { engine: e, index: n }), format!("  {n}: {}", inst_text(i))));
        }
    }
    out
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (_, line) in lines(self) {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

/// The line a verifier error belongs beside: its instruction's, or the `program` line.
pub fn error_line(e: &VerifyError) -> Line {
    e.at.map_or(Line::Program, Line::Inst)
}

/// The program's text with every verifier error printed under the instruction it is about
/// as `; error: ...` (errors about the program as a whole go under the `program` line).
pub fn print_with_errors(p: &Program, errors: &[VerifyError]) -> String {
    let mut s = String::new();
    let mut printed = vec![false; errors.len()];
    for (line, text) in lines(p) {
        s.push_str(&text);
        s.push('\n');
        for (i, e) in errors.iter().enumerate() {
            if error_line(e) == line && !printed[i] {
                printed[i] = true;
                let _ = writeln!(s, "; error: {}", e.message);
            }
        }
    }
    for (i, e) in errors.iter().enumerate() {
        if !printed[i] {
            let _ = writeln!(s, "; error: {e}");
        }
    }
    s
}
