//! Memory images (HBM, SBUF, PSUM) and validated access patterns that walk them in runs.
//!
//! On-chip memories are stored flat, partition `p` at `p * bytes_per_partition`, so an
//! on-chip access pattern becomes an ordinary strided walk over one byte vector. A [`Walk`]
//! is only built after every byte it can touch has been checked against its image (in
//! 128-bit arithmetic, so no pattern can overflow or wrap), which is what lets the copy
//! kernels index without further checks failing.

use bir::HwAp;
use penguin::target::{NUM_PARTITIONS, PSUM_BANK_BYTES, PSUM_NUM_BANKS};
use penguin::{DType, Dim, Memory};

use crate::convert::Run;

/// The most elements one access pattern may enumerate (a limit: repeated zero strides could
/// otherwise describe an access that takes hours to simulate).
pub const MAX_ACCESS_ELEMS: u64 = 1 << 31;

/// Bytes of one PSUM partition (8 banks of 2 KiB).
pub(crate) const PSUM_PARTITION_BYTES: usize = (PSUM_NUM_BANKS * PSUM_BANK_BYTES) as usize;

/// The byte images of the three memories.
pub(crate) struct Images {
    /// HBM, byte-addressed.
    pub hbm: Vec<u8>,
    /// SBUF, 128 partitions of `sbuf_partition_bytes`.
    pub sbuf: Vec<u8>,
    /// PSUM, 128 partitions of [`PSUM_PARTITION_BYTES`].
    pub psum: Vec<u8>,
    /// Bytes of one SBUF partition on the program's target.
    pub sbuf_partition_bytes: usize,
}

impl Images {
    /// The image of a memory.
    pub fn get(&self, m: Memory) -> &[u8] {
        match m {
            Memory::Hbm => &self.hbm,
            Memory::Sbuf => &self.sbuf,
            Memory::Psum => &self.psum,
        }
    }

    /// The image of a memory, mutably.
    pub fn get_mut(&mut self, m: Memory) -> &mut [u8] {
        match m {
            Memory::Hbm => &mut self.hbm,
            Memory::Sbuf => &mut self.sbuf,
            Memory::Psum => &mut self.psum,
        }
    }

    /// Two different memories, one to read and one to write; `None` when they are the same.
    pub fn pair(&mut self, src: Memory, dst: Memory) -> Option<(&[u8], &mut [u8])> {
        let Images { hbm, sbuf, psum, .. } = self;
        match (src, dst) {
            (Memory::Hbm, Memory::Sbuf) => Some((hbm, sbuf)),
            (Memory::Hbm, Memory::Psum) => Some((hbm, psum)),
            (Memory::Sbuf, Memory::Hbm) => Some((sbuf, hbm)),
            (Memory::Sbuf, Memory::Psum) => Some((sbuf, psum)),
            (Memory::Psum, Memory::Hbm) => Some((psum, hbm)),
            (Memory::Psum, Memory::Sbuf) => Some((psum, sbuf)),
            (Memory::Hbm, Memory::Hbm) | (Memory::Sbuf, Memory::Sbuf) | (Memory::Psum, Memory::Psum) => None,
        }
    }

    /// Bytes per partition of an on-chip memory; `None` for HBM.
    pub fn partition_bytes(&self, m: Memory) -> Option<usize> {
        match m {
            Memory::Hbm => None,
            Memory::Sbuf => Some(self.sbuf_partition_bytes),
            Memory::Psum => Some(PSUM_PARTITION_BYTES),
        }
    }
}

/// The bytes an access touches, as the race detector sees it: partitions `[p0, p1)` and, in
/// each, `rows` byte intervals `[start + i * stride, start + i * stride + width)` (HBM:
/// `p0 = 0`, `p1 = 1`, absolute bytes).
///
/// [`HwAp::byte_region`] is the bounding box of this; keeping the outermost stride apart
/// matters because tiles of a row-major matrix side by side in the column direction (the N
/// tiles of a GEMM output) have interleaved rows and overlapping bounding boxes. Normalised:
/// `stride > 0` and `width < stride` when `rows > 1`. `period` and `elem`, when known, say
/// more: every touched byte is `start + k * period + x` for some `k` and `0 <= x < elem`, so
/// accesses interleaved element by element (column `d` of `out[:, :, d]`) are told apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ByteBox {
    /// First partition.
    pub p0: u32,
    /// One past the last partition.
    pub p1: u32,
    /// First byte of the first row.
    pub start: i64,
    /// Number of rows.
    pub rows: u64,
    /// Bytes from one row to the next.
    pub stride: i64,
    /// Bytes of each row.
    pub width: i64,
    /// The gcd of the access's byte strides (0: not known, or a single element).
    pub period: i64,
    /// Bytes of one element (with `period`).
    pub elem: i64,
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

