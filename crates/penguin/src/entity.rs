//! Typed entity ids and memories.

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! entity {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub struct $name(pub u32);

        impl $name {
            /// The dense index of this id.
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The id with a dense index, if it fits.
            pub fn from_index(index: usize) -> Option<Self> {
                u32::try_from(index).ok().map(Self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

entity!(
    /// A tensor of a function; prints as `t3`.
    TensorId,
    "t"
);
entity!(
    /// An instruction of a function; prints as `i3`.
    InstId,
    "i"
);

/// Where a tensor lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Memory {
    /// Device memory: byte-addressed, row-major tensors.
    Hbm,
    /// The state buffer: 128 partitions x capacity bytes.
    Sbuf,
    /// The matmul accumulator: 128 partitions x 8 banks x 2 KiB, always fp32 for results.
    Psum,
}

impl Memory {
    /// The text name.
    pub fn name(self) -> &'static str {
        match self {
            Memory::Hbm => "hbm",
            Memory::Sbuf => "sbuf",
            Memory::Psum => "psum",
        }
    }

    /// Whether the memory is partitioned (on chip).
    pub fn is_on_chip(self) -> bool {
        match self {
            Memory::Hbm => false,
            Memory::Sbuf | Memory::Psum => true,
        }
    }
}

impl fmt::Display for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
