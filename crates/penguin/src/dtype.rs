//! Element types and the exact conversions between them.
//!
//! Every narrowing float conversion is round-to-nearest-even on the exact value of the f32
//! input and matches numpy `ml_dtypes` `astype`: NaN stays NaN, a value that rounds past the
//! largest finite number becomes infinity where the format has one and NaN where it does not.
//! [`CastMode::Saturate`] is the named alternative that clamps to +-max instead.
//!
//! The golden tests (`crates/penguin/tests/penguin/golden.rs`) pin this against vectors
//! generated with ml_dtypes (`cargo xtask golden`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// IEEE binary32.
    Fp32,
    /// bfloat16: 8 exponent bits, 7 mantissa bits.
    Bf16,
    /// IEEE binary16.
    Fp16,
    /// fp8 E4M3, IEEE-like: bias 7, largest finite 240, has infinities.
    Fp8e4m3,
    /// fp8 E4M3FN (OCP): bias 7, largest finite 448, no infinities; trn3 only.
    Fp8e4m3fn,
    /// fp8 E5M2: bias 15, largest finite 57344, has infinities.
    Fp8e5m2,
    /// Unsigned 8-bit integer.
    Uint8,
    /// Signed 16-bit integer (sparsity tags).
    Int16,
    /// Signed 32-bit integer (gather indices).
    Int32,
    /// Signed 8-bit integer.
    Int8,
    /// Unsigned 16-bit integer.
    Uint16,
    /// Unsigned 32-bit integer (exact as an f32 up to 2^24, as int32 is).
    Uint32,
}

/// How a value that does not fit the destination type is handled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CastMode {
    /// Round to nearest even; overflow gives infinity (or NaN for formats without one),
    /// exactly as numpy `ml_dtypes` `astype` does.
    #[default]
    Rne,
    /// Round to nearest even, then clamp to +-max finite (infinite inputs included); NaN stays
    /// NaN.
    Saturate,
}

impl CastMode {
    /// The text name (`rne`, `saturate`).
    pub fn name(self) -> &'static str {
        match self {
            CastMode::Rne => "rne",
            CastMode::Saturate => "saturate",
        }
    }
}

/// The bit layout of an fp8 format; conversions work on the f32 bit pattern in integers.
#[derive(Clone, Copy, Debug)]
struct FloatFormat {
    exp_bits: u32,
    mant_bits: u32,
    bias: i32,
    /// Whether the all-ones exponent encodes inf/NaN (IEEE) or ordinary numbers (FN, whose only
    /// NaN is the all-ones magnitude).
    ieee_specials: bool,
}

const E4M3: FloatFormat = FloatFormat { exp_bits: 4, mant_bits: 3, bias: 7, ieee_specials: true };
const E4M3FN: FloatFormat = FloatFormat { exp_bits: 4, mant_bits: 3, bias: 7, ieee_specials: false };
const E5M2: FloatFormat = FloatFormat { exp_bits: 5, mant_bits: 2, bias: 15, ieee_specials: true };

const F32_MANT_BITS: u32 = 23;
const F32_BIAS: i32 = 127;
const F32_INF: u32 = 0x7f80_0000;
const F32_QUIET_NAN: u32 = 0x7fc0_0000;

impl FloatFormat {
    fn max_exp_field(self) -> u32 {
        (1 << self.exp_bits) - 1
    }

    fn sign_bit(self) -> u32 {
        1 << (self.exp_bits + self.mant_bits)
    }

    /// Mask of the magnitude (exponent and mantissa) bits.
    fn magnitude_mask(self) -> u32 {
        self.sign_bit() - 1
    }

    fn inf_code(self) -> Option<u32> {
        self.ieee_specials.then(|| self.max_exp_field() << self.mant_bits)
    }

    /// The magnitude ml_dtypes produces for NaN.
    fn nan_code(self) -> u32 {
        match self.inf_code() {
            // Exponent all ones, mantissa top bit set: quiet NaN.
            Some(inf) => inf | (1 << (self.mant_bits - 1)),
            None => self.magnitude_mask(),
        }
    }

    /// The magnitude of the largest finite value: just below inf, or just below the FN NaN.
    fn max_code(self) -> u32 {
        self.inf_code().unwrap_or(self.magnitude_mask()) - 1
    }

