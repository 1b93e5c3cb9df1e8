//! End-to-end runs of the DMA-offloaded examples (`examples/offloaded_fma.pir`,
//! `examples/offloaded_memcast.pir`, `examples/gather.pir`) and of generated ragged variants
//! through the `ntile run` binary, with numpy + ml_dtypes making the inputs and judging the
//! outputs: the FMA must be the exact `a * b + c` rounded once to fp32, the casts bit-exact
//! against ml_dtypes `astype`, the gather an exact copy of the chosen rows, and an
//! out-of-range index an error naming the index and the bound.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use test_support::files::example;
use test_support::{path_str, python, scratch};

/// Appended to a script defining `make(d, n1, n2, ...)`: calls it for each group of
/// arguments `DIR N1 N2 ...` (one python start for every case of a test: numpy's import is
/// most of a script's cost).
const MAKE_EACH: &str = "
args = sys.argv[1:]
k = make.__code__.co_argcount
for i in range(0, len(args), k):
    make(args[i], *map(int, args[i + 1:i + k]))
";

/// Appended to a script defining `check(d)`, which prints one line: calls it for each
/// directory argument.
const CHECK_EACH: &str = "
for d in sys.argv[1:]:
    check(d)
";

/// One run of a kernel: the `.pir` file, the directory of its `.npy` files and the integer
/// arguments of the input script (shape and seed).
struct Case {
    pir: PathBuf,
    dir: PathBuf,
    params: Vec<i64>,
}

/// Make every case's inputs with `make` (one python start), run each case through
/// `ntile run`, then judge every case with `check` (one python start). Returns each case's
/// stdout and the checker's line for it.
fn run_cases(cases: &[Case], make: &str, check: &str, inputs: &[&str], outputs: &[&str]) -> Vec<(String, String)> {
    let make_args: Vec<String> = cases
        .iter()
        .flat_map(|c| std::iter::once(path_str(&c.dir).to_string()).chain(c.params.iter().map(i64::to_string)))
        .collect();
    python(&format!("{make}{MAKE_EACH}"), &make_args);
    let stdouts: Vec<String> = cases.iter().map(|c| run_ok(&c.pir, &c.dir, inputs, outputs)).collect();
    let dirs: Vec<String> = cases.iter().map(|c| path_str(&c.dir).to_string()).collect();
    let verdicts = python(&format!("{check}{CHECK_EACH}"), &dirs);
    let verdicts: Vec<String> = verdicts.lines().map(str::to_string).collect();
    assert_eq!(verdicts.len(), cases.len(), "one verdict per case: {verdicts:?}");
    stdouts.into_iter().zip(verdicts).collect()
}

/// `ntile run PIR --input NAME=DIR/NAME.npy ... --output NAME=DIR/NAME.npy ...`.
fn ntile_run(pir: &Path, dir: &Path, inputs: &[&str], outputs: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ntile"));
    cmd.arg("run").arg(pir);
    for (flag, names) in [("--input", inputs), ("--output", outputs)] {
        for name in names {
            cmd.arg(flag).arg(format!("{name}={}", path_str(&dir.join(format!("{name}.npy")))));
        }
    }
    cmd.output().expect("the ntile binary runs")
}

/// [`ntile_run`] that must succeed; returns its stdout.
fn run_ok(pir: &Path, dir: &Path, inputs: &[&str], outputs: &[&str]) -> String {
    let o = ntile_run(pir, dir, inputs, outputs);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "ntile run {} failed: {stderr}", pir.display());
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Write a generated kernel into `dir` and return its path.
fn write_pir(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The `iN = ...` lines of a `.pir` text, comments stripped.
fn instruction_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split(';').next().unwrap_or("").trim().to_string())
        .filter(|l| l.starts_with('i') && l.contains(" = "))
        .collect()
}

// ----- FMA -----

