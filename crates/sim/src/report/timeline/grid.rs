//! The tile-grid picture: C's `M x N` output tiles coloured by the time each was stored,
//! with the schedule's block boundaries, so its order is visible at a glance.
//!
//! A tile's finish time is the end of the last store that wrote any of it (from the C
//! coordinates of the stores, see [`labels`](super::labels)). Colours run along one ramp
//! from dark (first) to light (last), so a lighter cell always finished later. Large grids
//! draw one cell per square of tiles (the latest finish among them), keeping the picture
//! under [`MAX_CELLS`] rectangles.

use std::fmt::{self, Write};

use bir::Program;

use super::labels::SliceLabel;
use super::{labels::Name, Axis, GemmLayout};
use crate::cycle::CycleReport;
use crate::report::svg::Escaped;
use crate::report::trace::us;

/// Most cells drawn; larger grids merge squares of tiles into one cell.
pub(crate) const MAX_CELLS: u64 = 16_384;
/// Most cells that get a tooltip.
const MAX_TOOLTIPS: u64 = 4096;
/// Width and height the grid may take, in pixels.
const GRID_W: f64 = 1100.0;
const GRID_H: f64 = 520.0;
/// Left margin (the M labels).
const GRID_X: f64 = 140.0;

/// The colour ramp, dark to light (perceptually ordered).
const RAMP: [(f64, f64, f64); 5] =
    [(68.0, 1.0, 84.0), (59.0, 82.0, 139.0), (33.0, 145.0, 140.0), (94.0, 201.0, 98.0), (253.0, 231.0, 37.0)];

/// The ramp's colour at `f` in `[0, 1]`, as `#rrggbb`.
pub(crate) fn ramp(f: f64) -> String {
    let f = if f.is_finite() { f.clamp(0.0, 1.0) } else { 0.0 };
    let x = f * (RAMP.len() - 1) as f64;
    let i = (x.floor() as usize).min(RAMP.len() - 2);
    let t = x - i as f64;
    let (a, b) = (RAMP[i], RAMP[i + 1]);
    let c = |p: f64, q: f64| (p + (q - p) * t).round().clamp(0.0, 255.0) as u8;
    format!("#{:02x}{:02x}{:02x}", c(a.0, b.0), c(a.1, b.1), c(a.2, b.2))
}

/// When each output tile was last stored, row-major over the `mt x nt` tiles.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Finish {
    pub mt: u64,
    pub nt: u64,
    pub at: Vec<Option<f64>>,
}

/// Finish times from the stores' C coordinates.
pub(crate) fn finish_times(
    report: &CycleReport,
    labels: &[SliceLabel],
    program: &Program,
    gemm: &GemmLayout,
) -> Finish {
    let (mt, nt) = gemm.tiles();
    let cells = mt.saturating_mul(nt).min(1 << 26);
    let mut at = vec![None; cells as usize];
    let is_c = |i: usize| program.hbm.get(i).is_some_and(|t| gemm.role(&t.name) == Some(Axis::K));
    for (slice, label) in report.slices.iter().zip(labels) {
        let Some(Name::Hbm(t)) = label.writes else { continue };
        let (Some(m), Some(n)) = (label.tile.m, label.tile.n) else { continue };
        if !is_c(t) {
            continue;
        }
        for i in u64::from(m.lo)..=u64::from(m.hi).min(mt.saturating_sub(1)) {
            for j in u64::from(n.lo)..=u64::from(n.hi).min(nt.saturating_sub(1)) {
                if let Some(slot) = at.get_mut((i * nt + j) as usize) {
                    *slot = Some(slot.map_or(slice.end_ns, |v: f64| v.max(slice.end_ns)));
                }
            }
        }
    }
    Finish { mt, nt, at }
}

