//! The TAB+-tree (chronicledb-pmem.txt sections 2.2 and 4.1): a B+-tree over
//! application time with aggregates per index entry and doubly linked nodes
//! on every level, loaded continuously on its right flank, with every
//! placement of Fig. 4 switchable ([`TreeConfig`]). Flank format and
//! write-out protocol: `docs/format/events-flank.md`.
//!
//! Reading order:
//! - [`config`]: placements, capacities, the PMem plan.
//! - [`storage`]: completed nodes by id (block store + translation, PMem
//!   index array), a bounded read cache, I/O counters.
//! - `aggregate_store`: child aggregates inline or in the PMem array.
//! - `flank`, [`flank_pmem`]: the right flank in DRAM, mirrored on PMem.
//! - `insert`: appends, batch flushing, the write-out of full nodes.
//! - `ooo_merge`, `ooo_steps`, `ooo_path`, [`merge_record`]: out-of-order
//!   events (section 4.3) and the crash-safe, redoable merge.
//! - `open`, `recovery_pmem`, `recovery_dram`: create and recover.
//! - `query`: time travel, replay, temporal aggregation, filter, point.
//! - `verify`: the invariant check used by tests and tools.
//! - [`fuzz`] (under the `fuzz` feature): recovery from arbitrary flank
//!   images (the `events_flank_open` target). The PMem flank's crash protocol
//!   is `strata_crashtest::events_flank`; its planted bugs ([`PlantedBug`],
//!   [`MergeBug`]) are compiled only for tests and the `crashtest` feature.
//!
//! Events arrive in timestamp order (equal timestamps allowed). An event
//! older than the newest one gets [`AppendOutcome::Late`]; section 4.3's
//! three steps: `ooo_merge` inserts it into the DRAM flank leaf if it falls
//! into its range ([`TabTree::insert_late_in_flank`]), else the caller
//! queues it (`crate::stream`), and a full queue is merged into the leaves'
//! spare room ([`TabTree::merge_ooo`]).

pub mod config;
pub mod flank_pmem;
#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz;
pub mod merge_record;
pub mod storage;

mod aggregate_store;
mod flank;
mod id_alloc;
mod insert;
mod node_cache;
mod ooo_merge;
mod ooo_pass;
mod ooo_path;
mod ooo_steps;
mod open;
#[cfg(any(test, feature = "crashtest"))]
mod planted;
mod query;
mod recovery;
mod recovery_dram;
mod recovery_pmem;
mod verify;

#[cfg(test)]
mod format_doc_tests;
#[cfg(test)]
mod merge_redo_tests;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod ooo_merge_tests;
#[cfg(test)]
mod recovery_tests;
#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod write_out_tests;

use std::path::PathBuf;
use std::sync::Arc;

use strata_media::FileSystem;
use strata_pmem::Region;

use crate::aggregate::Aggregates;
use crate::node::{IndexLayout, LeafLayout};
use crate::translation::TranslationStats;

pub use aggregate_store::AggregateStoreStats;
pub use config::{AggregatePlacement, FlankPlacement, IndexPlacement, PmemPlan, TreeConfig};
pub use flank_pmem::FlankPmemStats;
pub use ooo_merge::{OooMergeReport, PendingOooMerge};
pub use query::{MergeByTs, QueryStats, RangeIter};
pub use recovery::TreeRecoveryReport;
pub use storage::{NodeStorage, StorageStats, SyncObserver, TreeStorage};
pub use verify::TreeCheck;

#[cfg(any(test, feature = "crashtest"))]
pub use ooo_steps::{MergeBug, MERGE_BUG};
#[cfg(any(test, feature = "crashtest"))]
pub use planted::{PlantedBug, PLANTED_BUG};

/// Whether the stream must truncate its queue before merging (a planted bug).
#[cfg(any(test, feature = "crashtest"))]
pub(crate) fn merge_bug_truncate_first() -> bool {
    ooo_steps::merge_bug(MergeBug::TruncateFirst)
}

use aggregate_store::AggregateStore;
use flank::Flank;
use id_alloc::IdAllocator;

/// Name of the block file in the tree's directory.
pub const BLOCK_FILE_NAME: &str = "events.blocks";

/// Where a tree keeps its data: a directory on a file system (the block
/// file) and, for PMem placements, a region with the tree's areas from
/// `pmem_base` on ([`TreeConfig::pmem_plan`]).
pub struct TreeMedia<'a> {
    pub fs: &'a dyn FileSystem,
    pub dir: PathBuf,
    pub region: Option<Arc<Region>>,
    pub pmem_base: u64,
}

/// What [`TabTree::append`] did with an event.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AppendOutcome {
    /// Appended as the `seq`-th event (from 0); events `< durable_through`
    /// survive a crash.
    Appended { seq: u64, durable_through: u64 },
    /// Older than the newest event of the tree: not inserted. Route it to
    /// the out-of-order queue.
    Late { ts: i64, newest_ts: i64 },
}

