//! The log-free persistent freelist of one pool (lsm-pmem.txt section 3.4.1,
//! Figure 9): the index-word encoding (commit bit + link), pop from the dummy
//! head `hd`, push of a chain of objects, and the bounded traversal that
//! recovery and inspection use.
//!
//! Crash safety rests on two invariants, kept with failure-atomic 8-byte
//! stores and flush+fence ordering:
//! 1. an object reachable from `hd` has its commit bit clear and its link
//!    persisted (a push persists the object's word before it persists `hd`);
//! 2. an object leaves the freelist (pop persists `hd`) before it can be
//!    committed, so no object is ever both committed and reachable.
//!
//! Callers serialize pops and pushes of one pool (the pool's DRAM mutex).

use super::layout::{PoolGeometry, COMMIT_BIT, INDEX_WORD_BYTES, LINK_MASK};
use crate::error::PmemError;
use crate::offset::{RegionOffset, CACHE_LINE_BYTES};
use crate::region::Region;

/// The link value that points at `index` (index + 1; 0 is the end of the list).
pub(crate) fn link_to(index: u32) -> u64 {
    u64::from(index) + 1
}

pub(crate) fn is_committed(word: u64) -> bool {
    word & COMMIT_BIT != 0
}

pub(crate) fn link_of(word: u64) -> u64 {
    word & LINK_MASK
}

fn corrupt(at: RegionOffset, what: String) -> PmemError {
    PmemError::Corruption { offset: at.0, what }
}

/// A DRAM bitmap over the objects of one pool.
#[derive(Debug)]
pub(crate) struct Bitmap {
    words: Vec<u64>,
}

impl Bitmap {
    pub fn new(len: u64) -> Self {
        Bitmap { words: vec![0; len.div_ceil(64) as usize] }
    }

