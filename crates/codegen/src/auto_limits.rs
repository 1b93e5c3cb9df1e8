//! Constraints a user puts on `auto`'s search: a fixed schedule, loop order or block sizes.

use crate::gemm::{BlockSizes, GemmConfig, LoopOrder, Schedule};

/// What `auto` may not choose freely: each `Some` is fixed in every candidate it weighs.
///
/// A fixed order or block size only means something for the blocked schedules, so any
/// constraint leaves out `naive` and `hoisted`; a fixed K block leaves out `blocked-mn` too
/// (it does not block K). A fixed schedule searches only that schedule's blocks, orders and
/// transpose methods (what an explicit `--schedule blocked-mn` without block flags plans).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AutoLimits {
    /// The one schedule weighed (a blocked one: the others have no blocks to search).
    pub schedule: Option<Schedule>,
    /// The outer block loop.
    pub order: Option<LoopOrder>,
    /// Rows of C per block, in elements.
    pub block_m: Option<u64>,
    /// Columns of C per block, in elements.
    pub block_n: Option<u64>,
    /// Contraction rows per block, in elements.
    pub block_k: Option<u64>,
}

impl AutoLimits {
    /// Whether nothing is fixed.
    pub fn is_free(&self) -> bool {
        *self == AutoLimits::default()
    }

    /// Whether `auto` may weigh a schedule at all.
    pub fn allows(&self, schedule: Schedule) -> bool {
        if self.schedule.is_some_and(|s| s != schedule) {
            return false;
        }
        match schedule {
            Schedule::Naive | Schedule::Hoisted => self.is_free(),
            Schedule::BlockedMn => self.block_k.is_none(),
            Schedule::BlockedMnk | Schedule::Auto => true,
        }
    }

    /// A candidate with the fixed order and block sizes put in, or `None` when its schedule
    /// is not allowed.
    pub fn apply(&self, cand: &GemmConfig) -> Option<GemmConfig> {
        if !self.allows(cand.schedule) {
            return None;
        }
        let blocks = BlockSizes {
            m: self.block_m.unwrap_or(cand.blocks.m),
            n: self.block_n.unwrap_or(cand.blocks.n),
            k: self.block_k.unwrap_or(cand.blocks.k),
        };
        Some(GemmConfig { blocks, order: self.order.unwrap_or(cand.order), ..cand.clone() })
    }

    /// Apply to every candidate, keeping the first of any that become equal.
    pub fn apply_all(&self, cands: &[GemmConfig]) -> Vec<GemmConfig> {
        let mut out: Vec<GemmConfig> = Vec::with_capacity(cands.len());
        for c in cands.iter().filter_map(|c| self.apply(c)) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use penguin::{DType, Target};

    use super::*;
    use crate::schedule::auto_candidates;

    fn cfg() -> GemmConfig {
        GemmConfig {
            m: 1024,
            k: 4096,
            n: 2048,
            lhs_dtype: DType::Bf16,
            rhs_dtype: DType::Bf16,
            out_dtype: DType::Fp32,
            input_dtype: DType::Fp32,
            target: Target::Trn2,
            schedule: Schedule::Auto,
            lhs_transposed: true,
            perf_mode: penguin::PerfMode::None,
            sparsity: None,
            blocks: BlockSizes::default(),
            order: LoopOrder::MOuter,
            pe_transpose: None,
        }
    }

    #[test]
    fn no_limits_keep_every_candidate() {
        let all = auto_candidates(&cfg());
        assert_eq!(AutoLimits::default().apply_all(&all), all);
    }

    #[test]
    fn a_fixed_order_and_m_block_hold_in_every_candidate() {
        let limits = AutoLimits { order: Some(LoopOrder::NOuter), block_m: Some(256), ..AutoLimits::default() };
        let cands = limits.apply_all(&auto_candidates(&cfg()));
        assert!(!cands.is_empty());
        for c in &cands {
            assert_eq!((c.order, c.blocks.m), (LoopOrder::NOuter, 256), "{c:?}");
            assert!(matches!(c.schedule, Schedule::BlockedMn | Schedule::BlockedMnk), "{c:?}");
        }
        // Both blocked schedules and several N blocks remain to choose from.
        assert!(cands.iter().any(|c| c.schedule == Schedule::BlockedMn));
        assert!(cands.iter().any(|c| c.blocks.n != cands[0].blocks.n));
    }

    #[test]
    fn a_fixed_k_block_leaves_only_blocked_mnk() {
        let limits = AutoLimits { block_k: Some(512), ..AutoLimits::default() };
        let cands = limits.apply_all(&auto_candidates(&cfg()));
        assert!(!cands.is_empty());
        assert!(cands.iter().all(|c| c.schedule == Schedule::BlockedMnk && c.blocks.k == 512));
    }

    #[test]
    fn a_fixed_schedule_searches_only_its_blocks_and_orders() {
        let limits = AutoLimits { schedule: Some(Schedule::BlockedMn), ..AutoLimits::default() };
        let cands = limits.apply_all(&auto_candidates(&cfg()));
        assert!(cands.iter().all(|c| c.schedule == Schedule::BlockedMn), "{cands:?}");
        // M blocks of 1, 2, 4 and 8 tiles x N blocks of 1, 2 and 4 x 2 orders (A is given
        // transposed, so there is no transpose method to choose).
        assert_eq!(cands.len(), 24);
        assert!(!limits.allows(Schedule::BlockedMnk) && !limits.allows(Schedule::Naive));
    }
}
