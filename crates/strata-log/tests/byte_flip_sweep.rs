//! Issue acceptance: "A sweep that flips every byte of a small serial log, one
//! at a time, always ends in 'detected corruption' or 'recovered a valid
//! prefix': never a panic, never a wrong value."
//!
//! A small serial log is written on PMem (the simulator's persistent image)
//! and on SSD (a segment file on `FaultFs`). Then every byte of it is damaged
//! in turn, once by xor 0xFF and once per single bit, and the log is reopened
//! inside `catch_unwind`. Each outcome is classified:
//!
//! - `Ok(records)` where `records` is a prefix (same transaction ids, payloads
//!   and LSNs, in order) of the entries committed since the last truncation:
//!   "recovered a valid prefix";
//! - `Err(e)` with `e.is_corruption()`: "detected corruption";
//! - anything else (a panic, an `Ok` that is not a prefix, another error) is a
//!   failure naming the byte offset and the damage.
//!
//! One exception is counted separately and printed: the PMem head word has no
//! checksum (docs/format/pmem-log.md, "Limitations"), so damage to it that
//! moves replay onto another record boundary yields a run of committed
//! entries that is not a prefix. The ignored test at the end asserts the
//! strict rule for it.
//!
//! Contents are deterministic (seeded); the seed is printed on failure.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_log::pmem_log::{
    encode_head_word, PmemLog, DATA_AREA_OFFSET, HEAD_WORD_OFFSET, PMEM_LOG_FORMAT_VERSION, PMEM_LOG_MAGIC,
    SB_CRC_COVERED_BYTES,
};
use strata_log::ssd_log::{SsdLogOptions, SEGMENT_HEADER_BYTES};
use strata_log::{CommitLog, LogError, LogRecord, Lsn, RecordKind, SerialLog, StreamPos, TxnId};
use strata_media::fs::{FaultFs, FileSystem};
use strata_pmem::{Region, RegionOffset};

const SEED: u64 = 0x5EED_F11B;
/// Payload sizes: empty, around the 8-byte padding boundary, and larger.
/// Packed (8-byte alignment), the record ends are 40, 88, 136, 184, 240, 312,
/// 416, 560, 800, 1176.
const PAYLOAD_SIZES: [usize; 10] = [0, 1, 7, 8, 9, 31, 64, 100, 200, 333];
/// Bytes past the end of the written records that are damaged too.
const SLACK_BYTES: usize = 128;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    txn: TxnId,
    lsn: Lsn,
    payload: Vec<u8>,
}

fn entries_to_write(seed: u64) -> Vec<(TxnId, Vec<u8>)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    PAYLOAD_SIZES
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            let payload: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            (TxnId(1000 + 7 * i as u64 + rng.gen_range(0..7)), payload)
        })
        .collect()
}

fn commit_all(log: &SerialLog, entries: &[(TxnId, Vec<u8>)]) -> Vec<Entry> {
    entries
        .iter()
        .map(|(txn, payload)| Entry {
            txn: *txn,
            lsn: log.commit(*txn, payload).unwrap(),
            payload: payload.clone(),
        })
        .collect()
}

/// A written log image and what replay may return from it.
struct Written {
    image: Vec<u8>,
    /// Entries committed since the last truncation: the valid prefixes.
    live: Vec<Entry>,
    /// Every entry ever committed, truncated ones included.
    history: Vec<Entry>,
    /// Bytes of the unchecksummed PMem head word.
    head_word: Range<usize>,
}

#[derive(Debug, Default)]
struct Counts {
    opens: u64,
    corruption: u64,
    full_log: u64,
    shorter_prefix: u64,
    empty_prefix: u64,
    /// Head word damage that moved replay onto another record boundary.
    head_word_moved: u64,
    failures: Vec<String>,
}

impl Counts {
    fn prefixes(&self) -> u64 {
        self.full_log + self.shorter_prefix + self.empty_prefix
    }
}

