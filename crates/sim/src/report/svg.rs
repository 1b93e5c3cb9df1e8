//! Static SVG timeline of a [`CycleReport`](crate::CycleReport): a title saying what the
//! kernel is, one row per engine that ran something (the PE's weight loads on a row of their
//! own, `pe.weights`), each instruction a rectangle coloured by what it does (matmuls,
//! weight loads, A loads, B loads, stores, casting and transposing transfers, copies, ...),
//! semaphore waits as a light strip, a time axis in microseconds and a legend of the kinds
//! present. Below it, the SBUF occupancy over the same time axis and, for a GEMM, the
//! tile-grid picture (see [`tile_grid_svg`]).
//!
//! The document is self-contained (an inline `<style>`, the generic `sans-serif` font, no
//! scripts) and its size is bounded by rows x width, not by the instruction count: a large
//! GEMM has hundreds of thousands of slices, far more than a row has pixels. Per row, at most
//! two instruction rectangles and one wait strip per pixel column:
//! - a slice at least a pixel wide that does not overlap the last one drawn this way is
//!   drawn as itself, with a `<title>` tooltip (at most one per pixel of the row);
//! - every other slice is rasterized into the row's pixel columns; a slice alone in all of
//!   its columns is still drawn as itself, with its tooltip, and the columns shared by more
//!   than one slice become merged rectangles of the kind that covers most of each column
//!   (adjacent columns of one kind share a rectangle), without tooltips;
//! - waits closer than a pixel apart share one strip.

use std::fmt::{self, Display, Write};

use bir::{Engine, Op, Program};

use crate::cycle::{CycleReport, Slice};
use crate::report::timeline::counters::counters;
use crate::report::timeline::grid::{finish_times, grid_width, write_grid, GRID_STYLE};
use crate::report::timeline::kind::Kind;
use crate::report::timeline::labels::{labels, Name, SliceLabel};
use crate::report::timeline::occupancy::{self, write_occupancy, OCCUPANCY_STYLE};
use crate::report::timeline::KernelInfo;
use crate::report::trace::us;

/// Width of the whole document, in pixels.
const WIDTH: usize = 1600;
/// Left margin holding the row labels.
const PLOT_X: usize = 140;
/// Right margin.
const RIGHT_MARGIN: usize = 20;
/// Width of the time axis: one pixel column per slot of the rasterized rows.
const PLOT_W: usize = WIDTH - PLOT_X - RIGHT_MARGIN;
/// Top of the first row (below the title and the tick labels).
const ROWS_Y: usize = 56;
/// Height of one row, gap included.
const ROW_H: usize = 22;
/// Instruction rectangles inside a row: top and height.
const OP_Y: usize = 2;
const OP_H: usize = 16;
/// The wait strip inside a row: top and height (thin, centred).
const WAIT_Y: usize = 8;
const WAIT_H: usize = 4;
/// Legend entries per line, and the horizontal pitch of an entry.
const LEGEND_PER_LINE: usize = 5;
const LEGEND_PITCH: usize = 240;
/// Roughly how many ticks the time axis gets.
const TARGET_TICKS: f64 = 8.0;

/// Text with the XML special characters escaped, for element content and attribute values.
/// Control characters XML cannot carry become U+FFFD.
pub(crate) struct Escaped<'a>(pub(crate) &'a str);

impl Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(|c: char| matches!(c, '&' | '<' | '>' | '"' | '\'') || is_forbidden(c)) {
            f.write_str(&rest[..at])?;
            let c = rest[at..].chars().next().unwrap_or('\u{FFFD}');
            f.write_str(match c {
                '&' => "&amp;",
                '<' => "&lt;",
                '>' => "&gt;",
                '"' => "&quot;",
                '\'' => "&apos;",
                _ => "\u{FFFD}",
            })?;
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

/// Characters XML 1.0 does not allow in a document.
fn is_forbidden(c: char) -> bool {
    c.is_control() && !matches!(c, '\t' | '\n' | '\r')
}

/// One instruction of a row, placed on the time axis.
#[derive(Clone, Copy, Debug)]
struct Placed<'a> {
    slice: &'a Slice,
    op: &'a Op,
    kind: Kind,
    /// Start and end in pixels from the axis origin.
    x0: f64,
    x1: f64,
}