    /// The largest finite value.
    fn max_finite(self) -> f64 {
        f64::from(self.decode(self.max_code()))
    }

    fn decode(self, bits: u32) -> f32 {
        let sign = u32::from(bits & self.sign_bit() != 0) << 31;
        let magnitude = bits & self.magnitude_mask();
        let exp_field = magnitude >> self.mant_bits;
        let mant = magnitude & ((1 << self.mant_bits) - 1);
        let abs = if self.ieee_specials && exp_field == self.max_exp_field() {
            if mant == 0 {
                F32_INF
            } else {
                F32_QUIET_NAN
            }
        } else if !self.ieee_specials && magnitude == self.magnitude_mask() {
            F32_QUIET_NAN
        } else if exp_field == 0 {
            // Subnormal: mant times the smallest subnormal, a power of two, so the product is
            // exact (and +-0 for mant 0).
            let min_subnormal = (F32_BIAS + 1 - self.bias - self.mant_bits as i32) as u32;
            (mant as f32 * f32::from_bits(min_subnormal << F32_MANT_BITS)).to_bits()
        } else {
            let exp = (exp_field as i32 - self.bias + F32_BIAS) as u32;
            (exp << F32_MANT_BITS) | (mant << (F32_MANT_BITS - self.mant_bits))
        };
        f32::from_bits(sign | abs)
    }

    fn encode(self, x: f32, mode: CastMode) -> u32 {
        let bits = x.to_bits();
        let sign = if bits >> 31 != 0 { self.sign_bit() } else { 0 };
        let abs = bits & 0x7fff_ffff;
        if abs > F32_INF {
            return sign | self.nan_code();
        }
        // Infinity takes the overflow path below, like a finite value that rounds past max.
        let magnitude = if abs == F32_INF { u32::MAX } else { self.round_magnitude(abs) };
        if magnitude <= self.max_code() {
            return sign | magnitude;
        }
        match (mode, self.inf_code()) {
            (CastMode::Saturate, _) => sign | self.max_code(),
            (CastMode::Rne, Some(inf)) => sign | inf,
            (CastMode::Rne, None) => sign | self.nan_code(),
        }
    }

    /// Round the magnitude bits of a finite f32 to nearest even in this format. The result is
    /// a magnitude code when it is at most `max_code`; anything larger means overflow.
    fn round_magnitude(self, abs: u32) -> u32 {
        let f32_exp = (abs >> F32_MANT_BITS) as i32;
        if f32_exp == 0 {
            // f32 subnormals lie far below half the smallest fp8 subnormal.
            return 0;
        }
        let exp = f32_exp - F32_BIAS + self.bias;
        if exp >= 1 {
            // Normal: rebias the exponent in place and round the mantissa; a carry out of the
            // mantissa correctly bumps the exponent (and past max, into the overflow range).
            let rebias = ((F32_BIAS - self.bias) as u32) << F32_MANT_BITS;
            return round_shift(abs - rebias, F32_MANT_BITS - self.mant_bits);
        }
        // Subnormal: the significand with its implicit bit, in units of the smallest subnormal.
        // A carry into the implicit bit yields the smallest normal code, as it should.
        let significand = (abs & ((1 << F32_MANT_BITS) - 1)) | (1 << F32_MANT_BITS);
        let shift = (F32_MANT_BITS - self.mant_bits) as i32 + 1 - exp;
        if shift > F32_MANT_BITS as i32 + 1 {
            // Less than half the smallest subnormal.
            return 0;
        }
        round_shift(significand, shift as u32)
    }
}

