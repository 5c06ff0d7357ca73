//! Tests of the PMem OOO queue's persistence: persist cost per push,
//! recovery after a simulated crash at every persist (acknowledged events
//! survive, a torn record never shows), recovery work of the two flavours,
//! the truncate and tag-wrap reset protocols, corruption and bad input.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_pmem::{Region, RegionOffset};

use super::pmem_layout::{
    HEADER_GENERATION_OFFSET, HEADER_SLOT_COUNT_OFFSET, PMEM_GENERATION_MAX, PMEM_RECORDS_OFFSET,
    PMEM_RESET_TAG,
};
use super::test_support::{make_event, ooo_event, vecs, Model};
use super::*;

const BASE: RegionOffset = RegionOffset(256);

fn setup(eb: usize, capacity: u64, indexing: OooIndexing) -> (Arc<Region>, PmemOooQueue) {
    let area = PmemOooQueue::area_bytes_for(eb, capacity * eb as u64);
    let region = Arc::new(Region::sim(BASE.0 + area + 64));
    let q = PmemOooQueue::format(region.clone(), BASE, area, eb, indexing).unwrap();
    (region, q)
}

fn crash(region: &Region) -> Arc<Region> {
    Arc::new(Region::sim_from_image(region.as_sim().unwrap().persistent_image()))
}

#[test]
fn each_push_costs_one_fence_and_the_lines_of_its_record() {
    let (region, mut q) = setup(28, 100, OooIndexing::Indexed);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let before = region.stats();
    for i in 0..64 {
        q.push(&ooo_event(&mut rng, i, 28)).unwrap();
    }
    let cost = region.stats() - before;
    assert_eq!(q.slot_bytes(), 40);
    assert_eq!(cost.fences, 64, "one fence per push");
    assert!(cost.lines_flushed <= 2 * 64, "a 40-byte record spans at most two lines: {cost:?}");
    let before = region.stats();
    q.truncate().unwrap();
    assert_eq!((region.stats() - before).fences, 1, "truncate is one persisted store");
    assert_eq!(q.media_bytes_used(), PMEM_RECORDS_OFFSET);
}

#[test]
fn format_persists_everything_with_three_fences() {
    let area = PmemOooQueue::area_bytes_for(16, 16 * 10);
    let region = Arc::new(Region::sim(area));
    let q = PmemOooQueue::format(region.clone(), RegionOffset(0), area, 16, OooIndexing::Pure).unwrap();
    assert_eq!(region.stats().fences, 3);
    assert_eq!(q.slot_count(), 10);
    let (reopened, report) = PmemOooQueue::open(crash(&region), RegionOffset(0), OooIndexing::Pure).unwrap();
    assert!(reopened.is_empty());
    assert_eq!(report.generation, 1);
}

/// A crash right after every push (the persistent image alone) keeps
/// exactly the pushed events, in both flavours.
#[test]
fn every_acknowledged_push_survives_a_crash() {
    for indexing in [OooIndexing::Pure, OooIndexing::Indexed] {
        let (region, mut q) = setup(24, 40, indexing);
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut model = Model::default();
        for i in 0..40u64 {
            let e = ooo_event(&mut rng, i, 24);
            q.push(&e).unwrap();
            model.push(&e);
            let (after, report) = PmemOooQueue::open(crash(&region), BASE, indexing).unwrap();
            assert_eq!(report.events_recovered, i + 1, "{indexing:?} push {i}");
            assert_eq!(vecs(&after.sorted().unwrap()), model.sorted(), "{indexing:?} push {i}");
        }
    }
}