fn floor_div(a: i64, b: i64) -> i64 {
    a.div_euclid(b)
}

impl ByteBox {
    /// A box, normalised.
    pub fn new(p0: u32, p1: u32, start: i64, rows: u64, stride: i64, width: i64) -> ByteBox {
        let mut b = ByteBox { p0, p1, start, rows, stride, width, period: 0, elem: 0 };
        if b.rows <= 1 || b.stride == 0 {
            b.rows = 1;
            b.stride = 0;
            return b;
        }
        if b.stride < 0 {
            b.start += (b.rows as i64 - 1) * b.stride;
            b.stride = -b.stride;
        }
        if b.width >= b.stride {
            b.width += (b.rows as i64 - 1) * b.stride;
            b.rows = 1;
            b.stride = 0;
        }
        b
    }

    /// The box, with every byte `start + k * period + x`, `0 <= x < elem`.
    pub fn with_lattice(mut self, period: i64, elem: i64) -> ByteBox {
        (self.period, self.elem) = (period.abs(), elem);
        self
    }

    /// Whether the lattices prove the boxes share no byte: in their common period `g`, the
    /// bytes of each fall in an interval (its start's residue, one element long) that the
    /// other's misses (elements interleaved).
    fn interleaved(&self, o: &ByteBox) -> bool {
        if self.elem == 0 || o.elem == 0 {
            return false;
        }
        let g = gcd(self.period, o.period);
        if g <= self.elem.max(o.elem) {
            return false;
        }
        let (a, b) = (self.start.rem_euclid(g), o.start.rem_euclid(g));
        (b - a).rem_euclid(g) >= self.elem && (a - b).rem_euclid(g) >= o.elem
    }

    /// First byte.
    pub fn lo(&self) -> i64 {
        self.start
    }

    /// One past the last byte.
    pub fn hi(&self) -> i64 {
        self.start + (self.rows as i64 - 1) * self.stride + self.width
    }

    /// Whether the boxes share a byte (exact unless both have several rows with different
    /// strides, where it answers as for the bounding boxes).
    pub fn overlaps(&self, o: &ByteBox) -> bool {
        if !(self.p0 < o.p1 && o.p0 < self.p1 && self.lo() < o.hi() && o.lo() < self.hi()) || self.interleaved(o) {
            return false;
        }
        let s = match (self.rows, o.rows) {
            (1, 1) => return true,
            (1, _) => o.stride,
            (_, 1) => self.stride,
            _ if self.stride == o.stride => self.stride,
            _ => return true,
        };
        // Rows i of self and j of o meet when -o.width < d + (j - i) * s < self.width.
        let d = o.start - self.start;
        let t_min = (floor_div(-o.width - d, s) + 1).max(1 - self.rows as i64);
        let t_max = (-floor_div(d - self.width, s) - 1).min(o.rows as i64 - 1);
        t_min <= t_max
    }

    /// Whether `self` contains every byte of `o` (never claimed when unsure).
    pub fn covers(&self, o: &ByteBox) -> bool {
        if !(self.p0 <= o.p0 && o.p1 <= self.p1) {
            return false;
        }
        // A box whose elements are spread out covers only bytes in its own lattice.
        if self.elem > 0 && self.period > self.elem {
            let inside = o.elem > 0
                && o.period % self.period == 0
                && (o.start - self.start).rem_euclid(self.period) + o.elem <= self.elem;
            if !inside {
                return false;
            }
        }
        if self.rows == 1 {
            return self.start <= o.lo() && o.hi() <= self.start + self.width;
        }
        if o.rows != 1 && o.stride != self.stride {
            return false;
        }
        let d = o.start - self.start;
        let t = floor_div(d, self.stride);
        let e = d - t * self.stride;
        t >= 0 && t + o.rows as i64 <= self.rows as i64 && e + o.width <= self.width
    }

