//! Where completed TAB+-tree nodes are written and read by [`NodeId`]
//! (chronicledb-pmem.txt sections 2.2 "Storage Layout", 4.1 "Index Nodes",
//! 4.2): the [`NodeStorage`] trait and its implementations.
//!
//! - [`SsdNodeStorage`]: LZ4-compressed nodes in the [`BlockStore`] with a
//!   [`Translation`] from id to block address. A write is durable when it
//!   returns: append, set the translation, sync the store, make the
//!   translation durable (one fdatasync per completed node).
//! - [`PmemIndexStorage`]: index nodes in the flat [`IndexNodeArray`]; a
//!   node's slot is reserved (its fresh header persisted) when the node
//!   enters the flank, because the array creates slots in id order while
//!   nodes complete in another order (a root completes after its children's
//!   later siblings were created).
//! - [`TreeStorage`]: leaves to SSD, index nodes to SSD or PMem, and a
//!   bounded cache of recently read nodes; counts what every read and write
//!   cost ([`StorageStats`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::block_store::{BlockStore, PhysAddr};
use crate::ids::{EventError, NodeId, NodeKind};
use crate::node::header::node_crc;
use crate::node::read_header;
use crate::pmem_arrays::{index_number, IndexNodeArray};
use crate::translation::{Translation, TranslationStats};

use super::node_cache::NodeCache;

/// Reads and writes completed nodes by id.
pub trait NodeStorage {
    /// Stores completed node `id` (sealed bytes); durable when this returns.
    /// Writing an id again replaces the node.
    fn write_node(&mut self, id: NodeId, bytes: &[u8]) -> Result<(), EventError>;

    /// The bytes of completed node `id`, `None` if none is stored.
    fn read_node(&self, id: NodeId) -> Result<Option<Vec<u8>>, EventError>;

    /// Whether a completed node `id` is durably stored.
    fn is_complete(&self, id: NodeId) -> Result<bool, EventError>;

    /// Called when node `id` enters the flank, with its fresh header.
    fn reserve(&mut self, id: NodeId, header: &[u8]) -> Result<(), EventError> {
        let _ = (id, header);
        Ok(())
    }

    fn stats(&self) -> StorageStats;
}

/// What node storage did since it was created or opened.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct StorageStats {
    /// Completed nodes appended to the block store.
    pub ssd_node_writes: u64,
    /// Node records read from the block store (cache misses of SSD nodes).
    pub ssd_node_reads: u64,
    /// fdatasync calls of the block store.
    pub ssd_syncs: u64,
    /// Bytes written to the block file (whole blocks, translation blocks included).
    pub ssd_bytes_written: u64,
    /// Index nodes written to the PMem array (slot reservations included).
    pub pmem_node_writes: u64,
    /// Index nodes read from the PMem array.
    pub pmem_node_reads: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
}

/// Callback run after every block-store sync and before the translation
/// persists what relies on it (crash tests snapshot the file system there).
pub type SyncObserver = Box<dyn FnMut() + Send>;

/// Completed nodes in the block store, found through a translation.
pub struct SsdNodeStorage {
    store: BlockStore,
    translation: Box<dyn Translation + Send>,
    sync_observer: Option<SyncObserver>,
    writes: u64,
    reads: AtomicU64,
}

impl SsdNodeStorage {
    pub fn new(store: BlockStore, translation: Box<dyn Translation + Send>) -> SsdNodeStorage {
        SsdNodeStorage { store, translation, sync_observer: None, writes: 0, reads: AtomicU64::new(0) }
    }

    pub fn store(&self) -> &BlockStore {
        &self.store
    }

    pub fn translation(&self) -> &dyn Translation {
        self.translation.as_ref()
    }

    pub fn translation_stats(&self) -> TranslationStats {
        self.translation.stats()
    }

    pub fn set_sync_observer(&mut self, observer: Option<SyncObserver>) {
        self.sync_observer = observer;
    }

    /// Calls the sync observer: a durable file-system step happened.
    pub fn notify_sync_observer(&mut self) {
        if let Some(observer) = &mut self.sync_observer {
            observer();
        }
    }

