//! Tensors and views of a trace resolved against the hardware's geometry: each tensor's
//! logical tiles (its blocks), and each view as a Penguin access pattern over one tile (on
//! chip) or over its row-major tensor (HBM), with the range checks of the design's rule 1.

use penguin::{AccessPattern, DType, Dim, FreeDims, Target};

use crate::error::NkiError;
use crate::trace::{Address, Buffer, Trace, View};

/// The most free dimensions an operand may have (after merging contiguous ones).
const MAX_FREE_DIMS: usize = penguin::ap::MAX_FREE_DIMS;

/// A tensor of the trace, checked.
#[derive(Clone, Debug)]
pub(crate) struct TensorInfo {
    /// The trace's name.
    pub(crate) name: String,
    /// Where it lives.
    pub(crate) buffer: Buffer,
    /// Element type.
    pub(crate) dtype: DType,
    /// The trace's shape.
    pub(crate) shape: Vec<u64>,
    /// Allocation site.
    pub(crate) site: u32,
    /// `file:line` where it was created.
    pub(crate) loc: String,
    /// Block dimensions (on chip), outermost first.
    pub(crate) blocks: Vec<u64>,
    /// Partitions of one tile (on chip).
    pub(crate) partitions: u64,
    /// Elements per partition of one tile (on chip), or elements of the tensor (HBM).
    pub(crate) free: u64,
    /// Direct addresses, one `(partition, byte)` per block.
    pub(crate) direct: Option<Vec<(u32, u64)>>,
}

impl TensorInfo {
    /// Bytes per partition of one tile.
    pub(crate) fn tile_bytes(&self) -> u64 {
        self.free.saturating_mul(u64::from(self.dtype.size_bytes()))
    }
}

/// Check every tensor of `trace` on `target` (`loc_of` gives the `file:line` of a location).
pub(crate) fn tensors(trace: &Trace, target: Target) -> Result<Vec<TensorInfo>, NkiError> {
    let info = target.info();
    trace
        .tensors
        .iter()
        .map(|t| {
            let loc = trace.loc_text(t.loc);
            let invalid = |message: String| NkiError::Invalid { loc: loc.clone(), message };
            if t.shape.is_empty() || t.shape.contains(&0) {
                return Err(invalid(format!("tensor `{}` has an empty shape {:?}", t.name, t.shape)));
            }
            let numel = t.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
            let Some(numel) = numel.filter(|&n| n.saturating_mul(u64::from(t.dtype.size_bytes())) < 1 << 48) else {
                return Err(invalid(format!("tensor `{}` of shape {:?} is too large", t.name, t.shape)));
            };
            if !t.buffer.is_on_chip() {
                if t.address.is_some() {
                    return Err(invalid(format!("HBM tensor `{}` cannot have an on-chip address", t.name)));
                }
                return Ok(TensorInfo {
                    name: t.name.clone(),
                    buffer: t.buffer,
                    dtype: t.dtype,
                    shape: t.shape.clone(),
                    site: t.site,
                    loc,
                    blocks: Vec::new(),
                    partitions: 1,
                    free: numel,
                    direct: None,
                });
            }
            if t.par >= t.shape.len() {
                return Err(invalid(format!(
                    "tensor `{}` of shape {:?} has its partition dimension at {}, past its last dimension",
                    t.name, t.shape, t.par
                )));
            }
            let partitions = t.shape[t.par];
            if partitions > u64::from(info.statebuf_num_partitions) {
                return Err(NkiError::TooManyPartitions {
                    loc,
                    what: format!("tensor `{}`", t.name),
                    partitions,
                    max: info.statebuf_num_partitions,
                });
            }
            let blocks = t.shape[..t.par].to_vec();
            let free: u64 = t.shape[t.par + 1..].iter().product();
            let tile_bytes = free * u64::from(t.dtype.size_bytes());
            if t.buffer == Buffer::Psum {
                let max = psum_tile_limit(target);
                if tile_bytes > max {
                    return Err(NkiError::PsumTileTooLarge {
                        loc,
                        tensor: t.name.clone(),
                        bytes: tile_bytes,
                        max,
                        target,
                    });
                }
            }
            let n_blocks: u64 = blocks.iter().product();
            let direct = match &t.address {
                None => None,
                Some(Address::At { partition, byte }) if n_blocks == 1 => Some(vec![(*partition, *byte)]),
                Some(Address::Blocks { blocks }) if blocks.len() as u64 == n_blocks => Some(blocks.clone()),
                Some(_) => {
                    return Err(invalid(format!(
                        "tensor `{}` has {n_blocks} blocks, and its address must give one per block",
                        t.name
                    )))
                }
            };
            Ok(TensorInfo {
                name: t.name.clone(),
                buffer: t.buffer,
                dtype: t.dtype,
                shape: t.shape.clone(),
                site: t.site,
                loc,
                blocks,
                partitions,
                free,
                direct,
            })
        })
        .collect()
}

