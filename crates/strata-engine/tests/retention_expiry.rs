//! Scenario: a database whose default retention policy keeps 1h, holding
//! points older and newer than that; one expiry pass (with an explicit
//! "now") deletes exactly the old ones, under every commit protocol, and
//! after a restart the policies are still there and the old points still
//! gone. Also: the background task expires on its own.

use std::path::Path;
use std::time::{Duration, Instant};

use strata_engine::{Config, Db, Protocol, Tables};
use strata_series::retention::{PolicySpec, RetentionChange};
use strata_series::{FieldValue, Point, TimeRange};

const H: i64 = 3_600_000_000_000;
/// The "now" of the expiry passes: 2026-11-29T00:00:00Z.
const NOW: i64 = 1_795_910_400_000_000_000;

fn open(dir: &Path, protocol: Protocol) -> Db {
    let mut c = Config { data_dir: dir.to_path_buf(), ..Config::default() };
    c.storage.protocol = protocol.name().into();
    c.storage.retention_check_interval_s = 0;
    c.pmem.log_bytes = 1 << 20;
    c.pmem.pool_bytes = 4 << 20;
    Db::open(&c, &|_, _, _| {}).unwrap_or_else(|e| panic!("{}: {e}", protocol.name()))
}

fn point(measurement: &str, host: &str, ts: i64) -> Point {
    Point {
        measurement: measurement.into(),
        tags: vec![("host".into(), host.into())],
        fields: vec![("v".into(), FieldValue::Integer(ts / 1_000_000_000))],
        timestamp_ns: ts,
    }
}

/// Every timestamp of `measurement` in `db`, sorted.
fn timestamps(db: &Db, name: &str, measurement: &str) -> Vec<i64> {
    let store = db.tables().series_store();
    let ids: Vec<_> = store.series(name, measurement).unwrap().iter().map(|s| s.id).collect();
    let mut out: Vec<i64> =
        store.read(name, &ids, TimeRange::ALL).unwrap().concat().into_iter().map(|(t, _)| t).collect();
    out.sort_unstable();
    out
}

/// Old points (2h and 61m before NOW) and kept ones (exactly at the
/// cutoff NOW - 1h, 30m before NOW, in the future) in two measurements.
fn write_old_and_new(db: &Db) -> (Vec<i64>, Vec<i64>) {
    let old = vec![NOW - 2 * H, NOW - H - 60_000_000_000];
    let kept = vec![NOW - H, NOW - H / 2, NOW + H];
    let mut points = Vec::new();
    for ts in old.iter().chain(&kept) {
        points.push(point("cpu", "a", *ts));
        points.push(point("mem", "b", *ts));
    }
    let outcome = db.tables().write_request("rp", &points).unwrap();
    assert!(outcome.rejected.is_empty(), "{outcome:?}");
    (old, kept)
}

/// Database `rp` with a policy `hour` (1h), the default if `default`.
fn create_hour_policy(db: &Db, default: bool) {
    let store = db.tables().series_store();
    store.create_database("rp").unwrap();
    let spec = PolicySpec {
        duration_ns: Some(H),
        replication: Some(1),
        make_default: default,
        ..PolicySpec::default()
    };
    store.change_retention("rp", &RetentionChange::Create { name: "hour".into(), spec }).unwrap();
}

#[test]
fn expiry_deletes_only_points_before_the_cutoff_and_survives_restart_under_every_protocol() {
    for protocol in Protocol::ALL {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), protocol);
        create_hour_policy(&db, true);
        let (_, kept) = write_old_and_new(&db);
        db.engine().checkpoint().unwrap(); // some points in block files
        let report = db.expire_retention(NOW).unwrap();
        assert_eq!((report.points_expired, report.series_expired), (4, 2), "{}: {report:?}", protocol.name());
        for m in ["cpu", "mem"] {
            assert_eq!(timestamps(&db, "rp", m), kept, "{}: {m} after expiry", protocol.name());
        }
        assert_eq!(db.expire_retention(NOW).unwrap().points_expired, 0, "a second pass finds nothing");
        if protocol == Protocol::None {
            db.engine().checkpoint().unwrap(); // `none` keeps only what a checkpoint wrote
        }
        drop(db);

        let db = open(dir.path(), protocol);
        let policies = db.tables().series_store().retention_policies("rp").unwrap();
        let names: Vec<_> = policies.policies.iter().map(|p| (p.name.as_str(), p.duration_ns)).collect();
        assert_eq!(names, [("autogen", 0), ("hour", H)], "{}: policies after restart", protocol.name());
        assert_eq!(policies.default.as_deref(), Some("hour"));
        for m in ["cpu", "mem"] {
            assert_eq!(timestamps(&db, "rp", m), kept, "{}: {m} after restart", protocol.name());
        }
        db.engine().checkpoint().unwrap();
        assert_eq!(timestamps(&db, "rp", "cpu"), kept, "{}: after a checkpoint", protocol.name());
    }
}

#[test]
fn infinite_and_non_default_policies_expire_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Protocol::SerialSsd);
    create_hour_policy(&db, false);
    let store = db.tables().series_store();
    let (old, kept) = write_old_and_new(&db);
    assert_eq!(db.expire_retention(NOW).unwrap().points_expired, 0, "autogen (INF) is still the default");
    let all: Vec<i64> = old.iter().chain(&kept).copied().collect();
    assert_eq!(timestamps(&db, "rp", "cpu"), all);
    store.change_retention("rp", &RetentionChange::Drop { name: "autogen".into() }).unwrap();
    assert_eq!(db.expire_retention(NOW).unwrap().databases_checked, 0, "no default policy, no expiry");
    assert_eq!(timestamps(&db, "rp", "cpu"), all);
}

#[test]
fn the_background_task_expires_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Config { data_dir: dir.path().to_path_buf(), ..Config::default() };
    c.storage.protocol = "serial-ssd".into();
    c.storage.retention_check_interval_s = 1;
    let db = Db::open(&c, &|_, _, _| {}).unwrap();
    create_hour_policy(&db, true);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64;
    let points = [point("cpu", "a", now - 3 * H), point("cpu", "a", now - H / 2)];
    db.tables().write_request("rp", &points).unwrap();
    db.start_background_checkpoints();
    let started = Instant::now();
    while timestamps(&db, "rp", "cpu").len() > 1 && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(timestamps(&db, "rp", "cpu"), [now - H / 2], "the 3h-old point expired within 20s");
    db.stop_background_checkpoints();
}
