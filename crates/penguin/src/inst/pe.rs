//! The attributes every PE instruction shares: accumulation flags, perf mode, position and
//! size on the PE array, and their text form (used by Penguin and BIR alike).

use std::fmt;
use std::str::FromStr;

use bitflags::bitflags;
use serde::{Deserialize, Serialize};

use super::attr::{AttrError, AttrValue};

bitflags! {
    /// PSUM accumulation state of a matmul (the seed's `EngineAccumulationType`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub struct EngineAccumulationType: u8 {
        /// Zero the accumulator, then write: opens a group.
        const START = 0b001;
        /// Add into the accumulator.
        const ACCU = 0b010;
        /// Close the group: the result becomes readable.
        const STOP = 0b100;
    }
}

impl EngineAccumulationType {
    /// The flags of K sub-tile `index` out of `count` in one group.
    pub fn for_position(index: usize, count: usize) -> Self {
        let mut flags = if index == 0 { Self::START } else { Self::ACCU };
        if index + 1 == count {
            flags |= Self::STOP;
        }
        flags
    }
}

impl fmt::Display for EngineAccumulationType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = [(Self::START, "start"), (Self::ACCU, "accu"), (Self::STOP, "stop")]
            .into_iter()
            .filter(|(flag, _)| self.contains(*flag))
            .map(|(_, name)| name)
            .collect();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join("|"))
        }
    }
}

/// The text-format attributes every PE instruction shares (Penguin and BIR): `perf` (when
/// given), `pos`, `size` and `acc` (when given).
pub fn pe_attributes(
    perf: Option<PerfMode>,
    pos: TilePosition,
    size: TileSize,
    acc: Option<EngineAccumulationType>,
) -> Vec<(&'static str, String)> {
    let printed = [("perf", perf.and_then(|p| p.print())), ("pos", pos.print()), ("size", size.print())];
    printed.into_iter().chain([("acc", acc.print())]).filter_map(|(k, v)| Some((k, v?))).collect()
}

/// The PE attributes parsed back from `attr` (a lookup of `key=value`s), with the defaults
/// `perf=none pos=0,0 size=128,128` and no `acc`. The error names the attribute it is about.
pub fn parse_pe_attributes<'a>(
    attr: impl Fn(&str) -> Option<&'a str>,
) -> Result<(PerfMode, TilePosition, TileSize, Option<EngineAccumulationType>), AttrError> {
    let pair = |key: &str, default: (u32, u32)| -> Result<(u32, u32), AttrError> {
        let Some(v) = attr(key) else { return Ok(default) };
        let bad = || AttrError::at(key, format!("`{key}={v}` must be two numbers `a,b`"));
        let (a, b) = v.split_once(',').ok_or_else(bad)?;
        Ok((a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?))
    };
    let (pos, size) = (pair("pos", (0, 0))?, pair("size", (128, 128))?);
    let perf = attr("perf").map_or(Ok(PerfMode::None), |v| v.parse().map_err(|e| AttrError::at("perf", e)))?;
    let acc = attr("acc").map(str::parse::<EngineAccumulationType>).transpose().map_err(|e| AttrError::at("acc", e))?;
    Ok((perf, TilePosition { row: pos.0, col: pos.1 }, TileSize { rows: size.0, cols: size.1 }, acc))
}

impl FromStr for EngineAccumulationType {
    type Err = String;

    /// `start|accu|stop` in any combination, or `none`.
    fn from_str(v: &str) -> Result<Self, Self::Err> {
        let mut flags = EngineAccumulationType::empty();
        for part in v.split('|') {
            flags |= match part {
                "start" => EngineAccumulationType::START,
                "accu" => EngineAccumulationType::ACCU,
                "stop" => EngineAccumulationType::STOP,
                "none" => EngineAccumulationType::empty(),
                other => return Err(format!("unknown accumulation flag `{other}` (expected start, accu, stop)")),
            };
        }
        Ok(flags)
    }
}

/// PE performance mode of a matmul.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerfMode {
    /// One contraction row per partition.
    #[default]
    None,
    /// Two contraction rows per partition (k and k+128): K up to 256 per pass; trn2/trn3.
    DoubleRow,
    /// A later generation's double row; exists as a value and is refused.
    DoubleRowGen3,
}

impl PerfMode {
    /// The text name.
    pub fn name(self) -> &'static str {
        match self {
            PerfMode::None => "none",
            PerfMode::DoubleRow => "double_row",
            PerfMode::DoubleRowGen3 => "double_row_gen3",
        }
    }
}

impl fmt::Display for PerfMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for an unknown perf mode name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown perf mode `{0}` (expected none, double_row or double_row_gen3)")]
pub struct UnknownPerfMode(pub String);

impl FromStr for PerfMode {
    type Err = UnknownPerfMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [PerfMode::None, PerfMode::DoubleRow, PerfMode::DoubleRowGen3]
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownPerfMode(s.to_string()))
    }
}

/// Where a matmul sits on the PE array: `(row, column)` of its first PE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TilePosition {
    /// First PE row (a multiple of the tile's row count).
    pub row: u32,
    /// First PE column (a multiple of the tile's column count).
    pub col: u32,
}

/// How much of the PE array a matmul uses: `(rows, columns)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TileSize {
    /// PE rows (128, 64 or 32).
    pub rows: u32,
    /// PE columns (128, 64 or 32).
    pub cols: u32,
}

impl Default for TileSize {
    fn default() -> Self {
        TileSize { rows: 128, cols: 128 }
    }
}
