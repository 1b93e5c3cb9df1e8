//! The arithmetic of the compute engines, one element at a time: the ALU operators
//! ([`AluOp`]) in fp32 or on bit patterns, and the ScalarE activation functions
//! ([`ActFunc`]).
//!
//! Numerics (stated in `docs/isa-costs.md`): operands are read as fp32 and every arithmetic
//! operator is one IEEE fp32 operation (add, subtract, multiply, divide, reciprocal are
//! correctly rounded; max/min return NaN when either input is NaN, so uninitialized data
//! stays visible). The hardware's piecewise polynomials are unpublished, so the
//! transcendentals (and power, rsqrt) are computed in f64 with the `libm` crate (a port of
//! musl's libm, errors below 1 f64 ulp) from the fp32 input and rounded once to fp32: the
//! result is the correctly rounded fp32 value except where the f64 value lies within a few
//! f64 ulps of an fp32 rounding boundary, so it is within 1 fp32 ulp everywhere (0.5 ulp
//! nearly always). Formulas that cancel are evaluated in a stable form (gelu through erfc,
//! the tanh approximation of gelu as `x * sigmoid(2u)`, softplus split at 0). Subnormals
//! are kept, never flushed.

use penguin::{ActFunc, AluOp};

/// `max(a, b)`, NaN if either is NaN.
pub(crate) fn nan_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.max(b)
    }
}

/// `min(a, b)`, NaN if either is NaN.
fn nan_min(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.min(b)
    }
}

/// `a mod b` with the sign of `b`, as numpy's `mod` computes it in fp32: the exact remainder
/// `fmod(a, b)`, plus `b` (one fp32 rounding) when its sign differs from `b`'s; a zero
/// remainder takes `b`'s sign.
fn floor_mod(a: f32, b: f32) -> f32 {
    let r = a % b;
    if r == 0.0 {
        0f32.copysign(b)
    } else if (r < 0.0) != (b < 0.0) {
        r + b
    } else {
        r
    }
}

fn flag(b: bool) -> f32 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// `a op b` in fp32 for an arithmetic, comparison or unary operator (a unary one reads `a`
/// only); a bitvec operator gives NaN here (it works on bit patterns, see [`bits`]).
pub(crate) fn binary(op: AluOp, a: f32, b: f32) -> f32 {
    match op {
        AluOp::Add => a + b,
        AluOp::Subtract => a - b,
        AluOp::Multiply => a * b,
        AluOp::Max => nan_max(a, b),
        AluOp::Min => nan_min(a, b),
        AluOp::Divide => a / b,
        AluOp::Pow => libm::pow(f64::from(a), f64::from(b)) as f32,
        AluOp::Mod => floor_mod(a, b),
        // The remainder of a / b is exact in fp32 (C's fmod; Rust's `%`).
        AluOp::Fmod => a % b,
        AluOp::LogicalAnd => flag(a != 0.0 && b != 0.0),
        AluOp::LogicalOr => flag(a != 0.0 || b != 0.0),
        AluOp::LogicalXor => flag((a != 0.0) != (b != 0.0)),
        AluOp::AbsMax => nan_max(a.abs(), b.abs()),
        AluOp::AbsMin => nan_min(a.abs(), b.abs()),
        AluOp::IsEqual => flag(a == b),
        AluOp::NotEqual => flag(a != b),
        AluOp::IsGt => flag(a > b),
        AluOp::IsGe => flag(a >= b),
        AluOp::IsLt => flag(a < b),
        AluOp::IsLe => flag(a <= b),
        AluOp::Abs => a.abs(),
        AluOp::Square => a * a,
        AluOp::Relu => {
            if a.is_nan() {
                a
            } else {
                a.max(0.0)
            }
        }
        AluOp::Rsqrt => (1.0 / libm::sqrt(f64::from(a))) as f32,
        AluOp::Reciprocal => 1.0 / a,
        AluOp::BitwiseAnd | AluOp::BitwiseOr | AluOp::BitwiseXor | AluOp::LeftShift | AluOp::RightShift => f32::NAN,
    }
}

/// `a op b` on the bit patterns of `width`-bit integers (the low `width` bits of each): a
/// bitvec operator, or the exact (wrapping) integer add, subtract and multiply of GpSimd's
/// int32 path. Shifts are logical and give 0 once the amount reaches the width.
pub(crate) fn bits(op: AluOp, a: u32, b: u32, width: u32) -> u32 {
    let mask = if width >= 32 { u32::MAX } else { (1u32 << width) - 1 };
    let (a, b) = (a & mask, b & mask);
    let r = match op {
        AluOp::BitwiseAnd => a & b,
        AluOp::BitwiseOr => a | b,
        AluOp::BitwiseXor => a ^ b,
        AluOp::LeftShift => {
            if b >= width {
                0
            } else {
                a << b
            }
        }
        AluOp::RightShift => {
            if b >= width {
                0
            } else {
                a >> b
            }
        }
        AluOp::Add => a.wrapping_add(b),
        AluOp::Subtract => a.wrapping_sub(b),
        AluOp::Multiply => a.wrapping_mul(b),
        _ => 0,
    };
    r & mask
}