    pub fn get(&self, i: u32) -> bool {
        self.words[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    pub fn set(&mut self, i: u32) {
        self.words[(i / 64) as usize] |= 1 << (i % 64);
    }
}

/// Pops the object at `hd` and persists the new head (one flush, one fence).
/// `Ok(None)` when the freelist is empty.
pub(crate) fn pop(region: &Region, g: &PoolGeometry) -> Result<Option<u32>, PmemError> {
    let head = region.load_u64(g.hd_offset());
    if head == 0 {
        return Ok(None);
    }
    if head > g.object_count {
        return Err(corrupt(g.hd_offset(), format!("pool {} freelist head {head} out of range", g.pool_id)));
    }
    let index = (head - 1) as u32;
    let word = region.load_u64(g.word_offset(index));
    let next = link_of(word);
    if is_committed(word) || next > g.object_count {
        return Err(corrupt(
            g.word_offset(index),
            format!("pool {} free object {index} has index word {word:#x}", g.pool_id),
        ));
    }
    region.store_u64(g.hd_offset(), next);
    region.persist(g.hd_offset(), INDEX_WORD_BYTES);
    Ok(Some(index))
}

/// Pushes `indices` (distinct; none on the freelist) onto the freelist as one
/// chain, in two persisted steps whatever the chain's length:
/// 1. each object's index word := link to the next object of the chain (the
///    last one: the current head), commit bit clear; flush their lines; fence;
/// 2. `hd` := link to the first object; flush; fence.
///
/// A crash before step 2 is durable leaves the objects uncommitted and
/// unreachable: leaks that recovery pushes again.
pub(crate) fn push_chain(region: &Region, g: &PoolGeometry, indices: &[u32]) {
    let Some(&first) = indices.first() else { return };
    let head = region.load_u64(g.hd_offset());
    let mut lines: Vec<u64> = Vec::with_capacity(indices.len());
    for (k, &index) in indices.iter().enumerate() {
        let next = indices.get(k + 1).map_or(head, |&n| link_to(n));
        let at = g.word_offset(index);
        region.store_u64(at, next);
        lines.push(at.0 / CACHE_LINE_BYTES);
    }
    lines.sort_unstable();
    lines.dedup();
    for line in lines {
        // One flush per distinct cache line; the first index word of the line
        // inside the array stands for the whole line.
        let at = RegionOffset((line * CACHE_LINE_BYTES).max(g.index_words.0));
        region.flush(at, INDEX_WORD_BYTES);
    }
    region.fence();
    region.store_u64(g.hd_offset(), link_to(first));
    region.persist(g.hd_offset(), INDEX_WORD_BYTES);
}

/// The freelist in order from `hd`, and the reachable set as a bitmap.
/// Bounded by the object count: a cycle, an out-of-range link or a committed
/// member is `Corruption`.
pub(crate) fn traverse(region: &Region, g: &PoolGeometry) -> Result<(Vec<u32>, Bitmap), PmemError> {
    let mut reachable = Bitmap::new(g.object_count);
    let mut order = Vec::new();
    let mut at = g.hd_offset();
    let mut link = region.load_u64(at);
    while link != 0 {
        if link > g.object_count {
            return Err(corrupt(
                at,
                format!("pool {} freelist link {link} exceeds {} objects", g.pool_id, g.object_count),
            ));
        }
        let index = (link - 1) as u32;
        if reachable.get(index) {
            return Err(corrupt(
                at,
                format!("pool {} freelist has a cycle through object {index}", g.pool_id),
            ));
        }
        reachable.set(index);
        order.push(index);
        at = g.word_offset(index);
        let word = region.load_u64(at);
        if is_committed(word) {
            return Err(corrupt(
                at,
                format!("pool {} object {index} is committed and on the freelist", g.pool_id),
            ));
        }
        link = link_of(word);
    }
    Ok((order, reachable))
}

#[cfg(test)]
mod tests {
    use super::super::layout::{HallocConfig, Layout, PoolSpec};
    use super::*;
    use crate::stats::thread_persist_stats;

    fn pool(count: u64) -> (Region, PoolGeometry) {
        let config = HallocConfig::new(vec![PoolSpec { object_size_bytes: 64, object_count: count }], 64, 0);
        let layout = Layout::plan(RegionOffset(0), 1 << 16, &config).unwrap();
        (Region::sim(1 << 16), layout.pools[0])
    }

    #[test]
    fn push_then_pop_is_lifo_and_traversal_sees_the_chain() {
        let (r, g) = pool(20);
        push_chain(&r, &g, &[3, 7, 19]);
        push_chain(&r, &g, &[5]);
        assert_eq!(traverse(&r, &g).unwrap().0, vec![5, 3, 7, 19]);
        assert_eq!(pop(&r, &g).unwrap(), Some(5));
        assert_eq!(pop(&r, &g).unwrap(), Some(3));
        assert_eq!(traverse(&r, &g).unwrap().0, vec![7, 19]);
    }

    #[test]
    fn push_chain_costs_two_fences_and_one_flush_per_line() {
        let (r, g) = pool(64);
        let before = thread_persist_stats();
        // 16 words: indices 0..16 span two 64-byte lines of index words.
        push_chain(&r, &g, &(0..16).collect::<Vec<_>>());
        let d = thread_persist_stats() - before;
        assert_eq!((d.fences, d.lines_flushed), (2, 2 + 1), "two word lines and the hd line");
    }

    #[test]
    fn pop_of_empty_list_is_none() {
        let (r, g) = pool(4);
        assert_eq!(pop(&r, &g).unwrap(), None);
    }

    #[test]
    fn cycle_is_corruption_not_a_hang() {
        let (r, g) = pool(4);
        push_chain(&r, &g, &[0, 1]);
        r.store_u64(g.word_offset(1), link_to(0));
        let err = traverse(&r, &g).unwrap_err();
        assert!(err.to_string().contains("cycle"), "{err}");
    }

    #[test]
    fn committed_member_and_bad_links_are_corruption() {
        let (r, g) = pool(4);
        push_chain(&r, &g, &[2]);
        r.store_u64(g.word_offset(2), COMMIT_BIT);
        assert!(traverse(&r, &g).unwrap_err().to_string().contains("committed"));
        assert!(pop(&r, &g).is_err());
        r.store_u64(g.word_offset(2), 99);
        assert!(traverse(&r, &g).unwrap_err().to_string().contains("exceeds"));
        assert!(pop(&r, &g).is_err());
        r.store_u64(g.hd_offset(), 5);
        assert!(pop(&r, &g).is_err());
    }
}
