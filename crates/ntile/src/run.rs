//! `ntile run`: simulate a Penguin function (lowered first) or a BIR program on `.npy` inputs,
//! write the named tensors as `.npy` files, and report the cycle model's timing of the program
//! (`--json`, `--trace`, `--svg`; `--no-sim` models it without data).
//!
//! Inputs must have the tensor's exact shape. A float tensor accepts float32 (or float16)
//! arrays, converted to its dtype as the DMA would (round to nearest even); bf16 and fp8
//! tensors also accept their raw bit patterns as uint16 / uint8 arrays; integer tensors take
//! the matching integer arrays. Outputs are written as float32 (fp32), float16 (fp16), uint16
//! bit patterns (bf16), uint8 bit patterns (fp8) or the native integer type.

use std::path::{Path, PathBuf};

use clap::Args;
use penguin::{DType, Target};

use crate::compile::compile_function;
use crate::error::CliError;
use crate::fmt::{load_path, Ir, Source};
use crate::npy::{self, OutKind};
use crate::timing::{self, Written};
use crate::verify::check_program;

/// `NAME=FILE.npy`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The tensor.
    pub name: String,
    /// The file.
    pub path: PathBuf,
}

fn binding(s: &str) -> Result<Binding, String> {
    match s.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok(Binding { name: name.to_string(), path: PathBuf::from(path) })
        }
        _ => Err(format!("expected NAME=FILE.npy, found `{s}`")),
    }
}

/// Flags of `ntile run`.
#[derive(Args, Clone, Debug)]
#[command(after_long_help = "\
Examples:
  ntile run examples/gemm_4x16x8.pir --input a=a.npy --input b=b.npy --output c=c.npy
  ntile run examples/gemm_4x16x8.bir --input a=a.npy --input b=b.npy --output c=c.npy
  ntile gemm --m 130 --k 300 --n 70 --emit penguin > g.pir && ntile run g.pir --input a=a.npy --input b=b.npy --output c=c.npy
  ntile run my_kernel.pir --no-sim --json --trace t.json   time a kernel without data

After the run the cycle model's timing is printed: modeled time, HFU when the program has
matmuls, HBM traffic and each engine class's busy time (`--json` prints them as one report
with the keys of `ntile gemm --json`). With --no-sim the program is only modeled: no input is
read, no --output can be written and races are not looked for (that needs the simulation).

Every kernel input must be given (unless --no-sim). Float tensors take float32 (or float16)
arrays; bf16 and fp8 tensors also take uint16 / uint8 bit patterns; int16, int32 and uint8
tensors take matching integer arrays. Outputs: float32 for fp32, float16 for fp16, uint16 bits for bf16,
uint8 bits for fp8, native integers otherwise.

Exit codes: 0 ok, 2 bad input (the IR, an array, a name) or a simulation error in the program
(such as a race or a read of an open PSUM group), 3 internal error.")]
pub struct RunArgs {
    /// A .pir or .bir file (or either as JSON); `-` reads stdin
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// An input tensor: NAME=FILE.npy (repeat for each input)
    #[arg(long = "input", value_name = "NAME=FILE.npy", value_parser = binding)]
    pub inputs: Vec<Binding>,
    /// A tensor to write after the run: NAME=FILE.npy (repeatable; `-o` for short)
    #[arg(short = 'o', long = "output", value_name = "NAME=FILE.npy", value_parser = binding)]
    pub outputs: Vec<Binding>,
    /// Target to lower a Penguin function for [default: trn2]; a BIR program names its own
    #[arg(long)]
    pub target: Option<Target>,
    /// Print one JSON report instead of the summary
    #[arg(long)]
    pub json: bool,
    /// Write the modeled engine timeline as Chrome/Perfetto trace-event JSON
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Write the modeled engine timeline as a static SVG
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Model the program's timing without simulating it: no input is read, no output written
    #[arg(long)]
    pub no_sim: bool,
    /// Override hardware profile keys of the cycle model from a JSON file (see `ntile hw show`)
    #[arg(long, value_name = "FILE.json", long_help = crate::hw::HW_HELP)]
    pub hw: Option<PathBuf>,
    /// Refuse a simulation whose memory images (the program's HBM, SBUF and PSUM) exceed this
    /// many bytes; K, M, G, T suffixes are powers of 1024 [default: half of physical memory]
    #[arg(long, value_name = "BYTES", value_parser = crate::budget::parse_bytes)]
    pub max_memory: Option<u64>,
}

