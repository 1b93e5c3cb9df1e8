//! The `.bir` text format: printing a [`Program`](crate::Program) and parsing it back, so that a hand-written
//! program can be verified and simulated.
//!
//! Line-oriented; `;` starts a comment to the end of the line. Grammar:
//!
//! ```text
//! program NAME target=TARGET [hbm_size=BYTES] [sbuf_peak=BYTES]      first line
//! hbm "NAME" DTYPE [D0, D1, ...] @ADDRESS [input|output|internal]    an HBM tensor
//! sem sN "NAME"                                                    semaphores s0, s1, ... in order
//! loc iN "FILE:LINE"                                               the source location of Penguin instruction iN
//! stream ENGINE:                                                   pe act dve pool sp dma0..dma15
//!   [N:] OPCODE KEY=VALUE ... OPERAND=AP ... [wait(sN>=V, ...)] [signal(sN)] [origin(iN)]
//!
//! AP = MEMORY.DTYPE[pSTART:COUNT:STRIDE @BYTE_OFFSET [STRIDE, NUM]...]
//! ```
//!
//! Numbers are limited as in the `.pir` format ([`penguin::text::lexer::MAX_EXTENT`]): HBM tensors
//! and byte offsets below 2^48, access-pattern walks within 2^48 elements ([`check_limits`]).
//!
//! Instructions belong to the stream section above them, in order; the optional `N:` is the
//! index in the stream and must match. `hbm_size` defaults to the end of the last HBM tensor,
//! `sbuf_peak` to the highest SBUF byte any access pattern touches. Opcodes, attribute and
//! operand names are those of [`Op::name`](crate::program::Op::name), [`Op::attributes`](crate::program::Op::attributes) and
//! [`Op::aps`](crate::program::Op::aps).
//!
//! A stream may also loop (`loop iD xT {` ... `}`, parameters with `+C*iD` terms): the syntax
//! is in [`loops`], printed by [`print_looped`] and read by [`parse_looped`].
//!
//! Several cores sharing HBM (a [`Chip`](crate::Chip)) print as one header and one section per
//! core: see [`chip`].
//!
//! Lines are read with penguin's shared scanner ([`penguin::text::lexer`]); [`print`](mod@print) writes
//! the format and [`parse`](mod@parse) reads it back.

pub mod chip;
pub mod loops;
pub mod parse;
pub mod parse_loops;
pub mod print;

pub use chip::*;
pub use loops::*;
pub use parse::*;
pub use parse_loops::*;
pub use print::*;

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
