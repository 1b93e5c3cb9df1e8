//! `nki`, ntile's NKI kernel builder: a traced NKI kernel (the records its Python made, in
//! the format of [`trace`], written by the Python tracer) becomes a verified Penguin
//! [`Function`](penguin::Function) with the tile-level semantics of NKI.
//!
//! [`KernelBuilder::build`] takes a [`Trace`] and
//! 1. **checks** every record against the hardware and NKI's rules (partitions over 128,
//!    PSUM tiles over a bank, matmul free sizes, `Result buffer of matmult must be psum!`,
//!    memories an instruction cannot use, views out of range or across blocks, shapes,
//!    reading an output before writing it, records ntile cannot express yet), each error
//!    naming the kernel's `file.py:line` ([`NkiError`]);
//! 2. **allocates** SBUF and PSUM by liveness: every logical tile is an instance of its
//!    allocation site; a site gets the slots its live instances need, plus one for rotation
//!    where that fits, and sites not live at once share bytes ([`AllocationReport`]);
//! 3. **infers accumulation groups** from `accumulate` (`false`, `true`, `null`, legacy
//!    `"add"`), dropping zero fills that only feed `+=`, and merges them with the seed's
//!    `combine_matmult_tiles`;
//! 4. **chooses engines** where a record leaves it open, as the GEMM planner does;
//! 5. **emits** every instruction through `NeuronCodegen::process_new_neuroninst` with its
//!    source location (`loc("file.py:41")` in the `.pir` text), runs `finalize_kernel` (the
//!    seed's `Kernel name mismatch` / `Unsupported kernel name ` contracts) and the verifier;
//! 6. **rolls** the function along the kernel's loop markers ([`NkiKernel::looped`]).
//!
//! Invariants: the function of an [`NkiKernel`] is verified; every instruction carries the
//! location of the record it came from; its looped form expands to it; every on-chip tile
//! lies inside its site's storage, and storage shared by two sites is never live for both.
//!
//! ```
//! use nki::{KernelBuilder, Trace};
//!
//! // out[128, 512] = a[128, 512] + a, through SBUF.
//! let json = r#"{
//!   "format": "ntile-nki-trace", "version": 1, "kernel": "double_it", "api": "current",
//!   "target": "trn2", "files": ["kernel.py"],
//!   "tensors": [
//!     {"name": "a", "buffer": "input", "dtype": "fp32", "shape": [128, 512], "site": 0, "loc": [0, 3]},
//!     {"name": "out", "buffer": "shared_hbm", "dtype": "fp32", "shape": [128, 512], "site": 1, "loc": [0, 4]},
//!     {"name": "x", "buffer": "sbuf", "dtype": "fp32", "shape": [128, 512], "site": 2, "loc": [0, 5]}
//!   ],
//!   "ops": [
//!     {"op": "dma_copy", "loc": [0, 6], "dst": {"t": 2, "ap": [[512, 128], [1, 512]]}, "src": {"t": 0, "ap": [[512, 128], [1, 512]]}},
//!     {"op": "tensor_tensor", "loc": [0, 7], "dst": {"t": 2, "ap": [[512, 128], [1, 512]]},
//!      "in0": {"t": 2, "ap": [[512, 128], [1, 512]]}, "in1": {"t": 2, "ap": [[512, 128], [1, 512]]}, "alu": "add", "engine": null},
//!     {"op": "dma_copy", "loc": [0, 8], "dst": {"t": 1, "ap": [[512, 128], [1, 512]]}, "src": {"t": 2, "ap": [[512, 128], [1, 512]]}}
//!   ],
//!   "outputs": [1]
//! }"#;
//! let trace = Trace::from_json(json)?;
//! let kernel = KernelBuilder::new(trace.target).build(&trace)?;
//! assert_eq!(kernel.function.insts.len(), 3);
//! assert!(kernel.function.to_string().contains("tensor_tensor engine=dve op=add"));
//! assert!(kernel.function.to_string().contains("loc(\"kernel.py:7\")"));
//! assert_eq!(kernel.allocations[0].slots, 1);
//! # Ok::<(), nki::NkiError>(())
//! ```
#![deny(missing_docs)]

mod accum;
mod alloc;
mod build;
mod emit;
mod error;
mod kinds;
mod split;
pub mod trace;
mod view;

pub use alloc::AllocationReport;
pub use build::{KernelBuilder, NkiKernel};
pub use error::NkiError;
pub use trace::{Trace, TRACE_FORMAT, TRACE_VERSION};
