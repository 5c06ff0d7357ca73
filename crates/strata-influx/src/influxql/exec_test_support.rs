//! The fixed dataset and helpers of the executor tests (`exec_tests`,
//! `exec_function_tests`): a `MemStore` with cpu (host a/eu, host b/us;
//! usage float, idle integer), mem and events, and shortcuts to run a query
//! and take its series or its error.

use serde_json::Value;
use strata_series::reference::MemStore;
use strata_series::{FieldValue, Point, SeriesStore};

use super::time::NS_PER_S;
use super::{execute, QueryParams};

/// 2020-01-01T00:00:00Z.
pub(super) const T0: i64 = 1_577_836_800 * NS_PER_S;

pub(super) fn point(
    measurement: &str,
    tags: &[(&str, &str)],
    fields: Vec<(&str, FieldValue)>,
    seconds: i64,
) -> Point {
    Point {
        measurement: measurement.to_string(),
        tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        fields: fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        timestamp_ns: T0 + seconds * NS_PER_S,
    }
}

/// cpu (host a/eu, host b/us; usage float, idle integer), mem, events.
pub(super) fn store() -> MemStore {
    use FieldValue::*;
    let store = MemStore::new();
    store.create_database("db").unwrap();
    let a = [("host", "a"), ("region", "eu")];
    let b = [("host", "b"), ("region", "us")];
    let points = vec![
        point("cpu", &a, vec![("usage", Float(1.5)), ("idle", Integer(90))], 0),
        point("cpu", &a, vec![("usage", Float(2.5))], 10),
        point("cpu", &b, vec![("usage", Float(3.0)), ("idle", Integer(80))], 0),
        point("cpu", &b, vec![("usage", Float(5.0)), ("idle", Integer(70))], 20),
        point("cpu", &a, vec![("usage", Float(4.0)), ("idle", Integer(85))], 60),
        point("mem", &[("host", "a")], vec![("free", Unsigned(100))], 0),
        point("events", &[], vec![("msg", String("hello".into())), ("ok", Boolean(true))], 5),
    ];
    let outcome = store.write("db", &points).unwrap();
    assert!(outcome.rejected.is_empty());
    store
}

pub(super) fn params(now_seconds: i64) -> QueryParams {
    QueryParams {
        db: Some("db".to_string()),
        epoch: None,
        now_ns: T0 + now_seconds * NS_PER_S,
        ..Default::default()
    }
}

pub(super) fn run_on(store: &MemStore, q: &str) -> Value {
    execute(store, q, &params(90)).unwrap_or_else(|e| panic!("{q}: {e}"))
}

pub(super) fn run(q: &str) -> Value {
    run_on(&store(), q)
}

/// The `series` of the only statement.
pub(super) fn series(q: &str) -> Value {
    let body = run(q);
    assert_eq!(body["results"].as_array().unwrap().len(), 1, "{body}");
    assert!(body["results"][0].get("error").is_none(), "{q}: {body}");
    body["results"][0].get("series").cloned().unwrap_or(Value::Null)
}

pub(super) fn error_of(q: &str) -> String {
    let body = run(q);
    body["results"][0]["error"].as_str().unwrap_or_else(|| panic!("{q}: no error in {body}")).to_string()
}

/// cpu usage: host a 5@0s 9@10s 3@20s 7@70s; host b 9@5s 1@15s 8@65s 2@80s.
pub(super) fn cpu_two_hosts_store() -> MemStore {
    let store = MemStore::new();
    store.create_database("db").unwrap();
    let points: Vec<_> = [("a", 5.0, 0), ("a", 9.0, 10), ("a", 3.0, 20), ("a", 7.0, 70)]
        .into_iter()
        .chain([("b", 9.0, 5), ("b", 1.0, 15), ("b", 8.0, 65), ("b", 2.0, 80)])
        .map(|(host, usage, s)| point("cpu", &[("host", host)], vec![("usage", FieldValue::Float(usage))], s))
        .collect();
    assert!(store.write("db", &points).unwrap().rejected.is_empty());
    store
}
