//! DROP DATABASE and DROP SERIES under every durable commit protocol: the
//! drop survives a crash restart (by its WAL record under serial, by the
//! barrier's checkpoint under DecLog), whether the dropped data sat in
//! sealed blocks, in DRAM, or both, and the names can be used again.

mod common;

use common::{dump, point, Harness, LogKind};
use strata_series::{EngineError, FieldValue, SeriesStore};

const DURABLE_LOGS: [LogKind; 3] = [LogKind::SerialPmem, LogKind::SerialSsd, LogKind::DeclogPmem];

fn f(v: f64) -> FieldValue {
    FieldValue::Float(v)
}

#[test]
fn drop_database_survives_a_crash_restart_and_the_name_can_be_reused() {
    for kind in DURABLE_LOGS {
        let mut h = Harness::new(kind);
        let e = h.engine().clone();
        e.create_database("gone").unwrap();
        e.write("gone", &[point("cpu", "a", vec![("u", f(1.0))], 1)]).unwrap();
        e.checkpoint().unwrap();
        e.write("gone", &[point("cpu", "b", vec![("u", f(2.0))], 2)]).unwrap();
        e.write("db", &[point("cpu", "a", vec![("u", f(9.0))], 9)]).unwrap();
        e.drop_database("gone").unwrap();
        e.drop_database("never-was").unwrap();
        assert_eq!(e.databases(), vec!["db".to_string()], "{kind:?}");
        drop(e);
        h.crash_restart();
        let e = h.engine().clone();
        assert_eq!(e.databases(), vec!["db".to_string()], "{kind:?}: the drop is durable");
        assert!(matches!(e.series("gone", "cpu"), Err(EngineError::UnknownDatabase(_))), "{kind:?}");
        assert_eq!(dump(e.as_ref(), "db", "cpu")[0].1, vec![(9, f(9.0))], "{kind:?}: the other db stays");
        e.create_database("gone").unwrap();
        assert!(e.measurements("gone").unwrap().is_empty(), "{kind:?}: recreated empty");
        e.write("gone", &[point("cpu", "a", vec![("u", FieldValue::Integer(3))], 3)]).unwrap();
        drop(e);
        h.crash_restart();
        let e = h.engine();
        let d = dump(e.as_ref(), "gone", "cpu");
        assert_eq!(d.len(), 1, "{kind:?}: only the new series: {d:?}");
        assert_eq!(d[0].1, vec![(3, FieldValue::Integer(3))], "{kind:?}: a new type, only the new point");
    }
}

#[test]
fn drop_database_then_checkpoint_then_restart_keeps_it_gone() {
    for kind in DURABLE_LOGS {
        let mut h = Harness::new(kind);
        let e = h.engine().clone();
        e.create_database("gone").unwrap();
        e.write("gone", &[point("cpu", "a", vec![("u", f(1.0))], 1)]).unwrap();
        e.drop_database("gone").unwrap();
        e.checkpoint().unwrap();
        drop(e);
        h.crash_restart();
        assert_eq!(h.engine().databases(), vec!["db".to_string()], "{kind:?}");
        assert_eq!(h.engine().stats().series, 0, "{kind:?}: no series left behind");
    }
}

#[test]
fn drop_series_removes_index_entries_and_data_across_restart() {
    for kind in DURABLE_LOGS {
        let mut h = Harness::new(kind);
        let e = h.engine().clone();
        e.write(
            "db",
            &[point("cpu", "a", vec![("u", f(1.0))], 1), point("cpu", "b", vec![("u", f(2.0))], 1)],
        )
        .unwrap();
        e.checkpoint().unwrap();
        e.write(
            "db",
            &[point("cpu", "a", vec![("u", f(3.0))], 2), point("mem", "a", vec![("free", f(4.0))], 2)],
        )
        .unwrap();
        let ids: Vec<_> =
            e.series("db", "cpu").unwrap().into_iter().filter(|s| s.tags[0].1 == "a").map(|s| s.id).collect();
        assert_eq!(e.drop_series("db", &ids).unwrap(), 1, "{kind:?}");
        let mem: Vec<_> = e.series("db", "mem").unwrap().into_iter().map(|s| s.id).collect();
        assert_eq!(e.drop_series("db", &mem).unwrap(), 1, "{kind:?}");
        drop(e);
        h.crash_restart();
        let e = h.engine().clone();
        assert_eq!(
            e.measurements("db").unwrap(),
            vec!["cpu".to_string()],
            "{kind:?}: mem had no series left"
        );
        let d = dump(e.as_ref(), "db", "cpu");
        assert_eq!(d.len(), 1, "{kind:?}: {d:?}");
        assert_eq!(d[0].1, vec![(1, f(2.0))], "{kind:?}: host b's point only");
        e.write("db", &[point("cpu", "a", vec![("u", f(5.0))], 5)]).unwrap();
        assert_eq!(
            dump(e.as_ref(), "db", "cpu")[0].1,
            vec![(5, f(5.0))],
            "{kind:?}: a new series, no old points"
        );
    }
}
