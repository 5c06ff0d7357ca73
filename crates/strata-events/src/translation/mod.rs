//! Logical-to-physical address translation of TAB+-tree nodes
//! (chronicledb-pmem.txt sections 2.2 "Storage Layout", 4.2 and 5.3; format:
//! `docs/format/events-translation.md`): node id -> [`PhysAddr`] of its
//! record in the [`BlockStore`], in three variants behind [`Translation`]:
//!
//! - [`DramTranslation`]: flat arrays in DRAM; recovery is a full scan of the
//!   block file (the paper's in-memory baseline of Fig. 7);
//! - [`AttTranslation`]: the Address Translation Tree on SSD, interleaved with
//!   the data blocks, its right flank in DRAM (the paper's "Flash" variant);
//! - [`PmemArrayTranslation`]: a flat PMem array, slot `i` = node `i`,
//!   persisted in batches of 32 slots (one 256-byte media block).
//!
//! Leaf and index nodes have separate id sequences ([`NodeId`]): every
//! variant keeps one table per [`NodeKind`], indexed by the node's number in
//! its sequence (two arrays; two ATTs). With one shared sequence each table
//! simply has holes where the other kind's numbers are.
//!
//! Contract shared by the variants: `set(id, addr)` is called after `addr`
//! was returned by [`BlockStore::append`], in append order (addresses never
//! decrease; a variant rejects a smaller one), so the latest record of a
//! node in file order is its translation, which is what every recovery
//! restores. A translation is recoverable once its record is durable (the
//! store synced): recovery rebuilds what was not yet durable in the
//! variant's own structure from the block file.

mod att;
pub mod att_node;
#[cfg(test)]
mod att_tests;
mod dram;
#[cfg(test)]
mod format_doc_tests;
#[cfg(test)]
mod model_tests;
mod pmem_array;
#[cfg(any(test, feature = "crashtest"))]
pub use pmem_array::{PlantedBug, PLANTED_BUG};
#[cfg(test)]
mod pmem_array_tests;

use std::time::Duration;

pub use att::{AttOptions, AttTranslation};
pub use dram::DramTranslation;
pub use pmem_array::{
    PmemArrayTranslation, PMEM_BATCH_SLOTS, PMEM_HDR_OFFSET_GROUP_SLOTS, PMEM_HDR_OFFSET_HEADER_CRC,
    PMEM_HDR_OFFSET_INDEX_CAPACITY, PMEM_HDR_OFFSET_LEAF_CAPACITY, PMEM_HDR_OFFSET_MAGIC,
    PMEM_HDR_OFFSET_REPLAY_FROM, PMEM_HDR_OFFSET_VERSION, PMEM_HEADER_BYTES, PMEM_HEADER_CRC_COVERED_BYTES,
    PMEM_SLOT_BYTES, PMEM_TRANSLATION_MAGIC, PMEM_TRANSLATION_VERSION,
};

use crate::block_store::{BlockStore, PhysAddr};
use crate::ids::{EventError, NodeId, NodeKind};

/// Which variant a translation is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TranslationKind {
    Dram,
    PmemArray,
    Att,
}

impl TranslationKind {
    /// Name in reports and benchmark results.
    pub fn name(self) -> &'static str {
        match self {
            TranslationKind::Dram => "dram",
            TranslationKind::PmemArray => "pmem",
            TranslationKind::Att => "flash-att",
        }
    }
}

/// What a translation did since it was created or recovered. Benchmarks
/// divide these by the operations they timed.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TranslationStats {
    pub sets: u64,
    /// ATT: translation blocks read from SSD (lookups of nodes whose
    /// translation is not in DRAM, updates of such nodes, recovery).
    pub ssd_block_reads: u64,
    /// ATT: translation blocks written.
    pub translation_blocks_written: u64,
    /// ATT: commits (each ends with a root block carrying the commit).
    pub commits: u64,
    /// PMem: batches persisted (one fence each) and slots written by them.
    pub batches_persisted: u64,
    pub slots_persisted: u64,
    /// PMem: cache lines this translation flushed, fences it issued.
    pub lines_flushed: u64,
    pub fences: u64,
    /// Translations not yet in the variant's durable structure (PMem:
    /// pending slots; ATT: entries of changed nodes not yet written).
    pub pending: u64,
}

/// What a recovery did (for the paper's "total recovery time").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryReport {
    pub kind: TranslationKind,
    /// Node records read from the block file to rebuild translations.
    pub records_scanned: u64,
    /// Translations set from those records that the durable structure lacked
    /// or had older (the DRAM variant: every translation).
    pub translations_restored: u64,
    /// Whole blocks read (scan and translation blocks).
    pub blocks_read: u64,
    /// Where the scan of the block file started.
    pub replay_from: PhysAddr,
    /// Wall-clock time of the whole recovery.
    pub duration: Duration,
}

/// Node id -> physical address, in one of three variants (module comment).
/// Object safe: benchmarks hold a `Box<dyn Translation>`.
pub trait Translation {
    fn kind(&self) -> TranslationKind;

    /// Records that node `id` now lives at `addr` (returned by
    /// `store.append`; addresses in append order).
    fn set(&mut self, store: &mut BlockStore, id: NodeId, addr: PhysAddr) -> Result<(), EventError>;

    /// The latest address set for `id`, or `None`.
    fn get(&self, store: &BlockStore, id: NodeId) -> Result<Option<PhysAddr>, EventError>;

    /// Syncs the block store, then makes durable what the variant keeps
    /// durably (PMem: every pending slot). Afterwards every translation set
    /// so far survives a crash.
    fn sync(&mut self, store: &mut BlockStore) -> Result<(), EventError>;

    fn stats(&self) -> TranslationStats;
}

/// Index of a node kind's table.
pub(crate) fn kind_index(kind: NodeKind) -> usize {
    match kind {
        NodeKind::Leaf => 0,
        NodeKind::Index => 1,
    }
}

/// The append-order rule of the module comment.
pub(crate) fn check_order(last: Option<PhysAddr>, id: NodeId, addr: PhysAddr) -> Result<(), EventError> {
    match last {
        Some(last) if addr < last => Err(EventError::invalid(format!(
            "translation of {id} to {addr} is out of append order (last set: {last})"
        ))),
        _ => Ok(()),
    }
}