/// An `.npy` file's shape, element type string and raw little-endian element bytes.
struct RawArray {
    shape: Vec<u64>,
    descr: String,
    data: Vec<u8>,
}

fn read_raw(path: &Path) -> Result<RawArray, CliError> {
    let what = path.display();
    let bytes = std::fs::read(path).map_err(|e| CliError::usage(format!("cannot read {what}: {e}")))?;
    let bad = |m: String| CliError::usage(format!("{what}: {m}"));
    let mut cursor = std::io::Cursor::new(bytes.as_slice());
    let header = npyz::NpyHeader::from_reader(&mut cursor).map_err(|e| bad(format!("not a valid .npy file ({e})")))?;
    let payload = bytes.get(cursor.position() as usize..).unwrap_or_default();
    let npy = npyz::NpyFile::with_header(header, payload);
    let descr = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => return Err(bad(format!("holds a structured or nested dtype ({})", other.descr()))),
    };
    if npy.order() == npyz::Order::Fortran {
        return Err(bad("Fortran-ordered arrays are not supported; save np.ascontiguousarray(x)".into()));
    }
    let item: u64 = match descr.as_str() {
        "<f4" | "<i4" => 4,
        "<f2" | "<i2" | "<u2" => 2,
        "|u1" | "<u1" | "|i1" | "<i1" => 1,
        d if d.starts_with('>') => return Err(bad(format!("big-endian data ({d}) is not supported"))),
        d => return Err(bad(format!("holds dtype {d}, which no ntile tensor takes"))),
    };
    let shape = npy.shape().to_vec();
    let too_large = || bad(format!("shape {shape:?} is too large"));
    let len = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).ok_or_else(too_large)?;
    let need = len.checked_mul(item).ok_or_else(too_large)?;
    if need > payload.len() as u64 {
        return Err(bad(format!(
            "truncated: shape {shape:?} needs {need} data bytes but the file has {}",
            payload.len()
        )));
    }
    Ok(RawArray { shape, descr, data: payload[..need as usize].to_vec() })
}

fn f32s(a: &RawArray) -> Vec<f32> {
    match a.descr.as_str() {
        "<f2" => a.data.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
        _ => a.data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
    }
}

/// Store one input array into the simulator, checking shape and dtype against the tensor.
fn write_input(sim: &mut sim::Simulator, t: &bir::HbmTensor, b: &Binding) -> Result<(), CliError> {
    let a = read_raw(&b.path)?;
    let at = format!("--input {}={}", b.name, b.path.display());
    if a.shape != t.shape {
        return Err(CliError::usage(format!("{at}: shape {:?} but tensor `{}` is {:?}", a.shape, t.name, t.shape)));
    }
    let float = t.dtype.is_float();
    let raw_ok = matches!(
        (t.dtype, a.descr.as_str()),
        (DType::Int16, "<i2")
            | (DType::Int32, "<i4")
            | (DType::Bf16, "<u2")
            | (DType::Uint8 | DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2, "|u1" | "<u1")
    );
    let sim_err = |e: sim::SimError| CliError::usage(format!("{at}: {e}"));
    if raw_ok {
        sim.write_hbm_tensor(&t.name, &a.data).map_err(sim_err)
    } else if float && matches!(a.descr.as_str(), "<f4" | "<f2") {
        sim.write_hbm_f32(&t.name, &f32s(&a)).map_err(sim_err)
    } else {
        let accepts = match t.dtype {
            DType::Fp32 | DType::Fp16 => "float32 or float16",
            DType::Bf16 => "float32, float16 or uint16 bf16 bit patterns",
            DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2 => "float32, float16 or uint8 fp8 bit patterns",
            DType::Uint8 => "uint8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
        };
        Err(CliError::usage(format!(
            "{at}: holds {} but tensor `{}` is {} (it takes {accepts})",
            a.descr, t.name, t.dtype
        )))
    }
}

fn write_int_npy<T: npyz::AutoSerialize + Copy, const N: usize>(
    shape: &[u64],
    data: &[u8],
    conv: impl Fn([u8; N]) -> T,
) -> Result<Vec<u8>, CliError> {
    use npyz::WriterBuilder as _;
    let mut out = Vec::with_capacity(data.len() + 128);
    let written = (|| {
        let mut w = npyz::WriteOptions::new().default_dtype().shape(shape).writer(&mut out).begin_nd()?;
        for chunk in data.chunks_exact(N) {
            let mut b = [0u8; N];
            b.copy_from_slice(chunk);
            w.push(&conv(b))?;
        }
        w.finish()
    })();
    written.map_err(|e| CliError::internal(format!("npy encoding failed: {e}")))?;
    Ok(out)
}

