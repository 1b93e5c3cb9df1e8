//! `ntile hw show` and `--hw FILE.json`: the hardware profile the planner's estimate and the
//! cycle model read, printed with units and sources, and overridden from a JSON file.
//!
//! The JSON form is one object whose keys are profile keys, each a number in the key's unit
//! or an object `{"value": N, "unit": "U"}` (the unit, when given, must be the key's; the
//! `source` and `about` fields that `hw show --json` writes are accepted and ignored). An
//! optional `"target"` must name the target being used. Geometry keys may appear only with
//! their target's value, so the output of `hw show --json` loads back unchanged.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use penguin::target::{Entry, HwProfile, ProfileError, GEOMETRY};
use penguin::Target;
use serde_json::{Map, Value};

use crate::error::CliError;

/// The help text on the JSON form, shared by every command that takes `--hw`.
pub const HW_HELP: &str = "A JSON object of hardware profile keys to override: each a number in the key's unit, \
or {\"value\": N, \"unit\": \"U\"} (e.g. {\"dma_fixed_ns\": 1000, \"hbm_bytes_per_ns\": {\"value\": 400, \"unit\": \"B/ns\"}}); \
`ntile hw show` lists the keys, units and ranges";

/// Flags of `ntile hw`.
#[derive(Args, Clone, Debug)]
pub struct HwArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: HwCommand,
}

/// `ntile hw` subcommands.
#[derive(Subcommand, Clone, Debug)]
pub enum HwCommand {
    /// Print a target's hardware profile: every value with its unit and source
    Show(ShowArgs),
}

/// Flags of `ntile hw show`.
#[derive(Args, Clone, Debug)]
pub struct ShowArgs {
    /// Target: trn1, trn2 or trn3
    #[arg(long, default_value = "trn2")]
    pub target: Target,
    /// Print JSON (loadable with --hw) instead of a table
    #[arg(long)]
    pub json: bool,
    /// Show the profile with these overrides applied
    #[arg(long, value_name = "FILE.json", long_help = HW_HELP)]
    pub hw: Option<PathBuf>,
}

/// Run `ntile hw`.
pub fn run(args: &HwArgs) -> Result<String, CliError> {
    match &args.command {
        HwCommand::Show(show) => {
            let profile = load_profile(show.hw.as_deref(), show.target)?;
            if show.json {
                profile_json(&profile)
            } else {
                Ok(profile_table(&profile))
            }
        }
    }
}

/// The target's built-in profile with the overrides of `path` (if any) applied.
pub fn load_profile(path: Option<&Path>, target: Target) -> Result<HwProfile, CliError> {
    let mut profile = target.profile();
    if let Some(path) = path {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
        apply_overrides(&mut profile, &text)
            .map_err(|e| CliError::usage(format!("{}: {}", path.display(), e.message)))?;
    }
    Ok(profile)
}

/// Apply the overrides of a JSON text (the form in the module doc) to `profile`.
pub fn apply_overrides(profile: &mut HwProfile, text: &str) -> Result<(), CliError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| CliError::usage(format!("not a JSON hardware profile: {e}")))?;
    let Value::Object(map) = value else {
        return Err(CliError::usage("a hardware profile must be a JSON object of keys"));
    };
    for (key, v) in &map {
        if key == "target" {
            let named = v.as_str().and_then(|s| s.parse::<Target>().ok());
            if named != Some(profile.target) {
                return Err(CliError::usage(format!(
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
fn entry_value(key: &str, v: &Value) -> Result<(f64, Option<String>), CliError> {
    let bad = |what: &str| CliError::usage(format!("`{key}`: {what}"));
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

/// A rejected override as a usage error (exit 2) naming the key.
#[expect(clippy::needless_pass_by_value, reason = "a map_err adapter")]
pub fn profile_error(e: ProfileError) -> CliError {
    CliError::usage(e.to_string())
}

/// The profile as JSON in the form [`apply_overrides`] reads.
pub fn profile_json(profile: &HwProfile) -> Result<String, CliError> {
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
        .map_err(|e| CliError::internal(format!("cannot encode the profile: {e}")))
}

/// The profile as a table: key, value, unit, source.
pub fn profile_table(profile: &HwProfile) -> String {
    let mut s = format!(
        "hardware profile of {} (geometry is fixed; timing keys can be overridden with --hw)\n",
        profile.target
    );
    s += &format!("{:<28} {:>12} {:<11} {:<17} {}\n", "key", "value", "unit", "range", "source");
    for e in profile.entries() {
        let range = if e.fixed {
            "fixed".to_string()
        } else {
            format!("{}..={}", fmt_value(e.info.min), fmt_value(e.info.max))
        };
        s += &format!(
            "{:<28} {:>12} {:<11} {range:<17} {}\n",
            e.info.name,
            fmt_value(e.value),
            e.info.unit,
            e.info.source
        );
    }
    s
}

fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e12 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}").trim_end_matches('0').to_string()
    }
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
            assert_eq!(e.code, crate::error::EXIT_USAGE, "{text}");
            assert!(e.message.contains(&format!("`{key}`")), "{text}: {}", e.message);
        }
        assert!(apply_overrides(&mut Target::Trn2.profile(), "[1]").is_err());
    }
}
