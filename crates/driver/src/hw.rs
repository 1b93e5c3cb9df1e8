//! Hardware profiles as JSON: overrides of a target's built-in profile (each key a number in
//! its unit, or `{"value": N, "unit": "U"}`), and a whole profile in the form overrides read.

use penguin::target::{Entry, HwProfile, ProfileError, GEOMETRY};
use penguin::Target;
use serde_json::{Map, Value};

use crate::error::DriverError;

/// Apply the overrides of a JSON text (the form in the module doc) to `profile`.
pub fn apply_overrides(profile: &mut HwProfile, text: &str) -> Result<(), DriverError> {
    let value: Value = crate::json::from_str(text)
        .map_err(|e| DriverError::input(format!("line {}, column {}: {}", e.line, e.column, e.message)))?;
    let Value::Object(map) = value else {
        return Err(DriverError::input("a hardware profile must be a JSON object of keys"));
    };
    for (key, v) in &map {
        if key == "target" {
            let named = v.as_str().and_then(|s| s.parse::<Target>().ok());
            if named != Some(profile.target) {
                return Err(DriverError::input(format!(
                    "`target` is {v} but the profile is for {} (drop the key or use --target)",
                    profile.target
                )));
            }
            continue;
        }
        let (number, unit) = entry_value(key, v)?;
        if GEOMETRY.iter().any(|g| g.name == key) {
            let current = profile.entries().into_iter().find(|e| e.info.name == key).map(|e| e.value);
            if current == Some(number) && unit.as_deref().is_none_or(|u| Some(u) == unit_of(key)) {
                continue;
            }
        }
        profile.set(key, number, unit.as_deref()).map_err(profile_error)?;
    }
    Ok(())
}

fn unit_of(key: &str) -> Option<&'static str> {
    GEOMETRY.iter().chain(penguin::target::KEYS).find(|k| k.name == key).map(|k| k.unit)
}

/// A key's number and unit from `N` or `{"value": N, "unit": "U"}`.
fn entry_value(key: &str, v: &Value) -> Result<(f64, Option<String>), DriverError> {
    let bad = |what: &str| DriverError::input(format!("`{key}`: {what}"));
    match v {
        Value::Number(n) => Ok((n.as_f64().ok_or_else(|| bad("not a number"))?, None)),
        Value::Object(fields) => {
            let number = fields.get("value").and_then(Value::as_f64).ok_or_else(|| bad("needs a numeric `value`"))?;
            let unit = match fields.get("unit") {
                None => None,
                Some(Value::String(u)) => Some(u.clone()),
                Some(_) => return Err(bad("`unit` must be a string")),
            };
            if let Some(extra) = fields.keys().find(|f| !["value", "unit", "source", "about"].contains(&f.as_str())) {
                return Err(bad(&format!("unknown field `{extra}` (expected value, unit)")));
            }
            Ok((number, unit))
        }
        _ => Err(bad("expected a number or {\"value\": N, \"unit\": \"U\"}")),
    }
}

/// A rejected override as the user's error, naming the key.
#[expect(clippy::needless_pass_by_value, reason = "a map_err adapter")]
pub fn profile_error(e: ProfileError) -> DriverError {
    DriverError::input(e.to_string())
}

/// The profile as JSON in the form [`apply_overrides`] reads.
pub fn profile_json(profile: &HwProfile) -> Result<String, DriverError> {
    let mut map = Map::new();
    map.insert("target".into(), Value::String(profile.target.to_string()));
    for Entry { info, value, .. } in profile.entries() {
        let mut o = Map::new();
        o.insert("value".into(), Value::from(value));
        o.insert("unit".into(), Value::String(info.unit.into()));
        o.insert("source".into(), Value::String(info.source.into()));
        o.insert("about".into(), Value::String(info.about.trim().into()));
        map.insert(info.name.into(), Value::Object(o));
    }
    serde_json::to_string_pretty(&Value::Object(map))
        .map(|s| s + "\n")
        .map_err(|e| DriverError::internal(format!("cannot encode the profile: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_json_loads_back_unchanged() {
        let p = Target::Trn1.profile();
        let json = profile_json(&p).unwrap();
        let mut q = Target::Trn1.profile();
        apply_overrides(&mut q, &json).unwrap();
        assert_eq!(p, q);
    }

    #[test]
    fn both_forms_override() {
        let mut p = Target::Trn2.profile();
        apply_overrides(&mut p, r#"{"dma_fixed_ns": 1000, "hbm_bytes_per_ns": {"value": 400, "unit": "B/ns"}}"#)
            .unwrap();
        assert_eq!((p.dma_fixed_ns, p.hbm_bytes_per_ns), (1000.0, 400.0));
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            (r#"{"dma_fixed": 1}"#, "dma_fixed"),
            (r#"{"dma_fixed_ns": {"value": 1.3, "unit": "us"}}"#, "dma_fixed_ns"),
            (r#"{"pe_ghz": 0}"#, "pe_ghz"),
            (r#"{"pe_ghz": "fast"}"#, "pe_ghz"),
            (r#"{"sbuf_partition_bytes": 1}"#, "sbuf_partition_bytes"),
            (r#"{"dma_queue_depth": 1.5}"#, "dma_queue_depth"),
            (r#"{"target": "trn1"}"#, "target"),
        ];
        for (text, key) in cases {
            let mut p = Target::Trn2.profile();
            let e = apply_overrides(&mut p, text).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::Input, "{text}");
            assert!(e.to_string().contains(&format!("`{key}`")), "{text}: {e}");
        }
        assert!(apply_overrides(&mut Target::Trn2.profile(), "[1]").is_err());
        // A key given twice is refused, not the last one taken.
        let e = apply_overrides(&mut Target::Trn2.profile(), "{\"pe_ghz\": 1,\n \"pe_ghz\": 2}").unwrap_err();
        assert_eq!(e.to_string(), "line 2, column 9: the key `pe_ghz` is given twice in one object");
    }
}
