//! `ntile calibrate`: fit hardware profile keys to measured GEMM times.
//!
//! Each row of the CSV names a GEMM as `ntile gemm --no-sim` would plan it; it is planned and
//! lowered once (an `auto` row keeps the kernel `auto` chose under the starting profile: that
//! is the kernel that was measured), and the cycle model is rerun for every trial profile.
//! The chosen keys are fitted by bounded Levenberg-Marquardt on the log of modeled over
//! measured time, in log-parameter space (every key is positive), within each key's range.

use std::path::{Path, PathBuf};

use clap::Args;
use codegen::{BlockSizes, GemmConfig, Schedule};
use driver::{BlockRequest, Cancel, DriverError, GemmRequest};
use penguin::target::{HwProfile, GEOMETRY, KEYS};
use penguin::{DType, Target};

use crate::error::CliError;
use crate::gemm::GemmArgs;

mod solver;
use solver::levenberg_marquardt;

/// The CSV columns, in any order.
pub const COLUMNS: [&str; 11] =
    ["m", "k", "n", "dtype", "schedule", "block_m", "block_n", "block_k", "lhs_transposed", "target", "measured_us"];

/// The keys fitted when `--fit` is not given.
pub const DEFAULT_FIT: &str = "dma_descriptor_ns,dma_fixed_ns,hbm_bytes_per_ns";

/// Flags of `ntile calibrate`.
#[derive(Args, Clone, Debug)]
#[command(after_long_help = "\
MEASURED.csv has a header naming the columns
  m,k,n,dtype,schedule,block_m,block_n,block_k,lhs_transposed,target,measured_us
(any order). Each row is a GEMM as `ntile gemm --no-sim` plans it, with A and B stored in
HBM in `dtype` and C in `dtype` (bf16 for fp8 operands); empty block columns mean the
blocks `ntile gemm` picks for the schedule under the starting profile; lhs_transposed is true/false; measured_us is the measured kernel time.
Every row's modeled and measured times are printed before and after the fit with the mean
absolute percentage error, and the fitted profile is written (atomically) in the JSON form
--hw reads.

Example:
  ntile calibrate measured.csv -o trn2.json --fit dma_descriptor_ns,pe_ghz
  ntile gemm --m 4096 --k 4096 --n 4096 --hw trn2.json --no-sim")]
pub struct CalibrateArgs {
    /// The measurements (CSV)
    #[arg(value_name = "MEASURED.csv")]
    pub measured: PathBuf,
    /// Where to write the fitted profile (JSON)
    #[arg(short = 'o', long = "output", value_name = "profile.json")]
    pub output: PathBuf,
    /// Target of every row: trn1, trn2 or trn3
    #[arg(long, default_value = "trn2")]
    pub target: Target,
    /// Profile keys to fit, comma-separated
    #[arg(long, value_name = "KEY,KEY...", default_value = DEFAULT_FIT, value_delimiter = ',')]
    pub fit: Vec<String>,
    /// Start from this profile (overrides of the built-in one)
    #[arg(long, value_name = "FILE.json", long_help = crate::hw::HW_HELP)]
    pub hw: Option<PathBuf>,
    /// Refuse rows whose kept programs would exceed this many bytes together (a row too large
    /// to unroll within what is left is extrapolated and modeled looped, as `ntile gemm
    /// --no-sim` does); K, M, G, T suffixes are powers of 1024 [default: half of physical memory]
    #[arg(long, value_name = "BYTES", value_parser = crate::budget::parse_bytes)]
    pub max_memory: Option<u64>,
}

/// One measured GEMM.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The GEMM as planned.
    pub config: GemmConfig,
    /// No block column was given: default blocks, shrunk to fit.
    pub default_blocks: bool,
    /// Measured time in us.
    pub measured_us: f64,
}

/// The outcome of a fit.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// The fitted profile.
    pub profile: HwProfile,
    /// Modeled time of every row before the fit, in us.
    pub before_us: Vec<f64>,
    /// Modeled time of every row after the fit, in us.
    pub after_us: Vec<f64>,
    /// What the fit cannot vouch for: keys that ended at a bound, keys the rows do not
    /// depend on or cannot tell apart.
    pub warnings: Vec<String>,
}

