//! `ntile sweep`: plan, lower and cycle-model every GEMM of a CSV (a whole model's layers) on
//! all cores, each distinct GEMM once, and print a per-layer table with totals.
//!
//! Two CSV layouts are read (by the reader `calibrate` shares, [`crate::csv`]), told apart by
//! their header (names case-insensitive):
//! - ntile's: `name,m,k,n` with optional `dtype` and `schedule` columns, in any order;
//! - SCALE-Sim's GEMM topology: `Layer,M,N,K` (or `Layer Name, M, N, K,`), for
//!   `C[M, N] = A[M, K] @ B[K, N]`.
//!
//! Every layer is a [`GemmRequest`] run by the driver without a simulation, as `ntile gemm
//! --no-sim` runs it (plan + lower + model); rows that make the same request are modeled once
//! (`sweep/model.rs`).

use std::path::PathBuf;

use clap::Args;
use codegen::Schedule;
use driver::{Cancel, GemmRequest};
use penguin::{DType, Target};
use serde::Serialize;

use crate::error::CliError;
use crate::progress::Progress;

/// Flags of `ntile sweep`.
#[derive(Args, Clone, Debug)]
#[command(after_long_help = "\
CSV layouts (told apart by the header):
  name,m,k,n[,dtype][,schedule]     ntile's; dtype and schedule per row override the flags
  Layer,M,N,K                       SCALE-Sim's GEMM topology (C[M,N] = A[M,K] @ B[K,N])

Examples:
  ntile sweep layers.csv --target trn2
  ntile sweep gpt2.csv --dtype fp8e4m3 --schedule blocked-mn --json

Exit codes: 0 ok, 2 bad input (the row and column are named), 3 internal error.")]
pub struct SweepArgs {
    /// The CSV of layers
    #[arg(value_name = "LAYERS.csv")]
    pub layers: PathBuf,
    /// Target: trn1, trn2 or trn3
    #[arg(long, default_value = "trn2")]
    pub target: Target,
    /// Matmul dtype of rows without a dtype column
    #[arg(long, default_value = "bf16", value_parser = crate::gemm::operand_dtype)]
    pub dtype: DType,
    /// Loop nest of rows without a schedule column (auto searches per layer)
    #[arg(long, default_value = "auto")]
    pub schedule: Schedule,
    /// Dtype of A and B in HBM (as `ntile gemm --hbm-dtype`) [default: the matmul dtype]
    #[arg(long, value_name = "DTYPE")]
    pub hbm_dtype: Option<DType>,
    /// Dtype of C (as `ntile gemm --out-dtype`)
    #[arg(long, default_value = "fp32")]
    pub out_dtype: DType,
    /// Print one JSON object with the rows and totals instead of the table
    #[arg(long)]
    pub json: bool,
    /// Show no progress on stderr
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// One layer of the CSV.
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    /// Line in the file (1-based).
    pub line: usize,
    /// Layer name.
    pub name: String,
    /// Rows of C.
    pub m: u64,
    /// Contraction length.
    pub k: u64,
    /// Columns of C.
    pub n: u64,
    /// Matmul dtype, if the row names one.
    pub dtype: Option<DType>,
    /// Schedule, if the row names one.
    pub schedule: Option<Schedule>,
}

/// One modeled layer.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Layer name.
    pub name: String,
    /// Rows of C.
    pub m: u64,
    /// Contraction length.
    pub k: u64,
    /// Columns of C.
    pub n: u64,
    /// Matmul dtype.
    pub dtype: String,
    /// The schedule used (auto's choice for `auto`).
    pub schedule: String,
    /// Modeled time, in microseconds.
    pub modeled_time_us: f64,
    /// Hardware FLOPs utilization.
    pub hfu: f64,
    /// Bytes moved to or from HBM.
    pub hbm_bytes: u64,
}

/// The sums over all layers.
#[derive(Clone, Debug, Serialize)]
pub struct Totals {
    /// Layers.
    pub layers: usize,
    /// Sum of the modeled times, in microseconds.
    pub modeled_time_us: f64,
    /// Time-weighted HFU (total hardware FLOPs over peak times the total time).
    pub hfu: f64,
    /// Sum of the HBM bytes.
    pub hbm_bytes: u64,
}

/// The `--json` output.
#[derive(Clone, Debug, Serialize)]
pub struct Sweep {
    /// Target name.
    pub target: String,
    /// Every layer, in file order.
    pub rows: Vec<Row>,
    /// Totals.
    pub totals: Totals,
}

/// Which column holds what.
#[derive(Default)]
struct Columns {
    name: Option<usize>,
    m: Option<usize>,
    k: Option<usize>,
    n: Option<usize>,
    dtype: Option<usize>,
    schedule: Option<usize>,
}

fn header(line: usize, names: &[String]) -> Result<Columns, CliError> {
    let mut c = Columns::default();
    for (i, name) in names.iter().enumerate() {
        let slot = match name.to_ascii_lowercase().as_str() {
            "name" | "layer" | "layer name" | "layer_name" => &mut c.name,
            "m" => &mut c.m,
            "k" => &mut c.k,
            "n" => &mut c.n,
            "dtype" => &mut c.dtype,
            "schedule" => &mut c.schedule,
            other => {
                return Err(CliError::usage(format!(
                    "line {line}: unknown column `{other}` (expected name,m,k,n[,dtype][,schedule] or \
                     SCALE-Sim's Layer,M,N,K)"
                )))
            }
        };
        if slot.replace(i).is_some() {
            return Err(CliError::usage(format!("line {line}: column `{name}` appears twice")));
        }
    }
    for (slot, what) in [(c.m, "m"), (c.k, "k"), (c.n, "n")] {
        if slot.is_none() {
            return Err(CliError::usage(format!("line {line}: the header has no `{what}` column")));
        }
    }
    Ok(c)
}

