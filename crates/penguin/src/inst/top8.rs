//! The eight-value searches of VectorE (`nki.isa.max8`, `nc_find_index8`,
//! `nc_match_replace8`), one kind with a mode: each partition's elements are read as fp32 in
//! the order of the source's free dims (row-major), and
//! - `max8`: `dst[p, 0..8]` = the 8 largest, in descending order;
//! - `find_index8`: `dst[p, i]` = the position of the first element equal to `vals[p, i]` (a
//!   repeated value takes the next occurrence, in the order of `i`), all ones when there is none;
//! - `match_replace8`: `dst` = the source with those elements replaced by `imm` (the values
//!   taken from `i = 7` down to `0`, so a repeated value's first occurrence pairs with its
//!   highest `i`), and `idx`, when given, the positions as `find_index8` writes them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::tile::InstTile;

/// Values a `top8` instruction finds or takes per partition.
pub const TOP8_VALUES: u64 = 8;

/// The fewest and the most elements per partition a `top8` source may have (NKI ISA: "between
/// 8 and 16,384 inclusive").
pub const TOP8_SRC_ELEMS: (u64, u64) = (8, 16_384);

/// What a `top8` instruction computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Top8Mode {
    /// The 8 largest values, descending (`nki.isa.max8`).
    Max8,
    /// The positions of 8 given values (`nki.isa.nc_find_index8`).
    FindIndex8,
    /// The source with 8 given values replaced (`nki.isa.nc_match_replace8`).
    MatchReplace8,
}

impl Top8Mode {
    /// Every mode.
    pub const ALL: [Top8Mode; 3] = [Top8Mode::Max8, Top8Mode::FindIndex8, Top8Mode::MatchReplace8];

    /// The text name (the `nki.isa` name without its `nc_` prefix).
    pub fn name(self) -> &'static str {
        match self {
            Top8Mode::Max8 => "max8",
            Top8Mode::FindIndex8 => "find_index8",
            Top8Mode::MatchReplace8 => "match_replace8",
        }
    }
}

impl fmt::Display for Top8Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for an unknown `top8` mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown top8 mode `{0}` (expected max8, find_index8 or match_replace8)")]
pub struct UnknownTop8Mode(pub String);

impl FromStr for Top8Mode {
    type Err = UnknownTop8Mode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| UnknownTop8Mode(s.to_string()))
    }
}

/// A `top8` instruction on VectorE (see the module docs for each mode).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Top8Data {
    /// What it computes.
    pub mode: Top8Mode,
    /// The replacement value of `match_replace8` (`imm`; 0 for the other modes).
    pub value: f64,
    /// Destination: `[P, 8]` values (max8) or indices (find_index8), or the source's shape
    /// (match_replace8).
    pub dst: InstTile,
    /// The elements searched.
    pub src: InstTile,
    /// The `[P, 8]` values to find (find_index8, match_replace8).
    pub vals: Option<InstTile>,
    /// The `[P, 8]` positions of match_replace8's values, when asked for.
    pub idx: Option<InstTile>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_print_and_parse_back_and_unknown_ones_are_named() {
        for m in Top8Mode::ALL {
            assert_eq!(m.to_string().parse::<Top8Mode>(), Ok(m));
        }
        assert_eq!(
            "max4".parse::<Top8Mode>().unwrap_err().to_string(),
            "unknown top8 mode `max4` (expected max8, find_index8 or match_replace8)"
        );
    }
}
