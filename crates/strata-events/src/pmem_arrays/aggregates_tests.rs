//! Tests of [`AggregateArray`]: a seeded random model test for both layouts,
//! reopen, slot placement, header and slot corruption, capacity errors,
//! persist costs, and writes confined to the area.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_pmem::{Region, RegionOffset, CACHE_LINE_BYTES};

use super::{AggregateArray, SlotLayout, HEADER_BYTES};
use crate::ids::EventError;

const LAYOUTS: [SlotLayout; 2] = [SlotLayout::Dense, SlotLayout::Aligned];

fn record(rng: &mut ChaCha8Rng, record_bytes: u64) -> Vec<u8> {
    (0..record_bytes).map(|_| rng.gen()).collect()
}

fn sim(len: u64) -> Arc<Region> {
    Arc::new(Region::sim(len))
}

#[test]
fn random_sets_gets_batches_and_reopens_match_a_btreemap_model() {
    for (case, (layout, record_bytes)) in [
        (SlotLayout::Dense, 28),
        (SlotLayout::Aligned, 28),
        (SlotLayout::Dense, 144),
        (SlotLayout::Aligned, 64),
    ]
    .into_iter()
    .enumerate()
    {
        let seed = 0x0A66_0000 + case as u64;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let region = sim(64 * 1024);
        let base = RegionOffset(4096);
        let area_bytes = 32 * 1024;
        let mut array =
            AggregateArray::format(region.clone(), base, area_bytes, record_bytes, layout).unwrap();
        let capacity = array.capacity();
        // durable: what survives a reopen; pending: unpersisted first writes.
        let mut durable: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        let mut pending: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        for step in 0..3000 {
            let ctx = format!("seed {seed:#x} ({layout:?}, {record_bytes} bytes) step {step}");
            let i = rng.gen_range(0..capacity);
            match rng.gen_range(0..100) {
                0..=29 => {
                    let r = record(&mut rng, record_bytes);
                    array.set(i, &r).unwrap();
                    pending.remove(&i);
                    durable.insert(i, r);
                }
                30..=49 => {
                    let r = record(&mut rng, record_bytes);
                    array.set_unpersisted(i, &r).unwrap();
                    match durable.get_mut(&i) {
                        Some(v) => *v = r, // an overwrite is persisted at once
                        None => {
                            pending.insert(i, r);
                        }
                    }
                }
                50..=54 => {
                    let end = rng.gen_range(i..=capacity);
                    array.persist_range(i..end).unwrap();
                    let moved: Vec<u64> = pending.range(i..end).map(|(k, _)| *k).collect();
                    for k in moved {
                        durable.insert(k, pending.remove(&k).unwrap());
                    }
                }
                55..=56 => {
                    array.persist_pending().unwrap();
                    durable.append(&mut pending);
                }
                57..=58 => {
                    drop(array);
                    array = AggregateArray::open(region.clone(), base, area_bytes).unwrap();
                    pending.clear();
                    assert_eq!(array.capacity(), capacity, "{ctx}");
                }
                _ => {
                    let want = pending.get(&i).or(durable.get(&i)).cloned();
                    assert_eq!(array.get(i).unwrap(), want, "{ctx}: slot {i}");
                }
            }
            assert_eq!(array.pending_count(), pending.len(), "{ctx}");
        }
        for i in 0..capacity {
            let want = pending.get(&i).or(durable.get(&i)).cloned();
            assert_eq!(array.get(i).unwrap(), want, "seed {seed:#x}: final slot {i}");
        }
        // A crash now keeps exactly the durable slots.
        let restarted = Arc::new(Region::sim_from_image(region.as_sim().unwrap().persistent_image()));
        let after = AggregateArray::open(restarted, base, area_bytes).unwrap();
        for i in 0..capacity {
            assert_eq!(
                after.get(i).unwrap(),
                durable.get(&i).cloned(),
                "seed {seed:#x}: slot {i} after crash"
            );
        }
    }
}