/// Every combination of old and new words of the record in flight (the
/// crash model's torn writes): recovery shows the event whole or not at all.
#[test]
fn a_torn_record_is_never_exposed() {
    let eb = 24; // 32-byte slots: four words
    let (region, mut q) = setup(eb, 20, OooIndexing::Indexed);
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut model = Model::default();
    for i in 0..5u64 {
        let e = ooo_event(&mut rng, i, eb);
        q.push(&e).unwrap();
        model.push(&e);
    }
    let before = region.as_sim().unwrap().persistent_image();
    let e = make_event(&mut rng, 17, 99, eb);
    q.push(&e).unwrap();
    let after = region.as_sim().unwrap().persistent_image();
    let slot_at = (BASE.0 + PMEM_RECORDS_OFFSET + 5 * 32) as usize;
    let (mut whole, mut none) = (0, 0);
    for mask in 0u32..16 {
        let mut image = before.clone();
        for w in 0..4 {
            if mask & (1 << w) != 0 {
                let at = slot_at + w * 8;
                image[at..at + 8].copy_from_slice(&after[at..at + 8]);
            }
        }
        let (q2, report) =
            PmemOooQueue::open(Arc::new(Region::sim_from_image(image)), BASE, OooIndexing::Indexed)
                .unwrap_or_else(|err| panic!("mask {mask:#06b}: {err}"));
        let mut expect = model.clone();
        if q2.len() == 6 {
            expect.push(&e);
            whole += 1;
        } else {
            assert_eq!(q2.len(), 5, "mask {mask:#06b}");
            assert_eq!(
                report.torn_tail_dropped,
                mask & 1 != 0 && mask != 15,
                "mask {mask:#06b}: tag word new"
            );
            none += 1;
        }
        assert_eq!(vecs(&q2.sorted().unwrap()), expect.sorted(), "mask {mask:#06b}");
    }
    assert_eq!((whole, none), (1, 15), "only the complete record is valid");
}

#[test]
fn recovery_work_indexed_scans_pure_searches() {
    let (eb, n) = (16, 1000u64);
    let (region, mut q) = setup(eb, 4096, OooIndexing::Indexed);
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    for i in 0..n {
        q.push(&ooo_event(&mut rng, i, eb)).unwrap();
    }
    let (indexed, ri) = PmemOooQueue::open(crash(&region), BASE, OooIndexing::Indexed).unwrap();
    let (pure, rp) = PmemOooQueue::open(crash(&region), BASE, OooIndexing::Pure).unwrap();
    assert_eq!((ri.events_recovered, rp.events_recovered), (n, n));
    assert_eq!(ri.index_entries_built, n);
    assert_eq!(indexed.index_entries(), n as usize);
    assert_eq!(
        ri.records_examined,
        n + 3,
        "every record, the first invalid one (scan and tail check), the next"
    );
    assert!(rp.records_examined <= 15, "binary search over 4096 slots: {rp:?}");
    assert_eq!((rp.index_entries_built, pure.index_entries()), (0, 0));
    assert_eq!(indexed.sorted().unwrap(), pure.sorted().unwrap());
}

#[test]
fn queries_count_records_read_indexed_touches_only_hits() {
    let (_region, mut q) = setup(16, 500, OooIndexing::Indexed);
    let (_region2, mut p) = setup(16, 500, OooIndexing::Pure);
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    for i in 0..500u64 {
        let e = make_event(&mut rng, i as i64 * 2, i as u32, 16);
        q.push(&e).unwrap();
        p.push(&e).unwrap();
    }
    assert_eq!(q.point(100).unwrap().len(), 1, "HIT");
    assert_eq!(q.point(101).unwrap().len(), 0, "MISS");
    assert_eq!(q.query_stats().records_read, 1, "indexed: one record for the HIT, none for the MISS");
    assert_eq!(p.point(100).unwrap().len(), 1);
    assert_eq!(p.query_stats().records_read, 500, "pure: a scan of the queue");
}

#[test]
fn truncate_invalidates_old_records_across_a_crash() {
    let (region, mut q) = setup(24, 30, OooIndexing::Indexed);
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    for i in 0..20u64 {
        q.push(&make_event(&mut rng, i as i64, i as u32, 24)).unwrap();
    }
    q.truncate().unwrap();
    let e = make_event(&mut rng, 5, 100, 24);
    q.push(&e).unwrap();
    for indexing in [OooIndexing::Pure, OooIndexing::Indexed] {
        let (after, report) = PmemOooQueue::open(crash(&region), BASE, indexing).unwrap();
        assert_eq!(report.generation, 2);
        assert_eq!(vecs(&after.sorted().unwrap()), vec![e.clone()], "{indexing:?}: stale records stay dead");
    }
}

