//! Scenario tests of `SeriesEngine::execute_group` (transactions submitted
//! together, as concurrent clients would): under DecLog consecutive
//! insert-only transactions share the logging threads' flush rounds; every
//! member is atomic and acknowledged on its own, sees the members before it,
//! and survives a crash like a transaction run alone. Other protocols run
//! the members one after the other with the same results.

mod common;

use common::{dump, point, Harness, LogKind, ALL_LOGS};
use strata_series::{FieldValue, TxnOp, ValueRef};

fn f(x: f64) -> FieldValue {
    FieldValue::Float(x)
}

fn write(host: &str, ts: i64, v: f64) -> TxnOp {
    TxnOp::Write(point("cpu", host, vec![("u", f(v))], ts))
}

fn read(host: &str, ts: i64) -> TxnOp {
    TxnOp::Read {
        value: ValueRef {
            measurement: "cpu".into(),
            tags: vec![("host".into(), host.into())],
            field: "u".into(),
        },
        ts,
    }
}

/// Ten inserts at `ts`, one per host `h0`..`h9`, valued `v`.
fn insert_txn(ts: i64, v: f64) -> Vec<TxnOp> {
    (0..10).map(|h| write(&format!("h{h}"), ts, v)).collect()
}

#[test]
fn a_group_of_inserts_is_persisted_in_fewer_batches_than_the_same_transactions_alone() {
    let h = Harness::new(LogKind::DeclogPmem);
    let e = h.engine();
    let log = e.declog().expect("a DecLog engine").log();
    let streams = log.stream_positions().len() as u64;

    let before = log.stats().batches;
    for ts in 1..=8 {
        assert_eq!(e.execute("db", &insert_txn(ts, ts as f64)).unwrap().lsn, 0);
    }
    let alone = log.stats().batches - before;

    let group: Vec<Vec<TxnOp>> = (9..=16).map(|ts| insert_txn(ts, ts as f64)).collect();
    let before = log.stats().batches;
    let results = e.execute_group("db", &group);
    let grouped = log.stats().batches - before;

    assert_eq!(results.len(), 8);
    for (i, r) in results.iter().enumerate() {
        let out = r.as_ref().unwrap_or_else(|err| panic!("member {i}: {err}"));
        assert_eq!((out.lsn, out.write.points_written), (0, 10), "member {i}: insert-only, 10 points");
    }
    assert!(alone >= 8, "8 transactions waited for one after the other: at least a batch each, got {alone}");
    // The harness's queues hold 16 entries: a full queue closes even while
    // the group holds the flush, so 80 entries make at most 5 full queues
    // plus one partly filled queue per stream.
    let bound = 80u64.div_ceil(16) + streams;
    assert!(
        grouped <= bound,
        "a group of 8 insert-only transactions: at most {bound} batches, got {grouped}"
    );
    for (host, points) in dump(e.as_ref(), "db", "cpu") {
        assert_eq!(points.len(), 16, "{host}: all 16 timestamps");
    }
}

#[test]
fn members_see_the_members_before_them_and_updates_take_lsns() {
    let mut h = Harness::new(LogKind::DeclogPmem);
    let group = vec![
        insert_txn(1, 1.0),
        vec![read("h3", 1)],
        vec![write("h3", 1, 99.0)],
        insert_txn(2, 2.0),
        vec![read("h3", 1), read("h3", 2)],
    ];
    let results: Vec<_> = h.engine().execute_group("db", &group).into_iter().map(Result::unwrap).collect();
    assert_eq!(results[0].lsn, 0, "insert-only");
    assert_eq!(results[1].reads, vec![Some(f(1.0))], "the read sees the insert queued before it");
    assert!(results[2].lsn > 0, "an overwrite is an update with an LSN");
    assert_eq!(results[3].lsn, 0, "insert-only again");
    assert_eq!(results[4].reads, vec![Some(f(99.0)), Some(f(2.0))], "the update and the later insert");

    h.crash_restart();
    let after = dump(h.engine().as_ref(), "db", "cpu");
    assert_eq!(after.len(), 10, "ten hosts");
    for (host, points) in &after {
        let want_1 = if host.contains("\"h3\"") { 99.0 } else { 1.0 };
        assert_eq!(points, &vec![(1, f(want_1)), (2, f(2.0))], "{host} after the crash");
    }
}

#[test]
fn a_member_with_a_rejected_point_leaves_the_others_alone() {
    for kind in ALL_LOGS {
        let h = Harness::new(kind);
        let e = h.engine();
        let bad = vec![TxnOp::Write(point("cpu", "h0", vec![("u", FieldValue::Integer(7))], 3))];
        let group = vec![insert_txn(1, 1.0), bad, insert_txn(2, 2.0)];
        let results: Vec<_> = e.execute_group("db", &group).into_iter().map(Result::unwrap).collect();
        assert_eq!(results[0].write.points_written, 10, "{kind:?}");
        assert_eq!(results[2].write.points_written, 10, "{kind:?}");
        let rejected = &results[1].write.rejected;
        assert_eq!(rejected.len(), 1, "{kind:?}: an integer into a float field is rejected");
        assert!(
            rejected[0].1.to_string().contains("field type conflict"),
            "{kind:?}: a clear reason: {}",
            rejected[0].1
        );
        for (host, points) in dump(e.as_ref(), "db", "cpu") {
            assert_eq!(points, vec![(1, f(1.0)), (2, f(2.0))], "{kind:?} {host}");
        }
    }
}

#[test]
fn groups_give_every_protocol_the_results_of_running_the_members_alone() {
    for kind in ALL_LOGS {
        let grouped = Harness::new(kind);
        let alone = Harness::new(kind);
        let group =
            vec![insert_txn(1, 1.0), vec![write("h1", 1, 5.0)], insert_txn(2, 2.0), vec![read("h1", 1)]];
        let got: Vec<_> =
            grouped.engine().execute_group("db", &group).into_iter().map(|r| r.unwrap().reads).collect();
        let want: Vec<_> = group.iter().map(|ops| alone.engine().execute("db", ops).unwrap().reads).collect();
        assert_eq!(got, want, "{kind:?}: reads");
        assert_eq!(
            dump(grouped.engine().as_ref(), "db", "cpu"),
            dump(alone.engine().as_ref(), "db", "cpu"),
            "{kind:?}: contents"
        );
    }
}
