//! Event streams through [`crate::Db`] and its table catalog: create, write
//! (mixed with series, with misfit lines), query (range, windows, filters,
//! equal timestamps, late events) against a naive model, restart, drop,
//! leftovers of interrupted creates/drops, and a damaged catalog.

use std::path::Path;

use crate::tables::streams::{
    AggRow, EventAgg, EventCmp, EventFilter, EventQuery, EventRows, EventSelect, EventWindow, StreamAttr,
    StreamAttrType, StreamError, StreamTables,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_series::{FieldValue, Point, TimeRange};

use crate::{Config, Db, TableKind, Tables};

const SEED: u64 = 0x57_2EA7;

fn config(dir: &Path, placement: &str) -> Config {
    let mut c = Config { data_dir: dir.to_path_buf(), ..Config::default() };
    c.storage.protocol = "serial-ssd".into();
    c.streams.placement = placement.into();
    c.streams.max_leaf_nodes = 4096;
    c.streams.max_index_nodes = 256;
    c.streams.queue_capacity_bytes = 64 << 10;
    c
}

/// Opens the data directory, with the database `mydb` the tests use.
fn open(dir: &Path, placement: &str) -> Db {
    let db = Db::open(&config(dir, placement), &|_, _, _| {}).expect("open");
    db.tables().add_database("mydb").expect("create mydb");
    db
}

fn attrs() -> Vec<StreamAttr> {
    let a = |name: &str, ty| StreamAttr { name: name.into(), ty };
    vec![
        a("seq", StreamAttrType::I64),
        a("price", StreamAttrType::F64),
        a("volume", StreamAttrType::I32),
        a("sym", StreamAttrType::Str { len_bytes: 4 }),
        a("ok", StreamAttrType::Bool),
    ]
}

/// One modelled event: (ts, seq, price, volume, sym, ok).
type Ev = (i64, i64, f64, i32, String, bool);

fn point(e: &Ev) -> Point {
    Point {
        measurement: "stock".into(),
        tags: vec![],
        fields: vec![
            ("seq".into(), FieldValue::Integer(e.1)),
            ("price".into(), FieldValue::Float(e.2)),
            ("volume".into(), FieldValue::Integer(i64::from(e.3))),
            ("sym".into(), FieldValue::String(e.4.clone())),
            ("ok".into(), FieldValue::Boolean(e.5)),
        ],
        timestamp_ns: e.0,
    }
}

/// Events with repeated timestamps (20%) and late arrivals (10%).
fn events(rng: &mut ChaCha8Rng, n: usize) -> Vec<Ev> {
    let mut ts = 1_000_000_000_000i64;
    (0..n as i64)
        .map(|seq| {
            let r = rng.gen_range(0..10);
            let t = if r < 2 {
                ts
            } else if r < 3 {
                ts - rng.gen_range(1..30) * 1_000_000_000
            } else {
                ts += rng.gen_range(1..3) * 1_000_000_000;
                ts
            };
            let sym = ["AAPL", "MSFT", "X"][rng.gen_range(0..3)].to_string();
            (t, seq, rng.gen_range(0..40_000) as f64 / 4.0, rng.gen_range(-50..1000), sym, rng.gen_bool(0.5))
        })
        .collect()
}

/// The model: arrival order stably sorted by time.
fn sorted(model: &[Ev]) -> Vec<Ev> {
    let mut m = model.to_vec();
    m.sort_by_key(|e| e.0);
    m
}

fn select(store: &dyn Tables, s: EventSelect) -> EventRows {
    store.stream_tables().unwrap().select_events("mydb", "stock", &s).expect("select")
}

fn check_queries(store: &dyn Tables, model: &[Ev], rng: &mut ChaCha8Rng) {
    let all = sorted(model);
    let (first, last) = (all[0].0, all[all.len() - 1].0);
    for round in 0..6 {
        let lo = rng.gen_range(first - 5_000_000_000..last);
        let hi = rng.gen_range(lo..last + 5_000_000_000);
        let range = TimeRange { min_ns: lo, max_ns: hi };
        let in_range: Vec<&Ev> = all.iter().filter(|e| range.contains(e.0)).collect();
        // Time travel: every event once, equal timestamps kept.
        let raw = select(
            store,
            EventSelect {
                range,
                filters: vec![],
                query: EventQuery::Raw { attrs: vec!["seq".into()], limit: None, newest: false },
            },
        );
        let want: Vec<(i64, Vec<FieldValue>)> =
            in_range.iter().map(|e| (e.0, vec![FieldValue::Integer(e.1)])).collect();
        assert_eq!(raw, EventRows::Raw(want), "seed {SEED:#x} round {round}: range {lo}..={hi}");
        // Filter: price > x AND sym = 'AAPL' AND volume <= v.
        let x = rng.gen_range(0..10_000) as f64;
        let v: i64 = rng.gen_range(0..1000);
        let filters = vec![
            EventFilter { attr: "price".into(), op: EventCmp::Gt, value: FieldValue::Float(x) },
            EventFilter { attr: "sym".into(), op: EventCmp::Eq, value: FieldValue::String("AAPL".into()) },
            EventFilter { attr: "volume".into(), op: EventCmp::Lte, value: FieldValue::Integer(v) },
        ];
        let raw = select(
            store,
            EventSelect {
                range,
                filters: filters.clone(),
                query: EventQuery::Raw { attrs: vec!["seq".into()], limit: None, newest: false },
            },
        );
        let passing: Vec<&&Ev> =
            in_range.iter().filter(|e| e.2 > x && e.4 == "AAPL" && i64::from(e.3) <= v).collect();
        let want: Vec<(i64, Vec<FieldValue>)> =
            passing.iter().map(|e| (e.0, vec![FieldValue::Integer(e.1)])).collect();
        assert_eq!(raw, EventRows::Raw(want.clone()), "seed {SEED:#x} round {round}: filter");
        // LIMIT: the oldest or the newest n, in time order, with and without the filter.
        let all_in_range: Vec<(i64, Vec<FieldValue>)> =
            in_range.iter().map(|e| (e.0, vec![FieldValue::Integer(e.1)])).collect();
        let n = rng.gen_range(1..40u64);
        for (what, filters, rows) in [("plain", vec![], &all_in_range), ("filtered", filters.clone(), &want)]
        {
            for newest in [false, true] {
                let query = EventQuery::Raw { attrs: vec!["seq".into()], limit: Some(n), newest };
                let got = select(store, EventSelect { range, filters: filters.clone(), query });
                let k = rows.len().min(n as usize);
                let expect = if newest { rows[rows.len() - k..].to_vec() } else { rows[..k].to_vec() };
                assert_eq!(
                    got,
                    EventRows::Raw(expect),
                    "seed {SEED:#x} round {round}: {what} limit {n} newest {newest}"
                );
            }
        }
        // Windows from the tree's aggregates, and with a filter.
        let interval = rng.gen_range(1..20) * 10_000_000_000i64;
        let w = EventWindow { interval_ns: interval, offset_ns: 0 };
        let columns = vec![
            (EventAgg::Count, "price".to_string()),
            (EventAgg::Sum, "volume".to_string()),
            (EventAgg::Min, "price".to_string()),
            (EventAgg::Max, "seq".to_string()),
            (EventAgg::Mean, "price".to_string()),
        ];
        for (what, filters, events) in
            [("tree", vec![], in_range.clone()), ("filtered", filters, passing.iter().map(|e| **e).collect())]
        {
            let got = select(
                store,
                EventSelect {
                    range,
                    filters,
                    query: EventQuery::Aggregate { columns: columns.clone(), window: Some(w) },
                },
            );
            let mut want: Vec<AggRow> = Vec::new();
            for e in &events {
                let start = w.start(e.0) as i64;
                if want.last().is_none_or(|r| r.start_ns != start) {
                    want.push(AggRow { start_ns: start, values: vec![None; 5], selected_ns: None });
                }
                let r = want.last_mut().unwrap();
                let n = match r.values[0] {
                    Some(FieldValue::Integer(n)) => n,
                    _ => 0,
                };
                let sum = match r.values[1] {
                    Some(FieldValue::Integer(s)) => s,
                    _ => 0,
                };
                let min = match r.values[2] {
                    Some(FieldValue::Float(m)) => m.min(e.2),
                    _ => e.2,
                };
                let max = match r.values[3] {
                    Some(FieldValue::Integer(m)) => m.max(e.1),
                    _ => e.1,
                };
                let total = match r.values[4] {
                    Some(FieldValue::Float(m)) => m * n as f64,
                    _ => 0.0,
                } + e.2;
                r.values = vec![
                    Some(FieldValue::Integer(n + 1)),
                    Some(FieldValue::Integer(sum + i64::from(e.3))),
                    Some(FieldValue::Float(min)),
                    Some(FieldValue::Integer(max)),
                    Some(FieldValue::Float(total / (n + 1) as f64)),
                ];
            }
            let EventRows::Aggregate(got) = got else { panic!("seed {SEED:#x}: not aggregate rows") };
            assert_eq!(got.len(), want.len(), "seed {SEED:#x} round {round} {what}: windows");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.start_ns, w.start_ns, "seed {SEED:#x} round {round} {what}");
                assert_eq!(
                    g.values[..4],
                    w.values[..4],
                    "seed {SEED:#x} round {round} {what} at {}",
                    g.start_ns
                );
                let (Some(FieldValue::Float(a)), Some(FieldValue::Float(b))) = (&g.values[4], &w.values[4])
                else {
                    panic!("seed {SEED:#x}: mean missing")
                };
                assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "seed {SEED:#x}: mean {a} vs {b}");
            }
        }
    }
}

