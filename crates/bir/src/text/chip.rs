//! The `.bir` text of a [`Chip`]: the shared header and HBM tensors once, then one section
//! per core.
//!
//! ```text
//! program NAME target=TARGET [hbm_size=BYTES] cores=N    first line: N cores share the HBM below
//! hbm "NAME" DTYPE [D0, ...] @ADDRESS [ROLE]             the shared HBM tensors
//! shared "NAME"                                           a semaphore the cores share
//! core 0 [sbuf_peak=BYTES]                               core 0's semaphores, locations and streams
//! sem s0 "NAME"
//! stream pe:
//!   0: ...
//! core 1 [sbuf_peak=BYTES]                               core 1's, numbered from s0 and 0 again
//! ...
//! ```
//!
//! A section is read exactly as the body of a one-core program (see the [module
//! docs](super)), so every error names its line in the whole file. A one-core chip prints as
//! a plain one-core program.

use penguin::text::lexer::{numbered_lines, split_comment, Cursor, ParseError};

use super::print::lines;
use super::{parse_with_source_map, Line};
use crate::chip::{Chip, MAX_CORES};
use crate::program::Program;

/// The text of a chip (a one-core chip prints as its program).
pub fn print_chip(chip: &Chip) -> String {
    let [first, ..] = chip.cores.as_slice() else { return String::new() };
    if chip.cores.len() == 1 {
        return first.to_string();
    }
    let mut out = String::new();
    let shared = lines(first);
    for (line, text) in &shared {
        match line {
            Line::Program if text.starts_with("program ") => {
                // The one-core header without its sbuf_peak (each core states its own).
                let header = text.rsplit_once(" sbuf_peak=").map_or(text.as_str(), |(h, _)| h);
                out.push_str(&format!("{header} cores={}\n", chip.cores.len()));
            }
            Line::Hbm(_) => {
                out.push_str(text);
                out.push('\n');
            }
            _ => {}
        }
    }
    for name in &chip.shared {
        out.push_str(&format!("shared {name:?}\n"));
    }
    for (i, p) in chip.cores.iter().enumerate() {
        out.push_str(&format!("core {i} sbuf_peak={}\n", p.sbuf_peak_bytes));
        for (line, text) in lines(p) {
            let header = matches!(line, Line::Program) && text.starts_with("program ");
            if !header && !matches!(line, Line::Hbm(_)) {
                out.push_str(&text);
                out.push('\n');
            }
        }
    }
    out
}

/// The `cores=N` of a text's `program` line, if it has one (`None`: a one-core program).
pub fn chip_cores(text: &str) -> Option<&str> {
    let (_, raw) = numbered_lines(text).find(|(_, raw)| !split_comment(raw).0.trim().is_empty())?;
    let body = split_comment(raw).0;
    body.split_whitespace().find_map(|w| w.strip_prefix("cores="))
}

/// Parse the text of a chip (a text without `cores=` is a one-core chip).
pub fn parse_chip(text: &str) -> Result<Chip, ParseError> {
    let Some(sections) = chip_sections(text)? else {
        return Ok(Chip::new(vec![super::parse(text)?]));
    };
    let cores =
        sections.cores.iter().map(|own| Ok(parse_with_source_map(own)?.0)).collect::<Result<Vec<Program>, _>>()?;
    Ok(Chip::with_shared(cores, sections.shared))
}

/// The parts of a chip's text: each core's program as a one-core text of its own (the
/// header without `cores=`, the shared HBM lines and the core's section; every other line
/// blank, so errors keep the whole file's line numbers), and the shared semaphores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChipSections {
    /// Core `k`'s text at index `k` (loops and all: read it as any one-core text).
    pub cores: Vec<String>,
    /// The names on the `shared` lines.
    pub shared: Vec<String>,
}