impl Placed<'_> {
    fn kind(&self) -> Kind {
        self.kind
    }
}

/// One pixel column of a row's raster.
#[derive(Clone, Copy, Debug, Default)]
struct Column {
    /// Pixels of coverage per kind (overlapping slices each count).
    cover: [f64; Kind::ALL.len()],
    /// Slices touching the column.
    slices: u32,
    /// The column belongs to a slice drawn as itself.
    taken: bool,
}

impl Column {
    /// The kind covering most of the column (the first in [`Kind::ALL`] on a tie).
    fn dominant(&self) -> Kind {
        let mut best = Kind::Matmul;
        for kind in Kind::ALL {
            if self.cover[kind.index()] > self.cover[best.index()] {
                best = kind;
            }
        }
        best
    }
}

/// The pixel columns `[x0, x1)` touches (at least the one holding `x0`).
fn columns(x0: f64, x1: f64) -> std::ops::RangeInclusive<usize> {
    let last = PLOT_W - 1;
    let first = (x0.floor().max(0.0) as usize).min(last);
    let end = if x1 > x0 { (x1.ceil() as usize).saturating_sub(1) } else { first };
    first..=end.clamp(first, last)
}

/// One row of the timeline: a name, its busy fraction and its instructions with their kinds.
struct Row<'a> {
    name: String,
    busy: f64,
    slices: Vec<(&'a Slice, Kind)>,
}

/// A static SVG timeline of a modeled program (`report` must come from [`model`](crate::model)
/// of the same `program`; slices it does not match are skipped).
///
/// One row per engine that ran something (PE, its weight loads, ACT, DVE, POOL, SP, then the
/// DMA queues in order) labelled with its busy percentage, a rectangle per instruction
/// coloured by kind with an `op, engine, start-end us` tooltip, semaphore waits as a light
/// strip before the instruction they held back. Instructions narrower than a pixel that share
/// pixel columns are merged, so the size is bounded by rows x width whatever the instruction
/// count.
pub fn timeline_svg(program: &Program, report: &CycleReport) -> String {
    timeline_svg_with(program, report, &KernelInfo::default())
}

/// [`timeline_svg`] with the kernel's context: the title from `info`, loads of A and B told
/// apart, the SBUF occupancy panel per named buffer and, for a GEMM, the tile grid.
pub fn timeline_svg_with(program: &Program, report: &CycleReport, info: &KernelInfo) -> String {
    let mut out = String::with_capacity(64 * 1024);
    // Writing into a `String` cannot fail.
    let _ = write_document(&mut out, program, report, info, true);
    out
}

/// The timeline of a chip: each core's picture (titled by `infos[core]`) one above the
/// other, all on the chip's time axis, so that the cores' instructions line up in time.
pub fn timeline_svg_chip(chip: &bir::Chip, report: &crate::ChipReport, infos: &[KernelInfo]) -> String {
    let mut body = String::with_capacity(64 * 1024);
    let mut height = 0.0f64;
    let mut width = 0.0f64;
    for (core, (program, cycle)) in chip.cores.iter().zip(&report.cores).enumerate() {
        let fallback = KernelInfo::default();
        let info = infos.get(core).unwrap_or(&fallback);
        let aligned = CycleReport { total_ns: report.total_ns, ..cycle.clone() };
        let doc = timeline_svg_with(program, &aligned, info);
        let (head, rest) = doc.split_once('\n').unwrap_or((&doc, ""));
        let attr = |name: &str| -> f64 {
            let key = format!(" {name}=\"");
            head.split_once(&key).and_then(|(_, v)| v.split('"').next()).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        };
        let (w, h) = (attr("width"), attr("height"));
        // The core's document becomes a nested picture at its place.
        let _ =
            writeln!(body, r#"<svg x="0" y="{height:.0}" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}">"#);
        body.push_str(rest);
        height += h;
        width = width.max(w);
    }
    let mut out = String::with_capacity(body.len() + 256);
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}">"#
    );
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}

