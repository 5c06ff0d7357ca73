//! Tests of the interleaved ATT: SSD reads of cold lookups (section 4.2's
//! "two random reads with 32 KiB each" for height three), commit sizes,
//! recovery from the last commit, a commit torn by a crash, and updates of
//! nodes whose ATT leaf is already on SSD.

use std::path::Path;

use strata_media::fs::FileSystem;
use strata_media::FaultFs;

use super::att_node::ATT_MAX_FANOUT;
use super::*;
use crate::block_store::{sample_node, BLOCK_BYTES};

fn path() -> &'static Path {
    Path::new("att.blocks")
}

/// A store and an ATT of `fanout` with leaves `0..count` written in order.
fn written(fs: &FaultFs, fanout: u32, count: u64) -> (BlockStore, AttTranslation, Vec<PhysAddr>) {
    let mut store = BlockStore::create(fs, path()).unwrap();
    let mut att = AttTranslation::new(AttOptions { fanout }).unwrap();
    let addrs = (0..count)
        .map(|i| {
            let addr = store.append(NodeId::leaf(i), &sample_node(i, 100, false)).unwrap();
            att.set(&mut store, NodeId::leaf(i), addr).unwrap();
            addr
        })
        .collect();
    (store, att, addrs)
}

fn reads(att: &AttTranslation) -> u64 {
    att.stats().ssd_block_reads
}

#[test]
fn heights_follow_the_fanout_and_the_default_fills_32_kib_blocks() {
    let att = AttTranslation::new(AttOptions::default()).unwrap();
    assert_eq!(att.fanout(), ATT_MAX_FANOUT);
    let f = ATT_MAX_FANOUT as u64;
    assert_eq!([att.height_for(1), att.height_for(f), att.height_for(f + 1)], [1, 1, 2]);
    assert_eq!([att.height_for(f * f), att.height_for(f * f + 1)], [2, 3]);
    assert_eq!(att.height_for(u64::MAX), 6, "six levels of 4083 cover every node number");
    assert!(AttTranslation::new(AttOptions { fanout: 1 }).is_err());
    assert!(AttTranslation::new(AttOptions { fanout: ATT_MAX_FANOUT + 1 }).is_err());
}

#[test]
fn cold_lookups_in_a_height_three_tree_read_two_translation_blocks() {
    let fs = FaultFs::new();
    let (store, att, addrs) = written(&fs, 8, 300);
    assert_eq!(att.height(NodeKind::Leaf), 3, "8^2 < 300 <= 8^3");
    let before = reads(&att);
    assert_eq!(att.get(&store, NodeId::leaf(0)).unwrap(), Some(addrs[0]));
    assert_eq!(reads(&att) - before, 2, "root in DRAM: the level-1 node and the leaf are read");
    let before = reads(&att);
    assert_eq!(att.get(&store, NodeId::leaf(299)).unwrap(), Some(addrs[299]));
    assert_eq!(reads(&att) - before, 0, "the flank leaf is in DRAM");
    let before = reads(&att);
    assert_eq!(att.get(&store, NodeId::leaf(260)).unwrap(), Some(addrs[260]));
    assert_eq!(reads(&att) - before, 1, "the level-1 flank node is in DRAM, the leaf is read");
    assert_eq!(att.get(&store, NodeId::leaf(300)).unwrap(), None);
    assert_eq!(att.get(&store, NodeId::index(0)).unwrap(), None);
    assert!(att.dram_nodes(NodeKind::Leaf) <= 3, "only the flank stays in DRAM");
    let stats = store.stats();
    assert_eq!(stats.block_reads, 3, "every SSD read of the ATT is one 32 KiB block read");
}

#[test]
fn a_full_flank_leaf_commits_one_block_per_level() {
    let fs = FaultFs::new();
    let (mut store, mut att, _) = written(&fs, 8, 64);
    // Leaves 0..7 are full: seven flank moves; from 9 ids on the tree has two
    // levels, from 65 three.
    let s = att.stats();
    assert_eq!(s.commits, 7);
    let blocks_before = s.translation_blocks_written;
    let addr = store.append(NodeId::leaf(64), b"grows the tree").unwrap();
    att.set(&mut store, NodeId::leaf(64), addr).unwrap();
    let s = att.stats();
    assert_eq!(att.height(NodeKind::Leaf), 3);
    assert_eq!(s.commits, 8);
    assert_eq!(s.translation_blocks_written - blocks_before, 3, "leaf, level-1 node, new root");
    assert_eq!(s.pending, 1, "the triggering update waits in the new flank leaf");
    assert_eq!(store.stats().translation_blocks_written, s.translation_blocks_written);
}

