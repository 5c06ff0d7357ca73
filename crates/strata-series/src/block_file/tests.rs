//! Unit tests of block files: names, write → open → read, the writer's bytes
//! against the pure encoder, damage to every byte, truncation, misuse, and
//! the fuzz smoke test of `fuzz_block_file_parse`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_media::fs::{FaultFs, FileSystem, RealFs};

use super::fuzz::{block_specs, OwnedBlock};
use super::*;
use crate::error::EngineError;
use crate::model::SeriesId;
use strata_testkit::fuzz_smoke_flagged_entry;

/// A block to append: series, min_ts, max_ts, point count, bytes.
pub(super) type TestBlock = OwnedBlock;

/// `count` random blocks over a few series, lengths up to `max_len_bytes`.
pub(super) fn random_blocks(seed: u64, count: usize, max_len_bytes: usize) -> Vec<TestBlock> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let series = rng.gen_range(0..6u64);
            let min_ts = rng.gen_range(-1_000_000i64..1_000_000);
            let max_ts = min_ts + rng.gen_range(0..10_000);
            let len = rng.gen_range(1..=max_len_bytes);
            let bytes = (0..len).map(|_| rng.gen()).collect();
            (series, min_ts, max_ts, rng.gen_range(1..500), bytes)
        })
        .collect()
}

pub(super) fn write_blocks(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    seq: u64,
    blocks: &[TestBlock],
) -> Result<BlockFileMeta, EngineError> {
    let mut writer = BlockFileWriter::create(fs.clone(), dir, seq)?;
    for (series, min_ts, max_ts, points, bytes) in blocks {
        writer.append(SeriesId(*series), *min_ts, *max_ts, *points, bytes, None)?;
    }
    writer.finish()
}

/// Asserts that `file` holds exactly `blocks` (in index order) and that
/// every block reads back.
pub(super) fn assert_holds(file: &BlockFile, blocks: &[TestBlock], context: &str) {
    assert_eq!(file.entries().len(), blocks.len(), "{context}: block count");
    let mut expected: Vec<&TestBlock> = blocks.iter().collect();
    expected.sort_by_key(|b| (b.0, b.1)); // stable: ties keep append order
    for (entry, block) in file.entries().iter().zip(expected) {
        assert_eq!(
            (entry.series, entry.min_ts, entry.max_ts),
            (SeriesId(block.0), block.1, block.2),
            "{context}"
        );
        assert_eq!(entry.point_count, block.3, "{context}");
        let read = file.read_block(entry).unwrap_or_else(|e| panic!("{context}: read_block: {e}"));
        assert_eq!(read, block.4, "{context}: block of {} at offset {}", entry.series, entry.offset);
    }
}

fn fault_fs() -> (FaultFs, Arc<dyn FileSystem>, PathBuf) {
    let fault = FaultFs::new();
    let dir = PathBuf::from("data");
    fault.create_dir_all(&dir).unwrap();
    (fault.clone(), Arc::new(fault), dir)
}

fn is_corruption(result: &Result<BlockFile, EngineError>) -> bool {
    matches!(result, Err(EngineError::Corruption { .. }))
}

#[test]
fn names_are_canonical_and_round_trip() {
    assert_eq!(block_file_name(42), "blocks-0000000042.blk");
    assert_eq!(block_file_name(0), "blocks-0000000000.blk");
    assert_eq!(block_file_name(u64::MAX), "blocks-18446744073709551615.blk");
    for seq in [0, 1, 42, 9_999_999_999, 10_000_000_000, u64::MAX] {
        assert_eq!(parse_block_file_name(&block_file_name(seq)), Some(seq), "seq {seq}");
    }
    for bad in [
        "blocks-42.blk",
        "blocks-00000000042.blk",
        "blocks-+000000042.blk",
        "blocks-000000004a.blk",
        "blocks-0000000042.blk.tmp",
        "blocks-0000000042",
        "Blocks-0000000042.blk",
        "blocks-99999999999999999999.blk",
        "blocks-.blk",
        "",
    ] {
        assert_eq!(parse_block_file_name(bad), None, "{bad:?}");
    }
}