/// The tile-grid picture alone: C's output tiles coloured by the time each was stored, with
/// the block boundaries; `None` when `info` describes no GEMM.
pub fn tile_grid_svg(program: &Program, report: &CycleReport, info: &KernelInfo) -> Option<String> {
    let gemm = info.gemm.as_ref()?;
    let buffers = info.buffers_of(program);
    let labels = labels(program, report, &buffers, Some(gemm));
    let finish = finish_times(report, &labels, program, gemm);
    let mut body = String::with_capacity(64 * 1024);
    let height = write_grid(&mut body, &finish, gemm, 24.0).ok()? + 24.0;
    let heading = title(program, report, info);
    // Wide enough for the grid and the heading.
    let width = grid_width(&finish, gemm).max(7.0 * heading.len() as f64).min(WIDTH as f64);
    let mut out = String::with_capacity(body.len() + 1024);
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}">"#
    );
    let _ = writeln!(out, "<title>{}</title>", Escaped(&heading));
    out.push_str("<style>\ntext{font:11px sans-serif;fill:#222}\n.head{font-size:13px;font-weight:bold}\n");
    out.push_str(GRID_STYLE);
    out.push_str("</style>\n");
    let _ = writeln!(out, r#"<text class="head" x="8" y="16">{}</text>"#, Escaped(&heading));
    out.push_str(&body);
    out.push_str("</svg>\n");
    Some(out)
}

/// The heading: what the kernel is, then the modeled time and HFU.
fn title(program: &Program, report: &CycleReport, info: &KernelInfo) -> String {
    let what = info.title.clone().unwrap_or_else(|| format!("{} ({})", program.kernel_name, program.target));
    format!("{what}: {:.3} us modeled, HFU {:.3}", us(report.total_ns), report.hfu())
}

/// The rows of the timeline, with each instruction's kind.
fn rows<'a>(program: &Program, report: &'a CycleReport, labels: &[SliceLabel], info: &KernelInfo) -> Vec<Row<'a>> {
    // Engines in order, the PE's weight loads right after the PE.
    let mut by_row: Vec<Vec<(&Slice, Kind)>> = vec![Vec::new(); bir::NUM_ENGINES + 1];
    let role = |l: &SliceLabel| {
        let gemm = info.gemm.as_ref()?;
        let tensor = l.reads.iter().find_map(|n| match n {
            Name::Hbm(t) => program.hbm.get(*t),
            _ => None,
        })?;
        gemm.role(&tensor.name)
    };
    for (at, slice) in report.slices.iter().enumerate() {
        let Some(inst) = program.streams.get(slice.engine.index()).and_then(|s| s.get(slice.index)) else {
            continue;
        };
        let kind = Kind::of(&inst.op, labels.get(at).and_then(role));
        let row = match (slice.engine, kind) {
            (Engine::Pe, Kind::LoadStationary) => 1,
            (Engine::Pe, _) => 0,
            (e, _) => e.index() + 1,
        };
        if let Some(r) = by_row.get_mut(row) {
            r.push((slice, kind));
        }
    }
    let span = report.total_ns;
    by_row
        .into_iter()
        .enumerate()
        .filter(|(_, r)| !r.is_empty())
        .map(|(i, slices)| {
            let (name, busy) = match i {
                0 => ("pe".to_string(), report.busy_fraction(Engine::Pe)),
                1 => ("pe.weights".to_string(), union_fraction(&slices, span)),
                _ => {
                    let e = Engine::from_index(i - 1).unwrap_or(Engine::Sp);
                    (e.name(), report.busy_fraction(e))
                }
            };
            Row { name, busy, slices }
        })
        .collect()
}

/// The fraction of `span` covered by the slices (sorted by start).
fn union_fraction(slices: &[(&Slice, Kind)], span: f64) -> f64 {
    let mut covered = 0.0;
    let mut until = f64::NEG_INFINITY;
    for (s, _) in slices {
        covered += (s.end_ns - s.start_ns.max(until)).max(0.0);
        until = until.max(s.end_ns);
    }
    if span > 0.0 {
        covered / span
    } else {
        0.0
    }
}

