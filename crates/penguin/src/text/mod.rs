//! The `.pir` text form of a function: the shared line scanner ([`lexer`]), the parser
//! ([`parse`], which documents the grammar) and the printer ([`print`](mod@print)); and the
//! same text with loops ([`loops`], printed by [`print_looped`] and read by
//! [`parse_looped`]).
//!
//! The lexer is public on purpose: the `bir` crate reads its `.bir` format with the same
//! [`lexer::Cursor`], comments and limits, so both formats report errors alike. So is what
//! both looped texts share, written once for any instruction type: the spelling of loops and
//! terms ([`loop_syntax`]), the nest of loop lines printed and read back ([`loop_nest`]), and
//! the terms found on an instruction line ([`loop_terms`]); each format says only how its
//! instruction lines read and which of their numbers are parameters.

pub mod lexer;
pub mod loop_nest;
pub mod loop_syntax;
pub mod loop_terms;
pub mod loops;
pub mod parse;
pub mod parse_loops;
pub mod print;

pub use loops::{looped_lines, print_looped, LoopLine};
pub use parse_loops::{parse_looped, parse_looped_with_source_map, LoopSourceMap};
