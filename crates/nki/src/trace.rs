//! The trace of an NKI kernel (format `ntile-nki-trace`, version 1): the serde types the
//! Python tracer writes and [`Trace::from_json`] reads (documented in `docs/nki-trace.md`).
//!
//! A trace is one JSON object: the kernel's name, API generation and target, the table of
//! source files, the tensors (an id is the index in [`Trace::tensors`]), the records in
//! program order (loop markers included) and the returned tensors. Every record carries the
//! kernel's own source location ([`Loc`]).
//!
//! Reading is strict: unknown fields are errors (the two halves of the format are written
//! at the same time, so a misspelled field must not silently become "absent"), and every
//! error names where it is, as a path such as `ops[12].dst.ap[1]`, with the record kind when
//! a record is malformed as a whole.

use std::fmt;

use penguin::{DType, Target};
use serde::{Deserialize, Serialize};

use crate::error::NkiError;

mod cores;
mod raw;
mod wire;

pub use raw::Record;

/// The `format` every trace names.
pub const TRACE_FORMAT: &str = "ntile-nki-trace";
/// The version of the format this crate reads.
pub const TRACE_VERSION: u32 = 1;

/// A traced kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    /// Always [`TRACE_FORMAT`].
    pub format: String,
    /// The format version ([`TRACE_VERSION`]).
    pub version: u32,
    /// The kernel's Python function name (`finalize_kernel` checks it).
    pub kernel: String,
    /// Which NKI API generation the kernel was written against.
    pub api: Api,
    /// The target the kernel was traced for.
    pub target: Target,
    /// The source files that locations index.
    pub files: Vec<String>,
    /// Every tensor; a tensor id is its index here.
    pub tensors: Vec<TensorRecord>,
    /// The records in program order.
    pub ops: Vec<Record>,
    /// The kernel's results, in order: the returned tensors (HBM tensors it created), then
    /// the kernel arguments (`input` tensors) it wrote in place.
    pub outputs: Vec<u32>,
    /// The values of `input` tensors the kernel made itself (`nl.shared_constant`,
    /// `nl.shared_identity_matrix`); absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constants: Vec<Constant>,
    /// Where each physical core's records begin in `ops`, for a kernel launched on several
    /// cores (`nl.nc(2)` in its grid, or `kernel[2]` with LNC=2): core `k` runs
    /// `ops[cores[k]..cores[k + 1]]`. Absent (empty) for a one-core kernel.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cores: Vec<usize>,
}

/// The values of an `input` tensor the kernel made (not a kernel argument).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Constant {
    /// The tensor id (an `input` tensor).
    pub t: u32,
    /// Its values, row-major.
    pub values: Vec<Imm>,
}

impl Trace {
    /// Read a trace from its JSON text. Errors name the field and record (`ops[12].dst`);
    /// a trace of another format or version is refused.
    pub fn from_json(text: &str) -> Result<Trace, NkiError> {
        // The happy path reads without tracking where it is (a quarter faster on a large
        // trace); only a trace that fails is read again to find the failing field's path.
        let trace: Trace = match serde_json::from_str(text) {
            Ok(t) => t,
            Err(plain) => {
                let de = &mut serde_json::Deserializer::from_str(text);
                let Err(e) = serde_path_to_error::deserialize::<_, Trace>(de) else {
                    return Err(NkiError::Trace { path: String::new(), message: plain.to_string() });
                };
                let path = e.path().to_string();
                let path = if path == "." || path == "?" { String::new() } else { path };
                return Err(NkiError::Trace { path, message: e.into_inner().to_string() });
            }
        };
        if trace.format != TRACE_FORMAT {
            return Err(NkiError::Trace {
                path: "format".into(),
                message: format!("`{}` is not an NKI trace (expected `{TRACE_FORMAT}`)", trace.format),
            });
        }
        if trace.version != TRACE_VERSION {
            return Err(NkiError::Trace {
                path: "version".into(),
                message: format!(
                    "trace version {} is not supported (this ntile reads version {TRACE_VERSION})",
                    trace.version
                ),
            });
        }
        Ok(trace)
    }