#[test]
fn recovery_replays_only_the_records_since_the_last_commit() {
    let fs = FaultFs::new();
    let (mut store, att, addrs) = written(&fs, 8, 100);
    store.sync().unwrap();
    drop(att);
    drop(store);
    let (mut store, _) = BlockStore::open(&fs, path()).unwrap();
    let (att, report) = AttTranslation::recover(&mut store, AttOptions { fanout: 8 }).unwrap();
    assert_eq!(report.records_scanned, 100 % 8, "the flank leaf's updates since the commit at 96");
    assert_eq!(report.replay_from, addrs[96]);
    for (i, addr) in addrs.iter().enumerate() {
        assert_eq!(att.get(&store, NodeId::leaf(i as u64)).unwrap(), Some(*addr), "leaf {i}");
    }
}

#[test]
fn an_explicit_commit_leaves_nothing_to_replay_and_the_file_keeps_its_fanout() {
    let fs = FaultFs::new();
    let (mut store, mut att, addrs) = written(&fs, 5, 42);
    att.commit(&mut store).unwrap();
    assert_eq!(att.stats().pending, 0);
    store.sync().unwrap();
    let (mut store, _) = BlockStore::open(&fs, path()).unwrap();
    let (att, report) = AttTranslation::recover(&mut store, AttOptions::default()).unwrap();
    assert_eq!(report.records_scanned, 0);
    assert_eq!(att.fanout(), 5, "a recovered tree keeps the fanout it was written with");
    assert_eq!(att.get(&store, NodeId::leaf(41)).unwrap(), Some(addrs[41]));
}

#[test]
fn a_commit_torn_by_a_crash_falls_back_to_the_previous_one() {
    let fs = FaultFs::new();
    let (mut store, mut att, mut addrs) = written(&fs, 8, 16);
    store.sync().unwrap();
    let committed_blocks = store.stats().translation_blocks_written;
    let addr = store.append(NodeId::leaf(16), b"moves the flank").unwrap();
    att.set(&mut store, NodeId::leaf(16), addr).unwrap();
    addrs.push(addr);
    store.sync().unwrap();
    assert!(store.stats().translation_blocks_written > committed_blocks, "the update committed");
    let last = store.last_translation_block().unwrap();
    drop(att);
    drop(store);
    // Tear the commit's root block: cut the file in its payload (a block
    // cut in its zero padding would still be valid).
    let file = fs.open(path()).unwrap();
    file.set_len(last.block() * BLOCK_BYTES as u64 + 100).unwrap();
    let (mut store, report) = BlockStore::open(&fs, path()).unwrap();
    assert_eq!(report.torn_block, Some(last.block()), "{report:?}");
    let (att, recovery) = AttTranslation::recover(&mut store, AttOptions { fanout: 8 }).unwrap();
    assert!(recovery.records_scanned > 1, "replayed from the previous commit: {recovery:?}");
    for (i, addr) in addrs.iter().enumerate() {
        assert_eq!(att.get(&store, NodeId::leaf(i as u64)).unwrap(), Some(*addr), "leaf {i}");
    }
}

#[test]
fn index_nodes_written_late_update_att_leaves_already_on_ssd() {
    let fs = FaultFs::new();
    let mut store = BlockStore::create(&fs, path()).unwrap();
    let mut att = AttTranslation::new(AttOptions { fanout: 4 }).unwrap();
    let mut expect = std::collections::BTreeMap::new();
    // Index nodes are written when full, long after they got their ids.
    for number in (10..40).chain([2, 11, 7, 3, 25, 40, 0, 41]) {
        let id = NodeId::index(number);
        let addr = store.append(id, &sample_node(number, 64, false)).unwrap();
        att.set(&mut store, id, addr).unwrap();
        expect.insert(id, addr);
    }
    assert!(att.stats().ssd_block_reads > 0, "old ATT leaves were loaded to be changed");
    for (id, addr) in &expect {
        assert_eq!(att.get(&store, *id).unwrap(), Some(*addr), "{id}");
    }
    assert_eq!(att.get(&store, NodeId::index(1)).unwrap(), None);
    store.sync().unwrap();
    let (mut store, _) = BlockStore::open(&fs, path()).unwrap();
    let (att, _) = AttTranslation::recover(&mut store, AttOptions { fanout: 4 }).unwrap();
    for (id, addr) in &expect {
        assert_eq!(att.get(&store, *id).unwrap(), Some(*addr), "{id} after recovery");
    }
    assert_eq!(att.height(NodeKind::Leaf), 0, "no leaf was written");
}

#[test]
fn a_record_set_after_an_explicit_commit_is_replayed() {
    let fs = FaultFs::new();
    let (mut store, mut att, _) = written(&fs, 8, 10);
    let late = store.append(NodeId::leaf(10), b"appended before the commit, set after").unwrap();
    att.commit(&mut store).unwrap();
    att.set(&mut store, NodeId::leaf(10), late).unwrap();
    store.sync().unwrap();
    drop(att);
    let (mut store, _) = BlockStore::open(&fs, path()).unwrap();
    let (att, report) = AttTranslation::recover(&mut store, AttOptions { fanout: 8 }).unwrap();
    assert_eq!(report.records_scanned, 1, "replay starts right after the last update before the commit");
    assert_eq!(att.get(&store, NodeId::leaf(10)).unwrap(), Some(late));
}
