//! The stream against the naive model (chronicledb-pmem.txt sections 2.2 and
//! 4.3): shuffled bursts with equal timestamps, small queues so merges
//! happen, several tree placements and every queue variant; after each
//! case the tree's invariants hold and every query equals a scan of the
//! arrival order stably sorted by time; a clean restart keeps every event.

use std::path::PathBuf;
use std::sync::Arc;

use proptest::prelude::*;
use strata_media::FaultFs;
use strata_pmem::Region;

use super::*;
use crate::aggregate::Aggregates;
use crate::ooo::OooIndexing;
use crate::tree::config::TreeConfig;
use crate::tree::test_support::{all_placements, events_from_deltas, wide_config};

fn queues() -> Vec<QueuePlacement> {
    vec![
        QueuePlacement::Pmem(OooIndexing::Indexed),
        QueuePlacement::Pmem(OooIndexing::Pure),
        QueuePlacement::Dram,
        QueuePlacement::Flash(OooIndexing::Indexed),
        QueuePlacement::Flash(OooIndexing::Pure),
    ]
}

fn media(config: &StreamConfig) -> StreamMedia {
    let len = config.pmem_end(0).unwrap().max(4096);
    StreamMedia {
        fs: Arc::new(FaultFs::new()),
        dir: PathBuf::from("stream"),
        region: Some(Arc::new(Region::anonymous(len).unwrap())),
        pmem_base: 0,
    }
}

fn stream_config(tree: TreeConfig, queue: QueuePlacement, queue_events: u64) -> StreamConfig {
    let eb = tree.schema.event_bytes() as u64;
    StreamConfig::new(tree).with_queue(queue, queue_events * eb)
}

fn check_against_model(s: &EventStream, model: &[Vec<u8>], seed: u64) -> Result<(), TestCaseError> {
    prop_assert_eq!(s.len(), model.len() as u64);
    prop_assert!(s.replay().unwrap() == model, "replay differs from the model");
    let spec = &s.config().tree.spec;
    let schema = &s.config().tree.schema;
    let last = model.last().map(|e| crate::event::timestamp_of(e)).unwrap_or(0);
    let mut x = seed | 1;
    for _ in 0..6 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let lo = (x >> 33) as i64 % (last + 2);
        let hi = lo + ((x >> 17) as i64 % (last + 2));
        let want: Vec<Vec<u8>> =
            model.iter().filter(|e| (lo..=hi).contains(&crate::event::timestamp_of(e))).cloned().collect();
        prop_assert!(s.range(lo, hi).unwrap() == want, "range {}..={}", lo, hi);
        prop_assert!(s.point(lo).unwrap() == s.range(lo, lo).unwrap());
        let aggs = s.aggregate(lo, hi).unwrap();
        let expected = Aggregates::of_events(spec, want.iter().map(Vec::as_slice)).unwrap();
        prop_assert_eq!(aggs.count, expected.count);
        prop_assert_eq!(aggs, expected);
        let (a_lo, a_hi) = (-1e12, ((x >> 40) % 1000) as f64);
        let filtered: Vec<Vec<u8>> = want
            .iter()
            .filter(|e| crate::event::attr_as_f64(schema, e, 0).is_some_and(|v| a_lo <= v && v <= a_hi))
            .cloned()
            .collect();
        prop_assert!(s.filter(0, a_lo, a_hi, lo, hi).unwrap() == filtered, "filter");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn streams_with_out_of_order_bursts_match_the_model(
        placement in prop::sample::select(vec![0usize, 5, 17, 24, 40, 53, 71]),
        queue in 0..5usize,
        spare in prop::sample::select(vec![0u32, 100, 300]),
        deltas in prop::collection::vec(prop::sample::select(vec![0u8, 0, 1, 2, 7]), 0..160),
        burst in 1usize..25,
        flip_every in 1usize..4,
        queue_events in 1u64..30,
        seed in any::<u64>(),
    ) {
        let p = all_placements()[placement];
        let tree = wide_config(p, spare, deltas.len() as u64 * 2);
        let config = stream_config(tree, queues()[queue], queue_events);
        let media = media(&config);
        let mut s = EventStream::create(config.clone(), media.clone()).unwrap();
        let sorted = events_from_deltas(&config.tree.schema, seed, &deltas);
        let mut arrivals = Vec::new();
        for (k, chunk) in sorted.chunks(burst).enumerate() {
            if k % flip_every == 0 { arrivals.extend(chunk.iter().rev().cloned()) } else { arrivals.extend(chunk.iter().cloned()) }
        }
        for e in &arrivals {
            s.append(e).unwrap();
        }
        let mut model = arrivals.clone();
        model.sort_by_key(|e| crate::event::timestamp_of(e));
        s.verify().map_err(|e| TestCaseError::fail(format!("{}: {e}", config.name())))?;
        check_against_model(&s, &model, seed)?;
        s.merge().unwrap();
        prop_assert_eq!(s.queue().len(), 0);
        s.verify().unwrap();
        check_against_model(&s, &model, seed)?;
    }
}

