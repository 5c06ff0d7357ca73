//! Object pools (lsm-pmem.txt section 3.4.1, "Pool Based Objects
//! Preservation"): fixed-size objects allocated with the paper's four
//! interfaces **Get**, **Commit**, **Check** and **Release** over the log-free
//! freelist of [`super::freelist`]. The zone pool (section 3.4.2) is the same
//! machinery with large objects.
//!
//! Concurrency: one DRAM mutex per pool serializes freelist pops and pushes
//! (`get`, `release`); `commit` and `check` touch only the object's own index
//! word and take no lock. A DRAM state byte per object (free / taken /
//! committed) turns API misuse (commit of a free object, double release) into
//! a panic instead of a corrupted freelist.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::freelist::{self, is_committed};
use super::layout::{PoolGeometry, COMMIT_BIT, INDEX_WORD_BYTES};
use crate::error::PmemError;
use crate::region::Region;

/// A customized object pool, numbered in format order from 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PoolId(pub u32);

impl fmt::Display for PoolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pool{}", self.0)
    }
}

/// An object of an object pool: the 8-byte integer the paper addresses objects
/// by, pool id in the high 32 bits and object index in the low 32 bits. Store
/// it in PMem with [`ObjectId::to_raw`]; its address is recomputed from offsets
/// after a restart ([`super::Halloc::object_offset`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectId(u64);

impl ObjectId {
    pub const fn new(pool: PoolId, index: u32) -> Self {
        ObjectId(((pool.0 as u64) << 32) | index as u64)
    }

    pub const fn pool(self) -> PoolId {
        PoolId((self.0 >> 32) as u32)
    }

    pub const fn index(self) -> u32 {
        self.0 as u32
    }

    pub const fn to_raw(self) -> u64 {
        self.0
    }

    /// Unchecked; validate raw words read from media with
    /// [`super::Halloc::object_id_from_raw`].
    pub const fn from_raw_unchecked(raw: u64) -> Self {
        ObjectId(raw)
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/obj{}", self.pool(), self.index())
    }
}

/// DRAM state of one object (mirrors its persistent state plus "taken").
pub(crate) const STATE_FREE: u8 = 0;
/// Popped by `get`, not committed (a leak if the process dies now).
pub(crate) const STATE_TAKEN: u8 = 1;
pub(crate) const STATE_COMMITTED: u8 = 2;

/// The runtime side of one pool: geometry, freelist lock, DRAM states.
pub(crate) struct PoolCore {
    region: Arc<Region>,
    pub geo: PoolGeometry,
    /// Serializes freelist pops and pushes; holds the count of free objects.
    freelist: Mutex<u64>,
    states: Box<[AtomicU8]>,
}

impl PoolCore {
    /// `states` as rebuilt by recovery (every object free or committed).
    pub fn new(region: Arc<Region>, geo: PoolGeometry, states: Vec<u8>) -> Self {
        assert_eq!(states.len() as u64, geo.object_count);
        let free = states.iter().filter(|&&s| s == STATE_FREE).count() as u64;
        PoolCore {
            region,
            geo,
            freelist: Mutex::new(free),
            states: states.into_iter().map(AtomicU8::new).collect(),
        }
    }

    pub fn free_count(&self) -> u64 {
        *self.freelist.lock()
    }

    #[track_caller]
    fn state(&self, index: u32) -> &AtomicU8 {
        assert!(
            u64::from(index) < self.geo.object_count,
            "halloc pool {}: object {index} out of {} objects",
            self.geo.pool_id,
            self.geo.object_count
        );
        &self.states[index as usize]
    }

    /// **Get**: pops the object at `hd` (one flush, one fence).
    pub fn get(&self) -> Result<Option<u32>, PmemError> {
        let mut free = self.freelist.lock();
        let Some(index) = freelist::pop(&self.region, &self.geo)? else {
            return Ok(None);
        };
        let prev = self.states[index as usize].swap(STATE_TAKEN, Ordering::AcqRel);
        assert_eq!(
            prev, STATE_FREE,
            "halloc pool {}: object {index} popped but not free in DRAM",
            self.geo.pool_id
        );
        *free -= 1;
        Ok(Some(index))
    }

    /// **Commit**: one atomic 8-byte store of the commit bit, one flush, one fence.
    #[track_caller]
    pub fn commit(&self, index: u32) {
        let state = self.state(index);
        let s = state.load(Ordering::Acquire);
        assert!(s != STATE_FREE, "halloc pool {}: commit of object {index}, which is free", self.geo.pool_id);
        let at = self.geo.word_offset(index);
        self.region.store_u64(at, COMMIT_BIT);
        self.region.flush(at, INDEX_WORD_BYTES);
        self.region.fence();
        state.store(STATE_COMMITTED, Ordering::Release);
    }

