//! Startup recovery of every pool (lsm-pmem.txt section 3.4.1, last
//! paragraph): traverse the freelist from `hd`, marking reachable objects in a
//! temporary DRAM bitmap; every object that is neither committed nor
//! reachable is a leak (popped by a `get` whose `commit` never became durable,
//! a volatile zone, or a release cut short by a crash) and is pushed back onto
//! the freelist as one chain. The traversal is bounded by the object count, so
//! a corrupted (cyclic) freelist is `Corruption`, never a hang.
//!
//! Contract with applications: after `open`, every object is either free or
//! committed. An application then calls `check` on each reference it holds in
//! its own persistent structures and drops the references that fail it (an
//! allocation whose commit was not durable, or a release that was); that is
//! the paper's "Check ... thereby applications can determine whether an object
//! should be dropped".

use std::time::Duration;

use super::freelist::{self, is_committed, link_of};
use super::layout::PoolGeometry;
use super::object_pool::{PoolId, STATE_COMMITTED, STATE_FREE};
use crate::error::PmemError;
use crate::region::Region;

/// Which pool a [`PoolRecovery`] is about.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PoolKind {
    Objects(PoolId),
    Zones,
}

/// Recovery of one pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolRecovery {
    pub pool: PoolKind,
    /// Index words read (every object of the pool).
    pub objects_scanned: u64,
    /// Objects on the freelist after recovery (reachable before + leaks).
    pub free_objects: u64,
    pub committed_objects: u64,
    /// Objects neither committed nor reachable, pushed back onto the freelist.
    pub leaks_reclaimed: u64,
}

/// What [`super::Halloc::open`] found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Object pools in id order, then the zone pool.
    pub pools: Vec<PoolRecovery>,
    pub objects_scanned: u64,
    pub leaks_reclaimed: u64,
    /// Wall time of decoding and recovering every pool.
    pub elapsed: Duration,
}

impl RecoveryReport {
    pub(crate) fn new(pools: Vec<PoolRecovery>, elapsed: Duration) -> Self {
        RecoveryReport {
            objects_scanned: pools.iter().map(|p| p.objects_scanned).sum(),
            leaks_reclaimed: pools.iter().map(|p| p.leaks_reclaimed).sum(),
            pools,
            elapsed,
        }
    }
}

