//! The cross-partition shuffle of VectorE (`nki.isa.nc_stream_shuffle`): within each quadrant
//! of 32 partitions, destination partition `i` copies the source partition its mask names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::tile::InstTile;

/// Partitions in a quadrant: a shuffle moves data within one.
pub const SHUFFLE_QUADRANT: usize = 32;

/// A mask entry that leaves its destination partition as it was.
pub const SHUFFLE_KEEP: u8 = 255;

/// For each of a quadrant's 32 destination partitions, the source partition (of the same
/// quadrant) it copies, or [`SHUFFLE_KEEP`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ShuffleMask(pub [u8; SHUFFLE_QUADRANT]);

impl ShuffleMask {
    /// The source partition (within the quadrant) of destination partition `i`, `None` for
    /// one left as it was.
    pub fn source(&self, i: usize) -> Option<usize> {
        let m = self.0[i % SHUFFLE_QUADRANT];
        (m != SHUFFLE_KEEP).then_some(usize::from(m))
    }
}

impl fmt::Display for ShuffleMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, m) in self.0.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{m}")?;
        }
        f.write_str("]")
    }
}

/// The error for a malformed shuffle mask.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "shuffle mask `{0}` is not a list of 32 source partitions 0..31 (or 255, to keep a partition) such as `[0,0,...]`"
)]
pub struct BadShuffleMask(pub String);

impl FromStr for ShuffleMask {
    type Err = BadShuffleMask;

    /// `[m0,m1,...,m31]` with no spaces (one attribute value).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadShuffleMask(s.to_string());
        let inner = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')).ok_or_else(bad)?;
        let mut mask = [0u8; SHUFFLE_QUADRANT];
        let mut n = 0;
        for part in inner.split(',') {
            let m: u8 = part.trim().parse().map_err(|_| bad())?;
            if usize::from(m) >= SHUFFLE_QUADRANT && m != SHUFFLE_KEEP {
                return Err(bad());
            }
            *mask.get_mut(n).ok_or_else(bad)? = m;
            n += 1;
        }
        if n != SHUFFLE_QUADRANT {
            return Err(bad());
        }
        Ok(ShuffleMask(mask))
    }
}

/// `nki.isa.nc_stream_shuffle` on VectorE: in each quadrant `q` of the destination's
/// partitions, destination partition `q * 32 + i` takes source partition `q * 32 + mask[i]`
/// (counted from each tile's first partition), or keeps its values where `mask[i]` is
/// [`SHUFFLE_KEEP`]. Source and destination share a dtype and a number of elements per
/// partition; the copy is bit for bit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamShuffleData {
    /// The source partition of each destination partition of a quadrant.
    pub mask: ShuffleMask,
    /// Destination, read and written (kept partitions keep their values).
    pub dst: InstTile,
    /// Source.
    pub src: InstTile,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_print_and_parse_back_and_bad_ones_are_named() {
        let mut m = [0u8; 32];
        m[3] = 31;
        m[7] = SHUFFLE_KEEP;
        let mask = ShuffleMask(m);
        assert_eq!(mask.to_string().parse::<ShuffleMask>(), Ok(mask));
        assert_eq!((mask.source(3), mask.source(7), mask.source(39)), (Some(31), None, None));
        for bad in ["[0,1]", "0,0", "[32,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]"] {
            assert!(bad.parse::<ShuffleMask>().is_err(), "{bad}");
        }
        let long = format!("[{}]", vec!["0"; 33].join(","));
        assert!(long.parse::<ShuffleMask>().is_err());
    }
}