#[test]
fn format_then_open_keeps_layout_and_every_slot_starts_empty() {
    for layout in LAYOUTS {
        let region = sim(16 * 1024);
        let a = AggregateArray::format(region.clone(), RegionOffset(64), 8192, 28, layout).unwrap();
        assert!(a.capacity() > 0);
        a.set(3, &[3; 28]).unwrap();
        let b = AggregateArray::open(region.clone(), RegionOffset(64), 8192).unwrap();
        assert_eq!(
            (b.layout(), b.record_bytes(), b.stride_bytes(), b.capacity()),
            (layout, 28, layout.stride_bytes(28), a.capacity())
        );
        assert_eq!(b.get(3).unwrap(), Some(vec![3; 28]));
        assert!((0..b.capacity()).filter(|i| *i != 3).all(|i| b.get(i).unwrap().is_none()));
        // Re-formatting empties the slots.
        let c = AggregateArray::format(region, RegionOffset(64), 8192, 28, layout).unwrap();
        assert_eq!(c.get(3).unwrap(), None);
    }
}

#[test]
fn aligned_slots_start_on_cache_lines_and_dense_slots_are_packed() {
    for record_bytes in [1, 8, 28, 56, 64, 65, 144] {
        let region = sim(64 * 1024);
        let aligned = AggregateArray::format(
            region.clone(),
            RegionOffset(256),
            16 * 1024,
            record_bytes,
            SlotLayout::Aligned,
        )
        .unwrap();
        assert_eq!(aligned.stride_bytes() % CACHE_LINE_BYTES, 0);
        assert!(aligned.stride_bytes() >= record_bytes && aligned.stride_bytes() < record_bytes + 64);
        for i in 0..aligned.capacity() {
            let at = aligned.slot_offset(i).unwrap();
            assert!(at.is_aligned(CACHE_LINE_BYTES), "record {record_bytes}: slot {i} at {at}");
        }
        let dense = AggregateArray::format(
            region,
            RegionOffset(32 * 1024),
            16 * 1024,
            record_bytes,
            SlotLayout::Dense,
        )
        .unwrap();
        assert_eq!(dense.stride_bytes(), record_bytes);
        assert!(dense.capacity() >= aligned.capacity());
        for i in 1..dense.capacity() {
            assert_eq!(dense.slot_offset(i).unwrap().0 - dense.slot_offset(i - 1).unwrap().0, record_bytes);
        }
    }
}

#[test]
fn every_corrupted_header_byte_is_a_corruption_error() {
    for layout in LAYOUTS {
        let region = sim(8192);
        AggregateArray::format(region.clone(), RegionOffset(0), 8192, 40, layout).unwrap();
        for at in 0..HEADER_BYTES {
            let old = region.read_vec(RegionOffset(at), 1)[0];
            region.write(RegionOffset(at), &[old ^ 0x10]);
            let err = AggregateArray::open(region.clone(), RegionOffset(0), 8192).err();
            assert!(err.as_ref().is_some_and(EventError::is_corruption), "{layout:?} byte {at}: {err:?}");
            region.write(RegionOffset(at), &[old]);
        }
        assert!(AggregateArray::open(region.clone(), RegionOffset(0), 8192).is_ok(), "restored");
        let err = AggregateArray::open(region, RegionOffset(0), 4096).err().unwrap();
        assert!(err.is_corruption() && err.to_string().contains("area_bytes"), "{err}");
    }
    let never = AggregateArray::open(sim(4096), RegionOffset(0), 4096).err().unwrap();
    assert!(never.is_corruption() && never.to_string().contains("never formatted"), "{never}");
    let region = sim(8192);
    super::IndexNodeArray::format(region.clone(), RegionOffset(0), 8192, 512).unwrap();
    let other = AggregateArray::open(region, RegionOffset(0), 8192).err().unwrap();
    assert!(other.is_corruption() && other.to_string().contains("magic"), "{other}");
}

