//! The TAB+-tree against a naive model (a `Vec` of the events): after
//! in-order inserts with equal timestamps, the invariants hold
//! ([`TabTree::verify`]) and every query equals a scan of the model, for
//! every placement combination; temporal aggregation reads a logarithmic
//! number of nodes; filters prune.

use proptest::prelude::*;

use super::test_support::*;
use super::*;
use crate::event::timestamp_of;
use crate::ids::EventError;
use crate::pmem_arrays::SlotLayout;
use crate::schema::StreamSchema;
use crate::translation::TranslationKind;

/// Spare room that makes a wide-schema tree at least three levels high
/// within a couple of hundred events: inline index nodes hold 8 entries, the
/// entries without aggregates 508.
fn spare_for(p: Placement) -> u32 {
    match p.aggregates {
        AggregatePlacement::Inline => 300,
        AggregatePlacement::PmemArray(_) => 900,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn random_inserts_keep_the_invariants_and_queries_match_the_model(
        placement in 0..72usize,
        spare in prop::sample::select(vec![0u32, 100, 300, 600, 900]),
        deltas in prop::collection::vec(prop::sample::select(vec![0u8, 0, 1, 2, 7]), 0..240),
        seed in any::<u64>(),
        sync_every in 0usize..9,
    ) {
        let p = all_placements()[placement];
        let config = wide_config(p, spare, deltas.len() as u64);
        let env = TestEnv::new(&config, false);
        let mut tree = env.create(&config);
        let events = events_from_deltas(&config.schema, seed, &deltas);
        append_all(&mut tree, &events, sync_every);
        let check = tree.verify().map_err(|e| TestCaseError::fail(format!("{p:?} spare {spare}: {e}")))?;
        prop_assert_eq!(check.events, events.len() as u64);
        prop_assert_eq!(tree.len(), events.len() as u64);
        check_queries(&tree, &Model { events: &events }, seed);
    }
}

#[test]
fn every_placement_builds_a_tree_of_height_three_or_more_that_matches_the_model() {
    let deltas: Vec<u8> = (0..200u32).map(|i| [1, 0, 2, 0, 0, 3][i as usize % 6]).collect();
    for p in all_placements() {
        let config = wide_config(p, spare_for(p), deltas.len() as u64);
        let env = TestEnv::new(&config, false);
        let mut tree = env.create(&config);
        let events = events_from_deltas(&config.schema, 7, &deltas);
        append_all(&mut tree, &events, 11);
        assert!(tree.height() >= 3, "{p:?}: height {}", tree.height());
        let check = tree.verify().unwrap_or_else(|e| panic!("{p:?}: {e}"));
        assert_eq!(check.events, 200);
        assert!(check.index_nodes >= 3, "{p:?}: {check:?}");
        let checks = check_queries(&tree, &Model { events: &events }, 99);
        assert!(checks > 30);
        let stats = tree.stats();
        assert_eq!(
            stats.leaves_written,
            check.leaves - 1,
            "{p:?}: every leaf but the flank leaf was written"
        );
        match p.index {
            IndexPlacement::Ssd => assert_eq!(stats.storage.pmem_node_writes, 0),
            IndexPlacement::Pmem => assert!(stats.storage.pmem_node_writes >= stats.index_nodes_written),
        }
        if let AggregatePlacement::PmemArray(_) = p.aggregates {
            assert_eq!(stats.aggregates.pmem_writes, stats.leaves_written + stats.index_nodes_written);
            assert!(stats.aggregates.pmem_reads > 0, "queries read the PMem array");
        } else {
            assert_eq!(stats.aggregates.pmem_reads, 0);
        }
    }
}

#[test]
fn late_events_are_refused_and_equal_timestamps_accepted() {
    let p = all_placements()[0];
    let config = wide_config(p, 100, 20);
    let env = TestEnv::new(&config, false);
    let mut tree = env.create(&config);
    let events = events_from_deltas(&config.schema, 1, &[10, 0, 5]);
    append_all(&mut tree, &events, 0);
    let mut late = events[0].clone();
    late[..8].copy_from_slice(&9i64.to_le_bytes());
    assert_eq!(tree.append(&late).unwrap(), AppendOutcome::Late { ts: 9, newest_ts: 15 });
    let mut same = events[0].clone();
    same[..8].copy_from_slice(&15i64.to_le_bytes());
    assert!(matches!(tree.append(&same).unwrap(), AppendOutcome::Appended { seq: 3, .. }));
    assert_eq!(tree.len(), 4);
    assert_eq!(tree.stats().late_events, 1);
    assert_eq!(tree.point(15).unwrap().len(), 2, "both events at 15, in arrival order");
    let err = tree.append(&events[0][..100]).unwrap_err();
    assert!(matches!(err, EventError::InvalidInput(_)), "{err}");
    tree.verify().unwrap();
}

#[test]
fn an_empty_tree_answers_every_query_with_nothing() {
    for p in all_placements().into_iter().step_by(7) {
        let config = wide_config(p, 100, 4);
        let env = TestEnv::new(&config, false);
        let tree = env.create(&config);
        assert_eq!(tree.replay().count(), 0);
        assert_eq!(tree.aggregate(i64::MIN, i64::MAX).unwrap().count, 0);
        assert!(tree.filter(1, f64::MIN, f64::MAX, i64::MIN, i64::MAX).unwrap().is_empty());
        assert!(tree.point(0).unwrap().is_empty());
        assert_eq!(tree.verify().unwrap().events, 0);
        assert_eq!(tree.durable_through(), 0);
    }
}

/// Section 2.2: temporal aggregation in logarithmic time. On a Stock tree of
/// height 3 a long range reads at most two nodes per level below the root
/// and scans events only in the two border leaves.
#[test]
fn temporal_aggregation_reads_a_logarithmic_number_of_nodes() {
    let schema = StreamSchema::stock();
    let p = all_placements()[0];
    let config = config(schema.clone(), p, 100, 40_000);
    let env = TestEnv::new(&config, false);
    let mut tree = env.create(&config);
    let events: Vec<Vec<u8>> = (0..30_000i64)
        .map(|i| {
            let e = crate::event::Event::new(
                i / 2,
                vec![
                    crate::event::Value::I32(i as i32),
                    crate::event::Value::I32((i % 17) as i32),
                    crate::event::Value::F64((i % 1000) as f64),
                    crate::event::Value::I32((i % 300) as i32),
                ],
            );
            crate::event::encode(&schema, &e).unwrap()
        })
        .collect();
    append_all(&mut tree, &events, 0);
    assert_eq!(tree.height(), 3, "30,000 Stock events: 261 per leaf, 53 per index node");
    let model = Model { events: &events };
    for (lo, hi) in [(1_000, 14_000), (37, 14_963), (0, 14_999), (7_000, 7_000), (14_500, 20_000)] {
        let (aggs, stats) = tree.aggregate_with_stats(lo, hi).unwrap();
        assert_eq!(aggs, model.aggregate(&config, lo, hi), "[{lo}, {hi}]");
        assert!(stats.nodes_read() <= 4, "[{lo}, {hi}]: {stats:?}");
        assert!(stats.events_scanned <= 2 * 290, "[{lo}, {hi}]: {stats:?}");
        println!("aggregate [{lo}, {hi}] of {} events: {stats:?}", aggs.count);
    }
    let (_, wide) = tree.aggregate_with_stats(1_000, 14_000).unwrap();
    assert!(wide.subtrees_covered >= 40, "most of the range comes from stored aggregates: {wide:?}");
}

/// Section 2.2 (R3): a selective filter on a secondary attribute visits only
/// the subtrees whose min/max range meets the predicate, with the aggregates
/// inline and in the PMem array alike.
#[test]
fn filters_prune_subtrees_by_their_min_max_aggregates() {
    let schema = StreamSchema::sine();
    for aggregates in [AggregatePlacement::Inline, AggregatePlacement::PmemArray(SlotLayout::Aligned)] {
        let p = Placement {
            flank: FlankPlacement::Pmem { batch_events: 25 },
            aggregates,
            index: IndexPlacement::Pmem,
            translation: TranslationKind::PmemArray,
        };
        let config = config(schema.clone(), p, 100, 3_000);
        let env = TestEnv::new(&config, false);
        let mut tree = env.create(&config);
        let events: Vec<Vec<u8>> = (0..60_000).map(|i| sine_event(&schema, i, 50_000)).collect();
        append_all(&mut tree, &events, 0);
        let leaves = tree.verify().unwrap().leaves;
        let model = Model { events: &events };
        let (got, stats) = tree.filter_with_stats(0, 0.5, 0.51, i64::MIN, i64::MAX).unwrap();
        assert_eq!(got, model.filter(&config, 0, 0.5, 0.51, i64::MIN, i64::MAX));
        assert!(!got.is_empty());
        assert!(
            stats.leaves_read * 20 < leaves,
            "{aggregates:?}: read {} of {leaves} leaves",
            stats.leaves_read
        );
        assert!(stats.subtrees_pruned > 0);
        let last = timestamp_of(events.last().unwrap());
        let (tail, _) = tree.filter_with_stats(1, -1e9, 1e9, last - 3, last).unwrap();
        assert_eq!(tail.len(), 4, "the flank leaf's events are found too");
        println!("{aggregates:?}: filter matched {} events reading {stats:?} of {leaves} leaves", got.len());
        assert!(tree.filter(99, 0.0, 1.0, 0, 1).is_err(), "no such attribute");
    }
}

/// Section 4.1 batch flushing: a persisted leaf append costs one fence (the
/// events and the leaf commit word behind it) and flushes the batch's events
/// plus the commit word's line, so the per-event cost falls with the batch size `k`; a DRAM
/// flank issues none.
#[test]
fn batch_flushing_costs_one_fence_per_batch_of_k_events() {
    let schema = StreamSchema::stock();
    let events: Vec<Vec<u8>> = (0..250).map(|i| sine_like_stock(&schema, i)).collect();
    for (flank, fences) in [
        (FlankPlacement::Dram, 0),
        (FlankPlacement::Pmem { batch_events: 1 }, 250),
        (FlankPlacement::Pmem { batch_events: 25 }, 10),
        (FlankPlacement::Pmem { batch_events: 100 }, 2),
    ] {
        let p = Placement { flank, ..all_placements()[0] };
        let config = config(schema.clone(), p, 100, 100);
        let env = TestEnv::new(&config, false);
        let mut tree = env.create(&config);
        let before = tree.stats().flank_pmem;
        append_all(&mut tree, &events, 0);
        let after = tree.stats().flank_pmem;
        assert_eq!(after.fences - before.fences, fences, "{flank:?}");
        assert_eq!(tree.stats().leaves_written, 0, "250 Stock events fit the first leaf");
        if let FlankPlacement::Pmem { batch_events } = flank {
            let batches = 250 / u64::from(batch_events);
            assert_eq!(after.appends_persisted, batches);
            assert_eq!(tree.durable_through(), batches * u64::from(batch_events));
            assert_eq!(tree.sync().unwrap(), 250, "sync persists the partial batch");
            println!(
                "k={batch_events}: {:.2} fences, {:.2} lines flushed, {:.1} bytes persisted per event",
                (after.fences - before.fences) as f64 / 250.0,
                (after.lines_flushed - before.lines_flushed) as f64 / 250.0,
                (after.bytes_persisted - before.bytes_persisted) as f64 / 250.0
            );
        }
    }
}

fn sine_like_stock(schema: &StreamSchema, i: i64) -> Vec<u8> {
    use crate::event::{encode, Event, Value};
    let values = vec![Value::I32(i as i32), Value::I32(7), Value::F64((i % 100) as f64), Value::I32(3)];
    encode(schema, &Event::new(i, values)).unwrap()
}
