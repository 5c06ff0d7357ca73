//! DecLog (declog.txt, PVLDB 17), the logging part of sections 4.2-4.5 and
//! the parsing half of 4.6: decentralized logging of time-series transactions
//! into persistent memory.
//!
//! Owns:
//! - [`entry`]: one log entry per operation (txn id, data-driven LSN, the
//!   transaction's entry count and this entry's index, key hash, compression
//!   bit, payload, CRC32C, commit tail);
//! - [`batch`]: a flushed log queue, merged and padded to 256 bytes (4.4.2);
//! - [`layout`]: the PMem area: superblock, epoch, heads (checkpoint offsets),
//!   the cut record, m streams, each a ring of batches, and with compression
//!   a key table and its checkpoint copy per stream;
//! - `queues`: n log queues of length l per logging thread; an update entry
//!   closes its queue (relaxed ordering, 4.2);
//! - `pipeline`: the flushing pipeline (4.2) with group commit (4.4.2), and
//!   the strict ordering strategy for the Fig. 12(a) ablation
//!   ([`DeclogConfig::strict_ordering`]);
//! - [`snapshot`]: the N/S thread-snapshot arrays (4.3.2);
//! - [`recovery`]: log parsing (4.6), decompressing each stream in order;
//! - [`DecLog`]: key-partitioned routing to m logging threads (4.3.1), commit
//!   and acknowledgement, compression of each entry as it is queued, and
//!   DecLog's half of the non-blocking checkpoint (4.5): [`DecLog::cut`]
//!   (durable, cut record, key table copy, state clear) and
//!   [`DecLog::truncate_to`] (with commits running) or
//!   [`DecLog::truncate_all`];
//! - the crash test of all of the above is `strata_crashtest::declog_stream`
//!   (its planted bugs, [`crashtest_hooks`], only for tests and the
//!   `crashtest` feature);
//! - [`fuzz`] (under the `fuzz` feature): the fuzz entry for opening an area
//!   from arbitrary bytes;
//! - [`compress`]: log compression (4.4.1): the key hash table in PMem with
//!   its DRAM mirror, delta-of-delta timestamps and XOR values per key, the
//!   point payloads the engine submits and parsing returns, and how DecLog
//!   wires them in (on by default: [`DeclogConfig::compression`]).
//!
//! Not here: the data-driven LSN protocol (4.1, in `strata-series`), the
//! engine's half of the checkpoint (flushing data, the time period, t_LSN,
//! resetting extended timestamps) and replay (the engine's).
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
//! - one key table per stream, not per DecLog: a key's compression order is
//!   its stream's order whatever the key hashes; keys are registered (slot
//!   persisted) when their transaction is submitted, so a full table fails
//!   the submit before anything is queued;
//! - the checkpoint copy of the key table is not needed to parse: after a
//!   clear (cut, `truncate_all`, or a writer's open) each key's next entry is
//!   self-describing (a reset bit), so parsing from any head, across cuts and
//!   restarts, needs only the active table's ids ([`compress::codec`]); with
//!   compression a head therefore moves only to a cut position;
//! - strict ordering defers every entry's tail (an insert entry's is flagged
//!   on media so parsing tells it from a torn one) and writes one entry at a
//!   time: two fences per entry;
//! - a full stream poisons the log: every pending and later commit fails until
//!   it is reopened (the engine checkpoints before that);
//! - [`FlushMode::Inline`] runs the same pipeline steps on the caller's thread
//!   for deterministic crash tests.
//!
//! Format: `docs/format/declog-stream.md`.

#![forbid(unsafe_code)]

pub mod batch;
pub mod compress;
mod config;
#[cfg(any(test, feature = "crashtest"))]
pub mod crashtest_hooks;
mod declog;
#[cfg(test)]
mod declog_tests;
pub mod entry;
mod error;
#[cfg(test)]
mod flush_hold_tests;
#[cfg(test)]
mod format_doc_tests;
#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz;
pub mod layout;
mod pipeline;
mod queues;
pub mod recovery;
pub mod snapshot;
mod sync;
mod ticket;

pub use config::{
    DeclogConfig, FlushMode, DEFAULT_ALIGN_BYTES, DEFAULT_KEY_SLOTS, DEFAULT_QUEUES_PER_THREAD,
    DEFAULT_QUEUE_LEN, DEFAULT_THREADS, MAX_QUEUE_LEN, MAX_TXN_ENTRIES,
};
pub use declog::{DecLog, FlushHold};
pub use entry::{EntryIn, EntryOwned, PayloadForm};
pub use error::{DeclogError, DecodeError};
pub use layout::CutPoint;
pub use pipeline::{DeclogStats, StepOutcome};
pub use recovery::{parse, Recovered, RecoveredEntry, StreamParse};
pub use strata_media::TxnId;
pub use ticket::{Ticket, TicketStatus};