    /// Syncs the store and the translation (everything written is durable).
    pub fn sync(&mut self) -> Result<(), EventError> {
        self.store.sync()?;
        self.notify_sync_observer();
        self.translation.sync(&mut self.store)
    }
}

impl NodeStorage for SsdNodeStorage {
    fn write_node(&mut self, id: NodeId, bytes: &[u8]) -> Result<(), EventError> {
        let addr = self.store.append(id, bytes)?;
        self.translation.set(&mut self.store, id, addr)?;
        self.sync()?;
        self.writes += 1;
        Ok(())
    }

    fn read_node(&self, id: NodeId) -> Result<Option<Vec<u8>>, EventError> {
        let Some(addr) = self.translation.get(&self.store, id)? else { return Ok(None) };
        let (stored_id, bytes) = self.store.read_node(addr)?;
        self.reads.fetch_add(1, Ordering::Relaxed);
        if stored_id != id {
            return Err(EventError::corruption(
                format!("block store {addr}"),
                format!("the translation of {id} leads to a record of {stored_id}"),
            ));
        }
        Ok(Some(bytes))
    }

    fn is_complete(&self, id: NodeId) -> Result<bool, EventError> {
        Ok(self.translation.get(&self.store, id)?.is_some())
    }

    fn stats(&self) -> StorageStats {
        let s = self.store.stats();
        StorageStats {
            ssd_node_writes: self.writes,
            ssd_node_reads: self.reads.load(Ordering::Relaxed),
            ssd_syncs: s.syncs,
            ssd_bytes_written: s.bytes_written,
            ..StorageStats::default()
        }
    }
}

/// Completed index nodes in the PMem index node array.
pub struct PmemIndexStorage {
    array: IndexNodeArray,
    writes: u64,
    reads: AtomicU64,
}

impl PmemIndexStorage {
    pub fn new(array: IndexNodeArray) -> PmemIndexStorage {
        PmemIndexStorage { array, writes: 0, reads: AtomicU64::new(0) }
    }

    pub fn array(&self) -> &IndexNodeArray {
        &self.array
    }

    fn slot_of(&self, id: NodeId) -> Result<Option<u64>, EventError> {
        let n = index_number(id)?;
        Ok((n < self.array.node_count()).then_some(n))
    }
}

impl NodeStorage for PmemIndexStorage {
    fn write_node(&mut self, id: NodeId, bytes: &[u8]) -> Result<(), EventError> {
        self.array.write_node(index_number(id)?, bytes)?;
        self.writes += 1;
        Ok(())
    }

    fn read_node(&self, id: NodeId) -> Result<Option<Vec<u8>>, EventError> {
        let Some(n) = self.slot_of(id)? else { return Ok(None) };
        self.reads.fetch_add(1, Ordering::Relaxed);
        Ok(Some(self.array.read_node(n)?))
    }

    /// A slot holds a completed node when it is sealed, its CRC matches and
    /// its header names `id` (a reserved slot holds an unsealed header).
    fn is_complete(&self, id: NodeId) -> Result<bool, EventError> {
        let Some(bytes) = self.read_node(id)? else { return Ok(false) };
        let Ok(h) = read_header(&bytes) else { return Ok(false) };
        Ok(h.id == id && h.is_sealed() && node_crc(&bytes, h.used_bytes()) == h.crc)
    }

    fn reserve(&mut self, id: NodeId, header: &[u8]) -> Result<(), EventError> {
        self.array.write_node(index_number(id)?, header)?;
        self.writes += 1;
        Ok(())
    }

    fn stats(&self) -> StorageStats {
        StorageStats {
            pmem_node_writes: self.writes,
            pmem_node_reads: self.reads.load(Ordering::Relaxed),
            ..StorageStats::default()
        }
    }
}

/// Leaves on SSD, index nodes on SSD or PMem, reads through a small cache.
pub struct TreeStorage {
    ssd: SsdNodeStorage,
    pmem_index: Option<PmemIndexStorage>,
    cache: NodeCache,
}

