//! In-memory entry points for embedding ntile (its Python module): command lines parsed from
//! an argument vector, GEMM operands given as arrays instead of `.npy` paths, a watch that
//! lets the embedder interrupt a long run, and the cycle model of a kernel file as a report.
//!
//! The embedder builds the same [`GemmArgs`](crate::gemm::GemmArgs) the CLI does (by parsing
//! flags with [`parse`]), so every flag of `ntile gemm` works from the embedding too.

use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Parser as _;
use penguin::{DType, Target};
use serde::Serialize;

use crate::error::CliError;
use crate::fmt::{load_path, Ir};
use crate::Cli;

/// Exit code of a run the embedder interrupted (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;

/// The error of an interrupted run.
pub fn interrupted() -> CliError {
    CliError { code: EXIT_INTERRUPTED, message: "interrupted".into() }
}

/// Parse a command line (without the program name) as the `ntile` binary does. A bad flag is
/// a usage error whose message is clap's, without its `error: ` prefix and usage footer.
pub fn parse<S: AsRef<str>>(argv: &[S]) -> Result<Cli, CliError> {
    let words = std::iter::once("ntile").chain(argv.iter().map(AsRef::as_ref));
    Cli::try_parse_from(words).map_err(|e| {
        let text = e.render().to_string();
        let first = text.lines().next().unwrap_or_default();
        CliError::usage(first.strip_prefix("error: ").unwrap_or(first).trim().to_string())
    })
}

/// One GEMM operand in memory: a row-major `[rows, cols]` matrix of values.
#[derive(Clone, Debug, PartialEq)]
pub struct Operand<'a> {
    /// Rows.
    pub rows: u64,
    /// Columns.
    pub cols: u64,
    /// The values, row-major; borrowed when the caller's buffer already holds f32.
    pub values: Cow<'a, [f32]>,
}

impl<'a> Operand<'a> {
    /// Borrow f32 values (the DMA casts them to the matmul dtype, as for `.npy` input).
    pub fn from_f32(name: &str, rows: u64, cols: u64, values: &'a [f32]) -> Result<Self, CliError> {
        check_len(name, rows, cols, values.len() as u64)?;
        Ok(Operand { rows, cols, values: Cow::Borrowed(values) })
    }

    /// Decode the little-endian bit patterns of an HBM dtype (bf16, fp16, an fp8 type). The
    /// values are exact in f32, so storing them in an HBM tensor of `dtype` gives back the
    /// caller's bytes.
    pub fn from_bits(name: &str, rows: u64, cols: u64, dtype: DType, bytes: &[u8]) -> Result<Self, CliError> {
        if !dtype.is_float() || dtype == DType::Fp32 {
            return Err(CliError::usage(format!("{name}: {dtype} is not a narrow float dtype")));
        }
        let size = dtype.size_bytes() as usize;
        if !bytes.len().is_multiple_of(size) {
            return Err(CliError::usage(format!("{name}: {} bytes are not whole {dtype} elements", bytes.len())));
        }
        check_len(name, rows, cols, (bytes.len() / size) as u64)?;
        let values = bytes.chunks_exact(size).map(|c| dtype.decode(dtype.load_bits(c))).collect();
        Ok(Operand { rows, cols, values: Cow::Owned(values) })
    }

    /// The shape as `.npy` reading reports it.
    pub fn shape(&self) -> Vec<u64> {
        vec![self.rows, self.cols]
    }
}

fn check_len(name: &str, rows: u64, cols: u64, len: u64) -> Result<(), CliError> {
    match rows.checked_mul(cols) {
        Some(n) if n == len => Ok(()),
        _ => Err(CliError::usage(format!("{name}: shape [{rows}, {cols}] but {len} elements"))),
    }
}

/// A and B of a GEMM in memory (A as `[M, K]`, or `[K, M]` with `--lhs-transposed`).
#[derive(Clone, Debug, PartialEq)]
pub struct GemmInputs<'a> {
    /// A.
    pub a: Operand<'a>,
    /// B `[K, N]`.
    pub b: Operand<'a>,
}

/// A poll for interruption that the long phases of a run call between steps (the auto
/// search between candidates, the phases between each other, the simulation every few
/// milliseconds). Once the poll says stop, the run ends with [`interrupted`].
pub struct Watch<'a> {
    poll: Option<&'a (dyn Fn() -> bool + Sync)>,
    stopped: AtomicBool,
}

impl<'a> Watch<'a> {
    /// A watch that never stops the run (the CLI's).
    pub fn none() -> Self {
        Watch { poll: None, stopped: AtomicBool::new(false) }
    }

    /// A watch asking `poll` whether to stop.
    pub fn new(poll: &'a (dyn Fn() -> bool + Sync)) -> Self {
        Watch { poll: Some(poll), stopped: AtomicBool::new(false) }
    }

