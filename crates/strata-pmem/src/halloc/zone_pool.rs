//! The zone pool (lsm-pmem.txt section 3.4.2, "Zone Pool"): a built-in pool of
//! large fixed-size zones with the same Get/Commit/Check/Release protocol as
//! object pools. Persistent use: a zone is taken and committed like an
//! object, filled append-only by a [`ZoneAppender`] (the memtable's bump
//! allocation), and reclaimed as a whole in a batch
//! ([`Halloc::release_zones`], the paper's batch reclaiming: two fences per
//! batch whatever its length). Volatile use is [`super::VolatileAllocator`].

use std::fmt;

use super::Halloc;
use crate::error::PmemError;
use crate::offset::RegionOffset;

/// A zone of the zone pool (its index). Store it in PMem with
/// [`ZoneId::to_raw`]; validate raw words read back with
/// [`Halloc::zone_id_from_raw`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ZoneId(pub u32);

impl ZoneId {
    pub const fn to_raw(self) -> u64 {
        self.0 as u64
    }
}

impl fmt::Display for ZoneId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "zone{}", self.0)
    }
}

impl Halloc {
    pub fn zone_size_bytes(&self) -> u64 {
        self.zones.geo.object_size_bytes
    }

    pub fn zone_count(&self) -> u64 {
        self.zones.geo.object_count
    }

    /// Zones on the freelist now.
    pub fn free_zones(&self) -> u64 {
        self.zones.free_count()
    }

    /// **Get** for zones: pops a free zone (one flush, one fence). Commit it
    /// for persistent use; leave it uncommitted for volatile use (recovery
    /// reclaims it after a restart).
    pub fn get_zone(&self) -> Result<ZoneId, PmemError> {
        match self.zones.get()? {
            Some(index) => Ok(ZoneId(index)),
            None => Err(PmemError::OutOfSpace(format!(
                "halloc zone pool: all {} zones in use",
                self.zone_count()
            ))),
        }
    }

    /// **Commit** for zones: one atomic store, one flush, one fence.
    #[track_caller]
    pub fn commit_zone(&self, zone: ZoneId) {
        self.zones.commit(zone.0);
    }

    /// **Check** for zones.
    #[track_caller]
    pub fn check_zone(&self, zone: ZoneId) -> bool {
        self.zones.check(zone.0)
    }

    /// **Release** of one zone.
    #[track_caller]
    pub fn release_zone(&self, zone: ZoneId) {
        self.release_zones(&[zone]);
    }

    /// Batch reclaiming: resets the commit bit of every zone and pushes them
    /// onto the freelist as one chain (two flush+fence rounds in all). Each
    /// zone's release is individually failure-atomic; a crash in the middle
    /// may have released any subset, and an application that needs the whole
    /// batch gone releases the survivors again after restart (they still pass
    /// [`Halloc::check_zone`]).
    #[track_caller]
    pub fn release_zones(&self, zones: &[ZoneId]) {
        let indices: Vec<u32> = zones.iter().map(|z| z.0).collect();
        self.zones.release(&indices);
    }

    /// Where the zone's bytes start (64-byte aligned, 256 when the zone size is a multiple of 256).
    #[track_caller]
    pub fn zone_offset(&self, zone: ZoneId) -> RegionOffset {
        self.zones.geo.object_offset(zone.0)
    }

    /// The zone whose bytes contain `offset`, if any.
    pub fn zone_containing(&self, offset: RegionOffset) -> Option<ZoneId> {
        self.zones.geo.index_containing(offset).map(ZoneId)
    }

    /// Validates a zone id read from media.
    pub fn zone_id_from_raw(&self, raw: u64) -> Result<ZoneId, PmemError> {
        if raw < self.zone_count() {
            Ok(ZoneId(raw as u32))
        } else {
            Err(PmemError::Corruption {
                offset: self.base().0,
                what: format!("zone id {raw} out of {} zones", self.zone_count()),
            })
        }
    }

    /// The zone freelist in order (inspection; bounded traversal).
    pub fn free_zone_list(&self) -> Result<Vec<ZoneId>, PmemError> {
        Ok(self.zones.free_list()?.into_iter().map(ZoneId).collect())
    }

    /// A bump allocator over the whole of `zone`, starting empty.
    #[track_caller]
    pub fn zone_appender(&self, zone: ZoneId) -> ZoneAppender {
        self.resume_zone_appender(zone, 0)
    }

