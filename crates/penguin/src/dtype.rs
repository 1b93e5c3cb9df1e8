//! Element types and the exact conversions between them.
//!
//! Every narrowing float conversion is round-to-nearest-even on the exact value of the f32
//! input and matches numpy `ml_dtypes` `astype`: NaN stays NaN, a value that rounds past the
//! largest finite number becomes infinity where the format has one and NaN where it does not.
//! [`CastMode::Saturate`] is the named alternative that clamps to +-max instead.

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
}

/// How a value that does not fit the destination type is handled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CastMode {
    /// Round to nearest even; overflow gives infinity (or NaN for formats without one),
    /// exactly as numpy `ml_dtypes` `astype` does.
    #[default]
    Rne,
    /// Round to nearest even, then clamp to +-max finite; NaN stays NaN.
    Saturate,
}

/// The bit layout of a small float format.
#[derive(Clone, Copy, Debug)]
struct FloatFormat {
    exp_bits: u32,
    mant_bits: u32,
    bias: i32,
    /// Whether the all-ones exponent encodes inf/NaN (IEEE) or ordinary numbers (FN).
    ieee_specials: bool,
}

const E4M3: FloatFormat = FloatFormat { exp_bits: 4, mant_bits: 3, bias: 7, ieee_specials: true };
const E4M3FN: FloatFormat = FloatFormat { exp_bits: 4, mant_bits: 3, bias: 7, ieee_specials: false };
const E5M2: FloatFormat = FloatFormat { exp_bits: 5, mant_bits: 2, bias: 15, ieee_specials: true };

impl FloatFormat {
    fn max_exp_field(self) -> u32 {
        (1 << self.exp_bits) - 1
    }

    /// The largest finite value.
    fn max_finite(self) -> f64 {
        let mant_all = (1u32 << self.mant_bits) - 1;
        let (exp_field, mant) = if self.ieee_specials {
            (self.max_exp_field() - 1, mant_all)
        } else {
            // All-ones exponent is finite except for the all-ones mantissa (NaN).
            (self.max_exp_field(), mant_all - 1)
        };
        let frac = 1.0 + f64::from(mant) / f64::from(1u32 << self.mant_bits);
        frac * 2f64.powi(exp_field as i32 - self.bias)
    }

    fn nan_bits(self) -> u32 {
        let ones = (1u32 << (self.exp_bits + self.mant_bits)) - 1;
        if self.ieee_specials {
            // Exponent all ones, mantissa top bit set: quiet NaN.
            (self.max_exp_field() << self.mant_bits) | (1 << (self.mant_bits - 1))
        } else {
            ones
        }
    }

    fn inf_bits(self) -> Option<u32> {
        self.ieee_specials.then(|| self.max_exp_field() << self.mant_bits)
    }

    fn sign_bit(self) -> u32 {
        1 << (self.exp_bits + self.mant_bits)
    }

    fn decode(self, bits: u32) -> f32 {
        let sign = if bits & self.sign_bit() != 0 { -1.0 } else { 1.0 };
        let exp_field = (bits >> self.mant_bits) & self.max_exp_field();
        let mant = bits & ((1 << self.mant_bits) - 1);
        let mant_scale = f64::from(1u32 << self.mant_bits);
        if self.ieee_specials && exp_field == self.max_exp_field() {
            return if mant == 0 { (sign * f64::INFINITY) as f32 } else { f32::NAN };
        }
        if !self.ieee_specials && exp_field == self.max_exp_field() && mant == (1 << self.mant_bits) - 1 {
            return f32::NAN;
        }
        let value = if exp_field == 0 {
            f64::from(mant) / mant_scale * 2f64.powi(1 - self.bias)
        } else {
            (1.0 + f64::from(mant) / mant_scale) * 2f64.powi(exp_field as i32 - self.bias)
        };
        (sign * value) as f32
    }

    fn encode(self, x: f32, mode: CastMode) -> u32 {
        let sign = if x.is_sign_negative() { self.sign_bit() } else { 0 };
        if x.is_nan() {
            return sign | self.nan_bits();
        }
        let max = self.max_finite();
        let overflow = |sign: u32| -> u32 {
            match (mode, self.inf_bits()) {
                (CastMode::Saturate, _) => sign | self.encode_finite(max),
                (CastMode::Rne, Some(inf)) => sign | inf,
                (CastMode::Rne, None) => sign | self.nan_bits(),
            }
        };
        if x.is_infinite() {
            return overflow(sign);
        }
        let a = f64::from(x.abs());
        if a == 0.0 {
            return sign;
        }
        let emin = 1 - self.bias;
        let e = exponent_of(a).max(emin);
        let quantum = 2f64.powi(e - self.mant_bits as i32);
        let rounded = (a / quantum).round_ties_even() * quantum;
        if rounded > max {
            return overflow(sign);
        }
        sign | self.encode_finite(rounded)
    }

