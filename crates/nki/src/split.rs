//! Records too wide for one instruction, split into several.
//!
//! An engine instruction walks at most three free dimensions on the compute engines and four
//! on a DMA queue (after contiguous dimensions merge; `bir`'s `Too many strides!`). A kernel's
//! view can have more: an average pool reads `in[p, 2i + a, 2j + b]` as four dimensions that
//! do not merge, a trilinear resize six. NKI's compiler issues such a statement as several
//! instructions; so does ntile, before it checks anything: [`split_wide`] replaces each record
//! whose views have too many free dimensions by one record per chunk of its iteration space.
//!
//! The chunks are runs of consecutive elements of every operand (in each view's row-major
//! order, which is the order an elementwise instruction pairs them in), all of one size `c`:
//! the largest `c` for which each operand's run is itself a strided view within the engine's
//! dimensions. A reduction is chunked in its kept dimensions only (its reduced, trailing
//! dimensions stay whole in every chunk), and per-partition columns (`scale`, `bias`, `s0`,
//! `s1`) are the same in every chunk. Records that do not decompose this way (matmuls,
//! transposes, an activation's row reduction, patterns, statistics) are left as they are,
//! so the checks that follow report them.

use std::borrow::Cow;

use crate::trace::{Record, Trace, View};

/// Free dimensions a compute engine's instruction walks.
const COMPUTE_FREE_DIMS: usize = 3;
/// Free dimensions a DMA instruction walks (as many as a Penguin access pattern has).
const DMA_FREE_DIMS: usize = penguin::ap::MAX_FREE_DIMS;
/// The most instructions one record is split into; a record that needs more is left whole.
pub(crate) const MAX_PIECES: u64 = 1 << 12;

/// `trace` with every record that is too wide for one instruction split into several (the
/// same trace, borrowed, when none is).
pub(crate) fn split_wide(trace: &Trace) -> Cow<'_, Trace> {
    let pieces: Vec<Option<Vec<Record>>> = trace.ops.iter().map(split).collect();
    if pieces.iter().all(Option::is_none) {
        return Cow::Borrowed(trace);
    }
    let mut ops = Vec::with_capacity(trace.ops.len());
    let mut starts = Vec::with_capacity(trace.ops.len() + 1);
    for (rec, piece) in trace.ops.iter().zip(pieces) {
        starts.push(ops.len());
        match piece {
            Some(p) => ops.extend(p),
            None => ops.push(rec.clone()),
        }
    }
    starts.push(ops.len());
    let cores = trace.cores.iter().map(|&c| starts.get(c).copied().unwrap_or(ops.len())).collect();
    Cow::Owned(Trace { ops, cores, ..trace.clone() })
}

/// `[stride, count]` dimensions without those of one index, contiguous ones merged (as a
/// Penguin access pattern canonicalizes them).
fn merged(dims: &[(i64, u64)]) -> Vec<(i64, u64)> {
    let mut out: Vec<(i64, u64)> = Vec::with_capacity(dims.len());
    for &(s, n) in dims.iter().filter(|d| d.1 != 1) {
        match out.last_mut() {
            Some(last) if s.checked_mul(n as i64) == Some(last.0) => *last = (s, last.1.saturating_mul(n)),
            _ => out.push((s, n)),
        }
    }
    out
}

/// One operand as the split sees it: `dims` (merged, outermost first) are chunked and `tail`
/// (a reduction's reduced dimensions) goes whole into every chunk.
struct Part {
    dims: Vec<(i64, u64)>,
    tail: Vec<(i64, u64)>,
}

impl Part {
    fn elems(&self) -> u64 {
        self.dims.iter().map(|d| d.1).product()
    }