    /// **Check**: is the object's commit bit set (in PMem).
    #[track_caller]
    pub fn check(&self, index: u32) -> bool {
        is_committed(self.region.load_u64(self.geo.word_offset(index)))
    }

    /// **Release** of a batch: resets each commit bit and pushes the chain
    /// onto the freelist in two persisted steps ([`freelist::push_chain`]).
    #[track_caller]
    pub fn release(&self, indices: &[u32]) {
        let mut sorted = indices.to_vec();
        sorted.sort_unstable();
        for pair in sorted.windows(2) {
            assert!(
                pair[0] != pair[1],
                "halloc pool {}: object {} released twice in one batch",
                self.geo.pool_id,
                pair[0]
            );
        }
        let mut free = self.freelist.lock();
        for &index in indices {
            let s = self.state(index).load(Ordering::Acquire);
            assert!(
                s != STATE_FREE,
                "halloc pool {}: release of object {index}, which is already free",
                self.geo.pool_id
            );
        }
        freelist::push_chain(&self.region, &self.geo, indices);
        for &index in indices {
            self.states[index as usize].store(STATE_FREE, Ordering::Release);
        }
        *free += indices.len() as u64;
    }

    /// Planted bug for the crash test: pushes onto the freelist *before*
    /// resetting the commit bit (the order the paper's Release forbids).
    #[cfg(any(test, feature = "crashtest"))]
    pub fn release_push_before_reset(&self, index: u32) {
        let mut free = self.freelist.lock();
        let head = self.region.load_u64(self.geo.hd_offset());
        self.region.store_u64_persist(self.geo.hd_offset(), freelist::link_to(index));
        self.region.store_u64_persist(self.geo.word_offset(index), head);
        self.states[index as usize].store(STATE_FREE, Ordering::Release);
        *free += 1;
    }

    /// The freelist from `hd`, in order (inspection; bounded traversal).
    pub fn free_list(&self) -> Result<Vec<u32>, PmemError> {
        let _guard = self.freelist.lock();
        Ok(freelist::traverse(&self.region, &self.geo)?.0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::{HallocConfig, Layout, PoolSpec};
    use super::*;
    use crate::offset::RegionOffset;
    use crate::stats::thread_persist_stats;

    fn core(count: u64) -> PoolCore {
        let region = Arc::new(Region::anonymous(1 << 16).unwrap());
        let config = HallocConfig::new(vec![PoolSpec { object_size_bytes: 64, object_count: count }], 64, 0);
        let geo = Layout::plan(RegionOffset(0), 1 << 16, &config).unwrap().pools[0];
        let all: Vec<u32> = (0..count as u32).collect();
        // Start with every object taken, then release them all in one chain.
        let pool = PoolCore::new(region, geo, vec![STATE_TAKEN; count as usize]);
        pool.release(&all);
        pool
    }

    #[test]
    fn object_id_packs_pool_and_index() {
        let id = ObjectId::new(PoolId(3), 0xdead_beef);
        assert_eq!((id.pool(), id.index()), (PoolId(3), 0xdead_beef));
        assert_eq!(ObjectId::from_raw_unchecked(id.to_raw()), id);
        assert_eq!(id.to_string(), "pool3/obj3735928559");
    }

    #[test]
    fn get_commit_check_release_cycle() {
        let pool = core(3);
        assert_eq!(pool.free_count(), 3);
        let a = pool.get().unwrap().unwrap();
        assert!(!pool.check(a), "taken but not committed");
        pool.commit(a);
        assert!(pool.check(a));
        assert_eq!(pool.free_count(), 2);
        pool.release(&[a]);
        assert!(!pool.check(a));
        assert_eq!(pool.free_count(), 3);
        assert_eq!(pool.get().unwrap(), Some(a), "the freelist is LIFO");
    }

    #[test]
    fn commit_costs_one_flush_and_one_fence() {
        let pool = core(2);
        let a = pool.get().unwrap().unwrap();
        let before = thread_persist_stats();
        pool.commit(a);
        let d = thread_persist_stats() - before;
        assert_eq!((d.lines_flushed, d.fences), (1, 1));
    }

    #[test]
    fn exhausted_pool_returns_none() {
        let pool = core(1);
        assert!(pool.get().unwrap().is_some());
        assert_eq!(pool.get().unwrap(), None);
    }

    #[test]
    #[should_panic(expected = "already free")]
    fn double_release_panics() {
        let pool = core(2);
        let a = pool.get().unwrap().unwrap();
        pool.release(&[a]);
        pool.release(&[a]);
    }

    #[test]
    #[should_panic(expected = "which is free")]
    fn commit_of_free_object_panics() {
        core(2).commit(0);
    }

    #[test]
    #[should_panic(expected = "twice in one batch")]
    fn duplicate_in_batch_panics() {
        let pool = core(3);
        let a = pool.get().unwrap().unwrap();
        pool.release(&[a, a]);
    }
}
