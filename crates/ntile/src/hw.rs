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
use penguin::target::HwProfile;
use penguin::Target;

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
                Ok(driver::hw::profile_json(&profile)?)
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
        driver::hw::apply_overrides(&mut profile, &text)
            .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
    }
    Ok(profile)
}

/// The profile as a table: key, value, unit, source.
pub fn profile_table(profile: &HwProfile) -> String {
    let mut s = format!(
        "hardware profile of {} (geometry is fixed; timing keys can be overridden with --hw; sources S1.. are \
         listed with their URLs in docs/hardware-sources.md)\n",
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

    /// The source keys (`S1`, `S25`, ...) a source text cites.
    fn keys(source: &str) -> Vec<String> {
        let b = source.as_bytes();
        let mut out = Vec::new();
        for (i, &c) in b.iter().enumerate() {
            let starts = c == b'S' && (i == 0 || !b[i - 1].is_ascii_alphanumeric());
            let digits = b[i + 1..].iter().take_while(|d| d.is_ascii_digit()).count();
            if starts && digits > 0 {
                out.push(source[i..i + 1 + digits].to_string());
            }
        }
        out
    }

    #[test]
    fn every_source_the_profiles_cite_is_on_the_sources_page() {
        let page = include_str!("../../../docs/hardware-sources.md");
        let mut cited = std::collections::BTreeSet::new();
        for target in [Target::Trn1, Target::Trn2, Target::Trn3] {
            for e in target.profile().entries() {
                cited.extend(keys(e.info.source));
            }
        }
        assert!(cited.len() >= 9, "{cited:?}");
        for key in &cited {
            let row = page.lines().find(|l| l.starts_with(&format!("| {key} |")));
            let row = row.unwrap_or_else(|| panic!("{key} is cited but not listed in docs/hardware-sources.md"));
            assert!(row.contains("https://"), "{key} has no public URL: {row}");
        }
        assert_eq!(keys("S1 (trn1 2.8), S3/S5 (4.7 TB/s), MSS2"), ["S1", "S3", "S5"]);
        assert!(profile_table(&Target::Trn2.profile()).contains("docs/hardware-sources.md"));
    }
}
