//! Looped BIR in the CLI: the rolled form `ntile gemm --emit bir` prints, and `.bir` files
//! with loops as `ntile run`, `verify` and `fmt` read them.

/// `p` without the Penguin origin of each instruction: an origin changes from one iteration
/// to the next but is no loop parameter, so it would keep every loop from rolling.
pub fn without_origins(p: &bir::Program) -> bir::Program {
    let mut p = p.clone();
    p.streams.iter_mut().flatten().for_each(|i| i.origin = None);
    p
}

/// The `.bir` text of `p` with its repeated bodies rolled into loops (origins dropped).
pub fn rolled_text(p: &bir::Program) -> String {
    bir::roll(&without_origins(p)).to_string()
}
