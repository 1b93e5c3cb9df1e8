//! Looped BIR programs: the rolled form of a lowering (what `ntile gemm --emit bir` prints),
//! and a looped program verified (its errors placed on their lines) and expanded for a run
//! (up to [`MAX_RUN_UNROLLED`] instructions), so a looped program and its unrolled twin give
//! the same results and report.

use bir::text::{Line, LoopLine, LoopSourceMap};
use bir::{LoopError, LoopedProgram};

use super::Source;
use crate::error::DriverError;

/// The most unrolled instructions `ntile run` expands a looped program to.
pub const MAX_RUN_UNROLLED: u64 = 1 << 26;

/// `p` without the Penguin origin of each instruction: an origin changes from one iteration
/// to the next but is no loop parameter, so it would keep every loop from rolling.
pub fn without_origins(p: &bir::Program) -> bir::Program {
    let mut p = p.clone();
    p.streams.iter_mut().flatten().for_each(|i| i.origin = None);
    p
}

/// `p`'s repeated bodies rolled into loops (origins dropped).
pub fn rolled(p: &bir::Program) -> LoopedProgram {
    bir::roll_owned(without_origins(p))
}

/// The `.bir` text of `p` with its repeated bodies rolled into loops (origins dropped).
pub fn rolled_text(p: &bir::Program) -> String {
    rolled(p).to_string()
}

/// The file line a looped verifier error concerns.
fn error_line(map: &LoopSourceMap, e: &LoopError) -> Option<(LoopLine, usize)> {
    let at = match e {
        LoopError::ZeroTrips { at } | LoopError::EmptyBody { at } | LoopError::StepLength { at, .. } => {
            LoopLine::Open(at.engine, at.first, at.depth)
        }
        LoopError::ParamOutOfRange { engine, index, .. } => {
            LoopLine::Plain(Line::Inst(bir::InstRef { engine: *engine, index: usize::try_from(*index).ok()? }))
        }
        LoopError::Program(_) | LoopError::CornerTooLarge { .. } => return None,
    };
    Some((at, map.line_of(at)?))
}

/// Each message of a looped verifier failure, with the printed line it belongs to.
fn messages(
    lp: &LoopedProgram,
    map: Option<&LoopSourceMap>,
    errors: &[LoopError],
) -> Vec<(Option<(LoopLine, usize)>, String)> {
    // Positions in the engine rules' messages are unrolled; they name lines only when the
    // program was small enough to be checked unrolled.
    let unrolled = lp.unrolled_len() <= bir::looped::verify::MAX_EXPANDED;
    let mut out = Vec::new();
    for e in errors {
        match e {
            LoopError::Program(bir::BirError::Verify(msgs)) => {
                for m in msgs {
                    let at = m.at.zip(map).filter(|_| unrolled).and_then(|(at, map)| {
                        let key = LoopSourceMap::unrolled_at(lp, at.engine, at.index as u64)?;
                        Some((key, map.line_of(key)?))
                    });
                    out.push((at, m.to_string()));
                }
            }
            other => out.push((map.and_then(|m| error_line(m, other)), other.to_string())),
        }
    }
    out
}

/// A looped verifier failure: each error with its file line, then the program with each
/// error printed under the line it concerns.
pub fn looped_errors(
    src: &Source,
    lp: &LoopedProgram,
    map: Option<&LoopSourceMap>,
    errors: &[LoopError],
) -> DriverError {
    let located = messages(lp, map, errors);
    let mut msg = format!("{}: BIR verifier: {} error(s)\n", src.name, located.len());
    for (at, m) in &located {
        match at {
            Some((_, line)) => msg += &format!("{}:{line}: {m}\n", src.name),
            None => msg += &format!("{}: {m}\n", src.name),
        }
    }
    msg += "\n";
    let mut printed = vec![false; located.len()];
    for (line, text) in bir::text::looped_lines(lp) {
        msg += &text;
        msg.push('\n');
        for (i, (at, m)) in located.iter().enumerate() {
            if !printed[i] && at.is_some_and(|(l, _)| l == line) {
                printed[i] = true;
                msg += &format!("; error: {m}\n");
            }
        }
    }
    for (i, (_, m)) in located.iter().enumerate() {
        if !printed[i] {
            msg += &format!("; error: {m}\n");
        }
    }
    DriverError::input(msg.trim_end())
}

/// Verify a looped program; its errors are the user's.
pub fn check_looped(src: &Source, lp: &LoopedProgram, map: Option<&LoopSourceMap>) -> Result<(), DriverError> {
    check_looped_sharing(src, lp, map, &[])
}

/// [`check_looped`] of one core's program of a chip whose cores share `shared`.
fn check_looped_sharing(
    src: &Source,
    lp: &LoopedProgram,
    map: Option<&LoopSourceMap>,
    shared: &[String],
) -> Result<(), DriverError> {
    bir::verify_looped_sharing(lp, shared).map_err(|errors| looped_errors(src, lp, map, &errors))
}

/// Verify and expand a looped program for a run, with the source map of the expansion (one
/// core's program of a chip whose cores share the semaphores `shared`: none for one core).
pub fn unroll(
    src: &Source,
    lp: &LoopedProgram,
    map: Option<&LoopSourceMap>,
    shared: &[String],
) -> Result<(bir::Program, Option<bir::text::SourceMap>), DriverError> {
    check_looped_sharing(src, lp, map, shared)?;
    let n = lp.unrolled_len();
    if n > MAX_RUN_UNROLLED {
        return Err(DriverError::input(format!(
            "{}: the program unrolls to {n} instructions, more than the {MAX_RUN_UNROLLED} a run expands",
            src.name
        )));
    }
    crate::budget::check_expansion(&src.name, n)?;
    let p = lp.expand().map_err(|e| DriverError::input(format!("{}: {e}", src.name)))?;
    let map = map.map(|m| m.unrolled(lp));
    if n > bir::looped::verify::MAX_EXPANDED {
        // Too large for the looped verifier to expand, but expanded now: every rule on it.
        super::check_program_sharing(src, &p, map.as_ref(), "BIR verifier", shared)?;
    }
    Ok((p, map))
}
