//! The hardware profile: every timing figure the planner's estimate and the cycle model read,
//! one table per target, each value with its unit and the public source (the keys of
//! `HARDWARE-FACTS.md`: S1 the NeuronCore-v2 architecture guide, S2 Trainium2, S3 Trainium3,
//! S9 the DMA introduction, S11 the DMA bandwidth guide, S25 the performance guide; and of
//! `docs/isa-costs.md`: N1 the `nki.isa` API documents with their cost formulas, N2 the
//! current ones, N3 the NKI ISA common fields) or the stated reason it has the value it has.
//!
//! The ISA geometry (SBUF and PSUM sizes, partitions, DMA engines) is listed beside the
//! timing keys but comes from [`TargetInfo`](super::TargetInfo): the planner, the lowering and
//! the simulator size their buffers by it, so it cannot be overridden.
//!
//! A profile is overridden key by key ([`HwProfile::set`]): an unknown key, a unit that is
//! not the key's unit, a value outside the key's range or a fixed key is a [`ProfileError`]
//! naming the key.

use serde::{Deserialize, Serialize};

use super::{Target, NUM_DMA_QUEUES, NUM_PARTITIONS};

/// What one profile key means: its name, unit, accepted range and source.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyInfo {
    /// The key (the JSON name).
    pub name: &'static str,
    /// Its unit, as written in JSON (`{"value": 1300, "unit": "ns"}`).
    pub unit: &'static str,
    /// Smallest accepted value.
    pub min: f64,
    /// Largest accepted value.
    pub max: f64,
    /// Only whole numbers are accepted.
    pub whole: bool,
    /// The public source or the stated reason for the built-in values.
    pub source: &'static str,
    /// What the value means.
    pub about: &'static str,
}

/// A rejected override.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProfileError {
    /// User error: no such key.
    #[error("unknown hardware profile key `{0}` (`ntile hw show` lists the keys)")]
    UnknownKey(String),
    /// User error: the key is ISA geometry, not a timing figure.
    #[error("`{0}` is fixed by the target's geometry (the planner, lowering and simulator size buffers by it); it cannot be overridden")]
    Fixed(&'static str),
    /// User error: the unit given is not the key's unit.
    #[error("`{key}` is in {expected}, not `{given}`")]
    WrongUnit {
        /// The key.
        key: &'static str,
        /// The unit given.
        given: String,
        /// The key's unit.
        expected: &'static str,
    },
    /// User error: outside the key's range (or not a finite number).
    #[error("`{key}` = {value} is out of range (expected {min} ..= {max} {unit})")]
    OutOfRange {
        /// The key.
        key: &'static str,
        /// The value given.
        value: f64,
        /// Smallest accepted value.
        min: f64,
        /// Largest accepted value.
        max: f64,
        /// The key's unit.
        unit: &'static str,
    },
    /// User error: the key counts things and the value is not a whole number.
    #[error("`{key}` = {value} must be a whole number")]
    NotWhole {
        /// The key.
        key: &'static str,
        /// The value given.
        value: f64,
    },
}

