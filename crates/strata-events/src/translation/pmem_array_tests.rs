//! Tests of the PMem translation array: area checks, batches of 32 slots
//! with one fence, "at most 32 translations need to be restored", a crash
//! image after every persist, header damage.

use std::path::Path;
use std::sync::Arc;

use strata_media::fs::Tear;
use strata_media::FaultFs;
use strata_pmem::{Region, RegionOffset};

use super::*;
use crate::block_store::sample_node;

fn path() -> &'static Path {
    Path::new("pmem.blocks")
}

const LEAVES: u64 = 300;
const INDEXES: u64 = 40;

fn area() -> u64 {
    PmemArrayTranslation::footprint_bytes(LEAVES, INDEXES).unwrap()
}

fn format(region: &Arc<Region>) -> PmemArrayTranslation {
    PmemArrayTranslation::create(region.clone(), RegionOffset(0), area(), LEAVES, INDEXES).unwrap()
}

#[test]
fn the_area_must_be_aligned_large_enough_and_formatted() {
    assert_eq!(area(), 256 + 2400_u64.div_ceil(256) * 256 + 320_u64.div_ceil(256) * 256);
    let region = Arc::new(Region::sim(area() + 256));
    let err = PmemArrayTranslation::create(region.clone(), RegionOffset(64), area(), LEAVES, INDEXES);
    assert!(matches!(err, Err(EventError::InvalidInput(_))), "unaligned base");
    let err = PmemArrayTranslation::create(region.clone(), RegionOffset(0), area() - 256, LEAVES, INDEXES);
    assert!(matches!(err, Err(EventError::Full { .. })), "area too small");
    let err = PmemArrayTranslation::create(region.clone(), RegionOffset(512), area(), LEAVES, INDEXES);
    assert!(matches!(err, Err(EventError::InvalidInput(_))), "beyond the region");
    let fs = FaultFs::new();
    let store = BlockStore::create(&fs, path()).unwrap();
    let err = PmemArrayTranslation::recover(region.clone(), RegionOffset(0), area(), &store).err().unwrap();
    assert!(err.is_corruption() && err.to_string().contains("never formatted"), "{err}");
    let t = format(&region);
    assert_eq!((t.capacity(NodeKind::Leaf), t.capacity(NodeKind::Index)), (LEAVES, INDEXES));
    // A damaged header is corruption, not a guess.
    region.write(RegionOffset(PMEM_HDR_OFFSET_LEAF_CAPACITY), &[9]);
    let err = PmemArrayTranslation::recover(region.clone(), RegionOffset(0), area(), &store).err().unwrap();
    assert!(err.is_corruption() && err.to_string().contains("CRC"), "{err}");
}

#[test]
fn durable_updates_persist_in_batches_of_32_slots_with_one_fence() {
    let fs = FaultFs::new();
    let region = Arc::new(Region::sim(area()));
    let mut store = BlockStore::create(&fs, path()).unwrap();
    let mut t = format(&region);
    let addrs: Vec<PhysAddr> =
        (0..70).map(|i| store.append(NodeId::leaf(i), &sample_node(i, 50, false)).unwrap()).collect();
    // Records not yet durable: nothing may reach PMem.
    for (i, addr) in addrs.iter().enumerate().take(40) {
        t.set(&mut store, NodeId::leaf(i as u64), *addr).unwrap();
    }
    assert_eq!(t.stats().batches_persisted, 0);
    assert_eq!(t.stats().pending, 40);
    assert_eq!(t.get(&store, NodeId::leaf(5)).unwrap(), Some(addrs[5]), "pending updates are visible");
    store.sync().unwrap();
    let fences_before = region.stats().fences;
    for (i, addr) in addrs.iter().enumerate().skip(40) {
        t.set(&mut store, NodeId::leaf(i as u64), *addr).unwrap();
    }
    let s = t.stats();
    assert_eq!((s.batches_persisted, s.slots_persisted), (1, 41), "the durable prefix went out at once");
    assert_eq!(region.stats().fences - fences_before, 1);
    assert_eq!(s.pending, 29);
    t.sync(&mut store).unwrap();
    let s = t.stats();
    assert_eq!((s.batches_persisted, s.pending), (2, 0));
    // Sequential updates, one durable record each: exactly one 256-byte group per batch.
    let more: Vec<PhysAddr> =
        (70..134).map(|i| store.append(NodeId::leaf(i), &sample_node(i, 50, false)).unwrap()).collect();
    store.sync().unwrap();
    let (lines_before, fences_before) = (t.stats().lines_flushed, t.stats().fences);
    for (i, addr) in more.iter().enumerate() {
        t.set(&mut store, NodeId::leaf(70 + i as u64), *addr).unwrap();
    }
    let s = t.stats();
    assert_eq!(s.fences - fences_before, 2, "64 updates, two batches");
    assert!(
        s.lines_flushed - lines_before <= 2 * 6,
        "slots of a batch span at most 5 lines plus the header line"
    );
    for (i, addr) in addrs.iter().chain(&more).enumerate() {
        assert_eq!(t.get(&store, NodeId::leaf(i as u64)).unwrap(), Some(*addr));
    }
}

