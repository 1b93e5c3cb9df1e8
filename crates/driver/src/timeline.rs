//! What the timelines (the trace and the SVG) are told about a kernel: a planned GEMM's
//! title, its SBUF buffers and how its HBM tensors map to output tiles and K steps (from the
//! plan's facts), and for any program the buffers of its Penguin function and the source
//! line of each instruction.

use codegen::{GemmPlan, Schedule};
use penguin::{FunctionView, Memory};
use sim::{Axis, GemmLayout, KernelInfo, SbufBuffer, TensorAxes};

/// One line naming the GEMM: shape, dtypes, target, schedule and blocks.
pub fn title(plan: &GemmPlan) -> String {
    let cfg = &plan.config;
    let mut s = format!(
        "gemm {}x{}x{}  {} x {} -> {} (HBM {})  on {}  {}",
        cfg.m, cfg.k, cfg.n, cfg.lhs_dtype, cfg.rhs_dtype, cfg.out_dtype, cfg.input_dtype, cfg.target, cfg.schedule
    );
    if let (Some(b), Some(order)) = (plan.tiling.blocks, plan.tiling.loop_order) {
        if cfg.schedule == Schedule::BlockedMnk {
            s += &format!(" (blocks m {} n {} k {}, {})", b.m, b.n, b.k, order.name());
        } else {
            s += &format!(" (blocks m {} n {}, {})", b.m, b.n, order.name());
        }
    }
    s
}

/// The SBUF tensors of a Penguin function as the buffers the timeline tracks (for
/// [`KernelInfo::buffers`]).
pub fn sbuf_buffers(f: &penguin::Function) -> Vec<SbufBuffer> {
    f.tensors
        .values()
        .filter(|t| t.memory == Memory::Sbuf)
        .filter_map(|t| {
            Some(SbufBuffer {
                name: t.name.clone(),
                start_partition: 0,
                num_partitions: u32::try_from(*t.shape.first()?).ok()?,
                byte_offset: t.address?,
                bytes_per_partition: t.bytes_per_partition(),
            })
        })
        .collect()
}

/// The context of a planned GEMM for [`sim::chrome_trace_with`] and friends.
pub fn kernel_info(plan: &GemmPlan) -> KernelInfo {
    let cfg = &plan.config;
    let f = &plan.function;
    let buffers = sbuf_buffers(f);
    let chunks = &plan.tiling.k_chunks;
    let k_rows = chunks.first().map_or(codegen::K_TILE, |c| u64::from(c.len));
    let k_parts = chunks.first().map_or(codegen::K_TILE, |c| u64::from(c.parts));
    let (tm, tn) = (codegen::M_TILE, codegen::N_TILE);
    let a = match (cfg.sparsity, cfg.lhs_transposed) {
        // `[K', M]`: a K step's compressed rows, the rows of an m tile.
        (Some(_), _) => ((Axis::K, k_parts), (Axis::M, tm)),
        (None, false) => ((Axis::M, tm), (Axis::K, k_rows)),
        (None, true) => ((Axis::K, k_rows), (Axis::M, tm)),
    };
    let name = |id| f.tensor(id).map_or_else(String::new, |t| t.name.clone());
    let roles = plan.tensors;
    let mut tensors = vec![
        TensorAxes { name: name(roles.a), rows: a.0, cols: a.1 },
        TensorAxes { name: name(roles.b), rows: (Axis::K, k_rows), cols: (Axis::N, tn) },
        TensorAxes { name: name(roles.c), rows: (Axis::M, tm), cols: (Axis::N, tn) },
    ];
    if let Some(tags) = roles.a_tags {
        // `[K', M / 4]`: a K step's compressed rows, four columns of an m tile per word.
        let cols = (Axis::M, tm / u64::from(penguin::SPARSE_TAGS_PER_WORD));
        tensors.push(TensorAxes { name: name(tags), rows: (Axis::K, k_parts), cols });
    }
    KernelInfo {
        title: Some(title(plan)),
        buffers,
        gemm: Some(GemmLayout {
            m: cfg.m,
            n: cfg.n,
            tile_m: tm,
            tile_n: tn,
            block: plan.tiling.blocks.map(|b| (b.m, b.n)),
            tensors,
        }),
        source: None,
    }
}

/// The source lines of a program's instructions for [`KernelInfo::source`], from a function
/// that places each instruction (engine, index in its stream) on a 1-based file line.
pub fn source_lines(
    file: &str,
    program: &bir::Program,
    line_of: impl Fn(bir::Engine, usize) -> Option<usize>,
) -> sim::SourceLines {
    let lines = bir::Engine::all()
        .take(program.streams.len())
        .zip(&program.streams)
        .map(|(engine, stream)| {
            (0..stream.len()).map(|i| line_of(engine, i).and_then(|l| u32::try_from(l).ok())).collect()
        })
        .collect();
    sim::SourceLines { file: file.to_string(), lines }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sbuf_tensors_of_a_function_are_its_buffers() {
        let Ok(f) = penguin::parse::parse(include_str!("../../../examples/gemm_4x16x8.pir")) else {
            panic!("the example parses")
        };
        let buffers = sbuf_buffers(&f);
        let names: Vec<&str> = buffers.iter().map(|b| b.name.as_str()).collect();
        let want: Vec<&str> =
            f.tensors.values().filter(|t| t.memory == Memory::Sbuf).map(|t| t.name.as_str()).collect();
        assert!(!want.is_empty());
        assert_eq!(names, want);
        for (b, t) in buffers.iter().zip(f.tensors.values().filter(|t| t.memory == Memory::Sbuf)) {
            assert_eq!(
                (b.byte_offset, b.bytes_per_partition),
                (t.address.unwrap_or(u64::MAX), t.bytes_per_partition())
            );
        }
    }

    #[test]
    fn source_lines_follow_a_bir_files_source_map() {
        let text = include_str!("../../../examples/gemm_4x16x8.bir");
        let Ok((program, map)) = bir::text::parse_with_source_map(text) else { panic!("the example parses") };
        let src = source_lines("gemm.bir", &program, |e, i| {
            map.line_of(bir::text::Line::Inst(bir::InstRef { engine: e, index: i }))
        });
        assert_eq!(src.lines.len(), program.streams.len());
        let pe = &src.lines[bir::Engine::Pe.index()];
        assert_eq!(pe.len(), program.stream(bir::Engine::Pe).len());
        // Each PE instruction sits on its own line, in stream order.
        let lines: Vec<u32> = pe.iter().map(|l| l.unwrap_or(0)).collect();
        assert!(lines.iter().all(|&l| l > 0) && lines.windows(2).all(|w| w[0] < w[1]), "{lines:?}");
        let first = text.lines().nth(lines[0] as usize - 1).unwrap_or("");
        assert!(first.contains("load_stationary"), "{first}");
    }
}