#[test]
fn write_open_read_every_block_on_fault_fs() {
    for seed in 0..8u64 {
        let (_, fs, dir) = fault_fs();
        let blocks = random_blocks(seed, 1 + seed as usize * 25, 300);
        let meta = write_blocks(&fs, &dir, seed + 7, &blocks).unwrap();
        assert_eq!(meta.seq, seed + 7);
        assert_eq!(meta.path, dir.join(block_file_name(seed + 7)));
        let file = BlockFile::open(fs.clone(), &meta.path).unwrap();
        assert_eq!(file.seq(), seed + 7);
        assert_eq!(file.path(), meta.path.as_path());
        assert_eq!(file.len_bytes(), meta.len_bytes);
        assert_eq!(file.entries(), meta.entries.as_slice());
        assert_holds(&file, &blocks, &format!("seed {seed}"));
        for series in 0..7u64 {
            let of_series = file.entries_for(SeriesId(series));
            let expected = blocks.iter().filter(|b| b.0 == series).count();
            assert_eq!(of_series.len(), expected, "seed {seed} series {series}");
            assert!(of_series.iter().all(|e| e.series == SeriesId(series)));
            assert!(
                of_series.windows(2).all(|w| w[0].min_ts <= w[1].min_ts),
                "seed {seed}: sorted by min_ts"
            );
        }
    }
}

#[test]
fn writer_bytes_equal_the_pure_encoder_and_cross_write_chunks() {
    let (fault, fs, dir) = fault_fs();
    // Enough data for several WRITE_CHUNK_BYTES flushes.
    let blocks = random_blocks(99, 90, 60_000);
    let total: usize = blocks.iter().map(|b| b.4.len()).sum();
    assert!(total > 2 * WRITE_CHUNK_BYTES, "the test crosses chunk boundaries ({total} bytes)");
    let meta = write_blocks(&fs, &dir, 3, &blocks).unwrap();
    let written = fault.peek(&meta.path).unwrap();
    let encoded = encode_block_file(3, &block_specs(&blocks)).unwrap();
    assert!(written == encoded, "writer and encode_block_file disagree");
    assert_eq!(meta.len_bytes, written.len() as u64);
    let (seq, entries) = BlockFile::parse(&written).unwrap();
    assert_eq!((seq, entries), (3, meta.entries.clone()));
    assert_holds(&BlockFile::open(fs, &meta.path).unwrap(), &blocks, "chunked");
}

#[test]
fn real_fs_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
    let blocks = random_blocks(5, 40, 2000);
    let meta = write_blocks(&fs, tmp.path(), 12, &blocks).unwrap();
    assert_eq!(std::fs::metadata(&meta.path).unwrap().len(), meta.len_bytes);
    let file = BlockFile::open(fs, &meta.path).unwrap();
    assert_holds(&file, &blocks, "RealFs");
}

#[test]
fn empty_file_opens_with_no_blocks() {
    let (_, fs, dir) = fault_fs();
    let meta = write_blocks(&fs, &dir, 0, &[]).unwrap();
    assert_eq!(meta.len_bytes, BLOCK_FILE_HEADER_BYTES + BLOCK_FILE_FOOTER_BYTES);
    let file = BlockFile::open(fs, &meta.path).unwrap();
    assert!(file.entries().is_empty());
    assert!(file.entries_for(SeriesId(0)).is_empty());
    assert!(describe_block_file(&file).contains("0 blocks"));
}

#[test]
fn equal_min_ts_keeps_append_order() {
    let (_, fs, dir) = fault_fs();
    let blocks: Vec<TestBlock> = vec![
        (2, 10, 20, 1, vec![1]),
        (1, 10, 20, 1, vec![2]),
        (2, 10, 30, 2, vec![3, 3]),
        (2, 5, 9, 1, vec![4]),
    ];
    let meta = write_blocks(&fs, &dir, 1, &blocks).unwrap();
    let file = BlockFile::open(fs, &meta.path).unwrap();
    let order: Vec<Vec<u8>> = file.entries().iter().map(|e| file.read_block(e).unwrap()).collect();
    assert_eq!(order, vec![vec![2], vec![4], vec![1], vec![3, 3]]);
}

#[test]
fn append_rejects_what_readers_reject() {
    let (_, fs, dir) = fault_fs();
    let mut writer = BlockFileWriter::create(fs, &dir, 1).unwrap();
    let s = SeriesId(1);
    let cases: [(i64, i64, u32, &[u8]); 3] = [(0, 10, 1, &[]), (0, 10, 0, &[1]), (11, 10, 1, &[1])];
    for (min_ts, max_ts, points, block) in cases {
        let err = writer.append(s, min_ts, max_ts, points, block, None).unwrap_err();
        assert!(matches!(err, EngineError::InvalidArgument(_)), "{min_ts} {max_ts} {points}: {err}");
    }
    writer.append(s, 10, 10, 1, &[9], None).unwrap();
    assert_eq!(writer.block_count(), 1, "rejected blocks are not recorded");
    assert_eq!(writer.finish().unwrap().entries.len(), 1);
}

