"""Golden float-conversion vectors for ntile, made with numpy + ml_dtypes (the independent reference).

Usage: python3 xtask/python/golden.py OUT_DIR   (normally through `cargo xtask golden`)

The vectors pin `penguin::DType::{decode, encode}` to `ml_dtypes` `astype` for the five narrow
float formats. Format names, reference dtypes and encoded widths (in bytes):

  bf16       ml_dtypes.bfloat16       2
  fp16       numpy.float16            2
  fp8e4m3    ml_dtypes.float8_e4m3    1   (IEEE-like: bias 7, max 240, has inf)
  fp8e4m3fn  ml_dtypes.float8_e4m3fn  1   (OCP: max 448, no inf)
  fp8e5m2    ml_dtypes.float8_e5m2    1

Every file is a flat array of fixed-size little-endian records with no header:

  widen_<fmt>.bin   u32 per pattern, for every pattern 0 .. 2^(8 * width) in order: the f32 bits
                    of that pattern widened to float32. Any NaN is written as 0x7fc00000; compare
                    NaN-ness only, never NaN payloads.
  bounds_<fmt>.bin  records of (u32 input f32 bits, then the input encoded into <fmt> as a
                    u8 or u16), 4 + width bytes each. The inputs are every rounding boundary
                    of the format: each midpoint between neighbouring non-negative representable
                    values (0 and the smallest subnormal included) and the f32 values just below
                    and just above it; the largest finite value, the overflow threshold (half an
                    ulp above it) and their f32 neighbours, one and two ulps above, twice the
                    largest, f32::MAX; the subnormal edges (f32 min subnormal and min normal,
                    and the neighbours of the format's min subnormal, max subnormal and min
                    normal); +0, +inf and NaN.
                    For the fp8 formats every input appears with both signs. For bf16 and fp16
                    only non-negative inputs (and one NaN) are stored, to keep the data small:
                    the negative half follows by sign symmetry, encode(-x) == encode(x) | sign
                    bit for every non-NaN x, which this script asserts against ml_dtypes before
                    writing and the Rust test checks by flipping the sign of each input.
  cast_random.bin   records of (u32 input f32 bits, u16 bf16, u16 fp16, u8 fp8e4m3,
                    u8 fp8e4m3fn, u8 fp8e5m2), 11 bytes each, 200,000 records: the first
                    100,000 inputs are uniformly random f32 bit patterns (mostly far outside
                    the narrow formats' range), the last 100,000 have a random sign and
                    mantissa and an exponent drawn uniformly from 2^-30 .. 2^17, where the
                    fp8 and fp16 formats round, go subnormal and overflow.

Representable values themselves are not stored as cast inputs: every non-NaN widened value must
encode back to its own pattern, which this script asserts and the Rust test checks from the
widen files. The random generator is seeded, so a rerun writes identical files.
"""

import os
import sys

import ml_dtypes
import numpy as np

# (name, reference dtype, unsigned bits dtype, stores both signs in its bounds set)
FORMATS = [
    ("bf16", ml_dtypes.bfloat16, np.uint16, False),
    ("fp16", np.float16, np.uint16, False),
    ("fp8e4m3", ml_dtypes.float8_e4m3, np.uint8, True),
    ("fp8e4m3fn", ml_dtypes.float8_e4m3fn, np.uint8, True),
    ("fp8e5m2", ml_dtypes.float8_e5m2, np.uint8, True),
]

SEED = 20261129
RANDOM_UNIFORM = 100_000
RANDOM_IN_RANGE = 100_000
CANONICAL_NAN = 0x7FC00000


def all_patterns(bits_dtype):
    n = 1 << (8 * np.dtype(bits_dtype).itemsize)
    return np.arange(n, dtype=np.uint64).astype(bits_dtype)


def encode(x, dtype, bits_dtype):
    """ml_dtypes astype of float32 array `x`, as the format's raw bits."""
    return x.astype(dtype).view(bits_dtype)


def widen(dtype, bits_dtype):
    pats = all_patterns(bits_dtype)
    wide = pats.view(dtype).astype(np.float32)
    out = wide.view(np.uint32).copy()
    out[np.isnan(wide)] = CANONICAL_NAN
    # Every non-NaN value is exactly representable, so it must encode back to its pattern;
    # the Rust test leans on this to cover the representable values without storing them.
    ok = ~np.isnan(wide)
    back = encode(wide[ok], dtype, bits_dtype)
    assert np.array_equal(back, pats[ok]), f"{dtype}: widened values do not round-trip"
    return out


def f32(values):
    return np.asarray(values, dtype=np.float64).astype(np.float32)


