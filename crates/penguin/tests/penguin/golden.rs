//! Golden float conversions: `DType::{decode, encode}` against numpy + ml_dtypes vectors.
//!
//! The vectors in `tests/golden/` are written by `cargo xtask golden`
//! (`xtask/python/golden.py`, whose docstring is the reference for the layout) and committed.
//! Every file is a flat array of little-endian records with no header:
//!
//! - `widen_<fmt>.bin`: one `u32` per pattern of the format, in pattern order: the f32 bits of
//!   that pattern widened by ml_dtypes (any NaN is stored as `0x7fc00000`).
//! - `bounds_<fmt>.bin`: records of (`u32` input f32 bits, the input encoded into `<fmt>` as a
//!   `u8`/`u16`): midpoints between neighbouring representable values and the f32 values just
//!   below and above them, the largest finite value, the overflow threshold and neighbours,
//!   subnormal edges, zero, inf and NaN. fp8 sets hold both signs; bf16 and fp16 sets hold only
//!   non-negative inputs, and the negative half is checked here by sign symmetry:
//!   `encode(-x) == encode(x) ^ sign_bit` (the generator asserts this holds for ml_dtypes).
//! - `cast_random.bin`: 200,000 records of (`u32` input, `u16` bf16, `u16` fp16, `u8` fp8e4m3,
//!   `u8` fp8e4m3fn, `u8` fp8e5m2), 11 bytes each.
//!
//! NaN results are compared by NaN-ness, never by payload; NaN-ness of an expected encoded
//! pattern is read from the format's widen file, not from the code under test. Representable
//! values are checked by encoding every non-NaN widened value back to its own pattern.
//!
//! [`CastMode::Saturate`] is checked on every golden input against the rule: it equals `Rne`
//! unless `Rne` gives inf (or, for fp8e4m3fn, NaN from a non-NaN input), where it gives +-max
//! with the input's sign; a NaN input stays NaN.

use std::fmt::Write as _;
use std::path::PathBuf;

use penguin::{CastMode, DType};

/// Mismatches printed per failing check; the total count is always reported.
const SHOWN: usize = 8;

/// One narrow float format as laid out in the golden files.
#[derive(Clone, Copy)]
struct Format {
    dtype: DType,
    /// Encoded width in bytes.
    width: usize,
    /// Byte offset of this format's output inside a `cast_random.bin` record.
    random_offset: usize,
}

const FORMATS: [Format; 5] = [
    Format { dtype: DType::Bf16, width: 2, random_offset: 4 },
    Format { dtype: DType::Fp16, width: 2, random_offset: 6 },
    Format { dtype: DType::Fp8e4m3, width: 1, random_offset: 8 },
    Format { dtype: DType::Fp8e4m3fn, width: 1, random_offset: 9 },
    Format { dtype: DType::Fp8e5m2, width: 1, random_offset: 10 },
];

const RANDOM_RECORD: usize = 11;
const RANDOM_RECORDS: usize = 200_000;

impl Format {
    fn sign_bit(self) -> u32 {
        1 << (8 * self.width - 1)
    }

    fn patterns(self) -> usize {
        1 << (8 * self.width)
    }
}

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name)
}

fn read_golden(name: &str) -> Vec<u8> {
    let path = golden_path(name);
    let read = std::fs::read(&path);
    if let Err(e) = &read {
        assert!(read.is_ok(), "cannot read {} ({e}); regenerate it with `cargo xtask golden`", path.display());
    }
    read.unwrap_or_default()
}

fn le(bytes: &[u8]) -> u32 {
    bytes.iter().rev().fold(0, |acc, &b| (acc << 8) | u32::from(b))
}

/// The reference widening of one format, read from its widen file.
struct Widen {
    format: Format,
    /// f32 bits of every pattern, indexed by pattern.
    f32_bits: Vec<u32>,
}

impl Widen {
    fn load(format: Format) -> Widen {
        let name = format!("widen_{}.bin", format.dtype);
        let bytes = read_golden(&name);
        assert_eq!(bytes.len(), 4 * format.patterns(), "{name}: expected one u32 per pattern");
        Widen { format, f32_bits: bytes.chunks_exact(4).map(le).collect() }
    }