/// The most bytes per partition a PSUM tile may have: one 2 KiB bank, the whole PSUM on
/// trn3 (whose matmuls may write across banks).
pub(crate) fn psum_tile_limit(target: Target) -> u64 {
    let info = target.info();
    match target {
        Target::Trn3 => u64::from(info.psum_num_banks * info.psum_par_size_in_bytes),
        Target::Trn1 | Target::Trn2 => u64::from(info.psum_par_size_in_bytes),
    }
}

/// A view resolved: the tensor, its block (on chip; 0 for HBM), the access pattern (on chip
/// over one tile, with the partition start and the element offset inside the tile's
/// partition; in HBM over the row-major tensor), and the logical shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub(crate) tensor: u32,
    pub(crate) block: u64,
    pub(crate) ap: AccessPattern,
    pub(crate) shape: Vec<u64>,
}

impl Resolved {
    /// Partitions of the view.
    pub(crate) fn partitions(&self) -> u64 {
        self.shape.first().copied().unwrap_or(1)
    }

    /// Elements per partition of the view.
    pub(crate) fn free_elems(&self) -> u64 {
        self.shape.iter().skip(1).product()
    }

    /// The box `(p0, p1, lo, hi)` the view touches inside its tile (on chip).
    pub(crate) fn tile_box(&self) -> (u64, u64, i64, i64) {
        let r = self.ap.region(true);
        (u64::from(r.p0), u64::from(r.p1), r.lo, r.hi)
    }
}

