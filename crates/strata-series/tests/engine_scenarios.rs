//! Scenario tests of the series engine over each commit log: writes,
//! overwrites, out-of-order points, deletes, drops, checkpoints and
//! restarts after a crash.

mod common;

use common::{dump, point, Harness, LogKind, ALL_LOGS};
use strata_series::{EngineError, FieldValue, SeriesStore, TimeRange};

fn f(x: f64) -> FieldValue {
    FieldValue::Float(x)
}

#[test]
fn acknowledged_writes_survive_a_crash_under_every_durable_log() {
    for kind in [LogKind::SerialPmem, LogKind::SerialSsd, LogKind::DeclogPmem] {
        let mut h = Harness::new(kind);
        for i in 0..50 {
            let out = h.engine().write("db", &[point("cpu", "a", vec![("u", f(i as f64))], i * 10)]).unwrap();
            assert_eq!(out.points_written, 1);
        }
        h.crash_restart();
        let d = dump(h.engine().as_ref(), "db", "cpu");
        assert_eq!(d.len(), 1, "{kind:?}");
        assert_eq!(d[0].1.len(), 50, "{kind:?}: every acknowledged point is back");
        assert_eq!(d[0].1[49], (490, f(49.0)));
    }
}

#[test]
fn no_log_keeps_only_checkpointed_data() {
    let mut h = Harness::new(LogKind::None);
    h.engine().write("db", &[point("cpu", "a", vec![("u", f(1.0))], 1)]).unwrap();
    h.engine().checkpoint().unwrap();
    h.engine().write("db", &[point("cpu", "a", vec![("u", f(2.0))], 2)]).unwrap();
    h.crash_restart();
    assert_eq!(dump(h.engine().as_ref(), "db", "cpu")[0].1, vec![(1, f(1.0))]);
}

#[test]
fn overwrites_and_out_of_order_points_read_back_sorted_latest_wins() {
    for kind in ALL_LOGS {
        let h = Harness::new(kind);
        let e = h.engine();
        for ts in [50, 10, 30, 10, 70, 30] {
            e.write("db", &[point("cpu", "a", vec![("u", f(ts as f64 + 0.5))], ts)]).unwrap();
        }
        e.write("db", &[point("cpu", "a", vec![("u", f(-1.0))], 30)]).unwrap();
        let want = vec![(10, f(10.5)), (30, f(-1.0)), (50, f(50.5)), (70, f(70.5))];
        assert_eq!(dump(e.as_ref(), "db", "cpu")[0].1, want, "{kind:?} before checkpoint");
        e.checkpoint().unwrap();
        e.write("db", &[point("cpu", "a", vec![("u", f(9.0))], 50)]).unwrap();
        let want = vec![(10, f(10.5)), (30, f(-1.0)), (50, f(9.0)), (70, f(70.5))];
        assert_eq!(dump(e.as_ref(), "db", "cpu")[0].1, want, "{kind:?}: DRAM overwrites a sealed point");
    }
}

#[test]
fn deletes_mask_sealed_points_but_not_later_writes_and_survive_restart() {
    for kind in [LogKind::SerialPmem, LogKind::SerialSsd, LogKind::DeclogPmem] {
        let mut h = Harness::new(kind);
        let e = h.engine().clone();
        for ts in 0..10 {
            e.write("db", &[point("cpu", "a", vec![("u", f(ts as f64))], ts)]).unwrap();
        }
        e.checkpoint().unwrap();
        let ids: Vec<_> = e.series("db", "cpu").unwrap().iter().map(|s| s.id).collect();
        assert_eq!(e.delete("db", &ids, TimeRange { min_ns: 3, max_ns: 6 }).unwrap(), 1);
        e.write("db", &[point("cpu", "a", vec![("u", f(44.0))], 4)]).unwrap();
        let want: Vec<_> = [0, 1, 2, 4, 7, 8, 9]
            .into_iter()
            .map(|t| (t, if t == 4 { f(44.0) } else { f(t as f64) }))
            .collect();
        assert_eq!(dump(e.as_ref(), "db", "cpu")[0].1, want, "{kind:?}");
        drop(e);
        h.crash_restart();
        assert_eq!(dump(h.engine().as_ref(), "db", "cpu")[0].1, want, "{kind:?} after replay");
        h.engine().checkpoint().unwrap();
        h.crash_restart();
        assert_eq!(dump(h.engine().as_ref(), "db", "cpu")[0].1, want, "{kind:?} after checkpoint");
    }
}

#[test]
fn type_conflicts_reject_the_point_and_commit_the_rest() {
    let h = Harness::new(LogKind::SerialSsd);
    let e = h.engine();
    e.write("db", &[point("cpu", "a", vec![("u", f(1.0))], 1)]).unwrap();
    let out = e
        .write(
            "db",
            &[
                point("cpu", "a", vec![("u", FieldValue::Integer(2))], 2),
                point("cpu", "b", vec![("u", f(3.0))], 3),
                point("cpu", "c", vec![("s", FieldValue::String("x".into()))], 4),
                point("cpu", "c", vec![("s", FieldValue::Boolean(true))], 5),
            ],
        )
        .unwrap();
    assert_eq!(out.points_written, 2);
    let rejected: Vec<usize> = out.rejected.iter().map(|r| r.0).collect();
    assert_eq!(rejected, vec![0, 3], "{:?}", out.rejected);
    assert!(
        out.rejected[0].1.to_string().contains("is type integer, already exists as type float"),
        "{:?}",
        out.rejected
    );
    assert_eq!(e.series("db", "cpu").unwrap().len(), 3);
}