    /// The JSON text of the trace.
    pub fn to_json(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The `file:line` text of a location (`?` for a file index outside [`Self::files`]).
    pub fn loc_text(&self, loc: Loc) -> String {
        let file = self.files.get(loc.0 as usize).map_or("?", String::as_str);
        format!("{file}:{}", loc.1)
    }
}

/// The NKI API generation of a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// The standalone `nki` package (`dst`-first calls).
    Current,
    /// `neuronxcc.nki` (calls return tiles).
    Legacy,
}

/// A source location: `[file index, line]` (1-based line of the innermost frame in the
/// kernel's own files).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Loc(pub u32, pub u32);

/// Where a tensor lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Buffer {
    /// A kernel argument (row-major in HBM).
    Input,
    /// An HBM tensor the kernel creates (outputs are among them).
    SharedHbm,
    /// HBM scratch.
    PrivateHbm,
    /// The state buffer.
    Sbuf,
    /// The matmul accumulator.
    Psum,
}

impl Buffer {
    /// Whether the buffer is on chip (SBUF or PSUM).
    pub fn is_on_chip(self) -> bool {
        matches!(self, Buffer::Sbuf | Buffer::Psum)
    }

    /// The trace's name.
    pub fn name(self) -> &'static str {
        match self {
            Buffer::Input => "input",
            Buffer::SharedHbm => "shared_hbm",
            Buffer::PrivateHbm => "private_hbm",
            Buffer::Sbuf => "sbuf",
            Buffer::Psum => "psum",
        }
    }
}

impl fmt::Display for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A tensor (a storage).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorRecord {
    /// Its name (a kernel argument's parameter name for inputs).
    pub name: String,
    /// Where it lives.
    pub buffer: Buffer,
    /// Element type (penguin's names).
    pub dtype: DType,
    /// Shape; on chip, `shape[par]` is the partition dimension and the dims before it are
    /// block dimensions.
    pub shape: Vec<u64>,
    /// The partition dimension's index (on chip).
    #[serde(default)]
    pub par: usize,
    /// The allocation site: tensors of one site are instances of it for rotation.
    pub site: u32,
    /// Where it was created.
    pub loc: Loc,
    /// A direct allocation, if the kernel gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<Address>,
}

/// A direct on-chip address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Address {
    /// One address per block, in block order: `[partition, byte]`.
    Blocks {
        /// The blocks' addresses.
        blocks: Vec<(u32, u64)>,
    },
    /// The address of a tensor without block dimensions.
    At {
        /// First partition.
        partition: u32,
        /// Byte offset inside each partition.
        byte: u64,
    },
}

/// An operand: the NKI `.ap()` convention over one logical tile.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct View {
    /// The tensor id.
    pub t: u32,
    /// The block, for tensors with block dimensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<Vec<u64>>,
    /// Element offset of the first element.
    #[serde(default)]
    pub offset: i64,
    /// `[stride, count]` pairs, the partition walk first.
    pub ap: Vec<(i64, u64)>,
}

impl View {
    /// The logical shape: the counts.
    pub fn shape(&self) -> Vec<u64> {
        self.ap.iter().map(|&(_, n)| n).collect()
    }
}

/// An immediate: a number, or `"nan"`, `"inf"`, `"-inf"`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Imm(#[serde(with = "penguin::json_f64")] pub f64);

/// A number or a `[P, 1]` view (a per-partition scalar).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    /// A number.
    Imm(Imm),
    /// A per-partition column.
    View(View),
}

/// How a matmul treats the current contents of its PSUM region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Accumulate {
    /// `false`: start a group (overwrite).
    Overwrite,
    /// `true`: add into the open group.
    Accumulate,
    /// `null`: the first write since the region was last read overwrites, later ones add.
    #[default]
    Infer,
    /// `"add"` (legacy `psum += matmul(...)`): add into an open group or a zero fill.
    Add,
}