#[test]
fn streams_answer_like_the_model_and_survive_restart_and_drop() {
    for placement in ["pmem", "ssd"] {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(SEED);
        let db = open(dir.path(), placement);
        let info = db.tables().create_stream("mydb", "stock", &attrs()).expect("create");
        assert_eq!((info.events, info.attributes.len()), (0, 5));
        assert!(info.placement.contains("flank=pmem-k25"), "{}", info.placement);
        let model = events(&mut rng, 3000);
        for chunk in model.chunks(250) {
            let mut points: Vec<Point> = chunk.iter().map(point).collect();
            points.insert(
                1,
                Point {
                    measurement: "cpu".into(),
                    tags: vec![],
                    fields: vec![("v".into(), FieldValue::Float(1.0))],
                    timestamp_ns: chunk[0].0,
                },
            );
            let mut bad = point(&chunk[0]);
            bad.fields.pop();
            points.push(bad);
            let out = db.tables().write_request("mydb", &points).expect("write");
            assert_eq!(out.points_written, chunk.len() + 1, "{placement}: events and the series point");
            assert_eq!(out.rejected.len(), 1, "{placement}: {:?}", out.rejected);
            assert_eq!(out.rejected[0].0, points.len() - 1);
            assert!(
                out.rejected[0].1.to_string().contains("missing attribute 'ok'"),
                "{}",
                out.rejected[0].1
            );
        }
        assert_eq!(
            db.tables().tables("mydb").unwrap(),
            vec![("cpu".to_string(), TableKind::Series), ("stock".to_string(), TableKind::EventStream)]
        );
        check_queries(db.tables().as_ref(), &model, &mut rng);
        drop(db);

        let db = open(dir.path(), placement);
        let r = db.streams_recovery();
        assert_eq!(r.streams.len(), 1, "{placement}: {r}");
        assert_eq!(
            r.streams[0].events,
            model.len() as u64,
            "{placement}: every acknowledged event recovered"
        );
        check_queries(db.tables().as_ref(), &model, &mut rng);
        let schema = db.tables().stream_schema("mydb", "stock").expect("a stream has a schema");
        assert_eq!(schema, attrs(), "{placement}: the schema survives a restart");
        assert!(
            db.tables().series_store().series("mydb", "stock").unwrap().is_empty(),
            "{placement}: a stream's attributes are not series"
        );
        db.tables().drop_table("mydb", "stock").expect("drop through DROP MEASUREMENT");
        assert!(matches!(db.tables().drop_stream("mydb", "stock"), Err(StreamError::NotFound(_))));
        drop(db);

        let db = open(dir.path(), placement);
        assert!(db.tables().list_streams(None).is_empty(), "{placement}: a dropped stream stays dropped");
        assert_eq!(db.tables().tables("mydb").unwrap(), vec![("cpu".to_string(), TableKind::Series)]);
        assert!(std::fs::read_dir(dir.path().join("streams/mydb")).unwrap().next().is_none());
    }
}

