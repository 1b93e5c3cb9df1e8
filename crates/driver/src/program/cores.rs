//! Sources that hold one program per physical core of a logical NeuronCore.
//!
//! A BIR chip is one text with a `cores=N` header (`bir::text::parse_chip`). A Penguin kernel
//! on several cores is one function per core, each after a `core K` line (K = 0, 1, ... in
//! order), as `ntile nki --grid 2 --emit penguin` prints it:
//!
//! ```text
//! core 0
//! kernel add_halves
//! ...
//! core 1
//! kernel add_halves
//! ...
//! ```
//!
//! Each section is read as a function of its own, with every line outside it blanked, so an
//! error names its line in the whole file.

use penguin::text::lexer::{numbered_lines, split_comment};

use super::{detect, load, Format, Program, Source};
use crate::error::DriverError;

/// The refusal of a command that reads one core's program, given `what` the file is.
pub(super) fn one_core_only(src: &Source, what: &str) -> DriverError {
    DriverError::input(format!(
        "{}: {what}: ntile run and ntile verify take it, this command reads one core's program",
        src.name
    ))
}

/// `Some(sections)` when the first line of code is `core 0`: how many `core K` lines the
/// text has.
pub(super) fn penguin_sections(text: &str) -> Option<usize> {
    let mut code = numbered_lines(text).map(|(_, raw)| split_comment(raw).0.trim()).filter(|c| !c.is_empty());
    if code.next()? != "core 0" {
        return None;
    }
    Some(1 + code.filter(|c| is_core_line(c)).count())
}

fn is_core_line(code: &str) -> bool {
    code.strip_prefix("core ").is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
}

/// The programs of a source's physical cores, in core order, and the semaphores they share.
#[derive(Debug)]
pub struct CoreSources {
    /// Core `k`'s program at index `k`.
    pub programs: Vec<Program>,
    /// The names of the semaphores the cores share (a chip's `shared` lines).
    pub shared: Vec<String>,
}

impl CoreSources {
    /// Programs that share no semaphore.
    pub fn unshared(programs: Vec<Program>) -> CoreSources {
        CoreSources { programs, shared: Vec::new() }
    }
}

/// Read a source that may hold several cores' programs, in core order, for
/// [`Runnable::new_chip`](crate::Runnable::new_chip): a `.bir` text whose `program` line says
/// `cores=N` (a chip, see `bir::text::parse_chip`; each core's section looped or not), or
/// Penguin functions after `core K` lines; any other source is one program ([`load`]).
pub fn load_cores(src: &Source) -> Result<CoreSources, DriverError> {
    if penguin_sections(&src.text).is_some() {
        return penguin_cores(src).map(CoreSources::unshared);
    }
    if detect(src)? == Format::BirText {
        let sections =
            bir::text::chip_sections(&src.text).map_err(|e| DriverError::input(format!("{}:{e}", src.name)))?;
        if let Some(sections) = sections {
            let programs = sections
                .cores
                .into_iter()
                .map(|text| load(&Source { name: src.name.clone(), extension: "bir".into(), text }))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(CoreSources { programs, shared: sections.shared });
        }
    }
    Ok(CoreSources::unshared(vec![load(src)?]))
}

/// Each `core K` section read as a Penguin function (looped or not).
fn penguin_cores(src: &Source) -> Result<Vec<Program>, DriverError> {
    let lines: Vec<&str> = src.text.split('\n').collect();
    // (line index of `core K`, K) for every section start.
    let mut starts = Vec::new();
    for (i, raw) in lines.iter().enumerate() {
        let code = split_comment(raw).0.trim();
        if is_core_line(code) {
            let k: usize = code["core ".len()..].parse().unwrap_or(usize::MAX);
            if k != starts.len() {
                return Err(DriverError::input(format!(
                    "{}:{}: `{code}` where `core {}` comes next (sections are numbered from 0 in order)",
                    src.name,
                    i + 1,
                    starts.len()
                )));
            }
            starts.push(i);
        }
    }
    if starts.len() > bir::MAX_CORES {
        return Err(DriverError::input(format!(
            "{}: {} cores, but a logical NeuronCore has at most {}",
            src.name,
            starts.len(),
            bir::MAX_CORES
        )));
    }
    let mut programs = Vec::with_capacity(starts.len());
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(lines.len());
        let text: Vec<&str> =
            lines.iter().enumerate().map(|(i, l)| if i > start && i < end { *l } else { "" }).collect();
        let section = Source { name: src.name.clone(), extension: "pir".into(), text: text.join("\n") };
        if section.text.trim().is_empty() {
            return Err(DriverError::input(format!("{}:{}: core {k} has no function", src.name, start + 1)));
        }
        programs.push(load(&section)?);
    }
    Ok(programs)
}
