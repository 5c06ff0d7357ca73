//! The fuzz entry's smoke test and the sample files (chronicledb-pmem.txt
//! section 2.2, "Storage Layout"): every sample file opens cleanly and reads
//! back, and [`fuzz_block_decode`] never panics on 20,000 seeded inputs.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_media::fs::FileSystem;
use strata_media::FaultFs;

use super::test_support::path;
use super::*;

#[test]
fn sample_files_round_trip_through_open() {
    for seed in 0..16 {
        let (image, nodes) = sample_block_file(seed);
        let fs = FaultFs::new();
        fs.create(path()).unwrap().write_at(0, &image).unwrap();
        let (store, report) = BlockStore::open(&fs, path()).unwrap();
        assert_eq!((report.torn_block, report.truncated_bytes), (None, 0), "seed {seed}");
        for (id, addr, bytes) in &nodes {
            assert_eq!(store.read_node(*addr).unwrap(), (*id, bytes.clone()), "seed {seed}");
        }
        let scanned: Vec<PhysAddr> = store.scan().map(|r| r.unwrap().addr).collect();
        assert_eq!(scanned, nodes.iter().map(|n| n.1).collect::<Vec<_>>(), "seed {seed}");
    }
}

/// Fuzz smoke (the cargo-fuzz target runs the same entry): 20,000 seeded
/// inputs, random and mutated valid, never panic.
#[test]
fn fuzz_smoke_block_decode_never_panics() {
    let seed = 0xf022_b10c;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for i in 0..20_000u32 {
        let input: Vec<u8> = match i % 8 {
            0 => {
                let len = if rng.gen_bool(0.1) { rng.gen_range(0..70_000) } else { rng.gen_range(0..600) };
                let mut v = vec![0u8];
                v.extend((0..len).map(|_| rng.gen::<u8>()));
                v
            }
            1 => {
                // A header-looking start, then random bytes.
                let mut v = vec![0u8];
                v.extend_from_slice(&BLOCK_MAGIC.to_le_bytes());
                v.extend_from_slice(&BLOCK_FORMAT_VERSION.to_le_bytes());
                v.extend((0..rng.gen_range(0..40_000)).map(|_| rng.gen::<u8>()));
                v
            }
            _ => {
                let mut v = vec![1 | (rng.gen_bool(0.3) as u8) << 1, rng.gen()];
                for _ in 0..rng.gen_range(0..6) * 4 {
                    v.push(rng.gen());
                }
                v
            }
        };
        let result = std::panic::catch_unwind(|| fuzz_block_decode(&input));
        assert!(result.is_ok(), "seed {seed:#x} input {i} panicked: {input:?}");
    }
}