#[test]
fn creation_checks_names_schemas_and_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), "ssd");
    let store = db.tables();
    let invalid = |r: Result<_, StreamError>| matches!(r, Err(StreamError::Invalid(_)));
    assert!(invalid(store.create_stream("mydb", "../x", &attrs())));
    assert!(invalid(store.create_stream("my db", "x", &attrs())));
    assert!(invalid(store.create_stream("mydb", "x", &[])));
    let dup = vec![attrs()[0].clone(), attrs()[0].clone()];
    assert!(invalid(store.create_stream("mydb", "x", &dup)));
    store.create_stream("mydb", "x", &attrs()).unwrap();
    assert!(matches!(store.create_stream("mydb", "x", &attrs()), Err(StreamError::AlreadyExists(_))));
    let Err(StreamError::NotFound(m)) = store.create_stream("nodb", "x", &attrs()) else {
        panic!("a stream in a missing database must be refused")
    };
    assert!(m.contains("database not found") && m.contains("CREATE DATABASE"), "{m}");
    assert!(!store.list_databases().contains(&"nodb".to_string()), "and no database appears");
    let p = Point {
        measurement: "cpu".into(),
        tags: vec![],
        fields: vec![("v".into(), FieldValue::Float(1.0))],
        timestamp_ns: 1,
    };
    store.write_request("mydb", &[p]).unwrap();
    let Err(StreamError::AlreadyExists(m)) = store.create_stream("mydb", "cpu", &attrs()) else {
        panic!("a stream over a series measurement must be refused")
    };
    assert!(m.contains("already holds series"), "{m}");
    assert_eq!(store.list_streams(Some("mydb")).len(), 1);
    assert!(store.list_streams(Some("other")).is_empty());
}