/// `make(d, rows, cols, seed)` writes `a`, `b`, `c` (fp32, `[rows, cols]`) into `d`:
/// standard normals, with the first elements replaced by cases that tell a fused multiply-add
/// from the alternatives (when the tensor has room for them).
const FMA_INPUTS: &str = r#"
import sys, numpy as np
u = 1 + 2.0**-12          # u * u = 1 + 2^-11 + 2^-24: exactly halfway between two fp32
SPECIAL = [
    (u, u, 2.0**-60),     # just above the tie: fused rounds up; fp64 then fp32 ties to even (down)
    (u, u, -2.0**-60),    # just below the tie: rounds down
    (u, u, 0.0),          # the tie itself: to even
    (u, u, -1.0),         # 2^-11 + 2^-24 exactly; rounding the product first loses the 2^-24
    (3e38, 2.0, -3e38),   # the product overflows fp32 but the sum does not
    (2e19, 2e19, 0.0),    # the result overflows: inf
    (-0.0, 1.0, -0.0),    # -0 + -0 = -0
    (0.0, 1.0, -0.0),     # +0 + -0 = +0
    (2.0**-75, 2.0**-75, 0.0),  # underflows to 0
    (2.0**-70, 2.0**-70, 2.0**-149),  # subnormal sum
]
def make(d, rows, cols, seed):
    rng = np.random.default_rng(seed)
    a, b, c = (rng.standard_normal((rows, cols), dtype=np.float32) for _ in range(3))
    if rows * cols >= len(SPECIAL):
        for k, (x, y, z) in enumerate(SPECIAL):
            a.flat[k], b.flat[k], c.flat[k] = x, y, z
    for n, v in zip('abc', (a, b, c)):
        np.save(f'{d}/{n}.npy', v)
"#;

/// `check(d)` compares `out` in `d` with `a * b + c` rounded once to fp32, bit for bit, and
/// prints `ok ELEMENTS TIES_BROKEN_BY_THE_ADDEND`.
///
/// a * b is exact in fp64 (24 + 24 significand bits); TwoSum gives t + e == a * b + c
/// exactly. Rounding t to fp32 is the correct rounding of t + e unless t lies exactly halfway
/// between two fp32 numbers and e != 0: then the exact sum lies on e's side of the tie.
const FMA_CHECK: &str = r#"
import sys, numpy as np
def check(d):
    a, b, c = (np.load(f'{d}/{n}.npy').astype(np.float64) for n in 'abc')
    out = np.load(f'{d}/out.npy')
    assert out.dtype == np.float32 and out.shape == a.shape, (d, out.dtype, out.shape)
    with np.errstate(all='ignore'):
        p = a * b
        t = p + c
        bv = t - p
        e = (p - (t - bv)) + (c - bv)
        r = t.astype(np.float32)
        diff = t - r.astype(np.float64)
        other = r.astype(np.float64) + 2 * diff
        tie = np.isfinite(diff) & (diff != 0) & (other.astype(np.float32).astype(np.float64) == other)
        up = tie & (e != 0) & (np.sign(e) == np.sign(diff))
        ref = np.where(up, other.astype(np.float32), r)
    bad = (out.view(np.uint32) != ref.view(np.uint32)) & ~(np.isnan(out) & np.isnan(ref))
    if bad.any():
        k = np.flatnonzero(bad)[:5]
        sys.exit(f'{d}: {bad.sum()} elements differ from the correctly rounded a*b+c, e.g. at {k}: '
                 f'a={a.flat[k]} b={b.flat[k]} c={c.flat[k]} out={out.flat[k]} ref={ref.flat[k]}')
    # Never more than one fp32 rounding from the plain fp64 computation either.
    ulps = np.abs(out.view(np.int32).astype(np.int64) - r.view(np.int32).astype(np.int64))
    assert ulps[np.isfinite(r)].max(initial=0) <= 1, d
    print('ok', out.size, int(up.sum()))
"#;

