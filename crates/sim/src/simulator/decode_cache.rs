//! Recently decoded PE operands (plain perf mode, moving and stationary) by access pattern,
//! least recently used first, within a byte budget; an SBUF write that overlaps an entry
//! drops it.
//!
//! Blocked schedules stream the same moving tile against several stationary tiles and the
//! same stationary tile against the n tiles of a block, so decoding each once saves most of
//! the decode time. The reuse is cyclic (a block's tiles in the same order, again and again),
//! and a least-recently-used cache smaller than the cycle hits never: so the budget follows
//! the SBUF image, which is all a valid entry can decode. An entry whose region is rewritten
//! is dropped, so what the cache holds is at most the SBUF bytes that PE operands read, in
//! f32 (twice a bf16 image, four times an fp8 one).
//!
//! Buffers of dropped entries that nothing else holds are kept for the next decodes, within
//! the budget with the entries, so that decoding does not allocate and zero a fresh buffer
//! for every operand. A block reload drops a whole block's entries at once; buffers freed
//! then and needed again only after the allocator has returned them to the OS (half a
//! second, in the command line) came back as fresh pages the kernel zeroes again: a seventh
//! of an 8192^3 simulation's samples when only eight were kept.

use std::sync::Arc;

use bir::HwAp;

/// The least budget, bytes (what a fixed cache of 96 moving tiles of 256 KiB held).
const MIN_BUDGET_BYTES: usize = 24 << 20;

/// Decoded f32 bytes per byte of the SBUF image at most (fp8 operands).
const DECODE_EXPANSION: usize = 4;

/// One cached operand: its pattern, the bytes it covers and its decoded rows.
struct Entry {
    ap: HwAp,
    region: (u32, u32, i64, i64),
    rows: Arc<Vec<f32>>,
}

/// See the module doc.
pub(super) struct DecodeCache {
    entries: Vec<Entry>,
    /// f32 bytes the entries hold.
    bytes: usize,
    budget: usize,
    spare: Vec<Vec<f32>>,
    /// f32 bytes the spare buffers hold (their lengths).
    spare_bytes: usize,
    /// The entry holding the operand just prepared, if it is there.
    pub hit: Option<usize>,
}

impl DecodeCache {
    /// A cache for a program whose SBUF image has `sbuf_image_bytes`.
    pub fn new(sbuf_image_bytes: usize) -> DecodeCache {
        let budget = sbuf_image_bytes.saturating_mul(DECODE_EXPANSION).max(MIN_BUDGET_BYTES);
        DecodeCache { entries: Vec::new(), bytes: 0, budget, spare: Vec::new(), spare_bytes: 0, hit: None }
    }

    /// Find `ap`, make it the most recently used and the hit.
    pub fn find(&mut self, ap: &HwAp) -> bool {
        // The most recent first: a block's reuse is usually near.
        let Some(i) = self.entries.iter().rposition(|e| e.ap == *ap) else {
            return false;
        };
        let entry = self.entries.remove(i);
        self.entries.push(entry);
        self.hit = Some(self.entries.len() - 1);
        true
    }

    /// Keep `rows` as the decode of `ap` (the hit from now on), dropping the least recently
    /// used entries beyond the budget.
    pub fn insert(&mut self, ap: &HwAp, rows: Vec<f32>) {
        let size = rows.len() * std::mem::size_of::<f32>();
        // Spare buffers give way first, so that entries and spares together keep within the
        // budget and one operand (an entry evicted below leaves its buffer to the next decode).
        while self.bytes + self.spare_bytes + size > self.budget {
            let Some(spare) = self.spare.pop() else { break };
            self.spare_bytes -= spare.len() * std::mem::size_of::<f32>();
        }
        while !self.entries.is_empty() && self.bytes + size > self.budget {
            let old = self.entries.remove(0);
            self.retire(old);
        }
        self.bytes += size;
        self.entries.push(Entry { ap: ap.clone(), region: ap.byte_region(), rows: Arc::new(rows) });
        self.hit = Some(self.entries.len() - 1);
    }

    /// The rows of entry `i`.
    pub fn get(&self, i: usize) -> Option<&Arc<Vec<f32>>> {
        self.entries.get(i).map(|e| &e.rows)
    }

    /// A buffer to decode into: a dropped entry's (its length kept, so a decode of the same
    /// size writes over it without clearing), or an empty one.
    pub fn buffer(&mut self) -> Vec<f32> {
        let buffer = self.spare.pop().unwrap_or_default();
        self.spare_bytes -= buffer.len() * std::mem::size_of::<f32>();
        buffer
    }