#[test]
fn discard_if_merged_truncates_only_the_merged_generation() {
    let (region, mut q) = setup(16, 10, OooIndexing::Indexed);
    q.push(&make_event(&mut ChaCha8Rng::seed_from_u64(1), 3, 0, 16)).unwrap();
    let g = q.generation();
    // The tree made the merge of generation g durable; then the crash.
    let restarted = crash(&region);
    let (mut after, _) = PmemOooQueue::open(restarted.clone(), BASE, OooIndexing::Indexed).unwrap();
    assert!(!after.discard_if_merged(g - 1).unwrap());
    assert_eq!(after.len(), 1);
    assert!(after.discard_if_merged(g).unwrap(), "the queue still holds the merged generation");
    assert!(after.is_empty());
    let (again, _) = PmemOooQueue::open(crash(&restarted), BASE, OooIndexing::Indexed).unwrap();
    assert!(again.is_empty(), "the discard is durable");
    assert_eq!(again.generation(), g + 1);
}

/// The record tag is the low 32 bits of the generation; crossing 2^32 zeroes
/// the slots, and a crash in the middle of that reset is completed by open.
#[test]
fn the_tag_wrap_resets_the_area_and_open_completes_an_interrupted_reset() {
    let eb = 16;
    let area = PmemOooQueue::area_bytes_for(eb, 8 * eb as u64);
    let region = Arc::new(Region::sim(BASE.0 + area));
    let mut q = PmemOooQueue::format_at_generation(
        region.clone(),
        BASE,
        area,
        eb,
        OooIndexing::Indexed,
        u32::MAX as u64,
    )
    .unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    for i in 0..5 {
        q.push(&make_event(&mut rng, i, i as u32, eb)).unwrap();
    }
    let before_wrap = region.as_sim().unwrap().persistent_image();
    let fences = region.stats().fences;
    q.truncate().unwrap();
    assert_eq!(q.generation(), (1 << 32) + 1, "the reset marker 2^32 is skipped");
    assert_eq!(region.stats().fences - fences, 3, "marker, zeroed slots, next generation");
    let e = make_event(&mut rng, 9, 9, eb);
    q.push(&e).unwrap();
    let (after, report) = PmemOooQueue::open(crash(&region), BASE, OooIndexing::Pure).unwrap();
    assert!(!report.reset_completed);
    assert_eq!(vecs(&after.sorted().unwrap()), vec![e]);

    // A crash after the marker was persisted, before the slots were zeroed.
    let mut image = before_wrap;
    let gen_at = (BASE.0 + HEADER_GENERATION_OFFSET) as usize;
    image[gen_at..gen_at + 8].copy_from_slice(&(1u64 << 32).to_le_bytes());
    assert_eq!((1u64 << 32) as u32, PMEM_RESET_TAG);
    let region = Arc::new(Region::sim_from_image(image));
    let (after, report) = PmemOooQueue::open(region.clone(), BASE, OooIndexing::Indexed).unwrap();
    assert!(report.reset_completed);
    assert!(after.is_empty());
    assert_eq!(after.generation(), (1 << 32) + 1);
    let slots = region.read_vec(BASE + PMEM_RECORDS_OFFSET, (area - PMEM_RECORDS_OFFSET) as usize);
    assert!(slots.iter().all(|&b| b == 0), "the reset zeroed every slot");
}

#[test]
fn a_bad_record_before_valid_ones_is_corruption() {
    let (region, mut q) = setup(16, 10, OooIndexing::Indexed);
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    for i in 0..6 {
        q.push(&make_event(&mut rng, i, i as u32, 16)).unwrap();
    }
    let mut image = region.as_sim().unwrap().persistent_image();
    let slot2 = (BASE.0 + PMEM_RECORDS_OFFSET + 2 * 24 + 10) as usize;
    image[slot2] ^= 0x10;
    let damaged = Arc::new(Region::sim_from_image(image));
    let err = PmemOooQueue::open(damaged.clone(), BASE, OooIndexing::Indexed).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    match PmemOooQueue::open(damaged, BASE, OooIndexing::Pure) {
        Ok((pure, _)) => {
            assert!(pure.sorted().unwrap_err().is_corruption(), "a pure scan checks every record")
        }
        Err(err) => assert!(err.is_corruption(), "{err}"),
    }
}

