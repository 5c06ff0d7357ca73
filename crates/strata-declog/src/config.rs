//! DecLog configuration (declog.txt sections 4.2-4.4): logging threads m,
//! log queues per thread n, queue length l, batch alignment, log compression
//! and the size of its key tables, the ordering strategy (relaxed, or strict
//! for the Fig. 12(a) ablation), and whether logging threads or the
//! committing thread drive the flushing pipeline.

use crate::compress::key_table::KEY_TABLE_MAX_SLOTS;
use crate::error::DeclogError;

/// Most logging threads (streams). The layout's head arrays have this many
/// words each, so it is part of the format (`layout` re-exports it).
pub const MAX_THREADS: usize = 64;

/// The paper's defaults are 2 queues of length 300 (section 5.1), for one
/// entry per operation. We default to 2 logging threads because Strata's
/// reference machine has 2 cores, and to queues of 2048 entries because the
/// series engine logs one entry per series and transaction (a per-key entry
/// holds all of a request's points of one series): a 5,000-line request of
/// 10 fields is about 1,000 entries, which 2048-entry queues persist in one
/// batch per stream, where 300-entry queues need two fences per stream.
/// The YCSB-TS bench sets the paper's 300 itself.
pub const DEFAULT_THREADS: usize = 2;
pub const DEFAULT_QUEUES_PER_THREAD: usize = 2;
pub const DEFAULT_QUEUE_LEN: usize = 2048;
/// XPLine: the Optane media write unit (section 4.4.2).
pub const DEFAULT_ALIGN_BYTES: u64 = 256;
/// Largest queue length (entry counts are u32 on media; this keeps a batch's
/// bookkeeping small).
pub const MAX_QUEUE_LEN: usize = 65_535;
/// Most entries one transaction may log (one per series key a request
/// writes: 70,000 one-field lines of new series, or 200 lines of 1,000
/// fields, are ordinary requests). The media field is a u32; the bytes a
/// transaction may take are bounded separately, by half a stream.
pub const MAX_TXN_ENTRIES: usize = 1 << 24;
/// Slots of each stream's key table (one per series key logged in that
/// stream; 256 bytes each, twice: the active table and its checkpoint copy).
pub const DEFAULT_KEY_SLOTS: u32 = 1024;

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

/// DecLog's parameters. Everything but `flush_mode` is stored in the
/// superblock by `format` and read back by `open`; `flush_mode` is chosen at
/// every open.
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
    /// Log compression (section 4.4.1). When on, every payload submitted must
    /// be a point payload ([`crate::compress::point_payload`]); DecLog
    /// compresses it against its stream's key table, and parsing returns the
    /// point payload again. When off, payloads are opaque and carried as given.
    pub compression: bool,
    /// Slots of each stream's key table (1..=2^24; used with compression):
    /// the most distinct series keys one stream can log.
    pub key_slots: u32,
    /// The strict ordering strategy (section 3.1, the baseline of Fig. 12(a))
    /// instead of relaxed ordering: every entry closes its log queue and is
    /// written without its tail, which is stored (and fenced) only after the
    /// body is persisted, and a stream writes nothing else until that tail is
    /// persisted: two fences per entry. Parsing does not depend on it.
    pub strict_ordering: bool,
}

impl Default for DeclogConfig {
    fn default() -> Self {
        DeclogConfig {
            threads: DEFAULT_THREADS,
            queues_per_thread: DEFAULT_QUEUES_PER_THREAD,
            queue_len: DEFAULT_QUEUE_LEN,
            align_bytes: DEFAULT_ALIGN_BYTES,
            flush_mode: FlushMode::Threads,
            compression: true,
            key_slots: DEFAULT_KEY_SLOTS,
            strict_ordering: false,
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
        if !(1..=KEY_TABLE_MAX_SLOTS).contains(&self.key_slots) {
            return bad(format!("key_slots = {} (expected 1..={KEY_TABLE_MAX_SLOTS})", self.key_slots));
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
            (DeclogConfig { key_slots: 0, ..Default::default() }, "key_slots"),
        ] {
            let err = cfg.validate().unwrap_err().to_string();
            assert!(err.contains(word), "{err}");
        }
    }
}