/// A loop of the kernel's Python.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopKind {
    /// `affine_range`.
    Affine,
    /// `sequential_range`.
    Sequential,
    /// `static_range`.
    Static,
    /// A plain Python `range`.
    Range,
}

/// The row reduction of an activation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reduce {
    /// The reduction.
    pub alu: Alu,
    /// Where it goes.
    pub dst: View,
}

/// One `[stride, count]` term of an affine pattern (`affine_select`, `iota`).
pub type PatternDim = (i64, u64);

macro_rules! names {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $(
                #[doc = concat!("`", $text, "`.")]
                #[serde(rename = $text)]
                $variant,
            )*
        }

        impl $name {
            /// The trace's name.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

names! {
    /// An ALU operation (NKI's names).
    Alu {
        Add = "add",
        Subtract = "subtract",
        Multiply = "multiply",
        Divide = "divide",
        Maximum = "maximum",
        Minimum = "minimum",
        Power = "power",
        Mod = "mod",
        Fmod = "fmod",
        LogicalAnd = "logical_and",
        LogicalOr = "logical_or",
        LogicalXor = "logical_xor",
        AbsMax = "abs_max",
        AbsMin = "abs_min",
        Equal = "equal",
        NotEqual = "not_equal",
        Greater = "greater",
        GreaterEqual = "greater_equal",
        Less = "less",
        LessEqual = "less_equal",
        BitwiseAnd = "bitwise_and",
        BitwiseOr = "bitwise_or",
        BitwiseXor = "bitwise_xor",
        LeftShift = "left_shift",
        RightShift = "right_shift",
        Abs = "abs",
        Square = "square",
        Relu = "relu",
        Rsqrt = "rsqrt",
        Reciprocal = "reciprocal",
    }
}

names! {
    /// An activation function (NKI's names).
    ActivationFunc {
        Copy = "copy",
        Exp = "exp",
        Log = "log",
        Tanh = "tanh",
        Sigmoid = "sigmoid",
        Relu = "relu",
        Gelu = "gelu",
        GeluApprxTanh = "gelu_apprx_tanh",
        Silu = "silu",
        Softplus = "softplus",
        Square = "square",
        Sqrt = "sqrt",
        Rsqrt = "rsqrt",
        Reciprocal = "reciprocal",
        Abs = "abs",
        Sign = "sign",
        Erf = "erf",
        Sin = "sin",
        GeluDx = "gelu_dx",
        GeluApprxSigmoid = "gelu_apprx_sigmoid",
        GeluApprxSigmoidDx = "gelu_apprx_sigmoid_dx",
        SiluDx = "silu_dx",
        Mish = "mish",
        ErfDx = "erf_dx",
        Arctan = "arctan",
        Cos = "cos",
        Tan = "tan",
        Floor = "floor",
        Ceil = "ceil",
        Trunc = "trunc",
    }
}

names! {
    /// What a `top8` record computes (`nki.isa.max8`, `nc_find_index8`, `nc_match_replace8`).
    Top8Name {
        Max8 = "max8",
        FindIndex8 = "find_index8",
        MatchReplace8 = "match_replace8",
    }
}

names! {
    /// A comparison of `affine_select`.
    Cmp {
        Equal = "equal",
        NotEqual = "not_equal",
        Greater = "greater",
        GreaterEqual = "greater_equal",
        Less = "less",
        LessEqual = "less_equal",
    }
}

names! {
    /// A matmul's PE performance mode.
    TracePerfMode {
        None = "none",
        DoubleRow = "double_row",
    }
}

names! {
    /// The engine a record asks for.
    EngineName {
        Act = "act",
        Dve = "dve",
        Pool = "pool",
        Pe = "pe",
        Sp = "sp",
    }
}