/// Run `ntile calibrate` (stopped by `cancel`, before anything is written).
pub fn run(args: &CalibrateArgs, cancel: Option<&Cancel>) -> Result<String, CliError> {
    let text = std::fs::read_to_string(&args.measured)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", args.measured.display())))?;
    let rows = parse_csv(&text, args.target).map_err(|e| prefix(&args.measured, &e))?;
    let start = crate::hw::load_profile(args.hw.as_deref(), args.target)?;
    let budget = args.max_memory.unwrap_or_else(driver::budget::default_budget);
    let fit = calibrate(&rows, &start, &args.fit, budget, cancel)?;
    crate::npy::write_atomic(&args.output, driver::hw::profile_json(&fit.profile)?.as_bytes())?;
    let mut s = report(&rows, &fit, &start, &args.fit);
    s += &format!("wrote {}\n", args.output.display());
    Ok(s)
}

fn prefix(path: &Path, e: &CliError) -> CliError {
    CliError { code: e.code, message: format!("{}: {}", path.display(), e.message) }
}

/// Parse the measurement CSV (see [`COLUMNS`]; read by [`crate::csv::read`], the reader
/// `sweep` shares, so column names are case-insensitive and a column named twice is refused);
/// every row's target must be `target`, and a row's schedule and block cells are checked as
/// `ntile gemm` checks its flags.
pub fn parse_csv(text: &str, target: Target) -> Result<Vec<Row>, CliError> {
    let Some(table) = crate::csv::read(text)? else {
        return Err(CliError::usage("no header line (expected the columns m,k,n,dtype,...)"));
    };
    let mut index = [0usize; COLUMNS.len()];
    for (slot, col) in index.iter_mut().zip(COLUMNS) {
        *slot = table.column(col).ok_or_else(|| {
            CliError::usage(format!("the header has no column `{col}` (expected {})", COLUMNS.join(",")))
        })?;
    }
    if let Some(extra) = table.names.iter().find(|n| !COLUMNS.iter().any(|c| n.eq_ignore_ascii_case(c))) {
        return Err(CliError::usage(format!(
            "unknown column `{extra}` in the header (expected {})",
            COLUMNS.join(",")
        )));
    }
    let mut rows = Vec::new();
    for (line_no, cells) in &table.rows {
        rows.push(parse_row(*line_no, &|c: usize| cells[index[c]].as_str(), target)?);
    }
    if rows.is_empty() {
        return Err(CliError::usage("no measurement rows after the header"));
    }
    Ok(rows)
}

/// One row of the CSV (`cell(c)` is the cell of [`COLUMNS`]`[c]`).
fn parse_row<'a>(line_no: usize, cell: &dyn Fn(usize) -> &'a str, target: Target) -> Result<Row, CliError> {
    let bad =
        |c: usize, why: &str| CliError::usage(format!("line {line_no}, column `{}`: `{}` {why}", COLUMNS[c], cell(c)));
    let positive =
        |c: usize| cell(c).parse::<u64>().ok().filter(|&v| v > 0).ok_or_else(|| bad(c, "is not a positive integer"));
    let block = |c: usize| if cell(c).is_empty() { Ok(None) } else { positive(c).map(Some) };
    let (m, k, n) = (positive(0)?, positive(1)?, positive(2)?);
    let dtype: DType = cell(3).parse().map_err(|_| bad(3, "is not a dtype (fp32, bf16, fp16, fp8e4m3, ...)"))?;
    let schedule: Schedule =
        cell(4).parse().map_err(|_| bad(4, "is not a schedule (naive, hoisted, blocked-mn, blocked-mnk, auto)"))?;
    let blocks = BlockRequest { m: block(5)?, n: block(6)?, k: block(7)? };
    // The block cells `ntile gemm` would refuse as flags are refused here too, in its words.
    let flags = GemmArgs {
        schedule: Some(schedule),
        block_m: blocks.m,
        block_n: blocks.n,
        block_k: blocks.k,
        ..GemmArgs::default()
    };
    crate::gemm::validate(&flags).map_err(|e| CliError::usage(format!("line {line_no}: {}", e.message)))?;
    let lhs_transposed = match cell(8) {
        "true" | "1" => true,
        "false" | "0" | "" => false,
        _ => return Err(bad(8, "is not true or false")),
    };
    let row_target: Target = cell(9).parse().map_err(|_| bad(9, "is not a target (trn1, trn2, trn3)"))?;
    if row_target != target {
        return Err(bad(9, &format!("differs from --target {target} (calibrate one target at a time)")));
    }
    let measured_us = cell(10)
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or_else(|| bad(10, "is not a positive time in us"))?;
    let defaults = BlockSizes::for_schedule(schedule);
    let out_dtype = match dtype {
        DType::Fp32 | DType::Bf16 | DType::Fp16 => dtype,
        _ => DType::Bf16,
    };
    let config = GemmConfig {
        out_dtype,
        input_dtype: dtype,
        schedule,
        lhs_transposed,
        blocks: BlockSizes {
            m: blocks.m.unwrap_or(defaults.m),
            n: blocks.n.unwrap_or(defaults.n),
            k: blocks.k.unwrap_or(defaults.k),
        },
        ..GemmConfig::new(m, k, n, dtype, target)
    };
    config.validate().map_err(|e| CliError::usage(format!("line {line_no}: {e}")))?;
    Ok(Row { config, default_blocks: !blocks.any(), measured_us })
}

