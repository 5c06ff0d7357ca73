//! Scenario tests of the series engine under DecLog (declog.txt section 4):
//! multi-operation transactions with inserts, reads, updates and point
//! deletes; data-driven LSNs (0 for insert-only, increasing for dependent
//! updates, eras across checkpoints); concurrent writers during a
//! checkpoint; recovery across crashes, with and without a checkpoint.

mod common;

use std::sync::Arc;

use common::{dump, point, Harness, LogKind};
use strata_series::{FieldValue, SeriesStore, TxnOp, ValueRef};

fn f(x: f64) -> FieldValue {
    FieldValue::Float(x)
}

fn value_ref(host: &str) -> ValueRef {
    ValueRef { measurement: "cpu".into(), tags: vec![("host".into(), host.into())], field: "u".into() }
}

fn write(host: &str, ts: i64, v: f64) -> TxnOp {
    TxnOp::Write(point("cpu", host, vec![("u", f(v))], ts))
}

#[test]
fn insert_only_transactions_get_lsn_zero_and_dependent_updates_increase() {
    let h = Harness::new(LogKind::DeclogPmem);
    let e = h.engine();
    let out = e.execute("db", &[write("a", 10, 1.0), write("b", 10, 2.0)]).unwrap();
    assert_eq!(out.lsn, 0, "insert-only");
    let u1 = e.execute("db", &[write("a", 10, 3.0)]).unwrap();
    let u2 = e.execute("db", &[write("a", 10, 4.0)]).unwrap();
    assert!(u1.lsn > 0 && u2.lsn > u1.lsn, "dependent updates: {} then {}", u1.lsn, u2.lsn);
    let independent = e.execute("db", &[write("b", 10, 5.0)]).unwrap();
    assert_eq!(independent.lsn & 1023, 1, "an update of untouched data starts at 1: {}", independent.lsn);
    let read = e.execute("db", &[TxnOp::Read { value: value_ref("a"), ts: 10 }]).unwrap();
    assert_eq!(read.reads, vec![Some(f(4.0))]);
}

#[test]
fn updates_and_point_deletes_survive_crashes_with_and_without_checkpoints() {
    let mut h = Harness::new(LogKind::DeclogPmem);
    for ts in 0..20 {
        h.engine().execute("db", &[write("a", ts, ts as f64), write("b", ts, -(ts as f64))]).unwrap();
    }
    h.engine().execute("db", &[write("a", 5, 55.0), TxnOp::Delete { value: value_ref("b"), ts: 7 }]).unwrap();
    let want_a: Vec<_> = (0..20).map(|t| (t, f(if t == 5 { 55.0 } else { t as f64 }))).collect();
    let want_b: Vec<_> = (0..20).filter(|t| *t != 7).map(|t| (t, f(-(t as f64)))).collect();
    let check = |h: &Harness, when: &str| {
        let d = dump(h.engine().as_ref(), "db", "cpu");
        assert_eq!(d.len(), 2, "{when}");
        assert_eq!(d[0].1, want_a, "{when}: host a");
        assert_eq!(d[1].1, want_b, "{when}: host b");
    };
    check(&h, "live");
    h.crash_restart();
    check(&h, "after replay of the whole log");
    let report = h.engine().checkpoint().unwrap();
    assert!(report.points_sealed >= 39, "{report}");
    h.crash_restart();
    check(&h, "after a checkpoint");
    // A re-insert of the deleted point after restart is an update (it is
    // below the replayed floor), so it replays after the delete.
    h.engine().execute("db", &[write("b", 7, 700.0)]).unwrap();
    h.crash_restart();
    let d = dump(h.engine().as_ref(), "db", "cpu");
    assert!(d[1].1.contains(&(7, f(700.0))), "re-inserted point is back: {:?}", d[1].1);
}