def neighbours(x):
    """x together with the f32 values just below and just above each element."""
    x = f32(x)
    return np.concatenate(
        [x, np.nextafter(x, np.float32(-np.inf)), np.nextafter(x, np.float32(np.inf))]
    )


def bounds(dtype, bits_dtype, both_signs):
    """Rounding-boundary inputs of one format, as float32."""
    vals = all_patterns(bits_dtype).view(dtype).astype(np.float64)
    vals = np.unique(vals[np.isfinite(vals) & (vals >= 0)])  # +0 and -0 collapse to 0
    assert vals[0] == 0.0
    # Midpoints are exact in f32: the formats carry at most 11 significant bits.
    mids = (vals[:-1] + vals[1:]) / 2
    assert np.array_equal(f32(mids).astype(np.float64), mids)
    big = vals[-1]
    ulp = vals[-1] - vals[-2]
    min_sub = vals[1]
    finfo = ml_dtypes.finfo(dtype) if dtype is not np.float16 else np.finfo(np.float16)
    min_normal = float(finfo.smallest_normal)
    max_sub = vals[np.searchsorted(vals, min_normal) - 1]
    edges = [big, big + ulp / 2, big + ulp, big + 2 * ulp, 2 * big, min_sub, max_sub, min_normal]
    f32_extremes = f32(
        [
            np.finfo(np.float32).max,
            np.finfo(np.float32).smallest_subnormal,
            np.finfo(np.float32).smallest_normal,
        ]
    )
    pts = np.concatenate([neighbours(mids), neighbours(edges), f32_extremes])
    pts = pts[pts >= 0]  # nextafter of 0 towards -inf gives a negative subnormal
    pts = np.concatenate([pts, f32([0.0, np.inf])])
    # Sorting and deduplicating on bits keeps the file deterministic and free of repeats.
    bits = np.unique(pts.view(np.uint32))
    if both_signs:
        bits = np.concatenate([bits, bits | np.uint32(0x80000000)])
    bits = np.concatenate([bits, np.array([CANONICAL_NAN], dtype=np.uint32)])
    return bits.view(np.float32)


def check_sign_symmetry(x, dtype, bits_dtype):
    sign = bits_dtype(1 << (8 * np.dtype(bits_dtype).itemsize - 1))
    ok = ~np.isnan(x) & ~np.signbit(x)
    pos = encode(x[ok], dtype, bits_dtype)
    neg = encode(-x[ok], dtype, bits_dtype)
    assert np.array_equal(neg, pos | sign), f"{dtype}: sign symmetry does not hold"


def random_inputs():
    rng = np.random.default_rng(SEED)
    uniform = rng.integers(0, 1 << 32, size=RANDOM_UNIFORM, dtype=np.uint64).astype(np.uint32)
    sign = rng.integers(0, 2, size=RANDOM_IN_RANGE, dtype=np.uint64).astype(np.uint32) << 31
    exp = rng.integers(127 - 30, 127 + 17 + 1, size=RANDOM_IN_RANGE, dtype=np.uint64).astype(np.uint32)
    mant = rng.integers(0, 1 << 23, size=RANDOM_IN_RANGE, dtype=np.uint64).astype(np.uint32)
    in_range = sign | (exp << 23) | mant
    return np.concatenate([uniform, in_range]).view(np.float32)


def le_bytes(bits, bits_dtype):
    """Raw bytes of an unsigned array, little endian, one row per element."""
    le = bits.astype(np.dtype(bits_dtype).newbyteorder("<"))
    return le.view(np.uint8).reshape(len(bits), -1)


def records(x, outputs):
    cols = [le_bytes(x.view(np.uint32), np.uint32)]
    cols.extend(le_bytes(bits, bits.dtype.type) for bits in outputs)
    return np.ascontiguousarray(np.concatenate(cols, axis=1)).tobytes()


def write(out_dir, name, data):
    path = os.path.join(out_dir, name)
    with open(path, "wb") as f:
        f.write(data)
    print(f"wrote {path} ({len(data)} bytes)")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: golden.py OUT_DIR")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    with np.errstate(over="ignore", invalid="ignore"):
        for name, dtype, bits_dtype, both_signs in FORMATS:
            write(out_dir, f"widen_{name}.bin", widen(dtype, bits_dtype).astype("<u4").tobytes())
            x = bounds(dtype, bits_dtype, both_signs)
            check_sign_symmetry(x, dtype, bits_dtype)
            write(out_dir, f"bounds_{name}.bin", records(x, [encode(x, dtype, bits_dtype)]))
        x = random_inputs()
        outputs = [encode(x, dtype, bits_dtype) for _, dtype, bits_dtype, _ in FORMATS]
        write(out_dir, "cast_random.bin", records(x, outputs))


if __name__ == "__main__":
    main()