/// The request of a row, under `hw`: modeled without a simulation, default blocks (shrunk to
/// fit) when the row gives none, and `auto` searching freely (the kernel it chooses under the
/// starting profile is the one that was measured).
pub fn request(row: &Row, hw: &HwProfile) -> GemmRequest {
    let c = &row.config;
    let mut req = GemmRequest::new(c.m, c.k, c.n, c.lhs_dtype, c.target);
    req.rhs_dtype = c.rhs_dtype;
    req.out_dtype = c.out_dtype;
    req.hbm_dtype = Some(c.input_dtype);
    req.schedule = c.schedule;
    req.lhs_transposed = c.lhs_transposed;
    if !row.default_blocks && c.schedule != Schedule::Auto {
        req.blocks = BlockRequest { m: Some(c.blocks.m), n: Some(c.blocks.n), k: Some(c.blocks.k) };
    }
    req.hw = Some(*hw);
    req.options.simulate = false;
    req
}

/// Plan and lower a row as `ntile gemm --no-sim` would under `hw`; a row too large to unroll
/// is refused (see [`kernel_of`] for the program calibrate models, looped for such rows).
pub fn lower_row(row: &Row, hw: &HwProfile) -> Result<bir::Program, CliError> {
    match kernel_of(row, hw, &Budget::default(), None)? {
        Kernel::Unrolled(p) => Ok(p),
        Kernel::Looped(_) => {
            let c = &row.config;
            Err(CliError::usage(format!(
                "{}x{}x{} is too large to unroll, so its program is extrapolated",
                c.m, c.k, c.n
            )))
        }
    }
}

/// The program of a row that calibrate models under every trial profile: the unrolled
/// lowering, or, for a row too large to unroll (as `ntile gemm --no-sim` decides it, within
/// what the memory budget has left), the looped program extrapolated from smaller GEMMs.
#[derive(Clone, Debug)]
pub enum Kernel {
    /// Planned whole.
    Unrolled(bir::Program),
    /// Extrapolated, modeled looped.
    Looped(bir::LoopedProgram),
}

/// The memory budget of a calibration: every row's kept program is charged against it (an
/// unrolled row as the driver's estimate of planning it; the budget a row is planned within
/// is what the rows before it left).
#[derive(Clone, Debug)]
pub struct Budget {
    /// The whole budget, in bytes.
    pub total: u64,
    /// What the rows planned so far keep.
    pub used: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { total: driver::budget::default_budget(), used: 0 }
    }
}

/// Plan a row under `hw` within what `budget` has left, and charge what it keeps.
pub fn kernel_of(row: &Row, hw: &HwProfile, budget: &Budget, cancel: Option<&Cancel>) -> Result<Kernel, CliError> {
    let mut req = request(row, hw);
    let left = budget.total.saturating_sub(budget.used);
    req.options.max_memory = Some(left);
    req.options.cancel = cancel.cloned();
    let outcome = driver::gemm(&req, None).map_err(|e| {
        let e = CliError::from(e);
        if budget.used > 0 && e.message.contains("memory budget") {
            CliError {
                code: e.code,
                message: format!(
                    "{} (the rows before it keep about {} of the budget of {}; calibrate fewer or smaller rows, or \
                     raise --max-memory)",
                    e.message,
                    driver::budget::human(u128::from(budget.used)),
                    driver::budget::human(u128::from(budget.total))
                ),
            }
        } else {
            e
        }
    })?;
    match (outcome.program, outcome.extrapolated) {
        (Some(p), _) => Ok(Kernel::Unrolled(p)),
        (None, Some(x)) => Ok(Kernel::Looped(x.program)),
        (None, None) => Err(CliError::internal("a GEMM run without a program (a bug)")),
    }
}

/// What keeping a row's kernel costs the budget.
fn kept_bytes(row: &Row, kernel: &Kernel) -> u64 {
    match kernel {
        Kernel::Unrolled(_) => u64::try_from(driver::budget::plan_bytes(&row.config)).unwrap_or(u64::MAX),
        Kernel::Looped(lp) => lp.to_string().len() as u64,
    }
}