    fn in_range(&self, pattern: u32) -> bool {
        (pattern as usize) < self.format.patterns()
    }

    fn value(&self, pattern: u32) -> f32 {
        f32::from_bits(self.f32_bits[pattern as usize])
    }

    fn is_nan(&self, pattern: u32) -> bool {
        self.value(pattern).is_nan()
    }

    /// Whether `got` is the expected encoding: equal bits, or both NaN patterns.
    fn same_encoding(&self, expected: u32, got: u32) -> bool {
        if !self.in_range(got) {
            return false;
        }
        expected == got || (self.is_nan(expected) && self.is_nan(got))
    }

    /// A pattern with its value, for failure messages.
    fn show(&self, pattern: u32) -> String {
        if self.in_range(pattern) {
            let digits = 2 + 2 * self.format.width;
            format!("{pattern:#0digits$x} ({:e})", self.value(pattern))
        } else {
            format!("{pattern:#x} (out of range for {})", self.format.dtype)
        }
    }

    /// The pattern of +max finite: the largest non-NaN, non-inf widened value.
    fn max_pattern(&self) -> u32 {
        let mut best = 0u32;
        for p in 0..self.format.patterns() as u32 {
            let v = self.value(p);
            if v.is_finite() && v > self.value(best) {
                best = p;
            }
        }
        best
    }
}

fn widen_tables() -> Vec<Widen> {
    FORMATS.into_iter().map(Widen::load).collect()
}

/// Collects mismatches of one check and fails with the first few of them.
struct Mismatches {
    what: String,
    count: usize,
    checked: usize,
    report: String,
}

impl Mismatches {
    fn new(what: impl Into<String>) -> Self {
        Mismatches { what: what.into(), count: 0, checked: 0, report: String::new() }
    }

    fn check(&mut self, ok: bool, describe: impl FnOnce() -> String) {
        self.checked += 1;
        if !ok {
            self.count += 1;
            if self.count <= SHOWN {
                let _ = writeln!(self.report, "  {}", describe());
            }
        }
    }

    fn finish(self) {
        assert!(self.checked > 0, "{}: no vectors were checked", self.what);
        assert!(
            self.count == 0,
            "{}: {} of {} vectors fail; first {}:\n{}",
            self.what,
            self.count,
            self.checked,
            self.count.min(SHOWN),
            self.report
        );
    }
}

/// Check `encode(x, Rne)` against the expected pattern for one format.
fn check_encode(m: &mut Mismatches, w: &Widen, x: f32, expected: u32) {
    let got = w.format.dtype.encode(x, CastMode::Rne);
    m.check(w.same_encoding(expected, got), || {
        format!("input {:#010x} ({x:e}): expected {}, got {}", x.to_bits(), w.show(expected), w.show(got))
    });
}

/// The (input, expected pattern) pairs of one format's bounds set.
fn bounds_set(format: Format) -> Vec<(f32, u32)> {
    let name = format!("bounds_{}.bin", format.dtype);
    let bytes = read_golden(&name);
    let record = 4 + format.width;
    assert_eq!(bytes.len() % record, 0, "{name}: not a whole number of {record}-byte records");
    bytes.chunks_exact(record).map(|r| (f32::from_bits(le(&r[..4])), le(&r[4..]))).collect()
}

/// The (input, expected pattern per format in `FORMATS` order) records of the random set.
fn random_set() -> Vec<(f32, [u32; 5])> {
    let bytes = read_golden("cast_random.bin");
    assert_eq!(bytes.len(), RANDOM_RECORD * RANDOM_RECORDS, "cast_random.bin: expected 200,000 11-byte records");
    bytes
        .chunks_exact(RANDOM_RECORD)
        .map(|r| {
            let outputs = FORMATS.map(|f| le(&r[f.random_offset..f.random_offset + f.width]));
            (f32::from_bits(le(&r[..4])), outputs)
        })
        .collect()
}

