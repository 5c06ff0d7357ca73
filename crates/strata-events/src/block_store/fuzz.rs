//! The fuzz entry of the block store (chronicledb-pmem.txt section 2.2,
//! "Storage Layout"): [`fuzz_block_decode`] opens and scans a block file
//! image made from arbitrary bytes, or from a valid sample file damaged by
//! the input, and must never panic. The cargo-fuzz target
//! `fuzz/fuzz_targets/events_block_decode.rs` calls it; the crate's fuzz
//! smoke test runs it over seeded inputs.

use std::path::Path;
use std::sync::OnceLock;

use strata_media::fs::FileSystem;
use strata_media::FaultFs;

use crate::ids::{EventError, NodeId};

use super::samples::{sample_block_file, SAMPLE_PATH};
use super::store::BlockStore;

fn fuzz_images() -> &'static Vec<Vec<u8>> {
    static IMAGES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    IMAGES.get_or_init(|| (0..8).map(|s| sample_block_file(s).0).collect())
}

/// The fuzz entry (`fuzz/fuzz_targets/events_block_decode.rs`): opens and
/// scans a block file image made from arbitrary bytes and must never panic.
///
/// Input: `mode (1) | rest`. Mode bit 0 clear: `rest` is the file image.
/// Set: a valid sample image (`rest[0] % 8`) damaged by `rest[1..]` read as
/// 4-byte edits `offset_lo, offset_hi, offset_block, value` (XOR into the
/// image), and with mode bit 1 cut to a length taken from the edits. Checks:
/// open fails only with `Corruption` or `Io`; every scanned record reads
/// back with its id and length; appending and reopening after open works.
pub fn fuzz_block_decode(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let image = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        let images = fuzz_images();
        let mut image = images[rest.first().map_or(0, |b| *b as usize % images.len())].clone();
        let edits = rest.get(1..).unwrap_or(&[]);
        let mut cut = None;
        for e in edits.chunks_exact(4) {
            let at = (e[0] as usize | (e[1] as usize) << 8 | (e[2] as usize % 8) << 16) % image.len().max(1);
            if let Some(b) = image.get_mut(at) {
                *b ^= e[3].max(1);
            }
            cut = Some(at);
        }
        if mode & 2 != 0 {
            image.truncate(cut.unwrap_or(image.len() / 2));
        }
        image
    };
    let fs = FaultFs::new();
    let path = Path::new(SAMPLE_PATH);
    {
        let file = fs.create(path).expect("create on an in-memory fs");
        file.write_at(0, &image).expect("write image");
        file.sync_all().expect("sync image");
    }
    let (mut store, report) = match BlockStore::open(&fs, path) {
        Ok(v) => v,
        Err(e) => {
            assert!(e.is_corruption() || matches!(e, EventError::Io(_)), "open failed with {e}");
            return;
        }
    };
    assert_eq!(report.end, store.end());
    for r in store.scan() {
        match r {
            Ok(rec) => {
                let (id, bytes) = store.read_node(rec.addr).expect("a scanned record reads back");
                assert_eq!(id, rec.node_id);
                assert_eq!(bytes.len(), rec.node_len as usize);
            }
            Err(e) => {
                assert!(e.is_corruption(), "scan failed with {e}");
                break;
            }
        }
    }
    if let Some(t) = store.last_translation_block() {
        if let Err(e) = store.read_translation_block(t) {
            assert!(e.is_corruption(), "translation block read failed with {e}");
        }
    }
    let addr = store.append(NodeId::leaf(7), b"after open").expect("append after open");
    store.sync().expect("sync after open");
    drop(store);
    let (store, _) = BlockStore::open(&fs, path).expect("reopen after a clean append");
    assert_eq!(store.read(addr).expect("read after reopen"), b"after open");
}
