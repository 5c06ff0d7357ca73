//! The fuzz entry (`fuzz/fuzz_targets/influxql_parse.rs` and the smoke
//! test): parsing arbitrary text never panics; every statement that parses
//! prints (Display) to text that parses back to an equal statement; and
//! executing what parses against a small in-memory store never panics.

use strata_series::reference::MemStore;
use strata_series::{FieldValue, Point, SeriesStore};

use super::{execute, parse_query, QueryParams};

/// A small store with integer, float, string and boolean fields over two
/// measurements and a few tag sets.
pub fn fuzz_store() -> MemStore {
    let store = MemStore::new();
    store.create_database("db").expect("valid name");
    let mut points = Vec::new();
    for i in 0..12i64 {
        let host = if i % 2 == 0 { "a" } else { "b" };
        points.push(Point {
            measurement: "cpu".to_string(),
            tags: vec![("host".to_string(), host.to_string()), ("region".to_string(), "eu".to_string())],
            fields: vec![
                ("usage".to_string(), FieldValue::Float(i as f64 * 1.5)),
                ("count".to_string(), FieldValue::Integer(i)),
            ],
            timestamp_ns: i * 10_000_000_000,
        });
        points.push(Point {
            measurement: "events".to_string(),
            tags: vec![],
            fields: vec![
                ("msg".to_string(), FieldValue::String(format!("m{i}"))),
                ("ok".to_string(), FieldValue::Boolean(i % 3 == 0)),
            ],
            timestamp_ns: i * 7_000_000_000,
        });
    }
    store.write("db", &points).expect("database exists");
    store
}

/// See the module documentation.
pub fn fuzz_influxql(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(statements) = parse_query(&text) else {
        return;
    };
    for statement in &statements {
        let printed = statement.to_string();
        let again = parse_query(&printed)
            .unwrap_or_else(|e| panic!("{printed:?} (from {text:?}) does not parse again: {e}"));
        assert_eq!(again.len(), 1, "{printed:?} parsed into {} statements", again.len());
        assert_eq!(&again[0], statement, "{printed:?} (from {text:?}) parsed into a different statement");
    }
    let store = fuzz_store();
    let params = QueryParams {
        db: Some("db".to_string()),
        epoch: None,
        now_ns: 200_000_000_000,
        ..Default::default()
    };
    let body = execute(&store, &text, &params).expect("text parsed above");
    let results = body["results"].as_array().map_or(0, Vec::len);
    assert_eq!(results, statements.len(), "one result per statement");
}