#[test]
fn decode_matches_ml_dtypes_for_every_pattern() {
    for w in widen_tables() {
        let d = w.format.dtype;
        let mut m = Mismatches::new(format!("{d} decode vs ml_dtypes (widen_{d}.bin)"));
        for p in 0..w.format.patterns() as u32 {
            let expected = w.value(p);
            let got = d.decode(p);
            let ok = if expected.is_nan() { got.is_nan() } else { got.to_bits() == expected.to_bits() };
            m.check(ok, || {
                format!(
                    "pattern {p:#06x}: expected {:#010x} ({expected:e}), got {:#010x} ({got:e})",
                    expected.to_bits(),
                    got.to_bits()
                )
            });
        }
        m.finish();
    }
}

#[test]
fn representable_values_encode_to_their_own_pattern() {
    for w in widen_tables() {
        let d = w.format.dtype;
        let mut m = Mismatches::new(format!("{d} encode of representable values (widen_{d}.bin)"));
        for p in 0..w.format.patterns() as u32 {
            let x = w.value(p);
            if x.is_nan() {
                continue;
            }
            check_encode(&mut m, &w, x, p);
        }
        m.finish();
    }
}

#[test]
fn encode_matches_ml_dtypes_at_rounding_boundaries() {
    for w in widen_tables() {
        let d = w.format.dtype;
        let sign = w.format.sign_bit();
        let mut m = Mismatches::new(format!("{d} encode vs ml_dtypes (bounds_{d}.bin)"));
        let mut flipped = Mismatches::new(format!("{d} encode of sign-flipped inputs vs ml_dtypes (bounds_{d}.bin)"));
        for (x, expected) in bounds_set(w.format) {
            check_encode(&mut m, &w, x, expected);
            check_encode(&mut flipped, &w, -x, expected ^ sign);
        }
        m.finish();
        flipped.finish();
    }
}

#[test]
fn encode_matches_ml_dtypes_on_random_inputs() {
    let tables = widen_tables();
    let set = random_set();
    for (i, w) in tables.iter().enumerate() {
        let mut m = Mismatches::new(format!("{} encode vs ml_dtypes (cast_random.bin)", w.format.dtype));
        for (x, expected) in &set {
            check_encode(&mut m, w, *x, expected[i]);
        }
        m.finish();
    }
}

#[test]
fn saturate_clamps_exactly_where_rne_overflows() {
    let tables = widen_tables();
    let random = random_set();
    for w in &tables {
        let d = w.format.dtype;
        let max = w.max_pattern();
        let mut inputs: Vec<f32> = random.iter().map(|(x, _)| *x).collect();
        for (x, _) in bounds_set(w.format) {
            inputs.extend([x, -x]);
        }
        inputs.extend(w.f32_bits.iter().map(|&b| f32::from_bits(b)));
        inputs.extend([f32::INFINITY, f32::NEG_INFINITY, f32::MAX, f32::MIN, f32::NAN, -f32::NAN]);

        let mut m = Mismatches::new(format!("{d} Saturate rule"));
        for x in inputs {
            let rne = d.encode(x, CastMode::Rne);
            let got = d.encode(x, CastMode::Saturate);
            if !w.in_range(rne) {
                // The Rne checks report this input; there is no Rne result to saturate.
                m.check(false, || format!("input {:#010x} ({x:e}): Rne gives {}", x.to_bits(), w.show(rne)));
                continue;
            }
            let expected = if x.is_nan() {
                rne
            } else if w.is_nan(rne) || w.value(rne).is_infinite() {
                max | if x.is_sign_negative() { w.format.sign_bit() } else { 0 }
            } else {
                rne
            };
            m.check(w.same_encoding(expected, got), || {
                format!(
                    "input {:#010x} ({x:e}): Rne gives {}, expected {}, got {}",
                    x.to_bits(),
                    w.show(rne),
                    w.show(expected),
                    w.show(got)
                )
            });
            if x.is_nan() {
                m.check(w.in_range(got) && w.is_nan(got), || {
                    format!("NaN input {:#010x} saturated to {}", x.to_bits(), w.show(got))
                });
            }
        }
        m.finish();
    }
}
