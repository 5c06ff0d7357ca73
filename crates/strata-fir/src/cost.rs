//! The checkpoint time cost model (fir.txt 4.3.3): before each checkpoint
//! of kind `Auto`, estimate a full checkpoint's time (Eq. 1) and an
//! incremental one's (Eq. 3) from the write skew `α`, and take the cheaper.
//!
//! `α` is measured on a 1 % sample of each table's keys (a key is sampled
//! when its hash falls in 1 % of the range): the updates each sampled key
//! received since the last checkpoint. The paper's Eq. 2 as printed,
//! `α = 1 − Σ(uᵢ/C)²` (the Gini–Simpson index), is near 1 for uniform
//! updates and near 0 for skewed ones; in Eq. 3, where `(1 − α)` is the
//! share of the index an incremental checkpoint must visit, that would
//! choose incremental checkpoints for uniform workloads, the opposite of
//! the text and of Fig. 6. The text names the Gini coefficient, which is
//! 0 for uniform and near 1 for skewed updates: that is what is computed
//! here, and with it Eq. 4 picks incremental checkpoints above a skew
//! (the crossover), full ones below.
//!
//! Eq. 1's node count `0.7·(M^(h+1) − 1)` estimates the nodes of a tree of
//! fan-out M and height h; the index counts its nodes, so the count is
//! used as is.

/// Keys of which one in this many is sampled.
pub const SAMPLE_ONE_IN: u64 = 100;

/// Whether a key is in the sample.
pub fn sampled(table: u32, key: u64) -> bool {
    (key ^ u64::from(table) << 40).wrapping_mul(0xD6E8_FEB8_6659_FD93) >> 32
        < (u64::from(u32::MAX) + 1) / SAMPLE_ONE_IN
}

/// The Gini coefficient of the sampled keys' update counts (0: every key
/// updated as often; near 1: a few keys take every update). No update, or
/// fewer than two keys: 0.
pub fn gini(counts: &mut [u64]) -> f64 {
    let n = counts.len() as f64;
    let total: u64 = counts.iter().sum();
    if counts.len() < 2 || total == 0 {
        return 0.0;
    }
    counts.sort_unstable();
    let weighted: f64 = counts.iter().enumerate().map(|(i, c)| (i as f64 + 1.0) * *c as f64).sum();
    (2.0 * weighted / (n * total as f64) - (n + 1.0) / n).clamp(0.0, 1.0)
}

/// The model's unit costs, in nanoseconds.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CheckpointCosts {
    /// `f`: visiting one index node.
    pub node_ns: f64,
    /// `d`: one 64-byte DRAM write.
    pub dram_write_ns: f64,
    /// `p`: one 256-byte NVM write.
    pub nvm_write_ns: f64,
    /// `q`: one 256-byte NVM read.
    pub nvm_read_ns: f64,
    /// `k`: merging one entry with the previous checkpoint.
    pub merge_ns: f64,
    /// `s`: bytes of an entry.
    pub entry_bytes: f64,
}

impl Default for CheckpointCosts {
    /// Orders of magnitude on this project's machines (a DRAM index node
    /// visit mostly misses the cache; emulated PMem writes at DRAM speed
    /// plus flushes; Optane's 256-byte writes cost about 3x its reads).
    fn default() -> Self {
        CheckpointCosts {
            node_ns: 100.0,
            dram_write_ns: 5.0,
            nvm_write_ns: 90.0,
            nvm_read_ns: 30.0,
            merge_ns: 5.0,
            entry_bytes: 32.0,
        }
    }
}

/// The model's estimate and choice.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CostEstimate {
    pub alpha: f64,
    /// Eq. 1.
    pub full_ns: f64,
    /// Eq. 3.
    pub incremental_ns: f64,
    /// Eq. 4: whether the incremental checkpoint is cheaper.
    pub incremental: bool,
}

/// Eq. 1, 3 and 4 for an index of `nodes` nodes and `entries` entries.
pub fn estimate(alpha: f64, nodes: u64, entries: u64, c: &CheckpointCosts) -> CostEstimate {
    let (nodes, n) = (nodes as f64, entries as f64);
    let traverse = c.node_ns * nodes;
    let full_ns = traverse + n * c.entry_bytes * (c.dram_write_ns / 64.0 + c.nvm_write_ns / 256.0);
    let incremental_ns = (1.0 - alpha)
        * (traverse
            + n * c.entry_bytes * (c.dram_write_ns / 64.0 + (2.0 * c.nvm_write_ns + c.nvm_read_ns) / 256.0))
        + 2.0 * (1.0 - alpha) * n * c.merge_ns;
    CostEstimate { alpha, full_ns, incremental_ns, incremental: incremental_ns < full_ns }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gini_is_zero_for_uniform_updates_and_near_one_for_skewed_ones() {
        assert_eq!(gini(&mut [5; 100]), 0.0);
        let mut skewed = vec![0u64; 100];
        skewed[7] = 1000;
        assert!(gini(&mut skewed) > 0.98, "{}", gini(&mut skewed.clone()));
        assert_eq!(gini(&mut []), 0.0);
        assert_eq!(gini(&mut [0, 0, 0]), 0.0, "no updates");
        let half: f64 = gini(&mut (0..100).map(|i| u64::from(i % 2 == 0)).collect::<Vec<_>>());
        assert!((half - 0.5).abs() < 0.02, "half the keys updated once: {half}");
    }

    #[test]
    fn the_model_picks_full_checkpoints_for_uniform_writes_and_incremental_for_skewed() {
        let c = CheckpointCosts::default();
        let (nodes, entries) = (1_600, 100_000);
        let uniform = estimate(0.0, nodes, entries, &c);
        assert!(!uniform.incremental && uniform.incremental_ns > uniform.full_ns, "{uniform:?}");
        let skewed = estimate(0.95, nodes, entries, &c);
        assert!(skewed.incremental && skewed.incremental_ns < skewed.full_ns, "{skewed:?}");
        // The crossover lies strictly between, and the choice flips once.
        let choices: Vec<bool> =
            (0..=100).map(|a| estimate(a as f64 / 100.0, nodes, entries, &c).incremental).collect();
        let flip = choices.iter().position(|i| *i).expect("a crossover");
        assert!(flip > 0 && flip < 100, "crossover at α = {}", flip as f64 / 100.0);
        assert!(choices[flip..].iter().all(|i| *i), "one crossover");
    }

    #[test]
    fn about_one_key_in_a_hundred_is_sampled() {
        let n = (0..100_000u64).filter(|k| sampled(0, *k)).count();
        assert!((800..1200).contains(&n), "{n} of 100,000");
        assert_ne!(
            (0..1000u64).filter(|k| sampled(1, *k)).collect::<Vec<_>>(),
            (0..1000u64).filter(|k| sampled(2, *k)).collect::<Vec<_>>()
        );
    }
}