    /// Whether the run must stop (asks the poll until it once says yes).
    pub fn stop(&self) -> bool {
        if self.stopped.load(Ordering::Relaxed) {
            return true;
        }
        let stop = self.poll.is_some_and(|p| p());
        self.stopped.store(stop, Ordering::Relaxed);
        stop
    }

    /// Whether the poll has said stop before.
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// [`interrupted`] if the run must stop.
    pub fn check(&self) -> Result<(), CliError> {
        if self.stop() {
            Err(interrupted())
        } else {
            Ok(())
        }
    }

    /// Run the simulator to its end. With a poll, the simulation runs on its own thread while
    /// this one polls; an interrupted simulation is left to finish in the background and its
    /// result dropped.
    pub fn simulate(
        &self,
        mut simulator: sim::Simulator,
    ) -> Result<(sim::Simulator, Result<sim::RunStats, sim::SimError>), CliError> {
        if self.poll.is_none() {
            let stats = simulator.run();
            return Ok((simulator, stats));
        }
        let worker = std::thread::Builder::new()
            .name("ntile-simulate".into())
            .spawn(move || {
                let stats = simulator.run();
                (simulator, stats)
            })
            .map_err(|e| CliError::internal(format!("cannot start the simulation thread: {e}")))?;
        while !worker.is_finished() {
            self.check()?;
            std::thread::sleep(Duration::from_millis(20));
        }
        worker.join().map_err(|_| CliError::internal("the simulation thread panicked (a bug)"))
    }
}

/// One HBM tensor of a kernel, as the embedder needs it to pass inputs and read outputs.
#[derive(Clone, Debug, Serialize)]
pub struct TensorInfo {
    /// Name.
    pub name: String,
    /// Element type.
    pub dtype: String,
    /// Shape (row-major).
    pub shape: Vec<u64>,
    /// `input`, `output` or `internal`.
    pub role: String,
}

/// The cycle model of a kernel file (what `ntile gemm --json` reports of its model).
#[derive(Clone, Debug, Serialize)]
pub struct KernelReport {
    /// Kernel name.
    pub kernel: String,
    /// Target name.
    pub target: String,
    /// BIR instruction count.
    pub bir_instructions: u64,
    /// Bytes moved to or from HBM.
    pub hbm_bytes: u64,
    /// Modeled time of the program (cycle model), in microseconds.
    pub modeled_time_us: f64,
    /// Hardware matmul FLOPs / (peak x modeled time); 0 without matmuls.
    pub hfu: f64,
    /// Busy fraction of each engine class over the modeled time (dma: mean of the 16 queues).
    pub engine_busy: sim::EngineBusy,
    /// The HBM tensors.
    pub tensors: Vec<TensorInfo>,
}

/// Load, verify and lower (a Penguin function, for `target`, default trn2) the kernel at
/// `path` and run the cycle model on it.
pub fn model_kernel(path: &Path, target: Option<Target>) -> Result<KernelReport, CliError> {
    let (src, ir) = load_path(path)?;
    let program = match crate::looped_pir::expand_ir(&src, ir)? {
        Ir::Penguin(f, map) => {
            crate::compile::compile_function(&src, &f, map.as_ref(), target.unwrap_or(Target::Trn2))?
        }
        Ir::Bir(p, map) => {
            if let Some(t) = target.filter(|t| *t != p.target) {
                return Err(CliError::usage(format!(
                    "{}: the program is for {}, but the target given is {t}",
                    src.name, p.target
                )));
            }
            crate::verify::check_program(&src, &p, map.as_ref(), "BIR verifier")?;
            p
        }
        Ir::PenguinLooped(..) => return Err(CliError::internal("a looped function was not expanded")),
        Ir::BirLooped(lp, map) => {
            if let Some(t) = target.filter(|t| *t != lp.header.target) {
                return Err(CliError::usage(format!(
                    "{}: the program is for {}, but the target given is {t}",
                    src.name, lp.header.target
                )));
            }
            crate::looped::unroll(&src, &lp, map.as_ref())?.0
        }
    };
    let cycle = sim::model(&program).map_err(|e| CliError::usage(format!("{}: cycle model: {e}", src.name)))?;
    let tensors = program
        .hbm
        .iter()
        .map(|t| TensorInfo {
            name: t.name.clone(),
            dtype: t.dtype.to_string(),
            shape: t.shape.clone(),
            role: match t.role {
                bir::HbmRole::Input => "input",
                bir::HbmRole::Output => "output",
                bir::HbmRole::Internal => "internal",
            }
            .to_string(),
        })
        .collect();
    Ok(KernelReport {
        kernel: program.kernel_name.clone(),
        target: program.target.to_string(),
        bir_instructions: program.num_insts() as u64,
        hbm_bytes: program.hbm_traffic_bytes(),
        modeled_time_us: cycle.total_us(),
        hfu: cycle.hfu(),
        engine_busy: cycle.engine_busy_summary(),
        tensors,
    })
}

#[cfg(test)]
#[allow(clippy::panic, reason = "tests fail loudly on unexpected values")]
mod tests {
    use super::*;