    /// Partitions and bounding bytes both boxes touch (for reports).
    pub fn common_bounds(&self, o: &ByteBox) -> ((u32, u32), (i64, i64)) {
        ((self.p0.max(o.p0), self.p1.min(o.p1)), (self.lo().max(o.lo()), self.hi().min(o.hi())))
    }
}

/// An access pattern checked against its memory image, ready to walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Walk {
    /// The memory.
    pub memory: Memory,
    /// The element type.
    pub dtype: DType,
    /// Elements in enumeration order.
    pub elems: u64,
    /// What it touches; `None` when it has no elements.
    pub region: Option<ByteBox>,
    base: i64,
    /// Outer dimensions `(count, byte stride)`, outermost first.
    outer: Vec<(usize, i64)>,
    inner_len: usize,
    inner_step: i64,
}

impl Walk {
    /// Check `ap` against the images and build its walk; the error says what is outside.
    pub fn new(ap: &HwAp, images: &Images) -> Result<Walk, String> {
        let size = i128::from(ap.dtype.size_bytes());
        let mut elems: u64 = u64::from(ap.num_partitions);
        for d in &ap.dims {
            elems = elems.checked_mul(u64::from(d.num)).ok_or_else(|| "too many elements".to_string())?;
        }
        let empty = Walk {
            memory: ap.memory,
            dtype: ap.dtype,
            elems: 0,
            region: None,
            base: 0,
            outer: Vec::new(),
            inner_len: 1,
            inner_step: 0,
        };
        if elems == 0 {
            return Ok(empty);
        }
        if elems > MAX_ACCESS_ELEMS {
            return Err(format!("{elems} elements exceed the simulator's limit of {MAX_ACCESS_ELEMS} per access"));
        }
        let span = |stride: i64, num: u32| i128::from(stride) * (i128::from(num) - 1);
        let (mut lo, mut hi) = (0i128, 0i128);
        for d in &ap.dims {
            let s = span(d.stride, d.num);
            if s < 0 {
                lo += s;
            } else {
                hi += s;
            }
        }
        let pspan = span(ap.partition_stride, ap.num_partitions);
        let offset = i128::from(ap.byte_offset);
        let overflow = || "byte range overflows".to_string();
        let (base, pstride_bytes, region) = match images.partition_bytes(ap.memory) {
            Some(part) => {
                let part = part as i128;
                let first = i128::from(ap.start_partition);
                let (pmin, pmax) = (first + pspan.min(0), first + pspan.max(0));
                if pmin < 0 || pmax >= i128::from(NUM_PARTITIONS) {
                    return Err(format!("partitions {pmin}..={pmax} are not all within 0..{NUM_PARTITIONS}"));
                }
                let (blo, bhi) = (offset + lo * size, offset + (hi + 1) * size);
                if blo < 0 || bhi > part {
                    return Err(format!("bytes {blo}..{bhi} are not all within the {part} bytes of a partition"));
                }
                let region =
                    footprint(pmin as u32, pmax as u32 + 1, offset, size, &ap.dims, None).ok_or_else(overflow)?;
                (first * part + offset, i128::from(ap.partition_stride) * part, region)
            }
            None => {
                if ap.start_partition != 0 {
                    return Err(format!("an HBM pattern starts at partition 0, not {}", ap.start_partition));
                }
                let len = images.hbm.len() as i128;
                let (blo, bhi) = (offset + (lo + pspan.min(0)) * size, offset + (hi + pspan.max(0) + 1) * size);
                if blo < 0 || bhi > len {
                    return Err(format!("bytes {blo}..{bhi} are not all within the {len} bytes of HBM"));
                }
                let rows = Dim::new(ap.partition_stride, ap.num_partitions);
                let region = footprint(0, 1, offset, size, &ap.dims, Some(rows)).ok_or_else(overflow)?;
                (offset, i128::from(ap.partition_stride) * size, region)
            }
        };
        // Every dimension with more than one index spans at most the image, so its byte
        // stride fits an i64; merge dimensions that continue each other into longer runs.
        let to_i64 = |v: i128| i64::try_from(v).map_err(|_| "stride overflows".to_string());
        let mut dims: Vec<(usize, i64)> = Vec::with_capacity(ap.dims.len() + 1);
        let all = std::iter::once((ap.num_partitions, pstride_bytes))
            .chain(ap.dims.iter().map(|d| (d.num, i128::from(d.stride) * size)));
        for (num, stride) in all.filter(|(num, _)| *num > 1) {
            let (num, stride) = (num as usize, to_i64(stride)?);
            match dims.last_mut() {
                Some(outer) if outer.1 == stride * num as i64 => *outer = (outer.0 * num, stride),
                _ => dims.push((num, stride)),
            }
        }
        let (inner_len, inner_step) = dims.pop().unwrap_or((1, size as i64));
        Ok(Walk { elems, region: Some(region), base: to_i64(base)?, outer: dims, inner_len, inner_step, ..empty })
    }