fn write_document(
    out: &mut String,
    program: &Program,
    report: &CycleReport,
    info: &KernelInfo,
    panels: bool,
) -> fmt::Result {
    let span_ns = if report.total_ns > 0.0 { report.total_ns } else { 1.0 };
    let px_per_ns = PLOT_W as f64 / span_ns;
    let buffers = info.buffers_of(program);
    let labels = labels(program, report, &buffers, info.gemm.as_ref());
    let rows = rows(program, report, &labels, info);
    let rows_end = ROWS_Y + rows.len() * ROW_H;
    let present: Vec<Kind> =
        Kind::ALL.into_iter().filter(|k| rows.iter().any(|r| r.slices.iter().any(|(_, kind)| kind == k))).collect();
    let legend_lines = (present.len() + 1).div_ceil(LEGEND_PER_LINE);
    let legend_end = rows_end + 16 + legend_lines * 18;

    let mut body = String::with_capacity(64 * 1024);
    write_axis(&mut body, span_ns, px_per_ns, rows_end)?;
    body.push_str("<g class=\"rows\">\n");
    for (i, row) in rows.iter().enumerate() {
        let y = ROWS_Y + i * ROW_H;
        write_row(&mut body, program, row, px_per_ns, y)?;
    }
    body.push_str("</g>\n");
    write_legend(&mut body, &present, rows_end + 16)?;
    let mut height = legend_end as f64 + 8.0;
    if panels {
        let c = counters(program, report, &buffers);
        let capacity = u64::from(program.target.info().statebuf_par_size_in_bytes);
        let axis = occupancy::Axis { plot_x: PLOT_X as f64, plot_w: PLOT_W, px_per_ns };
        height += write_occupancy(&mut body, &buffers, &c.sbuf, capacity, axis, height)?;
        if let Some(gemm) = &info.gemm {
            let finish = finish_times(report, &labels, program, gemm);
            height += write_grid(&mut body, &finish, gemm, height)?;
        }
    }

    writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}">"#
    )?;
    let heading = title(program, report, info);
    writeln!(out, "<title>{}</title>", Escaped(&heading))?;
    out.push_str("<style>\ntext{font:11px sans-serif;fill:#222}\n.head{font-size:13px;font-weight:bold}\n");
    out.push_str(".grid{stroke:#e0e0e0}\n.axis{stroke:#888}\n.bg{fill:#f6f6f6}\n.wait{fill:#cfcfcf}\n");
    for kind in Kind::ALL {
        writeln!(out, ".{}{{fill:{}}}", kind.class(), kind.colour())?;
    }
    out.push_str(OCCUPANCY_STYLE);
    out.push_str(GRID_STYLE);
    out.push_str("</style>\n");
    writeln!(out, r#"<text class="head" x="8" y="18">{}</text>"#, Escaped(&heading))?;
    out.push_str(&body);
    out.push_str("</svg>\n");
    Ok(())
}