    #[test]
    fn parse_reports_clap_errors_as_usage() {
        let e = parse(&["gemm", "--m", "x"]).err();
        let e = e.map(|e| (e.code, e.message.contains("invalid value 'x' for '--m <M>'")));
        assert_eq!(e, Some((crate::error::EXIT_USAGE, true)));
    }

    #[test]
    fn from_bits_decodes_bf16_exactly() {
        // 1.5 and -2.0 in bf16.
        let bytes = [0xc0, 0x3f, 0x00, 0xc0];
        let op = Operand::from_bits("a", 1, 2, DType::Bf16, &bytes).map(|o| o.values.into_owned());
        assert_eq!(op, Ok(vec![1.5, -2.0]));
    }

    #[test]
    fn operand_length_must_match_shape() {
        let e = Operand::from_f32("b", 2, 2, &[1.0, 2.0, 3.0]).err().map(|e| e.message);
        assert_eq!(e.as_deref(), Some("b: shape [2, 2] but 3 elements"));
    }

    fn gemm_args(flags: &[&str]) -> crate::gemm::GemmArgs {
        match parse(&[&["gemm", "--json"][..], flags].concat()).map(|c| c.command) {
            Ok(crate::Command::Gemm(args)) => args,
            other => unreachable!("gemm flags parse: {other:?}"),
        }
    }

    #[test]
    fn bf16_bits_in_hbm_give_the_values_of_their_f32_widening() {
        // A [3, 5] and B [5, 2] with values exact in bf16.
        let a: Vec<f32> = (0..15).map(|i| (i as f32 - 7.0) * 0.375).collect();
        let b: Vec<f32> = (0..10).map(|i| 1.0 - i as f32 * 0.25).collect();
        let bits = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| half::bf16::from_f32(*x).to_le_bytes()).collect() };
        let (ab, bb) = (bits(&a), bits(&b));
        let narrow = GemmInputs {
            a: Operand::from_bits("a", 3, 5, DType::Bf16, &ab).map_err(|e| e.message).unwrap_or_else(|m| panic!("{m}")),
            b: Operand::from_bits("b", 5, 2, DType::Bf16, &bb).map_err(|e| e.message).unwrap_or_else(|m| panic!("{m}")),
        };
        let wide = GemmInputs {
            a: Operand { rows: 3, cols: 5, values: Cow::Borrowed(&a) },
            b: Operand { rows: 5, cols: 2, values: Cow::Borrowed(&b) },
        };
        let r16 = crate::gemm::run_with(&gemm_args(&["--hbm-dtype", "bf16"]), Some(narrow), &Watch::none());
        let r32 = crate::gemm::run_with(&gemm_args(&[]), Some(wide), &Watch::none());
        let (r16, r32) = match (r16, r32) {
            (Ok(x), Ok(y)) => (x, y),
            (x, y) => panic!("{:?} {:?}", x.err(), y.err()),
        };
        // Exact: every product and sum of these values is exact in fp32.
        let expect: Vec<f32> = (0..3)
            .flat_map(|i| (0..2).map(move |j| (i, j)))
            .map(|(i, j)| (0..5).map(|k| a[i * 5 + k] * b[k * 2 + j]).sum())
            .collect();
        assert_eq!(r16.result.as_deref(), Some(&expect[..]));
        assert_eq!(r32.result, r16.result);
        assert!(r16.report.hbm_bytes < r32.report.hbm_bytes);
        assert_eq!((r16.report.m, r16.report.k, r16.report.n), (3, 5, 2));
    }

    #[test]
    fn in_memory_operands_that_do_not_chain_are_a_usage_error() {
        let (a, b) = (vec![0.0f32; 6], vec![0.0f32; 8]);
        let inputs = GemmInputs {
            a: Operand { rows: 2, cols: 3, values: Cow::Borrowed(&a) },
            b: Operand { rows: 4, cols: 2, values: Cow::Borrowed(&b) },
        };
        let e = crate::gemm::run_with(&gemm_args(&[]), Some(inputs), &Watch::none()).err();
        assert_eq!(
            e.map(|e| (e.code, e.message)),
            Some((
                crate::error::EXIT_USAGE,
                "shapes do not chain: A [M, K] is [2, 3] (K = 3) but B [K, N] is [4, 2]".to_string()
            ))
        );
    }

    #[test]
    fn an_interrupted_gemm_ends_with_the_interrupted_error() {
        let poll = || true;
        let e = crate::gemm::run_with(&gemm_args(&["--m", "64", "--k", "64", "--n", "64"]), None, &Watch::new(&poll));
        assert_eq!(e.err().map(|e| e.code), Some(EXIT_INTERRUPTED));
    }

    #[test]
    fn a_watch_stays_stopped_once_its_poll_says_stop() {
        let poll = || true;
        let watch = Watch::new(&poll);
        assert_eq!(watch.check().err().map(|e| e.code), Some(EXIT_INTERRUPTED));
        assert!(watch.stopped());
    }
}
