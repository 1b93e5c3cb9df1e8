//! Serde for an `f64` that may be NaN or infinite: JSON has no such numbers (serde_json
//! writes `null`, which then fails to load), so they travel as the strings `"NaN"`, `"inf"`
//! and `"-inf"`, the spellings of the text formats. Finite values stay JSON numbers.
//!
//! Use on a field as `#[serde(with = "penguin::json_f64")]`.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserializer, Serializer};

/// Write a finite value as a number, a non-finite one as `"NaN"`, `"inf"` or `"-inf"`.
pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(*v)
    } else {
        s.serialize_str(&v.to_string())
    }
}

/// Read a number, or one of the strings `"NaN"`, `"inf"`, `"-inf"` (also `"nan"`,
/// `"+inf"`, `"infinity"` in any case).
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_any(F64Visitor)
}

struct F64Visitor;

impl Visitor<'_> for F64Visitor {
    type Value = f64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number, or \"NaN\", \"inf\" or \"-inf\"")
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        match v.parse::<f64>() {
            Ok(x) if !x.is_finite() => Ok(x),
            _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }
}
