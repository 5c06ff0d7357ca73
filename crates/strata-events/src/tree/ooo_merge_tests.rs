//! Out-of-order inserts and merges (chronicledb-pmem.txt section 4.3)
//! against the naive model: events arrive shuffled within bursts, late ones
//! go into the DRAM flank leaf or a simple queue (a `Vec`), merged whenever
//! it reaches a small limit; afterwards the invariants hold and every query
//! equals a scan of the model (the arrival order stably sorted by time).

use proptest::prelude::*;

use super::test_support::*;
use super::*;
use crate::event::timestamp_of;
use crate::ooo::EventList;

/// Arrival order: `events` (in timestamp order) with each chunk of
/// `burst` events reversed when its `flip` bit is set.
fn shuffle_bursts(events: &[Vec<u8>], burst: usize, flips: &[bool]) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(events.len());
    for (k, chunk) in events.chunks(burst.max(1)).enumerate() {
        if flips.get(k % flips.len().max(1)).copied().unwrap_or(false) {
            out.extend(chunk.iter().rev().cloned());
        } else {
            out.extend(chunk.iter().cloned());
        }
    }
    out
}

fn merge_queue(tree: &mut TabTree, queue: &mut Vec<Vec<u8>>, generation: &mut u64) {
    queue.sort_by_key(|e| timestamp_of(e));
    let mut list = EventList::new(tree.leaf_layout().event_bytes());
    for e in queue.iter() {
        list.push(e);
    }
    *generation += 1;
    let report = tree.merge_ooo(&list, *generation).unwrap_or_else(|e| panic!("merge: {e}"));
    assert_eq!(report.events_merged, queue.len() as u64);
    assert_eq!(tree.merged_ooo_generation(), *generation);
    queue.clear();
}

/// Feeds `arrivals` with late events queued (limit `queue_limit`); returns the model.
fn feed(tree: &mut TabTree, arrivals: &[Vec<u8>], queue_limit: usize) -> Vec<Vec<u8>> {
    let mut queue: Vec<Vec<u8>> = Vec::new();
    let mut generation = 0;
    for e in arrivals {
        if let AppendOutcome::Late { .. } = tree.append(e).unwrap() {
            let queued_tie = queue.iter().any(|q| timestamp_of(q) == timestamp_of(e));
            if queued_tie || tree.insert_late_in_flank(e).unwrap().is_none() {
                queue.push(e.clone());
                if queue.len() >= queue_limit {
                    merge_queue(tree, &mut queue, &mut generation);
                }
            }
        }
    }
    merge_queue(tree, &mut queue, &mut generation);
    let mut model = arrivals.to_vec();
    model.sort_by_key(|e| timestamp_of(e));
    model
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn out_of_order_inserts_and_merges_keep_the_invariants_and_match_the_model(
        placement in 0..72usize,
        spare in prop::sample::select(vec![0u32, 100, 300, 600]),
        deltas in prop::collection::vec(prop::sample::select(vec![0u8, 0, 1, 2, 7]), 0..200),
        burst in 1usize..30,
        flips in prop::collection::vec(any::<bool>(), 1..8),
        queue_limit in 1usize..40,
        seed in any::<u64>(),
    ) {
        let p = all_placements()[placement];
        let config = wide_config(p, spare, deltas.len() as u64 * 2);
        let env = TestEnv::new(&config, false);
        let mut tree = env.create(&config);
        let sorted = events_from_deltas(&config.schema, seed, &deltas);
        let arrivals = shuffle_bursts(&sorted, burst, &flips);
        let model = feed(&mut tree, &arrivals, queue_limit);
        let check = tree.verify().map_err(|e| TestCaseError::fail(format!("{p:?} spare {spare}: {e}")))?;
        prop_assert_eq!(check.events, model.len() as u64);
        prop_assert_eq!(tree.len(), model.len() as u64);
        let replay: Vec<Vec<u8>> = tree.replay().map(Result::unwrap).collect();
        prop_assert!(replay == model, "{:?}: replay differs from the model", p);
        check_queries(&tree, &Model { events: &model }, seed);
    }
}

