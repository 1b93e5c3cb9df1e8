//! Allocation by liveness (rule 2 of the design): every logical on-chip tile (a tensor, or a
//! block of one) is an *instance* of its allocation site, live from its first access to its
//! last in program order. A site gets as many *slots* as instances are live at once, plus
//! one for rotation (double buffering) when it has more instances than that and it fits;
//! instance `i` (by first access) uses slot `i mod slots`. A site's storage (its slots, on
//! the same partitions) is live from its first instance's first access to its last
//! instance's last one, and sites whose storage is not live at the same time share bytes:
//! first fit, largest first, SBUF 64-byte aligned, PSUM in whole 2 KiB banks. When it does
//! not fit, rotation is dropped from the largest sites first. When even that does not fit,
//! the packing starts again with sites sharing bytes whenever none of their instances are
//! live at once (temporaries of one loop body, live in turns, then share one range; the
//! dependences that adds order them), rotation again dropped as needed. The capacity error
//! names the allocation, what is live beside it and the capacity. Direct addresses are
//! honoured.

use penguin::{DType, Memory, Target};
use serde::Serialize;

use crate::error::NkiError;

/// SBUF allocations are aligned to this many bytes.
const SBUF_ALIGN: u64 = 64;

/// One logical tile of a site.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Instance {
    /// The trace tensor and block.
    pub(crate) tensor: u32,
    pub(crate) block: u64,
    /// First and last record that access it.
    pub(crate) first: usize,
    pub(crate) last: usize,
    /// Its partitions and bytes per partition.
    pub(crate) partitions: u64,
    pub(crate) bytes: u64,
    /// Its direct address `(partition, byte)`, if the kernel gave one.
    pub(crate) direct: Option<(u32, u64)>,
}

/// The instances of one site (of one memory and dtype).
#[derive(Clone, Debug)]
pub(crate) struct SiteRequest {
    pub(crate) name: String,
    pub(crate) loc: String,
    pub(crate) memory: Memory,
    pub(crate) dtype: DType,
    pub(crate) instances: Vec<Instance>,
}

/// Where one site lives.
#[derive(Clone, Debug)]
pub(crate) struct SitePlan {
    pub(crate) request: SiteRequest,
    /// Partitions of its storage.
    pub(crate) partitions: u64,
    /// Largest tile, bytes per partition.
    pub(crate) tile_bytes: u64,
    /// Bytes per partition between slots.
    pub(crate) stride: u64,
    /// Slots, and the slots without rotation.
    pub(crate) slots: u64,
    base_slots: u64,
    /// Byte address of the storage in each partition.
    pub(crate) address: u64,
    /// Per instance (in the request's order): its slot and `(partition, byte)` offset from
    /// the storage's start.
    pub(crate) placement: Vec<(u64, u32, u64)>,
    live: (usize, usize),
    /// The records its instances are live over: disjoint `[first, last]` spans, in order.
    spans: Vec<(usize, usize)>,
    direct: bool,
    rotation_dropped: bool,
}

impl SitePlan {
    /// Bytes per partition its storage takes.
    fn storage(&self) -> u64 {
        if self.direct {
            return self.tile_bytes;
        }
        let bytes = self.slots * self.stride;
        match self.request.memory {
            Memory::Psum => {
                bytes.div_ceil(penguin::target::PSUM_BANK_BYTES.into()) * u64::from(penguin::target::PSUM_BANK_BYTES)
            }
            _ => bytes.div_ceil(SBUF_ALIGN) * SBUF_ALIGN,
        }
    }

    fn align(&self) -> u64 {
        match self.request.memory {
            Memory::Psum => penguin::target::PSUM_BANK_BYTES.into(),
            _ => SBUF_ALIGN,
        }
    }

    /// Whether the storage of one is live while the other's is: over their whole lives, or
    /// with `turns` only while an instance is live (between its instances a site's storage
    /// holds nothing, so another site may use it there).
    fn meets(&self, o: &SitePlan, turns: bool) -> bool {
        if !(self.live.0 <= o.live.1 && o.live.0 <= self.live.1) {
            return false;
        }
        if !turns {
            return true;
        }
        let (mut a, mut b) = (self.spans.iter().peekable(), o.spans.iter().peekable());
        while let (Some(&&x), Some(&&y)) = (a.peek(), b.peek()) {
            if x.0 <= y.1 && y.0 <= x.1 {
                return true;
            }
            if x.1 < y.1 {
                a.next();
            } else {
                b.next();
            }
        }
        false
    }