/// The `.npy` bytes of a tensor's raw contents.
fn output_npy(t: &bir::HbmTensor, raw: &[u8]) -> Result<Vec<u8>, CliError> {
    let kind = match t.dtype {
        DType::Fp32 => OutKind::F32,
        DType::Fp16 => OutKind::F16,
        DType::Bf16 => OutKind::U16Bits,
        DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2 | DType::Uint8 => OutKind::U8Bits,
        DType::Int16 => return write_int_npy(&t.shape, raw, i16::from_le_bytes),
        DType::Int32 => return write_int_npy(&t.shape, raw, i32::from_le_bytes),
    };
    npy::to_npy_bytes(&t.shape, kind, raw)
}

/// The file lines of the program being run, to place simulator errors.
enum SourceLines {
    /// A Penguin function lowered to the program: a BIR instruction is placed by its `origin`.
    Penguin(Option<penguin::parse::SourceMap>),
    /// A BIR program: a BIR instruction is placed by its own line.
    Bir(Option<bir::text::SourceMap>),
}

/// The instructions a simulator error names: the one that failed, or every stuck one of a
/// deadlock (empty when the error is not about an instruction).
fn failing_insts(e: &sim::SimError) -> Vec<sim::InstRef> {
    use sim::SimError as E;
    match e {
        E::WrongEngine { at, .. }
        | E::UnknownSemaphore { at, .. }
        | E::OutOfRange { at, .. }
        | E::CopyShape { at, .. }
        | E::BadOperand { at, .. }
        | E::NoStationary { at }
        | E::MatmulShape { at, .. }
        | E::IndexOutOfRange { at, .. }
        | E::Unsupported { at, .. }
        | E::AccumulateWithoutStart { at, .. }
        | E::ReadOpenGroup { at, .. } => vec![*at],
        E::Deadlock { stuck } => stuck.iter().map(|s| s.at).collect(),
        E::UnknownTensor { .. }
        | E::TensorSize { .. }
        | E::TensorOutsideHbm { .. }
        | E::HbmTooLarge { .. }
        | E::TooManyStreams { .. }
        | E::NoSteadyState { .. }
        | E::Internal(_) => Vec::new(),
    }
}

/// The file line of BIR instruction `at`: its own line in a `.bir` file, the line of the
/// Penguin instruction it was lowered from in a `.pir` file.
fn inst_line(program: &bir::Program, lines: &SourceLines, at: sim::InstRef) -> Option<usize> {
    match lines {
        SourceLines::Bir(map) => map.as_ref()?.line_of(bir::text::Line::Inst(at)),
        SourceLines::Penguin(map) => {
            let id = program.streams.get(at.engine.index())?.get(at.index)?.origin?;
            map.as_ref()?.line_of(penguin::Entity::Inst(id))
        }
    }
}

/// A simulator error with the file line of the instruction it names, when known. For a
/// lowered Penguin function each BIR position is also named by the Penguin instruction it
/// came from: `i0 (dma0[0]): ...`, on the line of `i0`.
fn sim_message(src: &Source, program: &bir::Program, lines: &SourceLines, e: &sim::SimError) -> String {
    let message = e.to_string();
    let (line, message) = match lines {
        SourceLines::Bir(map) => {
            // The failing instruction's own line; a deadlock names several and gets none.
            let at = match e {
                sim::SimError::Deadlock { .. } => None,
                _ => failing_insts(e).first().copied(),
            };
            (at.and_then(|at| map.as_ref()?.line_of(bir::text::Line::Inst(at))), message)
        }
        SourceLines::Penguin(map) => {
            let origin = |at: sim::InstRef| {
                program.streams.get(at.engine.index()).and_then(|s| s.get(at.index)).and_then(|i| i.origin)
            };
            let insts = failing_insts(e);
            let line = insts.iter().find_map(|&at| {
                let id = origin(at)?;
                map.as_ref()?.line_of(penguin::Entity::Inst(id))
            });
            let message = match e {
                // Each stuck stream prints as `pe[3] waits for ...`.
                sim::SimError::Deadlock { stuck } => {
                    let named = |s: &sim::Stuck| match origin(s.at) {
                        Some(id) => format!("{id} ({s})"),
                        None => s.to_string(),
                    };
                    format!("deadlock: {}", stuck.iter().map(named).collect::<Vec<_>>().join(", "))
                }
                _ => match insts.first().and_then(|&at| Some((at, origin(at)?))) {
                    Some((at, id)) => match message.strip_prefix(&format!("{at}: ")) {
                        Some(rest) => format!("{id} ({at}): {rest}"),
                        None => format!("{id} ({at}): {message}"),
                    },
                    None => message,
                },
            };
            (line, message)
        }
    };
    match line {
        Some(line) => format!("{}:{line}: simulation failed: {message}", src.name),
        None => format!("{}: simulation failed: {message}", src.name),
    }
}

