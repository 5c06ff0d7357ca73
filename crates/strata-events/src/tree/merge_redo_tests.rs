//! The redoable out-of-order merge (chronicledb-pmem.txt section 4.3, made
//! crash-safe; `docs/format/events-flank.md`, "Out-of-order merges"): an
//! I/O failure at every file operation of a merge stops it where a crash
//! would; recovery from what is durable then keeps it pending, refuses
//! appends, and resuming with the queue's events finishes it with every
//! event exactly once, also when the resume itself is cut.

use strata_media::fs::FailMode;

use super::test_support::*;
use super::*;
use crate::event::timestamp_of;
use crate::ooo::EventList;

fn list(events: &[Vec<u8>], event_bytes: usize) -> EventList {
    let mut l = EventList::new(event_bytes);
    for e in events {
        l.push(e);
    }
    l
}

/// Every other event in order, then the rest merged as one queue generation.
/// Events in arrival or time order.
type Events = Vec<Vec<u8>>;

/// `(early, late, model)`.
fn split_workload(config: &TreeConfig) -> (Events, Events, Events) {
    let deltas: Vec<u8> = (0..90u32).map(|i| [1u8, 0, 2][i as usize % 3]).collect();
    let sorted = events_from_deltas(&config.schema, 5, &deltas);
    let (late, early): (Vec<_>, Vec<_>) = sorted.iter().cloned().enumerate().partition(|(i, _)| i % 3 == 1);
    let early: Vec<Vec<u8>> = early.into_iter().map(|(_, e)| e).collect();
    let late: Vec<Vec<u8>> = late.into_iter().map(|(_, e)| e).collect();
    let mut model = early.clone();
    model.extend(late.iter().cloned());
    model.sort_by_key(|e| timestamp_of(e));
    (early, late, model)
}

/// Recovers `env` and finishes the merge of `late` (generation 7) whatever
/// state it is in; returns whether it was pending.
fn recover_and_finish(
    config: &TreeConfig,
    env: &TestEnv,
    late: &[Vec<u8>],
    early: &[Vec<u8>],
    at: &str,
) -> (TabTree, bool) {
    let eb = config.schema.event_bytes();
    let (mut tree, report) =
        TabTree::recover(config.clone(), env.media()).unwrap_or_else(|e| panic!("{at}: recovery: {e}"));
    let pending = tree.pending_ooo_merge();
    assert_eq!(report.merge_pending, pending.is_some());
    match pending {
        Some(pending) => {
            assert_eq!(pending, PendingOooMerge { generation: 7, input_events: late.len() as u64 });
            let err = tree.append(&late[0]).unwrap_err();
            assert!(err.to_string().contains("resume"), "{err}");
            let err = tree.resume_ooo_merge(&list(&late[1..], eb)).unwrap_err();
            assert!(err.to_string().contains("input events"), "{err}");
            tree.resume_ooo_merge(&list(late, eb)).unwrap_or_else(|e| panic!("{at}: resume: {e}"));
            assert_eq!(tree.pending_ooo_merge(), None);
            assert_eq!(tree.merged_ooo_generation(), 7);
        }
        None if tree.merged_ooo_generation() == 7 => {}
        None => {
            // Cut before the redo record: nothing of the queue is in the tree.
            let replay: Vec<Vec<u8>> = tree.replay().map(Result::unwrap).collect();
            assert_eq!(replay, early, "{at}");
            tree.merge_ooo(&list(late, eb), 7).unwrap();
        }
    }
    (tree, pending.is_some())
}

