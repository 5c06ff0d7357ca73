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
    let mut acked = Vec::new();
    let mut refusal = None;
    for ts in 0..100_000 {
        match engine.write("db", &[point(ts)]) {
            Ok(_) => acked.push(ts),
            Err(e) => {
                refusal = Some(e);
                break;
            }
        }
    }
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
