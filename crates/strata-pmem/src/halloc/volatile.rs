//! The volatile memory manager on the zone pool (lsm-pmem.txt section 3.4.3,
//! "Unified Memory Allocation"): transient allocations served from PMem zones
//! that are taken with `get` and never committed, so that one PMem pool holds
//! both persistent and volatile data, and every volatile zone is reclaimed by
//! recovery after a restart.
//!
//! The paper wraps jemalloc; this is a small hand-written size-class
//! allocator with DRAM metadata only. Size classes are the powers of two from
//! [`MIN_CLASS_BYTES`] up to the zone size (plus the zone size itself when it
//! is not a power of two). Each zone serves one class and is cut into equal
//! units; a DRAM free list per zone and a per-class set of zones with free
//! units make `alloc` and `free` O(log zones). An empty zone goes back to the
//! zone pool, except that each class keeps one empty zone cached to avoid
//! get/release churn ([`VolatileAllocator::release_empty_zones`] returns
//! those too). Dropping the allocator releases all its zones.
//!
//! Limitation (stated by the paper): a volatile object cannot exceed one
//! zone, because a zone is the only contiguous memory the pool guarantees;
//! `alloc` of more than the zone size returns `None`. Split larger objects.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::Mutex;

use super::zone_pool::ZoneId;
use super::Halloc;
use crate::offset::RegionOffset;

/// The smallest unit handed out.
pub const MIN_CLASS_BYTES: u64 = 16;

/// One zone cut into units of one class.
struct Slab {
    class: usize,
    /// Unit indices not in use; popped from the end.
    free_units: Vec<u32>,
    in_use: Vec<bool>,
}

#[derive(Default)]
struct State {
    slabs: BTreeMap<ZoneId, Slab>,
    /// Per class: zones with at least one free unit.
    available: Vec<BTreeSet<ZoneId>>,
    allocated_bytes: u64,
}

/// A size-class allocator over uncommitted zones. Thread-safe (one mutex).
pub struct VolatileAllocator {
    halloc: Arc<Halloc>,
    class_sizes_bytes: Vec<u64>,
    state: Mutex<State>,
}

impl VolatileAllocator {
    pub fn new(halloc: Arc<Halloc>) -> Self {
        let zone = halloc.zone_size_bytes();
        let mut class_sizes_bytes = Vec::new();
        let mut c = MIN_CLASS_BYTES;
        while c <= zone {
            class_sizes_bytes.push(c);
            c *= 2;
        }
        if class_sizes_bytes.last() != Some(&zone) {
            class_sizes_bytes.push(zone);
        }
        let state = State { available: vec![BTreeSet::new(); class_sizes_bytes.len()], ..State::default() };
        VolatileAllocator { halloc, class_sizes_bytes, state: Mutex::new(state) }
    }

    /// Unit sizes, ascending; the last is the zone size.
    pub fn class_sizes_bytes(&self) -> &[u64] {
        &self.class_sizes_bytes
    }

    fn class_of(&self, size_bytes: u64) -> Option<usize> {
        let size = size_bytes.max(1);
        self.class_sizes_bytes.iter().position(|&c| c >= size)
    }

    /// The unit size `alloc(size_bytes)` hands out, `None` above the zone size.
    pub fn unit_size_bytes(&self, size_bytes: u64) -> Option<u64> {
        self.class_of(size_bytes).map(|c| self.class_sizes_bytes[c])
    }

    /// A unit of at least `size_bytes` (at least 16-byte aligned). `None` when
    /// `size_bytes` exceeds the zone size or the zone pool is exhausted.
    pub fn alloc(&self, size_bytes: u64) -> Option<RegionOffset> {
        let class = self.class_of(size_bytes)?;
        let unit = self.class_sizes_bytes[class];
        let mut s = self.state.lock();
        let zone = match s.available[class].first() {
            Some(&z) => z,
            None => {
                let z = self.halloc.get_zone().ok()?;
                let units = (self.halloc.zone_size_bytes() / unit) as u32;
                let slab = Slab {
                    class,
                    free_units: (0..units).rev().collect(),
                    in_use: vec![false; units as usize],
                };
                s.slabs.insert(z, slab);
                s.available[class].insert(z);
                z
            }
        };
        let slab = s.slabs.get_mut(&zone).expect("available zone has a slab");
        let u = slab.free_units.pop().expect("available zone has a free unit");
        slab.in_use[u as usize] = true;
        let now_full = slab.free_units.is_empty();
        if now_full {
            s.available[class].remove(&zone);
        }
        s.allocated_bytes += unit;
        Some(self.halloc.zone_offset(zone) + u64::from(u) * unit)
    }