    /// A bump allocator over `zone` whose first `used_bytes` are taken (the
    /// application persists that position itself, like the memtable's gidx).
    #[track_caller]
    pub fn resume_zone_appender(&self, zone: ZoneId, used_bytes: u64) -> ZoneAppender {
        let size_bytes = self.zone_size_bytes();
        assert!(
            used_bytes <= size_bytes,
            "{zone}: {used_bytes} used bytes exceed the zone size {size_bytes}"
        );
        ZoneAppender { zone, start: self.zone_offset(zone), size_bytes, used_bytes }
    }
}

/// Append-only (bump) allocation inside one zone. Pure DRAM arithmetic: the
/// caller writes and persists the bytes at the returned offsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneAppender {
    zone: ZoneId,
    start: RegionOffset,
    size_bytes: u64,
    used_bytes: u64,
}

impl ZoneAppender {
    pub fn zone(&self) -> ZoneId {
        self.zone
    }

    /// Bytes from the zone start to the end of the last allocation.
    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    pub fn remaining_bytes(&self) -> u64 {
        self.size_bytes - self.used_bytes
    }

    /// `len_bytes` at the next offset aligned to `align_bytes` (a power of two,
    /// counted in region offsets); `None` when the zone is full.
    #[track_caller]
    pub fn alloc(&mut self, len_bytes: u64, align_bytes: u64) -> Option<RegionOffset> {
        assert!(align_bytes.is_power_of_two(), "alignment {align_bytes} is not a power of two");
        let at = (self.start.0 + self.used_bytes).checked_add(align_bytes - 1)? & !(align_bytes - 1);
        let end = at.checked_add(len_bytes)?;
        if end > self.start.0 + self.size_bytes {
            return None;
        }
        self.used_bytes = end - self.start.0;
        Some(RegionOffset(at))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::test_support::small_halloc;
    use super::*;
    use crate::stats::thread_persist_stats;

    #[test]
    fn appender_bumps_aligns_and_fills() {
        let (_, h) = small_halloc(1024, 2);
        let z = h.get_zone().unwrap();
        let mut a = h.zone_appender(z);
        let start = h.zone_offset(z);
        assert_eq!(a.alloc(10, 1), Some(start));
        assert_eq!(a.alloc(8, 8), Some(start + 16));
        assert_eq!(a.used_bytes(), 24);
        assert_eq!(a.alloc(1000, 8), Some(start + 24));
        assert_eq!(a.remaining_bytes(), 0);
        assert_eq!(a.alloc(1, 1), None, "full");
        let resumed = h.resume_zone_appender(z, 24);
        assert_eq!(resumed.used_bytes(), 24);
        assert_eq!(resumed.zone(), z);
    }

    #[test]
    fn zones_are_disjoint_and_found_by_offset() {
        let (_, h) = small_halloc(1024, 3);
        for i in 0..3 {
            let z = ZoneId(i);
            assert_eq!(h.zone_containing(h.zone_offset(z)), Some(z));
            assert_eq!(h.zone_containing(h.zone_offset(z) + 1023), Some(z));
            assert!(h.zone_offset(z).is_aligned(256));
        }
        assert_eq!(h.zone_containing(h.zone_offset(ZoneId(2)) + 1024), None);
        assert!(h.zone_id_from_raw(3).is_err());
        assert_eq!(h.zone_id_from_raw(2).unwrap(), ZoneId(2));
    }

    #[test]
    fn batch_release_costs_two_fences_and_frees_all() {
        let (_, h) = small_halloc(1024, 4);
        let zones: Vec<ZoneId> = (0..4).map(|_| h.get_zone().unwrap()).collect();
        for &z in &zones {
            h.commit_zone(z);
        }
        assert!(matches!(h.get_zone(), Err(PmemError::OutOfSpace(_))));
        let before = thread_persist_stats();
        h.release_zones(&zones);
        let d = thread_persist_stats() - before;
        assert_eq!(d.fences, 2, "batch reclaiming: two fences for {} zones", zones.len());
        assert!(zones.iter().all(|&z| !h.check_zone(z)));
        assert_eq!(h.free_zones(), 4);
        assert_eq!(h.free_zone_list().unwrap().len(), 4);
    }

    #[test]
    fn zone_commit_costs_one_flush_and_one_fence_whatever_the_zone_size() {
        let region = Arc::new(crate::Region::anonymous(1 << 20).unwrap());
        let config = super::super::HallocConfig::new(vec![], 64 << 10, 4);
        let h = Halloc::format(&region, RegionOffset(0), 1 << 20, &config).unwrap();
        let z = h.get_zone().unwrap();
        let before = thread_persist_stats();
        h.commit_zone(z);
        let d = thread_persist_stats() - before;
        assert_eq!((d.lines_flushed, d.fences), (1, 1), "a 64 KiB zone commits like a 64-byte object");
        assert!(h.check_zone(z));
    }
}