    /// The free dimensions of one chunk of `c` elements (its dimensions and its offset from
    /// the view's), when a run of `c` consecutive elements is a strided view.
    fn chunk(&self, c: u64, t: u64) -> Option<(i64, Vec<(i64, u64)>)> {
        let d = &self.dims;
        // inner[j] = elements of the dimensions inside j.
        let mut inner = vec![1u64; d.len() + 1];
        for j in (0..d.len()).rev() {
            inner[j] = inner[j + 1].checked_mul(d[j].1)?;
        }
        let j = (0..d.len()).find(|&j| c.is_multiple_of(inner[j + 1]) && inner[j].is_multiple_of(c))?;
        let m = c / inner[j + 1];
        if !d[j].1.is_multiple_of(m) {
            return None;
        }
        // Chunk t: an index of every dimension outside j, then a block of m along j.
        let blocks = d[j].1 / m;
        let (mut rest, b) = (t / blocks, t % blocks);
        let mut offset = (b * m) as i64 * d[j].0;
        for k in (0..j).rev() {
            offset += (rest % d[k].1) as i64 * d[k].0;
            rest /= d[k].1;
        }
        let mut dims = vec![(d[j].0, m)];
        dims.extend_from_slice(&d[j + 1..]);
        dims.extend_from_slice(&self.tail);
        Some((offset, dims))
    }
}

/// The chunk size of `parts` for an engine of `max` free dimensions: the largest that fits
/// every part, and `None` when one instruction already fits or none does.
fn chunk_size(parts: &[Part], max: usize) -> Option<u64> {
    // An empty dimension is the builder's to report.
    if parts.iter().any(|p| p.dims.iter().chain(&p.tail).any(|d| d.1 == 0)) {
        return None;
    }
    let fits = |dims: &[(i64, u64)]| merged(dims).len() <= max;
    let whole: Vec<Vec<(i64, u64)>> = parts.iter().map(|p| p.dims.iter().chain(&p.tail).copied().collect()).collect();
    if whole.iter().all(|w| fits(w)) {
        return None;
    }
    let elems = parts.first()?.elems();
    if parts.iter().any(|p| p.elems() != elems) {
        return None;
    }
    // Candidates: m x (the elements inside dimension j), m dividing dimension j's count, of
    // every part's dimensions; the largest that every part can chunk.
    let mut candidates: Vec<u64> = Vec::new();
    for p in parts {
        let mut inside = 1u64;
        for &(_, n) in p.dims.iter().rev() {
            candidates.extend(divisors(n).into_iter().map(|m| m.saturating_mul(inside)));
            inside = inside.saturating_mul(n);
        }
    }
    candidates.sort_unstable_by(|a, b| b.cmp(a));
    candidates.dedup();
    candidates
        .into_iter()
        .filter(|&c| c < elems && elems.is_multiple_of(c) && elems / c <= MAX_PIECES)
        .find(|&c| parts.iter().all(|p| p.chunk(c, 0).is_some_and(|(_, dims)| merged(&dims).len() <= max)))
}

/// The divisors of `n` (up to 2^32: a view's dimension count).
fn divisors(n: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut k = 1u64;
    while k.saturating_mul(k) <= n {
        if n.is_multiple_of(k) {
            out.push(k);
            out.push(n / k);
        }
        k += 1;
    }
    out
}

/// An elementwise operand: all its free dimensions are chunked.
fn whole(v: &View) -> Part {
    Part { dims: merged(v.ap.get(1..).unwrap_or(&[])), tail: Vec::new() }
}

/// Chunk `t` of `v` (its part `p`), as a view.
fn piece(v: &View, p: &Part, c: u64, t: u64) -> Option<View> {
    let (offset, dims) = p.chunk(c, t)?;
    let mut ap = vec![*v.ap.first()?];
    ap.extend(dims);
    Some(View { t: v.t, block: v.block.clone(), offset: v.offset.checked_add(offset)?, ap })
}