    /// The report of the site.
    pub(crate) fn report(&self) -> AllocationReport {
        let r = &self.request;
        let ranges = if self.direct {
            r.instances.iter().filter_map(|i| i.direct).map(|(_, b)| (b, b + self.tile_bytes)).collect()
        } else {
            (0..self.slots)
                .map(|s| (self.address + s * self.stride, self.address + s * self.stride + self.tile_bytes))
                .collect()
        };
        AllocationReport {
            name: r.name.clone(),
            loc: r.loc.clone(),
            buffer: if r.memory == Memory::Psum { "psum" } else { "sbuf" },
            dtype: r.dtype.to_string(),
            partitions: self.partitions,
            bytes_per_partition: self.tile_bytes,
            instances: r.instances.len() as u64,
            slots: self.slots,
            rotation: self.slots > self.base_slots,
            rotation_dropped: self.rotation_dropped,
            direct: self.direct,
            ranges,
        }
    }
}

/// What the allocator decided for one allocation site (the `buffers` of `ntile gemm`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AllocationReport {
    /// The site's name (its first tensor's).
    pub name: String,
    /// Where the site is in the kernel (`file.py:line`).
    pub loc: String,
    /// `sbuf` or `psum`.
    pub buffer: &'static str,
    /// Element type.
    pub dtype: String,
    /// Partitions.
    pub partitions: u64,
    /// Bytes per partition of one tile.
    pub bytes_per_partition: u64,
    /// Logical tiles allocated at the site.
    pub instances: u64,
    /// Physical tiles (buffers) that back them.
    pub slots: u64,
    /// Whether one slot was added for rotation (double buffering).
    pub rotation: bool,
    /// Whether rotation was dropped because it did not fit.
    pub rotation_dropped: bool,
    /// Whether the kernel placed it itself.
    pub direct: bool,
    /// The byte range `[start, end)` of each slot in every partition.
    pub ranges: Vec<(u64, u64)>,
}

/// The slots round robin needs: the fewest from `at_least` up with which no two instances
/// that take turns in a slot are live at once (`inst` sorted by first access).
fn round_robin(inst: &[Instance], at_least: u64) -> u64 {
    let n = inst.len() as u64;
    let ok = |s: u64| (0..inst.len().saturating_sub(s as usize)).all(|i| inst[i].last < inst[i + s as usize].first);
    (at_least.max(1)..n.max(1)).find(|&s| ok(s)).unwrap_or(n.max(1))
}

/// The records some instance is live over, as disjoint `[first, last]` spans in order
/// (`inst` sorted by first access).
fn spans(inst: &[Instance]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for i in inst {
        match out.last_mut() {
            Some(last) if i.first <= last.1 => last.1 = last.1.max(i.last),
            _ => out.push((i.first, i.last)),
        }
    }
    out
}

/// The most instances live at once.
fn most_live(inst: &[Instance]) -> u64 {
    let mut events: Vec<(usize, i64)> = inst.iter().flat_map(|i| [(i.first, 1), (i.last + 1, -1)]).collect();
    events.sort_unstable_by_key(|&(at, d)| (at, d));
    let (mut now, mut most) = (0i64, 0i64);
    for (_, d) in events {
        now += d;
        most = most.max(now);
    }
    most as u64
}

/// Plan a site without placing it.
fn plan(mut request: SiteRequest) -> Result<SitePlan, NkiError> {
    request.instances.sort_by_key(|i| (i.first, i.tensor, i.block));
    let inst = &request.instances;
    let partitions = inst.iter().map(|i| i.partitions).max().unwrap_or(1);
    let tile_bytes = inst.iter().map(|i| i.bytes).max().unwrap_or(0);
    let live = (inst.iter().map(|i| i.first).min().unwrap_or(0), inst.iter().map(|i| i.last).max().unwrap_or(0));
    let spans = spans(inst);
    let size = u64::from(request.dtype.size_bytes());
    if inst.iter().any(|i| i.direct.is_some()) {
        // A direct site: each instance where the kernel put it.
        let addrs: Vec<(u32, u64)> = inst.iter().map(|i| i.direct.unwrap_or((0, 0))).collect();
        let base = addrs.iter().map(|a| a.1).min().unwrap_or(0);
        let parts = inst.iter().zip(&addrs).map(|(i, a)| u64::from(a.0) + i.partitions).max().unwrap_or(1);
        let end = inst.iter().zip(&addrs).map(|(i, a)| a.1 + i.bytes).max().unwrap_or(0);
        if let Some(a) = addrs.iter().find(|a| (a.1 - base) % size != 0) {
            return Err(NkiError::Unsupported {
                loc: request.loc.clone(),
                record: "direct allocation",
                what: format!(
                    "`{}` at byte {} is not a whole number of {} elements from the site's first address {base}",
                    request.name, a.1, request.dtype
                ),
            });
        }
        let placement = addrs.iter().map(|a| (0, a.0, a.1 - base)).collect();
        return Ok(SitePlan {
            partitions: parts,
            tile_bytes: end - base,
            stride: 0,
            slots: inst.len() as u64,
            base_slots: inst.len() as u64,
            address: base,
            placement,
            live,
            spans,
            direct: true,
            rotation_dropped: false,
            request,
        });
    }
    let bank = u64::from(penguin::target::PSUM_BANK_BYTES);
    let stride = match request.memory {
        Memory::Psum if tile_bytes <= bank => tile_bytes.max(size).next_power_of_two(),
        Memory::Psum => tile_bytes.div_ceil(bank) * bank,
        _ => tile_bytes.div_ceil(SBUF_ALIGN).max(1) * SBUF_ALIGN,
    };
    let base_slots = round_robin(inst, most_live(inst));
    let n = inst.len() as u64;
    let slots = if n > base_slots { round_robin(inst, base_slots + 1) } else { base_slots };
    let mut sp = SitePlan {
        partitions,
        tile_bytes,
        stride,
        slots,
        base_slots,
        address: 0,
        placement: Vec::new(),
        live,
        spans,
        direct: false,
        rotation_dropped: false,
        request,
    };
    sp.place_slots();
    Ok(sp)
}