#[test]
fn leftovers_are_removed_and_a_damaged_stream_is_out_of_service_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), "pmem");
    db.tables().create_stream("mydb", "stock", &attrs()).unwrap();
    db.tables().create_stream("mydb", "other", &attrs()).unwrap();
    drop(db);
    let db_dir = dir.path().join("streams/mydb");
    std::fs::create_dir_all(db_dir.join(".creating-half")).unwrap();
    std::fs::create_dir_all(db_dir.join(".dropped-old/data")).unwrap();
    let db = open(dir.path(), "pmem");
    assert_eq!(db.streams_recovery().leftovers_removed, 2);
    assert_eq!(db.tables().list_streams(None).len(), 2);
    assert!(db.streams_recovery().to_string().contains("stream mydb/stock: 0 events"));
    drop(db);
    let catalog = db_dir.join("stock/stream.catalog");
    let mut bytes = std::fs::read(&catalog).unwrap();
    bytes[20] ^= 0x40;
    std::fs::write(&catalog, &bytes).unwrap();
    let db = open(dir.path(), "pmem");
    let failed = &db.streams_recovery().failed;
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!((failed[0].db.as_str(), failed[0].name.as_str()), ("mydb", "stock"));
    assert!(
        failed[0].reason.contains("CRC mismatch") && failed[0].reason.contains("stream.catalog"),
        "{failed:?}"
    );
    assert!(db.streams_recovery().to_string().contains("stream mydb/stock: FAILED to recover"));
    assert_eq!(db.tables().kind_of("mydb", "stock"), Some(TableKind::EventStream), "it still hides series");
    let select = EventSelect {
        range: TimeRange::ALL,
        filters: vec![],
        query: EventQuery::Raw { attrs: vec![], limit: None, newest: false },
    };
    let err = db.tables().select_events("mydb", "stock", &select).unwrap_err();
    assert!(
        matches!(err, StreamError::Unavailable(_)) && err.to_string().contains("failed to recover"),
        "{err}"
    );
    let e = (0, 1, 1.5, 2, "X".to_string(), true);
    let err = db.tables().write_request("mydb", &[point(&e)]).unwrap_err();
    assert!(matches!(err, strata_series::EngineError::Unavailable(_)), "{err}");
    let mut other = point(&e);
    other.measurement = "other".into();
    assert_eq!(db.tables().write_request("mydb", &[other]).unwrap().points_written, 1, "the rest is served");
    let err = db.tables().create_stream("mydb", "stock", &attrs()).unwrap_err();
    assert!(matches!(err, StreamError::AlreadyExists(_)), "{err}");
    db.tables().drop_stream("mydb", "stock").unwrap();
    assert!(db.streams().failed().is_empty());
    db.tables().create_stream("mydb", "stock", &attrs()).unwrap();
    assert_eq!(db.tables().write_request("mydb", &[point(&e)]).unwrap().points_written, 1);
}

