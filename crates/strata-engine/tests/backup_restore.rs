//! Scenario: a backup taken while a writer keeps writing under the default
//! protocol, restored into a new data directory, holds every point
//! acknowledged before the backup began, and the restored directory opens
//! and takes writes.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use strata_engine::backup::{restore_backup, verify_backup, BackupError};
use strata_engine::{Config, Db};
use strata_series::retention::{PolicySpec, RetentionChange};
use strata_series::{FieldValue, Point, SeriesStore, TimeRange};

fn open(dir: &Path) -> Db {
    let mut c = Config { data_dir: dir.to_path_buf(), ..Config::default() };
    c.pmem.log_bytes = 1 << 20;
    c.pmem.pool_bytes = 4 << 20;
    Db::open(&c, &|_, _, _| {}).unwrap()
}

fn point(ts: i64) -> Point {
    Point {
        measurement: "cpu".into(),
        tags: vec![("host".into(), format!("h{}", ts % 3))],
        fields: vec![("v".into(), FieldValue::Integer(ts * 10))],
        timestamp_ns: ts,
    }
}

/// Timestamp -> value of every point of `cpu` in `db`.
fn points(db: &Db) -> std::collections::BTreeMap<i64, FieldValue> {
    let ids: Vec<_> = db.engine().series("strata", "cpu").unwrap().iter().map(|s| s.id).collect();
    let mut out = std::collections::BTreeMap::new();
    for series in db.engine().read("strata", &ids, TimeRange::ALL).unwrap() {
        for (ts, v) in series {
            out.insert(ts, v);
        }
    }
    out
}

#[test]
fn a_backup_taken_during_writes_restores_every_point_acknowledged_before_it() {
    let (data, backup, restored) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let db = Arc::new(open(data.path()));
    let spec =
        PolicySpec { duration_ns: Some(48 * 3_600_000_000_000), make_default: true, ..Default::default() };
    db.engine()
        .change_retention("strata", &RetentionChange::Create { name: "two_days".into(), spec })
        .unwrap();
    for ts in 0..500 {
        db.engine().write("strata", &[point(ts)]).unwrap();
    }
    db.engine().checkpoint().unwrap(); // some points in block files, some only in the log
    let acked = Arc::new(AtomicI64::new(500)); // points 0..acked are acknowledged
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let ts = acked.load(Ordering::SeqCst);
                db.engine().write("strata", &[point(ts)]).unwrap();
                acked.store(ts + 1, Ordering::SeqCst);
            }
        })
    };
    while acked.load(Ordering::SeqCst) < 1500 {
        std::thread::yield_now();
    }
    let acked_before_backup = acked.load(Ordering::SeqCst);
    let backup_dir = backup.path().join("b1");
    let taken = db.backup(&backup_dir).unwrap();
    let acked_after_backup = acked.load(Ordering::SeqCst);
    while acked.load(Ordering::SeqCst) < acked_after_backup + 200 {
        std::thread::yield_now();
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(taken.files.len() >= 2, "a manifest and at least one block file: {taken:?}");
    assert_eq!(verify_backup(&backup_dir).unwrap(), taken);

    restore_backup(&backup_dir, restored.path(), false).unwrap();
    let again = restore_backup(&backup_dir, restored.path(), false);
    assert!(matches!(again, Err(BackupError::TargetNotEmpty(_))), "{again:?}");
    let copy = open(restored.path());
    let policies = copy.engine().retention_policies("strata").unwrap();
    assert_eq!(policies.default.as_deref(), Some("two_days"), "the retention policies are in the backup");
    let found = points(&copy);
    for ts in 0..acked_before_backup {
        assert_eq!(
            found.get(&ts),
            Some(&FieldValue::Integer(ts * 10)),
            "point {ts} (acked before the backup)"
        );
    }
    assert!(
        found.keys().all(|&ts| ts < acked_after_backup),
        "nothing acknowledged after the backup finished is in it"
    );
    copy.engine().write("strata", &[point(1 << 40)]).unwrap();
    assert_eq!(points(&copy).len(), found.len() + 1, "the restored directory takes writes");
}
