//! Halloc, the persistent-memory allocator of the LSM engine (lsm-pmem.txt
//! section 3.4, all of it; on-media format in `docs/format/halloc.md`).
//!
//! Owns the [`Halloc`] handle: `format` and `open` (with startup recovery) of
//! a Halloc area at a base offset of a shared [`Region`], and the object-pool
//! interfaces of section 3.4.1 ([`Halloc::get`], [`Halloc::commit`],
//! [`Halloc::check`], [`Halloc::release`]). The submodules each own one part:
//!
//! - `layout`: header, pool metadata blocks, arrays; planning and strict decoding;
//! - `freelist`: the log-free persistent freelist (index word = commit bit + link);
//! - `object_pool`: [`ObjectId`], [`PoolId`] and the per-pool runtime (DRAM mutex, states);
//! - `recovery`: the startup freelist traversal and leak reclamation (3.4.1);
//! - `zone_pool`: zones, [`ZoneAppender`] and batch reclaiming (3.4.2);
//! - `volatile`: [`VolatileAllocator`], volatile allocation on uncommitted zones (3.4.3);
//!
//! Its crash-simulator workload and oracle are `strata_crashtest::halloc_pmem`.
//!
//! Allocation protocol for applications (Figure 9): `get` an object, write
//! and persist its contents, record its [`ObjectId`] in the application's own
//! persistent structure and persist that, then `commit`. To free: `release`,
//! then clear the reference. After a restart, `open` reclaims every object
//! that is neither committed nor on the freelist; the application then calls
//! `check` on each reference it holds and drops those that fail.
//!
//! Addresses are never stored: objects are named by index and their offsets
//! recomputed from the metadata, so the region may be mapped anywhere.

mod freelist;
mod layout;
#[cfg(test)]
mod model_test;
mod object_pool;
mod recovery;
#[cfg(test)]
mod test_support;
mod volatile;
mod zone_pool;

use std::sync::Arc;
use std::time::Instant;

pub use layout::{
    HallocConfig, PoolSpec, ARRAY_ALIGN_BYTES, COMMIT_BIT, DEFAULT_ZONE_SIZE_BYTES, HALLOC_MAGIC,
    HALLOC_VERSION, HEADER_BYTES, LINK_MASK, MAX_OBJECT_COUNT, OBJECT_ALIGN_BYTES, POOL_META_BYTES,
    ZONE_POOL_ID,
};
pub use object_pool::{ObjectId, PoolId};
pub use recovery::{PoolKind, PoolRecovery, RecoveryReport};
pub use volatile::{VolatileAllocator, MIN_CLASS_BYTES};
pub use zone_pool::{ZoneAppender, ZoneId};

use crate::error::PmemError;
use crate::offset::RegionOffset;
use crate::region::Region;
use layout::{Layout, PoolGeometry, HEADER_MAGIC_OFFSET, INDEX_WORD_BYTES};
use object_pool::PoolCore;

/// An open Halloc area. Share it (`Arc<Halloc>`); every method takes `&self`.
pub struct Halloc {
    region: Arc<Region>,
    base: RegionOffset,
    area_len_bytes: u64,
    used_len_bytes: u64,
    pools: Vec<PoolCore>,
    zones: PoolCore,
}

impl Halloc {
    /// Bytes a Halloc area needs for `config` (at a 256-byte aligned base).
    ///
    /// # Panics
    /// If the configured sizes overflow a u64.
    pub fn required_len_bytes(config: &HallocConfig) -> u64 {
        Layout::plan(RegionOffset(0), u64::MAX, config)
            .expect("halloc configuration sizes overflow")
            .used_len_bytes
    }