/// The pieces of `rec`, when it is too wide for one instruction and splits.
fn split(rec: &Record) -> Option<Vec<Record>> {
    // The chunked views (a reduction's source with its reduced axes as the tail) and the
    // engine's limit.
    let (views, parts, max): (Vec<&View>, Vec<Part>, usize) = match rec {
        Record::DmaCopy { dst, src, .. } => (vec![dst, src], vec![whole(dst), whole(src)], DMA_FREE_DIMS),
        Record::TensorCopy { dst, src, .. }
        | Record::TensorScalar { dst, src, .. }
        | Record::Activation { dst, src, reduce: None, .. } => {
            (vec![dst, src], vec![whole(dst), whole(src)], COMPUTE_FREE_DIMS)
        }
        Record::TensorTensor { dst, in0, in1, .. } => {
            (vec![dst, in0, in1], vec![whole(dst), whole(in0), whole(in1)], COMPUTE_FREE_DIMS)
        }
        Record::Memset { dst, .. } => (vec![dst], vec![whole(dst)], COMPUTE_FREE_DIMS),
        Record::TensorReduce { dst, src, axes, .. } => {
            let rank = src.ap.len();
            let reduced = axes.len();
            // The builder reduces trailing axes only; anything else is left for it to report.
            let mut sorted: Vec<usize> = axes.iter().map(|&a| a as usize).collect();
            sorted.sort_unstable();
            sorted.dedup();
            if sorted.len() != reduced || reduced == 0 || rank <= reduced || sorted[0] != rank - reduced {
                return None;
            }
            let kept = Part { dims: merged(&src.ap[1..rank - reduced]), tail: src.ap[rank - reduced..].to_vec() };
            (vec![dst, src], vec![whole(dst), kept], COMPUTE_FREE_DIMS)
        }
        _ => return None,
    };
    let c = chunk_size(&parts, max)?;
    let n = parts[0].elems() / c;
    let mut out = Vec::with_capacity(usize::try_from(n).ok()?);
    for t in 0..n {
        let v: Vec<View> = views.iter().zip(&parts).map(|(v, p)| piece(v, p, c, t)).collect::<Option<_>>()?;
        out.push(with_views(rec, v)?);
    }
    Some(out)
}

