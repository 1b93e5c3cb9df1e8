//! The value types of the engine instructions real kernels use: the ALU operators shared by
//! `tensor_tensor`, `tensor_scalar` and `tensor_reduce` ([`AluOp`], named as
//! `nki.language` names them), the ScalarE activation functions ([`ActFunc`]), an operand
//! that is an fp32 immediate or a `[P, 1]` column ([`ScalarOperand`]) and the affine index
//! pattern of `iota` and `affine_select` ([`AffinePattern`]). Their semantics and costs, with
//! the documents they come from, are in `docs/isa-costs.md`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::tile::InstTile;

/// What kind of operator an [`AluOp`] is (the NKI ISA operator table's categories).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AluClass {
    /// Binary arithmetic: inputs read as fp32, the result rounded once to the destination.
    Arithmetic,
    /// A comparison: 1.0 where it holds, 0.0 elsewhere (arithmetic, fp32 inputs).
    Compare,
    /// Bit-pattern operator on integer tiles (no conversion).
    Bitvec,
    /// Unary arithmetic (`tensor_scalar` only; the operand is ignored).
    Unary,
}

/// Declares the operators once: variant, text name, class, whether it may reduce.
macro_rules! alu_ops {
    ($( $(#[doc = $doc:literal])* $v:ident = $name:literal, $class:ident, $reduce:literal; )*) => {
        /// An ALU operator of the compute engines (the NKI ISA "Supported Math Operators").
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum AluOp {
            $( $(#[doc = $doc])* $v, )*
        }

        impl AluOp {
            /// Every operator, in the order of the table.
            pub const ALL: &'static [AluOp] = &[$(AluOp::$v),*];

            /// The text name (the `nki.language` name of the operator).
            pub fn name(self) -> &'static str {
                match self {
                    $( AluOp::$v => $name, )*
                }
            }

            /// The operator's class.
            pub fn class(self) -> AluClass {
                match self {
                    $( AluOp::$v => AluClass::$class, )*
                }
            }

            /// Whether the NKI operator table marks it as a legal reduction operator.
            pub fn reduces(self) -> bool {
                match self {
                    $( AluOp::$v => $reduce, )*
                }
            }
        }
    };
}

alu_ops! {
    /// `a + b`.
    Add = "add", Arithmetic, true;
    /// `a - b`.
    Subtract = "subtract", Arithmetic, true;
    /// `a * b`.
    Multiply = "multiply", Arithmetic, true;
    /// `max(a, b)` (NaN if either is NaN, so uninitialized data stays visible).
    Max = "maximum", Arithmetic, true;
    /// `min(a, b)` (NaN if either is NaN).
    Min = "minimum", Arithmetic, true;
    /// `a / b`.
    Divide = "divide", Arithmetic, false;
    /// `a ** b`.
    Pow = "power", Arithmetic, false;
    /// `a mod b` with the sign of `b` (Python's `%`, numpy's `mod`; `nl.mod`, beyond the ISA's
    /// table as `divide` is).
    Mod = "mod", Arithmetic, false;
    /// `a mod b` with the sign of `a` (C's `fmod`; `nl.fmod`, beyond the table).
    Fmod = "fmod", Arithmetic, false;
    /// `1` when both are nonzero, else `0` (NaN counts as nonzero).
    LogicalAnd = "logical_and", Arithmetic, true;
    /// `1` when either is nonzero, else `0`.
    LogicalOr = "logical_or", Arithmetic, true;
    /// `1` when exactly one is nonzero, else `0`.
    LogicalXor = "logical_xor", Arithmetic, true;
    /// `max(|a|, |b|)` (NaN if either is NaN).
    AbsMax = "abs_max", Arithmetic, false;
    /// `min(|a|, |b|)` (NaN if either is NaN).
    AbsMin = "abs_min", Arithmetic, false;
    /// `a == b`.
    IsEqual = "equal", Compare, false;
    /// `a != b`.
    NotEqual = "not_equal", Compare, false;
    /// `a > b`.
    IsGt = "greater", Compare, false;
    /// `a >= b`.
    IsGe = "greater_equal", Compare, false;
    /// `a < b`.
    IsLt = "less", Compare, false;
    /// `a <= b`.
    IsLe = "less_equal", Compare, false;
    /// `a & b` on bit patterns.
    BitwiseAnd = "bitwise_and", Bitvec, true;
    /// `a | b` on bit patterns.
    BitwiseOr = "bitwise_or", Bitvec, true;
    /// `a ^ b` on bit patterns.
    BitwiseXor = "bitwise_xor", Bitvec, true;
    /// `a << b` (logical; 0 once `b` reaches the element's width).
    LeftShift = "left_shift", Bitvec, false;
    /// `a >> b` (logical; 0 once `b` reaches the element's width).
    RightShift = "right_shift", Bitvec, false;
    /// `|a|`.
    Abs = "abs", Unary, false;
    /// `a * a`.
    Square = "square", Unary, false;
    /// `max(a, 0)`.
    Relu = "relu", Unary, false;
    /// `1 / sqrt(a)`.
    Rsqrt = "rsqrt", Unary, false;
    /// `1 / a`.
    Reciprocal = "reciprocal", Unary, false;
}

impl AluOp {
    /// The operator named `name`; `mul` and `max`, the spellings of ntile's first three
    /// operators, are read as `multiply` and `maximum`.
    pub fn from_name(name: &str) -> Option<AluOp> {
        match name {
            "mul" => Some(AluOp::Multiply),
            "max" => Some(AluOp::Max),
            _ => Self::ALL.iter().copied().find(|op| op.name() == name),
        }
    }

    /// The names, comma separated (for error messages).
    pub fn names() -> String {
        Self::ALL.iter().map(|op| op.name()).collect::<Vec<_>>().join(", ")
    }

    /// Whether the operator is a comparison usable by `affine_select` against 0.
    pub fn is_comparison(self) -> bool {
        self.class() == AluClass::Compare
    }
}

impl fmt::Display for AluOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Declares the activation functions once: variant, text name, documented valid input range.
macro_rules! act_funcs {
    ($( $(#[doc = $doc:literal])* $v:ident = $name:literal, $range:expr; )*) => {
        /// A ScalarE activation function (the NKI ISA "Supported Activation Functions").
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum ActFunc {
            $( $(#[doc = $doc])* $v, )*
        }

        impl ActFunc {
            /// Every function, in the order of the table.
            pub const ALL: &'static [ActFunc] = &[$(ActFunc::$v),*];

            /// The text name (the `nki.language` name of the function).
            pub fn name(self) -> &'static str {
                match self {
                    $( ActFunc::$v => $name, )*
                }
            }

            /// The documented valid input range, where the docs give one narrower than all
            /// numbers: outside it the Scalar Engine "will generate invalid output results".
            pub fn valid_range(self) -> Option<ValidRange> {
                match self {
                    $( ActFunc::$v => $range, )*
                }
            }
        }
    };
}

act_funcs! {
    /// `x` (`nl.copy`, the identity).
    Copy = "copy", None;
    /// `e^x`.
    Exp = "exp", None;
    /// `ln x`, valid on `[2^-64, 2^64]`.
    Log = "log", Some(ValidRange::between(-64, 64));
    /// `tanh x`.
    Tanh = "tanh", None;
    /// `1 / (1 + e^-x)`.
    Sigmoid = "sigmoid", None;
    /// `max(x, 0)`.
    Relu = "relu", None;
    /// `x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))`.
    Gelu = "gelu", None;
    /// `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`.
    GeluApprxTanh = "gelu_apprx_tanh", None;
    /// `x / (1 + e^-x)`.
    Silu = "silu", None;
    /// `ln(1 + e^x)`.
    Softplus = "softplus", None;
    /// `x * x`.
    Square = "square", None;
    /// `sqrt x`, valid on `[2^-116, 2^118]`.
    Sqrt = "sqrt", Some(ValidRange::between(-116, 118));
    /// `1 / sqrt x`, valid on `[2^-87, 2^97]`.
    Rsqrt = "rsqrt", Some(ValidRange::between(-87, 97));
    /// `1 / x`, valid on `+-[2^-42, 2^42]`.
    Reciprocal = "reciprocal", Some(ValidRange { lo: -42, hi: 42, both_signs: true });
    /// `|x|`.
    Abs = "abs", None;
    /// `-1`, `0` or `1` (`0` for `-0.0`; NaN for NaN).
    Sign = "sign", None;
    /// `erf x`.
    Erf = "erf", None;
    /// `sin x`, valid on `[-pi, pi]` (the engine does no range reduction).
    Sin = "sin", Some(ValidRange::PI);
    /// `d/dx gelu = Phi(x) + x phi(x)` (`phi` the standard normal density).
    GeluDx = "gelu_dx", None;
    /// `x * sigmoid(1.702 x)`.
    GeluApprxSigmoid = "gelu_apprx_sigmoid", None;
    /// `d/dx (x * sigmoid(1.702 x)) = s + 1.702 x s (1 - s)`, `s = sigmoid(1.702 x)`.
    GeluApprxSigmoidDx = "gelu_apprx_sigmoid_dx", None;
    /// `d/dx silu = s + x s (1 - s)`, `s = sigmoid(x)`.
    SiluDx = "silu_dx", None;
    /// `x * tanh(softplus(x))`.
    Mish = "mish", None;
    /// `2 / sqrt(pi) * e^(-x^2)`.
    ErfDx = "erf_dx", None;
    /// `arctan x`, valid on `[-pi/2, pi/2]`.
    Arctan = "arctan", Some(ValidRange::HALF_PI);
    /// `cos x` (`nl.cos`; not in the ISA's table, run on the Scalar Engine as the others).
    Cos = "cos", None;
    /// `tan x` (`nl.tan`; not in the ISA's table).
    Tan = "tan", None;
    /// The largest integer `<= x` (`nl.floor`; not in the ISA's table).
    Floor = "floor", None;
    /// The smallest integer `>= x` (`nl.ceil`; not in the ISA's table).
    Ceil = "ceil", None;
    /// `x` rounded toward zero (`nl.trunc`; not in the ISA's table).
    Trunc = "trunc", None;
}

impl ActFunc {
    /// The function named `name`.
    pub fn from_name(name: &str) -> Option<ActFunc> {
        Self::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// The names, comma separated (for error messages).
    pub fn names() -> String {
        Self::ALL.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ")
    }
}

impl fmt::Display for ActFunc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A documented valid input range: `[2^lo, 2^hi]` (and its negation when `both_signs`), or
/// `[-pi, pi]` ([`ValidRange::PI`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidRange {
    /// Exponent of the smallest magnitude (`i32::MIN` for the `[-pi, pi]` range).
    pub lo: i32,
    /// Exponent of the largest magnitude.
    pub hi: i32,
    /// Whether negative values of the same magnitudes are valid too.
    pub both_signs: bool,
}

impl ValidRange {
    /// `[-pi, pi]` (sin).
    pub const PI: ValidRange = ValidRange { lo: i32::MIN, hi: 0, both_signs: true };
    /// `[-pi/2, pi/2]` (arctan).
    pub const HALF_PI: ValidRange = ValidRange { lo: i32::MIN, hi: -1, both_signs: true };

    /// For a range around 0 given in multiples of pi ([`Self::PI`], [`Self::HALF_PI`]), its
    /// bound `pi * 2^hi`.
    pub fn pi_bound(self) -> Option<f64> {
        (self.lo == i32::MIN).then(|| std::f64::consts::PI * 2f64.powi(self.hi))
    }

    const fn between(lo: i32, hi: i32) -> Self {
        ValidRange { lo, hi, both_signs: false }
    }

    /// Whether `x` lies in the range (NaN is let through: it stays NaN).
    pub fn contains(self, x: f64) -> bool {
        if x.is_nan() {
            return true;
        }
        if let Some(bound) = self.pi_bound() {
            return x.abs() <= bound;
        }
        let m = if self.both_signs { x.abs() } else { x };
        m >= 2f64.powi(self.lo) && m <= 2f64.powi(self.hi)
    }
}

impl fmt::Display for ValidRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Self::PI {
            return f.write_str("[-pi, pi]");
        }
        if *self == Self::HALF_PI {
            return f.write_str("[-pi/2, pi/2]");
        }
        let sign = if self.both_signs { "+-" } else { "" };
        write!(f, "{sign}[2^{}, 2^{}]", self.lo, self.hi)
    }
}

/// An operand that is an fp32 immediate or a `[P, 1]` column broadcast along the free axes
/// (the `scale`/`bias` of `activation`, the `operand0`/`operand1` of `tensor_scalar`).
///
/// The immediate is kept as written (an `f64`, so that text round-trips); the engines read it
/// rounded to fp32 (RNE), as the hardware holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScalarOperand<T = InstTile> {
    /// A compile-time constant.
    Imm(#[serde(with = "crate::json_f64")] f64),
    /// One element per partition, broadcast along the free axes.
    Tile(T),
}

impl<T> ScalarOperand<T> {
    /// The column, if this is one.
    pub fn tile(&self) -> Option<&T> {
        match self {
            ScalarOperand::Tile(t) => Some(t),
            ScalarOperand::Imm(_) => None,
        }
    }

    /// The column, mutably, if this is one.
    pub fn tile_mut(&mut self) -> Option<&mut T> {
        match self {
            ScalarOperand::Tile(t) => Some(t),
            ScalarOperand::Imm(_) => None,
        }
    }

    /// The same operand with its column mapped (an immediate stays as it is).
    pub fn try_map<U, E>(&self, f: impl FnOnce(&T) -> Result<U, E>) -> Result<ScalarOperand<U>, E> {
        Ok(match self {
            ScalarOperand::Imm(v) => ScalarOperand::Imm(*v),
            ScalarOperand::Tile(t) => ScalarOperand::Tile(f(t)?),
        })
    }

    /// Whether this is the immediate `v`.
    pub fn is_imm(&self, v: f64) -> bool {
        matches!(self, ScalarOperand::Imm(x) if x.to_bits() == v.to_bits())
    }
}

/// One `[step, num]` dimension of an [`AffinePattern`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AffineDim {
    /// Added to the value per index (int32).
    pub step: i32,
    /// Number of indices.
    pub num: u32,
}

/// The affine free-axis pattern of `iota` and `affine_select`: up to 4 `[step, num]`
/// dimensions, outermost first, over the free elements of the destination in their
/// enumeration order (so their counts multiply to its elements per partition). Element
/// `(i_0, ..., i_k)` of partition `p` has the value
/// `offset + channel_multiplier * p + sum_d step_d * i_d`, computed in int32.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AffinePattern(pub Vec<AffineDim>);

/// The most dimensions an [`AffinePattern`] has (the NKI pattern is 4-d).
pub const MAX_PATTERN_DIMS: usize = 4;

impl AffinePattern {
    /// The number of elements it enumerates, saturating at `u64::MAX`.
    pub fn elems(&self) -> u64 {
        self.0.iter().fold(1u64, |n, d| n.saturating_mul(u64::from(d.num)))
    }
}

impl fmt::Display for AffinePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}[{},{}]", d.step, d.num)?;
        }
        f.write_str("]")
    }
}