    /// Creates a fresh Halloc in `[base, base + len_bytes)` of `region`, every
    /// object free. Crash-safe: the magic word is cleared first and written
    /// last, so a crash during format leaves an area that `open` rejects.
    ///
    /// # Panics
    /// If `base` is not [`ARRAY_ALIGN_BYTES`] aligned or the configuration is
    /// invalid (an object size of 0, a zone size not a multiple of 64, more
    /// than [`MAX_OBJECT_COUNT`] objects in a pool).
    pub fn format(
        region: &Arc<Region>,
        base: RegionOffset,
        len_bytes: u64,
        config: &HallocConfig,
    ) -> Result<Halloc, PmemError> {
        config.assert_valid();
        assert!(
            base.is_aligned(ARRAY_ALIGN_BYTES),
            "halloc base {base} is not {ARRAY_ALIGN_BYTES}-byte aligned"
        );
        let area_end = base.0.checked_add(len_bytes);
        if !matches!(area_end, Some(end) if end <= region.len()) {
            return Err(PmemError::TooSmall {
                len_bytes: region.len(),
                needed_bytes: base.0.saturating_add(len_bytes),
                what: "the halloc area",
            });
        }
        let needed = Self::required_len_bytes(config);
        if needed > len_bytes {
            return Err(PmemError::TooSmall { len_bytes, needed_bytes: needed, what: "the halloc layout" });
        }
        let layout = Layout::plan(base, len_bytes, config).expect("planned above");
        region.store_u64_persist(base + HEADER_MAGIC_OFFSET, 0);
        layout.write_metadata(region);
        for g in layout.pools.iter().chain(std::iter::once(&layout.zones)) {
            write_initial_freelist(region, g);
        }
        let meta_end = layout.zones.meta.0 + POOL_META_BYTES;
        region.flush(base, meta_end - base.0);
        for g in layout.pools.iter().chain(std::iter::once(&layout.zones)) {
            if g.object_count > 0 {
                region.flush(g.index_words, g.index_words_len_bytes());
            }
        }
        region.fence();
        region.store_u64_persist(base + HEADER_MAGIC_OFFSET, HALLOC_MAGIC);
        Ok(Self::open(region, base)?.0)
    }

    /// Opens the Halloc at `base` and recovers every pool (freelist traversal,
    /// leak reclamation). Any inconsistency in the metadata or a freelist is
    /// `Corruption`; recovery of a freelist is bounded by its object count.
    pub fn open(region: &Arc<Region>, base: RegionOffset) -> Result<(Halloc, RecoveryReport), PmemError> {
        let started = Instant::now();
        let layout = Layout::decode(region, base)?;
        let mut pools = Vec::with_capacity(layout.pools.len());
        let mut reports = Vec::with_capacity(layout.pools.len() + 1);
        for (i, g) in layout.pools.iter().enumerate() {
            let (report, states) = recovery::recover_pool(region, g, PoolKind::Objects(PoolId(i as u32)))?;
            reports.push(report);
            pools.push(PoolCore::new(region.clone(), *g, states));
        }
        let (report, states) = recovery::recover_pool(region, &layout.zones, PoolKind::Zones)?;
        reports.push(report);
        let zones = PoolCore::new(region.clone(), layout.zones, states);
        let halloc = Halloc {
            region: region.clone(),
            base,
            area_len_bytes: layout.area_len_bytes,
            used_len_bytes: layout.used_len_bytes,
            pools,
            zones,
        };
        Ok((halloc, RecoveryReport::new(reports, started.elapsed())))
    }

    pub fn region(&self) -> &Arc<Region> {
        &self.region
    }

    pub fn base(&self) -> RegionOffset {
        self.base
    }

    /// The area reserved at format time.
    pub fn area_len_bytes(&self) -> u64 {
        self.area_len_bytes
    }

    /// The part of the area the layout uses (from the base).
    pub fn used_len_bytes(&self) -> u64 {
        self.used_len_bytes
    }

    pub fn pool_count(&self) -> usize {
        self.pools.len()
    }

    #[track_caller]
    fn pool(&self, pool: PoolId) -> &PoolCore {
        self.pools
            .get(pool.0 as usize)
            .unwrap_or_else(|| panic!("halloc has {} pools, no {pool}", self.pools.len()))
    }

