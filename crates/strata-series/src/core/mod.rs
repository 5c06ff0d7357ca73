//! [`SeriesCore`]: everything a series engine holds besides its commit
//! protocol (declog.txt sections 2.1 and 5.1, the Beringei-style engine that
//! every protocol of `crate::protocol` runs on), as parts with narrow
//! interfaces:
//! - the series index (`RwLock<SeriesIndex>`, [`SeriesCore::index`]);
//! - [`data::DataPart`]: the series' points in memory and the apply gate;
//! - [`blocks::BlockStore`]: block files and checkpoint bookkeeping;
//! - [`health::Health`]: whether a log failure stopped writes;
//! - the counters.
//!
//! What combines parts lives in its own file: `plan` (type-check a request
//! and give new series ids), `apply` (a WAL record to index and data),
//! `read` (one consistent snapshot of some series), `read_last` (their
//! newest points, from the last-point cache), `window` (aggregates
//! per window, from block summaries where they answer), `checkpoint` (seal,
//! manifest), `cut` (sorted points into summarized blocks), `compact` (merge block files at a checkpoint) and `load` (the checkpointed state at open). A commit protocol
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

use parking_lot::RwLock;

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
}

pub struct SeriesCore {
    opts: EngineOptions,
    index: RwLock<SeriesIndex>,
    data: DataPart,
    blocks: BlockStore,
    health: Health,
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