/// Split a chip's text into [`ChipSections`] (`None` for a text without `cores=`).
pub fn chip_sections(text: &str) -> Result<Option<ChipSections>, ParseError> {
    let numbered: Vec<(usize, &str)> = numbered_lines(text).collect();
    let Some(first) = numbered.iter().position(|(_, raw)| !split_comment(raw).0.trim().is_empty()) else {
        return Ok(None);
    };
    let (header_no, header_raw) = numbered[first];
    let header = split_comment(header_raw).0;
    let Some(cores_word) = header.split_whitespace().find(|w| w.starts_with("cores=")) else {
        return Ok(None);
    };
    let col = header.find(cores_word).map_or(1, |c| c + 1);
    let at = |line: usize, col: usize, m: String| Cursor::new(line, "").error_at(col, m);
    let n: usize = cores_word["cores=".len()..]
        .parse()
        .ok()
        .filter(|n| (1..=MAX_CORES).contains(n))
        .ok_or_else(|| at(header_no, col, format!("expected `cores=1` or `cores=2`, found `{cores_word}`")))?;
    if header.split_whitespace().any(|w| w.starts_with("sbuf_peak=")) {
        let m = "in a program of several cores, `sbuf_peak=` goes on each `core K` line".to_string();
        return Err(at(header_no, 1, m));
    }
    // Which section each line belongs to: None before the first `core` line.
    let mut section: Option<usize> = None;
    let mut owner: Vec<Option<usize>> = vec![None; numbered.len()];
    let mut peaks: Vec<Option<&str>> = Vec::new();
    let mut shared: Vec<String> = Vec::new();
    for (k, &(line_no, raw)) in numbered.iter().enumerate().skip(first + 1) {
        let body = split_comment(raw).0;
        let mut words = body.split_whitespace();
        match words.next() {
            None => continue,
            Some("core") => {
                let expect = section.map_or(0, |s| s + 1);
                let id = words.next().unwrap_or("");
                if id != expect.to_string() || expect >= n {
                    let m = if expect >= n {
                        format!("a `core {id}` section, but the program line says cores={n}")
                    } else {
                        format!("expected `core {expect}` (cores are numbered in order from 0), found `core {id}`")
                    };
                    return Err(at(line_no, 1, m));
                }
                let mut peak = None;
                for w in words {
                    match w.strip_prefix("sbuf_peak=") {
                        Some(v) if peak.is_none() => peak = Some(v),
                        _ => {
                            return Err(at(
                                line_no,
                                1,
                                format!("expected `sbuf_peak=BYTES` after `core {id}`, found `{w}`"),
                            ))
                        }
                    }
                }
                peaks.push(peak);
                section = Some(expect);
            }
            Some("shared") if section.is_none() => {
                let rest = body.trim_start()["shared".len()..].trim();
                let name = rest
                    .strip_prefix('"')
                    .and_then(|r| r.strip_suffix('"'))
                    .filter(|n| !n.is_empty() && !n.contains('"'))
                    .ok_or_else(|| at(line_no, 1, format!("expected `shared \"NAME\"`, found `{}`", body.trim())))?;
                shared.push(name.to_string());
            }
            Some(kw) => {
                if section.is_none() && kw != "hbm" {
                    let m = format!(
                        "expected `hbm`, `shared` or `core 0` (in a program of {n} cores, `{kw}` lines go in a `core K` section)"
                    );
                    return Err(at(line_no, 1, m));
                }
                owner[k] = section;
            }
        }
    }
    if peaks.len() != n {
        let line = numbered.last().map_or(header_no, |l| l.0);
        return Err(at(
            line,
            1,
            format!("the program line says cores={n} but {} `core K` sections follow", peaks.len()),
        ));
    }
    let base_header = header.replacen(&format!(" {cores_word}"), "", 1);
    let mut cores: Vec<String> = Vec::with_capacity(n);
    for (c, peak) in peaks.iter().enumerate() {
        // Core c's text: the same lines, the others blank, so errors keep their line numbers.
        let mut own = String::with_capacity(text.len());
        for (k, &(_, raw)) in numbered.iter().enumerate() {
            if k == first {
                own.push_str(&base_header);
                if let Some(v) = peak {
                    own.push_str(&format!(" sbuf_peak={v}"));
                }
            } else if owner[k] == Some(c) || (owner[k].is_none() && k > first && is_hbm(raw)) {
                own.push_str(raw);
            }
            own.push('\n');
        }
        cores.push(own);
    }
    Ok(Some(ChipSections { cores, shared }))
}

fn is_hbm(raw: &str) -> bool {
    split_comment(raw).0.split_whitespace().next() == Some("hbm")
}