    /// Drop the entries that an SBUF write to the bytes `(p0, p1, lo, hi)` may change.
    pub fn invalidate(&mut self, (p0, p1, lo, hi): (u32, u32, i64, i64)) {
        if self.entries.is_empty() {
            return;
        }
        let overlaps = |e: &Entry| {
            let (q0, q1, clo, chi) = e.region;
            p0 < q1 && q0 < p1 && lo < chi && clo < hi
        };
        // Collecting nothing allocates nothing: a write over no entry costs one scan.
        let gone: Vec<Entry> = self.entries.extract_if(.., |e| overlaps(e)).collect();
        for e in gone {
            self.retire(e);
        }
    }

    /// Forget every entry and spare buffer.
    pub fn clear(&mut self) {
        *self = DecodeCache { budget: self.budget, ..DecodeCache::new(0) };
    }

    fn retire(&mut self, e: Entry) {
        let size = e.rows.len() * std::mem::size_of::<f32>();
        self.bytes -= size;
        self.hit = None;
        if self.bytes + self.spare_bytes + size <= self.budget {
            if let Ok(rows) = Arc::try_unwrap(e.rows) {
                self.spare.push(rows);
                self.spare_bytes += size;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use penguin::{DType, Dim, Memory};

    fn tile(offset: u64) -> HwAp {
        HwAp::on_chip(Memory::Sbuf, DType::Bf16, 0, 128, offset, vec![Dim::new(1, 512)])
    }

    /// A cycle of reuse longer than a fixed-size cache fits within a budget that follows the
    /// SBUF image: every second pass over 200 tiles hits.
    #[test]
    fn a_cycle_as_large_as_sbuf_hits_on_every_later_pass() {
        let rows = 128 * 512;
        // 200 tiles of bf16 [128, 512] are 25 MiB of SBUF image.
        let mut cache = DecodeCache::new(200 * rows * 2);
        let mut hits = 0;
        for pass in 0..3 {
            for t in 0..200u64 {
                let ap = tile(t * 1024);
                if cache.find(&ap) {
                    hits += 1;
                    assert_eq!(cache.get(cache.hit.unwrap_or(usize::MAX)).map(|r| r[0]), Some(t as f32));
                } else {
                    assert_eq!(pass, 0, "tile {t} missed on pass {pass}");
                    let mut buf = cache.buffer();
                    buf.resize(rows, t as f32);
                    cache.insert(&ap, buf);
                }
            }
        }
        assert_eq!(hits, 400);
    }

    /// Past the budget the least recently used entry goes, and its buffer is reused with its
    /// length; a write over an entry drops it, and only it.
    #[test]
    fn eviction_and_invalidation_recycle_buffers() {
        let rows = 1 << 20;
        let mut cache = DecodeCache::new(0);
        let fits = MIN_BUDGET_BYTES / (4 * rows);
        for t in 0..=fits as u64 {
            cache.insert(&tile(t * 1024), vec![t as f32; rows]);
        }
        assert!(!cache.find(&tile(0)), "the oldest entry was not dropped");
        assert!(cache.find(&tile(1024)));
        assert_eq!(cache.buffer().len(), rows);
        // Tile 2's partition bytes are [2048, 3072) on partitions 0..128.
        cache.invalidate((0, 1, 2100, 2102));
        assert!(!cache.find(&tile(2048)));
        assert!(cache.find(&tile(3072)));
        assert_eq!(cache.buffer().len(), rows);
        assert!(cache.buffer().is_empty());
    }

    /// A write over many entries at once (a block reload) keeps all their buffers for the
    /// next decodes, and new entries push spares out before the budget is passed.
    #[test]
    fn a_block_of_dropped_entries_leaves_every_buffer_within_the_budget() {
        let rows = 1 << 16;
        let size = 4 * rows;
        let mut cache = DecodeCache::new(0);
        for t in 0..20u64 {
            cache.insert(&tile(t * 1024), vec![t as f32; rows]);
        }
        cache.invalidate((0, 128, 0, 20 * 1024));
        assert_eq!((cache.entries.len(), cache.spare.len(), cache.spare_bytes), (0, 20, 20 * size));
        let fits = MIN_BUDGET_BYTES / size;
        for t in 0..fits as u64 {
            cache.insert(&tile(t * 1024), vec![0.0; rows]);
            assert!(cache.bytes + cache.spare_bytes <= MIN_BUDGET_BYTES, "tile {t}");
        }
        assert_eq!((cache.entries.len(), cache.spare.len(), cache.spare_bytes), (fits, 0, 0));
        cache.insert(&tile(fits as u64 * 1024), vec![0.0; rows]);
        assert_eq!((cache.entries.len(), cache.spare.len()), (fits, 1), "the evicted entry's buffer is spare");
        assert_eq!(cache.buffer().len(), rows);
        assert_eq!(cache.spare_bytes, 0);
    }
}