/// The time axis: tick labels in microseconds above the rows, grid lines through them.
fn write_axis(out: &mut String, span_ns: f64, px_per_ns: f64, rows_end: usize) -> fmt::Result {
    let span_us = us(span_ns);
    let step = nice_step(span_us / TARGET_TICKS);
    // Enough decimals to tell neighbouring ticks apart.
    let decimals = if step >= 1.0 { 0 } else { (-step.log10()).ceil().clamp(0.0, 9.0) as usize };
    let axis_y = ROWS_Y - 4;
    out.push_str("<g class=\"axis-ticks\">\n");
    writeln!(out, r#"<line class="axis" x1="{PLOT_X}" y1="{axis_y}" x2="{}" y2="{axis_y}"/>"#, PLOT_X + PLOT_W)?;
    writeln!(out, r#"<text x="8" y="{}">time (us)</text>"#, axis_y - 4)?;
    let mut tick = 0.0f64;
    let mut i = 0u32;
    while tick <= span_us * (1.0 + 1e-9) {
        let x = PLOT_X as f64 + tick * 1e3 * px_per_ns;
        writeln!(out, r#"<line class="grid" x1="{x:.1}" y1="{axis_y}" x2="{x:.1}" y2="{rows_end}"/>"#)?;
        writeln!(out, r#"<text x="{x:.1}" y="{}" text-anchor="middle">{tick:.decimals$}</text>"#, axis_y - 4)?;
        i += 1;
        tick = f64::from(i) * step;
    }
    out.push_str("</g>\n");
    Ok(())
}

/// The smallest 1, 2 or 5 times a power of ten that is at least `raw` (positive).
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * magnitude).find(|&s| s >= raw).unwrap_or(10.0 * magnitude)
}

/// One engine's row: label, background, wait strips, then its instructions.
fn write_row(out: &mut String, program: &Program, row: &Row<'_>, px_per_ns: f64, y: usize) -> fmt::Result {
    let name = &row.name;
    let busy = 100.0 * row.busy;
    writeln!(out, r#"<g class="row" id="row-{}" transform="translate(0,{y})">"#, Escaped(name))?;
    writeln!(
        out,
        r#"<text x="8" y="{}">{} <tspan x="{}" text-anchor="end">{busy:.1}%</tspan></text>"#,
        OP_Y + OP_H - 4,
        Escaped(name),
        PLOT_X - 8
    )?;
    writeln!(out, r#"<rect class="bg" x="{PLOT_X}" y="{OP_Y}" width="{PLOT_W}" height="{OP_H}"/>"#)?;

    let mut placed: Vec<Placed<'_>> = row
        .slices
        .iter()
        .filter_map(|&(slice, kind)| {
            let inst = program.stream(slice.engine).get(slice.index)?;
            Some(Placed { slice, op: &inst.op, kind, x0: slice.start_ns * px_per_ns, x1: slice.end_ns * px_per_ns })
        })
        .collect();
    placed.sort_by(|a, b| a.x0.total_cmp(&b.x0));
    write_waits(out, &placed, px_per_ns, name)?;

    // Slices a pixel or more wide that do not overlap the previous such slice are drawn as
    // themselves; the rest go through the raster.
    let mut solo: Vec<Placed<'_>> = Vec::new();
    let mut rest: Vec<Placed<'_>> = Vec::new();
    let mut solo_end = f64::NEG_INFINITY;
    for p in placed {
        if p.x1 - p.x0 >= 1.0 && p.x0 >= solo_end {
            solo_end = p.x1;
            solo.push(p);
        } else {
            rest.push(p);
        }
    }
    let mut raster = vec![Column::default(); PLOT_W];
    for p in &rest {
        for c in columns(p.x0, p.x1) {
            if let Some(col) = raster.get_mut(c) {
                let left = (c as f64).max(p.x0);
                let right = (c as f64 + 1.0).min(p.x1);
                // A zero-length slice still counts, a little, for its column's kind.
                col.cover[p.kind().index()] += (right - left).max(1e-6);
                col.slices += 1;
            }
        }
    }
    // A slice alone in every column it touches keeps its own rectangle and tooltip.
    for p in rest {
        let cols = columns(p.x0, p.x1);
        if raster.get(cols.clone()).is_some_and(|cs| cs.iter().all(|c| c.slices == 1)) {
            for c in raster.get_mut(cols).into_iter().flatten() {
                c.taken = true;
            }
            solo.push(p);
        }
    }
    write_merged(out, &raster)?;
    for p in &solo {
        let x = PLOT_X as f64 + p.x0;
        let width = (p.x1 - p.x0).max(1.0);
        writeln!(
            out,
            r#"<rect class="{}" x="{x:.1}" y="{OP_Y}" width="{width:.1}" height="{OP_H}"><title>{}, {}, {:.3}-{:.3} us</title></rect>"#,
            p.kind().class(),
            Escaped(p.op.name()),
            Escaped(name),
            us(p.slice.start_ns),
            us(p.slice.end_ns)
        )?;
    }
    out.push_str("</g>\n");
    Ok(())
}

/// The raster's shared columns, adjacent columns of one dominant kind as one rectangle.
fn write_merged(out: &mut String, raster: &[Column]) -> fmt::Result {
    let mut run: Option<(usize, Kind)> = None;
    for (c, col) in raster.iter().enumerate() {
        let kind = (col.slices > 0 && !col.taken).then(|| col.dominant());
        match (run, kind) {
            (Some((_, open)), Some(k)) if open == k => {}
            _ => {
                if let Some((start, open)) = run {
                    write_merged_rect(out, start, c, open)?;
                }
                run = kind.map(|k| (c, k));
            }
        }
    }
    if let Some((start, open)) = run {
        write_merged_rect(out, start, raster.len(), open)?;
    }
    Ok(())
}

fn write_merged_rect(out: &mut String, start: usize, end: usize, kind: Kind) -> fmt::Result {
    writeln!(
        out,
        r#"<rect class="{}" x="{}" y="{OP_Y}" width="{}" height="{OP_H}"/>"#,
        kind.class(),
        PLOT_X + start,
        end - start
    )
}

/// Semaphore waits as a thin strip; waits less than a pixel apart share one, and only a
/// strip of a single wait has a tooltip.
fn write_waits(out: &mut String, placed: &[Placed<'_>], px_per_ns: f64, engine: &str) -> fmt::Result {
    let mut waits: Vec<(f64, f64, &Placed<'_>)> = placed
        .iter()
        .filter(|p| p.slice.wait_ns > 0.0)
        .map(|p| ((p.slice.start_ns - p.slice.wait_ns) * px_per_ns, p.x0, p))
        .collect();
    waits.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut strip: Option<(f64, f64, &Placed<'_>, usize)> = None;
    for (w0, w1, p) in waits {
        strip = match strip {
            Some((s0, s1, first, n)) if w0 <= s1 + 1.0 => Some((s0, s1.max(w1), first, n + 1)),
            Some(done) => {
                write_wait(out, done, engine)?;
                Some((w0, w1, p, 1))
            }
            None => Some((w0, w1, p, 1)),
        };
    }
    match strip {
        Some(done) => write_wait(out, done, engine),
        None => Ok(()),
    }
}

fn write_wait(out: &mut String, (x0, x1, first, n): (f64, f64, &Placed<'_>, usize), engine: &str) -> fmt::Result {
    let x = PLOT_X as f64 + x0;
    let width = (x1 - x0).max(1.0);
    write!(out, r#"<rect class="wait" x="{x:.1}" y="{WAIT_Y}" width="{width:.1}" height="{WAIT_H}""#)?;
    if n == 1 {
        let s = first.slice;
        writeln!(
            out,
            "><title>wait before {}, {}, {:.3}-{:.3} us</title></rect>",
            Escaped(first.op.name()),
            Escaped(engine),
            us(s.start_ns - s.wait_ns),
            us(s.start_ns)
        )
    } else {
        writeln!(out, "/>")
    }
}

/// A swatch and name per op kind present, and one for waits.
fn write_legend(out: &mut String, present: &[Kind], y: usize) -> fmt::Result {
    out.push_str("<g class=\"legend\">\n");
    let entries = present.iter().map(|k| (k.class(), k.legend())).chain([("wait", "semaphore wait")]);
    for (i, (class, label)) in entries.enumerate() {
        let x = PLOT_X + (i % LEGEND_PER_LINE) * LEGEND_PITCH;
        let y = y + (i / LEGEND_PER_LINE) * 18;
        writeln!(out, r#"<rect class="swatch {class}" x="{x}" y="{y}" width="14" height="12"/>"#)?;
        writeln!(out, r#"<text x="{}" y="{}">{}</text>"#, x + 20, y + 10, Escaped(label))?;
    }
    out.push_str("</g>\n");
    Ok(())
}

#[cfg(test)]
#[path = "svg_tests.rs"]
mod tests;
