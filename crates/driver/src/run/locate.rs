//! Placing a simulator or cycle-model error on the source line of the instruction it names.

use crate::program::Source;

/// The file lines of the program being run, to place simulator errors.
#[derive(Debug)]
pub(super) enum SourceLines {
    /// A Penguin function lowered to the program: a BIR instruction is placed by its `origin`.
    Penguin(Option<penguin::parse::SourceMap>),
    /// A BIR program: a BIR instruction is placed by its own line.
    Bir(Option<bir::text::SourceMap>),
}

/// The instructions a simulator error names: the one that failed, or every stuck one of a
/// deadlock (empty when the error is not about an instruction).
fn failing_insts(e: &sim::SimError) -> Vec<sim::InstRef> {
    use sim::SimError as E;
    match e {
        E::WrongEngine { at, .. }
        | E::UnknownSemaphore { at, .. }
        | E::OutOfRange { at, .. }
        | E::CopyShape { at, .. }
        | E::BadOperand { at, .. }
        | E::NoStationary { at }
        | E::MatmulShape { at, .. }
        | E::IndexOutOfRange { at, .. }
        | E::Unsupported { at, .. }
        | E::AccumulateWithoutStart { at, .. }
        | E::ReadOpenGroup { at, .. } => vec![*at],
        E::Deadlock { stuck } => stuck.iter().map(|s| s.at).collect(),
        E::UnknownTensor { .. }
        | E::TensorSize { .. }
        | E::TensorOutsideHbm { .. }
        | E::HbmTooLarge { .. }
        | E::TooManyStreams { .. }
        | E::NoSteadyState { .. }
        | E::Interrupted
        | E::Internal(_) => Vec::new(),
    }
}

/// The file line of BIR instruction `at`: its own line in a `.bir` file, the line of the
/// Penguin instruction it was lowered from in a `.pir` file.
pub(super) fn inst_line(program: &bir::Program, lines: &SourceLines, at: sim::InstRef) -> Option<usize> {
    match lines {
        SourceLines::Bir(map) => map.as_ref()?.line_of(bir::text::Line::Inst(at)),
        SourceLines::Penguin(map) => {
            let id = program.streams.get(at.engine.index())?.get(at.index)?.origin?;
            map.as_ref()?.line_of(penguin::Entity::Inst(id))
        }
    }
}

/// A simulator error with the file line of the instruction it names, when known. For a
/// lowered Penguin function each BIR position is also named by the Penguin instruction it
/// came from: `i0 (dma0[0]): ...`, on the line of `i0`.
pub(super) fn sim_message(src: &Source, program: &bir::Program, lines: &SourceLines, e: &sim::SimError) -> String {
    let message = e.to_string();
    let (line, message) = match lines {
        SourceLines::Bir(map) => {
            // The failing instruction's own line; a deadlock names several and gets none.
            let at = match e {
                sim::SimError::Deadlock { .. } => None,
                _ => failing_insts(e).first().copied(),
            };
            (at.and_then(|at| map.as_ref()?.line_of(bir::text::Line::Inst(at))), message)
        }
        SourceLines::Penguin(map) => {
            let origin = |at: sim::InstRef| {
                program.streams.get(at.engine.index()).and_then(|s| s.get(at.index)).and_then(|i| i.origin)
            };
            let insts = failing_insts(e);
            let line = insts.iter().find_map(|&at| {
                let id = origin(at)?;
                map.as_ref()?.line_of(penguin::Entity::Inst(id))
            });
            let message = match e {
                // Each stuck stream prints as `pe[3] waits for ...`.
                sim::SimError::Deadlock { stuck } => {
                    let named = |s: &sim::Stuck| match origin(s.at) {
                        Some(id) => format!("{id} ({s})"),
                        None => s.to_string(),
                    };
                    format!("deadlock: {}", stuck.iter().map(named).collect::<Vec<_>>().join(", "))
                }
                _ => match insts.first().and_then(|&at| Some((at, origin(at)?))) {
                    Some((at, id)) => match message.strip_prefix(&format!("{at}: ")) {
                        Some(rest) => format!("{id} ({at}): {rest}"),
                        None => format!("{id} ({at}): {message}"),
                    },
                    None => message,
                },
            };
            (line, message)
        }
    };
    match line {
        Some(line) => format!("{}:{line}: simulation failed: {message}", src.name),
        None => format!("{}: simulation failed: {message}", src.name),
    }
}