/// The error for a malformed affine pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "pattern `{0}` is not a list of 1 to 4 `[step,num]` pairs such as `[[1,64],[-1,8]]` (int32 steps, counts >= 1)"
)]
pub struct BadPattern(pub String);

impl FromStr for AffinePattern {
    type Err = BadPattern;

    /// `[[step,num],...]` with no spaces (one attribute value), as NKI writes a pattern.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadPattern(s.to_string());
        let inner = s.strip_prefix("[[").and_then(|r| r.strip_suffix("]]")).ok_or_else(bad)?;
        let mut dims = Vec::new();
        for pair in inner.split("],[") {
            let (step, num) = pair.split_once(',').ok_or_else(bad)?;
            let step: i32 = step.trim().parse().map_err(|_| bad())?;
            let num: u32 = num.trim().parse().map_err(|_| bad())?;
            if num == 0 {
                return Err(bad());
            }
            dims.push(AffineDim { step, num });
        }
        if dims.len() > MAX_PATTERN_DIMS {
            return Err(bad());
        }
        Ok(AffinePattern(dims))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_legacy_spellings_read() {
        for &op in AluOp::ALL {
            assert_eq!(AluOp::from_name(op.name()), Some(op));
        }
        assert_eq!(AluOp::from_name("mul"), Some(AluOp::Multiply));
        assert_eq!(AluOp::from_name("max"), Some(AluOp::Max));
        assert_eq!(AluOp::from_name("min"), None);
        for &f in ActFunc::ALL {
            assert_eq!(ActFunc::from_name(f.name()), Some(f));
        }
    }