#[test]
fn every_damaged_byte_is_detected_by_open_or_read_block() {
    let (fault, fs, dir) = fault_fs();
    let blocks = random_blocks(11, 9, 40);
    let meta = write_blocks(&fs, &dir, 4, &blocks).unwrap();
    let original = fault.peek(&meta.path).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (mut at_open, mut at_read) = (0, 0);
    for at in 0..original.len() {
        let xor = rng.gen_range(1..=255u8);
        let mut damaged = original.clone();
        damaged[at] ^= xor;
        fs.create(&meta.path).unwrap().write_at(0, &damaged).unwrap();
        let context = format!("byte {at} xor {xor:#04x}");
        let file = match BlockFile::open(fs.clone(), &meta.path) {
            Err(EngineError::Corruption { file, what }) => {
                assert!(file.ends_with(&block_file_name(4)), "{context}: names the file: {file}");
                assert!(!what.is_empty());
                at_open += 1;
                continue;
            }
            Err(other) => panic!("{context}: expected Corruption, got {other}"),
            Ok(file) => file,
        };
        assert_eq!(file.entries(), meta.entries.as_slice(), "{context}: damage changed the index");
        let mut failed = 0;
        for entry in file.entries() {
            match file.read_block(entry) {
                Ok(bytes) => {
                    assert_eq!(bytes, original[entry.offset as usize..entry.end().unwrap() as usize])
                }
                Err(EngineError::Corruption { .. }) => failed += 1,
                Err(other) => panic!("{context}: expected Corruption, got {other}"),
            }
        }
        assert_eq!(failed, 1, "{context}: exactly the damaged block fails");
        at_read += 1;
    }
    let data_bytes: usize = blocks.iter().map(|b| b.4.len()).sum();
    assert_eq!(at_read, data_bytes, "damage inside blocks is found by read_block");
    assert_eq!(at_open, original.len() - data_bytes, "damage elsewhere is found by open");
}

#[test]
fn truncated_and_extended_files_are_corrupt() {
    let (fault, fs, dir) = fault_fs();
    let blocks = random_blocks(12, 5, 30);
    let meta = write_blocks(&fs, &dir, 8, &blocks).unwrap();
    let original = fault.peek(&meta.path).unwrap();
    for len in 0..original.len() {
        fs.create(&meta.path).unwrap().write_at(0, &original[..len]).unwrap();
        assert!(is_corruption(&BlockFile::open(fs.clone(), &meta.path)), "prefix of {len} bytes");
        assert!(BlockFile::parse(&original[..len]).is_err(), "parse of a {len}-byte prefix");
    }
    for extra in [1usize, 7, 512] {
        let mut longer = original.clone();
        longer.extend(std::iter::repeat_n(0u8, extra));
        fs.create(&meta.path).unwrap().write_at(0, &longer).unwrap();
        assert!(is_corruption(&BlockFile::open(fs.clone(), &meta.path)), "{extra} trailing bytes");
    }
}

#[test]
fn file_truncated_after_open_makes_read_block_corrupt() {
    let (_, fs, dir) = fault_fs();
    let blocks = random_blocks(13, 4, 50);
    let meta = write_blocks(&fs, &dir, 2, &blocks).unwrap();
    let file = BlockFile::open(fs.clone(), &meta.path).unwrap();
    fs.open(&meta.path).unwrap().set_len(BLOCK_FILE_HEADER_BYTES).unwrap();
    for entry in file.entries() {
        let err = file.read_block(entry).unwrap_err();
        assert!(matches!(err, EngineError::Corruption { .. }), "{err}");
    }
}

#[test]
fn seq_must_match_the_file_name() {
    let (_, fs, dir) = fault_fs();
    let meta = write_blocks(&fs, &dir, 5, &random_blocks(1, 3, 10)).unwrap();
    let renamed = dir.join(block_file_name(6));
    fs.rename(&meta.path, &renamed).unwrap();
    let err = BlockFile::open(fs.clone(), &renamed).unwrap_err();
    assert!(err.to_string().contains("file name says 6"), "{err}");
    // Under a name that is not a block file name, the header decides.
    let other = dir.join("copy.bin");
    fs.rename(&renamed, &other).unwrap();
    assert_eq!(BlockFile::open(fs, &other).unwrap().seq(), 5);
}

