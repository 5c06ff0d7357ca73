//! A full disk under a full PMem log: writes that need a checkpoint (the
//! serial PMem ring is full, and the checkpoint cannot write its block file)
//! fail with an error that `storage_full` names as the disk; every point
//! acknowledged before stays readable; once space is freed the next write
//! succeeds without a restart.

use std::path::Path;
use std::sync::Arc;

use strata_log::SerialLog;
use strata_media::fs::{FaultFs, FileSystem};
use strata_pmem::{Region, RegionOffset};
use strata_series::storage_full::FullMedium;
use strata_series::{EngineOptions, FieldValue, Point, SeriesEngine, SeriesStore, TimeRange};

const RING_BYTES: u64 = 64 * 1024;

fn point(ts: i64) -> Point {
    Point {
        measurement: "m".into(),
        tags: vec![("h".into(), "a".into())],
        fields: vec![("f".into(), FieldValue::Integer(ts))],
        timestamp_ns: ts,
    }
}

fn points(e: &SeriesEngine) -> Vec<i64> {
    let ids: Vec<_> = e.series("db", "m").unwrap().iter().map(|s| s.id).collect();
    e.read("db", &ids, TimeRange::ALL).unwrap().concat().into_iter().map(|(t, _)| t).collect()
}

/// One-point writes until one is refused: the acknowledged timestamps and
/// the refusal (`None` if none was).
fn write_until_refused(engine: &SeriesEngine) -> (Vec<i64>, Option<strata_series::EngineError>) {
    let mut acked = Vec::new();
    for ts in 0..100_000 {
        match engine.write("db", &[point(ts)]) {
            Ok(_) => acked.push(ts),
            Err(e) => return (acked, Some(e)),
        }
    }
    (acked, None)
}

#[test]
fn a_full_disk_refuses_writes_by_name_keeps_acknowledged_points_and_recovers_when_freed() {
    let fs = FaultFs::new();
    let region = Arc::new(Region::sim(RING_BYTES + 64 * 1024));
    let log = SerialLog::create_pmem(region, RegionOffset(0), RING_BYTES, 8).unwrap();
    let shared: Arc<dyn FileSystem> = Arc::new(fs.clone());
    let opts =
        EngineOptions { fs: shared, checkpoint_interval: None, ..EngineOptions::new(Path::new("/series")) };
    let engine =
        SeriesEngine::open(opts, strata_series::WalOpener::boxed(Box::new(log), Vec::new()), &|_, _, _| {})
            .unwrap()
            .0;
    engine.create_database("db").unwrap();
    engine.checkpoint().unwrap();
    fs.set_full(true);
    let (acked, refusal) = write_until_refused(&engine);
    let refusal = refusal.expect("the ring fills and the checkpoint cannot free it");
    assert_eq!(refusal.storage_full(), Some(FullMedium::Disk), "{refusal}");
    assert!(!acked.is_empty());
    assert!(engine.writes_stopped().is_none(), "a full disk does not stop the engine");
    assert_eq!(points(&engine), acked, "every acknowledged point is readable while the disk is full");
    let again = engine.write("db", &[point(1_000_000)]).expect_err("still full");
    assert_eq!(again.storage_full(), Some(FullMedium::Disk), "{again}");

    fs.set_full(false);
    engine.write("db", &[point(1_000_001)]).expect("writes resume once space is freed");
    let mut expected = acked.clone();
    expected.push(1_000_001);
    assert_eq!(points(&engine), expected);
}

/// The serial SSD log on a full disk: its segment's space is reserved
/// ahead of the records (a small reservation step here, so the disk fills
/// while the log still grows), so a write that cannot get space is refused
/// on its own before anything of it is queued, naming the disk, and the log
/// is not poisoned. Once space is freed writes go on, and a reopen replays
/// every acknowledged point and nothing of the refused writes.
#[test]
fn the_ssd_log_refuses_a_write_on_a_full_disk_without_poisoning_and_replays_only_acknowledged_points() {
    let fs = FaultFs::new();
    let shared: Arc<dyn FileSystem> = Arc::new(fs.clone());
    let log_dir = Path::new("/wal");
    let log_options = strata_log::ssd_log::SsdLogOptions { preallocate_bytes: 4096, ..Default::default() };
    let open = |shared: &Arc<dyn FileSystem>| {
        let (log, records) = SerialLog::open_ssd(shared.clone(), log_dir, log_options.clone()).unwrap();
        let opts = EngineOptions {
            fs: shared.clone(),
            checkpoint_interval: None,
            ..EngineOptions::new(Path::new("/series"))
        };
        SeriesEngine::open(opts, strata_series::WalOpener::boxed(Box::new(log), records), &|_, _, _| {})
            .unwrap()
            .0
    };
    shared.create_dir_all(log_dir).unwrap();
    let engine = open(&shared);
    engine.create_database("db").unwrap();
    fs.set_full(true);
    let (mut acked, refusal) = write_until_refused(&engine);
    let refusal = refusal.expect("the log's reservation runs out on the full disk");
    assert_eq!(refusal.storage_full(), Some(FullMedium::Disk), "{refusal}");
    assert!(!acked.is_empty(), "the reserved space took writes");
    assert!(engine.writes_stopped().is_none(), "a full disk does not poison the SSD log");
    assert_eq!(points(&engine), acked);

    fs.set_full(false);
    engine.write("db", &[point(1_000_000)]).expect("writes resume once space is freed");
    acked.push(1_000_000);
    drop(engine);
    let reopened = open(&shared);
    assert_eq!(points(&reopened), acked, "a reopen replays exactly the acknowledged points");
}
