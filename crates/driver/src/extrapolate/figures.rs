//! The figures of a plan and its lowering that a report states (instruction counts, matmuls,
//! PSUM groups, the SBUF peak, HBM bytes), fitted like the program when it is extrapolated.

use codegen::GemmPlan;
use penguin::FunctionView;
use serde::{Deserialize, Serialize};

/// What the report needs from a plan and its lowering, fitted like the program.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figures {
    /// Penguin instructions.
    pub penguin_instructions: u64,
    /// BIR instructions of the unrolled program.
    pub bir_instructions: u64,
    /// Matmul instructions.
    pub matmuls: u64,
    /// Accumulation groups.
    pub psum_groups: u64,
    /// Most accumulation groups live at once.
    pub max_live_psum_groups: u32,
    /// Highest SBUF byte used per partition.
    pub sbuf_peak_bytes_per_partition: u64,
    /// Single-buffered blocks: `a_block`, `b_block`, `result`.
    pub single_buffered: [bool; 3],
    /// Bytes DMA instructions move to or from HBM.
    pub hbm_bytes: u64,
    /// Every HBM tensor moved once.
    pub hbm_read_once_bytes: u64,
}

impl Figures {
    /// The figures of a plan and its lowered program.
    pub fn of(plan: &GemmPlan, program: &bir::Program) -> Figures {
        let counts = [plan.function.layout().len() as u64, program.num_insts() as u64, program.hbm_traffic_bytes()];
        Figures::of_counts(&plan.stats, counts, &program.hbm)
    }

    /// The figures of a plan's `stats`, its `[Penguin instructions, BIR instructions, HBM
    /// bytes moved]` and the HBM tensors of its program (each moved once is the lower bound).
    pub fn of_counts(stats: &codegen::CodegenStats, counts: [u64; 3], hbm: &[bir::HbmTensor]) -> Figures {
        let sb = stats.single_buffered;
        let [penguin_instructions, bir_instructions, hbm_bytes] = counts;
        Figures {
            penguin_instructions,
            bir_instructions,
            matmuls: stats.matmuls,
            psum_groups: stats.psum_groups,
            max_live_psum_groups: stats.max_live_psum_groups,
            sbuf_peak_bytes_per_partition: stats.sbuf_peak_bytes_per_partition,
            single_buffered: [sb.a_block, sb.b_block, sb.result],
            hbm_bytes,
            hbm_read_once_bytes: hbm.iter().map(bir::HbmTensor::num_bytes).fold(0, u64::saturating_add),
        }
    }

    /// The single-buffered blocks as the planner's stats hold them.
    pub fn single_buffered(&self) -> codegen::SingleBuffered {
        let [a_block, b_block, result] = self.single_buffered;
        codegen::SingleBuffered { a_block, b_block, result }
    }
}
