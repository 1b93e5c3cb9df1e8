//! The `.pir` text form of a function: the shared line scanner ([`lexer`]), the parser
//! ([`parse`], which documents the grammar) and the printer ([`print`](mod@print)).
//!
//! The lexer is public on purpose: the `bir` crate reads its `.bir` format with the same
//! [`lexer::Cursor`], comments and limits, so both formats report errors alike.

pub mod lexer;
pub mod parse;
pub mod print;