/// Classifies one reopen of a damaged image.
fn classify(
    counts: &mut Counts,
    log: &Written,
    at: usize,
    damage: &str,
    outcome: std::thread::Result<Result<Vec<LogRecord>, LogError>>,
) {
    counts.opens += 1;
    let fail = |counts: &mut Counts, what: String| {
        counts.failures.push(format!("byte {at} ({damage}): {what}"));
    };
    match outcome {
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            fail(counts, format!("panic: {msg}"));
        }
        Ok(Err(e)) if e.is_corruption() => counts.corruption += 1,
        Ok(Err(e)) => fail(counts, format!("an error that is not Corruption: {e}")),
        Ok(Ok(records)) => {
            let got: Vec<Entry> = records
                .iter()
                .map(|r| Entry { txn: r.txn, lsn: r.lsn, payload: r.payload.clone() })
                .collect();
            let only_txns = records.iter().all(|r| r.kind == RecordKind::Txn);
            let is_prefix = only_txns && got.len() <= log.live.len() && got[..] == log.live[..got.len()];
            // A contiguous run of committed entries, starting elsewhere.
            let is_run = only_txns && log.history.windows(got.len().max(1)).any(|w| w == &got[..]);
            if is_prefix && got.len() == log.live.len() {
                counts.full_log += 1;
            } else if is_prefix && got.is_empty() {
                counts.empty_prefix += 1;
            } else if is_prefix {
                counts.shorter_prefix += 1;
            } else if log.head_word.contains(&at) && is_run {
                counts.head_word_moved += 1;
            } else {
                let txns: Vec<u64> = got.iter().map(|e| e.txn.0).collect();
                fail(counts, format!("wrong value: recovered txns {txns:?} are not a prefix of the log"));
            }
        }
    }
}

/// Damages every byte of `log.image[range]` (xor 0xFF, then each single bit)
/// and classifies the reopen of each damaged image.
fn sweep(
    log: &Written,
    range: Range<usize>,
    open: impl Fn(Vec<u8>) -> Result<Vec<LogRecord>, LogError>,
) -> Counts {
    let mut counts = Counts::default();
    for at in range {
        for (damage, mask) in std::iter::once(("xor 0xFF".to_string(), 0xFFu8))
            .chain((0..8).map(|bit| (format!("bit {bit}"), 1u8 << bit)))
        {
            let mut img = log.image.clone();
            img[at] ^= mask;
            let outcome = catch_unwind(AssertUnwindSafe(|| open(img)));
            classify(&mut counts, log, at, &damage, outcome);
        }
    }
    counts
}

fn report(name: &str, counts: &Counts) {
    println!(
        "{name}: {} reopens: detected corruption {}, recovered a valid prefix {} (whole log {}, \
         shorter {}, empty {}), head word moved replay (known gap) {}, failures {}",
        counts.opens,
        counts.corruption,
        counts.prefixes(),
        counts.full_log,
        counts.shorter_prefix,
        counts.empty_prefix,
        counts.head_word_moved,
        counts.failures.len()
    );
    assert!(
        counts.failures.is_empty(),
        "{name} (seed {SEED:#x}): {} damaged images neither detected nor recovered a valid prefix; \
         first ones:\n  {}",
        counts.failures.len(),
        counts.failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n  ")
    );
    assert_eq!(counts.opens, counts.corruption + counts.prefixes() + counts.head_word_moved);
    assert!(counts.corruption > 0, "{name} (seed {SEED:#x}): no damage was detected as corruption");
    assert!(
        counts.shorter_prefix + counts.empty_prefix > 0,
        "{name} (seed {SEED:#x}): no damage shortened the log"
    );
    assert!(
        counts.full_log > 0,
        "{name} (seed {SEED:#x}): damage to ignored bytes should keep the whole log"
    );
}

fn open_pmem_image(img: Vec<u8>) -> Result<Vec<LogRecord>, LogError> {
    SerialLog::open_pmem(Arc::new(Region::sim_from_image(img)), RegionOffset(0)).map(|(_, records)| records)
}

const HEAD_WORD: Range<usize> = HEAD_WORD_OFFSET as usize..HEAD_WORD_OFFSET as usize + 8;