#[test]
fn a_merge_cut_at_any_file_operation_is_pending_after_recovery_and_resumes_exactly_once() {
    // PMem flank with: inline aggregates, SSD index nodes, PMem translation;
    // the same with the ATT; PMem aggregate array and PMem index nodes.
    let placements = [all_placements()[20], all_placements()[19], all_placements()[47]];
    for p in placements {
        assert!(matches!(p.flank, FlankPlacement::Pmem { .. }));
        let config = wide_config(p, 300, 200);
        let eb = config.schema.event_bytes();
        let (early, late, model) = split_workload(&config);
        let (mut pending_seen, mut cut, mut double_cut) = (0, 0, 0);
        for offset in 1..400u64 {
            let env = TestEnv::new(&config, true);
            let mut tree = env.create(&config);
            append_all(&mut tree, &early, 4);
            tree.sync().unwrap();
            env.fs.fail_at(env.fs.ops() + offset, FailMode::Forever);
            let result = tree.merge_ooo(&list(&late, eb), 7);
            drop(tree);
            if result.is_ok() {
                assert!(offset > 1, "{p:?}: the merge must write files");
                break;
            }
            cut += 1;
            let at = format!("{p:?} cut at {offset}");
            let crashed = env.crash();
            if offset % 4 == 1 {
                // A second cut, inside the resume, recovered the same way.
                for again in [1u64, 2, 5, 9] {
                    let twice = crashed.crash();
                    let (tree, report) = TabTree::recover(config.clone(), twice.media()).unwrap();
                    let Some(pending) = tree.pending_ooo_merge() else { break };
                    assert!(report.merge_pending);
                    let mut tree = tree;
                    twice.fs.fail_at(twice.fs.ops() + again, FailMode::Forever);
                    if tree.resume_ooo_merge(&list(&late, eb)).is_ok() {
                        break;
                    }
                    assert_eq!(tree.pending_ooo_merge(), Some(pending), "a failed resume stays pending");
                    drop(tree);
                    double_cut += 1;
                    let at = format!("{at}, resume cut at {again}");
                    let (tree, _) = recover_and_finish(&config, &twice.crash(), &late, &early, &at);
                    tree.verify().unwrap_or_else(|e| panic!("{at}: {e}"));
                    let replay: Vec<Vec<u8>> = tree.replay().map(Result::unwrap).collect();
                    assert_eq!(replay, model, "{at}: every event once, in order");
                }
            }
            let (tree, was_pending) = recover_and_finish(&config, &crashed, &late, &early, &at);
            pending_seen += usize::from(was_pending);
            tree.verify().unwrap_or_else(|e| panic!("{at}: {e}"));
            let replay: Vec<Vec<u8>> = tree.replay().map(Result::unwrap).collect();
            assert_eq!(replay, model, "{at}: every event once, in order");
        }
        assert!(
            cut > 10 && pending_seen > 5 && double_cut > 3,
            "{p:?}: {cut} cuts, {pending_seen} pending, {double_cut} double"
        );
    }
}

#[test]
fn resuming_without_a_pending_merge_is_refused_and_a_dram_flank_records_nothing() {
    let config = wide_config(all_placements()[0], 300, 100);
    let env = TestEnv::new(&config, false);
    let mut tree = env.create(&config);
    let eb = config.schema.event_bytes();
    let (early, late, model) = split_workload(&config);
    append_all(&mut tree, &early, 0);
    let err = tree.resume_ooo_merge(&list(&late, eb)).unwrap_err();
    assert!(err.to_string().contains("no out-of-order merge is pending"), "{err}");
    let report = tree.merge_ooo(&list(&late, eb), 1).unwrap();
    assert_eq!(report.events_merged, late.len() as u64);
    assert_eq!(report.events_into_leaves + report.events_appended, late.len() as u64);
    assert!(report.leaves_rewritten > 0);
    assert_eq!(tree.pending_ooo_merge(), None);
    tree.verify().unwrap();
    let replay: Vec<Vec<u8>> = tree.replay().map(Result::unwrap).collect();
    assert_eq!(replay, model);
}

#[test]
fn a_merge_left_pending_by_flank_format_2_resumes_from_its_leaf_step() {
    // The fixture: what a build of flank format 2 left on the media when it
    // crashed right after recording its merge's first step (a leaf step of
    // the first chunk, record kind 1). This build redoes that step with the
    // version-2 protocol and merges the rest in one pass.
    for p in [all_placements()[20], all_placements()[47]] {
        let config = wide_config(p, 300, 200);
        let eb = config.schema.event_bytes();
        let (early, late, model) = split_workload(&config);
        let env = TestEnv::new(&config, true);
        let mut tree = env.create(&config);
        tree.flank.pmem_mut().unwrap().restamp_version(flank_pmem::FLANK_VERSION_OLDEST);
        append_all(&mut tree, &early, 4);
        tree.sync().unwrap();
        tree.write_out_flank_leaf().unwrap();
        let first_leaf = tree.path_for_ts(timestamp_of(&late[0])).unwrap().leaf;
        let chunk = late
            .iter()
            .take_while(|e| tree.path_for_ts(timestamp_of(e)).unwrap().leaf == first_leaf)
            .count()
            .min(tree.leaf_layout().capacity());
        let before = tree.storage.leaf_addr(first_leaf).unwrap();
        let step = merge_record::MergeStep::Leaf { leaf: first_leaf, before, carry: None };
        let first = merge_record::MergeRecord { done: 0, chunk: chunk as u32, step };
        tree.flank.begin_merge(7, late.len() as u64, &first);
        drop(tree);
        let crashed = env.crash();
        let (mut tree, report) = TabTree::recover(config.clone(), crashed.media()).unwrap();
        assert!(report.merge_pending, "{p:?}: the version-2 area opens with its merge pending");
        let resumed = tree.resume_ooo_merge(&list(&late, eb)).unwrap();
        assert!(resumed.leaves_rewritten > 0, "{p:?}");
        tree.verify().unwrap();
        let replay: Vec<Vec<u8>> = tree.replay().map(Result::unwrap).collect();
        assert_eq!(replay, model, "{p:?}: every event once, in order");
        drop(tree);
        let (tree, _) = TabTree::recover(config.clone(), crashed.crash().media()).unwrap();
        assert_eq!(tree.len(), model.len() as u64, "{p:?}: and it stays so");
    }
}