#[test]
fn a_restart_after_merges_keeps_every_event_once() {
    for queue in queues() {
        let p = all_placements()[24]; // PMem flank, batch 1
        let tree = wide_config(p, 100, 400);
        let config = stream_config(tree, queue, 7);
        let media = media(&config);
        let mut s = EventStream::create(config.clone(), media.clone()).unwrap();
        let deltas: Vec<u8> = (0..150u32).map(|i| [1u8, 0, 2][i as usize % 3]).collect();
        let sorted = events_from_deltas(&config.tree.schema, 9, &deltas);
        let mut arrivals = Vec::new();
        for chunk in sorted.chunks(6) {
            arrivals.extend(chunk.iter().rev().cloned());
        }
        for e in &arrivals {
            s.append(e).unwrap();
        }
        assert!(s.stats().merges > 0, "{queue:?}: the small queue must merge");
        s.sync().unwrap();
        drop(s);
        let (s, report) = EventStream::recover(config.clone(), media.clone()).unwrap();
        assert!(report.merged_generation > 0);
        let mut model = arrivals.clone();
        model.sort_by_key(|e| crate::event::timestamp_of(e));
        if queue == QueuePlacement::Dram {
            assert!(s.len() <= model.len() as u64, "the DRAM queue is not durable");
        } else {
            assert_eq!(s.replay().unwrap(), model, "{queue:?}");
        }
        s.verify().unwrap();
    }
}

/// A DRAM queue restarts empty: after a restart it must not reuse the
/// generation the tree recorded as merged (a merge interrupted under that
/// generation would look finished), so it starts one past it.
#[test]
fn a_recovered_dram_queue_starts_past_the_merged_generation() {
    let placement = crate::tree::test_support::Placement {
        flank: crate::tree::FlankPlacement::Pmem { batch_events: 5 },
        ..all_placements()[0]
    };
    let config = stream_config(wide_config(placement, 300, 200), QueuePlacement::Dram, 3);
    let m = media(&config);
    let schema = config.tree.schema.clone();
    let events = events_from_deltas(&schema, 7, &[2; 40]);
    let mut s = EventStream::create(config.clone(), m.clone()).unwrap();
    for e in &events[10..] {
        s.append(e).unwrap();
    }
    for e in &events[..3] {
        s.append(e).unwrap();
    }
    assert_eq!(s.stats().merges, 1, "three late events fill the queue of 3: one merge");
    s.sync().unwrap();
    drop(s);
    let (s, report) = EventStream::recover(config, m).unwrap();
    assert_eq!(report.merged_generation, 1);
    assert_eq!(s.queue().generation(), 2, "one past the merged generation");
    assert_eq!(s.len(), 33, "every event of the tree survived");
}