/// A Penguin kernel `out = a * b + c` over `[rows, cols]` fp32, tiled like
/// `examples/offloaded_fma.pir`: row tiles of up to 128 partitions, column tiles of up to
/// `tile_cols`, each loaded, FMA'd on the DMA queues and stored; the last tiles are ragged.
fn fma_pir(rows: u32, cols: u32, tile_cols: u32) -> String {
    let mut s = format!("; generated by offload_examples.rs: out = a * b + c over [{rows}, {cols}]\n");
    let _ = writeln!(s, "kernel fma_{rows}x{cols}\ninputs t0, t1, t2\noutputs t3");
    for (i, name) in ["a", "b", "c", "out"].iter().enumerate() {
        let _ = writeln!(s, "tensor t{i} \"{name}\" hbm fp32 [{rows}, {cols}]");
    }
    let row_tiles: Vec<(u32, u32)> = (0..rows).step_by(128).map(|r0| (r0, (rows - r0).min(128))).collect();
    for (k, &(_, rt)) in row_tiles.iter().enumerate() {
        for (j, name) in ["a_sb", "b_sb", "acc"].iter().enumerate() {
            let _ = writeln!(s, "tensor t{} \"{name}{k}\" sbuf fp32 [{rt}, {cols}]", 4 + 3 * k + j);
        }
    }
    let mut inst = 0;
    let mut line = |s: &mut String, text: String| {
        let _ = writeln!(s, "i{inst} = {text}");
        inst += 1;
    };
    for (k, &(r0, rt)) in row_tiles.iter().enumerate() {
        let (a_sb, b_sb, acc) = (4 + 3 * k, 5 + 3 * k, 6 + 3 * k);
        for c0 in (0..cols).step_by(tile_cols as usize) {
            let ct = (cols - c0).min(tile_cols);
            let hbm = |t: usize| format!("t{t}{{p0[{cols}, {rt}] +{} [1, {ct}]}}", r0 * cols + c0);
            let sb = |t: usize| format!("t{t}{{p0[1, {rt}] +{c0} [1, {ct}]}}");
            line(&mut s, format!("dma_copy dst={} src={}", sb(a_sb), hbm(0)));
            line(&mut s, format!("dma_copy dst={} src={}", sb(b_sb), hbm(1)));
            line(&mut s, format!("dma_copy dst={} src={}", sb(acc), hbm(2)));
            line(&mut s, format!("tiled_offloaded_fma dst={} src0={} src1={}", sb(acc), sb(a_sb), sb(b_sb)));
            line(&mut s, format!("dma_copy dst={} src={}", hbm(3), sb(acc)));
        }
    }
    s
}

fn run_fmas(cases: &[Case]) -> Vec<(String, String)> {
    run_cases(cases, FMA_INPUTS, FMA_CHECK, &["a", "b", "c"], &["out"])
}

