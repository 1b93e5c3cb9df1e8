//! Looped Penguin functions: read from JSON, and expanded (up to [`MAX_RUN_UNROLLED`]
//! instructions) and verified with [`penguin::verify()`] for a run or a compile, so a looped
//! function and its unrolled twin give the same results. A verifier error names the file
//! line of the instruction it concerns (the line of the looped instruction it is an iteration
//! of).

use std::collections::HashMap;

use penguin::looped::{expand_items, for_each_inst, Item, StepError};
use penguin::text::{LoopLine, LoopSourceMap};
use penguin::{Entity, Function, LoopedFunction, PirInst, VerifierErrors};

use super::{Program, Source};
use crate::error::DriverError;

/// The most unrolled instructions a looped function is expanded to (about 4 million: an
/// unrolled Penguin instruction with its edges takes a few hundred bytes).
pub const MAX_RUN_UNROLLED: u64 = 1 << 22;

/// The printed line an entity of the expansion belongs to (an instruction: the looped
/// instruction it is an iteration of, looked up in `firsts` when given).
fn entity_at(lf: &LoopedFunction, firsts: Option<&[u64]>, e: Entity) -> Option<LoopLine> {
    match (e, firsts) {
        (Entity::Inst(i), Some(firsts)) => firsts.get(i.index()).map(|&f| LoopLine::Inst(f)),
        (Entity::Inst(i), None) => LoopSourceMap::unrolled_at(lf, u64::from(i.0)),
        (other, _) => Some(LoopLine::Plain(other)),
    }
}

