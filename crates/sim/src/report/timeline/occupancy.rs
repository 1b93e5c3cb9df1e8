//! The SBUF occupancy panel: bytes per partition in use over time, stacked per buffer, under
//! the partition's capacity.
//!
//! Each pixel column shows, per buffer, the most bytes it held at any time in that column,
//! so a short fill stays visible; buffers are disjoint, so the stack never passes the
//! capacity line. Runs of equal height share one path segment, keeping the size bounded by
//! buffers x width.

use std::fmt::{self, Write};

use super::counters::Fill;
use super::SbufBuffer;
use crate::report::svg::Escaped;

/// Height of the plot area.
const PANEL_H: f64 = 160.0;
/// Buffer colours, cycled.
const PALETTE: [&str; 10] =
    ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

/// Geometry of the time axis shared with the timeline rows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Axis {
    pub plot_x: f64,
    pub plot_w: usize,
    pub px_per_ns: f64,
}

/// Per buffer, the most bytes in use in each pixel column.
pub(crate) fn columns(fills: &[Vec<Fill>], axis: Axis) -> Vec<Vec<u64>> {
    fills
        .iter()
        .map(|buffer| {
            let mut col = vec![0u64; axis.plot_w];
            for f in buffer {
                if f.bytes == 0 {
                    continue;
                }
                let last = axis.plot_w.saturating_sub(1);
                let c0 = ((f.start * axis.px_per_ns).floor().max(0.0) as usize).min(last);
                let c1 = ((f.end * axis.px_per_ns).ceil() as usize).saturating_sub(1).clamp(c0, last);
                for v in col.iter_mut().take(c1 + 1).skip(c0) {
                    *v = (*v).max(f.bytes);
                }
            }
            col
        })
        .collect()
}

/// Draws the panel at `y`; returns its height.
pub(crate) fn write_occupancy(
    out: &mut String,
    buffers: &[SbufBuffer],
    fills: &[Vec<Fill>],
    capacity: u64,
    axis: Axis,
    y: f64,
) -> Result<f64, fmt::Error> {
    let cols = columns(fills, axis);
    let top = y + 30.0;
    let capacity = capacity.max(1) as f64;
    let peak = (0..axis.plot_w).map(|c| cols.iter().map(|b| b.get(c).copied().unwrap_or(0)).sum::<u64>()).max();
    // The scale: the capacity, or a round figure above the peak when that is far below it.
    let cap = match peak {
        Some(p) if (p as f64) < capacity / 2.0 => (nice_kib(p as f64 * 1.25) * 1024.0).min(capacity),
        _ => capacity,
    };
    let y_of = |bytes: f64| top + PANEL_H - PANEL_H * (bytes / cap).min(1.0);
    writeln!(out, r#"<g class="sbuf-occupancy">"#)?;
    writeln!(
        out,
        r#"<text class="head" x="8" y="{:.1}">SBUF in use per partition, by buffer (peak {:.1} KiB of {:.1} KiB)</text>"#,
        y + 16.0,
        peak.unwrap_or(0) as f64 / 1024.0,
        capacity / 1024.0
    )?;
    writeln!(
        out,
        r#"<rect class="bg" x="{:.1}" y="{top:.1}" width="{}" height="{PANEL_H:.1}"/>"#,
        axis.plot_x, axis.plot_w
    )?;
    for q in 0..=4 {
        let bytes = cap * f64::from(q) / 4.0;
        let yy = y_of(bytes);
        writeln!(
            out,
            r#"<line class="grid" x1="{:.1}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}"/>"#,
            axis.plot_x,
            axis.plot_x + axis.plot_w as f64
        )?;
        writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{:.1} KiB</text>"#,
            axis.plot_x - 8.0,
            yy + 4.0,
            bytes / 1024.0
        )?;
    }
    let mut below = vec![0u64; axis.plot_w];
    for (i, (buffer, col)) in buffers.iter().zip(&cols).enumerate() {
        if col.iter().all(|&v| v == 0) {
            continue;
        }
        let above: Vec<u64> = below.iter().zip(col).map(|(b, v)| b + v).collect();
        let colour = PALETTE[i % PALETTE.len()];
        write!(out, r#"<path class="buffer" fill="{colour}" d=""#)?;
        write_edge(out, &above, axis, &y_of, true)?;
        write_edge(out, &below, axis, &y_of, false)?;
        writeln!(out, r#"Z"><title>{}</title></path>"#, Escaped(&buffer.name))?;
        below = above;
    }
    if cap >= capacity {
        writeln!(
            out,
            r#"<line class="capacity" x1="{:.1}" y1="{top:.1}" x2="{:.1}" y2="{top:.1}"/>"#,
            axis.plot_x,
            axis.plot_x + axis.plot_w as f64
        )?;
    }
    // Legend of the buffers that held anything.
    let mut x = axis.plot_x;
    let mut ly = top + PANEL_H + 14.0;
    for (i, (buffer, col)) in buffers.iter().zip(&cols).enumerate() {
        if col.iter().all(|&v| v == 0) {
            continue;
        }
        if x > axis.plot_x + axis.plot_w as f64 - 120.0 {
            x = axis.plot_x;
            ly += 18.0;
        }
        writeln!(
            out,
            r#"<rect x="{x:.1}" y="{ly:.1}" width="14" height="12" fill="{}"/>"#,
            PALETTE[i % PALETTE.len()]
        )?;
        writeln!(out, r#"<text x="{:.1}" y="{:.1}">{}</text>"#, x + 20.0, ly + 10.0, Escaped(&buffer.name))?;
        x += 120.0;
    }
    writeln!(out, "</g>")?;
    Ok(ly + 24.0 - y)
}

/// The smallest 1, 2 or 5 times a power of ten KiB at least `bytes`.
fn nice_kib(bytes: f64) -> f64 {
    let kib = (bytes / 1024.0).max(1.0);
    let magnitude = 10f64.powf(kib.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * magnitude).find(|&s| s >= kib).unwrap_or(10.0 * magnitude)
}

/// One edge of a stacked band as path commands: left to right for the top, right to left
/// for the bottom, as steps (a corner only where the height changes).
fn write_edge(out: &mut String, heights: &[u64], axis: Axis, y_of: &dyn Fn(f64) -> f64, top: bool) -> fmt::Result {
    let n = heights.len();
    let x_of = |c: usize| axis.plot_x + c as f64;
    let order: Box<dyn Iterator<Item = usize>> = if top { Box::new(0..n) } else { Box::new((0..n).rev()) };
    let mut prev: Option<u64> = None;
    for c in order {
        let h = heights[c];
        // The edge of column c nearest the start of the walk.
        let (near, far) = if top { (x_of(c), x_of(c + 1)) } else { (x_of(c + 1), x_of(c)) };
        let cmd = if prev.is_none() && top { "M" } else { "L" };
        if prev != Some(h) {
            write!(out, "{cmd}{near:.1},{:.1} ", y_of(h as f64))?;
            prev = Some(h);
        }
        let next = if top { c + 1 < n } else { c > 0 };
        let next_h = if top { heights.get(c + 1) } else { c.checked_sub(1).and_then(|p| heights.get(p)) };
        if !next || next_h != Some(&h) {
            write!(out, "L{far:.1},{:.1} ", y_of(h as f64))?;
        }
    }
    Ok(())
}

/// The CSS the panel uses.
pub(crate) const OCCUPANCY_STYLE: &str =
    ".buffer{stroke:none;opacity:0.9}\n.capacity{stroke:#d62728;stroke-dasharray:4 3}\n";