/// Resolve `view` against the tensors, with errors at `loc`.
pub(crate) fn resolve(tensors: &[TensorInfo], view: &View, loc: &str) -> Result<Resolved, NkiError> {
    let invalid = |message: String| NkiError::Invalid { loc: loc.to_string(), message };
    let Some(t) = tensors.get(view.t as usize) else {
        return Err(invalid(format!("a view names tensor {}, but the trace has {} tensors", view.t, tensors.len())));
    };
    let out_of_range =
        |detail: String| NkiError::ViewOutOfRange { loc: loc.to_string(), tensor: t.name.clone(), detail };
    let Some(&(p_stride, p_count)) = view.ap.first() else {
        return Err(invalid(format!("a view of `{}` has no dimensions", t.name)));
    };
    if let Some(&(_, n)) = view.ap.iter().find(|(_, n)| *n == 0 || *n > u64::from(u32::MAX)) {
        return Err(out_of_range(format!("a dimension of {n} elements")));
    }
    let shape = view.shape();
    let mut free: Vec<Dim> = view.ap[1..].iter().map(|&(s, n)| Dim::new(s, n as u32)).collect();
    if free.is_empty() {
        free.push(Dim::new(1, 1));
    }
    let block = block_index(t, view, loc)?;
    if !t.buffer.is_on_chip() {
        let ap = AccessPattern {
            start_partition: 0,
            partitions: Dim::new(p_stride, p_count as u32),
            offset: view.offset,
            free: free.into(),
        };
        let (lo, hi) = ap.flat_extent();
        let first = i128::from(view.offset) + i128::from(lo);
        let last = i128::from(view.offset) + i128::from(hi);
        if first < 0 || last >= i128::from(t.free) {
            return Err(out_of_range(format!(
                "it reaches elements {first} to {last} of a tensor of {} elements (shape {:?})",
                t.free, t.shape
            )));
        }
        let ap = check_dims(ap.canonicalize(), loc, &t.name)?;
        return Ok(Resolved { tensor: view.t, block, ap, shape });
    }
    let max = u64::from(penguin::target::NUM_PARTITIONS);
    if p_count > max {
        return Err(NkiError::TooManyPartitions {
            loc: loc.to_string(),
            what: format!("a view of `{}`", t.name),
            partitions: p_count,
            max: max as u32,
        });
    }
    let f = t.free as i64;
    if p_count > 1 && p_stride != f {
        return Err(invalid(format!(
            "a view of `{}` steps {p_stride} elements between partitions, but the hardware steps one partition \
             ({f} elements per partition in this tile)",
            t.name
        )));
    }
    if view.offset < 0 {
        return Err(out_of_range(format!("offset {} is negative", view.offset)));
    }
    let start = view.offset / f;
    let inner = view.offset % f;
    let mut ap = AccessPattern {
        start_partition: u32::try_from(start).unwrap_or(u32::MAX),
        partitions: Dim::new(1, p_count as u32),
        offset: inner,
        free: FreeDims::from(free),
    };
    let (lo, hi) = ap.free_extent();
    let (first, last) = (inner + lo, inner.saturating_add(hi));
    let spans = || {
        if t.blocks.is_empty() {
            None
        } else {
            Some(NkiError::ViewSpansBlocks {
                loc: loc.to_string(),
                tensor: t.name.clone(),
                detail: format!("it leaves block {block} of tile shape [{}, {}]", t.partitions, t.free),
            })
        }
    };
    if first < 0 || last >= f {
        return Err(spans().unwrap_or_else(|| {
            out_of_range(format!(
                "its free elements {first} to {last} leave the {f} elements of a partition (offset {})",
                view.offset
            ))
        }));
    }
    if start as u64 + p_count > t.partitions {
        return Err(spans().unwrap_or_else(|| {
            out_of_range(format!(
                "partitions {start} to {} of a tile of {} partitions",
                start as u64 + p_count - 1,
                t.partitions
            ))
        }));
    }
    ap = check_dims(ap.canonicalize(), loc, &t.name)?;
    Ok(Resolved { tensor: view.t, block, ap, shape })
}

/// At most [`MAX_FREE_DIMS`] free dimensions once contiguous ones are merged.
fn check_dims(ap: AccessPattern, loc: &str, name: &str) -> Result<AccessPattern, NkiError> {
    if ap.free.len() > MAX_FREE_DIMS {
        return Err(NkiError::Invalid {
            loc: loc.to_string(),
            message: format!(
                "a view of `{name}` has {} free dimensions that do not merge, more than the {MAX_FREE_DIMS} an \
                 instruction takes",
                ap.free.len()
            ),
        });
    }
    Ok(ap)
}

/// The flat block index of a view (0 without block dimensions).
fn block_index(t: &TensorInfo, view: &View, loc: &str) -> Result<u64, NkiError> {
    let spans = |detail: String| NkiError::ViewSpansBlocks { loc: loc.to_string(), tensor: t.name.clone(), detail };
    match (&view.block, t.blocks.is_empty()) {
        (None, true) => Ok(0),
        (Some(b), true) => Err(NkiError::Invalid {
            loc: loc.to_string(),
            message: format!("a view of `{}` names block {b:?}, but the tensor has no block dimensions", t.name),
        }),
        (None, false) => Err(spans(format!("it names no block of the block dimensions {:?}", t.blocks))),
        (Some(b), false) => {
            if b.len() != t.blocks.len() || b.iter().zip(&t.blocks).any(|(i, n)| i >= n) {
                return Err(NkiError::ViewOutOfRange {
                    loc: loc.to_string(),
                    tensor: t.name.clone(),
                    detail: format!("block {b:?} is not one of the block dimensions {:?}", t.blocks),
                });
            }
            Ok(b.iter().zip(&t.blocks).fold(0, |acc, (i, n)| acc * n + i))
        }
    }
}
