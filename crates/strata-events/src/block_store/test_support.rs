//! Helpers shared by the block store's tests: the file path, a fresh store
//! on an in-memory file system, reopening, and a three-block sample store.

use std::path::Path;

use strata_media::FaultFs;

use crate::ids::NodeId;

use super::{sample_node, BlockStore, OpenReport, WrittenNode};

pub(super) fn path() -> &'static Path {
    Path::new("blocks.evb")
}

pub(super) fn new_store() -> (FaultFs, BlockStore) {
    let fs = FaultFs::new();
    let store = BlockStore::create(&fs, path()).unwrap();
    (fs, store)
}

pub(super) fn reopen(fs: &FaultFs) -> (BlockStore, OpenReport) {
    BlockStore::open(fs, path()).unwrap()
}

/// Three synced blocks; the returned nodes with their addresses.
pub(super) fn three_blocks(fs: &FaultFs) -> Vec<WrittenNode> {
    let mut store = BlockStore::create(fs, path()).unwrap();
    let mut nodes = Vec::new();
    for i in 0..20 {
        let bytes = sample_node(i, 3000 + i as usize * 97, true);
        let addr = store.append(NodeId::leaf(i), &bytes).unwrap();
        nodes.push((NodeId::leaf(i), addr, bytes));
    }
    store.sync().unwrap();
    assert_eq!(store.block_count(), 3);
    nodes
}
