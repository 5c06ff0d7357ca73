//! [`SeriesCore`]: everything a series engine holds besides its commit
//! protocol (declog.txt sections 2.1 and 5.1, the Beringei-style engine that
//! every protocol of `crate::protocol` runs on), as parts with narrow
//! interfaces:
//! - the series index (`RwLock<SeriesIndex>`, [`SeriesCore::index`]);
//! - [`data::DataPart`]: the series' points in memory and the apply gate;
//! - [`blocks::BlockStore`]: block files and checkpoint bookkeeping;
//! - [`health::Health`]: whether a log failure stopped writes;
//! - the checkpoint-running lock: one checkpoint or compaction at a time
//!   ([`SeriesCore::checkpoint_running`]);
//! - the counters.
//!
//! What combines parts lives in its own file: `plan` (type-check a request
//! and give new series ids), `apply` (a WAL record to index and data),
//! `read` (one consistent snapshot of some series), `read_last` (their
//! newest points, from the last-point cache), `window` (aggregates
//! per window, from block summaries where they answer), `checkpoint` (seal,
//! manifest), `cut` (sorted points into summarized blocks), `compact` (merge block files after a checkpoint, with a manifest of its own) and `load` (the checkpointed state at open). A commit protocol
//! (`crate::protocol::SeriesProtocol`) drives these; no part reaches into
//! another's fields.

pub mod apply;
pub mod blocks;
pub mod checkpoint;
pub mod compact;
pub mod cut;
pub mod data;
pub mod health;
pub mod load;
pub mod plan;
pub mod read;
pub mod read_last;
pub mod window;

use std::sync::atomic::AtomicU64;

use parking_lot::{Mutex, RwLock};

use crate::index::SeriesIndex;
use crate::options::EngineOptions;
use blocks::BlockStore;
use data::DataPart;
use health::Health;

/// Counters for `/metrics` and benchmarks.
#[derive(Default)]
pub struct EngineCounters {
    pub txns_committed: AtomicU64,
    pub points_written: AtomicU64,
    pub values_written: AtomicU64,
    pub log_bytes_written: AtomicU64,
    pub checkpoints: AtomicU64,
    pub checkpoint_seconds_total_us: AtomicU64,
    /// Compactions that merged files (`compact`), and the input files and
    /// bytes they merged.
    pub compactions: AtomicU64,
    pub compacted_files: AtomicU64,
    pub compacted_input_bytes: AtomicU64,
}

pub struct SeriesCore {
    opts: EngineOptions,
    index: RwLock<SeriesIndex>,
    data: DataPart,
    blocks: BlockStore,
    health: Health,
    checkpoint_running: Mutex<()>,
    counters: EngineCounters,
}

impl SeriesCore {
    pub(crate) fn new(opts: EngineOptions, index: SeriesIndex) -> SeriesCore {
        SeriesCore {
            opts,
            index: RwLock::new(index),
            data: DataPart::default(),
            blocks: BlockStore::default(),
            health: Health::default(),
            checkpoint_running: Mutex::new(()),
            counters: EngineCounters::default(),
        }
    }

    pub fn options(&self) -> &EngineOptions {
        &self.opts
    }

    /// The series index. Lock order: index before the apply gate.
    pub fn index(&self) -> &RwLock<SeriesIndex> {
        &self.index
    }

    pub fn data(&self) -> &DataPart {
        &self.data
    }

    pub fn blocks(&self) -> &BlockStore {
        &self.blocks
    }

    pub fn health(&self) -> &Health {
        &self.health
    }

    /// Held by every checkpoint (both protocols' procedures) and every
    /// compaction (`compact`) for its whole run: both write the manifest
    /// and change the set of block files, so one runs at a time. Lock
    /// order: the serial order mutex, then this; this, then DecLog's cut lock.
    pub fn checkpoint_running(&self) -> &Mutex<()> {
        &self.checkpoint_running
    }

    pub fn counters(&self) -> &EngineCounters {
        &self.counters
    }

    /// Counts one committed transaction.
    pub fn count_commit(&self, points: usize, values: usize, log_bytes: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let c = &self.counters;
        c.txns_committed.fetch_add(1, Relaxed);
        c.points_written.fetch_add(points as u64, Relaxed);
        c.values_written.fetch_add(values as u64, Relaxed);
        c.log_bytes_written.fetch_add(log_bytes, Relaxed);
    }
}
