//! DecLog configuration (declog.txt sections 4.2-4.4): logging threads m,
//! log queues per thread n, queue length l, batch alignment, and whether
//! logging threads or the committing thread drive the flushing pipeline.

use crate::error::DeclogError;
use crate::layout::MAX_THREADS;

/// The paper's defaults (section 5.1: 2 queues of length 300; we default to 2
/// logging threads because Strata's reference machine has 2 cores).
pub const DEFAULT_THREADS: usize = 2;
pub const DEFAULT_QUEUES_PER_THREAD: usize = 2;
pub const DEFAULT_QUEUE_LEN: usize = 300;
/// XPLine: the Optane media write unit (section 4.4.2).
pub const DEFAULT_ALIGN_BYTES: u64 = 256;
/// Largest queue length (entry counts are u32 on media; this keeps a batch's
/// bookkeeping small).
pub const MAX_QUEUE_LEN: usize = 65_535;
/// Most entries one transaction may log.
pub const MAX_TXN_ENTRIES: usize = 65_535;

/// Who runs the flushing pipeline.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FlushMode {
    /// One logging thread per stream (the paper's design): `commit` blocks
    /// until the logging threads have made the transaction durable.
    Threads,
    /// No logging threads: the pipeline steps run on the calling thread
    /// (`commit`, [`crate::DecLog::pump`], [`crate::DecLog::step`]). Exactly
    /// the same per-stream step code, in an order the caller controls, so a
    /// crash test is deterministic. For tests and the crash simulator.
    Inline,
}

/// DecLog's parameters. `threads`, `queues_per_thread`, `queue_len` and
/// `align_bytes` are stored in the superblock by `format` and read back by
/// `open`; `flush_mode` is chosen at every open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclogConfig {
    /// m: logging threads, each owning one PMem stream (1..=64).
    pub threads: usize,
    /// n: log queues per thread (at least 2, so an update entry's queue can
    /// wait for its tail while the next queue is flushed).
    pub queues_per_thread: usize,
    /// l: entries per log queue before it closes.
    pub queue_len: usize,
    /// Batch alignment: 256 (XPLine, the paper) or 8 (the no-alignment ablation).
    pub align_bytes: u64,
    pub flush_mode: FlushMode,
}

impl Default for DeclogConfig {
    fn default() -> Self {
        DeclogConfig {
            threads: DEFAULT_THREADS,
            queues_per_thread: DEFAULT_QUEUES_PER_THREAD,
            queue_len: DEFAULT_QUEUE_LEN,
            align_bytes: DEFAULT_ALIGN_BYTES,
            flush_mode: FlushMode::Threads,
        }
    }
}

impl DeclogConfig {
    pub fn validate(&self) -> Result<(), DeclogError> {
        let bad = |why: String| Err(DeclogError::InvalidConfig(why));
        if !(1..=MAX_THREADS).contains(&self.threads) {
            return bad(format!("threads = {} (expected 1..={MAX_THREADS})", self.threads));
        }
        if !(2..=64).contains(&self.queues_per_thread) {
            return bad(format!("queues_per_thread = {} (expected 2..=64)", self.queues_per_thread));
        }
        if !(1..=MAX_QUEUE_LEN).contains(&self.queue_len) {
            return bad(format!("queue_len = {} (expected 1..={MAX_QUEUE_LEN})", self.queue_len));
        }
        if self.align_bytes != 8 && self.align_bytes != 256 {
            return bad(format!("align_bytes = {} (expected 256, or 8 for no alignment)", self.align_bytes));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        assert!(DeclogConfig::default().validate().is_ok());
        for (cfg, word) in [
            (DeclogConfig { threads: 0, ..Default::default() }, "threads"),
            (DeclogConfig { queues_per_thread: 1, ..Default::default() }, "queues_per_thread"),
            (DeclogConfig { queue_len: 0, ..Default::default() }, "queue_len"),
            (DeclogConfig { align_bytes: 64, ..Default::default() }, "align_bytes"),
        ] {
            let err = cfg.validate().unwrap_err().to_string();
            assert!(err.contains(word), "{err}");
        }
    }
}
