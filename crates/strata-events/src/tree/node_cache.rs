//! A small bounded DRAM cache of recently read completed nodes, so that a
//! query descending the tree again does not read the same upper index nodes
//! from SSD or PMem each time. FIFO eviction (no LRU bookkeeping on hits);
//! hits and misses are counted so benchmarks can report physical reads.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::ids::NodeId;

#[derive(Default)]
struct Entries {
    map: HashMap<NodeId, Arc<Vec<u8>>>,
    order: VecDeque<NodeId>,
}

/// At most `capacity` nodes (0 disables the cache).
pub(crate) struct NodeCache {
    capacity: usize,
    entries: Mutex<Entries>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl NodeCache {
    pub(crate) fn new(capacity: usize) -> NodeCache {
        NodeCache { capacity, entries: Mutex::default(), hits: AtomicU64::new(0), misses: AtomicU64::new(0) }
    }

    /// The cached node, counting a hit or a miss.
    pub(crate) fn get(&self, id: NodeId) -> Option<Arc<Vec<u8>>> {
        let found = self.entries.lock().map.get(&id).cloned();
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    pub(crate) fn insert(&self, id: NodeId, node: Arc<Vec<u8>>) {
        if self.capacity == 0 {
            return;
        }
        let mut e = self.entries.lock();
        if e.map.insert(id, node).is_none() {
            e.order.push_back(id);
        }
        while e.order.len() > self.capacity {
            if let Some(old) = e.order.pop_front() {
                e.map.remove(&old);
            }
        }
    }

    /// Forgets `id` (its node is being rewritten).
    pub(crate) fn invalidate(&self, id: NodeId) {
        let mut e = self.entries.lock();
        if e.map.remove(&id).is_some() {
            e.order.retain(|x| *x != id);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().map.len()
    }

    pub(crate) fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    pub(crate) fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_stays_bounded_evicts_oldest_first_and_counts() {
        let cache = NodeCache::new(2);
        for n in 0..3 {
            cache.insert(NodeId::leaf(n), Arc::new(vec![n as u8]));
        }
        assert_eq!(cache.len(), 2);
        assert!(cache.get(NodeId::leaf(0)).is_none(), "the oldest was evicted");
        assert_eq!(cache.get(NodeId::leaf(2)).unwrap()[0], 2);
        cache.invalidate(NodeId::leaf(2));
        assert!(cache.get(NodeId::leaf(2)).is_none());
        assert_eq!((cache.hits(), cache.misses()), (1, 2));
        let off = NodeCache::new(0);
        off.insert(NodeId::leaf(1), Arc::new(vec![]));
        assert_eq!(off.len(), 0, "capacity 0 caches nothing");
    }
}