#[test]
fn a_damaged_record_or_seal_is_corruption_not_a_value() {
    let region = sim(8192);
    let a = AggregateArray::format(region.clone(), RegionOffset(0), 8192, 32, SlotLayout::Dense).unwrap();
    a.set(5, &[5; 32]).unwrap();
    a.set(6, &[6; 32]).unwrap();
    let at = a.slot_offset(5).unwrap() + 7;
    region.write(at, &[0xFF]);
    let err = a.get(5).unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains("slot 5"), "{err}");
    // Slot 6's record and seal copied into slot 7: the seal names its slot.
    let seals = a.region().load_u64(RegionOffset(super::HEADER_OFFSET_TABLE_OFFSET));
    let seal6 = region.load_u64(RegionOffset(seals + 6 * 8));
    region.store_u64(RegionOffset(seals + 7 * 8), seal6);
    region.write(a.slot_offset(7).unwrap(), &[6; 32]);
    assert!(a.get(7).unwrap_err().is_corruption());
    region.store_u64(RegionOffset(seals + 8 * 8), 0x1234_5678);
    assert!(a.get(8).unwrap_err().to_string().contains("wrong tag"));
    assert_eq!(a.get(6).unwrap(), Some(vec![6; 32]));
}

#[test]
fn capacity_and_size_errors_are_clear() {
    let region = sim(8192);
    let a = AggregateArray::format(region.clone(), RegionOffset(0), 4096, 100, SlotLayout::Aligned).unwrap();
    let cap = a.capacity();
    let err = a.set(cap, &[0; 100]).unwrap_err();
    assert!(matches!(err, EventError::Full { .. }), "{err}");
    assert!(err.to_string().contains(&format!("capacity {cap}")), "{err}");
    assert!(matches!(a.set_unpersisted(cap + 10, &[0; 100]), Err(EventError::Full { .. })));
    assert!(matches!(a.set(0, &[0; 99]), Err(EventError::InvalidInput(_))), "wrong record size");
    assert!(matches!(a.get(cap), Err(EventError::InvalidInput(_))));
    assert!(matches!(a.get_into(0, &mut [0; 10]), Err(EventError::InvalidInput(_))));
    a.set(cap - 1, &[9; 100]).unwrap();
    assert_eq!(a.get(cap - 1).unwrap(), Some(vec![9; 100]), "the last slot works");
    let small = AggregateArray::format(region.clone(), RegionOffset(0), 300, 100, SlotLayout::Dense);
    assert!(small.err().unwrap().to_string().contains("holds no slot"));
    assert!(AggregateArray::format(region.clone(), RegionOffset(0), 4096, 0, SlotLayout::Dense).is_err());
    assert!(AggregateArray::format(region.clone(), RegionOffset(8), 4096, 8, SlotLayout::Dense).is_err());
    assert!(AggregateArray::format(region.clone(), RegionOffset(4096), 8192, 8, SlotLayout::Dense).is_err());
    let exact = AggregateArray::area_bytes_for(10, 28, SlotLayout::Dense).unwrap();
    let b = AggregateArray::format(region, RegionOffset(0), exact, 28, SlotLayout::Dense).unwrap();
    assert_eq!(b.capacity(), 10);
}

#[test]
fn persist_costs_two_fences_per_write_four_per_overwrite_and_two_per_batch() {
    let a = AggregateArray::format(sim(16384), RegionOffset(0), 16384, 48, SlotLayout::Aligned).unwrap();
    let c0 = a.counters();
    a.set(0, &[1; 48]).unwrap();
    let c1 = a.counters();
    assert_eq!(c1.fences - c0.fences, 2);
    assert_eq!(c1.lines_flushed - c0.lines_flushed, 2, "one record line, one seal line");
    assert_eq!(c1.writes - c0.writes, 1);
    a.set(0, &[2; 48]).unwrap();
    let c2 = a.counters();
    assert_eq!(c2.fences - c1.fences, 4, "journal, journal seal, in place, journal clear");
    // Slots 8..16: their seals fill one cache line of the seal table.
    for i in 8..16 {
        a.set_unpersisted(i, &[i as u8; 48]).unwrap();
    }
    assert_eq!(a.counters().fences, c2.fences, "unpersisted writes do not fence");
    a.persist_pending().unwrap();
    let c3 = a.counters();
    assert_eq!(c3.fences - c2.fences, 2);
    assert_eq!(c3.lines_flushed - c2.lines_flushed, 8 + 1, "8 aligned records, 8 seals in one line");
    a.persist_pending().unwrap();
    assert_eq!(a.counters().fences, c3.fences, "nothing pending: no fence");
    assert_eq!(a.get(12).unwrap(), Some(vec![12; 48]));
    assert!(a.counters().reads >= 1 && a.counters().bytes_read >= 56);
}