/// Declares the timing keys once: the struct fields, the key table and the accessors.
macro_rules! timing_keys {
    ($( $(#[doc = $about:literal])+ $key:ident: $unit:literal, $min:literal ..= $max:literal, $whole:literal, $source:literal; )*) => {
        /// Every timing figure of one target. Fields are in the units of [`KEYS`].
        #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
        pub struct HwProfile {
            /// The target whose geometry the profile goes with.
            pub target: Target,
            $( $(#[doc = $about])+ pub $key: f64, )*
        }

        /// The timing keys, in the order `ntile hw show` prints them.
        pub const KEYS: &[KeyInfo] = &[$(
            KeyInfo {
                name: stringify!($key),
                unit: $unit,
                min: $min,
                max: $max,
                whole: $whole,
                source: $source,
                about: concat!($($about),+),
            },
        )*];

        impl HwProfile {
            /// The value of a timing key.
            pub fn get(&self, key: &str) -> Option<f64> {
                match key {
                    $( stringify!($key) => Some(self.$key), )*
                    _ => None,
                }
            }

            fn slot(&mut self, key: &str) -> Option<&mut f64> {
                match key {
                    $( stringify!($key) => Some(&mut self.$key), )*
                    _ => None,
                }
            }
        }
    };
}

timing_keys! {
    /// TensorE (PE array) clock.
    pe_ghz: "GHz", 0.01 ..= 100.0, false, "S1 (trn1 2.8), S2 (trn2 2.4), S3 (trn3 2.4)";
    /// ScalarE (ACT) clock.
    act_ghz: "GHz", 0.01 ..= 100.0, false, "S1 (trn1 1.4), S2 (trn2 1.2), S3 (trn3 1.2)";
    /// VectorE (DVE) clock.
    dve_ghz: "GHz", 0.01 ..= 100.0, false, "S1 (trn1 1.12), S2 (trn2 0.96), S3 (trn3 1.2)";
    /// GpSimd (POOL) clock; SP uses it too.
    pool_ghz: "GHz", 0.01 ..= 100.0, false, "S1 (trn1 1.4), S2 (trn2 1.2), S3 (trn3 1.2)";
    /// Shortest issue interval of a MultiplyMoving: it streams max(N, this) columns.
    mm_min_cycles: "cycles", 1.0 ..= 4096.0, false, "S1 (MM_INIT_LATENCY = 64 TensorE cycles)";
    /// How many times slower 4-byte (fp32) operands pass the PE array.
    mm_fp32_factor: "x", 1.0 ..= 64.0, false, "S1, S2 (fp32 peak is a quarter of bf16: 23 vs 92, 20 vs 79 TFLOPS)";
    /// How many times faster a LoadStationary is than an MM of the same free size.
    ls_speedup: "x", 0.1 ..= 64.0, false, "S1, S25 (fast LoadStationary, up to 4x)";
    /// Input width of the PE's sparse data path, in elements per PE row and cycle (the
    /// documents' `5x128`): a sparse MultiplyMoving reads `CR` moving elements and one
    /// stationary element per row for each moving column, the count that fits the dense
    /// figures too (BF16 `2x128` = 1 + 1, double-row FP8 `4x128` = 2 + 2). It streams one
    /// column per cycle while `CR + 1 <= this`, `(CR + 1) / this` cycles per column beyond.
    pe_sparse_input_lanes: "x128 elements/cycle", 1.0 ..= 64.0, false, "S2, S3 (TensorE input 5x128 sparse on trn2/trn3, 316 TFLOPS sparse = 4x dense on trn2); trn1 has no sparse path: its 2x128 dense input [S1]";
    /// MIN_II, the shortest initiation interval of an ACT/DVE instruction: one processing `N`
    /// elements per partition takes `max(MIN_II, N)` engine cycles (activation, tensor_copy,
    /// tensor_scalar, bn_stats, memset, tensor_tensor with a PSUM input, tensor_reduce).
    compute_min_ii_cycles: "cycles", 0.0 ..= 100000.0, false, "N1 (nki.isa activation, tensor_copy, tensor_scalar, tensor_tensor, bn_stats, memset: MIN_II is roughly 64 engine cycles); docs/isa-costs.md";
    /// Cycles per element of a VectorE tensor_tensor whose inputs are both in SBUF (unless all
    /// bf16, add/multiply/subtract and contiguous, which take 1): `max(MIN_II, this * N)`.
    tensor_tensor_sbuf_factor: "x", 0.1 ..= 64.0, false, "N1 (nki.isa.tensor_tensor: max(MIN_II, 2N) otherwise); S1 (two input tiles: roughly 2N cycles)";
    /// Cycles per element of a reciprocal on VectorE: `max(MIN_II, this * N)`.
    dve_reciprocal_factor: "x", 0.1 ..= 64.0, false, "N1 (nki.isa.reciprocal: max(MIN_II, 8*N)); N3 (reciprocal on VectorE about 8x slower than on ScalarE)";
    /// Extra ScalarE cycles to write an activation's row sums out (ActReadAccumulator).
    act_reduce_read_cycles: "cycles", 0.0 ..= 100000.0, false, "N1 (nki.isa.activation_reduce: max(MIN_II, N) + MIN_II); S1 (ActReadAccumulator roughly 64 ScalarE cycles)";
    /// Cycles per element of a bf16 -> bf16 add or maximum tensor_reduce.
    tensor_reduce_bf16_factor: "x", 0.01 ..= 64.0, false, "N1 (nki.isa.tensor_reduce: N/2 when input and output are bf16 and the operator is add or maximum, N otherwise)";
    /// Cycles per element of a memset of zero into a bf16/fp16 tile.
    memset_zero16_factor: "x", 0.01 ..= 64.0, false, "N1 (nki.isa.memset: max(MIN_II, N/2) for zero in bf16/fp16, max(MIN_II, N) otherwise)";
    /// VectorE cycles per (count, mean, variance * count) triple of a bn_aggr.
    bn_aggr_cycles_per_triple: "cycles", 0.0 ..= 1000.0, false, "N1 (nki.isa.bn_aggr: max(MIN_II, 13*(N/3)))";
    /// GPSIMD_START, the startup overhead of a GpSimd instruction: `this + N` cycles.
    pool_start_cycles: "cycles", 0.0 ..= 100000.0, false, "N1 (nki.isa.iota: 150 + N; nki.isa.affine_select: GPSIMD_START + N, GPSIMD_START roughly 150)";
    /// Cycles per element of a reverse square root on GpSimd: `GPSIMD_START + this * N`.
    pool_rsqrt_factor: "x", 0.1 ..= 64.0, false, "N3 (rsqrt on GpSimd: 4x lower throughput than ScalarE)";
    /// Peak data rate of one DMA engine.
    dma_engine_bytes_per_ns: "B/ns", 0.1 ..= 10000.0, false, "S9, S11 (17 / 23 / 33 B/ns per engine, 16 engines)";
    /// Time a DMA engine spends on one descriptor (one contiguous run of one partition); it
    /// overlaps the previous descriptor's data, so a run costs max(this, bytes / engine rate).
    dma_descriptor_ns: "ns", 0.0 ..= 100000.0, false, "derived from S11: runs of 2 KiB per partition approach peak, so the descriptor time equals the data time of 2 KiB (2048 / engine rate)";
    /// Fixed end-to-end latency of one transfer (descriptor setup, synchronization,
    /// semaphore-to-start), before its data moves.
    dma_fixed_ns: "ns", 0.0 ..= 1000000.0, false, "S11 (~1300 ns per transfer, cross-engine)";
    /// Transfers one queue keeps in flight: their fixed latencies overlap.
    dma_queue_depth: "transfers", 1.0 ..= 64.0, true, "assumption (no public figure): a queue runs its transfers in order [S9] but pipelines their setup; 4 is the smallest depth that hides the 1.3 us latency behind transfers of ~360 ns of data per engine (8 KiB, the 2x-saturating run)";
    /// DMA transpose throughput from HBM, as a fraction of a copy's.
    dma_transpose_hbm_fraction: "fraction", 0.01 ..= 1.0, false, "S2 (up to 90% of DMA throughput HBM->SBUF, 50% SBUF->SBUF, which BIR cannot express; trn1 has no DMA transpose)";
    /// Throughput of DMA-side arithmetic (offloaded FMA, scatter-add) as a fraction of a copy's.
    dma_compute_fraction: "fraction", 0.01 ..= 1.0, false, "S3 (read-add-write at DMA-copy throughput on trn3, 50% through the collective-compute engines before)";
    /// HBM bandwidth available to one core.
    hbm_bytes_per_ns: "B/ns", 0.1 ..= 100000.0, false, "S1 (trn1 820 GB/s per 2 cores = 410), S5 (trn2 2.9 TB/s per 8 cores ~ 360), S3/S5 (trn3 4.7-4.9 TB/s per 8 ~ 600)";
    /// HBM bandwidth the physical cores of one logical core (LNC=2) draw together: each core
    /// draws at most `hbm_bytes_per_ns` alone, and both pass through this one budget.
    hbm_shared_bytes_per_ns: "B/ns", 0.1 ..= 100000.0, false, "S1 (trn1: its 2 cores share the chip's 820 GB/s; it has no LNC=2), S5 + S29 (trn2 2.9 TB/s over 4 logical cores of LNC=2 = 725, trn3 4.9 TB/s over 4 = 1225)";
    /// HBM access granule: a run is read or written in whole granules.
    hbm_burst_bytes: "B", 1.0 ..= 4096.0, true, "assumption: memory controllers move 64-byte granules (two 32-byte HBM pseudo-channel bursts)";
}

/// The geometry keys `ntile hw show` lists with the timing keys (read-only).
pub const GEOMETRY: &[KeyInfo] = &[
    KeyInfo {
        name: "sbuf_partitions",
        unit: "partitions",
        min: 128.0,
        max: 128.0,
        whole: true,
        source: "S1, S2, S12",
        about: "SBUF partitions (the PE array height)",
    },
    KeyInfo {
        name: "sbuf_partition_bytes",
        unit: "B",
        min: 0.0,
        max: 0.0,
        whole: true,
        source: "S1 (trn1 192 KiB), S2 (trn2 224 KiB), S3 (trn3 32 MiB / 128)",
        about: "SBUF bytes per partition",
    },
    KeyInfo {
        name: "psum_banks",
        unit: "banks",
        min: 8.0,
        max: 8.0,
        whole: true,
        source: "S1, S6",
        about: "PSUM banks per partition",
    },
    KeyInfo {
        name: "psum_bank_bytes",
        unit: "B",
        min: 2048.0,
        max: 2048.0,
        whole: true,
        source: "S1 (2 KiB = 512 fp32)",
        about: "PSUM bytes per bank per partition",
    },
    KeyInfo {
        name: "dma_engines",
        unit: "engines",
        min: 16.0,
        max: 16.0,
        whole: true,
        source: "S1, S9 (16 per NeuronCore; ntile lowers to 16 queues)",
        about: "DMA engines per core",
    },
    KeyInfo {
        name: "dma_partitions_per_engine",
        unit: "partitions",
        min: 8.0,
        max: 8.0,
        whole: true,
        source: "S9 (each engine serves 8 of the 128 partitions)",
        about: "SBUF partitions one DMA engine serves",
    },
];

/// One line of a profile listing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Entry {
    /// The key's description.
    pub info: KeyInfo,
    /// Its value in this profile.
    pub value: f64,
    /// ISA geometry (cannot be overridden).
    pub fixed: bool,
}

impl HwProfile {
    /// The built-in profile of a target.
    pub fn builtin(target: Target) -> HwProfile {
        // Per-target clocks, engine rates and HBM bandwidth; the rest is common.
        let (pe, act, dve, pool, dma, hbm, dma_compute) = match target {
            Target::Trn1 => (2.8, 1.4, 1.12, 1.4, 17.0, 410.0, 0.5),
            Target::Trn2 => (2.4, 1.2, 0.96, 1.2, 23.0, 360.0, 0.5),
            Target::Trn3 => (2.4, 1.2, 1.2, 1.2, 33.0, 600.0, 1.0),
        };
        let hbm_shared = match target {
            Target::Trn1 => 820.0,
            Target::Trn2 => 725.0,
            Target::Trn3 => 1225.0,
        };
        let sparse_lanes = if target.info().sparse_matmul { 5.0 } else { 2.0 };
        HwProfile {
            target,
            pe_ghz: pe,
            act_ghz: act,
            dve_ghz: dve,
            pool_ghz: pool,
            mm_min_cycles: 64.0,
            mm_fp32_factor: 4.0,
            ls_speedup: 4.0,
            pe_sparse_input_lanes: sparse_lanes,
            compute_min_ii_cycles: 64.0,
            tensor_tensor_sbuf_factor: 2.0,
            dve_reciprocal_factor: 8.0,
            act_reduce_read_cycles: 64.0,
            tensor_reduce_bf16_factor: 0.5,
            memset_zero16_factor: 0.5,
            bn_aggr_cycles_per_triple: 13.0,
            pool_start_cycles: 150.0,
            pool_rsqrt_factor: 4.0,
            dma_engine_bytes_per_ns: dma,
            dma_descriptor_ns: SATURATING_RUN_BYTES / dma,
            dma_fixed_ns: 1300.0,
            dma_queue_depth: 4.0,
            dma_transpose_hbm_fraction: 0.9,
            dma_compute_fraction: dma_compute,
            hbm_bytes_per_ns: hbm,
            hbm_shared_bytes_per_ns: hbm_shared,
            hbm_burst_bytes: 64.0,
        }
    }

    /// Set a timing key, checking the unit (when given), the range and wholeness.
    pub fn set(&mut self, key: &str, value: f64, unit: Option<&str>) -> Result<(), ProfileError> {
        if let Some(g) = GEOMETRY.iter().find(|g| g.name == key) {
            return Err(ProfileError::Fixed(g.name));
        }
        let info = KEYS.iter().find(|k| k.name == key).ok_or_else(|| ProfileError::UnknownKey(key.to_string()))?;
        if let Some(given) = unit {
            if given != info.unit {
                return Err(ProfileError::WrongUnit { key: info.name, given: given.to_string(), expected: info.unit });
            }
        }
        if !value.is_finite() || value < info.min || value > info.max {
            return Err(ProfileError::OutOfRange {
                key: info.name,
                value,
                min: info.min,
                max: info.max,
                unit: info.unit,
            });
        }
        if info.whole && value.fract() != 0.0 {
            return Err(ProfileError::NotWhole { key: info.name, value });
        }
        match self.slot(key) {
            Some(slot) => *slot = value,
            None => return Err(ProfileError::UnknownKey(key.to_string())),
        }
        Ok(())
    }

    /// Every key with its value: the geometry first, then the timing keys.
    pub fn entries(&self) -> Vec<Entry> {
        let info = self.target.info();
        let geometry = |name: &str| -> f64 {
            match name {
                "sbuf_partitions" => f64::from(info.statebuf_num_partitions),
                "sbuf_partition_bytes" => f64::from(info.statebuf_par_size_in_bytes),
                "psum_banks" => f64::from(info.psum_num_banks),
                "psum_bank_bytes" => f64::from(info.psum_par_size_in_bytes),
                "dma_engines" => f64::from(NUM_DMA_QUEUES),
                _ => f64::from(NUM_PARTITIONS / NUM_DMA_QUEUES),
            }
        };
        let fixed = GEOMETRY.iter().map(|g| Entry { info: *g, value: geometry(g.name), fixed: true });
        let timing = KEYS.iter().map(|k| Entry { info: *k, value: self.get(k.name).unwrap_or(f64::NAN), fixed: false });
        fixed.chain(timing).collect()
    }

    /// DMA transfers one queue keeps in flight (at least one).
    pub fn queue_depth(&self) -> usize {
        self.dma_queue_depth.max(1.0) as usize
    }
}

/// The run per partition at which a DMA engine's descriptor rate and data rate balance: S11
/// says runs of at least 2 KiB approach peak bandwidth.
pub const SATURATING_RUN_BYTES: f64 = 2048.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_value_is_in_its_range() {
        for t in Target::ALL {
            let p = t.profile();
            for k in KEYS {
                let v = p.get(k.name).unwrap_or(f64::NAN);
                assert!(v >= k.min && v <= k.max, "{t} {} = {v}", k.name);
                assert_eq!(p.clone().set(k.name, v, Some(k.unit)), Ok(()));
            }
        }
    }

    #[test]
    fn the_descriptor_time_is_the_data_time_of_2_kib() {
        let p = Target::Trn2.profile();
        assert!((p.dma_descriptor_ns - 2048.0 / 23.0).abs() < 1e-9);
    }

    #[test]
    fn overrides_are_checked() {
        let mut p = Target::Trn2.profile();
        assert_eq!(p.set("dma_fixed_ns", 1000.0, Some("ns")), Ok(()));
        assert_eq!(p.dma_fixed_ns, 1000.0);
        assert_eq!(p.set("dma_fixd_ns", 1.0, None), Err(ProfileError::UnknownKey("dma_fixd_ns".into())));
        assert!(matches!(
            p.set("dma_fixed_ns", 1.0, Some("us")),
            Err(ProfileError::WrongUnit { key: "dma_fixed_ns", .. })
        ));
        assert!(matches!(p.set("pe_ghz", -1.0, None), Err(ProfileError::OutOfRange { key: "pe_ghz", .. })));
        assert!(matches!(p.set("pe_ghz", f64::NAN, None), Err(ProfileError::OutOfRange { .. })));
        assert_eq!(
            p.set("dma_queue_depth", 2.5, None),
            Err(ProfileError::NotWhole { key: "dma_queue_depth", value: 2.5 })
        );
        assert_eq!(p.set("sbuf_partition_bytes", 1.0, None), Err(ProfileError::Fixed("sbuf_partition_bytes")));
        assert_eq!(p.entries().len(), KEYS.len() + GEOMETRY.len());
    }
}
