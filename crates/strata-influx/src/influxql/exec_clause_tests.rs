//! Executor tests of SELECT clauses beyond the basics (issue 15 item 3):
//! `tz('Area/City')`, several measurements and regexes in FROM. Each expected answer is Debian's InfluxDB 1.6.7's on
//! the same points (and agrees with InfluxDB 1.8's documented rules: windows
//! aligned in local time, times printed with the zone's offset).

use serde_json::{json, Value};
use strata_series::reference::MemStore;
use strata_series::{FieldValue, Point, SeriesStore};

use super::exec_test_support::params;
use super::time::NS_PER_S;
use super::{execute, QueryParams};

/// Float `v` of measurement `m` at each (Unix seconds, value).
fn zone_store(points: &[(&str, i64, f64)]) -> MemStore {
    let store = MemStore::new();
    store.create_database("db").unwrap();
    let points: Vec<Point> = points
        .iter()
        .map(|(m, s, v)| Point {
            measurement: m.to_string(),
            tags: vec![("host".to_string(), "a".to_string())],
            fields: vec![("v".to_string(), FieldValue::Float(*v))],
            timestamp_ns: s * NS_PER_S,
        })
        .collect();
    assert!(store.write("db", &points).unwrap().rejected.is_empty());
    store
}

/// Paris around 2021-03-28 (01:00Z: +01:00 to +02:00) as `w`, and around
/// 2021-10-31 (01:00Z: +02:00 to +01:00) as `f`.
fn paris_store() -> MemStore {
    zone_store(&[
        ("w", 1_616_886_000, 1.0),
        ("w", 1_616_889_600, 2.0),
        ("w", 1_616_893_200, 3.0),
        ("w", 1_616_896_800, 4.0),
        ("w", 1_616_972_400, 5.0),
        ("w", 1_616_976_000, 6.0),
        ("f", 1_635_640_200, 1.0), // 2021-10-31T00:30Z
        ("f", 1_635_719_400, 2.0), // 2021-10-31T22:30Z
        ("f", 1_635_723_000, 4.0), // 2021-10-31T23:30Z
    ])
}

fn values_with(store: &MemStore, q: &str, params: &QueryParams) -> Value {
    let body = execute(store, q, params).unwrap_or_else(|e| panic!("{q}: {e}"));
    assert!(body["results"][0].get("error").is_none(), "{q}: {body}");
    body["results"][0]["series"][0]["values"].clone()
}

fn values(q: &str) -> Value {
    values_with(&paris_store(), q, &params(0))
}

#[test]
fn tz_aligns_day_windows_at_local_midnight_and_prints_the_offset() {
    let cases = [
        (
            "w",
            "2021-03-27T00:00:00Z",
            "2021-03-30T00:00:00Z",
            "1d",
            "Europe/Paris",
            json!([
                ["2021-03-27T00:00:00+01:00", null],
                ["2021-03-28T00:00:00+01:00", 10.0],
                ["2021-03-29T00:00:00+02:00", 11.0],
                ["2021-03-30T00:00:00+02:00", null]
            ]),
        ),
        // The 25-hour day.
        (
            "f",
            "2021-10-31T00:00:00Z",
            "2021-11-02T00:00:00Z",
            "1d",
            "Europe/Paris",
            json!([
                ["2021-10-31T00:00:00+02:00", 3.0],
                ["2021-11-01T00:00:00+01:00", 4.0],
                ["2021-11-02T00:00:00+01:00", null]
            ]),
        ),
        (
            "f",
            "2021-10-31T00:00:00Z",
            "2021-11-02T00:00:00Z",
            "1d",
            "America/Chicago",
            json!([
                ["2021-10-30T00:00:00-05:00", 1.0],
                ["2021-10-31T00:00:00-05:00", 6.0],
                ["2021-11-01T00:00:00-05:00", null]
            ]),
        ),
        // Hour windows stay on UTC hours.
        (
            "w",
            "2021-03-28T00:00:00Z",
            "2021-03-28T04:00:00Z",
            "1h",
            "Europe/Paris",
            json!([
                ["2021-03-28T01:00:00+01:00", 2.0],
                ["2021-03-28T03:00:00+02:00", 3.0],
                ["2021-03-28T04:00:00+02:00", 4.0],
                ["2021-03-28T05:00:00+02:00", null]
            ]),
        ),
    ];
    for (m, from, to, interval, zone, expected) in cases {
        let q = format!(
            "SELECT sum(v) FROM {m} WHERE time >= '{from}' AND time < '{to}' GROUP BY time({interval}) tz('{zone}')"
        );
        assert_eq!(values(&q), expected, "{q}");
    }
}