    /// Frees a unit returned by `alloc(size_bytes)` with the same size.
    ///
    /// # Panics
    /// If `offset` was not allocated here with a size of the same class, or
    /// is freed twice.
    #[track_caller]
    pub fn free(&self, offset: RegionOffset, size_bytes: u64) {
        let class = self.class_of(size_bytes).expect("free of a size no allocation can have");
        let unit = self.class_sizes_bytes[class];
        let zone =
            self.halloc.zone_containing(offset).unwrap_or_else(|| panic!("free of {offset}: not in a zone"));
        let zone_start = self.halloc.zone_offset(zone);
        let mut s = self.state.lock();
        let s = &mut *s;
        let slab =
            s.slabs.get_mut(&zone).unwrap_or_else(|| panic!("free of {offset}: {zone} is not volatile"));
        assert_eq!(slab.class, class, "free of {offset} with size {size_bytes} of another class");
        let rel = offset.0 - zone_start.0;
        assert!(rel.is_multiple_of(unit), "free of {offset}: not the start of a unit");
        let u = (rel / unit) as u32;
        assert!(slab.in_use[u as usize], "double free of {offset}");
        slab.in_use[u as usize] = false;
        slab.free_units.push(u);
        s.allocated_bytes -= unit;
        let all_free = slab.free_units.len() == slab.in_use.len();
        s.available[class].insert(zone);
        if all_free && s.available[class].len() > 1 {
            s.available[class].remove(&zone);
            s.slabs.remove(&zone);
            self.halloc.release_zone(zone);
        }
    }

    /// Returns every zone with no unit in use to the zone pool; their count.
    pub fn release_empty_zones(&self) -> usize {
        let mut s = self.state.lock();
        let empty: Vec<ZoneId> = s
            .slabs
            .iter()
            .filter(|(_, slab)| slab.free_units.len() == slab.in_use.len())
            .map(|(&z, _)| z)
            .collect();
        for z in &empty {
            let slab = s.slabs.remove(z).expect("listed");
            s.available[slab.class].remove(z);
        }
        if !empty.is_empty() {
            self.halloc.release_zones(&empty);
        }
        empty.len()
    }

    /// Zones this allocator holds (taken, uncommitted).
    pub fn zones_held(&self) -> usize {
        self.state.lock().slabs.len()
    }

    /// Sum of the unit sizes in use.
    pub fn allocated_bytes(&self) -> u64 {
        self.state.lock().allocated_bytes
    }
}