#[test]
fn unknown_database_and_series_limit_are_errors() {
    let h = Harness::new(LogKind::None);
    let e = h.engine();
    let err = e.write("nope", &[point("cpu", "a", vec![("u", f(1.0))], 1)]).unwrap_err();
    assert!(matches!(err, EngineError::UnknownDatabase(ref d) if d == "nope"), "{err}");
}

#[test]
fn drop_measurement_forgets_series_and_types_across_restart() {
    let mut h = Harness::new(LogKind::SerialPmem);
    let e = h.engine().clone();
    e.write("db", &[point("cpu", "a", vec![("u", f(1.0))], 1), point("mem", "a", vec![("free", f(1.0))], 1)])
        .unwrap();
    e.checkpoint().unwrap();
    e.drop_measurement("db", "cpu").unwrap();
    let out = e.write("db", &[point("cpu", "a", vec![("u", FieldValue::Integer(5))], 2)]).unwrap();
    assert!(out.rejected.is_empty(), "a dropped measurement's types are forgotten");
    drop(e);
    h.crash_restart();
    let e = h.engine();
    assert_eq!(e.measurements("db").unwrap(), vec!["cpu".to_string(), "mem".to_string()]);
    assert_eq!(dump(e.as_ref(), "db", "cpu")[0].1, vec![(2, FieldValue::Integer(5))]);
}

#[test]
fn a_full_pmem_ring_checkpoints_instead_of_failing() {
    let mut h = Harness::new(LogKind::SerialPmem);
    let e = h.engine().clone();
    let big = "x".repeat(2000);
    // 1 MiB ring, ~2 KiB per request: several wraps.
    for i in 0..2000 {
        e.write("db", &[point("log", "a", vec![("msg", FieldValue::String(format!("{i}{big}")))], i)])
            .unwrap();
    }
    assert!(e.stats().checkpoints > 0);
    drop(e);
    h.crash_restart();
    let d = dump(h.engine().as_ref(), "db", "log");
    assert_eq!(d[0].1.len(), 2000);
    assert_eq!(d[0].1[1999].1, FieldValue::String(format!("1999{big}")));
}

#[test]
fn malformed_points_are_rejected_not_checkpointed() {
    let h = Harness::new(LogKind::SerialSsd);
    let e = h.engine();
    let mut unsorted = point("cpu", "a", vec![("u", f(1.0))], 1);
    unsorted.tags = vec![("z".into(), "1".into()), ("a".into(), "2".into())];
    let mut twice = point("cpu", "a", vec![("u", f(1.0)), ("u", f(2.0))], 1);
    twice.timestamp_ns = 2;
    let empty = point("cpu", "a", vec![], 3);
    let out = e.write("db", &[unsorted, twice, empty, point("cpu", "a", vec![("u", f(4.0))], 4)]).unwrap();
    assert_eq!(out.rejected.iter().map(|r| r.0).collect::<Vec<_>>(), vec![0, 1, 2], "{:?}", out.rejected);
    assert_eq!(out.points_written, 1);
    e.checkpoint().expect("only well-formed series reach the manifest");
}

#[test]
fn the_series_limit_rejects_the_whole_request() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = strata_series::EngineOptions::new(dir.path());
    opts.max_series_per_database = Some(2);
    let log = Box::new(strata_log::NoLog::default());
    let (e, _) = strata_series::SeriesEngine::open(
        opts,
        strata_series::WalOpener::boxed(log, Vec::new()),
        &|_, _, _| {},
    )
    .unwrap();
    e.create_database("db").unwrap();
    e.write("db", &[point("cpu", "a", vec![("u", f(1.0)), ("v", f(1.0))], 1)]).unwrap();
    let err = e
        .write("db", &[point("cpu", "a", vec![("u", f(2.0))], 2), point("cpu", "b", vec![("u", f(1.0))], 1)]);
    assert!(matches!(err, Err(EngineError::SeriesLimit { limit: 2, .. })), "{err:?}");
    assert_eq!(
        dump(e.as_ref(), "db", "cpu").iter().map(|s| s.1.len()).sum::<usize>(),
        2,
        "nothing of it was written"
    );
}

#[test]
fn a_request_larger_than_the_log_allows_is_refused_whole() {
    let h = Harness::new(LogKind::SerialPmem);
    let e = h.engine();
    // The harness ring is 1 MiB: at most 512 KiB per record.
    let big: Vec<_> = (0..30_000).map(|i| point("cpu", "a", vec![("u", f(i as f64))], i)).collect();
    let err = e.write("db", &big).unwrap_err();
    assert!(matches!(err, EngineError::RequestTooLarge { max_bytes: 524_288, .. }), "{err}");
    assert!(err.to_string().contains("split it into smaller requests"), "{err}");
    assert!(e.series("db", "cpu").unwrap().is_empty(), "nothing of it was applied, not even its series");
    e.write("db", &big[..1000]).unwrap();
}
