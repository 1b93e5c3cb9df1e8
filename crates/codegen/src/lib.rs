//! The NeuronCodegen layer: how a matmul becomes hardware-legal sub-tiles.
//!
//! [`NeuronCodegen`] wraps a base [`penguin::IrBuilder`] and provides the seed's entry
//! points under their seed names: [`NeuronCodegen::combine_tiles`] (operand normalizer),
//! [`NeuronCodegen::get_sb_and_psum_shape`] (tile geometry),
//! [`NeuronCodegen::process_new_neuroninst`] (the per-instruction hook, with
//! [`NeuronCodegen::process_dep_edges`] and the private `insert`, which nothing else reaches),
//! [`NeuronCodegen::finalize_kernel`] and [`NeuronCodegen::finalize`]. The matmul combine
//! tier is free functions ([`combine_matmult_tiles`]), as in the seed. The GEMM planner is
//! the main emitter. It has one entry point, [`plan`]: a [`PlanRequest`] (the
//! [`GemmConfig`], how its blocks are planned, and `auto`'s search with its cost) and a
//! factory of base builders ([`default_builder`] gives [`penguin::GeneratedBuilder`]). The
//! [`GemmPlan`] it returns carries what downstream code needs of it: its [`Tiling`] (K
//! chunks, tile grid, edge tiles, blocks, loop order) and its HBM tensors by role
//! ([`GemmTensors`]).
//!
//! Invariants: every instruction goes through `process_new_neuroninst`, so every operand is
//! canonical and every overlap between instructions is a dependency edge; at most 8
//! accumulation groups are live; SBUF allocations fit the target.
//!
//! ```
//! use codegen::{default_builder, plan, GemmConfig, PlanRequest};
//! use penguin::{DType, Target};
//!
//! let cfg = GemmConfig::new(300, 1000, 777, DType::Bf16, Target::Trn2);
//! let plan = plan(&PlanRequest::new(&cfg), &default_builder).unwrap().plan;
//! assert_eq!(plan.stats.matmuls, 3 * 2 * 8);
//! assert_eq!((plan.tiling.tiles, plan.tiling.edge_tile_shape), ([3, 2], [44, 265]));
//! ```
#![deny(missing_docs)]

mod auto_limits;
mod combine;
mod error;
mod gemm;
mod indirect;
mod neuron;
mod offload;
mod plan;
mod schedule;

pub use auto_limits::AutoLimits;
pub use combine::{
    check_double_row_dtypes, combine_matmult_tiles, combine_sparse_matmult_tiles,
    combine_trn2_double_row_matmult_tiles, MatMultAccumulation, MatMultSparseSubTile, MatMultSubTile,
    DOUBLE_ROW_FIRST_DIM, DOUBLE_ROW_FIRST_F_DIM, DOUBLE_ROW_FP8_ONLY, DOUBLE_ROW_LAST_DIM, DOUBLE_ROW_UINT8_ONLY,
    SPARSE_NO_COLUMN_TILING, SPARSE_POSITION_2D, SPARSE_SIZE_2D,
};
pub use error::CodegenError;
pub use gemm::{
    double_row_position, k_chunks, pack_double_row, place_share, unpack_double_row, BlockSizes, GemmConfig, GemmPlan,
    GemmTensors, KChunk, LoopOrder, Schedule, Share, SparseA, Split, Tiling, UnknownSchedule, K_TILE, M_TILE, N_TILE,
};
pub use neuron::{CodegenStats, NeuronCodegen, ShapeOptions, SingleBuffered};
pub use offload::{Base, OffloadValue, ShapeBases};
pub use penguin::looped::NestMark;
pub use plan::{default_builder, plan, AutoCostFn, AutoSearch, PlanRequest, Planned, Planning};
pub use schedule::{
    auto_candidates, choose_auto, estimate_ns, estimate_ns_with, plan_sampled, plan_sampled_skipping, plans_in_loops,
    AutoChoice, AutoCost, AutoJob, AutoJobCost, SampledPlan, AUTO_SHORTLIST, AUTO_TIME_TOLERANCE, K_PERIOD,
};