/// Draws the grid panel at `y`; returns its height.
pub(crate) fn write_grid(out: &mut String, finish: &Finish, gemm: &GemmLayout, y: f64) -> Result<f64, fmt::Error> {
    let (mt, nt) = (finish.mt.max(1), finish.nt.max(1));
    // Tiles per cell side.
    let mut group = 1u64;
    while mt.div_ceil(group) * nt.div_ceil(group) > MAX_CELLS {
        group += 1;
    }
    let (rows, cols) = (mt.div_ceil(group), nt.div_ceil(group));
    // Cells keep the tiles' aspect (a 128x512 tile is four times as wide as tall), up to 4:1.
    let aspect = (gemm.tile_n as f64 / gemm.tile_m.max(1) as f64).clamp(1.0, 4.0);
    let cell = (GRID_W / (cols as f64 * aspect)).min(GRID_H / rows as f64).clamp(1.0, 28.0);
    let cell_w = cell * aspect;
    let last = finish.at.iter().flatten().fold(0.0f64, |a, &b| a.max(b));
    let top = y + 34.0;
    writeln!(out, r#"<g class="tile-grid" transform="translate(0,0)">"#)?;
    let per = if group == 1 { String::new() } else { format!(", one cell per {group}x{group} tiles") };
    writeln!(
        out,
        r#"<text class="head" x="8" y="{:.1}">Output tiles of C ({mt} x {nt} tiles of {}x{}{per}), coloured by the time each was stored</text>"#,
        y + 16.0,
        gemm.tile_m,
        gemm.tile_n
    )?;
    writeln!(out, r#"<text x="8" y="{:.1}">m tile</text>"#, top + 10.0)?;
    writeln!(out, r#"<text x="8" y="{:.1}">n tile</text>"#, top - 4.0)?;
    for r in 0..rows {
        for c in 0..cols {
            let mut when: Option<f64> = None;
            for i in r * group..((r + 1) * group).min(mt) {
                for j in c * group..((c + 1) * group).min(nt) {
                    if let Some(t) = finish.at.get((i * nt + j) as usize).copied().flatten() {
                        when = Some(when.map_or(t, |w| w.max(t)));
                    }
                }
            }
            let (x, yy) = (GRID_X + c as f64 * cell_w, top + r as f64 * cell);
            let fill = match when {
                Some(t) => ramp(if last > 0.0 { t / last } else { 0.0 }),
                None => "#dddddd".to_string(),
            };
            write!(
                out,
                r#"<rect class="tile" x="{x:.1}" y="{yy:.1}" width="{cell_w:.1}" height="{cell:.1}" fill="{fill}" data-m="{}" data-n="{}""#,
                r * group,
                c * group
            )?;
            match when {
                Some(t) => write!(out, r#" data-finish-us="{:.3}""#, us(t))?,
                None => write!(out, r#" data-finish-us="none""#)?,
            }
            if rows * cols <= MAX_TOOLTIPS {
                let text = match when {
                    Some(t) => format!("tile (m {}, n {}) stored by {:.3} us", r * group, c * group, us(t)),
                    None => format!("tile (m {}, n {}) never stored", r * group, c * group),
                };
                writeln!(out, "><title>{}</title></rect>", Escaped(&text))?;
            } else {
                writeln!(out, "/>")?;
            }
        }
    }
    let (w, h) = (cols as f64 * cell_w, rows as f64 * cell);
    // Tile indices along both sides, about eight of each.
    let every = |n: u64| (n.div_ceil(8)).max(1);
    for r in (0..rows).step_by(every(rows) as usize) {
        let yy = top + (r as f64 + 0.5) * cell + 4.0;
        writeln!(out, r#"<text x="{:.1}" y="{yy:.1}" text-anchor="end">{}</text>"#, GRID_X - 6.0, r * group)?;
    }
    for c in (0..cols).step_by(every(cols) as usize) {
        let x = GRID_X + (c as f64 + 0.5) * cell_w;
        writeln!(out, r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, top - 4.0, c * group)?;
    }
    writeln!(out, r#"<rect class="grid-frame" x="{GRID_X:.1}" y="{top:.1}" width="{w:.1}" height="{h:.1}"/>"#)?;
    if let Some((bm, bn)) = gemm.block {
        let step_r = (bm / gemm.tile_m.max(1)).max(1) as f64 / group as f64;
        let step_c = (bn / gemm.tile_n.max(1)).max(1) as f64 / group as f64;
        let mut r = step_r;
        while r < rows as f64 - 1e-9 {
            let yy = top + r * cell;
            writeln!(
                out,
                r#"<line class="block" x1="{GRID_X:.1}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}"/>"#,
                GRID_X + w
            )?;
            r += step_r;
        }
        let mut c = step_c;
        while c < cols as f64 - 1e-9 {
            let x = GRID_X + c * cell_w;
            writeln!(out, r#"<line class="block" x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{:.1}"/>"#, top + h)?;
            c += step_c;
        }
    }
    // The colour scale.
    let ly = top + h + 16.0;
    writeln!(out, r#"<text x="8" y="{:.1}">stored at (us)</text>"#, ly + 10.0)?;
    let steps = 40;
    let lw = 400.0 / f64::from(steps);
    for s in 0..steps {
        let f = f64::from(s) / f64::from(steps - 1);
        writeln!(
            out,
            r#"<rect x="{:.1}" y="{ly:.1}" width="{:.1}" height="12" fill="{}"/>"#,
            GRID_X + f64::from(s) * lw,
            lw + 0.5,
            ramp(f)
        )?;
    }
    writeln!(out, r#"<text x="{GRID_X:.1}" y="{:.1}">0.000</text>"#, ly + 26.0)?;
    writeln!(out, r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{:.3}</text>"#, GRID_X + 400.0, ly + 26.0, us(last))?;
    if gemm.block.is_some() {
        writeln!(
            out,
            r#"<line class="block" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/>"#,
            GRID_X + 440.0,
            ly + 6.0,
            GRID_X + 470.0,
            ly + 6.0
        )?;
        writeln!(out, r#"<text x="{:.1}" y="{:.1}">block boundary</text>"#, GRID_X + 476.0, ly + 10.0)?;
    }
    writeln!(out, "</g>")?;
    Ok(top + h + 52.0 - y)
}

/// The width the grid panel takes.
pub(crate) fn grid_width(finish: &Finish, gemm: &GemmLayout) -> f64 {
    let (mt, nt) = (finish.mt.max(1), finish.nt.max(1));
    let mut group = 1u64;
    while mt.div_ceil(group) * nt.div_ceil(group) > MAX_CELLS {
        group += 1;
    }
    let (rows, cols) = (mt.div_ceil(group), nt.div_ceil(group));
    let aspect = (gemm.tile_n as f64 / gemm.tile_m.max(1) as f64).clamp(1.0, 4.0);
    let cell = (GRID_W / (cols as f64 * aspect)).min(GRID_H / rows as f64).clamp(1.0, 28.0);
    GRID_X + (cols as f64 * cell * aspect).max(700.0) + 40.0
}

/// The CSS the grid panel uses.
pub(crate) const GRID_STYLE: &str = ".tile{stroke:#ffffff;stroke-width:0.3}\n.grid-frame{fill:none;stroke:#444}\n.block{stroke:#d62728;stroke-width:2}\n";