/// Parse the CSV text (read by [`crate::csv::read`]) into layers; errors name the line (and
/// column).
pub fn parse(text: &str) -> Result<Vec<Layer>, CliError> {
    let Some(table) = crate::csv::read(text)? else {
        return Err(CliError::usage("no layers: expected a header (name,m,k,n or Layer,M,N,K) and at least one row"));
    };
    let cols = header(table.header_line, &table.names)?;
    let mut layers = Vec::new();
    for (line, f) in &table.rows {
        let line = *line;
        let name = cols.name.map_or_else(|| format!("layer{}", layers.len() + 1), |i| f[i].clone());
        let dim = |slot: Option<usize>, what: &str| -> Result<u64, CliError> {
            let v = slot.map_or("", |i| f[i].as_str());
            match v.parse::<u64>() {
                Ok(d) if d > 0 => Ok(d),
                _ => Err(CliError::usage(format!(
                    "line {line} ({name}), column {what}: `{v}` is not a positive integer"
                ))),
            }
        };
        let (m, k, n) = (dim(cols.m, "m")?, dim(cols.k, "k")?, dim(cols.n, "n")?);
        let dtype = match cols.dtype.map(|i| f[i].as_str()).filter(|v| !v.is_empty()) {
            Some(v) => Some(
                v.parse::<DType>().map_err(|e| CliError::usage(format!("line {line} ({name}), column dtype: {e}")))?,
            ),
            None => None,
        };
        let schedule = match cols.schedule.map(|i| f[i].as_str()).filter(|v| !v.is_empty()) {
            Some(v) => Some(
                v.parse::<Schedule>()
                    .map_err(|e| CliError::usage(format!("line {line} ({name}), column schedule: {e}")))?,
            ),
            None => None,
        };
        layers.push(Layer { line, name, m, k, n, dtype, schedule });
    }
    if layers.is_empty() {
        return Err(CliError::usage("no layers: expected a header (name,m,k,n or Layer,M,N,K) and at least one row"));
    }
    Ok(layers)
}

/// The request of one layer: modeled without a simulation.
pub fn request(args: &SweepArgs, layer: &Layer) -> GemmRequest {
    let mut req = GemmRequest::new(layer.m, layer.k, layer.n, layer.dtype.unwrap_or(args.dtype), args.target);
    req.hbm_dtype = args.hbm_dtype;
    req.out_dtype = args.out_dtype;
    req.schedule = layer.schedule.unwrap_or(args.schedule);
    req.options.simulate = false;
    req
}

/// The totals of the rows.
pub fn totals(rows: &[Row]) -> Totals {
    let time: f64 = rows.iter().map(|r| r.modeled_time_us).sum();
    let busy: f64 = rows.iter().map(|r| r.hfu * r.modeled_time_us).sum();
    Totals {
        layers: rows.len(),
        modeled_time_us: time,
        hfu: if time > 0.0 { busy / time } else { 0.0 },
        hbm_bytes: rows.iter().map(|r| r.hbm_bytes).sum(),
    }
}

/// The table of the rows and totals.
pub fn table(target: Target, rows: &[Row], t: &Totals) -> String {
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(5).max(5);
    let mut s = format!("ntile sweep: {} layers on {target}\n", rows.len());
    s += &format!(
        "{:<width$} {:>7} {:>7} {:>7} {:<9} {:<12} {:>12} {:>6} {:>10}\n",
        "layer", "m", "k", "n", "dtype", "schedule", "modeled_us", "HFU", "HBM_MiB"
    );
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    for r in rows {
        s += &format!(
            "{:<width$} {:>7} {:>7} {:>7} {:<9} {:<12} {:>12.1} {:>6.3} {:>10.1}\n",
            r.name,
            r.m,
            r.k,
            r.n,
            r.dtype,
            r.schedule,
            r.modeled_time_us,
            r.hfu,
            mib(r.hbm_bytes)
        );
    }
    s += &format!(
        "{:<width$} {:>7} {:>7} {:>7} {:<9} {:<12} {:>12.1} {:>6.3} {:>10.1}\n",
        "total",
        "",
        "",
        "",
        "",
        "",
        t.modeled_time_us,
        t.hfu,
        mib(t.hbm_bytes)
    );
    s
}

/// Run `ntile sweep`, stopped by `cancel` (between layers and inside each).
pub fn run(args: &SweepArgs, cancel: Option<&Cancel>) -> Result<String, CliError> {
    let text = std::fs::read_to_string(&args.layers)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", args.layers.display())))?;
    let layers = parse(&text)
        .map_err(|e| CliError { code: e.code, message: format!("{}: {}", args.layers.display(), e.message) })?;
    let progress = Progress::new(args.quiet, "ntile sweep");
    let rows = sweep(args, &layers, &progress, cancel)?.rows;
    drop(progress);
    let totals = totals(&rows);
    if args.json {
        let out = Sweep { target: args.target.to_string(), rows, totals };
        let mut s = serde_json::to_string_pretty(&out)
            .map_err(|e| CliError::internal(format!("cannot encode the sweep: {e}")))?;
        s.push('\n');
        return Ok(s);
    }
    Ok(table(args.target, &rows, &totals))
}

mod model;

pub use model::{sweep, Swept};

#[cfg(test)]
mod tests;