#[test]
fn missing_file_is_io_not_found() {
    let (_, fs, dir) = fault_fs();
    match BlockFile::open(fs, &dir.join(block_file_name(1))) {
        Err(EngineError::Io(err)) => assert_eq!(err.kind(), std::io::ErrorKind::NotFound),
        other => panic!("expected Io(NotFound), got {other:?}"),
    }
}

#[test]
fn read_block_refuses_foreign_entries() {
    let (_, fs, dir) = fault_fs();
    let meta = write_blocks(&fs, &dir, 1, &random_blocks(2, 3, 10)).unwrap();
    let file = BlockFile::open(fs, &meta.path).unwrap();
    let mut foreign = file.entries()[0].clone();
    foreign.crc32c ^= 1;
    assert!(matches!(file.read_block(&foreign), Err(EngineError::InvalidArgument(_))));
    foreign = file.entries()[0].clone();
    foreign.series = SeriesId(1000);
    assert!(matches!(file.read_block(&foreign), Err(EngineError::InvalidArgument(_))));
}

#[test]
fn abandon_removes_the_partial_file_and_errors_stick() {
    let (fault, fs, dir) = fault_fs();
    let mut writer = BlockFileWriter::create(fs.clone(), &dir, 9).unwrap();
    writer.append(SeriesId(1), 0, 1, 2, &[1, 2, 3], None).unwrap();
    let path = writer.path().to_path_buf();
    writer.abandon().unwrap();
    assert!(!fs.exists(&path));

    let mut writer = BlockFileWriter::create(fs.clone(), &dir, 9).unwrap();
    fault.fail_at(fault.ops() + 1, strata_media::fs::FailMode::Once);
    let big = vec![7u8; WRITE_CHUNK_BYTES];
    assert!(matches!(writer.append(SeriesId(1), 0, 1, 2, &big, None), Err(EngineError::Io(_))));
    let err = writer.append(SeriesId(1), 0, 1, 2, &[1], None).unwrap_err();
    assert!(err.to_string().contains("failed earlier"), "{err}");
    assert!(writer.finish().is_err(), "finish after a failed write");
}

#[test]
fn describe_lists_header_and_every_entry() {
    let (_, fs, dir) = fault_fs();
    let blocks = random_blocks(3, 5, 20);
    let meta = write_blocks(&fs, &dir, 42, &blocks).unwrap();
    let file = BlockFile::open(fs, &meta.path).unwrap();
    let text = describe_block_file(&file);
    assert!(text.starts_with("block file blocks-0000000042.blk: seq 42, format version 2"), "{text}");
    assert!(text.contains("5 blocks"), "{text}");
    for e in file.entries() {
        let line = format!(
            "  {} ts [{}, {}] points {} offset {} ",
            e.series, e.min_ts, e.max_ts, e.point_count, e.offset
        );
        assert!(text.contains(&line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn block_file_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<BlockFile>();
    assert_send_sync::<BlockFileWriter>();
    let (_, fs, dir) = fault_fs();
    let blocks = random_blocks(4, 20, 30);
    let meta = write_blocks(&fs, &dir, 1, &blocks).unwrap();
    let file = Arc::new(BlockFile::open(fs, &meta.path).unwrap());
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let file = file.clone();
            std::thread::spawn(move || {
                file.entries().iter().map(|e| file.read_block(e).unwrap().len()).sum::<usize>()
            })
        })
        .collect();
    let expected: usize = blocks.iter().map(|b| b.4.len()).sum();
    for reader in readers {
        assert_eq!(reader.join().unwrap(), expected);
    }
}

/// Fuzz smoke: the `block_file_open` target's entry function on 20,000
/// seeded inputs (random bytes, damaged and truncated valid files, and
/// recipes), on the stable toolchain.
#[test]
fn fuzz_smoke_block_file_parse() {
    let valid: Vec<Vec<u8>> = (0..8)
        .map(|i| encode_block_file(i, &block_specs(&random_blocks(i, i as usize * 3, 64))).unwrap())
        .collect();
    let check_valid = |_: usize, file: &[u8], context: &str| {
        let (seq, entries) = BlockFile::parse(file).unwrap();
        assert_eq!(entries.len() as u64, seq * 3, "{context}: valid file parses");
    };
    fuzz_smoke_flagged_entry(0x5eed_b10c, &valid, 200, 600, check_valid, fuzz_block_file_parse);
}