#[test]
fn a_merge_into_full_leaves_carries_events_to_the_right_and_recovery_keeps_them() {
    for p in [all_placements()[0], all_placements()[40]] {
        let config = wide_config(p, 0, 400);
        let env = TestEnv::new(&config, false);
        let mut tree = env.create(&config);
        let deltas: Vec<u8> = vec![2; 120];
        let sorted = events_from_deltas(&config.schema, 3, &deltas);
        let (odd, even): (Vec<_>, Vec<_>) = sorted.iter().cloned().enumerate().partition(|(i, _)| i % 2 == 1);
        let mut arrivals: Vec<Vec<u8>> = even.into_iter().map(|(_, e)| e).collect();
        arrivals.extend(odd.into_iter().map(|(_, e)| e));
        let model = feed(&mut tree, &arrivals, 1000);
        assert!(tree.stats().events_carried > 0, "{p:?}: leaves without spare room must carry");
        assert!(tree.stats().leaves_rewritten > 0);
        tree.verify().unwrap();
        let replay: Vec<Vec<u8>> = tree.replay().map(Result::unwrap).collect();
        assert_eq!(replay, model, "{p:?}");
        drop(tree);
        let (tree, _) = TabTree::recover(config.clone(), env.media()).unwrap();
        assert_eq!(tree.len(), model.len() as u64, "{p:?}: a merge leaves nothing in a DRAM flank");
        tree.verify().unwrap();
        assert_eq!(tree.merged_ooo_generation(), if matches!(p.flank, FlankPlacement::Dram) { 0 } else { 1 });
    }
}

/// A tree of `n` events two timestamps apart (in order), then the given
/// late events (odd timestamps) merged as one queue generation.
fn merge_late_into(
    p: Placement,
    spare: u32,
    n: usize,
    late_at: &[usize],
) -> (TabTree, TestEnv, OooMergeReport, TreeConfig) {
    let config = wide_config(p, spare, (n + late_at.len()) as u64 * 2);
    let env = TestEnv::new(&config, false);
    let mut tree = env.create(&config);
    let sorted = events_from_deltas(&config.schema, 11, &vec![1u8; 2 * n]);
    let early: Vec<Vec<u8>> = sorted.iter().step_by(2).cloned().collect();
    let late: Vec<Vec<u8>> = late_at.iter().map(|&i| sorted[2 * i + 1].clone()).collect();
    append_all(&mut tree, &early, 0);
    let mut list = EventList::new(tree.leaf_layout().event_bytes());
    for e in &late {
        list.push(e);
    }
    let report = tree.merge_ooo(&list, 1).unwrap();
    let mut model = early;
    model.extend(late);
    model.sort_by_key(|e| timestamp_of(e));
    tree.verify().unwrap();
    let replay: Vec<Vec<u8>> = tree.replay().map(Result::unwrap).collect();
    assert_eq!(replay, model, "{p:?}");
    (tree, env, report, config)
}

#[test]
fn a_merge_rewrites_only_the_leaves_late_events_reach_and_each_once() {
    for p in [all_placements()[0], all_placements()[20], all_placements()[47]] {
        // 30 % spare room: late events in two separate leaves fit in them.
        let probe = merge_late_into(p, 300, 400, &[]).0;
        let fill = probe.leaf_layout().fill_limit();
        let (tree, _env, report, _) = merge_late_into(p, 300, 400, &[3, fill + 2, 5 * fill + 1]);
        assert_eq!(report.leaves_rewritten, 3, "{p:?}: the three leaves with late events, nothing else");
        assert_eq!(report.events_carried, 0, "{p:?}: the spare room holds them");
        assert_eq!(report.leaves_rewritten_twice, 0);
        assert_eq!(tree.stats().leaves_rewritten_twice, 0);
    }
}

#[test]
fn a_merge_into_full_leaves_carries_to_the_flank_in_one_pass() {
    for p in [all_placements()[0], all_placements()[20], all_placements()[47]] {
        // No spare room: late events in the first leaf shift every leaf after
        // it once, and the surplus (more than a leaf) reaches the flank.
        let probe = merge_late_into(p, 0, 300, &[]).0;
        let completed = probe.verify().unwrap().leaves - 1;
        let capacity = probe.leaf_layout().capacity();
        let late: Vec<usize> = (0..capacity + 5).collect();
        let (tree, env, report, config) = merge_late_into(p, 0, 300, &late);
        assert_eq!(report.leaves_rewritten, completed, "{p:?}: every completed leaf once");
        assert_eq!(report.leaves_rewritten_twice, 0, "{p:?}");
        assert!(report.events_carried > capacity as u64, "{p:?}: {report:?}");
        let len = tree.len();
        drop(tree);
        let (tree, _) = TabTree::recover(config, env.media()).unwrap();
        assert_eq!(tree.len(), len, "{p:?}: the merged tree is durable");
        tree.verify().unwrap();
    }
}
