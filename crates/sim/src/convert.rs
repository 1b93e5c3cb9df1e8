//! Element conversion kernels: runs of memory bytes to f32 and back, one tight loop per dtype.
//!
//! Every kernel reproduces [`DType::decode`] / [`DType::encode`] exactly (the tests compare
//! them bit for bit); they exist only to keep dispatch out of the per-element loop: bf16 is
//! a 16-bit shift (NaNs quieted), fp8 a 256-entry table, fp32 a plain load.

use std::sync::OnceLock;

use penguin::{CastMode, DType};

/// A run of equally spaced elements in a memory image: `len` elements starting at byte
/// `start`, `step` bytes apart (negative steps walk backwards).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    /// Byte address of the first element.
    pub start: i64,
    /// Elements in the run.
    pub len: usize,
    /// Bytes from one element to the next.
    pub step: i64,
}

impl Run {
    /// The same run without its first `n` elements.
    pub fn skip(self, n: usize) -> Run {
        Run { start: self.start + n as i64 * self.step, len: self.len - n, step: self.step }
    }

    /// The first `n` elements of the run.
    pub fn take(self, n: usize) -> Run {
        Run { len: n, ..self }
    }

    /// Whether the elements of size `size` follow each other without gaps.
    pub fn contiguous(self, size: usize) -> bool {
        self.step == size as i64 || self.len <= 1
    }

    /// Byte address of element `j` (validated against the image when the run was built).
    #[inline(always)]
    pub fn at(self, j: usize) -> usize {
        (self.start + j as i64 * self.step) as usize
    }

    /// The bytes of a contiguous run of elements of size `size`.
    #[inline(always)]
    pub fn span(self, size: usize) -> std::ops::Range<usize> {
        let a = self.start as usize;
        a..a + self.len * size
    }
}

/// Decoding tables of the three fp8 formats, indexed by bit pattern.
struct Fp8Tables {
    e4m3: [f32; 256],
    e4m3fn: [f32; 256],
    e5m2: [f32; 256],
}

fn fp8_tables() -> &'static Fp8Tables {
    static TABLES: OnceLock<Fp8Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let table = |d: DType| {
            let mut t = [0f32; 256];
            for (bits, v) in (0u32..).zip(t.iter_mut()) {
                *v = d.decode(bits);
            }
            t
        };
        Fp8Tables { e4m3: table(DType::Fp8e4m3), e4m3fn: table(DType::Fp8e4m3fn), e5m2: table(DType::Fp8e5m2) }
    })
}

/// How one element's bytes become an f32.
trait Decoder: Copy {
    const SIZE: usize;
    fn dec(self, b: &[u8]) -> f32;
}