impl SitePlan {
    fn place_slots(&mut self) {
        let (slots, stride) = (self.slots.max(1), self.stride);
        self.placement =
            (0..self.request.instances.len() as u64).map(|i| (i % slots, 0, (i % slots) * stride)).collect();
    }
}

/// Place every site in its memory, sharing bytes between sites not live at once.
pub(crate) fn allocate(requests: Vec<SiteRequest>, target: Target) -> Result<Vec<SitePlan>, NkiError> {
    let mut plans = requests.into_iter().map(plan).collect::<Result<Vec<_>, _>>()?;
    let info = target.info();
    for memory in [Memory::Sbuf, Memory::Psum] {
        let capacity = match memory {
            Memory::Psum => u64::from(info.psum_num_banks * info.psum_par_size_in_bytes),
            _ => u64::from(info.statebuf_par_size_in_bytes),
        };
        let ids: Vec<usize> = (0..plans.len()).filter(|&i| plans[i].request.memory == memory).collect();
        for &i in &ids {
            let p = &plans[i];
            if p.direct
                && (p.address + p.tile_bytes > capacity || p.partitions > u64::from(info.statebuf_num_partitions))
            {
                return Err(NkiError::Invalid {
                    loc: p.request.loc.clone(),
                    message: format!(
                        "the direct address of `{}` ({} bytes from byte {} on {} partitions) is outside the {capacity} \
                         bytes per partition of {} on {target}",
                        p.request.name,
                        p.tile_bytes,
                        p.address,
                        p.partitions,
                        crate::kinds::buffer_name(memory)
                    ),
                });
            }
        }
        // Sites whose lives do not overlap share bytes; only when that does not fit do sites
        // that take turns inside a loop body share too (which orders their instances).
        let whole = plans.clone();
        if fit(&mut plans, &ids, capacity, false).is_err() {
            plans = whole;
            fit(&mut plans, &ids, capacity, true)
                .map_err(|failed| capacity_error(&plans, &ids, failed, capacity, target))?;
        }
    }
    Ok(plans)
}

/// Pack the sites `ids` into `capacity`, dropping rotation from the largest sites that have
/// it until they fit; `Err(site)` for the site that does not fit without any rotation.
fn fit(plans: &mut [SitePlan], ids: &[usize], capacity: u64, turns: bool) -> Result<(), usize> {
    loop {
        let failed = match pack(plans, ids, capacity, turns) {
            Ok(()) => return Ok(()),
            Err(failed) => failed,
        };
        let drop = ids
            .iter()
            .copied()
            .filter(|&i| plans[i].slots > plans[i].base_slots)
            .max_by_key(|&i| (plans[i].storage(), std::cmp::Reverse(i)));
        let Some(i) = drop else { return Err(failed) };
        plans[i].slots = plans[i].base_slots;
        plans[i].rotation_dropped = true;
        plans[i].place_slots();
    }
}