/// The activation function `func` of the fp32 value `x`, in f64 and rounded once to fp32.
pub(crate) fn activate(func: ActFunc, x: f32) -> f32 {
    let v = f64::from(x);
    let y = match func {
        ActFunc::Copy => return x,
        ActFunc::Abs => return x.abs(),
        ActFunc::Square => return x * x,
        ActFunc::Relu => return if x.is_nan() { x } else { x.max(0.0) },
        ActFunc::Reciprocal => return 1.0 / x,
        ActFunc::Sign => {
            return if x.is_nan() || x == 0.0 { x } else { x.signum() };
        }
        ActFunc::Exp => libm::exp(v),
        ActFunc::Log => libm::log(v),
        ActFunc::Tanh => libm::tanh(v),
        ActFunc::Sigmoid => sigmoid(v),
        ActFunc::Gelu => times_gate(v, 0.5 * libm::erfc(-v / std::f64::consts::SQRT_2)),
        ActFunc::GeluApprxTanh => {
            // 0.5 x (1 + tanh u) = x * sigmoid(2u), without the cancellation of 1 + tanh u.
            let u = (2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v);
            times_gate(v, sigmoid(2.0 * u))
        }
        ActFunc::Silu => times_gate(v, sigmoid(v)),
        ActFunc::Softplus => softplus(v),
        ActFunc::Sqrt => libm::sqrt(v),
        ActFunc::Rsqrt => 1.0 / libm::sqrt(v),
        ActFunc::Erf => libm::erf(v),
        ActFunc::Sin => libm::sin(v),
        ActFunc::GeluDx => {
            let density = libm::exp(-0.5 * v * v) / (2.0 * std::f64::consts::PI).sqrt();
            0.5 * libm::erfc(-v / std::f64::consts::SQRT_2) + vanishing(v, density)
        }
        ActFunc::GeluApprxSigmoid => times_gate(v, sigmoid(GELU_SIGMOID_SLOPE * v)),
        ActFunc::GeluApprxSigmoidDx => {
            let t = GELU_SIGMOID_SLOPE * v;
            sigmoid(t) + vanishing(t, sigmoid(t) * sigmoid(-t))
        }
        ActFunc::SiluDx => sigmoid(v) + vanishing(v, sigmoid(v) * sigmoid(-v)),
        ActFunc::Mish => times_gate(v, libm::tanh(softplus(v))),
        ActFunc::ErfDx => std::f64::consts::FRAC_2_SQRT_PI * libm::exp(-v * v),
        ActFunc::Arctan => libm::atan(v),
        ActFunc::Cos => libm::cos(v),
        ActFunc::Tan => libm::tan(v),
        ActFunc::Floor => return x.floor(),
        ActFunc::Ceil => return x.ceil(),
        ActFunc::Trunc => return x.trunc(),
    };
    y as f32
}

/// The slope of the sigmoid approximation of gelu, `x * sigmoid(1.702 x)`.
const GELU_SIGMOID_SLOPE: f64 = 1.702;

/// `ln(1 + e^x)` in f64, without overflow for large `x`.
fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + libm::log1p(libm::exp(-x))
    } else {
        libm::log1p(libm::exp(x))
    }
}

/// `x * f` of a factor `f` that vanishes faster than `x` grows: its limit 0 at infinite `x`
/// (not the NaN of `inf * 0`).
fn vanishing(x: f64, f: f64) -> f64 {
    if x.is_infinite() {
        0.0
    } else {
        x * f
    }
}

/// `x * gate` of a gate that goes to 0 as `x` goes to -inf: its limit -0 there (not the NaN
/// of `-inf * 0`).
fn times_gate(x: f64, gate: f64) -> f64 {
    if x == f64::NEG_INFINITY {
        -0.0
    } else {
        x * gate
    }
}

/// `1 / (1 + e^-x)` in f64.
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + libm::exp(-x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_give_one_and_zero_and_nan_compares_false() {
        assert_eq!(binary(AluOp::IsGe, 2.0, 2.0), 1.0);
        assert_eq!(binary(AluOp::IsLt, 2.0, 2.0), 0.0);
        assert_eq!(binary(AluOp::IsEqual, f32::NAN, f32::NAN), 0.0);
        assert_eq!(binary(AluOp::NotEqual, f32::NAN, 1.0), 1.0);
        assert!(binary(AluOp::Min, f32::NAN, 1.0).is_nan());
        assert_eq!(binary(AluOp::Divide, 1.0, 3.0), 1.0f32 / 3.0);
    }

    #[test]
    fn bit_operators_work_on_the_element_width() {
        assert_eq!(bits(AluOp::LeftShift, 0x81, 1, 8), 0x02);
        assert_eq!(bits(AluOp::RightShift, 0xFFFF_FFFF, 31, 32), 1);
        assert_eq!(bits(AluOp::RightShift, 0xFFFF, 16, 16), 0);
        assert_eq!(bits(AluOp::BitwiseXor, 0xF0F0, 0xFFFF, 16), 0x0F0F);
        assert_eq!(bits(AluOp::Multiply, 0x8000_0000, 2, 32), 0);
        assert_eq!(bits(AluOp::Subtract, 0, 1, 32), u32::MAX);
    }

    #[test]
    fn stable_forms_keep_tiny_tails() {
        // gelu(-10) = -10 * Phi(-10) ~ -7.62e-23: a 1 + erf form would give 0.
        let g = activate(ActFunc::Gelu, -10.0);
        assert!(g < 0.0 && (g / -7.619_853e-23 - 1.0).abs() < 1e-5, "{g}");
        assert!(activate(ActFunc::GeluApprxTanh, -10.0) < 0.0);
        assert_eq!(activate(ActFunc::Softplus, 100.0), 100.0);
        assert_eq!(activate(ActFunc::Silu, f32::NEG_INFINITY), 0.0);
        assert_eq!(activate(ActFunc::Sign, -0.0).to_bits(), (-0.0f32).to_bits());
    }
}