    /// The runs of the walk in enumeration order.
    pub fn runs(&self) -> Runs<'_> {
        let left = if self.elems == 0 { 0 } else { self.elems / self.inner_len as u64 };
        Runs { walk: self, idx: vec![0; self.outer.len()], base: self.base, left }
    }

    /// Bytes of one element.
    pub fn elem_size(&self) -> usize {
        self.dtype.size_bytes() as usize
    }
}

/// The [`ByteBox`] of a checked pattern: the dimension with the largest stride (including
/// the HBM row dimension `extra`) becomes the rows, the extent of the others the width.
fn footprint(p0: u32, p1: u32, offset: i128, size: i128, dims: &[Dim], extra: Option<Dim>) -> Option<ByteBox> {
    let all: Vec<Dim> = extra.into_iter().chain(dims.iter().copied()).filter(|d| d.num > 1).collect();
    let row = all.iter().enumerate().max_by_key(|(_, d)| d.stride.unsigned_abs()).map(|(i, _)| i);
    let (mut lo, mut hi) = (0i128, 0i128);
    for (i, d) in all.iter().enumerate() {
        if Some(i) != row {
            let s = i128::from(d.stride) * (i128::from(d.num) - 1);
            if s < 0 {
                lo += s;
            } else {
                hi += s;
            }
        }
    }
    let (rows, stride) =
        row.and_then(|i| all.get(i)).map_or((1, 0), |d| (u64::from(d.num), i128::from(d.stride) * size));
    let period = all.iter().try_fold(0i64, |g, d| Some(gcd(g, i64::try_from(i128::from(d.stride) * size).ok()?)))?;
    let start = i64::try_from(offset + lo * size).ok()?;
    let width = i64::try_from((hi - lo + 1) * size).ok()?;
    let elem = i64::try_from(size).ok()?;
    Some(ByteBox::new(p0, p1, start, rows, i64::try_from(stride).ok()?, width).with_lattice(period, elem))
}

/// The runs of a [`Walk`]: an odometer over its outer dimensions.
pub(crate) struct Runs<'a> {
    walk: &'a Walk,
    idx: Vec<usize>,
    base: i64,
    left: u64,
}

impl Iterator for Runs<'_> {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let run = Run { start: self.base, len: self.walk.inner_len, step: self.walk.inner_step };
        for (i, &(num, stride)) in self.idx.iter_mut().zip(&self.walk.outer).rev() {
            *i += 1;
            self.base += stride;
            if *i < num {
                break;
            }
            *i = 0;
            self.base -= stride * num as i64;
        }
        Some(run)
    }
}

/// `N` walks with the same element count, cut into runs of equal length (at most `max`
/// elements each), in enumeration order: one run of each walk per step.
pub(crate) struct Lockstep<'a, const N: usize> {
    runs: [Runs<'a>; N],
    cur: [Option<Run>; N],
    max: usize,
}

impl<'a, const N: usize> Lockstep<'a, N> {
    /// Walk `walks` in lockstep.
    pub fn new(walks: [&'a Walk; N], max: usize) -> Self {
        Lockstep { runs: walks.map(Walk::runs), cur: [None; N], max: max.max(1) }
    }
}

impl<const N: usize> Iterator for Lockstep<'_, N> {
    type Item = [Run; N];