#[test]
fn tz_prints_raw_and_selector_times_in_the_zone_unless_epoch_is_given() {
    assert_eq!(
        values("SELECT v FROM w tz('Europe/Paris')"),
        json!([
            ["2021-03-28T00:00:00+01:00", 1.0],
            ["2021-03-28T01:00:00+01:00", 2.0],
            ["2021-03-28T03:00:00+02:00", 3.0],
            ["2021-03-28T04:00:00+02:00", 4.0],
            ["2021-03-29T01:00:00+02:00", 5.0],
            ["2021-03-29T02:00:00+02:00", 6.0]
        ])
    );
    assert_eq!(
        values("SELECT max(v) FROM w tz('Europe/Paris')"),
        json!([["2021-03-29T02:00:00+02:00", 6.0]])
    );
    assert_eq!(values("SELECT v FROM w LIMIT 1 tz('UTC')"), json!([["2021-03-27T23:00:00Z", 1.0]]));
    let epoch_s = QueryParams { epoch: Some("s".into()), ..params(0) };
    assert_eq!(
        values_with(&paris_store(), "SELECT v FROM w LIMIT 2 tz('Europe/Paris')", &epoch_s),
        json!([[1_616_886_000i64, 1.0], [1_616_889_600i64, 2.0]])
    );
}

#[test]
fn an_unknown_zone_is_a_parse_error() {
    let err = execute(&paris_store(), "SELECT v FROM w tz('Nowhere/Land')", &params(0)).unwrap_err();
    assert!(err.to_string().contains("unable to find time zone Nowhere/Land"), "{err}");
}

/// cpu (host a, b) and mem (host a, b), for FROM with several sources.
fn two_measurement_store() -> MemStore {
    let store = zone_store(&[("cpu", 0, 5.0), ("cpu", 10, 9.0), ("mem", 0, 100.0), ("memory", 5, 7.0)]);
    let b = Point {
        measurement: "cpu".into(),
        tags: vec![("host".into(), "b".into())],
        fields: vec![("v".into(), FieldValue::Float(2.0))],
        timestamp_ns: 20 * NS_PER_S,
    };
    let free = Point {
        measurement: "mem".into(),
        tags: vec![("host".into(), "b".into())],
        fields: vec![("free".into(), FieldValue::Integer(50))],
        timestamp_ns: 10 * NS_PER_S,
    };
    assert!(store.write("db", &[b, free]).unwrap().rejected.is_empty());
    store
}

fn names_and_values(q: &str) -> Vec<(Value, Value, Value)> {
    let body = execute(&two_measurement_store(), q, &QueryParams { epoch: Some("s".into()), ..params(0) })
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    assert!(body["results"][0].get("error").is_none(), "{q}: {body}");
    let series = body["results"][0]["series"].as_array().cloned().unwrap_or_default();
    series.iter().map(|s| (s["name"].clone(), s["tags"].clone(), s["values"].clone())).collect()
}

/// A series per measurement, in name order, each once; a missing one adds
/// nothing; SLIMIT counts per measurement (InfluxDB 1.6.7 gave these shapes
/// on the same kind of data: `FROM mem, cpu` answers cpu first,
/// `FROM nosuch, cpu` only cpu, `SLIMIT 1 SOFFSET 1` one series of each).
#[test]
fn from_several_measurements_and_a_regex_answer_a_series_per_measurement() {
    assert_eq!(
        names_and_values("SELECT max(v) FROM mem, cpu, cpu"),
        vec![
            (json!("cpu"), Value::Null, json!([[10, 9.0]])),
            (json!("mem"), Value::Null, json!([[0, 100.0]]))
        ]
    );
    assert_eq!(
        names_and_values("SELECT v FROM /^mem/"),
        vec![
            (json!("mem"), Value::Null, json!([[0, 100.0]])),
            (json!("memory"), Value::Null, json!([[5, 7.0]]))
        ]
    );
    assert_eq!(
        names_and_values("SELECT v FROM nosuch, /^c/ WHERE time < 15s"),
        vec![(json!("cpu"), Value::Null, json!([[0, 5.0], [10, 9.0]]))]
    );
    assert_eq!(
        names_and_values("SELECT count(v) FROM cpu, mem GROUP BY host SLIMIT 1 SOFFSET 1"),
        vec![(json!("cpu"), json!({"host": "b"}), json!([[0, 1]]))],
        "mem has one series only: SOFFSET 1 leaves none of it"
    );
}

/// `*` and `f(*)` over several measurements expand to the union of their
/// fields (and tags), null where a measurement lacks one: the shape
/// InfluxDB 1.6.7 answered for `SELECT * FROM cpu, mem` and
/// `SELECT count(*) FROM /^(cpu|mem)$/` on the same kind of data.
#[test]
fn wildcards_over_several_measurements_expand_to_the_union_of_fields() {
    let run = |q: &str| {
        let params = QueryParams { epoch: Some("s".into()), ..params(0) };
        let body = execute(&two_measurement_store(), q, &params).unwrap();
        assert!(body["results"][0].get("error").is_none(), "{q}: {body}");
        body["results"][0]["series"].clone()
    };
    assert_eq!(
        run("SELECT * FROM cpu, mem WHERE time < 15s"),
        json!([
            {"name": "cpu", "columns": ["time", "free", "host", "v"],
             "values": [[0, null, "a", 5.0], [10, null, "a", 9.0]]},
            {"name": "mem", "columns": ["time", "free", "host", "v"],
             "values": [[0, null, "a", 100.0], [10, 50, "b", null]]}
        ])
    );
    assert_eq!(
        run("SELECT count(*) FROM /^(cpu|mem)$/"),
        json!([
            {"name": "cpu", "columns": ["time", "count_free", "count_v"], "values": [[0, null, 3]]},
            {"name": "mem", "columns": ["time", "count_free", "count_v"], "values": [[0, 1, 1]]}
        ])
    );
}