#[test]
fn a_crash_restores_at_most_32_translations_from_the_block_file() {
    let fs = FaultFs::new();
    let region = Arc::new(Region::sim(area()));
    let mut store = BlockStore::create(&fs, path()).unwrap();
    let mut t = format(&region);
    let mut addrs = Vec::new();
    for i in 0..250 {
        let addr = store.append(NodeId::leaf(i), &sample_node(i, 200, false)).unwrap();
        t.set(&mut store, NodeId::leaf(i), addr).unwrap();
        store.sync().unwrap(); // durable, acknowledged; its slot may still be pending
        addrs.push(addr);
    }
    let pending = t.stats().pending;
    assert!(pending > 0 && pending <= PMEM_BATCH_SLOTS as u64, "{pending}");
    let image = Arc::new(Region::sim_from_image(region.as_sim().unwrap().persistent_image()));
    let crashed = fs.crash(Tear::None);
    let (store, _) = BlockStore::open(&crashed, path()).unwrap();
    let (t, report) = PmemArrayTranslation::recover(image, RegionOffset(0), area(), &store).unwrap();
    assert_eq!(report.translations_restored, pending, "{report:?}");
    assert!(report.records_scanned <= 2 * PMEM_BATCH_SLOTS as u64, "{report:?}");
    for (i, addr) in addrs.iter().enumerate() {
        assert_eq!(t.get(&store, NodeId::leaf(i as u64)).unwrap(), Some(*addr), "leaf {i}");
    }
}

/// A crash right after every persist of the translation (and at the end):
/// every node synced so far keeps its translation.
#[test]
fn a_crash_after_every_persist_keeps_every_synced_translation() {
    let fs = FaultFs::new();
    let region = Arc::new(Region::sim(area()));
    let mut store = BlockStore::create(&fs, path()).unwrap();
    let mut t = format(&region);
    let mut synced = Vec::new();
    let mut written = Vec::new();
    let mut checks = 0;
    for i in 0..200u64 {
        let id = if i % 9 == 4 { NodeId::index(i / 9) } else { NodeId::leaf(i) };
        let addr = store.append(id, &sample_node(i, 120, i % 3 == 0)).unwrap();
        let batches = t.stats().batches_persisted;
        t.set(&mut store, id, addr).unwrap();
        written.push((id, addr));
        if i % 7 == 6 {
            t.sync(&mut store).unwrap();
            synced.clone_from(&written);
        } else if i % 5 == 0 {
            store.sync().unwrap();
            synced.clone_from(&written);
        }
        if t.stats().batches_persisted > batches || i % 7 == 6 {
            let image = Arc::new(Region::sim_from_image(region.as_sim().unwrap().persistent_image()));
            let crashed = fs.crash(Tear::None);
            let (store, _) = BlockStore::open(&crashed, path()).unwrap();
            let (t, _) = PmemArrayTranslation::recover(image, RegionOffset(0), area(), &store).unwrap();
            for (id, addr) in &synced {
                assert_eq!(t.get(&store, *id).unwrap(), Some(*addr), "step {i}: {id}");
            }
            checks += 1;
        }
    }
    assert!(checks > 25, "{checks} crash images checked");
}

#[test]
fn many_pending_updates_stay_visible_until_the_store_syncs() {
    let fs = FaultFs::new();
    let region = Arc::new(Region::sim(area()));
    let mut store = BlockStore::create(&fs, path()).unwrap();
    let mut t = format(&region);
    let mut latest = std::collections::BTreeMap::new();
    for i in 0..260u64 {
        let id = NodeId::leaf(i % 150); // the second pass rewrites nodes
        let addr = store.append(id, &sample_node(i, 40, false)).unwrap();
        t.set(&mut store, id, addr).unwrap();
        latest.insert(id, addr);
    }
    assert_eq!(t.stats().pending, 260, "no record is durable: nothing persisted");
    for (id, addr) in &latest {
        assert_eq!(t.get(&store, *id).unwrap(), Some(*addr), "{id} while pending");
    }
    store.sync().unwrap();
    let addr = store.append(NodeId::leaf(150), b"after the sync").unwrap();
    t.set(&mut store, NodeId::leaf(150), addr).unwrap();
    latest.insert(NodeId::leaf(150), addr);
    assert_eq!(t.stats().pending, 1, "the durable 260 went out in one batch");
    for (id, addr) in &latest {
        assert_eq!(t.get(&store, *id).unwrap(), Some(*addr), "{id} after the batch");
    }
}