/// Modeled time of each kernel under `hw`, in us.
fn model_all(kernels: &[Kernel], hw: &HwProfile, cancel: Option<&Cancel>) -> Result<Vec<f64>, CliError> {
    let bug = |e: sim::SimError| CliError::internal(format!("cycle model failed (a bug): {e}"));
    kernels
        .iter()
        .map(|k| {
            if cancel.is_some_and(Cancel::is_cancelled) {
                return Err(CliError::from(DriverError::Interrupted));
            }
            match k {
                Kernel::Unrolled(p) => sim::model_with(p, hw).map(|r| r.total_us()).map_err(bug),
                Kernel::Looped(lp) => {
                    let opts = sim::LoopedOptions { max_replayed: driver::gemm::MAX_REPLAYED, ..Default::default() };
                    sim::model_looped_with(lp, hw, opts).map(|r| r.total_us()).map_err(bug)
                }
            }
        })
        .collect()
}

/// A key to fit: its log-space bounds.
struct Param {
    key: &'static str,
    lo: f64,
    hi: f64,
}

fn params(keys: &[String], start: &HwProfile) -> Result<Vec<Param>, CliError> {
    let mut out: Vec<Param> = Vec::new();
    for key in keys.iter().map(|k| k.trim()).filter(|k| !k.is_empty()) {
        if GEOMETRY.iter().any(|g| g.name == key) {
            return Err(CliError::usage(format!("--fit: `{key}` is fixed by the target's geometry")));
        }
        let info = KEYS
            .iter()
            .find(|k| k.name == key)
            .ok_or_else(|| CliError::usage(format!("--fit: unknown hardware profile key `{key}`")))?;
        if info.whole {
            return Err(CliError::usage(format!("--fit: `{key}` counts things (a whole number) and cannot be fitted")));
        }
        if out.iter().any(|p| p.key == info.name) {
            return Err(CliError::usage(format!("--fit: `{key}` is named twice")));
        }
        let value = start.get(key).unwrap_or(1.0).max(f64::MIN_POSITIVE);
        // Fit in log space: a zero lower bound becomes a thousandth of the start value.
        let lo = if info.min > 0.0 { info.min } else { (value * 1e-3).min(info.max) };
        out.push(Param { key: info.name, lo: lo.ln(), hi: info.max.ln() });
    }
    if out.is_empty() {
        return Err(CliError::usage("--fit names no key"));
    }
    Ok(out)
}

fn with(start: &HwProfile, params: &[Param], x: &[f64]) -> Result<HwProfile, CliError> {
    let mut p = *start;
    for (param, &v) in params.iter().zip(x) {
        let info = KEYS.iter().find(|k| k.name == param.key).map_or(1.0, |k| k.max);
        p.set(param.key, v.exp().min(info), None).map_err(driver::hw::profile_error)?;
    }
    Ok(p)
}

/// Fit `keys` of `start` to the rows, planning them within `budget` (stopped by `cancel`).
pub fn calibrate(
    rows: &[Row],
    start: &HwProfile,
    keys: &[String],
    budget: u64,
    cancel: Option<&Cancel>,
) -> Result<Fit, CliError> {
    let params = params(keys, start)?;
    let mut kept = Budget { total: budget, used: 0 };
    let mut kernels = Vec::with_capacity(rows.len());
    for row in rows {
        let kernel = kernel_of(row, start, &kept, cancel)?;
        kept.used = kept.used.saturating_add(kept_bytes(row, &kernel));
        kernels.push(kernel);
    }
    let measured: Vec<f64> = rows.iter().map(|r| r.measured_us).collect();
    let residuals = |x: &[f64]| -> Result<Vec<f64>, CliError> {
        let modeled = model_all(&kernels, &with(start, &params, x)?, cancel)?;
        Ok(modeled.iter().zip(&measured).map(|(m, t)| (m.max(1e-12) / t).ln()).collect())
    };
    let x0: Vec<f64> = params.iter().map(|p| start.get(p.key).unwrap_or(1.0).max(f64::MIN_POSITIVE).ln()).collect();
    let (x, jac) = levenberg_marquardt(&params, x0, &residuals)?;
    let profile = with(start, &params, &x)?;
    let warnings = identifiability(&params, &x, &jac, rows.len());
    Ok(Fit {
        before_us: model_all(&kernels, start, cancel)?,
        after_us: model_all(&kernels, &profile, cancel)?,
        profile,
        warnings,
    })
}