fn write_pmem_log(capacity_bytes: u64, align_bytes: u64) -> Written {
    let region = Arc::new(Region::sim(PmemLog::footprint_bytes(capacity_bytes)));
    let log = SerialLog::create_pmem(region.clone(), RegionOffset(0), capacity_bytes, align_bytes).unwrap();
    let live = commit_all(&log, &entries_to_write(SEED));
    drop(log);
    let image = region.as_sim().unwrap().persistent_image();
    assert_eq!(open_pmem_image(image.clone()).unwrap().len(), live.len(), "undamaged log (seed {SEED:#x})");
    Written { image, history: live.clone(), live, head_word: HEAD_WORD }
}

/// Sweeps a freshly written PMem serial log with records at `align_bytes`.
/// The head word must never move replay: its check bits catch every flip
/// (with 256-byte alignment a flipped bit of an unchecked zero head would land
/// on a record start).
fn sweep_fresh_pmem_log(align_bytes: u64) -> Counts {
    let log = write_pmem_log(4096, align_bytes);
    let end = DATA_AREA_OFFSET as usize + log.live.last().unwrap().lsn.0 as usize;
    let counts = sweep(&log, 0..end + SLACK_BYTES, open_pmem_image);
    report(&format!("pmem, {align_bytes}-byte alignment"), &counts);
    counts
}

#[test]
fn pmem_serial_log_every_byte_flip_is_detected_or_a_valid_prefix() {
    let counts = sweep_fresh_pmem_log(8);
    assert_eq!(counts.head_word_moved, 0);
}

/// Every record starts on its own 256-byte media block (`align` 256).
#[test]
fn pmem_serial_log_256_aligned_every_byte_flip_is_detected_or_a_valid_prefix() {
    let counts = sweep_fresh_pmem_log(256);
    assert_eq!(counts.head_word_moved, 0);
}

/// A log that has wrapped: truncated once, with a `Pad` record closing the
/// first lap and a head word that is not zero.
#[test]
fn wrapped_pmem_serial_log_every_byte_flip_is_detected_or_a_valid_prefix() {
    const CAPACITY_BYTES: u64 = 1024;
    let region = Arc::new(Region::sim(PmemLog::footprint_bytes(CAPACITY_BYTES)));
    let log = SerialLog::create_pmem(region.clone(), RegionOffset(0), CAPACITY_BYTES, 8).unwrap();
    let all = entries_to_write(SEED ^ 1);
    let mut history = commit_all(&log, &all[..7]); // record ends 40, 88, ..., 416
    log.truncate_all().unwrap();
    let live = commit_all(&log, &all[7..]); // 144 and 240 bytes fit, 376 wraps after a pad
    drop(log);
    history.extend(live.iter().cloned());
    assert!(live.last().unwrap().lsn.0 > CAPACITY_BYTES, "the log wraps");
    let image = region.as_sim().unwrap().persistent_image();
    assert_eq!(open_pmem_image(image.clone()).unwrap().len(), live.len(), "undamaged log (seed {SEED:#x})");
    let log = Written { image, live, history, head_word: HEAD_WORD };

    let counts = sweep(&log, 0..log.image.len(), open_pmem_image);
    report("pmem wrapped", &counts);
}

fn segment_path(dir: &Path) -> PathBuf {
    dir.join(format!("wal-{:020}.log", 0))
}

fn ssd_options() -> SsdLogOptions {
    SsdLogOptions { preallocate_bytes: 4096, ..Default::default() }
}

fn open_ssd_image(img: Vec<u8>) -> Result<Vec<LogRecord>, LogError> {
    let fs = FaultFs::new();
    let dir = Path::new("/wal");
    fs.create_dir_all(dir).unwrap();
    let file = fs.create(&segment_path(dir)).unwrap();
    file.write_at(0, &img).unwrap();
    file.sync_all().unwrap();
    fs.sync_dir(dir).unwrap();
    SerialLog::open_ssd(Arc::new(fs), dir, ssd_options()).map(|(_, records)| records)
}