    /// Slot size of the pool's objects (the requested size rounded up to 64).
    #[track_caller]
    pub fn object_size_bytes(&self, pool: PoolId) -> u64 {
        self.pool(pool).geo.object_size_bytes
    }

    #[track_caller]
    pub fn object_count(&self, pool: PoolId) -> u64 {
        self.pool(pool).geo.object_count
    }

    /// Objects on the pool's freelist now.
    #[track_caller]
    pub fn free_objects(&self, pool: PoolId) -> u64 {
        self.pool(pool).free_count()
    }

    /// **Get**: pops a free object (one flush, one fence). It is not committed:
    /// after a crash it is a leak that recovery reclaims. `OutOfSpace` when
    /// the pool is exhausted.
    #[track_caller]
    pub fn get(&self, pool: PoolId) -> Result<ObjectId, PmemError> {
        match self.pool(pool).get()? {
            Some(index) => Ok(ObjectId::new(pool, index)),
            None => Err(PmemError::OutOfSpace(format!(
                "halloc {pool}: all {} objects in use",
                self.pool(pool).geo.object_count
            ))),
        }
    }

    /// **Commit**: marks the object persistent with one atomic 8-byte store,
    /// one flush and one fence, whatever the object size. Call it after the
    /// object's contents and the application's reference to it are persisted.
    ///
    /// # Panics
    /// If the object is free (not obtained with `get`).
    #[track_caller]
    pub fn commit(&self, id: ObjectId) {
        self.pool(id.pool()).commit(id.index());
    }

    /// **Check**: whether the object is committed.
    #[track_caller]
    pub fn check(&self, id: ObjectId) -> bool {
        self.pool(id.pool()).check(id.index())
    }

    /// **Release**: resets the commit bit persistently, then pushes the object
    /// onto the freelist (two flush+fence rounds). Committed or only taken
    /// objects may be released.
    ///
    /// # Panics
    /// If the object is already free.
    #[track_caller]
    pub fn release(&self, id: ObjectId) {
        self.pool(id.pool()).release(&[id.index()]);
    }

    /// Release of many objects, one chain (two flush+fence rounds) per pool.
    #[track_caller]
    pub fn release_objects(&self, ids: &[ObjectId]) {
        let mut by_pool: std::collections::BTreeMap<PoolId, Vec<u32>> = std::collections::BTreeMap::new();
        for id in ids {
            by_pool.entry(id.pool()).or_default().push(id.index());
        }
        for (pool, indices) in by_pool {
            self.pool(pool).release(&indices);
        }
    }

    /// Where the object's bytes start (64-byte aligned).
    #[track_caller]
    pub fn object_offset(&self, id: ObjectId) -> RegionOffset {
        self.pool(id.pool()).geo.object_offset(id.index())
    }

    #[track_caller]
    fn assert_in_object(&self, id: ObjectId, offset_bytes: u64, len_bytes: u64) -> RegionOffset {
        let size = self.object_size_bytes(id.pool());
        assert!(
            offset_bytes.checked_add(len_bytes).is_some_and(|end| end <= size),
            "{id}: {len_bytes} bytes at {offset_bytes} exceed the object size {size}"
        );
        self.object_offset(id) + offset_bytes
    }

    /// Reads `buf.len()` bytes at `offset_bytes` inside the object.
    #[track_caller]
    pub fn read_object(&self, id: ObjectId, offset_bytes: u64, buf: &mut [u8]) {
        let at = self.assert_in_object(id, offset_bytes, buf.len() as u64);
        self.region.read(at, buf);
    }

    /// Plain store of `data` at `offset_bytes` inside the object; volatile
    /// until [`Halloc::persist_object`].
    #[track_caller]
    pub fn write_object(&self, id: ObjectId, offset_bytes: u64, data: &[u8]) {
        let at = self.assert_in_object(id, offset_bytes, data.len() as u64);
        self.region.write(at, data);
    }