#[test]
fn writers_continue_while_checkpoints_run_and_nothing_acknowledged_is_lost() {
    let mut h = Harness::new(LogKind::DeclogPmem);
    let e = h.engine().clone();
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let e = Arc::clone(&e);
            std::thread::spawn(move || {
                let host = ["a", "b"][w];
                for ts in 0..400i64 {
                    let mut ops = vec![write(host, ts, ts as f64)];
                    if ts % 10 == 9 {
                        ops.push(write(host, ts - 5, -1.0)); // an update of an older point
                    }
                    e.execute("db", &ops).unwrap();
                }
            })
        })
        .collect();
    let mut checkpoints = 0;
    while writers.iter().any(|w| !w.is_finished()) {
        e.checkpoint().unwrap();
        checkpoints += 1;
    }
    for w in writers {
        w.join().unwrap();
    }
    assert!(checkpoints >= 1);
    let era_before = e.declog().unwrap().era();
    assert!(era_before >= checkpoints, "each checkpoint starts an era: {era_before} < {checkpoints}");
    drop(e);
    let want: Vec<_> =
        (0..400i64).map(|t| (t, f(if t % 10 == 4 && t + 5 < 400 { -1.0 } else { t as f64 }))).collect();
    assert_eq!(dump(h.engine().as_ref(), "db", "cpu")[0].1, want, "live");
    h.crash_restart();
    let d = dump(h.engine().as_ref(), "db", "cpu");
    assert_eq!(d[0].1, want, "host a after crash ({checkpoints} checkpoints ran)");
    assert_eq!(d[1].1, want, "host b after crash");
}

#[test]
fn conflicting_concurrent_updates_apply_in_lsn_order() {
    let mut h = Harness::new(LogKind::DeclogPmem);
    h.engine().execute("db", &[write("a", 1, 0.0)]).unwrap();
    let e = h.engine().clone();
    let threads: Vec<_> = (0..2)
        .map(|w| {
            let e = Arc::clone(&e);
            std::thread::spawn(move || {
                let mut last = (0u32, 0.0f64);
                for i in 0..200 {
                    let v = (w * 1000 + i) as f64;
                    let out = e.execute("db", &[write("a", 1, v)]).unwrap();
                    assert!(out.lsn > last.0, "LSNs of one writer's dependent updates increase");
                    last = (out.lsn, v);
                }
                last
            })
        })
        .collect();
    let lasts: Vec<(u32, f64)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let winner = lasts.iter().max_by_key(|(lsn, _)| *lsn).unwrap().1;
    drop(e);
    let live = dump(h.engine().as_ref(), "db", "cpu")[0].1.clone();
    assert_eq!(live, vec![(1, f(winner))], "the highest LSN's value is live");
    h.crash_restart();
    assert_eq!(dump(h.engine().as_ref(), "db", "cpu")[0].1, live, "and recovered");
}

#[test]
fn serial_protocols_run_transactions_but_refuse_point_deletes() {
    let h = Harness::new(LogKind::SerialPmem);
    let out = h.engine().execute("db", &[write("a", 1, 1.0), TxnOp::Read { value: value_ref("a"), ts: 1 }]);
    assert_eq!(out.unwrap().reads, vec![Some(f(1.0))]);
    let err = h.engine().execute("db", &[TxnOp::Delete { value: value_ref("a"), ts: 1 }]).unwrap_err();
    assert!(err.to_string().contains("declog"), "{err}");
}

#[test]
fn late_points_that_do_not_exist_are_inserts_and_touched_ones_are_updates() {
    let mut h = Harness::new(LogKind::DeclogPmem);
    let e = h.engine().clone();
    for ts in 100..200 {
        assert_eq!(e.execute("db", &[write("a", ts, ts as f64)]).unwrap().lsn, 0);
    }
    // Late, but new: inserts (declog.txt 4.1.2, rule 2), in one transaction
    // with an append.
    let late: Vec<TxnOp> =
        (0..50).map(|ts| write("a", ts, ts as f64)).chain([write("a", 300, 3.0)]).collect();
    assert_eq!(e.execute("db", &late).unwrap().lsn, 0, "late points that do not exist are inserts");
    // A point between two late windows, new as well.
    assert_eq!(e.execute("db", &[write("a", 75, 75.0)]).unwrap().lsn, 0);
    // Overwrites of existing points, late or not, are updates.
    assert!(e.execute("db", &[write("a", 10, -10.0)]).unwrap().lsn > 0);
    assert!(e.execute("db", &[write("a", 150, -150.0)]).unwrap().lsn > 0);
    // A deleted point written again is ordered after its delete.
    e.execute("db", &[TxnOp::Delete { value: value_ref("a"), ts: 20 }]).unwrap();
    assert!(e.execute("db", &[write("a", 20, 2000.0)]).unwrap().lsn > 0, "a re-insert of a deleted point");
    drop(e);
    let mut want: Vec<(i64, FieldValue)> =
        (0..50).chain([75]).chain(100..200).chain([300]).map(|t| (t, f(t as f64))).collect();
    for (t, v) in [(10, -10.0), (150, -150.0), (20, 2000.0), (300, 3.0)] {
        want.iter_mut().find(|(ts, _)| *ts == t).unwrap().1 = f(v);
    }
    assert_eq!(dump(h.engine().as_ref(), "db", "cpu")[0].1, want, "live");
    h.crash_restart();
    assert_eq!(dump(h.engine().as_ref(), "db", "cpu")[0].1, want, "after replay");
    // After a restart the replayed range is checked by existence, too.
    assert_eq!(h.engine().execute("db", &[write("a", 60, 60.0)]).unwrap().lsn, 0, "new point after restart");
    assert!(h.engine().execute("db", &[write("a", 40, 4.0)]).unwrap().lsn > 0, "replayed point");
}

