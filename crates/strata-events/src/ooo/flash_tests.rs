//! Tests of the flash OOO queue's durability and costs: a crash loses at
//! most the unwritten page, torn pages are dropped, partial pages of a clean
//! shutdown survive, truncation switches generation files atomically, page
//! reads of HIT and MISS queries, corruption and failed writes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use strata_media::fs::{FailMode, Tear};
use strata_media::{FaultFs, FileSystem};

use super::flash_layout::{file_name, FLASH_PAGE_BYTES};
use super::test_support::{make_event, ooo_event, vecs, Model};
use super::*;

const EB: usize = 1000; // 8 events per page

fn dir() -> PathBuf {
    PathBuf::from("/data/ooo")
}

fn open(fs: &FaultFs, indexing: OooIndexing) -> (FlashOooQueue, OooRecovery) {
    let config = FlashOooConfig { event_bytes: EB, capacity_bytes: 10_000 * EB as u64, indexing };
    FlashOooQueue::open(Arc::new(fs.clone()), &dir(), config).unwrap()
}

/// The model of the first `n` pushed events.
fn first(model: &Model, n: u64) -> Vec<Vec<u8>> {
    let mut m = Model::default();
    for e in &model.events[..n as usize] {
        m.push(e);
    }
    m.sorted()
}

#[test]
fn a_crash_loses_at_most_the_unwritten_page() {
    for indexing in [OooIndexing::Pure, OooIndexing::Indexed] {
        let fs = FaultFs::with_tear_seed(4);
        let (mut q, _) = open(&fs, indexing);
        assert_eq!(q.events_per_page(), 8);
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        let mut model = Model::default();
        for i in 0..45u64 {
            let e = ooo_event(&mut rng, i, EB);
            q.push(&e).unwrap();
            model.push(&e);
            assert_eq!(q.durable_len(), (i + 1) / 8 * 8, "full pages are written at once");
            for tear in [Tear::None, Tear::LastSector { seed: i }] {
                let crashed = fs.crash(tear);
                let (after, report) = open(&crashed, indexing);
                let n = after.len();
                assert_eq!(n, q.durable_len(), "{indexing:?} push {i} {tear:?}: exactly the written pages");
                assert!(model.len() - n < 8, "at most a page lost");
                assert_eq!(report.events_recovered, n);
                assert_eq!(
                    vecs(&after.sorted().unwrap()),
                    first(&model, n),
                    "{indexing:?} push {i} {tear:?}"
                );
            }
        }
    }
}

/// A page write whose sync failed, then a crash that keeps a torn prefix of
/// it: recovery drops the torn page and the queue goes on.
#[test]
fn a_torn_last_page_is_dropped() {
    for seed in 0..12u64 {
        let fs = FaultFs::with_tear_seed(seed);
        let (mut q, _) = open(&fs, OooIndexing::Indexed);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut model = Model::default();
        for i in 0..16u64 {
            let e = ooo_event(&mut rng, i, EB);
            if i == 15 {
                fs.fail_at(fs.ops() + 2, FailMode::Once); // the sync after the write of page 1
                assert!(matches!(q.push(&e), Err(EventError::Io(_))), "seed {seed}");
                assert_eq!(q.len(), 15, "a failed page write rolls the push back");
            } else {
                q.push(&e).unwrap();
                model.push(&e);
            }
        }
        let crashed = fs.crash(Tear::LastSector { seed });
        for indexing in [OooIndexing::Pure, OooIndexing::Indexed] {
            let config = FlashOooConfig { event_bytes: EB, capacity_bytes: 1 << 30, indexing };
            let (mut after, report) = FlashOooQueue::open(Arc::new(crashed.clone()), &dir(), config).unwrap();
            let n = after.len();
            assert!(n == 8 || n == 16, "seed {seed}: page 1 torn away or (fully kept) whole: {n}");
            if n == 8 {
                assert_eq!(vecs(&after.sorted().unwrap()), first(&model, 8), "seed {seed}");
            }
            let file_len = crashed.open(&dir().join(file_name(1))).unwrap().len().unwrap();
            assert_eq!(file_len % FLASH_PAGE_BYTES, 0, "seed {seed}: a torn page is cut off ({report:?})");
            after.push(&make_event(&mut rng, 1, 99, EB)).unwrap();
            assert_eq!(after.len(), n + 1);
        }
    }
}

#[test]
fn partial_pages_of_a_clean_shutdown_survive_and_new_pages_follow() {
    let fs = FaultFs::new();
    let (mut q, _) = open(&fs, OooIndexing::Pure);
    let mut rng = ChaCha8Rng::seed_from_u64(22);
    let mut model = Model::default();
    let mut push = |q: &mut FlashOooQueue, n: u64, model: &mut Model| {
        for _ in 0..n {
            let i = model.len();
            let e = ooo_event(&mut rng, i, EB);
            q.push(&e).unwrap();
            model.push(&e);
        }
    };
    push(&mut q, 13, &mut model);
    q.sync().unwrap();
    assert_eq!((q.pages_written(), q.durable_len()), (2, 13), "8 + a partial page of 5");
    drop(q);
    for indexing in [OooIndexing::Pure, OooIndexing::Indexed] {
        let (mut q, report) = open(&fs.crash(Tear::None), indexing);
        assert_eq!(report.events_recovered, 13);
        push(&mut q, 10, &mut model.clone());
        assert_eq!(q.len(), 23);
    }
    let (mut q, _) = open(&fs, OooIndexing::Indexed);
    push(&mut q, 10, &mut model);
    q.sync().unwrap();
    let (after, _) = open(&fs.crash(Tear::None), OooIndexing::Pure);
    assert_eq!(vecs(&after.sorted().unwrap()), model.sorted());
    assert_eq!(after.pages_written(), 4, "8, 5, 8, 2");
}