/// `v >> shift` rounded to nearest, ties to even; `1 <= shift < 32`, `v < 2^31`.
fn round_shift(v: u32, shift: u32) -> u32 {
    let half = 1 << (shift - 1);
    let odd = (v >> shift) & 1;
    (v + half - 1 + odd) >> shift
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 12] = [
        DType::Fp32,
        DType::Bf16,
        DType::Fp16,
        DType::Fp8e4m3,
        DType::Fp8e4m3fn,
        DType::Fp8e5m2,
        DType::Uint8,
        DType::Int16,
        DType::Int32,
        DType::Int8,
        DType::Uint16,
        DType::Uint32,
    ];

    /// Bytes per element.
    pub fn size_bytes(self) -> u32 {
        match self {
            DType::Fp32 | DType::Int32 | DType::Uint32 => 4,
            DType::Bf16 | DType::Fp16 | DType::Int16 | DType::Uint16 => 2,
            DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2 | DType::Uint8 | DType::Int8 => 1,
        }
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        match self {
            DType::Fp32 | DType::Bf16 | DType::Fp16 | DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2 => true,
            DType::Uint8 | DType::Int16 | DType::Int32 | DType::Int8 | DType::Uint16 | DType::Uint32 => false,
        }
    }

    /// Whether this is one of the fp8 formats.
    pub fn is_fp8(self) -> bool {
        matches!(self, DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2)
    }

    /// The text-format name (`fp32`, `bf16`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::Fp32 => "fp32",
            DType::Bf16 => "bf16",
            DType::Fp16 => "fp16",
            DType::Fp8e4m3 => "fp8e4m3",
            DType::Fp8e4m3fn => "fp8e4m3fn",
            DType::Fp8e5m2 => "fp8e5m2",
            DType::Uint8 => "uint8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int8 => "int8",
            DType::Uint16 => "uint16",
            DType::Uint32 => "uint32",
        }
    }

    /// Unit roundoff (half an ulp at 1.0) of a float type; 0 for integers.
    pub fn unit_roundoff(self) -> f64 {
        match self {
            DType::Fp32 => 2f64.powi(-24),
            DType::Bf16 => 2f64.powi(-8),
            DType::Fp16 => 2f64.powi(-11),
            DType::Fp8e4m3 | DType::Fp8e4m3fn => 2f64.powi(-4),
            DType::Fp8e5m2 => 2f64.powi(-3),
            DType::Uint8 | DType::Int16 | DType::Int32 | DType::Int8 | DType::Uint16 | DType::Uint32 => 0.0,
        }
    }

    /// Largest finite value (for floats) or largest integer.
    pub fn max_value(self) -> f64 {
        match self {
            DType::Fp32 => f64::from(f32::MAX),
            DType::Bf16 => f64::from(half::bf16::MAX),
            DType::Fp16 => f64::from(half::f16::MAX),
            DType::Fp8e4m3 => E4M3.max_finite(),
            DType::Fp8e4m3fn => E4M3FN.max_finite(),
            DType::Fp8e5m2 => E5M2.max_finite(),
            DType::Uint8 => 255.0,
            DType::Int16 => f64::from(i16::MAX),
            DType::Int32 => f64::from(i32::MAX),
            DType::Int8 => f64::from(i8::MAX),
            DType::Uint16 => f64::from(u16::MAX),
            DType::Uint32 => f64::from(u32::MAX),
        }
    }

    /// Convert an f32 into this type's bit pattern (low `8 * size_bytes` bits).
    pub fn encode(self, x: f32, mode: CastMode) -> u32 {
        match self {
            DType::Fp32 => x.to_bits(),
            DType::Bf16 => u32::from(bf16_bits(x, mode)),
            DType::Fp16 => {
                u32::from(saturate_16(half::f16::from_f32(x).to_bits(), mode, half::f16::INFINITY.to_bits()))
            }
            DType::Fp8e4m3 => E4M3.encode(x, mode),
            DType::Fp8e4m3fn => E4M3FN.encode(x, mode),
            DType::Fp8e5m2 => E5M2.encode(x, mode),
            DType::Uint8 => round_int(x, 0.0, 255.0) as u32,
            DType::Int16 => u32::from(round_int(x, f64::from(i16::MIN), f64::from(i16::MAX)) as i16 as u16),
            DType::Int32 => round_int(x, f64::from(i32::MIN), f64::from(i32::MAX)) as i32 as u32,
            DType::Int8 => u32::from(round_int(x, f64::from(i8::MIN), f64::from(i8::MAX)) as i8 as u8),
            DType::Uint16 => round_int(x, 0.0, f64::from(u16::MAX)) as u32,
            DType::Uint32 => round_int(x, 0.0, f64::from(u32::MAX)) as u32,
        }
    }

    /// Interpret a bit pattern of this type as f32 (exact for every type but int32 beyond 2^24).
    pub fn decode(self, bits: u32) -> f32 {
        match self {
            DType::Fp32 => f32::from_bits(bits),
            DType::Bf16 => half::bf16::from_bits(bits as u16).to_f32(),
            DType::Fp16 => half::f16::from_bits(bits as u16).to_f32(),
            DType::Fp8e4m3 => E4M3.decode(bits & 0xff),
            DType::Fp8e4m3fn => E4M3FN.decode(bits & 0xff),
            DType::Fp8e5m2 => E5M2.decode(bits & 0xff),
            DType::Uint8 => (bits & 0xff) as f32,
            DType::Int16 => f32::from(bits as u16 as i16),
            DType::Int32 => bits as i32 as f32,
            DType::Int8 => f32::from(bits as u8 as i8),
            DType::Uint16 => f32::from(bits as u16),
            DType::Uint32 => bits as f32,
        }
    }

    /// Round an f32 through this type and back (the value the hardware would hold).
    pub fn round_trip(self, x: f32) -> f32 {
        self.decode(self.encode(x, CastMode::Rne))
    }

    /// Write one element's bit pattern into `out` (little endian, `size_bytes` long).
    pub fn store_bits(self, bits: u32, out: &mut [u8]) {
        let bytes = bits.to_le_bytes();
        let n = self.size_bytes() as usize;
        out[..n].copy_from_slice(&bytes[..n]);
    }

    /// Read one element's bit pattern from `src` (little endian, `size_bytes` long).
    pub fn load_bits(self, src: &[u8]) -> u32 {
        let mut bytes = [0u8; 4];
        let n = self.size_bytes() as usize;
        bytes[..n].copy_from_slice(&src[..n]);
        u32::from_le_bytes(bytes)
    }
}