#[test]
fn unsupported_queries_are_errors_not_answers() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), "ssd");
    db.tables().create_stream("mydb", "stock", &attrs()).unwrap();
    let q = |filters: Vec<EventFilter>, query| {
        db.tables().select_events("mydb", "stock", &EventSelect { range: TimeRange::ALL, filters, query })
    };
    let raw = |a: &str| EventQuery::Raw { attrs: vec![a.to_string()], limit: None, newest: false };
    assert!(q(vec![], raw("nope")).unwrap_err().to_string().contains("no attribute 'nope'"));
    let f = EventFilter { attr: "ok".into(), op: EventCmp::Gt, value: FieldValue::Boolean(true) };
    assert!(q(vec![f], raw("seq")).unwrap_err().to_string().contains("cannot compare attribute 'ok'"));
    let agg = EventQuery::Aggregate { columns: vec![(EventAgg::Sum, "sym".into())], window: None };
    assert!(q(vec![], agg).unwrap_err().to_string().contains("unsupported sum() on attribute 'sym'"));
    assert_eq!(db.tables().kind_of("mydb", "stock"), Some(TableKind::EventStream));
    assert!(
        db.tables().series_store().series("mydb", "stock").unwrap().is_empty(),
        "no series behind a stream"
    );
}

/// A PMem stream `stock` of `n` events from `seed`, written 700 per request.
fn loaded(dir: &Path, seed: u64, n: usize) -> (Db, Vec<Ev>) {
    let db = open(dir, "pmem");
    db.tables().create_stream("mydb", "stock", &attrs()).unwrap();
    let model = events(&mut ChaCha8Rng::seed_from_u64(seed), n);
    for chunk in model.chunks(700) {
        let points: Vec<Point> = chunk.iter().map(point).collect();
        assert_eq!(db.tables().write_request("mydb", &points).unwrap().points_written, chunk.len());
    }
    (db, model)
}

#[test]
fn full_scans_cross_chunks_and_limits_read_the_ends_of_a_large_stream() {
    let dir = tempfile::tempdir().unwrap();
    let (db, model) = loaded(dir.path(), SEED ^ 0xC4, 3 * super::query::SCAN_CHUNK_EVENTS as usize + 321);
    let all: Vec<(i64, Vec<FieldValue>)> =
        sorted(&model).iter().map(|e| (e.0, vec![FieldValue::Integer(e.1)])).collect();
    let raw = |limit, newest| EventQuery::Raw { attrs: vec!["seq".into()], limit, newest };
    let got = select(
        db.tables().as_ref(),
        EventSelect { range: TimeRange::ALL, filters: vec![], query: raw(None, false) },
    );
    assert_eq!(
        got,
        EventRows::Raw(all.clone()),
        "seed {SEED:#x}: a chunked scan returns every event once, in order"
    );
    for n in [1u64, 10, 4096, 5000] {
        let first = select(
            db.tables().as_ref(),
            EventSelect { range: TimeRange::ALL, filters: vec![], query: raw(Some(n), false) },
        );
        assert_eq!(first, EventRows::Raw(all[..n as usize].to_vec()), "first {n}");
        let last = select(
            db.tables().as_ref(),
            EventSelect { range: TimeRange::ALL, filters: vec![], query: raw(Some(n), true) },
        );
        assert_eq!(last, EventRows::Raw(all[all.len() - n as usize..].to_vec()), "last {n}");
    }
}