#[test]
fn ssd_serial_log_every_byte_flip_is_detected_or_a_valid_prefix() {
    let fs = FaultFs::new();
    let dir = Path::new("/wal");
    let (log, replay) = SerialLog::open_ssd(Arc::new(fs.clone()), dir, ssd_options()).unwrap();
    assert!(replay.is_empty());
    let live = commit_all(&log, &entries_to_write(SEED));
    drop(log);
    let image = fs.peek(&segment_path(dir)).expect("segment file");
    assert_eq!(image.len() as u64, SEGMENT_HEADER_BYTES + live.last().unwrap().lsn.0);
    assert_eq!(open_ssd_image(image.clone()).unwrap().len(), live.len(), "undamaged log (seed {SEED:#x})");
    let log = Written { image, history: live.clone(), live, head_word: 0..0 };

    let counts = sweep(&log, 0..log.image.len(), open_ssd_image);
    report("ssd", &counts);
    assert_eq!(counts.head_word_moved, 0);
}

/// Regression: the head word once had no check bits, and flipping bit 6 of a
/// zero head moved replay onto the second record's start, silently dropping
/// the first record. The head word now carries 16 check bits.
#[test]
fn head_word_bit_flip_onto_a_record_boundary_is_not_silent() {
    let region = Arc::new(Region::sim(PmemLog::footprint_bytes(4096)));
    let log = SerialLog::create_pmem(region.clone(), RegionOffset(0), 4096, 8).unwrap();
    // 24-byte payload: a 64-byte first record, so its end is a power of two.
    let live = commit_all(&log, &[(TxnId(1), vec![1; 24]), (TxnId(2), vec![2; 5])]);
    drop(log);
    let mut image = region.as_sim().unwrap().persistent_image();
    image[HEAD_WORD_OFFSET as usize] ^= 1 << 6;
    // Strict: no exception for the head word.
    let log = Written { image: image.clone(), history: live.clone(), live, head_word: 0..0 };
    let mut counts = Counts::default();
    classify(&mut counts, &log, HEAD_WORD_OFFSET as usize, "bit 6", Ok(open_pmem_image(image)));
    assert!(counts.failures.is_empty(), "{:?}", counts.failures);
}

/// A superblock with a valid CRC but a geometry `format` refuses, or a head
/// word near 2^64, is corruption, not a panic. Caught by the `pmem_log_open`
/// fuzz target: capacity 0 divided by zero, a capacity near `u64::MAX` or a
/// head within one capacity of 2^64 overflowed, and alignment 1 let the next
/// commit make an unaligned 8-byte store.
#[test]
fn crc_valid_superblock_with_bad_geometry_or_head_is_corruption_not_a_panic() {
    fn image(align_bytes: u32, capacity_bytes: u64, head: u64) -> Vec<u8> {
        let mut img = vec![0u8; DATA_AREA_OFFSET as usize + 1024];
        img[0..8].copy_from_slice(&PMEM_LOG_MAGIC.to_le_bytes());
        img[8..12].copy_from_slice(&PMEM_LOG_FORMAT_VERSION.to_le_bytes());
        img[12..16].copy_from_slice(&align_bytes.to_le_bytes());
        img[16..24].copy_from_slice(&capacity_bytes.to_le_bytes());
        img[24..32].copy_from_slice(&DATA_AREA_OFFSET.to_le_bytes());
        let crc = crc32c::crc32c(&img[..SB_CRC_COVERED_BYTES as usize]);
        img[32..36].copy_from_slice(&crc.to_le_bytes());
        img[HEAD_WORD].copy_from_slice(&head.to_le_bytes());
        img
    }
    let zero_head = encode_head_word(StreamPos(0), 8);
    assert!(open_pmem_image(image(8, 1024, zero_head)).is_ok(), "the well-formed variant opens");
    let cases = [
        ("capacity 0", image(8, 0, 0)),
        ("capacity 8", image(8, 8, 0)),
        ("capacity near u64::MAX", image(8, u64::MAX - 7, 0)),
        ("alignment 1", image(1, 1024, 3)),
        ("alignment 8192", image(8192, 1024, 0)),
        ("head u64::MAX - 7", image(8, 1024, u64::MAX - 7)),
        ("head 2^63", image(8, 1024, 1 << 63)),
    ];
    for (what, img) in cases {
        match catch_unwind(AssertUnwindSafe(|| open_pmem_image(img))) {
            Ok(Err(e)) => assert!(e.is_corruption(), "{what}: {e}"),
            Ok(Ok(records)) => panic!("{what}: opened with {} records", records.len()),
            Err(_) => panic!("{what}: open panicked"),
        }
    }
}
