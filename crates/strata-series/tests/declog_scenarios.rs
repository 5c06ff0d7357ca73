//! Scenario tests of the series engine under DecLog (declog.txt section 4):
//! multi-operation transactions with inserts, reads, updates and point
//! deletes; data-driven LSNs (0 for insert-only, increasing for dependent
//! updates, eras across checkpoints); concurrent writers during a
//! checkpoint; recovery across crashes, with and without a checkpoint.

mod common;

use std::sync::Arc;

use common::{dump, point, Harness, LogKind};
use strata_series::{FieldValue, TxnOp, ValueRef};

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