    /// Flushes the object's whole slot and fences (before `commit`).
    #[track_caller]
    pub fn persist_object(&self, id: ObjectId) {
        self.region.persist(self.object_offset(id), self.object_size_bytes(id.pool()));
    }

    /// Validates an object id read from media (`Corruption` when it names no object).
    pub fn object_id_from_raw(&self, raw: u64) -> Result<ObjectId, PmemError> {
        let id = ObjectId::from_raw_unchecked(raw);
        match self.pools.get(id.pool().0 as usize) {
            Some(p) if u64::from(id.index()) < p.geo.object_count => Ok(id),
            _ => Err(PmemError::Corruption {
                offset: self.base.0,
                what: format!("object id {raw:#x} names no object"),
            }),
        }
    }

    /// The pool's freelist in order from `hd` (inspection; bounded traversal).
    #[track_caller]
    pub fn free_list(&self, pool: PoolId) -> Result<Vec<ObjectId>, PmemError> {
        Ok(self.pool(pool).free_list()?.into_iter().map(|i| ObjectId::new(pool, i)).collect())
    }

    /// Planted bug for the crash test of `strata_crashtest::halloc_pmem`
    /// (see `object_pool`): a crash-test hook, compiled only for tests and
    /// under the `crashtest` feature, which only `strata-crashtest` turns on.
    #[cfg(any(test, feature = "crashtest"))]
    pub fn release_push_before_reset(&self, id: ObjectId) {
        self.pool(id.pool()).release_push_before_reset(id.index());
    }
}

/// Format's freelist: every object linked in index order, `hd` at object 0.
fn write_initial_freelist(region: &Region, g: &PoolGeometry) {
    let n = g.object_count;
    let mut words = Vec::with_capacity((n * INDEX_WORD_BYTES) as usize);
    for i in 0..n {
        let link = if i + 1 < n { i + 2 } else { 0 };
        words.extend_from_slice(&link.to_le_bytes());
    }
    region.write(g.index_words, &words);
    region.store_u64(g.hd_offset(), u64::from(n > 0));
}

#[cfg(test)]
mod tests {
    use super::layout::*;
    use super::test_support::small_halloc;
    use super::*;

    #[test]
    fn format_then_open_sees_every_object_free() {
        let (region, h) = small_halloc(1024, 3);
        assert_eq!(h.pool_count(), 2);
        assert_eq!((h.object_size_bytes(PoolId(1)), h.object_count(PoolId(1))), (256, 4));
        assert_eq!((h.free_objects(PoolId(0)), h.free_zones()), (8, 3));
        assert_eq!(h.free_list(PoolId(0)).unwrap()[0], ObjectId::new(PoolId(0), 0));
        drop(h);
        let (h, report) = Halloc::open(&region, RegionOffset(0)).unwrap();
        assert_eq!((report.objects_scanned, report.leaks_reclaimed), (8 + 4 + 3, 0));
        assert_eq!(h.used_len_bytes(), region.len());
    }

