//! The stable-toolchain smoke test of the fuzz entry `fuzz_open`: valid
//! images with a few bytes overwritten (in the superblock, LCTT, directory,
//! Halloc metadata, block headers and slots), truncated images, and random
//! ones. Seeded; the seed and case are printed on failure.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_fir::fuzz::{fuzz_open, fuzz_schemas};
use strata_fir::{FirDb, FirOptions};
use strata_pmem::Region;
use strata_txn::{RowKey, TableId, WorkerId};

const SEED: u64 = 0xF12_F022;
const CASES: u32 = 6000;

/// A database with versions in two regions, over more than one block, and
/// a checkpoint with versions after it.
fn valid_image() -> Vec<u8> {
    let region = Arc::new(Region::sim(512 << 10));
    let db = FirDb::create(
        region.clone(),
        &fuzz_schemas(),
        &FirOptions { workers: 2, blocks_per_table: 4, table_blocks: Vec::new(), checkpoint_keys: 2200 },
    )
    .unwrap();
    for i in 0..2100u64 {
        let mut t = db.begin(WorkerId((i % 2) as u32)).unwrap();
        t.insert(TableId(0), RowKey(i), &i.to_le_bytes()).unwrap();
        t.commit().unwrap();
    }
    let mut t = db.begin(WorkerId(0)).unwrap();
    t.put(TableId(0), RowKey(0), &[7; 8]).unwrap();
    t.commit_durably().unwrap();
    // A checkpoint, then versions above its time.
    db.checkpoint(strata_fir::CheckpointKind::Full).unwrap();
    for i in 0..50u64 {
        let mut t = db.begin(WorkerId((i % 2) as u32)).unwrap();
        t.put(TableId(0), RowKey(i * 7), &[i as u8; 8]).unwrap();
        t.commit_durably().unwrap();
    }
    let mut open = db.begin(WorkerId(1)).unwrap();
    open.put(TableId(0), RowKey(1), &[9; 8]).unwrap();
    // Its version is flushed; a fence (as a later commit's would) makes it
    // reach the image, for recovery to discard.
    region.fence();
    let image = region.as_sim().unwrap().persistent_image();
    drop(open);
    image
}

#[test]
fn fuzz_open_never_panics_on_damaged_truncated_or_random_images() {
    let valid = valid_image();
    let (db, report) = FirDb::open(Arc::new(Region::sim_from_image(valid.clone())), &fuzz_schemas()).unwrap();
    assert_eq!(db.rows(TableId(0)).unwrap().len(), 2100, "the valid image opens whole: {report:?}");
    assert_eq!(report.versions_discarded, 1, "the open transaction's version");
    assert_eq!(report.checkpoint_entries, 2100, "{report:?}");
    drop(db);
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    for case in 0..CASES {
        let input = match case % 4 {
            0 => (0..rng.gen_range(0..4096)).map(|_| rng.gen::<u8>()).collect(),
            1 => valid[..rng.gen_range(0..valid.len())].to_vec(),
            _ => {
                let mut image = valid.clone();
                for _ in 0..rng.gen_range(1..4) {
                    // Mostly the metadata: the first 8 KiB and each block's first 400 bytes.
                    let at = match rng.gen_range(0..3) {
                        0 => rng.gen_range(0..8192),
                        1 => {
                            let block = rng.gen_range(0..valid.len() / 4096) * 4096;
                            (block + rng.gen_range(0..400)).min(valid.len() - 1)
                        }
                        _ => rng.gen_range(0..valid.len()),
                    };
                    image[at] = rng.gen();
                }
                image
            }
        };
        let r = std::panic::catch_unwind(|| fuzz_open(&input));
        assert!(r.is_ok(), "seed {SEED:#x} case {case}: fuzz_open panicked on a {} byte input", input.len());
    }
}
