//! The end of a write-out on the PMem flank (`flank_pmem/write_out.rs`,
//! `docs/format/events-flank.md` "Write-out of a full node"): two fences in
//! a version-4 area, four in a version-3 one (which still recovers), and
//! the images E1 and E2 can leave, built by hand: the parent's count without
//! the new entry under a committed or an ended journal.

use super::flank_pmem::{self, journal_commit_word, PmemFlankArea};
use super::planted::{PlantedBug, PLANTED_BUG};
use super::test_support::*;
use super::*;
use crate::node::header::OFFSET_COUNT;

/// PMem flank placements: batch 1, inline aggregates, index on SSD, DRAM
/// translation; batch 3, aligned PMem aggregate array, index on PMem, PMem
/// translation.
fn pmem_placements() -> [Placement; 2] {
    let all = all_placements();
    let picked = [all[18], all[53]];
    assert!(picked.iter().all(|p| matches!(p.flank, FlankPlacement::Pmem { .. })), "{picked:?}");
    picked
}

fn area(tree: &mut TabTree) -> &mut PmemFlankArea {
    tree.flank.pmem_mut().expect("a PMem flank")
}

/// A tree of height 2 or more whose last step was the write-out of the
/// flank leaf, with `events` appended.
fn tree_after_a_leaf_write_out(config: &TreeConfig, env: &TestEnv, version: u32) -> (TabTree, Vec<Vec<u8>>) {
    let mut tree = env.create(config);
    if version < flank_pmem::FLANK_VERSION {
        // What a version-3 format left: zero node words in the journal.
        let a = area(&mut tree);
        a.patch_persisted(flank_pmem::FLANK_OFFSET_JOURNAL_OLD_ID, &[0; 16]);
        a.restamp_version(version);
    }
    let fill = config.leaf_layout().unwrap().fill_limit();
    let deltas: Vec<u8> = (0..fill * 3 + fill / 2).map(|i| (i % 3) as u8).collect();
    let events = events_from_deltas(&config.schema, 11, &deltas);
    append_all(&mut tree, &events, 5);
    tree.sync().unwrap();
    assert!(tree.write_out_flank_leaf().unwrap());
    assert!(tree.height() >= 2);
    (tree, events)
}

fn recover_all(config: &TreeConfig, env: &TestEnv, events: &[Vec<u8>], what: &str) -> TreeRecoveryReport {
    let (tree, report) =
        TabTree::recover(config.clone(), env.media()).unwrap_or_else(|e| panic!("{what}: {e}"));
    tree.verify().unwrap_or_else(|e| panic!("{what}: {e}"));
    let replayed: Vec<Vec<u8>> = tree.replay().collect::<Result<_, _>>().unwrap();
    assert_eq!(replayed.len(), events.len(), "{what}: every event");
    assert!(replayed == events, "{what}: in order");
    report
}

#[test]
fn a_version_4_write_out_saves_two_fences_and_a_version_3_area_keeps_its_order() {
    for p in pmem_placements() {
        let config = wide_config(p, 300, 400);
        let mut fences = Vec::new();
        for version in [flank_pmem::FLANK_VERSION, flank_pmem::FLANK_VERSION_PREVIOUS] {
            let env = TestEnv::new(&config, true);
            let (mut tree, mut events) = tree_after_a_leaf_write_out(&config, &env, version);
            let fill = config.leaf_layout().unwrap().fill_limit();
            let more = events_from_deltas(&config.schema, 12, &vec![1; fill - 1]);
            let base = tree.newest_ts();
            for mut e in more {
                let ts = crate::event::timestamp_of(&e) + base + 1;
                e[..8].copy_from_slice(&ts.to_le_bytes());
                tree.append(&e).unwrap();
                events.push(e);
            }
            tree.sync().unwrap();
            let before = area(&mut tree).stats().fences;
            let written = |t: &TabTree| t.stats().leaves_written + t.stats().index_nodes_written;
            let written_before = written(&tree);
            assert!(tree.write_out_flank_leaf().unwrap());
            let write_outs = written(&tree) - written_before;
            fences.push((area(&mut tree).stats().fences - before, write_outs));
            assert_eq!(area(&mut tree).version(), version);
            drop(tree);
            let crashed = env.crash();
            recover_all(&config, &crashed, &events, &format!("{p:?} version {version}"));
            let (mut tree, _) = TabTree::recover(config.clone(), crashed.media()).unwrap();
            assert_eq!(area(&mut tree).version(), version, "an area keeps its version");
        }
        let ((v4, n), (v3, n3)) = (fences[0], fences[1]);
        assert_eq!(n, n3, "{p:?}: the same write-outs");
        assert_eq!(v3 - v4, 2 * n, "{p:?}: (fences, write-outs) of version 4 and 3: {fences:?}");
    }
}

/// Rolls the parent's (level 1) durable count back by one: the image E2
/// leaves when its ended word persisted but not the parent's header.
fn drop_parent_entry(tree: &mut TabTree) {
    let a = area(tree);
    let at = a.slot_offset(1) + OFFSET_COUNT as u64;
    let count = u32::from_le_bytes(a.read_bytes(at, 4).try_into().unwrap());
    assert!(count >= 2);
    a.patch_persisted(at, &(count - 1).to_le_bytes());
}

/// A version-4 tree of `p` right after a leaf write-out whose parent's
/// durable count was rolled back (E2's ended word without the count).
fn without_the_parent_entry(p: Placement) -> (TreeConfig, TestEnv, TabTree, Vec<Vec<u8>>) {
    let config = wide_config(p, 300, 400);
    let env = TestEnv::new(&config, true);
    let (mut tree, events) = tree_after_a_leaf_write_out(&config, &env, flank_pmem::FLANK_VERSION);
    drop_parent_entry(&mut tree);
    (config, env, tree, events)
}

#[test]
fn an_ended_journal_whose_parent_missed_its_entry_gets_it_back() {
    for p in pmem_placements() {
        let (config, env, tree, events) = without_the_parent_entry(p);
        drop(tree);
        let crashed = env.crash();
        let report = recover_all(&config, &crashed.crash(), &events, &format!("{p:?}"));
        assert!(report.journal_redone, "{p:?}: the entry was appended again");
        // Planted: trusting the ended word loses the last leaf's events.
        PLANTED_BUG.with(|b| b.set(PlantedBug::TrustEndedJournal));
        let planted = TabTree::recover(config.clone(), crashed.crash().media()).map(|(t, _)| t.len());
        PLANTED_BUG.with(|b| b.set(PlantedBug::None));
        assert!(planted.map_or(true, |n| n < events.len() as u64), "{p:?}: the planted bug shows");
    }
}

#[test]
fn a_committed_journal_after_e1_makes_the_entry_from_the_stored_node() {
    for p in pmem_placements() {
        let (config, env, mut tree, events) = without_the_parent_entry(p);
        let a = area(&mut tree);
        let fields = a.read_bytes(flank_pmem::FLANK_OFFSET_JOURNAL_LEVEL, 32);
        a.patch_persisted(
            flank_pmem::FLANK_OFFSET_JOURNAL_STATE,
            &journal_commit_word(&fields).to_le_bytes(),
        );
        drop(tree);
        let report = recover_all(&config, &env.crash(), &events, &format!("{p:?}"));
        assert!(report.journal_redone, "{p:?}");
    }
}