/// Run `ntile run`.
pub fn run(args: &RunArgs) -> Result<String, CliError> {
    if let (true, Some(b)) = (args.no_sim, args.outputs.first()) {
        return Err(CliError::usage(format!(
            "--output {}=... cannot be used with --no-sim: without a simulation no tensor has contents to write",
            b.name
        )));
    }
    if args.no_sim && args.max_memory.is_some() {
        return Err(CliError::usage(
            "--max-memory cannot be used with --no-sim: it bounds the simulation's memory images, and --no-sim allocates none",
        ));
    }
    let (src, ir) = load_path(&args.file)?;
    let ir = crate::looped_pir::expand_ir(&src, ir)?;
    let mut penguin_instructions = None;
    let mut buffers = Vec::new();
    let (program, lines, required): (bir::Program, SourceLines, Vec<String>) = match ir {
        Ir::Penguin(f, fmap) => {
            // The function names its SBUF allocations; the timeline tracks them by name.
            buffers = crate::kernel_info::sbuf_buffers(&f);
            let target = args.target.unwrap_or(Target::Trn2);
            let program = compile_function(&src, &f, fmap.as_ref(), target)?;
            let required =
                f.inputs.iter().filter_map(|&t| penguin::FunctionView::tensor(&f, t)).map(|t| t.name.clone()).collect();
            penguin_instructions = Some(penguin::FunctionView::layout(&f).len() as u64);
            (program, SourceLines::Penguin(fmap), required)
        }
        Ir::Bir(p, bmap) => {
            if let Some(t) = args.target.filter(|t| *t != p.target) {
                return Err(CliError::usage(format!(
                    "{}: the program is for {}, but --target says {t}",
                    src.name, p.target
                )));
            }
            check_program(&src, &p, bmap.as_ref(), "BIR verifier")?;
            let required = p.hbm.iter().filter(|t| t.role == bir::HbmRole::Input).map(|t| t.name.clone()).collect();
            (p, SourceLines::Bir(bmap), required)
        }
        Ir::PenguinLooped(..) => return Err(CliError::internal("a looped function was not expanded")),
        Ir::BirLooped(lp, lmap) => {
            if let Some(t) = args.target.filter(|t| *t != lp.header.target) {
                return Err(CliError::usage(format!(
                    "{}: the program is for {}, but --target says {t}",
                    src.name, lp.header.target
                )));
            }
            // Verified looped, then run unrolled: the same as its unrolled twin.
            let (p, bmap) = crate::looped::unroll(&src, &lp, lmap.as_ref())?;
            let required = p.hbm.iter().filter(|t| t.role == bir::HbmRole::Input).map(|t| t.name.clone()).collect();
            (p, SourceLines::Bir(bmap), required)
        }
    };
    let names: Vec<&str> = program.hbm.iter().map(|t| t.name.as_str()).collect();
    let tensor = |b: &Binding, flag: &str| {
        program.hbm_tensor(&b.name).ok_or_else(|| {
            CliError::usage(format!(
                "--{flag} {}: `{}` is not an HBM tensor of {} (it has {})",
                b.name,
                b.name,
                src.name,
                names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            ))
        })
    };
    for (i, b) in args.inputs.iter().enumerate() {
        tensor(b, "input")?;
        if args.inputs[..i].iter().any(|o| o.name == b.name) {
            return Err(CliError::usage(format!("--input {} is given twice", b.name)));
        }
    }
    for b in &args.outputs {
        tensor(b, "output")?;
    }
    let hw = crate::hw::load_profile(args.hw.as_deref(), program.target)?;
    // What the trace and SVG say of each instruction: its file line and the buffers it uses.
    let info = || sim::KernelInfo {
        buffers: buffers.clone(),
        source: Some(crate::kernel_info::source_lines(&src.name, &program, |engine, index| {
            inst_line(&program, &lines, sim::InstRef { engine, index })
        })),
        ..sim::KernelInfo::default()
    };
    if args.no_sim {
        let cycle = model(&src, &program, &lines, &hw)?;
        timing::write_timelines(&program, &cycle, &info(), args.trace.as_deref(), args.svg.as_deref())?;
        let report = timing::report(&program, &cycle, penguin_instructions, None, Vec::new());
        if args.json {
            return timing::json(&report);
        }
        let head = format!(
            "modeled {} on {} without data (--no-sim): {} instructions, {} matmuls, {} bytes to or from HBM\n",
            program.kernel_name, program.target, report.bir_instructions, report.matmuls, report.hbm_bytes
        );
        return Ok(head + &timing::summary(&report));
    }
    if let Some(missing) = required.iter().find(|n| !args.inputs.iter().any(|b| &b.name == *n)) {
        return Err(CliError::usage(format!(
            "{}: input `{missing}` is not given (pass --input {missing}=FILE.npy)",
            src.name
        )));
    }
    // The program's own size, not an input, is what the simulator cannot hold.
    if program.hbm_size > sim::MAX_HBM_BYTES {
        return Err(CliError::usage(format!(
            "{}: the program needs {} bytes of HBM (hbm_size), more than the simulator can allocate ({} bytes)",
            src.name,
            program.hbm_size,
            sim::MAX_HBM_BYTES
        )));
    }
    // The simulator allocates the program's whole HBM image and the target's SBUF and PSUM.
    let budget = args.max_memory.unwrap_or_else(crate::budget::default_budget);
    let chip = program.target.info();
    let on_chip = 128 * u64::from(chip.statebuf_par_size_in_bytes)
        + 128 * u64::from(chip.psum_num_banks) * u64::from(chip.psum_par_size_in_bytes);
    let images = program.hbm_size.saturating_add(on_chip);
    if images > budget {
        return Err(CliError::usage(format!(
            "{}: simulating it needs about {} of memory images (hbm_size {} bytes plus SBUF and PSUM), over the \
             memory budget of {}; raise --max-memory BYTES if the machine has the memory, or time it with --no-sim",
            src.name,
            crate::budget::human(u128::from(images)),
            program.hbm_size,
            crate::budget::human(u128::from(budget))
        )));
    }
    let mut simulator = crate::threads::simulator(&program)?;
    for b in &args.inputs {
        write_input(&mut simulator, tensor(b, "input")?, b)?;
    }
    let stats = simulator.run().map_err(|e| CliError::usage(sim_message(&src, &program, &lines, &e)))?;
    if let Some(race) = stats.races.first() {
        let more = stats.races.len() as u64 - 1 + stats.races_dropped;
        let tail = if more > 0 { format!(" (and {more} more)") } else { String::new() };
        // Placed on the line of the access that ran later.
        let at = match inst_line(&program, &lines, race.later.at) {
            Some(line) => format!("{}:{line}", src.name),
            None => src.name.clone(),
        };
        return Err(CliError::usage(format!("{at}: {race}{tail}")));
    }
    let mut out = format!(
        "ran {} on {}: {} instructions, {} matmuls, {} bytes moved by DMA\n",
        program.kernel_name, program.target, stats.instructions, stats.matmuls, stats.dma_bytes
    );
    let mut written = Vec::new();
    for b in &args.outputs {
        let t = tensor(b, "output")?;
        let raw = simulator.read_hbm_tensor(&t.name).map_err(|e| CliError::usage(format!("{}: {e}", src.name)))?;
        npy::write_atomic(&b.path, &output_npy(t, &raw)?)?;
        out += &format!("  wrote {} {} {:?} to {}\n", t.name, t.dtype, t.shape, b.path.display());
        let shape = t.shape.clone();
        written.push(Written { name: t.name.clone(), dtype: t.dtype.to_string(), shape, path: b.path.clone() });
    }
    let cycle = model(&src, &program, &lines, &hw)?;
    timing::write_timelines(&program, &cycle, &info(), args.trace.as_deref(), args.svg.as_deref())?;
    let report = timing::report(&program, &cycle, penguin_instructions, Some(stats.dma_bytes), written);
    if args.json {
        return timing::json(&report);
    }
    Ok(out + &timing::summary(&report))
}

/// The cycle model of the program; a program the model cannot replay (a deadlock) is the
/// user's error, placed on its file line like a simulation error.
fn model(
    src: &Source,
    program: &bir::Program,
    lines: &SourceLines,
    hw: &penguin::HwProfile,
) -> Result<sim::CycleReport, CliError> {
    sim::model_with(program, hw).map_err(|e| {
        let message = sim_message(src, program, lines, &e);
        CliError::usage(message.replacen("simulation failed", "cycle model failed", 1))
    })
}