#[test]
fn scans_hand_chunks_on_without_the_lock_and_stop_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = super::query::SCAN_CHUNK_EVENTS as usize;
    let (db, model) = loaded(dir.path(), SEED ^ 0x5C, 2 * chunk + 99);
    let sorted_model = sorted(&model);
    let (first_ts, last_ts) = (sorted_model[0].0, sorted_model[sorted_model.len() - 1].0);
    let scan = EventSelect {
        range: TimeRange::ALL,
        filters: vec![],
        query: EventQuery::Raw { attrs: vec!["seq".into()], limit: None, newest: false },
    };
    // During the first chunk a writer appends an event behind the scan's
    // cursor, a late one ahead of it, one at the scan's end timestamp and
    // one after it: it is not blocked while the reader holds a chunk, and
    // the scan returns the stream as of its start plus the late event
    // ahead of its cursor.
    let ev = |ts: i64, seq: i64| (ts, seq, 0.0, 0, "X".to_string(), true);
    let during = [ev(first_ts - 1, -1), ev(last_ts - 1, -2), ev(last_ts, -3), ev(last_ts + 1, -4)];
    let mut got = Vec::new();
    let mut pieces = Vec::new();
    db.tables()
        .scan_events("mydb", "stock", &scan, &mut |rows| {
            if pieces.is_empty() {
                let tables = std::sync::Arc::clone(db.tables());
                let (done, wait) = std::sync::mpsc::channel();
                let during = during.clone();
                std::thread::spawn(move || {
                    for e in &during {
                        tables.write_request("mydb", &[point(e)]).unwrap();
                    }
                    done.send(()).unwrap();
                });
                let waited = wait.recv_timeout(std::time::Duration::from_secs(20));
                assert!(waited.is_ok(), "a writer is blocked while a scan hands a chunk on");
            }
            pieces.push(rows.len());
            got.extend(rows);
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    let mut seen = model.clone();
    seen.push(during[1].clone());
    let want: Vec<(i64, Vec<FieldValue>)> =
        sorted(&seen).iter().map(|e| (e.0, vec![FieldValue::Integer(e.1)])).collect();
    assert_eq!(
        got, want,
        "seed {SEED:#x}: the stream as of the scan's start, and the late event ahead of it"
    );
    assert_eq!(pieces, vec![chunk, chunk, 100], "pieces of one chunk each");
    let EventRows::Raw(after) = select(db.tables().as_ref(), scan.clone()) else { panic!("raw rows") };
    assert_eq!(after.len(), model.len() + during.len(), "a scan begun later sees every write");

    let mut calls = 0;
    db.tables()
        .scan_events("mydb", "stock", &scan, &mut |_| {
            calls += 1;
            std::ops::ControlFlow::Break(())
        })
        .unwrap();
    assert_eq!(calls, 1, "a scan stops when its reader breaks");
}

#[test]
fn integer_aggregates_beyond_2_pow_53_are_an_overflow_error_not_a_rounded_answer() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), "ssd");
    db.tables().create_stream("mydb", "stock", &attrs()).unwrap();
    let big = 1i64 << 52;
    let evs: Vec<Ev> = (0..3).map(|i| (1_000 + i, big, 1.0, 1, "X".to_string(), true)).collect();
    let points: Vec<Point> = evs.iter().map(point).collect();
    db.tables().write_request("mydb", &points).unwrap();
    let agg = |func, range| EventSelect {
        range,
        filters: vec![],
        query: EventQuery::Aggregate { columns: vec![(func, "seq".to_string())], window: None },
    };
    let two = TimeRange { min_ns: 1_000, max_ns: 1_001 };
    let EventRows::Aggregate(rows) = select(db.tables().as_ref(), agg(EventAgg::Sum, two)) else {
        panic!("aggregate rows")
    };
    assert_eq!(rows[0].values, vec![Some(FieldValue::Integer(2 * big))], "2^53 itself is exact");
    let err = db.tables().select_events("mydb", "stock", &agg(EventAgg::Sum, TimeRange::ALL)).unwrap_err();
    assert!(err.to_string().contains("integer aggregate overflow"), "{err}");
    let EventRows::Aggregate(rows) = select(db.tables().as_ref(), agg(EventAgg::Max, TimeRange::ALL)) else {
        panic!()
    };
    assert_eq!(rows[0].values, vec![Some(FieldValue::Integer(big))], "max is within range");
}

#[test]
fn drop_database_drops_its_streams_and_series_across_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), "ssd");
    let store = db.tables();
    store.create_stream("mydb", "ticks", &attrs()).unwrap();
    let p = Point {
        measurement: "cpu".into(),
        tags: vec![],
        fields: vec![("u".into(), FieldValue::Float(1.0))],
        timestamp_ns: 1,
    };
    store.write_request("mydb", &[p]).unwrap();
    store.remove_database("mydb").unwrap();
    store.remove_database("never-was").unwrap();
    assert!(!store.list_databases().contains(&"mydb".to_string()));
    assert!(store.list_streams(Some("mydb")).is_empty(), "the stream went with its database");
    drop(db);
    let db = Db::open(&config(dir.path(), "ssd"), &|_, _, _| {}).expect("reopen");
    let store = db.tables();
    assert!(!store.list_databases().contains(&"mydb".to_string()), "the drop is durable");
    assert!(store.list_streams(None).is_empty() && store.failed_streams().is_empty());
    store.add_database("mydb").unwrap();
    assert!(store.tables("mydb").unwrap().is_empty(), "recreated empty");
    store.create_stream("mydb", "ticks", &attrs()).unwrap();
}