impl Drop for VolatileAllocator {
    /// Releases every zone: volatile memory dies with its manager.
    fn drop(&mut self) {
        let zones: Vec<ZoneId> = self.state.get_mut().slabs.keys().copied().collect();
        if !zones.is_empty() {
            self.halloc.release_zones(&zones);
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::super::test_support::small_halloc;
    use super::*;

    fn allocator(zone_size_bytes: u64, zones: u64) -> (Arc<crate::Region>, Arc<Halloc>, VolatileAllocator) {
        let (region, h) = small_halloc(zone_size_bytes, zones);
        let h = Arc::new(h);
        (region, h.clone(), VolatileAllocator::new(h))
    }

    #[test]
    fn classes_run_up_to_the_zone_size() {
        let (_, _, v) = allocator(1024, 2);
        assert_eq!(v.class_sizes_bytes(), &[16, 32, 64, 128, 256, 512, 1024]);
        let (_, _, v) = allocator(1536, 2);
        assert_eq!(*v.class_sizes_bytes().last().unwrap(), 1536);
        assert_eq!(v.unit_size_bytes(1025), Some(1536));
        assert_eq!(v.unit_size_bytes(0), Some(16));
    }

    #[test]
    fn a_volatile_object_cannot_exceed_one_zone() {
        let (_, _, v) = allocator(1024, 2);
        assert!(v.alloc(1024).is_some());
        assert_eq!(v.alloc(1025), None);
    }

    #[test]
    fn units_are_disjoint_inside_uncommitted_zones() {
        let (_, h, v) = allocator(1024, 5);
        let mut got: Vec<(u64, u64)> = Vec::new();
        for size in [10, 16, 17, 100, 100, 300, 1000] {
            let at = v.alloc(size).unwrap();
            let unit = v.unit_size_bytes(size).unwrap();
            assert!(at.is_aligned(16));
            let zone = h.zone_containing(at).unwrap();
            assert!(!h.check_zone(zone), "volatile zones are never committed");
            assert!(h.zone_containing(at + (unit - 1)) == Some(zone), "a unit stays inside its zone");
            got.push((at.0, at.0 + unit));
        }
        got.sort_unstable();
        assert!(got.windows(2).all(|w| w[0].1 <= w[1].0), "{got:?}");
        assert_eq!(v.allocated_bytes(), 16 + 16 + 32 + 128 + 128 + 512 + 1024);
    }

    #[test]
    fn exhausted_zone_pool_gives_none() {
        let (_, _, v) = allocator(1024, 2);
        assert!(v.alloc(1000).is_some());
        assert!(v.alloc(1000).is_some());
        assert_eq!(v.alloc(8), None);
    }

    #[test]
    fn free_returns_units_and_zones() {
        let (_, h, v) = allocator(256, 4);
        let units: Vec<_> = (0..12).map(|_| v.alloc(64).unwrap()).collect();
        assert_eq!((v.zones_held(), h.free_zones()), (3, 1));
        for &u in &units {
            v.free(u, 64);
        }
        assert_eq!(v.allocated_bytes(), 0);
        assert_eq!(v.zones_held(), 1, "one empty zone stays cached for its class");
        assert_eq!(v.release_empty_zones(), 1);
        assert_eq!(h.free_zones(), 4);
        let again = v.alloc(64).unwrap();
        v.free(again, 64);
        drop(v);
        assert_eq!(h.free_zones(), 4, "drop releases the cached zone");
    }

    #[test]
    #[should_panic(expected = "double free")]
    fn double_free_panics() {
        let (_, _, v) = allocator(256, 2);
        let a = v.alloc(64).unwrap();
        let _b = v.alloc(64).unwrap();
        v.free(a, 64);
        v.free(a, 64);
    }

    #[test]
    fn volatile_zones_are_reclaimed_by_recovery() {
        let (region, h, v) = allocator(256, 4);
        for _ in 0..9 {
            v.alloc(64).unwrap();
        }
        assert_eq!(v.zones_held(), 3);
        std::mem::forget(v); // a crash: no drop, no release
        drop(h);
        let (h, report) = Halloc::open(&region, RegionOffset(0)).unwrap();
        assert_eq!(report.pools.last().unwrap().leaks_reclaimed, 3);
        assert_eq!(h.free_zones(), 4);
    }

    #[test]
    fn random_alloc_free_against_a_model() {
        for seed in 0..20u64 {
            let (_, h, v) = allocator(512, 6);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut live: Vec<(RegionOffset, u64)> = Vec::new();
            for step in 0..400 {
                if live.is_empty() || rng.gen_bool(0.55) {
                    let size = rng.gen_range(1..=600);
                    match v.alloc(size) {
                        Some(at) => {
                            let unit = v.unit_size_bytes(size).unwrap();
                            for &(o, s) in &live {
                                let u = v.unit_size_bytes(s).unwrap();
                                assert!(
                                    at.0 + unit <= o.0 || o.0 + u <= at.0,
                                    "seed {seed} step {step}: overlap"
                                );
                            }
                            live.push((at, size));
                        }
                        None => assert!(
                            size > 512 || h.free_zones() == 0,
                            "seed {seed} step {step}: spurious None"
                        ),
                    }
                } else {
                    let (at, size) = live.swap_remove(rng.gen_range(0..live.len()));
                    v.free(at, size);
                }
                let want: u64 = live.iter().map(|&(_, s)| v.unit_size_bytes(s).unwrap()).sum();
                assert_eq!(v.allocated_bytes(), want, "seed {seed} step {step}");
                assert_eq!(v.zones_held() as u64 + h.free_zones(), 6, "seed {seed} step {step}");
            }
        }
    }
}