    #[test]
    fn valid_ranges_are_the_documented_ones() {
        let log = ActFunc::Log.valid_range().unwrap();
        assert!(log.contains(2f64.powi(-64)) && log.contains(2f64.powi(64)) && log.contains(f64::NAN));
        assert!(!log.contains(0.0) && !log.contains(-1.0) && !log.contains(2f64.powi(65)));
        let rec = ActFunc::Reciprocal.valid_range().unwrap();
        assert!(rec.contains(-1.0) && !rec.contains(0.0) && !rec.contains(2f64.powi(43)));
        assert!(ValidRange::PI.contains(-3.0) && !ValidRange::PI.contains(3.2));
        assert_eq!(rec.to_string(), "+-[2^-42, 2^42]");
        assert_eq!(ActFunc::Exp.valid_range(), None);
    }

    #[test]
    fn patterns_parse_and_print() {
        let p: AffinePattern = "[[-1,128],[1,4]]".parse().unwrap();
        assert_eq!(p.0, vec![AffineDim { step: -1, num: 128 }, AffineDim { step: 1, num: 4 }]);
        assert_eq!(p.to_string(), "[[-1,128],[1,4]]");
        assert_eq!(p.elems(), 512);
        for bad in ["[1,2]", "[[1,0]]", "[[1,2],[3]]", "[[1,2],[1,2],[1,2],[1,2],[1,2]]", "[[x,2]]"] {
            assert!(bad.parse::<AffinePattern>().is_err(), "{bad}");
        }
    }
}