    fn next(&mut self) -> Option<[Run; N]> {
        let mut n = self.max;
        for (cur, runs) in self.cur.iter_mut().zip(&mut self.runs) {
            if cur.is_none_or(|r| r.len == 0) {
                *cur = runs.next();
            }
            n = n.min(cur.as_ref()?.len);
        }
        let mut out = [Run { start: 0, len: 0, step: 0 }; N];
        for (o, cur) in out.iter_mut().zip(&mut self.cur) {
            let r = cur.as_mut()?;
            *o = r.take(n);
            *r = r.skip(n);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn images() -> Images {
        Images {
            hbm: vec![0; 1000],
            sbuf: vec![0; 128 * 64],
            psum: vec![0; 128 * PSUM_PARTITION_BYTES],
            sbuf_partition_bytes: 64,
        }
    }

    fn ap(memory: Memory, start: u32, parts: u32, pstride: i64, offset: u64, dims: Vec<Dim>) -> HwAp {
        HwAp { partition_stride: pstride, ..HwAp::on_chip(memory, DType::Bf16, start, parts, offset, dims) }
    }

    fn addresses(w: &Walk) -> Vec<i64> {
        w.runs().flat_map(|r| (0..r.len).map(move |j| r.start + j as i64 * r.step)).collect()
    }

    #[test]
    fn enumeration_order_and_region_match_bir() {
        let img = images();
        let a = ap(Memory::Sbuf, 2, 2, 3, 4, vec![Dim::new(4, 2), Dim::new(1, 2)]);
        let w = Walk::new(&a, &img).unwrap();
        assert_eq!(addresses(&w), vec![132, 134, 140, 142, 324, 326, 332, 334]);
        let r = w.region.unwrap();
        assert_eq!((r.p0, r.p1, r.lo(), r.hi()), a.byte_region());
        let h = ap(Memory::Hbm, 0, 3, 10, 6, vec![Dim::new(1, 10)]);
        let w = Walk::new(&h, &img).unwrap();
        assert_eq!(w.runs().count(), 1, "rows that continue each other merge into one run");
        let r = w.region.unwrap();
        assert_eq!((r.p0, r.p1, r.lo(), r.hi()), h.byte_region());
    }

    #[test]
    fn negative_strides_walk_backwards() {
        let img = images();
        let a = ap(Memory::Hbm, 0, 2, -4, 16, vec![Dim::new(-1, 2)]);
        let w = Walk::new(&a, &img).unwrap();
        assert_eq!(addresses(&w), vec![16, 14, 8, 6]);
        assert_eq!(w.region.unwrap().lo(), 6);
    }

    #[test]
    fn out_of_range_is_an_error_not_a_wrap() {
        let img = images();
        let cases = [
            ap(Memory::Sbuf, 127, 2, 1, 0, vec![Dim::new(1, 4)]),
            ap(Memory::Sbuf, 0, 1, 1, 60, vec![Dim::new(1, 4)]),
            ap(Memory::Sbuf, 0, 1, 1, 0, vec![Dim::new(-1, 2)]),
            ap(Memory::Hbm, 0, 1, 1, 999, vec![Dim::new(1, 1)]),
            ap(Memory::Hbm, 0, 2, i64::MAX, 0, vec![Dim::new(i64::MIN, 3)]),
            ap(Memory::Hbm, 0, u32::MAX, 1, u64::MAX, vec![Dim::new(1, u32::MAX); 4]),
            ap(Memory::Hbm, 1, 1, 1, 0, vec![]),
        ];
        for a in cases {
            assert!(Walk::new(&a, &img).is_err(), "{a}");
        }
    }

    fn bytes_of(b: &ByteBox) -> std::collections::BTreeSet<i64> {
        (0..b.rows as i64).flat_map(|i| (0..b.width).map(move |x| b.start + i * b.stride + x)).collect()
    }

    #[test]
    fn strided_boxes_agree_with_brute_force() {
        let mut boxes = Vec::new();
        for start in [0i64, 3, 8, 13] {
            for rows in [1u64, 2, 4] {
                for stride in [-10i64, 0, 5, 10] {
                    for width in [1i64, 4, 6, 12] {
                        boxes.push(ByteBox::new(0, 1, start, rows, stride, width));
                    }
                }
            }
        }
        for a in &boxes {
            let sa = bytes_of(a);
            for b in &boxes {
                let sb = bytes_of(b);
                let overlap = !sa.is_disjoint(&sb);
                let exact = a.rows == 1 || b.rows == 1 || a.stride == b.stride;
                if exact {
                    assert_eq!(a.overlaps(b), overlap, "{a:?} {b:?}");
                } else {
                    assert!(a.overlaps(b) || !overlap, "{a:?} {b:?}");
                }
                assert!(!a.covers(b) || sb.is_subset(&sa), "{a:?} falsely covers {b:?}");
                if exact && sb.is_subset(&sa) {
                    assert!(a.covers(b), "{a:?} should cover {b:?}");
                }
            }
        }
    }

    #[test]
    fn lattices_agree_with_brute_force() {
        // HBM patterns of bf16 elements with interleaving strides: `overlaps` never misses a
        // shared byte, `covers` never claims bytes it lacks.
        let img = images();
        let mut walks = Vec::new();
        for offset in [0u64, 2, 4, 6, 12] {
            for (rows, rstride) in [(1u32, 0i64), (3, 16), (2, 24)] {
                for dims in [vec![Dim::new(1, 1)], vec![Dim::new(4, 4)], vec![Dim::new(2, 3)], vec![Dim::new(1, 8)]] {
                    walks.push(Walk::new(&ap(Memory::Hbm, 0, rows, rstride, offset, dims), &img).unwrap());
                }
            }
        }
        let bytes =
            |w: &Walk| -> std::collections::BTreeSet<i64> { addresses(w).iter().flat_map(|&a| [a, a + 1]).collect() };
        for a in &walks {
            let (ra, sa) = (a.region.unwrap(), bytes(a));
            for b in &walks {
                let (rb, sb) = (b.region.unwrap(), bytes(b));
                let shared = !sa.is_disjoint(&sb);
                assert!(ra.overlaps(&rb) || !shared, "{ra:?} misses a byte of {rb:?}");
                assert!(!ra.covers(&rb) || sb.is_subset(&sa), "{ra:?} falsely covers {rb:?}");
            }
        }
        // Column d of an [R, F, 4] tensor, for each d: interleaved, never overlapping.
        let col =
            |d: u64| Walk::new(&ap(Memory::Hbm, 0, 4, 32, 2 * d, vec![Dim::new(4, 4)]), &img).unwrap().region.unwrap();
        for d in 0..4 {
            for e in 0..4 {
                assert_eq!(col(d).overlaps(&col(e)), d == e, "columns {d} and {e}");
            }
        }
    }

    #[test]
    fn side_by_side_output_tiles_do_not_overlap() {
        // Columns 0..512 and 512..1024 of 128 rows of a 1024-wide fp32 matrix.
        let img = Images { hbm: vec![0; 1024 * 128 * 4], ..images() };
        let mut left = ap(Memory::Hbm, 0, 128, 1024, 0, vec![Dim::new(1, 512)]);
        left.dtype = DType::Fp32;
        let right = HwAp { byte_offset: 2048, ..left.clone() };
        let (l, r) = (Walk::new(&left, &img).unwrap(), Walk::new(&right, &img).unwrap());
        assert!(!l.region.unwrap().overlaps(&r.region.unwrap()));
        let whole = HwAp { dims: vec![Dim::new(1, 1024)].into(), ..left };
        let w = Walk::new(&whole, &img).unwrap().region.unwrap();
        assert!(w.covers(&l.region.unwrap()) && w.covers(&r.region.unwrap()));
    }

    #[test]
    fn pairs_cut_runs_to_common_lengths() {
        let img = images();
        let a = Walk::new(&ap(Memory::Sbuf, 0, 2, 1, 0, vec![Dim::new(1, 3)]), &img).unwrap();
        let b = Walk::new(&ap(Memory::Hbm, 0, 3, 3, 0, vec![Dim::new(1, 2)]), &img).unwrap();
        let lens: Vec<(usize, usize)> = Lockstep::new([&a, &b], 100).map(|[x, y]| (x.len, y.len)).collect();
        assert_eq!(lens, vec![(2, 2), (1, 1), (1, 1), (2, 2)]);
    }
}
