//! The block store against damaged files (chronicledb-pmem.txt section
//! 2.2, "Storage Layout"; `docs/format/events-blocks.md`, "Opening and torn
//! blocks"): empty, torn and foreign first blocks, a damaged last block
//! (salvage keeps what precedes the damage), and a damaged middle block
//! (corruption for scans and for its own records only).

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_media::fs::FileSystem;
use strata_media::FaultFs;

use super::test_support::{new_store, path, reopen, three_blocks};
use super::*;
use crate::ids::EventError;

#[test]
fn open_accepts_empty_and_torn_first_files_and_rejects_foreign_ones() {
    let (fs, _) = new_store();
    let (store, report) = reopen(&fs);
    assert_eq!((store.block_count(), report.blocks), (0, 0));
    // A torn first write: half the magic, then zeros.
    let file = fs.create(path()).unwrap();
    file.write_at(0, &BLOCK_MAGIC.to_le_bytes()[..3]).unwrap();
    file.write_at(3, &[0; 1000]).unwrap();
    let (store, report) = reopen(&fs);
    assert_eq!((store.block_count(), report.truncated_bytes), (0, 1003));
    assert_eq!(fs.peek(path()).unwrap().len(), 0);
    let file = fs.create(path()).unwrap();
    file.write_at(0, b"this is not an event block file").unwrap();
    assert!(BlockStore::open(&fs, path()).unwrap_err().is_corruption());
    file.write_at(0, &vec![7u8; 3 * BLOCK_BYTES]).unwrap();
    assert!(BlockStore::open(&fs, path()).unwrap_err().is_corruption(), "two bad blocks at the end");
    assert!(matches!(BlockStore::open(&fs, Path::new("absent")), Err(EventError::Io(_))));
}

#[test]
fn a_damaged_last_block_loses_nothing_of_earlier_blocks_or_before_the_damage() {
    let base_fs = FaultFs::new();
    let nodes = three_blocks(&base_fs);
    let image = base_fs.peek(path()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0xb10c);
    for trial in 0..200 {
        let at = 2 * BLOCK_BYTES + rng.gen_range(0..BLOCK_BYTES);
        let mut damaged = image.clone();
        damaged[at] ^= rng.gen_range(1..=255u8);
        let fs = FaultFs::new();
        fs.create(path()).unwrap().write_at(0, &damaged).unwrap();
        let (store, report) = BlockStore::open(&fs, path()).unwrap_or_else(|e| panic!("trial {trial}: {e}"));
        assert_eq!(report.torn_block, Some(2), "trial {trial} byte {at}");
        for (id, addr, bytes) in &nodes {
            let intact = addr.block() < 2 || (addr.file_offset() as usize + 24 + bytes.len() <= at);
            if intact {
                assert_eq!(store.read_node(*addr).unwrap(), (*id, bytes.clone()), "trial {trial} byte {at}");
            }
        }
        let scanned = store.scan().collect::<Result<Vec<_>, _>>().unwrap();
        assert!(scanned.len() >= nodes.iter().filter(|n| n.1.block() < 2).count());
    }
}

#[test]
fn a_damaged_middle_block_is_corruption_for_scans_and_for_its_records_only() {
    let fs = FaultFs::new();
    let nodes = three_blocks(&fs);
    let victim = nodes.iter().find(|n| n.1.block() == 1).unwrap().clone();
    let file = fs.open(path()).unwrap();
    let at = victim.1.file_offset() + 30;
    let mut b = [0u8];
    file.read_exact_at(at, &mut b).unwrap();
    file.write_at(at, &[b[0] ^ 0x55]).unwrap();
    let (store, _) = reopen(&fs);
    let err = store.scan().find_map(Result::err).expect("the scan reports the bad block");
    assert!(err.is_corruption() && err.to_string().contains("block 1"), "{err}");
    assert!(store.read_node(victim.1).unwrap_err().is_corruption());
    for (id, addr, bytes) in nodes.iter().filter(|n| n.1 != victim.1) {
        assert_eq!(store.read_node(*addr).unwrap(), (*id, bytes.clone()));
    }
}
