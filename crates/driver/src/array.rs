//! Typed arrays: what a program run takes as inputs and gives back as outputs (element type
//! or dtype, shape, little-endian bytes), so no file format reaches the pipeline.

use penguin::DType;

/// The element type of an input array (the `.npy` kinds ntile reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// float32.
    F32,
    /// float16.
    F16,
    /// uint16 (bf16 bit patterns).
    U16,
    /// uint8 (uint8 values or fp8 bit patterns).
    U8,
    /// int8.
    I8,
    /// int16.
    I16,
    /// int32.
    I32,
    /// uint32.
    U32,
}

impl Elem {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Elem::F32 | Elem::I32 | Elem::U32 => 4,
            Elem::F16 | Elem::U16 | Elem::I16 => 2,
            Elem::U8 | Elem::I8 => 1,
        }
    }

    /// The numpy type string (`<f4`, `|u1`, ...).
    pub fn descr(self) -> &'static str {
        match self {
            Elem::F32 => "<f4",
            Elem::F16 => "<f2",
            Elem::U16 => "<u2",
            Elem::U8 => "|u1",
            Elem::I8 => "|i1",
            Elem::I16 => "<i2",
            Elem::I32 => "<i4",
            Elem::U32 => "<u4",
        }
    }
}

/// A typed array: element type, row-major shape and little-endian bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Array {
    /// The element type.
    pub elem: Elem,
    /// The shape.
    pub shape: Vec<u64>,
    /// The elements' bytes, row-major.
    pub data: Vec<u8>,
}

/// An output tensor after a run: its dtype, shape and raw little-endian bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// The tensor.
    pub name: String,
    /// Its dtype.
    pub dtype: DType,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Its bytes, row-major, in its dtype.
    pub data: Vec<u8>,
}