/// What a tree did since it was created or recovered.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeStats {
    pub events_appended: u64,
    pub late_events: u64,
    /// Late events inserted in order into the DRAM flank leaf (section 4.3, spare room).
    pub late_in_flank: u64,
    /// Out-of-order merges and the events they brought into the tree.
    pub ooo_merges: u64,
    pub ooo_events_merged: u64,
    /// Completed leaves rewritten by merges, and events moved to a right
    /// neighbour because a leaf was at capacity.
    pub leaves_rewritten: u64,
    /// Rewrites of a leaf the same merge had rewritten already (0 with the
    /// one-pass merge; a redo after a crash may rewrite a leaf again).
    pub leaves_rewritten_twice: u64,
    pub events_carried: u64,
    pub leaves_written: u64,
    pub index_nodes_written: u64,
    /// Root growths (the tree got one level taller).
    pub levels_added: u64,
    pub storage: StorageStats,
    pub aggregates: AggregateStoreStats,
    /// Zeros with a DRAM flank.
    pub flank_pmem: FlankPmemStats,
    pub translation: TranslationStats,
}

/// A TAB+-tree over one event stream. Create with [`TabTree::create`],
/// recover with [`TabTree::recover`].
pub struct TabTree {
    config: TreeConfig,
    leaf_layout: LeafLayout,
    index_layout: IndexLayout,
    storage: TreeStorage,
    aggs: AggregateStore,
    flank: Flank,
    /// `running[l]`: the merged aggregates of the entries of flank node `l`
    /// (`l >= 1`; `running[0]` stays empty: leaves aggregate at write-out).
    running: Vec<Aggregates>,
    ids: IdAllocator,
    /// Events in the tree.
    events: u64,
    /// The newest timestamp appended (`i64::MIN` before the first).
    newest_ts: i64,
    stats: TreeStats,
    /// The out-of-order queue generation the tree holds (merge protocol).
    merged_ooo_generation: u64,
    /// A merge a crash interrupted, to be resumed with the queue's events.
    pending_merge: Option<ooo_merge::MergeResume>,
    /// The leaves the merge in progress rewrote (one-pass: each at most once).
    merge_rewritten: std::collections::HashSet<crate::ids::NodeId>,
}

impl TabTree {
    pub fn config(&self) -> &TreeConfig {
        &self.config
    }

    pub fn leaf_layout(&self) -> &LeafLayout {
        &self.leaf_layout
    }

    pub fn index_layout(&self) -> &IndexLayout {
        &self.index_layout
    }

    /// Events in the tree (flank included).
    pub fn len(&self) -> u64 {
        self.events
    }

    pub fn is_empty(&self) -> bool {
        self.events == 0
    }

    /// Levels, the flank leaf's level included (1 = only a leaf).
    pub fn height(&self) -> usize {
        self.flank.height()
    }

    /// The newest timestamp in the tree (`i64::MIN` if none).
    pub fn newest_ts(&self) -> i64 {
        self.newest_ts
    }

    /// Events `0..durable_through()` survive a crash: with a DRAM flank the
    /// events of written-out leaves; on PMem also the flank leaf's persisted
    /// batches.
    pub fn durable_through(&self) -> u64 {
        self.events - self.flank.unpersisted(0) as u64
    }

    /// Events in the flank leaf.
    pub fn flank_leaf_events(&self) -> usize {
        self.flank.count(0)
    }

    /// The node ids of the flank, level 0 first.
    pub fn flank_ids(&self) -> Vec<crate::NodeId> {
        (0..self.flank.height()).map(|l| self.flank.id(l)).collect()
    }

    /// The node storage (block store, translation, PMem index array).
    pub fn storage(&self) -> &TreeStorage {
        &self.storage
    }

    pub fn stats(&self) -> TreeStats {
        TreeStats {
            storage: storage::NodeStorage::stats(&self.storage),
            aggregates: self.aggs.stats(),
            flank_pmem: self.flank.pmem().map(|p| p.stats()).unwrap_or_default(),
            translation: self.storage.ssd().translation_stats(),
            ..self.stats
        }
    }

    /// Called after every block-store sync, before the translation persists
    /// what relies on it (crash tests take file-system snapshots there).
    pub fn set_ssd_sync_observer(&mut self, observer: Option<SyncObserver>) {
        self.storage.ssd_mut().set_sync_observer(observer);
    }

    /// Calls the SSD sync observer after a durable file-system step outside
    /// the block store (the stream's merge input file).
    pub(crate) fn notify_ssd_sync(&mut self) {
        self.storage.ssd_mut().notify_sync_observer();
    }
}