#[test]
fn bad_headers_and_bad_input_are_errors_not_panics() {
    let (region, mut q) = setup(16, 4, OooIndexing::Indexed);
    assert!(matches!(q.push(&[0; 15]), Err(EventError::InvalidInput(_))));
    for i in 0..4 {
        q.push(&[i; 16]).unwrap();
    }
    assert!(q.is_full());
    assert!(matches!(q.push(&[9; 16]), Err(EventError::Full { .. })));

    let mut image = region.as_sim().unwrap().persistent_image();
    image[(BASE.0 + HEADER_SLOT_COUNT_OFFSET) as usize] ^= 1;
    let err =
        PmemOooQueue::open(Arc::new(Region::sim_from_image(image)), BASE, OooIndexing::Pure).unwrap_err();
    assert!(err.is_corruption(), "header CRC: {err}");
    let err =
        PmemOooQueue::open(Arc::new(Region::sim(4096)), RegionOffset(0), OooIndexing::Pure).unwrap_err();
    assert!(err.to_string().contains("no queue formatted"), "{err}");

    let mut image = region.as_sim().unwrap().persistent_image();
    let gen_at = (BASE.0 + HEADER_GENERATION_OFFSET) as usize;
    image[gen_at..gen_at + 8].copy_from_slice(&PMEM_GENERATION_MAX.to_le_bytes());
    let (mut last, _) =
        PmemOooQueue::open(Arc::new(Region::sim_from_image(image.clone())), BASE, OooIndexing::Indexed)
            .expect("the largest generation opens");
    assert!(matches!(last.truncate(), Err(EventError::Full { .. })), "no generation after the largest");
    image[gen_at..gen_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    let err =
        PmemOooQueue::open(Arc::new(Region::sim_from_image(image)), BASE, OooIndexing::Pure).unwrap_err();
    assert!(err.is_corruption(), "{err}");

    let r = Arc::new(Region::sim(4096));
    let misaligned = PmemOooQueue::format(r.clone(), RegionOffset(8), 1024, 16, OooIndexing::Pure);
    assert!(matches!(misaligned, Err(EventError::InvalidInput(_))));
    let too_small = PmemOooQueue::format(r.clone(), RegionOffset(0), 64, 16, OooIndexing::Pure);
    assert!(matches!(too_small, Err(EventError::InvalidInput(_))));
    let outside = PmemOooQueue::format(r.clone(), RegionOffset(0), 8192, 16, OooIndexing::Pure);
    assert!(matches!(outside, Err(EventError::InvalidInput(_))));
    let tiny_event = PmemOooQueue::format(r, RegionOffset(0), 1024, 4, OooIndexing::Pure);
    assert!(matches!(tiny_event, Err(EventError::InvalidInput(_))));
}

/// Random crash points over a long run with truncations: after each crash
/// the queue holds exactly the events pushed since the last truncation.
#[test]
fn random_crashes_between_pushes_and_truncations_keep_exactly_the_queue() {
    let seed = 0x0c0ffee;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut region, mut q) = setup(32, 25, OooIndexing::Indexed);
    let mut model = Model::default();
    for i in 0..600u64 {
        match rng.gen_range(0..100) {
            0..=79 if !q.is_full() => {
                let e = ooo_event(&mut rng, i, 32);
                q.push(&e).unwrap();
                model.push(&e);
            }
            0..=89 => {
                assert_eq!(vecs(&q.drain_sorted().unwrap()), model.sorted(), "seed {seed} step {i}");
                model.clear();
            }
            _ => {
                region = crash(&region);
                let indexing = if rng.gen_bool(0.5) { OooIndexing::Pure } else { OooIndexing::Indexed };
                q = PmemOooQueue::open(region.clone(), BASE, indexing).unwrap().0;
                assert_eq!(vecs(&q.sorted().unwrap()), model.sorted(), "seed {seed} step {i}: after crash");
            }
        }
    }
}