#[test]
fn recovery_work_indexed_reads_every_page_pure_reads_headers() {
    let fs = FaultFs::new();
    let (mut q, _) = open(&fs, OooIndexing::Indexed);
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    for i in 0..80u64 {
        q.push(&ooo_event(&mut rng, i, EB)).unwrap();
    }
    let (_, indexed) = open(&fs, OooIndexing::Indexed);
    let (_, pure) = open(&fs, OooIndexing::Pure);
    assert_eq!((indexed.pages_read, indexed.index_entries_built, indexed.records_examined), (10, 80, 80));
    assert_eq!((pure.pages_read, pure.page_headers_read, pure.index_entries_built), (1, 9, 0));
    assert!(pure.bytes_read < indexed.bytes_read / 5);
}

#[test]
fn hit_queries_read_a_page_miss_queries_read_none() {
    let fs = FaultFs::new();
    let (mut indexed, _) = open(&fs, OooIndexing::Indexed);
    let fs2 = FaultFs::new();
    let (mut pure, _) = open(&fs2, OooIndexing::Pure);
    let mut rng = ChaCha8Rng::seed_from_u64(24);
    for i in 0..84u64 {
        let e = make_event(&mut rng, i as i64 * 10, i as u32, EB);
        indexed.push(&e).unwrap();
        pure.push(&e).unwrap();
    }
    assert_eq!(indexed.point(300).unwrap().len(), 1, "HIT in page 3");
    assert_eq!(indexed.query_stats().page_reads, 1);
    assert_eq!(indexed.point(301).unwrap().len(), 0, "MISS");
    assert_eq!(indexed.query_stats().page_reads, 1, "a MISS reads no page");
    assert_eq!(indexed.point(830).unwrap().len(), 1, "HIT in the DRAM page");
    assert_eq!(indexed.query_stats().page_reads, 1, "the buffered page is not read");
    assert_eq!(pure.point(301).unwrap().len(), 0);
    assert_eq!(pure.query_stats().page_reads, 10, "pure reads every written page, even for a MISS");
    let sorted_reads = indexed.query_stats().page_reads;
    indexed.sorted().unwrap();
    assert_eq!(indexed.query_stats().page_reads - sorted_reads, 10, "in-order input: one read per page");
}

#[test]
fn truncate_switches_files_and_open_keeps_the_highest_generation() {
    let fs = FaultFs::new();
    let (mut q, _) = open(&fs, OooIndexing::Indexed);
    let mut rng = ChaCha8Rng::seed_from_u64(25);
    for i in 0..20u64 {
        q.push(&make_event(&mut rng, i as i64, i as u32, EB)).unwrap();
    }
    q.truncate().unwrap();
    assert_eq!(fs.list_dir(&dir()).unwrap(), vec![dir().join(file_name(2))]);
    for i in 0..9u64 {
        q.push(&make_event(&mut rng, i as i64, i as u32, EB)).unwrap();
    }
    // The next truncation crashes after creating generation 3, before removing 2.
    fs.fail_at(fs.ops() + 3, FailMode::Forever); // create, sync_dir, then remove fails
    assert!(q.truncate().is_err());
    let crashed = fs.crash(Tear::None);
    assert_eq!(crashed.list_dir(&dir()).unwrap().len(), 2, "both generations on disk");
    let (after, report) = open(&crashed, OooIndexing::Pure);
    assert_eq!((after.generation(), after.len(), report.stale_files_removed), (3, 0, 1));
    assert_eq!(crashed.list_dir(&dir()).unwrap(), vec![dir().join(file_name(3))]);
}

#[test]
fn a_damaged_middle_page_is_corruption() {
    let fs = FaultFs::new();
    let (mut q, _) = open(&fs, OooIndexing::Indexed);
    let mut rng = ChaCha8Rng::seed_from_u64(26);
    for i in 0..24u64 {
        q.push(&make_event(&mut rng, i as i64, i as u32, EB)).unwrap();
    }
    drop(q);
    let file = fs.open(&dir().join(file_name(1))).unwrap();
    file.write_at(FLASH_PAGE_BYTES + 100, &[0xff; 4]).unwrap();
    file.sync_data().unwrap();
    let config = FlashOooConfig::new(EB, OooIndexing::Indexed);
    let err = FlashOooQueue::open(Arc::new(fs.clone()), &dir(), config).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    let (pure, _) = open(&fs, OooIndexing::Pure);
    assert!(pure.sorted().unwrap_err().is_corruption(), "a pure scan checks each page's CRC");
    let other_size = FlashOooConfig::new(500, OooIndexing::Pure);
    let err = FlashOooQueue::open(Arc::new(fs.clone()), &dir(), other_size).unwrap_err();
    assert!(err.is_corruption(), "pages of another event size: {err}");
}

#[test]
fn bad_input_is_rejected() {
    let fs = FaultFs::new();
    let config = FlashOooConfig { event_bytes: 16, capacity_bytes: 32, indexing: OooIndexing::Indexed };
    let (mut q, _) = FlashOooQueue::open(Arc::new(fs.clone()), Path::new("/q"), config).unwrap();
    assert!(matches!(q.push(&[0; 17]), Err(EventError::InvalidInput(_))));
    q.push(&[1; 16]).unwrap();
    q.push(&[2; 16]).unwrap();
    assert!(q.is_full());
    assert!(matches!(q.push(&[3; 16]), Err(EventError::Full { .. })));
    let tiny = FlashOooConfig { event_bytes: 4, ..config };
    assert!(matches!(
        FlashOooQueue::open(Arc::new(fs), Path::new("/r"), tiny),
        Err(EventError::InvalidInput(_))
    ));
}
