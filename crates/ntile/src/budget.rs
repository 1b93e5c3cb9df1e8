//! The memory budget as the CLI takes it: `--max-memory` parsed, and input files refused
//! before they are read when reading them alone would exceed the budget (the rest of the
//! budget is the driver's, [`driver::budget`]).

use driver::budget::human;

use crate::error::CliError;

/// Parse `--max-memory`: a byte count with an optional `K`, `M`, `G` or `T` suffix (powers of
/// 1024; `KiB`, `MB` and the like are read the same way).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let value: u64 = num.parse().map_err(|_| format!("`{s}` is not a byte count (e.g. 8000000000 or 8G)"))?;
    let shift = match unit.trim().to_ascii_lowercase().trim_end_matches("ib").trim_end_matches('b') {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (use K, M, G or T)")),
    };
    value.checked_mul(1 << shift).ok_or_else(|| format!("`{s}` is too large"))
}

/// Refuse input arrays whose reading alone would exceed `budget`: a file is held as read and
/// as f32 values (twice its size again for float16), so it is charged three times its size.
pub fn check_files(paths: &[&std::path::Path], budget: u64) -> Result<(), CliError> {
    let bytes: u128 = paths.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| u128::from(m.len())).sum();
    let need = bytes.saturating_mul(3);
    if need <= u128::from(budget) {
        return Ok(());
    }
    Err(over_budget(bytes, need, budget))
}

/// Refuse in-memory input arrays (the Python module's) whose copies need `need` bytes over
/// `budget`, before any copy is made.
pub fn check_bytes(need: u128, budget: u64) -> Result<(), CliError> {
    if need <= u128::from(budget) {
        return Ok(());
    }
    Err(CliError::usage(format!(
        "the input arrays need about {} to copy, over the memory budget of {}",
        human(need),
        human(u128::from(budget))
    )))
}

fn over_budget(bytes: u128, need: u128, budget: u64) -> CliError {
    CliError::usage(format!(
        "the input arrays ({}) need about {} to read, over the memory budget of {}; \
         raise --max-memory BYTES if the machine has the memory",
        human(bytes),
        human(need),
        human(u128::from(budget))
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_parse_with_units() {
        assert_eq!(parse_bytes("123"), Ok(123));
        assert_eq!(parse_bytes("8G"), Ok(8 << 30));
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("2kb"), Ok(2048));
        assert!(parse_bytes("8X").unwrap_err().contains("unknown unit `X`"));
        assert!(parse_bytes("G").unwrap_err().contains("not a byte count"));
        assert!(parse_bytes("99999999999T").unwrap_err().contains("too large"));
    }
}