#[test]
fn offloaded_fma_example_is_a_single_rounding_of_a_times_b_plus_c() {
    let dir = scratch("fma");
    let case = Case { pir: example("offloaded_fma.pir"), dir: dir.clone(), params: vec![128, 2048, 1] };
    let [(stdout, verdict)] = <[_; 1]>::try_from(run_fmas(&[case])).unwrap();
    assert!(stdout.starts_with("ran offloaded_fma on trn2: "), "{stdout}");
    assert!(stdout.contains("wrote out fp32 [128, 2048] to "), "{stdout}");
    assert!(verdict.starts_with("ok 262144 "), "{verdict}");
    // The first special case rounds up only when the FMA is fused (checked bit for bit).
    assert_ne!(verdict, "ok 262144 0", "the tie cases did not reach the checker");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ragged_offloaded_fmas_match_too() {
    // [100, 300]: one row tile of 100 partitions, column tiles 128, 128, 44.
    // [200, 1000]: row tiles 128 + 72, column tiles 512 + 488; the FMAs are cut into uneven
    // pieces over the DMA queues.
    let shapes = [(100, 300, 128), (200, 1000, 512)];
    let cases: Vec<Case> = shapes
        .iter()
        .map(|&(rows, cols, tile_cols)| {
            let dir = scratch(&format!("fma-{rows}x{cols}"));
            let pir = write_pir(&dir, "fma.pir", &fma_pir(rows, cols, tile_cols));
            Case { pir, dir: dir.into_path(), params: vec![rows.into(), cols.into(), (rows + cols).into()] }
        })
        .collect();
    for (&(rows, cols, _), (stdout, verdict)) in shapes.iter().zip(run_fmas(&cases)) {
        assert!(stdout.contains(&format!("wrote out fp32 [{rows}, {cols}]")), "{stdout}");
        assert!(verdict.starts_with(&format!("ok {} ", rows * cols)), "{rows}x{cols}: {verdict}");
    }
    for c in cases {
        let _ = std::fs::remove_dir_all(&c.dir);
    }
}

#[test]
fn the_fma_generator_reproduces_the_example_kernel() {
    // Keeps the generated ragged kernels honest: at [128, 2048] in tiles of 1024 the generator
    // writes the example's instructions (comments, names and addresses aside).
    let pir = fma_pir(128, 2048, 1024);
    let example = std::fs::read_to_string(example("offloaded_fma.pir")).unwrap();
    assert_eq!(instruction_lines(&pir), instruction_lines(&example));
}

// ----- casts -----

/// `make(d, rows, cols, seed)` writes `x` (fp32, `[rows, cols]`) into `d`: explicit edge
/// cases first, then exact bf16 ties, exact fp8e4m3 ties (normal and subnormal), values near
/// the overflow thresholds of both formats, and random values of every magnitude.
const CAST_INPUTS: &str = r#"
import sys, numpy as np
SPECIAL = np.array([
    1 + 2.0**-8, 1 + 3 * 2.0**-8,        # bf16 ties: to even (down, up)
    1 + 2.0**-4, 1 + 3 * 2.0**-4,        # fp8e4m3 ties: to even (down, up)
    240, 247.99, 248, 256, 1e4, -248,    # fp8e4m3: max, below and at the overflow tie, beyond
    3.3895314e38, 3.3961e38, 3.3961776e38, 3.4028235e38,  # bf16: max, below and at the overflow tie, fp32 max
    np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0,   # canonical NaNs: 0x7fc00000, 0xffc00000
    2.0**-10, 3 * 2.0**-10, 2.0**-9, 2.0**-11,  # fp8e4m3 subnormal ties and below half the minimum
    1e-40, -1e-45,                        # fp32 subnormals
], dtype=np.float32)
PAYLOAD_NANS = [0x7fa00001, 0xff812345, 0x7fffffff]
def make(d, rows, cols, seed):
    rng = np.random.default_rng(seed)
    n = rows * cols
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    q = n // 5
    # bf16 ties: the 16 dropped bits are exactly 0x8000.
    bits[:q] = (bits[:q] & 0xffff0000) | 0x8000
    # fp8e4m3 normal ties: exponent in [-6, 7], the 20 dropped mantissa bits exactly 0x80000.
    e = rng.integers(-6, 8, q).astype(np.uint32) + 127
    bits[q:2*q] = (bits[q:2*q] & 0x80700000) | (e << 23) | 0x80000
    x = bits.view(np.float32)
    # fp8e4m3 subnormal ties: odd multiples of 2^-10, half the smallest subnormal.
    x[2*q:3*q] = rng.choice([-1, 1], q) * (2 * rng.integers(0, 8, q) + 1) * 2.0**-10
    # Around the overflow thresholds of fp8e4m3 (248) and of bf16.
    x[3*q:3*q + q//2] = rng.uniform(200, 300, q//2) * rng.choice([-1, 1], q//2)
    x[3*q + q//2:4*q] = rng.uniform(3.38e38, 3.4e38, q - q//2)
    # Random magnitudes from fp32 subnormals to fp32 max.
    x[4*q:] = rng.choice([-1, 1], n - 4*q) * 2.0 ** rng.uniform(-140, 127.9, n - 4*q)
    x = np.where(np.isnan(x), np.float32(1.5), x).astype(np.float32)   # random bits may be NaN
    rng.shuffle(x)
    x[:len(SPECIAL)] = SPECIAL
    x.view(np.uint32)[len(SPECIAL):len(SPECIAL) + len(PAYLOAD_NANS)] = PAYLOAD_NANS
    np.save(f'{d}/x.npy', x.reshape(rows, cols))
"#;

/// `check(d)` compares `y_bf16` (uint16) and `y_fp8` (uint8) in `d` bit for bit with
/// `x.astype(ml_dtypes.bfloat16)` / `x.astype(ml_dtypes.float8_e4m3)` and prints
/// `ok ELEMENTS overflows BF16 FP8 ties BF16_TIES` (so a test can see the hard cases
/// occurred).
const CAST_CHECK: &str = r#"
import sys, numpy as np, ml_dtypes
def check(d):
    x = np.load(f'{d}/x.npy')
    finite = np.isfinite(x)
    overflows = []
    for name, dt, ut in [('y_bf16', ml_dtypes.bfloat16, np.uint16), ('y_fp8', ml_dtypes.float8_e4m3, np.uint8)]:
        y = np.load(f'{d}/{name}.npy')
        assert y.dtype == ut and y.shape == x.shape, (d, name, y.dtype, y.shape)
        with np.errstate(all='ignore'):
            ref = x.astype(dt)
        # ntile keeps a NaN's payload bits in bf16 (as the `half` crate does) where ml_dtypes
        # returns the canonical +-0x7fc0, and the project compares NaNs by NaN-ness
        # (crates/penguin/tests/penguin/golden.rs): only canonical NaNs are compared bit for bit.
        payload_nan = np.isnan(x) & ~np.isin(x.view(np.uint32), [0x7fc00000, 0xffc00000])
        bad = (y != ref.view(ut)) & ~(payload_nan & np.isnan(y.view(dt).astype(np.float32)))
        if bad.any():
            k = np.flatnonzero(bad)[:5]
            sys.exit(f'{d}/{name}: {bad.sum()} elements differ from ml_dtypes, e.g. x={x.flat[k]} '
                     f'(bits {[hex(v) for v in x.view(np.uint32).flat[k]]}) gave {y.flat[k]}, '
                     f'expected {ref.view(ut).flat[k]}')
        overflows.append(int((finite & np.isinf(ref.astype(np.float32))).sum()))
    ties = int((finite & (x.view(np.uint32) & 0xffff == 0x8000)).sum())
    print(f'ok {x.size} overflows {overflows[0]} {overflows[1]} ties {ties}')
"#;

/// Run one cast case and check its outputs; returns the checker's verdict.
fn run_cast(pir: PathBuf, dir: &Path, rows: u32, cols: u32, seed: u32) -> String {
    let case = Case { pir, dir: dir.to_path_buf(), params: vec![rows.into(), cols.into(), seed.into()] };
    let [(stdout, verdict)] =
        <[_; 1]>::try_from(run_cases(&[case], CAST_INPUTS, CAST_CHECK, &["x"], &["y_bf16", "y_fp8"])).unwrap();
    assert!(stdout.contains(&format!("wrote y_bf16 bf16 [{rows}, {cols}]")), "{stdout}");
    assert!(stdout.contains(&format!("wrote y_fp8 fp8e4m3 [{rows}, {cols}]")), "{stdout}");
    verdict
}

/// The numbers of a cast verdict `ok N overflows B F ties T`.
fn cast_counts(verdict: &str) -> Vec<u64> {
    verdict.split_whitespace().filter_map(|w| w.parse().ok()).collect()
}

#[test]
fn offloaded_memcast_example_is_bit_exact_against_ml_dtypes() {
    let dir = scratch("cast");
    let verdict = run_cast(example("offloaded_memcast.pir"), &dir, 128, 4096, 2);
    assert!(verdict.starts_with("ok 524288 "), "{verdict}");
    let counts = cast_counts(&verdict);
    assert_eq!(counts.len(), 4, "{verdict}");
    assert!(counts.iter().all(|&n| n > 1000), "too few overflows or ties reached the casts: {verdict}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The memcast kernel over `[rows, cols]`, HBM to HBM like the example.
fn memcast_pir(rows: u32, cols: u32) -> String {
    let tile = |t: u32| format!("t{t}{{p0[{cols}, {rows}] +0 [1, {cols}]}}");
    format!(
        "; generated by offload_examples.rs\nkernel cast_{rows}x{cols}\ninputs t0\noutputs t1, t2\n\
         tensor t0 \"x\" hbm fp32 [{rows}, {cols}]\ntensor t1 \"y_bf16\" hbm bf16 [{rows}, {cols}]\n\
         tensor t2 \"y_fp8\" hbm fp8e4m3 [{rows}, {cols}]\n\
         i0 = offloaded_memcast dst={} src={}\ni1 = offloaded_memcast cast=rne dst={} src={}\n",
        tile(1),
        tile(0),
        tile(2),
        tile(0)
    )
}

#[test]
fn ragged_offloaded_memcast_is_bit_exact_too() {
    // 300 rows of 77: more rows than partitions, an odd row length, uneven pieces per queue.
    let dir = scratch("cast-300x77");
    let pir = write_pir(&dir, "cast.pir", &memcast_pir(300, 77));
    let verdict = run_cast(pir, &dir, 300, 77, 3);
    assert!(verdict.starts_with("ok 23100 "), "{verdict}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ----- gather -----

/// `make(d, table_rows, row_len, n, seed)` writes `table` (fp32, `[table_rows, row_len]`)
/// and `idx` (int32, `n` entries) into `d`: the table's first row holds values a conversion
/// would disturb (NaN payloads, -0, infinities, subnormals); the indices include 0, the last
/// row and repeats.
const GATHER_INPUTS: &str = r#"
import sys, numpy as np
SPECIAL = np.array([0x7fa00001, 0xffc12345, 0x80000000, 0x7f800000, 0xff800000, 1, 0x807fffff], dtype=np.uint32)
def make(d, rows, row_len, n, seed):
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((rows, row_len), dtype=np.float32)
    table.view(np.uint32)[0, :min(row_len, len(SPECIAL))] = SPECIAL[:row_len]
    idx = rng.integers(0, rows, n, dtype=np.int32)
    idx[:4] = [0, rows - 1, 0, rows - 1][:n]
    np.save(f'{d}/table.npy', table)
    np.save(f'{d}/idx.npy', idx)
"#;

/// `check(d)` compares `rows` in `d` with `table[idx]` bit for bit and prints `ok ELEMENTS`.
const GATHER_CHECK: &str = r#"
import sys, numpy as np
def check(d):
    table, idx, rows = (np.load(f'{d}/{n}.npy') for n in ('table', 'idx', 'rows'))
    assert rows.dtype == np.float32 and rows.shape == (len(idx), table.shape[1]), (d, rows.dtype, rows.shape)
    bad = rows.view(np.uint32) != table.view(np.uint32)[idx]
    if bad.any():
        sys.exit(f'{d}: {bad.sum()} elements differ from table[idx], first at {np.argwhere(bad)[0]}')
    print('ok', rows.size)
"#;

/// A gather of `n` rows from a `[table_rows, row_len]` fp32 table, like
/// `examples/gather.pir`, in chunks of up to 128 indices (one SBUF row per index).
fn gather_pir(table_rows: u32, row_len: u32, n: u32) -> String {
    let mut s = format!("; generated by offload_examples.rs: {n} rows of a [{table_rows}, {row_len}] table\n");
    let _ = writeln!(s, "kernel gather_{n}\ninputs t0, t1\noutputs t2");
    let _ = writeln!(s, "tensor t0 \"table\" hbm fp32 [{table_rows}, {row_len}]");
    let _ = writeln!(s, "tensor t1 \"idx\" hbm int32 [{n}]");
    let _ = writeln!(s, "tensor t2 \"rows\" hbm fp32 [{n}, {row_len}]");
    let chunks: Vec<(u32, u32)> = (0..n).step_by(128).map(|i0| (i0, (n - i0).min(128))).collect();
    for (k, &(_, m)) in chunks.iter().enumerate() {
        let _ = writeln!(s, "tensor t{} \"rows_sb{k}\" sbuf fp32 [{m}, {row_len}]", 3 + k);
    }
    for (k, &(i0, m)) in chunks.iter().enumerate() {
        let sb = format!("t{}{{p0[1, {m}] +0 [1, {row_len}]}}", 3 + k);
        let _ = writeln!(
            s,
            "i{} = dma_gather dst={sb} table=t0{{p0[{row_len}, {table_rows}] +0 [1, {row_len}]}} \
             index=t1{{p0[1, {m}] +{i0} [1, 1]}}",
            2 * k
        );
        let _ = writeln!(
            s,
            "i{} = dma_copy dst=t2{{p0[{row_len}, {m}] +{} [1, {row_len}]}} src={sb}",
            2 * k + 1,
            i0 * row_len
        );
    }
    s
}

/// Gathers `(table_rows, row_len, n)` rows with each case's kernel; checks ntile's report
/// and the checker's verdict.
fn run_gathers(cases: &[Case]) {
    for (c, (stdout, verdict)) in
        cases.iter().zip(run_cases(cases, GATHER_INPUTS, GATHER_CHECK, &["table", "idx"], &["rows"]))
    {
        let (row_len, n) = (c.params[1], c.params[2]);
        assert!(stdout.contains(&format!("wrote rows fp32 [{n}, {row_len}]")), "{stdout}");
        assert_eq!(verdict, format!("ok {}", n * row_len));
    }
}

#[test]
fn gather_example_copies_the_chosen_rows_exactly() {
    let dir = scratch("gather");
    run_gathers(&[Case { pir: example("gather.pir"), dir: dir.clone(), params: vec![1000, 64, 128, 4] }]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ragged_gathers_copy_exactly_too() {
    // 37 rows of 24 (one ragged chunk), and 300 rows (chunks of 128, 128, 44).
    let cases: Vec<Case> = [(1000, 24, 37), (1000, 24, 300)]
        .into_iter()
        .map(|(table_rows, row_len, n)| {
            let dir = scratch(&format!("gather-{n}"));
            let pir = write_pir(&dir, "gather.pir", &gather_pir(table_rows, row_len, n));
            Case { pir, dir: dir.into_path(), params: vec![table_rows.into(), row_len.into(), n.into(), n.into()] }
        })
        .collect();
    run_gathers(&cases);
    for c in cases {
        let _ = std::fs::remove_dir_all(&c.dir);
    }
}

#[test]
fn the_gather_generator_reproduces_the_example_kernel() {
    let pir = gather_pir(1000, 64, 128);
    let example = std::fs::read_to_string(example("gather.pir")).unwrap();
    assert_eq!(instruction_lines(&pir), instruction_lines(&example));
}

/// `make(d, value, entry)` writes a `[1000, 64]` table and the indices 0..128 with entry
/// `entry` replaced by `value` into `d`.
const OOB_INPUTS: &str = r#"
import sys, numpy as np
def make(d, value, entry):
    np.save(f'{d}/table.npy', np.ones((1000, 64), dtype=np.float32))
    idx = np.arange(128, dtype=np.int32)
    idx[entry] = value
    np.save(f'{d}/idx.npy', idx)
"#;

#[test]
fn out_of_range_gather_index_fails_naming_the_index_and_the_bound() {
    // Entry 5 is 1000, one past the last row; entry 7 of the second index file is -1.
    let cases = [(1000, 5), (-1, 7)];
    let dirs: Vec<_> = cases.iter().map(|(value, _)| scratch(&format!("gather-oob{value}"))).collect();
    let args: Vec<String> = dirs
        .iter()
        .zip(cases)
        .flat_map(|(d, (value, entry))| [path_str(d).to_string(), value.to_string(), entry.to_string()])
        .collect();
    python(&format!("{OOB_INPUTS}{MAKE_EACH}"), &args);
    // The error names the `.pir` line of the gather and its Penguin instruction, not just the
    // BIR position it was lowered to.
    let text = std::fs::read_to_string(example("gather.pir")).unwrap();
    let line = text.lines().position(|l| l.starts_with("i0 = dma_gather ")).expect("gather.pir has i0") + 1;
    for (dir, (value, entry)) in dirs.iter().zip(cases) {
        let o = ntile_run(&example("gather.pir"), dir, &["table", "idx"], &["rows"]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("index entry {entry} is {value}, outside the 1000 rows of the table")),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "gather.pir:{line}: simulation failed: i0 (dma0[0]): index entry {entry} is {value}, outside"
            )),
            "{stderr}"
        );
        assert!(!dir.join("rows.npy").exists(), "a failed run wrote its output");
        let _ = std::fs::remove_dir_all(dir);
    }
}