/// First fit, largest first; `Err(site)` for the first site that does not fit.
fn pack(plans: &mut [SitePlan], ids: &[usize], capacity: u64, turns: bool) -> Result<(), usize> {
    let mut order: Vec<usize> = ids.iter().copied().filter(|&i| !plans[i].direct).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(plans[i].storage()), plans[i].live.0, i));
    let mut placed: Vec<usize> = ids.iter().copied().filter(|&i| plans[i].direct).collect();
    for i in order {
        let (size, align) = (plans[i].storage(), plans[i].align());
        let conflicts: Vec<(u64, u64)> = placed
            .iter()
            .filter(|&&j| plans[j].meets(&plans[i], turns))
            .map(|&j| (plans[j].address, plans[j].address + plans[j].storage()))
            .collect();
        let mut candidates: Vec<u64> =
            std::iter::once(0).chain(conflicts.iter().map(|c| c.1.div_ceil(align) * align)).collect();
        candidates.sort_unstable();
        let at = candidates
            .into_iter()
            .find(|&a| a + size <= capacity && conflicts.iter().all(|&(lo, hi)| a + size <= lo || hi <= a));
        match at {
            Some(a) => {
                plans[i].address = a;
                placed.push(i);
            }
            None => return Err(i),
        }
    }
    Ok(())
}

/// The error for `failed`, which did not fit even with sites taking turns: it names what is
/// live beside it (some instance of it at the same time as one of `failed`'s).
fn capacity_error(plans: &[SitePlan], ids: &[usize], failed: usize, capacity: u64, target: Target) -> NkiError {
    let f = &plans[failed];
    let live: Vec<String> = ids
        .iter()
        .filter(|&&j| j != failed && plans[j].meets(f, true))
        .map(|&j| format!("`{}` ({}, {} bytes)", plans[j].request.name, plans[j].request.loc, plans[j].storage()))
        .collect();
    NkiError::Capacity {
        loc: f.request.loc.clone(),
        buffer: crate::kinds::buffer_name(f.request.memory),
        name: f.request.name.clone(),
        bytes: f.storage(),
        live,
        capacity,
        target,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(first: usize, last: usize) -> Instance {
        Instance { tensor: 0, block: 0, first, last, partitions: 128, bytes: 100, direct: None }
    }

    #[test]
    fn slots_follow_liveness_and_round_robin() {
        // One at a time: one slot, plus rotation.
        let seq: Vec<Instance> = (0..4).map(|i| inst(2 * i, 2 * i + 1)).collect();
        assert_eq!((most_live(&seq), round_robin(&seq, 1)), (1, 1));
        // Two at a time; a long-lived first instance makes round robin need a third slot.
        let pairs = vec![inst(0, 9), inst(1, 2), inst(3, 4), inst(5, 6)];
        assert_eq!(most_live(&pairs), 2);
        assert_eq!(round_robin(&pairs, 2), 4);
    }

    fn site(name: &str, instances: Vec<Instance>) -> SiteRequest {
        SiteRequest { name: name.into(), loc: "k.py:1".into(), memory: Memory::Sbuf, dtype: DType::Fp32, instances }
    }

    #[test]
    fn sites_live_in_turns_share_bytes_and_sites_live_together_do_not() {
        // Two temporaries of a loop body, each live in its own stretch of every iteration,
        // and a third live across the second stretch; each takes 100 000 bytes of a
        // partition, so three apart do not fit trn2's SBUF. (One instance each, so no rotation.)
        let big = |first, last| Instance { bytes: 100_000, ..inst(first, last) };
        let spread =
            |from: usize, to: usize| -> Vec<Instance> { (0..4).map(|k| big(10 * k + from, 10 * k + to)).collect() };
        let a = site("a", spread(0, 2));
        let b = site("b", spread(3, 5));
        let c = site("c", spread(4, 6));
        let small = allocate(
            vec![site("a", (0..4).map(|k| inst(10 * k, 10 * k + 2)).collect()), site("b", spread(3, 5))],
            Target::Trn2,
        )
        .unwrap();
        let range = |p: &SitePlan| (p.address, p.address + p.storage());
        let (sa, sb) = (range(&small[0]), range(&small[1]));
        assert!(sa.1 <= sb.0 || sb.1 <= sa.0, "sites that fit apart stay apart: {sa:?} {sb:?}");
        let plans = allocate(vec![a, b, c], Target::Trn2).unwrap();
        let (ra, rb, rc) = (range(&plans[0]), range(&plans[1]), range(&plans[2]));
        assert!(ra.0 < rb.1 && rb.0 < ra.1, "a and b take turns and overlap in bytes: {ra:?} {rb:?}");
        assert!(rc.1 <= rb.0 || rb.1 <= rc.0, "b and c are live together: {rb:?} {rc:?}");
        assert!(!plans[0].meets(&plans[2], true) && plans[1].meets(&plans[2], true));
    }
}
