//! Deterministic sample data for the block store's tests, benchmarks and
//! fuzz entry (chronicledb-pmem.txt section 2.2, "Storage Layout"): nodes of
//! a chosen length and compressibility ([`sample_node`]) and whole valid
//! block files with translation blocks and a flushed unsealed last block
//! ([`sample_block_file`]).

use std::path::Path;

use strata_media::FaultFs;

use crate::ids::NodeId;

use super::format::{PhysAddr, MAX_NODE_BYTES};
use super::store::BlockStore;

/// Path of the block file inside the in-memory file systems of the samples
/// and of the fuzz entry.
pub(super) const SAMPLE_PATH: &str = "blocks.evb";

/// A deterministic node: `len` bytes, compressible unless `noisy`.
pub fn sample_node(seed: u64, len: usize, noisy: bool) -> Vec<u8> {
    let mut x = seed ^ 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|i| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if noisy {
                (x >> 33) as u8
            } else {
                (seed as u8).wrapping_add((i / 16) as u8)
            }
        })
        .collect()
}

/// A node written to a store: its id, address and bytes.
pub type WrittenNode = (NodeId, PhysAddr, Vec<u8>);

/// A valid block file image built from `seed`: nodes of mixed sizes and
/// compressibility, translation blocks between them, a flushed unsealed last
/// block. Returns the image and every node with its address.
pub fn sample_block_file(seed: u64) -> (Vec<u8>, Vec<WrittenNode>) {
    let fs = FaultFs::new();
    let path = Path::new(SAMPLE_PATH);
    let mut store = BlockStore::create(&fs, path).expect("create on an in-memory fs");
    let mut nodes = Vec::new();
    let mut x = seed;
    let mut next = || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        x >> 33
    };
    let count = 4 + next() % 28;
    for i in 0..count {
        let r = next();
        if r % 13 == 0 {
            let payload = sample_node(r, (r % 300) as usize, true);
            store.append_translation_block(&payload).expect("translation block");
        }
        let len = match r % 5 {
            0 => MAX_NODE_BYTES,
            1 => 0,
            _ => (r % 3000) as usize,
        };
        let node = sample_node(r, len, r % 3 == 0);
        let id = if r % 7 == 0 { NodeId::index(i) } else { NodeId::leaf(i) };
        let addr = store.append(id, &node).expect("append");
        nodes.push((id, addr, node));
    }
    store.sync().expect("sync");
    (fs.peek(path).expect("file exists"), nodes)
}