#[test]
fn a_filling_log_asks_for_a_background_checkpoint_and_holds_writers_back_only_without_room() {
    let h = Harness::new(LogKind::DeclogPmem);
    let e = h.engine().clone();
    let big = "x".repeat(2000);
    let text = |host: &str, ts: i64| {
        TxnOp::Write(point("log", host, vec![("msg", FieldValue::String(format!("{ts}{big}")))], ts))
    };
    let at_start = e.stats().checkpoints; // CREATE DATABASE is one
    let mut ts = 0;
    while !e.checkpoint_wanted() {
        e.execute("db", &[text("a", ts), text("b", ts)]).unwrap();
        ts += 1;
        assert!(ts < 10_000, "the log never asked for a checkpoint");
    }
    let s = e.stats();
    assert_eq!(
        (s.checkpoints - at_start, s.log_throttles),
        (0, 0),
        "asking is not checkpointing on the ack path"
    );
    // Nobody runs the background checkpointer here: writers go on until a
    // stream has no room, then one checkpoints and is counted as held back.
    while e.stats().log_throttles == 0 {
        e.execute("db", &[text("a", ts), text("b", ts)]).unwrap();
        ts += 1;
        assert!(ts < 20_000, "the log never ran out of room");
    }
    let s = e.stats();
    assert!(s.checkpoints > at_start && s.log_throttled_ns > 0, "{s:?}");
    assert!(!e.checkpoint_wanted(), "the checkpoint answered the request");
    let d = dump(e.as_ref(), "db", "log");
    assert!(d.iter().all(|(_, pts)| pts.len() == ts as usize), "every acknowledged point is there");
}

/// Planning runs unserialized when every series of a request exists, and
/// under the planning lock when one is new: writers racing to create the
/// same series and then writing them again agree on one id per series,
/// and every point is there, live and after a crash.
#[test]
fn concurrent_writers_creating_and_reusing_series_agree_on_their_ids() {
    let mut h = Harness::new(LogKind::DeclogPmem);
    let e = h.engine().clone();
    let writers: Vec<_> = (0..4i64)
        .map(|w| {
            let e = Arc::clone(&e);
            std::thread::spawn(move || {
                for round in 0..30i64 {
                    // Hosts h0..h{round}: each round names one host more, so
                    // new series keep arriving while old ones are reused.
                    let ts = round * 4 + w;
                    let ops: Vec<TxnOp> =
                        (0..=round).map(|h| write(&format!("h{h}"), ts, ts as f64)).collect();
                    e.execute("db", &ops).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    drop(e);
    let check = |what: &str, engine: &dyn SeriesStore| {
        let want: Vec<(String, Vec<(i64, FieldValue)>)> = (0..30i64)
            .map(|n| {
                let host = format!("{:?}#u", vec![("host".to_string(), format!("h{n}"))]);
                (host, (n * 4..120).map(|ts| (ts, f(ts as f64))).collect())
            })
            .collect();
        let mut got = dump(engine, "db", "cpu");
        got.sort_by_key(|(host, _)| (host.len(), host.clone()));
        assert_eq!(got.len(), 30, "{what}: one series per host, created once");
        assert_eq!(got, want, "{what}");
    };
    check("live", h.engine().as_ref());
    h.crash_restart();
    check("after a crash", h.engine().as_ref());
}