/// For every unrolled instruction of `lf`, the unrolled index of the first iteration of the
/// looped instruction it comes from: one walk, so that many errors are placed in linear time.
fn first_iterations(lf: &LoopedFunction) -> Vec<u64> {
    fn walk(items: &[Item<PirInst>], first: &mut u64, out: &mut Vec<u64>) {
        for it in items {
            match it {
                Item::Inst(_) => {
                    out.push(*first);
                    *first += 1;
                }
                Item::Loop(l) => {
                    let start = *first;
                    for _ in 0..l.trips {
                        *first = start;
                        walk(&l.body, first, out);
                    }
                    *first = start + penguin::looped::unrolled_len(&l.body) * u64::from(l.trips);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(&lf.body, &mut 0, &mut out);
    out
}

/// Errors up to which each is placed by its own walk of the loops.
const FEW_ERRORS: usize = 16;

/// A Penguin verifier failure of a looped function's expansion: each error with its file
/// line, then the looped function with each error printed under the line it concerns
/// (errors about the function as a whole under its `kernel` line).
pub fn looped_errors(
    src: &Source,
    lf: &LoopedFunction,
    map: Option<&LoopSourceMap>,
    errors: &VerifierErrors,
) -> DriverError {
    let mut msg = format!("{}: {} verifier error(s)\n", src.name, errors.0.len());
    let mut under: HashMap<LoopLine, Vec<String>> = HashMap::new();
    let mut unplaced = Vec::new();
    let firsts = (errors.0.len() > FEW_ERRORS).then(|| first_iterations(lf));
    for e in &errors.0 {
        let m = format!("{}: {}", e.entity, e.message);
        let at = entity_at(lf, firsts.as_deref(), e.entity);
        match at.zip(map).and_then(|(at, map)| map.line_of(at)) {
            Some(line) => msg += &format!("{}:{line}: {m}\n", src.name),
            None => msg += &format!("{}: {m}\n", src.name),
        }
        match at {
            Some(at) => under.entry(at).or_default().push(m),
            None => unplaced.push(m),
        }
    }
    msg += "\n";
    for (line, text) in penguin::text::looped_lines(lf) {
        msg += &text;
        msg.push('\n');
        // `remove`: the header's lines are all `Entity::Function`; the first takes them.
        for m in under.remove(&line).unwrap_or_default() {
            msg += &format!("; error: {m}\n");
        }
    }
    // Lines not printed (none, for a function the verifier names rightly), in error order.
    let left = errors.0.iter().filter_map(|e| under.remove(&entity_at(lf, firsts.as_deref(), e.entity)?)).flatten();
    for m in left.chain(unplaced) {
        msg += &format!("; error: {m}\n");
    }
    DriverError::input(msg.trim_end())
}

/// Where the expansion of `lf` leaves a parameter's range: the unrolled index of the first
/// instruction that does not expand.
fn first_out_of_range(lf: &LoopedFunction) -> u64 {
    let zero = vec![0; penguin::looped::param_count(&lf.body)];
    let mut count = 0u64;
    let _ = for_each_inst(&lf.body, &zero, &mut |_| {
        count += 1;
        Ok::<(), StepError>(())
    });
    count
}

/// Expand a looped function (up to [`MAX_RUN_UNROLLED`] instructions) and verify the
/// expansion; returns it with its source map (every instruction on the line of the looped
/// instruction it is an iteration of).
pub fn unroll(
    src: &Source,
    lf: &LoopedFunction,
    map: Option<&LoopSourceMap>,
) -> Result<(Function, Option<penguin::parse::SourceMap>), DriverError> {
    let n = lf.unrolled_len();
    if n > MAX_RUN_UNROLLED {
        return Err(DriverError::input(format!(
            "{}: the function unrolls to {n} instructions, more than the {MAX_RUN_UNROLLED} ntile expands",
            src.name
        )));
    }
    crate::budget::check_expansion(&src.name, n)?;
    let at_line = |i: u64| match map.and_then(|m| m.unrolled_line(lf, i)) {
        Some(line) => format!("{}:{line}", src.name),
        None => src.name.clone(),
    };
    // As `LoopedFunction::expand`, with the line of the instruction that does not expand.
    let insts = expand_items(&lf.body).map_err(|e| match e {
        StepError::OutOfRange => {
            let i = first_out_of_range(lf);
            DriverError::input(format!(
                "{}: i{i}: a loop moves a parameter of this instruction out of range",
                at_line(i)
            ))
        }
        other => DriverError::input(format!("{}: {other}", src.name)),
    })?;
    let mut f = lf.header.clone();
    f.insts.clear();
    f.layout.clear();
    f.deps.clear();
    for inst in insts {
        let at = f.insts.len() as u32;
        if let Some(d) = inst.deps.iter().find(|d| d.from.0 >= at) {
            return Err(DriverError::input(format!(
                "{}: instruction i{at} depends on {}, which does not come before it",
                at_line(u64::from(at)),
                d.from
            )));
        }
        f.push_inst(inst.data, inst.deps);
    }
    if let Err((e, m)) = penguin::parse::check_limits(&f) {
        let line = match e {
            Entity::Inst(i) => at_line(u64::from(i.0)),
            _ => src.name.clone(),
        };
        return Err(DriverError::input(format!("{line}: {e}: {m}")));
    }
    penguin::verify(&f).map_err(|e| looped_errors(src, lf, map, &e))?;
    let map = map.map(|m| m.unrolled(lf));
    Ok((f, map))
}

/// Verify a looped function without expanding it ([`penguin::verify_looped`]), for one too
/// large to expand; each error names the loop or instruction it concerns by its unrolled
/// place.
pub fn verify_unexpanded(src: &Source, lf: &LoopedFunction) -> Result<(), DriverError> {
    penguin::verify_looped(lf).map_err(|errors| {
        let mut msg = format!(
            "{}: Penguin verifier (looped, not expanded: instructions named by their place in the function of \
             each loop's first and last trip): {} error(s)",
            src.name,
            errors.len()
        );
        for e in &errors {
            msg += &format!("\n{}: {e}", src.name);
        }
        DriverError::input(msg)
    })
}

/// `program` with a looped function expanded (and verified); any other program as it is.
pub fn expand(src: &Source, program: Program) -> Result<Program, DriverError> {
    match program {
        Program::PenguinLooped(lf, map) => {
            let (f, map) = unroll(src, &lf, map.as_ref())?;
            Ok(Program::Penguin(f, map))
        }
        other => Ok(other),
    }
}

/// The number of loops of a looped function.
pub fn loop_count(lf: &LoopedFunction) -> usize {
    penguin::text::looped_lines(lf).iter().filter(|(l, _)| matches!(l, LoopLine::Open(..))).count()
}
