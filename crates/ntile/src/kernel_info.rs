//! What `ntile gemm` tells the trace and the SVG about its kernel: a title, the SBUF
//! buffers of the plan, and how the HBM tensors map to output tiles and K steps.

use codegen::{GemmConfig, GemmPlan, Schedule};
use penguin::Memory;
use sim::{Axis, GemmLayout, KernelInfo, SbufBuffer, TensorAxes};

/// The block sizes a schedule uses, if it blocks (`blocked-mn`, `blocked-mnk`).
pub fn blocks_of(cfg: &GemmConfig) -> Option<codegen::BlockSizes> {
    matches!(cfg.schedule, Schedule::BlockedMn | Schedule::BlockedMnk).then_some(cfg.blocks)
}

/// One line naming the GEMM: shape, dtypes, target, schedule and blocks.
pub fn title(cfg: &GemmConfig) -> String {
    let mut s = format!(
        "gemm {}x{}x{}  {} x {} -> {} (HBM {})  on {}  {}",
        cfg.m, cfg.k, cfg.n, cfg.lhs_dtype, cfg.rhs_dtype, cfg.out_dtype, cfg.input_dtype, cfg.target, cfg.schedule
    );
    if let Some(b) = blocks_of(cfg) {
        if cfg.schedule == Schedule::BlockedMnk {
            s += &format!(" (blocks m {} n {} k {}, {})", b.m, b.n, b.k, cfg.order.name());
        } else {
            s += &format!(" (blocks m {} n {}, {})", b.m, b.n, cfg.order.name());
        }
    }
    s
}

/// The context of a planned GEMM for [`sim::chrome_trace_with`] and friends.
pub fn kernel_info(plan: &GemmPlan) -> KernelInfo {
    let cfg = &plan.config;
    let f = &plan.function;
    let buffers = f
        .tensors
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
        .collect();
    let chunks = codegen::k_chunks(cfg).0;
    let k_rows = chunks.first().map_or(codegen::K_TILE, |c| u64::from(c.len));
    let k_parts = chunks.first().map_or(codegen::K_TILE, |c| u64::from(c.parts));
    let (tm, tn) = (codegen::M_TILE, codegen::N_TILE);
    let a = match (cfg.sparsity, cfg.lhs_transposed) {
        (Some(_), _) => ((Axis::M, tm), (Axis::K, k_parts)),
        (None, false) => ((Axis::M, tm), (Axis::K, k_rows)),
        (None, true) => ((Axis::K, k_rows), (Axis::M, tm)),
    };
    let mut tensors = vec![
        TensorAxes { name: "a".into(), rows: a.0, cols: a.1 },
        TensorAxes { name: "b".into(), rows: (Axis::K, k_rows), cols: (Axis::N, tn) },
        TensorAxes { name: "c".into(), rows: (Axis::M, tm), cols: (Axis::N, tn) },
    ];
    if cfg.sparsity.is_some() {
        tensors.push(TensorAxes { name: "a_tags".into(), rows: a.0, cols: a.1 });
    }
    KernelInfo {
        title: Some(title(cfg)),
        buffers,
        gemm: Some(GemmLayout {
            m: cfg.m,
            n: cfg.n,
            tile_m: tm,
            tile_n: tn,
            block: blocks_of(cfg).map(|b| (b.m, b.n)),
            tensors,
        }),
        source: None,
    }
}