#[test]
fn writes_stay_inside_the_area() {
    for layout in LAYOUTS {
        let region = sim(16384);
        let (base, area_bytes) = (RegionOffset(4096), 4096);
        region.write(RegionOffset(0), &[0xEE; 4096]);
        region.write(RegionOffset(8192), &[0xEE; 8192]);
        let a = AggregateArray::format(region.clone(), base, area_bytes, 24, layout).unwrap();
        for i in 0..a.capacity() {
            a.set(i, &[i as u8; 24]).unwrap();
            a.set(i, &[!(i as u8); 24]).unwrap();
        }
        assert!(region.read_vec(RegionOffset(0), 4096).iter().all(|b| *b == 0xEE), "{layout:?}: before");
        assert!(region.read_vec(RegionOffset(8192), 8192).iter().all(|b| *b == 0xEE), "{layout:?}: after");
        assert_eq!(a.get(a.capacity() - 1).unwrap(), Some(vec![!((a.capacity() - 1) as u8); 24]));
    }
}

#[test]
fn open_redoes_an_overwrite_interrupted_after_its_journal_was_sealed() {
    use super::aggregates::seal_word;
    use super::{JOURNAL_RECORD_OFFSET, JOURNAL_SEAL_OFFSET, JOURNAL_SEAL_TAG, JOURNAL_TARGET_OFFSET};
    let region = sim(8192);
    let base = RegionOffset(0);
    let a = AggregateArray::format(region.clone(), base, 8192, 24, SlotLayout::Dense).unwrap();
    a.set(3, &[1; 24]).unwrap();
    // The state a crash leaves between the journal seal and the in-place write:
    // journal complete, slot record half overwritten.
    region.store_u64(base + JOURNAL_TARGET_OFFSET, 3);
    region.write(base + JOURNAL_RECORD_OFFSET, &[2; 24]);
    region.store_u64(base + JOURNAL_SEAL_OFFSET, seal_word(JOURNAL_SEAL_TAG, 3, &[2; 24]));
    region.write(a.slot_offset(3).unwrap(), &[2; 8]);
    assert!(a.get(3).unwrap_err().is_corruption(), "torn in place, before recovery");
    let crashed = Arc::new(Region::sim_from_image(region.read_vec(RegionOffset(0), 8192)));
    let b = AggregateArray::open(crashed.clone(), base, 8192).unwrap();
    assert_eq!(b.get(3).unwrap(), Some(vec![2; 24]), "the journal was redone");
    assert_eq!(crashed.load_u64(base + JOURNAL_SEAL_OFFSET), 0, "and cleared");
    assert_eq!(
        crashed.as_sim().unwrap().persistent_image(),
        crashed.read_vec(RegionOffset(0), 8192),
        "persisted"
    );
    // A journal whose record does not match its seal cannot come from a crash.
    crashed.store_u64(base + JOURNAL_SEAL_OFFSET, seal_word(JOURNAL_SEAL_TAG, 4, &[2; 24]));
    let err = AggregateArray::open(crashed.clone(), base, 8192).err().unwrap();
    assert!(err.is_corruption() && err.to_string().contains("journal"), "{err}");
    crashed.store_u64(base + JOURNAL_TARGET_OFFSET, 1 << 40);
    crashed.store_u64(base + JOURNAL_SEAL_OFFSET, seal_word(JOURNAL_SEAL_TAG, 1 << 40, &[2; 24]));
    let err = AggregateArray::open(crashed, base, 8192).err().unwrap();
    assert!(err.is_corruption() && err.to_string().contains("capacity"), "{err}");
}