/// `rec` with its chunked views replaced by `v` (in [`split`]'s order).
fn with_views(rec: &Record, v: Vec<View>) -> Option<Record> {
    let mut v = v.into_iter();
    let mut next = || v.next();
    let mut r = rec.clone();
    match &mut r {
        Record::DmaCopy { dst, src, .. }
        | Record::TensorCopy { dst, src, .. }
        | Record::TensorScalar { dst, src, .. }
        | Record::Activation { dst, src, .. } => {
            *dst = next()?;
            *src = next()?;
        }
        Record::TensorTensor { dst, in0, in1, .. } => {
            *dst = next()?;
            *in0 = next()?;
            *in1 = next()?;
        }
        Record::Memset { dst, .. } => *dst = next()?,
        Record::TensorReduce { dst, src, axes, .. } => {
            let reduced = axes.len();
            *dst = next()?;
            *src = next()?;
            let rank = src.ap.len() as u32;
            *axes = (rank - reduced as u32..rank).collect();
        }
        _ => return None,
    }
    // Per-partition columns (scale, bias, s0, s1) are the same in every chunk.
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(offset: i64, ap: &[(i64, u64)]) -> View {
        View { t: 0, block: None, offset, ap: ap.to_vec() }
    }

    /// The elements (offsets) a view enumerates, in order, per partition 0.
    fn elements(v: &View) -> Vec<i64> {
        let mut out = vec![v.offset];
        for &(s, n) in &v.ap[1..] {
            out = out.iter().flat_map(|&o| (0..n as i64).map(move |i| o + i * s)).collect();
        }
        out
    }

    #[test]
    fn contiguous_dimensions_merge_and_single_indices_drop() {
        assert_eq!(merged(&[(64, 2), (32, 2), (1, 32)]), vec![(1, 128)]);
        assert_eq!(merged(&[(128, 32), (1, 1), (2, 32), (64, 2), (1, 2)]), vec![(128, 32), (2, 32), (64, 2), (1, 2)]);
    }

    #[test]
    fn an_average_pool_read_splits_along_its_outer_rows() {
        // in[p, 2i + a, 2j + b] of a [128, 64, 64] tile, reduced over a and b (trailing).
        let src = view(0, &[(4096, 128), (128, 32), (2, 32), (64, 2), (1, 2)]);
        let dst = view(0, &[(1024, 128), (32, 32), (1, 32)]);
        let rec = Record::TensorReduce {
            loc: crate::trace::Loc(0, 0),
            dst: dst.clone(),
            src: src.clone(),
            alu: crate::trace::Alu::Add,
            axes: vec![3, 4],
            negate: false,
            keepdims: false,
        };
        let pieces = split(&rec).expect("four free dimensions on the vector engine split");
        assert_eq!(pieces.len(), 32);
        let mut seen_src = Vec::new();
        let mut seen_dst = Vec::new();
        for p in &pieces {
            let Record::TensorReduce { dst, src, axes, .. } = p else { panic!("{p:?}") };
            assert!(merged(&src.ap[1..]).len() <= COMPUTE_FREE_DIMS, "{src:?}");
            assert_eq!(axes, &vec![src.ap.len() as u32 - 2, src.ap.len() as u32 - 1]);
            seen_src.extend(elements(src));
            seen_dst.extend(elements(dst));
        }
        assert_eq!(seen_src, elements(&src), "the pieces read the source in its order");
        assert_eq!(seen_dst, elements(&dst));
    }

    #[test]
    fn elementwise_operands_split_into_runs_of_one_size() {
        // out[p, 2i + 1 + a, 2j + 1 + b] = in[p, i + a, j + b]: four dimensions on both sides.
        let dst = view(0, &[(1600, 128), (80, 2), (1, 2), (80 * 2, 19), (2, 19)]);
        let src = view(0, &[(400, 128), (20, 2), (1, 2), (20, 19), (1, 19)]);
        let rec = Record::TensorCopy { loc: crate::trace::Loc(0, 0), dst: dst.clone(), src: src.clone(), engine: None };
        let pieces = split(&rec).expect("splits");
        assert_eq!(pieces.len(), 2, "one split of the outermost dimension leaves three");
        let (mut d, mut s) = (Vec::new(), Vec::new());
        for p in &pieces {
            let Record::TensorCopy { dst, src, .. } = p else { panic!() };
            assert!(merged(&dst.ap[1..]).len() <= 3 && merged(&src.ap[1..]).len() <= 3);
            d.extend(elements(dst));
            s.extend(elements(src));
        }
        assert_eq!(d, elements(&dst));
        assert_eq!(s, elements(&src));
    }

    #[test]
    fn a_record_that_needs_more_than_max_pieces_is_left_for_the_builder_to_report() {
        // Five unmergeable dimensions, 4097 x 2 x 2 x 2 x 2: three fit one instruction only
        // with one piece per index of the outer two, 8194 > MAX_PIECES instructions.
        let src = view(0, &[(500_000, 128), (100, 4097), (31, 2), (13, 2), (5, 2), (1, 2)]);
        let dst = view(0, &[(65_552, 128), (1, 65_552)]);
        let rec = Record::TensorCopy { loc: crate::trace::Loc(0, 0), dst, src, engine: None };
        const { assert!(8194 > MAX_PIECES) };
        assert!(split(&rec).is_none());
    }

    #[test]
    fn a_record_that_fits_is_left_alone() {
        let v = view(0, &[(512, 128), (1, 512)]);
        let rec = Record::TensorCopy { loc: crate::trace::Loc(0, 0), dst: v.clone(), src: v, engine: None };
        assert!(split(&rec).is_none());
    }

    #[test]
    fn a_dma_takes_four_dimensions_before_it_splits() {
        let src = view(0, &[(100_000, 128), (10_000, 3), (1000, 3), (100, 3), (10, 3)]);
        let dst = view(0, &[(81, 128), (1, 81)]);
        let rec = Record::DmaCopy { loc: crate::trace::Loc(0, 0), dst, src };
        assert!(split(&rec).is_none());
        let src5 = view(0, &[(1_000_000, 128), (100_000, 3), (10_000, 3), (1000, 3), (100, 3), (10, 3)]);
        let dst5 = view(0, &[(243, 128), (1, 243)]);
        let rec = Record::DmaCopy { loc: crate::trace::Loc(0, 0), dst: dst5, src: src5.clone() };
        let pieces = split(&rec).expect("five dimensions split");
        assert_eq!(pieces.len(), 3);
        let s: Vec<i64> = pieces
            .iter()
            .flat_map(|p| match p {
                Record::DmaCopy { src, .. } => elements(src),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(s, elements(&src5));
    }
}