/// What the fit cannot vouch for: a key that ended at a bound of its range (the rows push
/// it further than the range allows, or do not pin it down), a key the rows do not depend on,
/// keys whose effects on the rows are proportional (the rows cannot tell them apart), and
/// more keys than rows. `jac` is the Jacobian of the log errors at the solution.
fn identifiability(params: &[Param], x: &[f64], jac: &[Vec<f64>], rows: usize) -> Vec<String> {
    let mut out = Vec::new();
    let unit = |key: &str| KEYS.iter().find(|k| k.name == key).map_or("", |k| k.unit);
    for (p, v) in params.iter().zip(x) {
        let span = (p.hi - p.lo).abs().max(1e-12);
        let side = if (v - p.hi).abs() <= 1e-6 * span {
            Some(("upper", p.hi))
        } else if (v - p.lo).abs() <= 1e-6 * span {
            Some(("lower", p.lo))
        } else {
            None
        };
        if let Some((side, bound)) = side {
            out.push(format!(
                "`{}` ended at the {side} bound of its range ({} {}): the rows do not pin it down; fit fewer keys \
                 or add rows that depend on it",
                p.key,
                fmt_number(bound.exp()),
                unit(p.key)
            ));
        }
    }
    let column = |j: usize| jac.iter().map(|row| row[j]).collect::<Vec<f64>>();
    let norm = |c: &[f64]| c.iter().map(|v| v * v).sum::<f64>().sqrt();
    let cols: Vec<Vec<f64>> = (0..params.len()).map(column).collect();
    let largest = cols.iter().map(|c| norm(c)).fold(0.0, f64::max);
    for (p, c) in params.iter().zip(&cols) {
        if norm(c) <= 1e-9 * largest.max(1e-300) {
            out.push(format!("no row's modeled time depends on `{}`: the data cannot fit it", p.key));
        }
    }
    for a in 0..params.len() {
        for b in a + 1..params.len() {
            let (na, nb) = (norm(&cols[a]), norm(&cols[b]));
            if na <= 1e-9 * largest || nb <= 1e-9 * largest {
                continue;
            }
            let cos = cols[a].iter().zip(&cols[b]).map(|(u, v)| u * v).sum::<f64>() / (na * nb);
            if cos.abs() > 0.999 {
                out.push(format!(
                    "`{}` and `{}` change every row's modeled time in the same proportion: the data cannot tell \
                     them apart (fit one of them, or add rows where they differ)",
                    params[a].key, params[b].key
                ));
            }
        }
    }
    if params.len() > rows {
        out.push(format!("{} keys fitted to {rows} row(s): the data cannot determine them all", params.len()));
    }
    out
}

fn fmt_number(v: f64) -> String {
    if (v - v.round()).abs() < 1e-6 * v.abs().max(1.0) {
        format!("{}", v.round())
    } else {
        format!("{v:.4}")
    }
}

/// Mean absolute percentage error of modeled against measured times.
pub fn mape(modeled: &[f64], measured: &[f64]) -> f64 {
    let n = modeled.len().max(1) as f64;
    modeled.iter().zip(measured).map(|(m, t)| ((m - t) / t).abs()).sum::<f64>() / n * 100.0
}

fn report(rows: &[Row], fit: &Fit, start: &HwProfile, keys: &[String]) -> String {
    let measured: Vec<f64> = rows.iter().map(|r| r.measured_us).collect();
    let mut s = format!(
        "{:>4}  {:<22} {:<12} {:>12} {:>12} {:>12}\n",
        "row", "m x k x n", "schedule", "measured_us", "before_us", "after_us"
    );
    for (i, row) in rows.iter().enumerate() {
        let c = &row.config;
        s += &format!(
            "{:>4}  {:<22} {:<12} {:>12.2} {:>12.2} {:>12.2}\n",
            i + 1,
            format!("{}x{}x{}", c.m, c.k, c.n),
            c.schedule.to_string(),
            row.measured_us,
            fit.before_us[i],
            fit.after_us[i]
        );
    }
    s += &format!(
        "mean absolute percentage error: before {:.2}%, after {:.2}%\n",
        mape(&fit.before_us, &measured),
        mape(&fit.after_us, &measured)
    );
    for key in keys.iter().map(|k| k.trim()).filter(|k| !k.is_empty()) {
        let unit = KEYS.iter().find(|k| k.name == key).map_or("", |k| k.unit);
        s += &format!(
            "  {key}: {} -> {} {unit}\n",
            start.get(key).unwrap_or(f64::NAN),
            fit.profile.get(key).unwrap_or(f64::NAN)
        );
    }
    for w in &fit.warnings {
        s += &format!("warning: {w}\n");
    }
    s
}

#[cfg(test)]
mod tests;
