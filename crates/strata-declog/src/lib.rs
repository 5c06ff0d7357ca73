//! DecLog (declog.txt, PVLDB 17), the logging part of sections 4.2-4.4 and
//! the parsing half of 4.6: decentralized logging of time-series transactions
//! into persistent memory.
//!
//! Owns:
//! - [`entry`]: one log entry per operation (txn id, data-driven LSN, the
//!   transaction's entry count and this entry's index, key hash, compression
//!   bit, payload, CRC32C, commit tail);
//! - [`batch`]: a flushed log queue, merged and padded to 256 bytes (4.4.2);
//! - [`layout`]: the PMem area: superblock, epoch, heads (checkpoint offsets),
//!   and m streams, each a ring of batches;
//! - `queues`: n log queues of length l per logging thread; an update entry
//!   closes its queue (relaxed ordering, 4.2);
//! - `pipeline`: the flushing pipeline (4.2) with group commit (4.4.2);
//! - [`snapshot`]: the N/S thread-snapshot arrays (4.3.2);
//! - [`recovery`]: log parsing (4.6);
//! - [`DecLog`]: key-partitioned routing to m logging threads (4.3.1), commit
//!   and acknowledgement, truncation after a checkpoint;
//! - [`crash_protocol`]: the crash test of all of the above;
//! - [`fuzz`]: the fuzz entry for opening an area from arbitrary bytes;
//! - [`compress`]: log compression (4.4.1): the key hash table in PMem with
//!   its DRAM mirror, delta-of-delta timestamps and XOR values per key.
//!
//! Not here: the data-driven LSN protocol (4.1, in `strata-series`) and
//! replay (the engine's); wiring the compressor into the pipeline; the
//! non-blocking checkpoint (4.5).
//!
//! Where the paper is silent we chose (each detailed in its module):
//! - every entry of a transaction carries the transaction's LSN, its entry
//!   count and its index, so parsing can tell a complete transaction;
//! - the thread snapshot is taken when an update entry is queued, not when it
//!   is persisted: same waits for real dependencies, and no deadlock
//!   ([`snapshot`]);
//! - the engine queues an update transaction before releasing its locks, and
//!   makes inserted data visible only once acknowledged ([`DecLog`]);
//! - the end of a stream is the first position without a valid batch header
//!   stamped with that position and a non-decreasing writer epoch, instead of
//!   l zero blocks ([`recovery`]); a torn last batch is sealed at open;
//! - all heads move at once on truncation (two head arrays and a select word);
//! - a full stream poisons the log: every pending and later commit fails until
//!   it is reopened (the engine checkpoints before that);
//! - [`FlushMode::Inline`] runs the same pipeline steps on the caller's thread
//!   for deterministic crash tests.
//!
//! Format: `docs/format/declog-stream.md`.

pub mod batch;
pub mod compress;
mod config;
pub mod crash_protocol;
mod declog;
#[cfg(test)]
mod declog_tests;
pub mod entry;
mod error;
#[cfg(test)]
mod format_doc_tests;
pub mod fuzz;
pub mod layout;
mod pipeline;
mod queues;
pub mod recovery;
pub mod snapshot;
mod ticket;

pub use config::{
    DeclogConfig, FlushMode, DEFAULT_ALIGN_BYTES, DEFAULT_QUEUES_PER_THREAD, DEFAULT_QUEUE_LEN,
    DEFAULT_THREADS, MAX_QUEUE_LEN, MAX_TXN_ENTRIES,
};
pub use declog::DecLog;
pub use entry::EntryIn;
pub use error::DeclogError;
pub use pipeline::{DeclogStats, StepOutcome};
pub use recovery::{parse, Recovered, RecoveredEntry, StreamParse};
pub use strata_media::TxnId;
pub use ticket::{Ticket, TicketStatus};