/// Recovers one pool: returns its report and the DRAM state of each object.
pub(crate) fn recover_pool(
    region: &Region,
    geo: &PoolGeometry,
    pool: PoolKind,
) -> Result<(PoolRecovery, Vec<u8>), PmemError> {
    let (free_list, reachable) = freelist::traverse(region, geo)?;
    let mut states = vec![STATE_FREE; geo.object_count as usize];
    let mut leaks = Vec::new();
    let mut committed = 0;
    for index in 0..geo.object_count as u32 {
        if reachable.get(index) {
            continue;
        }
        let at = geo.word_offset(index);
        let word = region.load_u64(at);
        if is_committed(word) {
            if link_of(word) != 0 {
                return Err(PmemError::Corruption {
                    offset: at.0,
                    what: format!("pool {} committed object {index} has link bits {word:#x}", geo.pool_id),
                });
            }
            states[index as usize] = STATE_COMMITTED;
            committed += 1;
        } else if link_of(word) > geo.object_count {
            return Err(PmemError::Corruption {
                offset: at.0,
                what: format!(
                    "pool {} object {index} has link {} beyond {} objects",
                    geo.pool_id, word, geo.object_count
                ),
            });
        } else {
            leaks.push(index);
        }
    }
    freelist::push_chain(region, geo, &leaks);
    let report = PoolRecovery {
        pool,
        objects_scanned: geo.object_count,
        free_objects: (free_list.len() + leaks.len()) as u64,
        committed_objects: committed,
        leaks_reclaimed: leaks.len() as u64,
    };
    Ok((report, states))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::layout::{COMMIT_BIT, HEADER_MAGIC_OFFSET};
    use super::super::test_support::small_halloc;
    use super::super::{Halloc, ObjectId, PoolId};
    use super::*;
    use crate::offset::RegionOffset;

    fn reopen(region: &Arc<Region>) -> (Halloc, RecoveryReport) {
        Halloc::open(region, RegionOffset(0)).unwrap()
    }

    #[test]
    fn taken_uncommitted_objects_and_volatile_zones_are_reclaimed() {
        let (region, h) = small_halloc(512, 3);
        let kept = h.get(PoolId(0)).unwrap();
        h.commit(kept);
        let leaked = h.get(PoolId(0)).unwrap();
        let volatile_zone = h.get_zone().unwrap();
        let committed_zone = h.get_zone().unwrap();
        h.commit_zone(committed_zone);
        drop(h);
        let (h, report) = reopen(&region);
        assert_eq!(report.leaks_reclaimed, 2, "{report:?}");
        assert_eq!(report.pools[0].leaks_reclaimed, 1);
        assert_eq!(report.pools[0].committed_objects, 1);
        assert_eq!(report.pools.last().unwrap().pool, PoolKind::Zones);
        assert_eq!(report.pools.last().unwrap().leaks_reclaimed, 1);
        assert!(h.check(kept) && !h.check(leaked));
        assert!(!h.check_zone(volatile_zone) && h.check_zone(committed_zone));
        assert!(h.free_list(PoolId(0)).unwrap().contains(&leaked));
        assert!(h.free_zone_list().unwrap().contains(&volatile_zone));
        let total: u64 = h.pool_count() as u64;
        assert_eq!(
            report.objects_scanned,
            (0..total).map(|p| h.object_count(PoolId(p as u32))).sum::<u64>() + 3
        );
        // A second restart finds nothing more to reclaim.
        drop(h);
        assert_eq!(reopen(&region).1.leaks_reclaimed, 0);
    }

    #[test]
    fn release_cut_after_the_word_store_is_reclaimed() {
        let (region, h) = small_halloc(512, 1);
        let id = h.get(PoolId(0)).unwrap();
        h.commit(id);
        let geo = h.pools[0].geo;
        // Step 1 of release durable, step 2 (hd) not: uncommitted, unreachable.
        region.store_u64_persist(geo.word_offset(id.index()), region.load_u64(geo.hd_offset()));
        drop(h);
        let (h, report) = reopen(&region);
        assert_eq!(report.leaks_reclaimed, 1);
        assert!(!h.check(id));
        assert_eq!(h.free_objects(PoolId(0)), h.object_count(PoolId(0)));
    }

    #[test]
    fn committed_object_with_link_bits_is_corruption() {
        let (region, h) = small_halloc(512, 1);
        let id = h.get(PoolId(0)).unwrap();
        let at = h.pools[0].geo.word_offset(id.index());
        drop(h);
        region.store_u64(at, COMMIT_BIT | 1);
        assert!(matches!(Halloc::open(&region, RegionOffset(0)), Err(PmemError::Corruption { .. })));
        region.store_u64(at, 1 << 40);
        assert!(matches!(Halloc::open(&region, RegionOffset(0)), Err(PmemError::Corruption { .. })));
    }

    #[test]
    fn recovery_report_times_a_large_scan() {
        let region = Arc::new(Region::anonymous(16 << 20).unwrap());
        let config = super::super::HallocConfig::new(
            vec![super::super::PoolSpec { object_size_bytes: 8, object_count: 100_000 }],
            4096,
            16,
        );
        let h = Halloc::format(&region, RegionOffset(0), 16 << 20, &config).unwrap();
        let ids: Vec<ObjectId> = (0..1000).map(|_| h.get(PoolId(0)).unwrap()).collect();
        for &id in &ids[..500] {
            h.commit(id);
        }
        drop(h);
        let (_, report) = reopen(&region);
        assert_eq!(report.objects_scanned, 100_016);
        assert_eq!(report.leaks_reclaimed, 500);
        assert_eq!(report.pools[0].committed_objects, 500);
        assert!(report.elapsed > Duration::ZERO);
        assert_eq!(region.load_u64(RegionOffset(HEADER_MAGIC_OFFSET)), super::super::HALLOC_MAGIC);
    }
}
