//! Tests of the looped-function verifier.