    /// Encode a non-negative value that is exactly representable and at most max.
    fn encode_finite(self, v: f64) -> u32 {
        if v == 0.0 {
            return 0;
        }
        let emin = 1 - self.bias;
        let e = exponent_of(v);
        if e < emin {
            let quantum = 2f64.powi(emin - self.mant_bits as i32);
            return (v / quantum) as u32;
        }
        let mant = (v / 2f64.powi(e - self.mant_bits as i32)) as u32 - (1 << self.mant_bits);
        (((e + self.bias) as u32) << self.mant_bits) | mant
    }
}

/// floor(log2(a)) for a positive finite f64.
fn exponent_of(a: f64) -> i32 {
    let bits = a.to_bits();
    let field = ((bits >> 52) & 0x7ff) as i32;
    if field == 0 {
        // f64 subnormal: cannot come from an f32 input, but stay correct.
        a.log2().floor() as i32
    } else {
        field - 1023
    }
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 9] = [
        DType::Fp32,
        DType::Bf16,
        DType::Fp16,
        DType::Fp8e4m3,
        DType::Fp8e4m3fn,
        DType::Fp8e5m2,
        DType::Uint8,
        DType::Int16,
        DType::Int32,
    ];

    /// Bytes per element.
    pub fn size_bytes(self) -> u32 {
        match self {
            DType::Fp32 | DType::Int32 => 4,
            DType::Bf16 | DType::Fp16 | DType::Int16 => 2,
            DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2 | DType::Uint8 => 1,
        }
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        match self {
            DType::Fp32 | DType::Bf16 | DType::Fp16 | DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2 => true,
            DType::Uint8 | DType::Int16 | DType::Int32 => false,
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
            DType::Uint8 | DType::Int16 | DType::Int32 => 0.0,
        }
    }

    fn float_format(self) -> Option<FloatFormat> {
        match self {
            DType::Fp8e4m3 => Some(E4M3),
            DType::Fp8e4m3fn => Some(E4M3FN),
            DType::Fp8e5m2 => Some(E5M2),
            DType::Fp32 | DType::Bf16 | DType::Fp16 | DType::Uint8 | DType::Int16 | DType::Int32 => None,
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
        }
    }

    /// Convert an f32 into this type's bit pattern (low `8 * size_bytes` bits).
    pub fn encode(self, x: f32, mode: CastMode) -> u32 {
        match self {
            DType::Fp32 => x.to_bits(),
            DType::Bf16 => {
                let v = half::bf16::from_f32(x);
                u32::from(saturate_half(
                    v.to_bits(),
                    v.is_infinite() && !x.is_infinite(),
                    mode,
                    || half::bf16::MAX.to_bits(),
                    0x8000,
                ))
            }
            DType::Fp16 => {
                let v = half::f16::from_f32(x);
                u32::from(saturate_half(
                    v.to_bits(),
                    v.is_infinite() && !x.is_infinite(),
                    mode,
                    || half::f16::MAX.to_bits(),
                    0x8000,
                ))
            }
            DType::Fp8e4m3 => E4M3.encode(x, mode),
            DType::Fp8e4m3fn => E4M3FN.encode(x, mode),
            DType::Fp8e5m2 => E5M2.encode(x, mode),
            DType::Uint8 => round_int(x, 0.0, 255.0) as u32,
            DType::Int16 => round_int(x, f64::from(i16::MIN), f64::from(i16::MAX)) as i16 as u16 as u32,
            DType::Int32 => round_int(x, f64::from(i32::MIN), f64::from(i32::MAX)) as i32 as u32,
        }
    }

    /// Interpret a bit pattern of this type as f32 (exact for every type but int32 beyond 2^24).
    pub fn decode(self, bits: u32) -> f32 {
        match self {
            DType::Fp32 => f32::from_bits(bits),
            DType::Bf16 => half::bf16::from_bits(bits as u16).to_f32(),
            DType::Fp16 => half::f16::from_bits(bits as u16).to_f32(),
            DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2 => match self.float_format() {
                Some(f) => f.decode(bits & 0xff),
                None => f32::NAN,
            },
            DType::Uint8 => (bits & 0xff) as f32,
            DType::Int16 => f32::from(bits as u16 as i16),
            DType::Int32 => bits as i32 as f32,
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

/// Apply saturation to a 16-bit float result that overflowed to infinity.
fn saturate_half(bits: u16, overflowed: bool, mode: CastMode, max: impl Fn() -> u16, sign: u16) -> u16 {
    if overflowed && mode == CastMode::Saturate {
        (bits & sign) | max()
    } else {
        bits
    }
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
#[error("unknown dtype `{0}` (expected one of fp32, bf16, fp16, fp8e4m3, fp8e4m3fn, fp8e5m2, uint8, int16, int32)")]
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
    }

    #[test]
    fn names_parse_back() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>(), Ok(d));
        }
        assert!("fp64".parse::<DType>().is_err());
    }
}