impl TreeStorage {
    pub fn new(ssd: SsdNodeStorage, pmem_index: Option<PmemIndexStorage>, cache_nodes: usize) -> TreeStorage {
        TreeStorage { ssd, pmem_index, cache: NodeCache::new(cache_nodes) }
    }

    pub fn ssd(&self) -> &SsdNodeStorage {
        &self.ssd
    }

    pub fn ssd_mut(&mut self) -> &mut SsdNodeStorage {
        &mut self.ssd
    }

    pub fn pmem_index(&self) -> Option<&PmemIndexStorage> {
        self.pmem_index.as_ref()
    }

    fn route(&self, id: NodeId) -> &dyn NodeStorage {
        match (&self.pmem_index, id.kind) {
            (Some(pmem), NodeKind::Index) => pmem,
            _ => &self.ssd,
        }
    }

    fn route_mut(&mut self, id: NodeId) -> &mut dyn NodeStorage {
        match (&mut self.pmem_index, id.kind) {
            (Some(pmem), NodeKind::Index) => pmem,
            _ => &mut self.ssd,
        }
    }

    /// Completed node `id` through the cache; `Corruption` if it is missing
    /// (the tree refers to it, so it must exist).
    pub fn read(&self, id: NodeId) -> Result<Arc<Vec<u8>>, EventError> {
        if let Some(node) = self.cache.get(id) {
            return Ok(node);
        }
        let bytes = self.route(id).read_node(id)?.ok_or_else(|| {
            EventError::corruption(format!("node {id}"), "the tree refers to a node that was never stored")
        })?;
        let node = Arc::new(bytes);
        self.cache.insert(id, node.clone());
        Ok(node)
    }

    /// Syncs the SSD side (store and translation).
    pub fn sync(&mut self) -> Result<(), EventError> {
        self.ssd.sync()
    }

    /// The block-store address of leaf `id`'s current version (a rewrite
    /// appends a new version; the old one stays readable at its address).
    pub(crate) fn leaf_addr(&self, id: NodeId) -> Result<PhysAddr, EventError> {
        self.ssd.translation.get(&self.ssd.store, id)?.ok_or_else(|| {
            EventError::corruption(format!("leaf {id}"), "the tree refers to a leaf that was never stored")
        })
    }

    /// The leaf version stored at `addr` (any version, not only the
    /// current one); `Corruption` if the record there is not a leaf.
    pub(crate) fn read_leaf_at(&self, addr: PhysAddr) -> Result<(NodeId, Vec<u8>), EventError> {
        let (id, bytes) = self.ssd.store.read_node(addr)?;
        if id.kind != NodeKind::Leaf {
            return Err(EventError::corruption(
                format!("block store {addr}"),
                format!("a leaf version was expected, found {id}"),
            ));
        }
        Ok((id, bytes))
    }
}

impl NodeStorage for TreeStorage {
    fn write_node(&mut self, id: NodeId, bytes: &[u8]) -> Result<(), EventError> {
        self.cache.invalidate(id);
        self.route_mut(id).write_node(id, bytes)
    }

    fn read_node(&self, id: NodeId) -> Result<Option<Vec<u8>>, EventError> {
        self.route(id).read_node(id)
    }

    fn is_complete(&self, id: NodeId) -> Result<bool, EventError> {
        self.route(id).is_complete(id)
    }

    fn reserve(&mut self, id: NodeId, header: &[u8]) -> Result<(), EventError> {
        self.cache.invalidate(id);
        self.route_mut(id).reserve(id, header)
    }

    fn stats(&self) -> StorageStats {
        let ssd = self.ssd.stats();
        let pmem = self.pmem_index.as_ref().map(|p| p.stats()).unwrap_or_default();
        StorageStats {
            pmem_node_writes: pmem.pmem_node_writes,
            pmem_node_reads: pmem.pmem_node_reads,
            cache_hits: self.cache.hits(),
            cache_misses: self.cache.misses(),
            ..ssd
        }
    }
}