    #[test]
    fn objects_are_aligned_disjoint_and_inside_the_area() {
        let (region, h) = small_halloc(1024, 3);
        let mut spans = Vec::new();
        for p in 0..2 {
            let pool = PoolId(p);
            while let Ok(id) = h.get(pool) {
                let at = h.object_offset(id);
                assert!(at.is_aligned(OBJECT_ALIGN_BYTES), "{id} at {at}");
                spans.push((at.0, at.0 + h.object_size_bytes(pool)));
            }
        }
        spans.sort_unstable();
        assert_eq!(spans.len(), 12);
        assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0));
        assert!(spans.last().unwrap().1 <= region.len());
    }

    #[test]
    fn halloc_can_share_a_region_at_a_base_offset() {
        let region = Arc::new(Region::sim(64 << 10));
        region.write_persist(RegionOffset(0), b"other structure");
        let config = HallocConfig::new(vec![PoolSpec { object_size_bytes: 128, object_count: 10 }], 4096, 4);
        let base = RegionOffset(4096);
        let h = Halloc::format(&region, base, 32 << 10, &config).unwrap();
        let id = h.get(PoolId(0)).unwrap();
        assert!(h.object_offset(id).0 >= base.0 && h.object_offset(id).0 < base.0 + (32 << 10));
        assert_eq!(region.read_vec(RegionOffset(0), 15), b"other structure");
        assert_eq!(h.area_len_bytes(), 32 << 10);
        assert!(Halloc::open(&region, RegionOffset(0)).is_err(), "no halloc at offset 0");
    }

    #[test]
    fn format_reports_a_too_small_area() {
        let region = Arc::new(Region::sim(4096));
        let config = HallocConfig::new(vec![PoolSpec { object_size_bytes: 64, object_count: 100 }], 1024, 2);
        let err = Halloc::format(&region, RegionOffset(0), 4096, &config).err().expect("too small");
        assert!(matches!(err, PmemError::TooSmall { what: "the halloc layout", .. }), "{err}");
        let err = Halloc::format(&region, RegionOffset(256), 8192, &config).err().expect("beyond region");
        assert!(matches!(err, PmemError::TooSmall { what: "the halloc area", .. }), "{err}");
    }

    #[test]
    fn object_helpers_read_write_and_persist_inside_the_slot() {
        let (region, h) = small_halloc(1024, 1);
        let id = h.get(PoolId(1)).unwrap();
        h.write_object(id, 250, b"abcdef");
        h.persist_object(id);
        h.commit(id);
        let persisted = region.as_sim().unwrap().persistent_image();
        let at = h.object_offset(id).0 as usize + 250;
        assert_eq!(&persisted[at..at + 6], b"abcdef");
        let mut buf = [0u8; 6];
        h.read_object(id, 250, &mut buf);
        assert_eq!(&buf, b"abcdef");
    }

    #[test]
    #[should_panic(expected = "exceed the object size")]
    fn object_helpers_refuse_to_cross_the_slot() {
        let (_, h) = small_halloc(1024, 1);
        let id = h.get(PoolId(0)).unwrap();
        h.write_object(id, 60, &[0; 8]);
    }

    #[test]
    fn object_ids_from_media_are_validated() {
        let (_, h) = small_halloc(1024, 1);
        assert!(h.object_id_from_raw(ObjectId::new(PoolId(1), 3).to_raw()).is_ok());
        assert!(h.object_id_from_raw(ObjectId::new(PoolId(1), 4).to_raw()).is_err());
        assert!(h.object_id_from_raw(ObjectId::new(PoolId(2), 0).to_raw()).is_err());
    }

    #[test]
    fn exhausted_pool_is_out_of_space_and_release_batch_refills() {
        let (_, h) = small_halloc(1024, 1);
        let ids: Vec<_> = (0..4).map(|_| h.get(PoolId(1)).unwrap()).collect();
        assert!(matches!(h.get(PoolId(1)), Err(PmemError::OutOfSpace(_))));
        h.commit(ids[0]);
        h.release_objects(&ids);
        assert_eq!(h.free_objects(PoolId(1)), 4);
        assert_eq!(h.free_list(PoolId(1)).unwrap().len(), 4);
    }

    #[test]
    fn commit_costs_one_flush_and_one_fence() {
        let region = Arc::new(Region::anonymous(1 << 20).unwrap());
        let config = HallocConfig::new(
            vec![
                PoolSpec { object_size_bytes: 64, object_count: 4 },
                PoolSpec { object_size_bytes: 8192, object_count: 4 },
            ],
            64 << 10,
            2,
        );
        let h = Halloc::format(&region, RegionOffset(0), 1 << 20, &config).unwrap();
        for pool in [PoolId(0), PoolId(1)] {
            let id = h.get(pool).unwrap();
            let before = crate::thread_persist_stats();
            h.commit(id);
            let d = crate::thread_persist_stats() - before;
            assert_eq!((d.lines_flushed, d.fences), (1, 1), "{pool} of {} bytes", h.object_size_bytes(pool));
            let before = crate::thread_persist_stats();
            h.release(id);
            let d = crate::thread_persist_stats() - before;
            assert_eq!((d.lines_flushed, d.fences), (2, 2), "release: reset+link, then hd");
        }
    }

    #[test]
    fn concurrent_get_commit_release_keeps_the_pool_consistent() {
        let region = Arc::new(Region::anonymous(1 << 20).unwrap());
        let config = HallocConfig::new(vec![PoolSpec { object_size_bytes: 64, object_count: 64 }], 4096, 8);
        let h = Arc::new(Halloc::format(&region, RegionOffset(0), 1 << 20, &config).unwrap());
        let kept: Vec<Vec<ObjectId>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    let h = h.clone();
                    s.spawn(move || {
                        let mut mine = Vec::new();
                        for round in 0..200 {
                            let id = h.get(PoolId(0)).unwrap();
                            h.region().write_persist(h.object_offset(id), &[t as u8; 64]);
                            h.commit(id);
                            mine.push(id);
                            if round % 3 != 0 || mine.len() > 10 {
                                let victim = mine.swap_remove(0);
                                assert_eq!(
                                    h.region().read_vec(h.object_offset(victim), 64),
                                    vec![t as u8; 64]
                                );
                                h.release(victim);
                            }
                        }
                        mine
                    })
                })
                .collect();
            handles.into_iter().map(|j| j.join().unwrap()).collect()
        });
        let committed: Vec<ObjectId> = kept.into_iter().flatten().collect();
        assert_eq!(h.free_objects(PoolId(0)), 64 - committed.len() as u64);
        let free = h.free_list(PoolId(0)).unwrap();
        assert_eq!(free.len() + committed.len(), 64);
        assert!(committed.iter().all(|&id| h.check(id) && !free.contains(&id)));
        drop(h);
        let (_, report) = Halloc::open(&region, RegionOffset(0)).unwrap();
        assert_eq!(report.leaks_reclaimed, 0);
    }

    #[test]
    fn open_rejects_bad_magic_version_and_base() {
        let (region, h) = small_halloc(1024, 1);
        drop(h);
        let corrupt = |r: &Arc<Region>, base: u64| {
            matches!(Halloc::open(r, RegionOffset(base)), Err(PmemError::Corruption { .. }))
        };
        assert!(corrupt(&region, 64), "misaligned base");
        assert!(corrupt(&region, region.len().next_multiple_of(256)), "base beyond the region");
        region.write_u32(RegionOffset(HEADER_VERSION_OFFSET), HALLOC_VERSION + 1);
        assert!(corrupt(&region, 0), "unknown version");
        region.write_u32(RegionOffset(HEADER_VERSION_OFFSET), HALLOC_VERSION);
        assert!(Halloc::open(&region, RegionOffset(0)).is_ok());
        region.store_u64(RegionOffset(HEADER_MAGIC_OFFSET), HALLOC_MAGIC ^ 1);
        assert!(corrupt(&region, 0), "bad magic");
    }

    #[test]
    fn open_rejects_out_of_range_metadata() {
        let (region, h) = small_halloc(1024, 2);
        let g = h.pools[1].geo;
        drop(h);
        let cases: [(RegionOffset, u64); 6] = [
            (g.hd_offset(), 5),
            (g.meta + META_OBJECT_COUNT_OFFSET, 1 << 40),
            (g.meta + META_OBJECTS_OFFSET, region.len()),
            (g.meta + META_INDEX_WORDS_OFFSET, 256 + 8),
            (g.meta + META_OBJECT_SIZE_OFFSET, 100),
            (RegionOffset(HEADER_AREA_LEN_OFFSET), region.len() + 8),
        ];
        for (at, bad) in cases {
            let good = region.load_u64(at);
            region.store_u64(at, bad);
            let err = Halloc::open(&region, RegionOffset(0)).err();
            assert!(matches!(err, Some(PmemError::Corruption { .. })), "{bad} at {at}: {err:?}");
            region.store_u64(at, good);
        }
        region.store_u64(g.meta + META_INDEX_WORDS_OFFSET, 0);
        let err = Halloc::open(&region, RegionOffset(0)).err().expect("overlap with the header");
        assert!(err.to_string().contains("overlap"), "{err}");
    }

    /// Random corruption of metadata and index words: `open` returns `Ok` or
    /// `Corruption`, never panics, never hangs.
    #[test]
    fn open_never_panics_on_corrupted_metadata() {
        use rand::{Rng, SeedableRng};
        let (region, h) = small_halloc(512, 4);
        for _ in 0..3 {
            let id = h.get(PoolId(0)).unwrap();
            h.commit(id);
        }
        let z = h.get_zone().unwrap();
        h.commit_zone(z);
        let metadata_end = h.zones.geo.objects.0;
        drop(h);
        let image = region.read_vec(RegionOffset(0), region.len() as usize);
        let mut opened = 0;
        for seed in 0..3000u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut bytes = image.clone();
            for _ in 0..rng.gen_range(1..=3) {
                let word = rng.gen_range(0..metadata_end / 8) as usize * 8;
                let value: u64 = match rng.gen_range(0..4) {
                    0 => rng.gen(),
                    1 => rng.gen_range(0..16),
                    2 => {
                        u64::from_le_bytes(bytes[word..word + 8].try_into().unwrap())
                            ^ (1 << rng.gen_range(0..64))
                    }
                    _ => COMMIT_BIT | rng.gen_range(0..16),
                };
                bytes[word..word + 8].copy_from_slice(&value.to_le_bytes());
            }
            let r = Arc::new(Region::sim_from_image(bytes));
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                match Halloc::open(&r, RegionOffset(0)) {
                    Ok((h, _)) => {
                        for p in 0..h.pool_count() as u32 {
                            h.free_list(PoolId(p)).unwrap();
                            while h.get(PoolId(p)).is_ok() {}
                        }
                        h.free_zone_list().unwrap();
                        true
                    }
                    Err(PmemError::Corruption { .. }) => false,
                    Err(e) => panic!("unexpected error kind {e}"),
                }
            }));
            match outcome {
                Ok(true) => opened += 1,
                Ok(false) => {}
                Err(_) => panic!("seed {seed}: open panicked on a corrupted image"),
            }
        }
        assert!(opened > 0 && opened < 3000, "both outcomes occur ({opened} opened)");
    }

    /// Every constant of the format appears in `docs/format/halloc.md` with
    /// the same value, and every field table row has the code's offset.
    #[test]
    fn format_doc_agrees_with_code() {
        let doc = include_str!("../../../../docs/format/halloc.md");
        let table = |heading: &str| -> Vec<Vec<String>> {
            let start = doc.find(heading).unwrap_or_else(|| panic!("doc lacks section {heading}"));
            let rest = &doc[start + heading.len()..];
            let end = rest.find("\n#").unwrap_or(rest.len());
            rest[..end]
                .lines()
                .filter(|l| l.starts_with('|') && !l.starts_with("|-") && !l.starts_with("| -"))
                .map(|l| {
                    l.trim_matches('|').split('|').map(|c| c.trim().trim_matches('`').to_string()).collect()
                })
                .collect()
        };
        let constants = table("## Constants");
        let value_of = |name: &str| -> String {
            constants
                .iter()
                .find(|row| row[0] == name)
                .unwrap_or_else(|| panic!("constant {name} missing from the doc"))[1]
                .clone()
        };
        assert_eq!(value_of("HALLOC_MAGIC"), format!("{HALLOC_MAGIC:#018x}"));
        assert_eq!(value_of("HALLOC_VERSION"), HALLOC_VERSION.to_string());
        assert_eq!(value_of("COMMIT_BIT"), format!("{COMMIT_BIT:#018x}"));
        assert_eq!(value_of("LINK_MASK"), format!("{LINK_MASK:#018x}"));
        assert_eq!(value_of("HEADER_BYTES"), HEADER_BYTES.to_string());
        assert_eq!(value_of("POOL_META_BYTES"), POOL_META_BYTES.to_string());
        assert_eq!(value_of("INDEX_WORD_BYTES"), INDEX_WORD_BYTES.to_string());
        assert_eq!(value_of("OBJECT_ALIGN_BYTES"), OBJECT_ALIGN_BYTES.to_string());
        assert_eq!(value_of("ARRAY_ALIGN_BYTES"), ARRAY_ALIGN_BYTES.to_string());
        assert_eq!(value_of("ZONE_POOL_ID"), format!("{ZONE_POOL_ID:#010x}"));
        assert_eq!(value_of("POOL_KIND_OBJECTS"), POOL_KIND_OBJECTS.to_string());
        assert_eq!(value_of("POOL_KIND_ZONES"), POOL_KIND_ZONES.to_string());
        assert_eq!(value_of("MAX_OBJECT_COUNT"), MAX_OBJECT_COUNT.to_string());
        assert_eq!(&HALLOC_MAGIC.to_le_bytes(), b"STHALLOC");
        assert!(doc.contains("`STHALLOC`"), "the doc spells the magic in ASCII");

        let check_fields = |heading: &str, fields: &[(&str, u64, u64)], total: u64| {
            let rows = table(heading);
            let mut covered = 0;
            for &(name, offset, size) in fields {
                let row = rows
                    .iter()
                    .find(|r| r.get(2).map(String::as_str) == Some(name))
                    .unwrap_or_else(|| panic!("{heading}: field {name} missing from the doc"));
                assert_eq!(row[0], offset.to_string(), "{heading}: offset of {name}");
                assert_eq!(row[1], size.to_string(), "{heading}: size of {name}");
                covered += size;
            }
            assert_eq!(rows.len() - 1, fields.len(), "{heading}: the doc has exactly these fields");
            assert_eq!(covered, total, "{heading}: fields cover the block");
        };
        check_fields(
            "## Header",
            &[
                ("magic", HEADER_MAGIC_OFFSET, 8),
                ("version", HEADER_VERSION_OFFSET, 4),
                ("pool_count", HEADER_POOL_COUNT_OFFSET, 4),
                ("area_len_bytes", HEADER_AREA_LEN_OFFSET, 8),
                ("pool_table_offset", HEADER_POOL_TABLE_OFFSET, 8),
                ("zone_size_bytes", HEADER_ZONE_SIZE_OFFSET, 8),
                ("zone_count", HEADER_ZONE_COUNT_OFFSET, 8),
                ("zone_pool_meta_offset", HEADER_ZONE_META_OFFSET, 8),
                ("reserved", HEADER_RESERVED_OFFSET, 8),
            ],
            HEADER_BYTES,
        );
        check_fields(
            "## Pool metadata block",
            &[
                ("pool_id", META_POOL_ID_OFFSET, 4),
                ("kind", META_KIND_OFFSET, 4),
                ("object_size_bytes", META_OBJECT_SIZE_OFFSET, 8),
                ("object_count", META_OBJECT_COUNT_OFFSET, 8),
                ("index_words_offset", META_INDEX_WORDS_OFFSET, 8),
                ("objects_offset", META_OBJECTS_OFFSET, 8),
                ("hd", META_HD_OFFSET, 8),
                ("reserved", META_RESERVED_OFFSET, 16),
            ],
            POOL_META_BYTES,
        );
    }
}
