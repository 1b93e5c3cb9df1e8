//! Modeling a sweep's layers: rows that ask for the same GEMM (the same request in every
//! field that decides its figures) are modeled once, the distinct requests on all cores
//! (`NTILE_THREADS` respected), and every row is filled from its request's figures, in file
//! order.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use driver::{Cancel, DriverError, GemmRequest};

use super::{request, Layer, Row, SweepArgs};
use crate::error::CliError;
use crate::progress::Progress;

/// The rows of a sweep and how many GEMMs were modeled to fill them.
#[derive(Clone, Debug)]
pub struct Swept {
    /// Every layer, in file order.
    pub rows: Vec<Row>,
    /// GEMMs modeled: one per distinct request.
    pub models: usize,
}

/// What decides a layer's figures: the whole request its row makes (shape, operand, output
/// and HBM dtypes, schedule, blocks, loop order, transposes, perf mode, sparsity, target and
/// hardware profile), written out by its `Debug` text. That text names every field with its
/// exact value (an `f64` prints so that it reads back to the same bits), so a field added to
/// [`GemmRequest`] is keyed without a change here. The row's name and line are not in it.
fn key(req: &GemmRequest) -> String {
    format!("{req:?}")
}

/// The distinct requests of `layers`, in order of first appearance, and for each layer the
/// index of its request.
fn distinct(args: &SweepArgs, layers: &[Layer]) -> (Vec<GemmRequest>, Vec<usize>) {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut requests = Vec::new();
    let of = layers
        .iter()
        .map(|layer| {
            let req = request(args, layer);
            *index.entry(key(&req)).or_insert_with(|| {
                requests.push(req);
                requests.len() - 1
            })
        })
        .collect();
    (requests, of)
}

/// Why a request has no figures: the run was stopped, or the request failed (the error
/// before it names a row).
#[derive(Clone, Debug)]
enum Failed {
    Interrupted(CliError),
    Request(CliError),
}

/// Model one request (as `ntile gemm --no-sim` does); the row's name is left empty for the
/// rows to fill.
fn model(req: &GemmRequest, cancel: Option<&Cancel>) -> Result<Row, Failed> {
    let mut req = req.clone();
    req.options.cancel = cancel.cloned();
    let out = driver::gemm(&req, None).map_err(|e| match e {
        DriverError::Interrupted => Failed::Interrupted(e.into()),
        e => Failed::Request(e.into()),
    })?;
    let r = out.report;
    Ok(Row {
        name: String::new(),
        m: r.m,
        k: r.k,
        n: r.n,
        dtype: req.lhs_dtype.to_string(),
        schedule: r.schedule,
        modeled_time_us: r.modeled_time_us,
        hfu: r.hfu,
        hbm_bytes: r.hbm_bytes,
    })
}

/// Model every distinct request of `layers` once, on all cores, and fill every row from its
/// request; the first failing row (in file order) is the error, naming its line.
pub fn sweep(
    args: &SweepArgs,
    layers: &[Layer],
    progress: &Progress,
    cancel: Option<&Cancel>,
) -> Result<Swept, CliError> {
    let (requests, of) = distinct(args, layers);
    let mut uses = vec![0usize; requests.len()];
    for &i in &of {
        uses[i] += 1;
    }
    let threads = driver::threads::threads()?.min(requests.len()).max(1);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let models = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Row, Failed>>>> = Mutex::new(vec![None; requests.len()]);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(req) = requests.get(i) else { break };
                if cancel.is_some_and(Cancel::is_cancelled) {
                    break;
                }
                models.fetch_add(1, Ordering::Relaxed);
                let r = model(req, cancel);
                if let Ok(mut slots) = results.lock() {
                    slots[i] = Some(r);
                }
                let d = done.fetch_add(uses[i], Ordering::Relaxed) + uses[i];
                progress.phase(&format!("{d}/{} layers", layers.len()));
            });
        }
    });
    if cancel.is_some_and(Cancel::is_cancelled) {
        return Err(DriverError::Interrupted.into());
    }
    let slots = results.into_inner().map_err(|_| CliError::internal("a sweep worker failed (a bug)"))?;
    let rows = layers
        .iter()
        .zip(&of)
        .map(|(layer, &i)| match &slots[i] {
            Some(Ok(row)) => Ok(Row { name: layer.name.clone(), ..row.clone() }),
            Some(Err(Failed::Interrupted(e))) => Err(e.clone()),
            Some(Err(Failed::Request(e))) => Err(CliError {
                code: e.code,
                message: format!("{}: line {} ({}): {}", args.layers.display(), layer.line, layer.name, e.message),
            }),
            None => Err(CliError::internal(format!("line {} ({}): no result (a bug)", layer.line, layer.name))),
        })
        .collect::<Result<Vec<Row>, CliError>>()?;
    Ok(Swept { rows, models: models.into_inner() })
}