/// Apply [`CastMode`] to a round-to-nearest-even bf16/fp16 result whose +inf pattern is `inf`.
///
/// The Rne result is +-inf exactly when the input was +-inf or rounded past max, and in both
/// formats the pattern just below +inf is +max.
fn saturate_16(bits: u16, mode: CastMode, inf: u16) -> u16 {
    if mode == CastMode::Saturate && bits & 0x7fff == inf {
        (bits & 0x8000) | (inf - 1)
    } else {
        bits
    }
}

/// bf16 bits of `x`: RNE through `half`, except that a NaN becomes the canonical quiet NaN
/// with the input's sign (as ml_dtypes does; `half` keeps the payload).
pub fn bf16_bits(x: f32, mode: CastMode) -> u16 {
    if x.is_nan() {
        return if x.is_sign_negative() { 0xffc0 } else { 0x7fc0 };
    }
    saturate_16(half::bf16::from_f32(x).to_bits(), mode, half::bf16::INFINITY.to_bits())
}

/// Round half to even and clamp into an integer range; NaN becomes 0.
fn round_int(x: f32, lo: f64, hi: f64) -> i64 {
    if x.is_nan() {
        return 0;
    }
    f64::from(x).round_ties_even().clamp(lo, hi) as i64
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for an unknown dtype name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dtype `{0}` (expected one of fp32, bf16, fp16, fp8e4m3, fp8e4m3fn, fp8e5m2, uint8, int16, int32, int8, uint16, uint32)")]
pub struct UnknownDType(pub String);

impl FromStr for DType {
    type Err = UnknownDType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DType::ALL.into_iter().find(|d| d.name() == s).ok_or_else(|| UnknownDType(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_and_unsigned_integers_round_half_to_even_and_clamp() {
        for (d, lo, hi) in
            [(DType::Int8, -128.0, 127.0), (DType::Uint16, 0.0, 65535.0), (DType::Uint32, 0.0, 4294967296.0)]
        {
            assert_eq!(d.decode(d.encode(1e12, CastMode::Rne)), hi, "{d}");
            assert_eq!(d.decode(d.encode(-1e12, CastMode::Rne)), lo, "{d}");
            assert_eq!(d.decode(d.encode(2.5, CastMode::Rne)), 2.0, "{d}");
            assert_eq!(d.decode(d.encode(f32::NAN, CastMode::Rne)), 0.0, "{d}");
            assert!(!d.is_float());
            assert_eq!(d.name().parse::<DType>(), Ok(d));
        }
        assert_eq!(DType::Int8.encode(-1.0, CastMode::Rne), 0xff);
        assert_eq!(DType::Uint32.encode(1e12, CastMode::Rne), u32::MAX);
        assert_eq!((DType::Int8.size_bytes(), DType::Uint16.size_bytes(), DType::Uint32.size_bytes()), (1, 2, 4));
    }

    #[test]
    fn fp8_max_values_match_the_formats() {
        assert_eq!(DType::Fp8e4m3.max_value(), 240.0);
        assert_eq!(DType::Fp8e4m3fn.max_value(), 448.0);
        assert_eq!(DType::Fp8e5m2.max_value(), 57344.0);
    }

    #[test]
    fn fp8_every_pattern_round_trips() {
        for d in [DType::Fp8e4m3, DType::Fp8e4m3fn, DType::Fp8e5m2] {
            for bits in 0u32..256 {
                let v = d.decode(bits);
                if v.is_nan() {
                    continue;
                }
                let back = d.encode(v, CastMode::Rne);
                // -0 and +0 are distinct patterns and both round-trip.
                assert_eq!(back, bits, "{d} pattern {bits:#04x} value {v}");
            }
        }
    }

    #[test]
    fn fp8_ties_round_to_even_and_overflow() {
        // 1.0625 lies halfway between 1.0 (mantissa 000) and 1.125 (001): even is 1.0.
        assert_eq!(DType::Fp8e4m3.round_trip(1.0625), 1.0);
        // 1.1875 is halfway between 1.125 (001) and 1.25 (010): even is 1.25.
        assert_eq!(DType::Fp8e4m3.round_trip(1.1875), 1.25);
        assert_eq!(DType::Fp8e4m3.round_trip(1e6), f32::INFINITY);
        assert!(DType::Fp8e4m3fn.round_trip(1e6).is_nan());
        assert_eq!(DType::Fp8e4m3fn.decode(DType::Fp8e4m3fn.encode(1e6, CastMode::Saturate)), 448.0);
        assert_eq!(DType::Fp8e5m2.decode(DType::Fp8e5m2.encode(-1e9, CastMode::Saturate)), -57344.0);
        // Smallest subnormal of e4m3 is 2^-9; half of it ties to zero.
        assert_eq!(DType::Fp8e4m3.round_trip(2f32.powi(-9)), 2f32.powi(-9));
        assert_eq!(DType::Fp8e4m3.round_trip(2f32.powi(-10)), 0.0);
    }

    #[test]
    fn bf16_and_fp16_are_rne() {
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7 in bf16: even is 1.
        assert_eq!(DType::Bf16.round_trip(1.0 + 2f32.powi(-8)), 1.0);
        assert_eq!(DType::Bf16.round_trip(1.0 + 3.0 * 2f32.powi(-8)), 1.0 + 2f32.powi(-6));
        assert_eq!(DType::Fp16.round_trip(65520.0), f32::INFINITY);
        assert_eq!(DType::Fp16.decode(DType::Fp16.encode(65520.0, CastMode::Saturate)), 65504.0);
        assert!(DType::Bf16.round_trip(f32::NAN).is_nan());
        // Saturate clamps infinite inputs too, not only finite values that round past max.
        assert_eq!(
            DType::Bf16.decode(DType::Bf16.encode(f32::NEG_INFINITY, CastMode::Saturate)),
            -f32::from(half::bf16::MAX)
        );
        assert_eq!(DType::Fp16.decode(DType::Fp16.encode(f32::INFINITY, CastMode::Saturate)), 65504.0);
        assert!(DType::Fp16.decode(DType::Fp16.encode(f32::NAN, CastMode::Saturate)).is_nan());
    }

    #[test]
    fn bf16_nans_are_canonical_like_ml_dtypes() {
        assert_eq!(DType::Bf16.encode(f32::from_bits(0x7fa0_0000), CastMode::Rne), 0x7fc0);
        assert_eq!(DType::Bf16.encode(f32::from_bits(0xff81_2345), CastMode::Rne), 0xffc0);
    }

    #[test]
    fn names_parse_back() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>(), Ok(d));
        }
        assert!("fp64".parse::<DType>().is_err());
    }
}