#[derive(Clone, Copy)]
struct F32Dec;
impl Decoder for F32Dec {
    const SIZE: usize = 4;
    #[inline(always)]
    fn dec(self, b: &[u8]) -> f32 {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
}

#[derive(Clone, Copy)]
struct Bf16Dec;
impl Decoder for Bf16Dec {
    const SIZE: usize = 2;
    #[inline(always)]
    fn dec(self, b: &[u8]) -> f32 {
        bf16_bits_to_f32(u32::from(u16::from_le_bytes([b[0], b[1]])))
    }
}

/// A 16-bit shift, plus the quiet bit on NaN exactly as `half` (and so `DType`) does,
/// without a branch so loops vectorise.
#[inline(always)]
fn bf16_bits_to_f32(h: u32) -> f32 {
    let nan = u32::from(h & 0x7fff > 0x7f80);
    f32::from_bits((h | nan << 6) << 16)
}

/// Contiguous bf16: whole 2-byte elements, so the loop vectorises.
fn decode_bf16_contiguous(bytes: &[u8], out: &mut [f32]) {
    let (halves, _) = bytes.as_chunks::<2>();
    for (x, h) in out.iter_mut().zip(halves) {
        *x = bf16_bits_to_f32(u32::from(u16::from_le_bytes(*h)));
    }
}

#[derive(Clone, Copy)]
struct F16Dec;
impl Decoder for F16Dec {
    const SIZE: usize = 2;
    #[inline(always)]
    fn dec(self, b: &[u8]) -> f32 {
        half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32()
    }
}

#[derive(Clone, Copy)]
struct LutDec(&'static [f32; 256]);
impl Decoder for LutDec {
    const SIZE: usize = 1;
    #[inline(always)]
    fn dec(self, b: &[u8]) -> f32 {
        self.0[usize::from(b[0])]
    }
}

#[derive(Clone, Copy)]
struct U8Dec;
impl Decoder for U8Dec {
    const SIZE: usize = 1;
    #[inline(always)]
    fn dec(self, b: &[u8]) -> f32 {
        f32::from(b[0])
    }
}

#[derive(Clone, Copy)]
struct I16Dec;
impl Decoder for I16Dec {
    const SIZE: usize = 2;
    #[inline(always)]
    fn dec(self, b: &[u8]) -> f32 {
        f32::from(i16::from_le_bytes([b[0], b[1]]))
    }
}

#[derive(Clone, Copy)]
struct I8Dec;
impl Decoder for I8Dec {
    const SIZE: usize = 1;
    #[inline(always)]
    fn dec(self, b: &[u8]) -> f32 {
        f32::from(b[0] as i8)
    }
}

#[derive(Clone, Copy)]
struct U16Dec;
impl Decoder for U16Dec {
    const SIZE: usize = 2;
    #[inline(always)]
    fn dec(self, b: &[u8]) -> f32 {
        f32::from(u16::from_le_bytes([b[0], b[1]]))
    }
}

#[derive(Clone, Copy)]
struct U32Dec;
impl Decoder for U32Dec {
    const SIZE: usize = 4;
    #[inline(always)]
    fn dec(self, b: &[u8]) -> f32 {
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32
    }
}

#[derive(Clone, Copy)]
struct I32Dec;
impl Decoder for I32Dec {
    const SIZE: usize = 4;
    #[inline(always)]
    fn dec(self, b: &[u8]) -> f32 {
        i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32
    }
}

/// Contiguous fp32: whole 4-byte words, so the loop vectorises.
fn decode_f32_contiguous(bytes: &[u8], out: &mut [f32]) {
    let (words, _) = bytes.as_chunks::<4>();
    for (o, w) in out.iter_mut().zip(words) {
        *o = f32::from_le_bytes(*w);
    }
}

/// Contiguous fp32: whole 4-byte words, so the loop vectorises.
fn encode_f32_contiguous(src: &[f32], bytes: &mut [u8]) {
    let (words, _) = bytes.as_chunks_mut::<4>();
    for (w, x) in words.iter_mut().zip(src) {
        *w = x.to_le_bytes();
    }
}

#[inline(always)]
fn decode_with<D: Decoder>(d: D, mem: &[u8], run: Run, out: &mut [f32]) {
    if run.contiguous(D::SIZE) {
        for (o, b) in out.iter_mut().zip(mem[run.span(D::SIZE)].chunks_exact(D::SIZE)) {
            *o = d.dec(b);
        }
    } else {
        for (j, o) in out.iter_mut().enumerate() {
            let a = run.at(j);
            *o = d.dec(&mem[a..a + D::SIZE]);
        }
    }
}

/// Decode the `out.len()` elements of `run` (of type `dtype`) into f32.
pub(crate) fn decode_run(dtype: DType, mem: &[u8], run: Run, out: &mut [f32]) {
    let out = &mut out[..run.len];
    match dtype {
        DType::Fp32 if run.contiguous(4) => decode_f32_contiguous(&mem[run.span(4)], out),
        DType::Fp32 => decode_with(F32Dec, mem, run, out),
        DType::Bf16 if run.contiguous(2) => decode_bf16_contiguous(&mem[run.span(2)], out),
        DType::Bf16 => decode_with(Bf16Dec, mem, run, out),
        DType::Fp16 => decode_with(F16Dec, mem, run, out),
        DType::Fp8e4m3 => decode_with(LutDec(&fp8_tables().e4m3), mem, run, out),
        DType::Fp8e4m3fn => decode_with(LutDec(&fp8_tables().e4m3fn), mem, run, out),
        DType::Fp8e5m2 => decode_with(LutDec(&fp8_tables().e5m2), mem, run, out),
        DType::Uint8 => decode_with(U8Dec, mem, run, out),
        DType::Int16 => decode_with(I16Dec, mem, run, out),
        DType::Int32 => decode_with(I32Dec, mem, run, out),
        DType::Int8 => decode_with(I8Dec, mem, run, out),
        DType::Uint16 => decode_with(U16Dec, mem, run, out),
        DType::Uint32 => decode_with(U32Dec, mem, run, out),
    }
}

/// How an f32 becomes one element's bytes.
trait Encoder: Copy {
    const SIZE: usize;
    fn enc(self, x: f32, out: &mut [u8]);
}

#[derive(Clone, Copy)]
struct F32Enc;
impl Encoder for F32Enc {
    const SIZE: usize = 4;
    #[inline(always)]
    fn enc(self, x: f32, out: &mut [u8]) {
        out[..4].copy_from_slice(&x.to_le_bytes());
    }
}

/// bf16 round-to-nearest-even; exactly what `DType::Bf16.encode(x, CastMode::Rne)` does.
#[derive(Clone, Copy)]
struct Bf16RneEnc;
impl Encoder for Bf16RneEnc {
    const SIZE: usize = 2;
    #[inline(always)]
    fn enc(self, x: f32, out: &mut [u8]) {
        out[..2].copy_from_slice(&bf16_rne_bits(x).to_le_bytes());
    }
}

/// `penguin::dtype::bf16_bits(x, CastMode::Rne)` without branches (so loops vectorise):
/// round to nearest even on the upper 16 bits; NaN becomes the quiet NaN of its sign.
#[inline(always)]
fn bf16_rne_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let rounded = (b.wrapping_add(0x7FFF + ((b >> 16) & 1)) >> 16) as u16;
    let nan = ((b >> 16) as u16 & 0x8000) | 0x7fc0;
    if b & 0x7FFF_FFFF > 0x7F80_0000 {
        nan
    } else {
        rounded
    }
}

/// Contiguous bf16 RNE: whole 2-byte elements, so the loop vectorises.
fn encode_bf16_rne_contiguous(src: &[f32], bytes: &mut [u8]) {
    let (halves, _) = bytes.as_chunks_mut::<2>();
    for (h, x) in halves.iter_mut().zip(src) {
        *h = bf16_rne_bits(*x).to_le_bytes();
    }
}

/// Any other conversion, through the reference encoder.
#[derive(Clone, Copy)]
struct GenericEnc<const N: usize>(DType, CastMode);
impl<const N: usize> Encoder for GenericEnc<N> {
    const SIZE: usize = N;
    #[inline(always)]
    fn enc(self, x: f32, out: &mut [u8]) {
        out[..N].copy_from_slice(&self.0.encode(x, self.1).to_le_bytes()[..N]);
    }
}

#[inline(always)]
fn encode_with<E: Encoder>(e: E, src: &[f32], mem: &mut [u8], run: Run) {
    if run.contiguous(E::SIZE) {
        for (x, b) in src.iter().zip(mem[run.span(E::SIZE)].chunks_exact_mut(E::SIZE)) {
            e.enc(*x, b);
        }
    } else {
        for (j, x) in src.iter().enumerate() {
            let a = run.at(j);
            e.enc(*x, &mut mem[a..a + E::SIZE]);
        }
    }
}

/// Encode `src` (one value per element of `run`) into `dtype` with rounding `mode`.
pub(crate) fn encode_run(dtype: DType, mode: CastMode, src: &[f32], mem: &mut [u8], run: Run) {
    let src = &src[..run.len];
    match (dtype, mode) {
        (DType::Fp32, _) if run.contiguous(4) => encode_f32_contiguous(src, &mut mem[run.span(4)]),
        (DType::Fp32, _) => encode_with(F32Enc, src, mem, run),
        (DType::Bf16, CastMode::Rne) if run.contiguous(2) => encode_bf16_rne_contiguous(src, &mut mem[run.span(2)]),
        (DType::Bf16, CastMode::Rne) => encode_with(Bf16RneEnc, src, mem, run),
        (DType::Bf16 | DType::Fp16 | DType::Int16 | DType::Uint16, _) => {
            encode_with(GenericEnc::<2>(dtype, mode), src, mem, run);
        }
        (DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2 | DType::Uint8 | DType::Int8, _) => {
            encode_with(GenericEnc::<1>(dtype, mode), src, mem, run);
        }
        (DType::Int32 | DType::Uint32, _) => encode_with(GenericEnc::<4>(dtype, mode), src, mem, run),
    }
}

/// Elements from which [`encode_all`] and [`decode_all`] split the work over threads.
const PARALLEL_ELEMS: usize = 1 << 20;

/// Elements per thread for `len` elements: `len` when one thread does them all.
fn piece(len: usize) -> usize {
    // Small work first: asking for the parallelism reads the cgroup's files every time.
    if len < PARALLEL_ELEMS {
        return len.max(1);
    }
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(8);
    if threads < 2 {
        len.max(1)
    } else {
        len.div_ceil(threads)
    }
}

/// Encode `src` into the contiguous elements `bytes` of `dtype` (rounding `mode`), on
/// several threads when large.
pub(crate) fn encode_all(dtype: DType, mode: CastMode, src: &[f32], bytes: &mut [u8]) {
    let size = dtype.size_bytes() as usize;
    let len = src.len().min(bytes.len() / size);
    let whole = |src: &[f32], bytes: &mut [u8]| {
        encode_run(dtype, mode, src, bytes, Run { start: 0, len: src.len(), step: size as i64 });
    };
    let chunk = piece(len);
    if chunk >= len {
        whole(&src[..len], bytes);
        return;
    }
    let started = std::thread::scope(|s| {
        src[..len].chunks(chunk).zip(bytes.chunks_mut(chunk * size)).all(|(v, b)| {
            let whole = &whole;
            std::thread::Builder::new().spawn_scoped(s, move || whole(v, b)).is_ok()
        })
    });
    if !started {
        // A thread could not be started: everything on this one.
        whole(&src[..len], bytes);
    }
}

/// Decode the contiguous elements `bytes` of `dtype` into `out`, on several threads when
/// large.
pub(crate) fn decode_all(dtype: DType, bytes: &[u8], out: &mut [f32]) {
    let size = dtype.size_bytes() as usize;
    let len = out.len().min(bytes.len() / size);
    let whole = |bytes: &[u8], out: &mut [f32]| {
        decode_run(dtype, bytes, Run { start: 0, len: out.len(), step: size as i64 }, out);
    };
    let chunk = piece(len);
    if chunk >= len {
        whole(bytes, &mut out[..len]);
        return;
    }
    let started = std::thread::scope(|s| {
        bytes.chunks(chunk * size).zip(out[..len].chunks_mut(chunk)).all(|(b, v)| {
            let whole = &whole;
            std::thread::Builder::new().spawn_scoped(s, move || whole(b, v)).is_ok()
        })
    });
    if !started {
        whole(bytes, &mut out[..len]);
    }
}

/// Copy the elements of `src` to `dst` unchanged (same element size `N`), either memory.
#[inline(always)]
fn move_with<const N: usize>(src_mem: &[u8], src: Run, dst_mem: &mut [u8], dst: Run) {
    for j in 0..src.len {
        let (a, b) = (src.at(j), dst.at(j));
        dst_mem[b..b + N].copy_from_slice(&src_mem[a..a + N]);
    }
}

/// Copy `src.len` raw elements of `size` bytes from `src` to `dst` in different memories.
pub(crate) fn move_run(size: usize, src_mem: &[u8], src: Run, dst_mem: &mut [u8], dst: Run) {
    if src.contiguous(size) && dst.contiguous(size) {
        dst_mem[dst.span(size)].copy_from_slice(&src_mem[src.span(size)]);
        return;
    }
    match size {
        1 => move_with::<1>(src_mem, src, dst_mem, dst),
        2 => move_with::<2>(src_mem, src, dst_mem, dst),
        _ => move_with::<4>(src_mem, src, dst_mem, dst),
    }
}

/// Gather `src.len` raw elements of `size` bytes into `out` (packed).
pub(crate) fn gather_raw(size: usize, mem: &[u8], src: Run, out: &mut Vec<u8>) {
    out.clear();
    if src.contiguous(size) {
        out.extend_from_slice(&mem[src.span(size)]);
    } else {
        for j in 0..src.len {
            let a = src.at(j);
            out.extend_from_slice(&mem[a..a + size]);
        }
    }
}

/// Scatter packed raw elements of `size` bytes from `data` into `dst`.
pub(crate) fn scatter_raw(size: usize, data: &[u8], mem: &mut [u8], dst: Run) {
    if dst.contiguous(size) {
        mem[dst.span(size)].copy_from_slice(&data[..dst.len * size]);
    } else {
        for (j, b) in data.chunks_exact(size).take(dst.len).enumerate() {
            let a = dst.at(j);
            mem[a..a + size].copy_from_slice(b);
        }
    }
}

/// Store one element pattern (`bytes[..size]`) into every element of `dst`.
pub(crate) fn fill_run(size: usize, bytes: [u8; 4], mem: &mut [u8], dst: Run) {
    let pattern = &bytes[..size];
    if dst.contiguous(size) {
        for b in mem[dst.span(size)].chunks_exact_mut(size) {
            b.copy_from_slice(pattern);
        }
    } else {
        for j in 0..dst.len {
            let a = dst.at(j);
            mem[a..a + size].copy_from_slice(pattern);
        }
    }
}

/// The bit pattern of a memset value in `dtype`: floats round through f32 like every other
/// conversion; integers round the f64 itself (half to even, clamped), so large int32 values
/// stay exact.
pub(crate) fn memset_bits(dtype: DType, value: f64) -> u32 {
    let int = |lo: f64, hi: f64| -> i64 {
        if value.is_nan() {
            0
        } else {
            value.round_ties_even().clamp(lo, hi) as i64
        }
    };
    match dtype {
        DType::Uint8 => int(0.0, 255.0) as u32,
        DType::Int16 => u32::from(int(f64::from(i16::MIN), f64::from(i16::MAX)) as i16 as u16),
        DType::Int32 => int(f64::from(i32::MIN), f64::from(i32::MAX)) as i32 as u32,
        DType::Int8 => u32::from(int(f64::from(i8::MIN), f64::from(i8::MAX)) as i8 as u8),
        DType::Uint16 => int(0.0, f64::from(u16::MAX)) as u32,
        DType::Uint32 => int(0.0, f64::from(u32::MAX)) as u32,
        DType::Fp32 | DType::Bf16 | DType::Fp16 | DType::Fp8e4m3 | DType::Fp8e4m3fn | DType::Fp8e5m2 => {
            dtype.encode(value as f32, CastMode::Rne)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spread of f32 bit patterns: every sign/exponent with assorted mantissas, plus
    /// specials and rounding ties.
    fn sample_f32() -> Vec<f32> {
        let mut v = Vec::new();
        for e in 0u32..256 {
            for m in [0u32, 1, 0x7fff, 0x8000, 0x8001, 0x18000, 0x400000, 0x7fffff, 0x123456, 0x0c0000, 0x100000] {
                for s in [0u32, 1] {
                    v.push(f32::from_bits((s << 31) | (e << 23) | m));
                }
            }
        }
        v.extend([0.0, -0.0, 1.0, 240.0, 448.0, 57344.0, 65504.0, 1e30, -1e30, 3.5, 2.5, 255.5, -32768.5]);
        v
    }

    #[test]
    fn whole_tensor_conversions_on_threads_match_one_run() {
        let base = sample_f32();
        let values: Vec<f32> = (0..PARALLEL_ELEMS * 3 + 7).map(|i| base[i % base.len()]).collect();
        for d in [DType::Bf16, DType::Fp32, DType::Fp8e4m3] {
            let size = d.size_bytes() as usize;
            let run = Run { start: 0, len: values.len(), step: size as i64 };
            let (mut one, mut all) = (vec![0u8; values.len() * size], vec![0u8; values.len() * size]);
            encode_run(d, CastMode::Rne, &values, &mut one, run);
            encode_all(d, CastMode::Rne, &values, &mut all);
            assert!(one == all, "{d}: encode");
            let (mut back_one, mut back_all) = (vec![0f32; values.len()], vec![1f32; values.len()]);
            decode_run(d, &one, run, &mut back_one);
            decode_all(d, &one, &mut back_all);
            assert!(back_one.iter().zip(&back_all).all(|(a, b)| a.to_bits() == b.to_bits()), "{d}: decode");
        }
    }

    #[test]
    fn decode_matches_reference_for_every_pattern() {
        for d in DType::ALL {
            let size = d.size_bytes() as usize;
            let patterns: Vec<u32> = match size {
                1 => (0..256).collect(),
                2 => (0..65536).collect(),
                _ => {
                    sample_f32().iter().map(|x| x.to_bits()).chain([0x7fc0_0001, 0xffff_ffff, 7, 0x8000_0000]).collect()
                }
            };
            let mut mem = vec![0u8; patterns.len() * size];
            for (p, b) in patterns.iter().zip(mem.chunks_exact_mut(size)) {
                d.store_bits(*p, b);
            }
            let mut out = vec![0f32; patterns.len()];
            decode_run(d, &mem, Run { start: 0, len: patterns.len(), step: size as i64 }, &mut out);
            for (p, o) in patterns.iter().zip(&out) {
                let want = d.decode(*p);
                assert_eq!(want.to_bits(), o.to_bits(), "{d} {p:#x}: {o} vs {want}");
            }
        }
    }

    #[test]
    fn encode_matches_reference_bit_for_bit() {
        let xs = sample_f32();
        for d in DType::ALL {
            for mode in [CastMode::Rne, CastMode::Saturate] {
                let size = d.size_bytes() as usize;
                let mut mem = vec![0u8; xs.len() * size];
                encode_run(d, mode, &xs, &mut mem, Run { start: 0, len: xs.len(), step: size as i64 });
                for (x, b) in xs.iter().zip(mem.chunks_exact(size)) {
                    assert_eq!(d.load_bits(b), d.encode(*x, mode), "{d} {mode:?} {x:e}");
                }
            }
        }
    }

    #[test]
    fn strided_and_backward_runs() {
        let mem: Vec<u8> = (0u8..32).collect();
        let mut out = Vec::new();
        gather_raw(2, &mem, Run { start: 28, len: 3, step: -8 }, &mut out);
        assert_eq!(out, vec![28, 29, 20, 21, 12, 13]);
        let mut dst = vec![0u8; 8];
        scatter_raw(2, &out, &mut dst, Run { start: 0, len: 3, step: 3 });
        assert_eq!(dst, vec![28, 29, 0, 20, 21, 0, 12, 13]);
        fill_run(2, [1, 2, 0, 0], &mut dst, Run { start: 6, len: 1, step: 2 });
        assert_eq!(&dst[6..], &[1, 2]);
    }

    #[test]
    fn memset_values() {
        assert_eq!(memset_bits(DType::Int32, 16_777_217.0), 16_777_217);
        assert_eq!(memset_bits(DType::Uint8, -3.0), 0);
        assert_eq!(memset_bits(DType::Bf16, 1.0), 0x3f80);
    }
}
