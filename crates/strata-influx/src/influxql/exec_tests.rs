//! Executor tests: exact InfluxDB 1.x JSON for a small fixed dataset in a
//! `MemStore` (raw selects, every aggregate, GROUP BY time and tags, each
//! fill mode, regex and field predicates, now() arithmetic, epochs, SHOW
//! statements, DELETE, DROP, errors).

use serde_json::{json, Value};
use strata_series::reference::MemStore;
use strata_series::{FieldValue, Point, SeriesStore};

use super::time::NS_PER_S;
use super::{execute, QueryError, QueryParams};

/// 2020-01-01T00:00:00Z.
const T0: i64 = 1_577_836_800 * NS_PER_S;

fn point(measurement: &str, tags: &[(&str, &str)], fields: Vec<(&str, FieldValue)>, seconds: i64) -> Point {
    Point {
        measurement: measurement.to_string(),
        tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        fields: fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        timestamp_ns: T0 + seconds * NS_PER_S,
    }
}

/// cpu (host a/eu, host b/us; usage float, idle integer), mem, events.
fn store() -> MemStore {
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

fn params(now_seconds: i64) -> QueryParams {
    QueryParams { db: Some("db".to_string()), epoch: None, now_ns: T0 + now_seconds * NS_PER_S }
}

fn run_on(store: &MemStore, q: &str) -> Value {
    execute(store, q, &params(90)).unwrap_or_else(|e| panic!("{q}: {e}"))
}

fn run(q: &str) -> Value {
    run_on(&store(), q)
}

/// The `series` of the only statement.
fn series(q: &str) -> Value {
    let body = run(q);
    assert_eq!(body["results"].as_array().unwrap().len(), 1, "{body}");
    assert!(body["results"][0].get("error").is_none(), "{q}: {body}");
    body["results"][0].get("series").cloned().unwrap_or(Value::Null)
}

fn error_of(q: &str) -> String {
    let body = run(q);
    body["results"][0]["error"].as_str().unwrap_or_else(|| panic!("{q}: no error in {body}")).to_string()
}

#[test]
fn raw_select_joins_fields_by_timestamp_per_tag_set() {
    assert_eq!(
        run("SELECT usage, idle FROM cpu"),
        json!({"results": [{"statement_id": 0, "series": [{
            "name": "cpu",
            "columns": ["time", "usage", "idle"],
            "values": [
                ["2020-01-01T00:00:00Z", 1.5, 90],
                ["2020-01-01T00:00:00Z", 3.0, 80],
                ["2020-01-01T00:00:10Z", 2.5, null],
                ["2020-01-01T00:00:20Z", 5.0, 70],
                ["2020-01-01T00:01:00Z", 4.0, 85]
            ]
        }]}]})
    );
}

#[test]
fn raw_select_star_includes_tags_alphabetically() {
    assert_eq!(
        series("SELECT * FROM cpu WHERE host = 'b'"),
        json!([{
            "name": "cpu",
            "columns": ["time", "host", "idle", "region", "usage"],
            "values": [
                ["2020-01-01T00:00:00Z", "b", 80, "us", 3.0],
                ["2020-01-01T00:00:20Z", "b", 70, "us", 5.0]
            ]
        }])
    );
}

#[test]
fn raw_select_skips_rows_without_selected_fields_and_handles_aliases() {
    assert_eq!(
        series("SELECT time AS ts, idle AS i, host FROM cpu WHERE host = 'a'"),
        json!([{
            "name": "cpu",
            "columns": ["ts", "i", "host"],
            "values": [["2020-01-01T00:00:00Z", 90, "a"], ["2020-01-01T00:01:00Z", 85, "a"]]
        }])
    );
    // A query that only selects tags returns nothing.
    assert_eq!(series("SELECT host FROM cpu"), Value::Null);
    assert_eq!(series("SELECT nope FROM cpu"), Value::Null);
    assert_eq!(series("SELECT usage FROM nothing_here"), Value::Null);
}

#[test]
fn raw_select_group_by_tags_order_limit_offset() {
    assert_eq!(
        series("SELECT usage FROM cpu GROUP BY * ORDER BY time DESC LIMIT 2"),
        json!([
            {"name": "cpu", "tags": {"host": "a", "region": "eu"}, "columns": ["time", "usage"],
             "values": [["2020-01-01T00:01:00Z", 4.0], ["2020-01-01T00:00:10Z", 2.5]]},
            {"name": "cpu", "tags": {"host": "b", "region": "us"}, "columns": ["time", "usage"],
             "values": [["2020-01-01T00:00:20Z", 5.0], ["2020-01-01T00:00:00Z", 3.0]]}
        ])
    );
    assert_eq!(
        series("SELECT usage FROM cpu WHERE host = 'a' LIMIT 1 OFFSET 1"),
        json!([{"name": "cpu", "columns": ["time", "usage"], "values": [["2020-01-01T00:00:10Z", 2.5]]}])
    );
}

#[test]
fn every_aggregate_without_group_by_time_reports_epoch_zero() {
    assert_eq!(
        series(
            "SELECT count(usage), sum(usage), mean(usage), min(usage), max(usage), first(usage), last(usage) FROM cpu"
        ),
        json!([{
            "name": "cpu",
            "columns": ["time", "count", "sum", "mean", "min", "max", "first", "last"],
            // first: two points at the earliest time, the larger value wins (InfluxDB).
            "values": [["1970-01-01T00:00:00Z", 5, 16.0, 3.2, 1.5, 5.0, 3.0, 4.0]]
        }])
    );
    assert_eq!(
        series("SELECT sum(idle), mean(idle), min(idle) AS lo, max(idle) FROM cpu"),
        json!([{"name": "cpu", "columns": ["time", "sum", "mean", "lo", "max"],
                "values": [["1970-01-01T00:00:00Z", 325, 81.25, 70, 90]]}])
    );
    assert_eq!(
        series("SELECT sum(free), first(msg) FROM mem"),
        json!([{"name": "mem", "columns": ["time", "sum", "first"], "values": [["1970-01-01T00:00:00Z", 100, null]]}])
    );
}

#[test]
fn aggregate_time_is_the_lower_bound_and_a_lone_selector_keeps_its_point_time() {
    assert_eq!(
        series("SELECT count(usage) FROM cpu WHERE time >= '2020-01-01T00:00:05Z'"),
        json!([{"name": "cpu", "columns": ["time", "count"], "values": [["2020-01-01T00:00:05Z", 3]]}])
    );
    assert_eq!(
        series("SELECT max(usage) FROM cpu"),
        json!([{"name": "cpu", "columns": ["time", "max"], "values": [["2020-01-01T00:00:20Z", 5.0]]}])
    );
    assert_eq!(
        series("SELECT last(msg) FROM events"),
        json!([{"name": "events", "columns": ["time", "last"], "values": [["2020-01-01T00:00:05Z", "hello"]]}])
    );
}

#[test]
fn wildcard_aggregates_expand_over_fields() {
    assert_eq!(
        series("SELECT count(*) FROM cpu"),
        json!([{"name": "cpu", "columns": ["time", "count_idle", "count_usage"],
                "values": [["1970-01-01T00:00:00Z", 4, 5]]}])
    );
    assert_eq!(
        series("SELECT last(*) FROM cpu WHERE host = 'b'"),
        json!([{"name": "cpu", "columns": ["time", "last_idle", "last_usage"],
                "values": [["1970-01-01T00:00:00Z", 70, 5.0]]}])
    );
    // mean(*) skips non-numeric fields.
    assert_eq!(series("SELECT mean(*) FROM events"), Value::Null);
}

const WINDOWED: &str =
    "SELECT mean(usage) FROM cpu WHERE time >= '2020-01-01T00:00:00Z' AND time < '2020-01-01T00:02:00Z' \
                        GROUP BY time(1m), host";

fn windowed(fill: &str) -> Value {
    series(&format!("{WINDOWED} {fill}"))
}

fn two_hosts(a: Value, b: Value) -> Value {
    json!([
        {"name": "cpu", "tags": {"host": "a"}, "columns": ["time", "mean"], "values": a},
        {"name": "cpu", "tags": {"host": "b"}, "columns": ["time", "mean"], "values": b}
    ])
}

#[test]
fn group_by_time_and_tag_with_default_null_fill() {
    let a = json!([["2020-01-01T00:00:00Z", 2.0], ["2020-01-01T00:01:00Z", 4.0]]);
    assert_eq!(
        windowed(""),
        two_hosts(a.clone(), json!([["2020-01-01T00:00:00Z", 4.0], ["2020-01-01T00:01:00Z", null]]))
    );
    assert_eq!(windowed("fill(null)"), windowed(""));
}

#[test]
fn fill_none_previous_and_number() {
    let a = json!([["2020-01-01T00:00:00Z", 2.0], ["2020-01-01T00:01:00Z", 4.0]]);
    assert_eq!(windowed("fill(none)"), two_hosts(a.clone(), json!([["2020-01-01T00:00:00Z", 4.0]])));
    assert_eq!(
        windowed("fill(previous)"),
        two_hosts(a.clone(), json!([["2020-01-01T00:00:00Z", 4.0], ["2020-01-01T00:01:00Z", 4.0]]))
    );
    assert_eq!(
        windowed("fill(-1)"),
        two_hosts(a.clone(), json!([["2020-01-01T00:00:00Z", 4.0], ["2020-01-01T00:01:00Z", -1.0]]))
    );
    assert_eq!(
        windowed("fill(0.5) ORDER BY time DESC LIMIT 1"),
        two_hosts(json!([["2020-01-01T00:01:00Z", 4.0]]), json!([["2020-01-01T00:01:00Z", 0.5]]))
    );
}

#[test]
fn count_fills_empty_windows_with_zero() {
    assert_eq!(
        series(
            "SELECT count(usage) FROM cpu WHERE host = 'b' AND time >= '2020-01-01T00:00:00Z' \
             AND time < '2020-01-01T00:02:00Z' GROUP BY time(1m)"
        ),
        json!([{"name": "cpu", "columns": ["time", "count"],
                "values": [["2020-01-01T00:00:00Z", 2], ["2020-01-01T00:01:00Z", 0]]}])
    );
}

#[test]
fn group_by_time_without_bounds_runs_from_the_first_point_to_now() {
    // now() is T0 + 90s: windows T0 and T0+1m; no lower bound means the
    // first window holds the first point.
    assert_eq!(
        series("SELECT count(usage) FROM cpu GROUP BY time(1m)"),
        json!([{"name": "cpu", "columns": ["time", "count"],
                "values": [["2020-01-01T00:00:00Z", 4], ["2020-01-01T00:01:00Z", 1]]}])
    );
    let body = execute(&store(), "SELECT count(usage) FROM cpu GROUP BY time(1m)", &params(200)).unwrap();
    assert_eq!(body["results"][0]["series"][0]["values"].as_array().unwrap().len(), 4);
    // A point later than now() is outside the default range.
    let body = execute(&store(), "SELECT count(usage) FROM cpu GROUP BY time(1m)", &params(30)).unwrap();
    assert_eq!(body["results"][0]["series"][0]["values"], json!([["2020-01-01T00:00:00Z", 4]]));
}

#[test]
fn group_by_time_offset_shifts_window_starts() {
    assert_eq!(
        series(
            "SELECT count(usage) FROM cpu WHERE time >= '2020-01-01T00:00:00Z' AND time < '2020-01-01T00:01:30Z' \
             GROUP BY time(1m, 30s)"
        ),
        json!([{"name": "cpu", "columns": ["time", "count"],
                "values": [["2019-12-31T23:59:30Z", 4], ["2020-01-01T00:00:30Z", 1]]}])
    );
}

#[test]
fn regex_tag_and_field_predicates() {
    let usage = |q: &str| -> Value {
        let s = series(q);
        if s.is_null() {
            return s;
        }
        Value::Array(s[0]["values"].as_array().unwrap().iter().map(|row| row[1].clone()).collect())
    };
    assert_eq!(usage("SELECT usage FROM cpu WHERE host =~ /^b/"), json!([3.0, 5.0]));
    assert_eq!(usage("SELECT usage FROM cpu WHERE host !~ /^b/"), json!([1.5, 2.5, 4.0]));
    assert_eq!(
        usage("SELECT usage FROM cpu WHERE region = 'eu' OR host = 'b'"),
        json!([1.5, 3.0, 2.5, 5.0, 4.0])
    );
    assert_eq!(usage("SELECT usage FROM cpu WHERE usage > 2.5"), json!([3.0, 5.0, 4.0]));
    assert_eq!(usage("SELECT usage FROM cpu WHERE idle < 85 AND host = 'b'"), json!([3.0, 5.0]));
    assert_eq!(
        usage("SELECT usage FROM cpu WHERE (host = 'a' AND idle >= 90) OR usage = 5"),
        json!([1.5, 5.0])
    );
    assert_eq!(
        usage("SELECT usage FROM cpu WHERE \"host\"::tag != 'a' AND region =~ /u/"),
        json!([3.0, 5.0])
    );
    assert_eq!(usage("SELECT usage FROM cpu WHERE nosuchtag = 'x'"), Value::Null);
    assert_eq!(
        series("SELECT mean(usage) FROM cpu WHERE idle > 80"),
        json!([{"name": "cpu", "columns": ["time", "mean"], "values": [["1970-01-01T00:00:00Z", 2.75]]}])
    );
}

#[test]
fn now_arithmetic_uses_the_fixed_now() {
    // now() is T0 + 90s, so now() - 75s is T0 + 15s.
    assert_eq!(
        series("SELECT usage FROM cpu WHERE time > now() - 75s"),
        json!([{"name": "cpu", "columns": ["time", "usage"],
                "values": [["2020-01-01T00:00:20Z", 5.0], ["2020-01-01T00:01:00Z", 4.0]]}])
    );
    assert_eq!(
        series("SELECT usage FROM cpu WHERE time <= now() - 1m30s AND time >= 1577836800000000000"),
        json!([{"name": "cpu", "columns": ["time", "usage"],
                "values": [["2020-01-01T00:00:00Z", 1.5], ["2020-01-01T00:00:00Z", 3.0]]}])
    );
    assert_eq!(series("SELECT usage FROM cpu WHERE time > now()"), Value::Null);
}

#[test]
fn epoch_parameter_gives_integer_times() {
    let q = "SELECT usage FROM cpu WHERE host = 'b'";
    let with_epoch = |epoch: &str| {
        let p = QueryParams { epoch: Some(epoch.to_string()), ..params(90) };
        execute(&store(), q, &p).unwrap()["results"][0]["series"][0]["values"].clone()
    };
    assert_eq!(
        with_epoch("ns"),
        json!([[1_577_836_800_000_000_000i64, 3.0], [1_577_836_820_000_000_000i64, 5.0]])
    );
    assert_eq!(with_epoch("u"), json!([[1_577_836_800_000_000i64, 3.0], [1_577_836_820_000_000i64, 5.0]]));
    assert_eq!(with_epoch("ms"), json!([[1_577_836_800_000i64, 3.0], [1_577_836_820_000i64, 5.0]]));
    assert_eq!(with_epoch("s"), json!([[1_577_836_800i64, 3.0], [1_577_836_820i64, 5.0]]));
    assert_eq!(with_epoch("m"), json!([[26_297_280, 3.0], [26_297_280, 5.0]]));
    assert_eq!(with_epoch("h"), json!([[438_288, 3.0], [438_288, 5.0]]));
    let bad = QueryParams { epoch: Some("d".to_string()), ..params(90) };
    assert!(matches!(execute(&store(), q, &bad), Err(QueryError::BadParam(_))));
}

#[test]
fn show_databases_measurements_and_retention_policies() {
    assert_eq!(
        series("SHOW DATABASES"),
        json!([{"name": "databases", "columns": ["name"], "values": [["db"]]}])
    );
    assert_eq!(
        series("SHOW MEASUREMENTS"),
        json!([{"name": "measurements", "columns": ["name"], "values": [["cpu"], ["events"], ["mem"]]}])
    );
    assert_eq!(
        series("SHOW MEASUREMENTS WITH MEASUREMENT =~ /^(cpu|mem)$/ WHERE host = 'a' LIMIT 1 OFFSET 1"),
        json!([{"name": "measurements", "columns": ["name"], "values": [["mem"]]}])
    );
    assert_eq!(
        series("SHOW RETENTION POLICIES ON db"),
        json!([{"columns": ["name", "duration", "shardGroupDuration", "replicaN", "default"],
                "values": [["autogen", "0s", "168h0m0s", 1, true]]}])
    );
    assert_eq!(error_of("SHOW RETENTION POLICIES ON nope"), "database not found: nope");
}

#[test]
fn show_tag_keys_and_values() {
    assert_eq!(
        series("SHOW TAG KEYS"),
        json!([
            {"name": "cpu", "columns": ["tagKey"], "values": [["host"], ["region"]]},
            {"name": "mem", "columns": ["tagKey"], "values": [["host"]]}
        ])
    );
    assert_eq!(
        series("SHOW TAG VALUES FROM cpu WITH KEY = \"host\""),
        json!([{"name": "cpu", "columns": ["key", "value"], "values": [["host", "a"], ["host", "b"]]}])
    );
    assert_eq!(
        series("SHOW TAG VALUES WITH KEY =~ /./ WHERE host = 'a'"),
        json!([
            {"name": "cpu", "columns": ["key", "value"], "values": [["host", "a"], ["region", "eu"]]},
            {"name": "mem", "columns": ["key", "value"], "values": [["host", "a"]]}
        ])
    );
    assert_eq!(
        series("SHOW TAG VALUES FROM cpu WITH KEY IN (\"region\")"),
        json!([{"name": "cpu", "columns": ["key", "value"], "values": [["region", "eu"], ["region", "us"]]}])
    );
}

#[test]
fn show_field_keys_and_series() {
    assert_eq!(
        series("SHOW FIELD KEYS"),
        json!([
            {"name": "cpu", "columns": ["fieldKey", "fieldType"], "values": [["idle", "integer"], ["usage", "float"]]},
            {"name": "events", "columns": ["fieldKey", "fieldType"], "values": [["msg", "string"], ["ok", "boolean"]]},
            {"name": "mem", "columns": ["fieldKey", "fieldType"], "values": [["free", "unsigned"]]}
        ])
    );
    assert_eq!(
        series("SHOW SERIES"),
        json!([{"columns": ["key"],
                "values": [["cpu,host=a,region=eu"], ["cpu,host=b,region=us"], ["events"], ["mem,host=a"]]}])
    );
    assert_eq!(
        series("SHOW SERIES FROM cpu WHERE region = 'us'"),
        json!([{"columns": ["key"], "values": [["cpu,host=b,region=us"]]}])
    );
    assert_eq!(error_of("SHOW SERIES WHERE time > 0"), "SHOW SERIES doesn't support time in WHERE clause");
}

#[test]
fn delete_removes_points_by_tag_and_time() {
    let s = store();
    assert_eq!(
        run_on(&s, "DELETE FROM cpu WHERE host = 'a' AND time < '2020-01-01T00:00:30Z'"),
        json!({"results": [{"statement_id": 0}]})
    );
    assert_eq!(
        run_on(&s, "SELECT usage FROM cpu")["results"][0]["series"][0]["values"],
        json!([["2020-01-01T00:00:00Z", 3.0], ["2020-01-01T00:00:20Z", 5.0], ["2020-01-01T00:01:00Z", 4.0]])
    );
    run_on(&s, "DELETE WHERE time <= '2020-01-01T00:00:20Z'");
    assert_eq!(run_on(&s, "SELECT count(*) FROM mem"), json!({"results": [{"statement_id": 0}]}));
    assert_eq!(
        run_on(&s, "SELECT usage FROM cpu")["results"][0]["series"][0]["values"],
        json!([["2020-01-01T00:01:00Z", 4.0]])
    );
    assert_eq!(
        run_on(&s, "DELETE FROM cpu WHERE usage > 1")["results"][0]["error"],
        json!("fields not supported in WHERE clause during deletion")
    );
}

#[test]
fn drop_measurement_and_create_database() {
    let s = store();
    assert_eq!(
        run_on(&s, "DROP MEASUREMENT cpu; CREATE DATABASE other"),
        json!({"results": [
            {"statement_id": 0}, {"statement_id": 1}
        ]})
    );
    assert_eq!(
        run_on(&s, "SHOW MEASUREMENTS; SHOW DATABASES")["results"],
        json!([
            {"statement_id": 0, "series": [{"name": "measurements", "columns": ["name"], "values": [["events"], ["mem"]]}]},
            {"statement_id": 1, "series": [{"name": "databases", "columns": ["name"], "values": [["db"], ["other"]]}]}
        ])
    );
    assert_eq!(run_on(&s, "SELECT * FROM cpu"), json!({"results": [{"statement_id": 0}]}));
}

#[test]
fn statement_errors_stop_the_query() {
    assert_eq!(
        run("SHOW MEASUREMENTS ON db LIMIT 1; SELECT v FROM nope..m; SHOW DATABASES"),
        json!({"results": [
            {"statement_id": 0, "series": [{"name": "measurements", "columns": ["name"], "values": [["cpu"]]}]},
            {"statement_id": 1, "error": "database not found: nope"},
            {"statement_id": 2, "error": "not executed"}
        ]})
    );
    let no_db = QueryParams { db: None, ..params(0) };
    assert_eq!(
        execute(&store(), "SELECT usage FROM cpu", &no_db).unwrap(),
        json!({"results": [{"statement_id": 0, "error": "database name required"}]})
    );
    assert_eq!(
        execute(&store(), "SELECT usage FROM db.autogen.cpu WHERE host = 'b' LIMIT 1", &no_db).unwrap()
            ["results"][0]["series"][0]["values"],
        json!([["2020-01-01T00:00:00Z", 3.0]])
    );
    assert!(matches!(execute(&store(), "SELECT FROM", &no_db), Err(QueryError::Parse(_))));
}

#[test]
fn select_validation_errors_match_influxdb() {
    for (query, message) in [
        ("SELECT usage, mean(usage) FROM cpu", "mixing aggregate and non-aggregate queries is not supported"),
        ("SELECT usage FROM cpu GROUP BY time(1m)", "GROUP BY requires at least one aggregate function"),
        ("SELECT mode(usage) FROM cpu", "undefined function mode()"),
        ("SELECT mean(usage, 2) FROM cpu", "invalid number of arguments for mean, expected 1, got 2"),
        ("SELECT mean(1) FROM cpu", "expected field argument in mean()"),
        ("SELECT time FROM cpu", "at least 1 non-time field must be queried"),
        ("SELECT mean(msg) FROM events", "unsupported mean() on field \"msg\" of type string"),
        ("SELECT usage + 1 FROM cpu", "unsupported expression in SELECT: usage + 1"),
        ("SELECT usage FROM cpu WHERE time != 0", "invalid time comparison operator: !="),
        (
            "SELECT count(usage) FROM cpu WHERE time > 0 GROUP BY time(1ns)",
            "max-select-buckets limit exceeded: (1577836890000000000/1000000)",
        ),
    ] {
        assert_eq!(error_of(query), message, "{query:?}");
    }
}

#[test]
fn group_by_star_and_missing_group_tags() {
    assert_eq!(
        series("SELECT sum(free) FROM mem GROUP BY *, rack"),
        json!([{"name": "mem", "tags": {"host": "a", "rack": ""}, "columns": ["time", "sum"],
                "values": [["1970-01-01T00:00:00Z", 100]]}])
    );
}

#[test]
fn long_or_chains_execute_without_exhausting_the_stack() {
    let terms: String = (1..450).map(|i| format!(" OR usage = {}", 1000 + i)).collect();
    let q = format!("SELECT usage FROM cpu WHERE usage = 5{terms}");
    assert_eq!(
        series(&q),
        json!([{"name": "cpu", "columns": ["time", "usage"], "values": [["2020-01-01T00:00:20Z", 5.0]]}])
    );
}

#[test]
fn grafana_style_query_with_millisecond_duration_bounds() {
    assert_eq!(
        series(
            "SELECT mean(\"usage\") FROM \"db\".\"autogen\".\"cpu\" WHERE (\"host\" =~ /^a$/) \
             and time >= 1577836800000ms and time <= 1577836859999ms GROUP BY time(30s) fill(null)"
        ),
        json!([{"name": "cpu", "columns": ["time", "mean"],
                "values": [["2020-01-01T00:00:00Z", 2.0], ["2020-01-01T00:00:30Z", null]]}])
    );
}

/// A store that lands one write request between a SELECT's listing of the
/// series and its read: a new point on a listed series plus a new series.
struct RacingStore {
    inner: MemStore,
    raced: std::sync::atomic::AtomicBool,
}

impl SeriesStore for RacingStore {
    fn databases(&self) -> Vec<String> {
        self.inner.databases()
    }
    fn create_database(&self, name: &str) -> Result<(), strata_series::EngineError> {
        self.inner.create_database(name)
    }
    fn measurements(&self, db: &str) -> Result<Vec<String>, strata_series::EngineError> {
        self.inner.measurements(db)
    }
    fn series(
        &self,
        db: &str,
        m: &str,
    ) -> Result<Vec<strata_series::SeriesInfo>, strata_series::EngineError> {
        self.inner.series(db, m)
    }
    fn read(
        &self,
        db: &str,
        ids: &[strata_series::SeriesId],
        range: strata_series::TimeRange,
    ) -> Result<Vec<Vec<(i64, FieldValue)>>, strata_series::EngineError> {
        if !self.raced.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let request = [
                point("race", &[("host", "a")], vec![("v", FieldValue::Float(2.0))], 1),
                point("race", &[("host", "b")], vec![("v", FieldValue::Float(3.0))], 1),
            ];
            self.inner.write("db", &request)?;
        }
        self.inner.read(db, ids, range)
    }
    fn write(
        &self,
        db: &str,
        points: &[Point],
    ) -> Result<strata_series::WriteOutcome, strata_series::EngineError> {
        self.inner.write(db, points)
    }
    fn delete(
        &self,
        db: &str,
        ids: &[strata_series::SeriesId],
        range: strata_series::TimeRange,
    ) -> Result<u64, strata_series::EngineError> {
        self.inner.delete(db, ids, range)
    }
    fn drop_measurement(&self, db: &str, m: &str) -> Result<(), strata_series::EngineError> {
        self.inner.drop_measurement(db, m)
    }
}

#[test]
fn a_request_landing_between_listing_and_read_is_seen_whole() {
    let inner = MemStore::new();
    inner.create_database("db").unwrap();
    inner.write("db", &[point("race", &[("host", "a")], vec![("v", FieldValue::Float(1.0))], 0)]).unwrap();
    let store = RacingStore { inner, raced: Default::default() };
    let params = QueryParams { db: Some("db".into()), epoch: Some("s".into()), now_ns: T0 };
    let got = execute(&store, "SELECT count(v) FROM race", &params).unwrap();
    assert_eq!(
        got["results"][0]["series"][0]["values"][0][1],
        json!(3),
        "the racing request's two points are both counted, not just the one on the listed series: {got}"
    );
}

/// median, stddev, spread and percentile against answers computed by hand
/// from the dataset (InfluxDB 1.8's documented rules: median averages the
/// two middle values; stddev is the sample deviation; percentile takes the
/// value at floor(n * N / 100 + 0.5) - 1 of the sorted values and is a
/// selector; spread keeps the field's type). usage: 1.5, 3.0, 2.5, 5.0, 4.0;
/// idle: 90, 80, 70, 85. Every answer here and in the transformation and
/// fill(linear) tests below was also checked against Debian's InfluxDB
/// 1.6.7 on the same points (it prints integral floats without `.0`).
#[test]
fn median_stddev_spread_and_percentile_match_hand_computed_answers() {
    let body = series("SELECT median(usage), stddev(usage), spread(usage) FROM cpu");
    let row = &body[0]["values"][0];
    assert_eq!(body[0]["columns"], json!(["time", "median", "stddev", "spread"]));
    assert_eq!((row[1].as_f64(), row[3].as_f64()), (Some(3.0), Some(3.5)));
    // mean 3.2; squared deviations 2.89 + 0.49 + 0.04 + 0.64 + 3.24 = 7.3; / 4.
    assert!((row[2].as_f64().unwrap() - (7.3f64 / 4.0).sqrt()).abs() < 1e-12, "{row}");
    let body = series("SELECT median(idle), stddev(idle), spread(idle) FROM cpu");
    let row = &body[0]["values"][0];
    assert_eq!(
        (row[1].as_f64(), row[3].clone()),
        (Some(82.5), json!(20)),
        "spread of integers stays integer"
    );
    // mean 81.25; squared deviations 76.5625 + 1.5625 + 126.5625 + 14.0625 = 218.75; / 3.
    assert!((row[2].as_f64().unwrap() - (218.75f64 / 3.0).sqrt()).abs() < 1e-12, "{row}");
    for (n, time, value) in [
        ("50", "2020-01-01T00:00:00Z", json!(3.0)),
        ("90", "2020-01-01T00:00:20Z", json!(5.0)),
        ("10", "2020-01-01T00:00:00Z", json!(1.5)),
        ("99.9", "2020-01-01T00:00:20Z", json!(5.0)),
    ] {
        assert_eq!(
            series(&format!("SELECT percentile(usage, {n}) FROM cpu")),
            json!([{"name": "cpu", "columns": ["time", "percentile"], "values": [[time, value]]}]),
            "percentile {n}: a selector keeps its point's time"
        );
    }
    assert_eq!(series("SELECT percentile(usage, 0) FROM cpu"), Value::Null, "index -1: no value");
    assert_eq!(
        series("SELECT stddev(free) FROM mem"),
        json!([{"name": "mem", "columns": ["time", "stddev"], "values": [["1970-01-01T00:00:00Z", null]]}]),
        "one value: a row with a null deviation"
    );
    assert!(error_of("SELECT percentile(usage) FROM cpu").contains("expected 2, got 1"));
    assert!(error_of("SELECT percentile(usage, 101) FROM cpu").contains("0..=100"));
    assert!(error_of("SELECT median(msg) FROM events").contains("unsupported median()"));
}

#[test]
fn group_by_a_tag_with_grafanas_tag_cast_and_windows() {
    assert_eq!(
        series("SELECT median(usage) FROM cpu GROUP BY \"host\"::tag"),
        json!([
            {"name": "cpu", "tags": {"host": "a"}, "columns": ["time", "median"], "values": [["1970-01-01T00:00:00Z", 2.5]]},
            {"name": "cpu", "tags": {"host": "b"}, "columns": ["time", "median"], "values": [["1970-01-01T00:00:00Z", 4.0]]}
        ])
    );
    let q = "SELECT spread(usage) FROM cpu WHERE time >= '2020-01-01T00:00:00Z' AND time < '2020-01-01T00:01:00Z' \
             GROUP BY time(30s), \"host\"::tag fill(null)";
    assert_eq!(
        series(q),
        json!([
            {"name": "cpu", "tags": {"host": "a"}, "columns": ["time", "spread"],
             "values": [["2020-01-01T00:00:00Z", 1.0], ["2020-01-01T00:00:30Z", null]]},
            {"name": "cpu", "tags": {"host": "b"}, "columns": ["time", "spread"],
             "values": [["2020-01-01T00:00:00Z", 2.0], ["2020-01-01T00:00:30Z", null]]}
        ])
    );
    let q = "SELECT count(usage) FROM cpu GROUP BY \"host\"::field";
    let err = execute(&store(), q, &params(90)).map(|_| ()).unwrap_err();
    assert!(err.to_string().contains("found field, expected tag"), "{err}");
}

/// Transformations over GROUP BY time windows, as Grafana's counter panels
/// write them, with answers computed by hand: host a's usage is 1.5 at 0 s
/// and 2.5 at 10 s; host b's 3.0 at 0 s and 5.0 at 20 s; idle a 90 at 0 s
/// and 85 at 60 s, b 80 at 0 s and 70 at 20 s.
#[test]
fn transformations_of_windowed_aggregates_match_hand_computed_answers() {
    let range = "time >= '2020-01-01T00:00:00Z'";
    assert_eq!(
        series(&format!(
            "SELECT non_negative_derivative(mean(usage), 1s) FROM cpu WHERE {range} AND time < '2020-01-01T00:01:00Z' \
             GROUP BY time(10s), \"host\"::tag fill(none)"
        )),
        json!([
            {"name": "cpu", "tags": {"host": "a"}, "columns": ["time", "non_negative_derivative"],
             "values": [["2020-01-01T00:00:10Z", 0.1]]},
            {"name": "cpu", "tags": {"host": "b"}, "columns": ["time", "non_negative_derivative"],
             "values": [["2020-01-01T00:00:20Z", 0.1]]}
        ])
    );
    assert_eq!(
        series(&format!(
            "SELECT difference(max(idle)) FROM cpu WHERE {range} GROUP BY time(10s), host fill(none)"
        )),
        json!([
            {"name": "cpu", "tags": {"host": "a"}, "columns": ["time", "difference"], "values": [["2020-01-01T00:01:00Z", -5]]},
            {"name": "cpu", "tags": {"host": "b"}, "columns": ["time", "difference"], "values": [["2020-01-01T00:00:20Z", -10]]}
        ])
    );
    assert_eq!(
        series(&format!(
            "SELECT non_negative_difference(max(idle)) FROM cpu WHERE {range} GROUP BY time(10s), host fill(none)"
        )),
        Value::Null,
        "both steps are drops"
    );
    assert_eq!(
        series(&format!(
            "SELECT cumulative_sum(sum(usage)), moving_average(mean(usage), 2) FROM cpu WHERE {range} \
             GROUP BY time(30s) fill(none)"
        )),
        json!([{"name": "cpu", "columns": ["time", "cumulative_sum", "moving_average"],
                "values": [["2020-01-01T00:00:00Z", 12.0, null], ["2020-01-01T00:01:00Z", 16.0, 3.5]]}])
    );
    assert!(error_of("SELECT derivative(usage), mean(usage) FROM cpu").contains("raw values goes with"));
    assert!(error_of("SELECT derivative(mean(usage)) FROM cpu").contains("needs GROUP BY time"));
    assert!(error_of("SELECT moving_average(mean(usage), 0) FROM cpu GROUP BY time(1m)").contains("above 0"));
}

/// fill(linear), by hand: host a's usage 1.5 at 0 s, 2.5 at 10 s, 4.0 at
/// 60 s (empty windows 20-50 s lie on the line from 2.5 to 4.0); its idle
/// 90 at 0 s and 85 at 60 s (integers truncated toward zero).
#[test]
fn fill_linear_interpolates_between_windows_with_values() {
    let q = "SELECT mean(usage), max(idle) FROM cpu WHERE host = 'a' AND time >= '2020-01-01T00:00:00Z' \
             AND time < '2020-01-01T00:01:20Z' GROUP BY time(10s) fill(linear)";
    let body = series(q);
    let rows = body[0]["values"].as_array().unwrap();
    let usage: Vec<Option<f64>> = rows.iter().map(|r| r[1].as_f64()).collect();
    let idle: Vec<Value> = rows.iter().map(|r| r[2].clone()).collect();
    let expected = [1.5, 2.5, 2.8, 3.1, 3.4, 3.7, 4.0];
    for (got, want) in usage.iter().zip(expected) {
        assert!((got.unwrap() - want).abs() < 1e-9, "{usage:?}");
    }
    assert_eq!(usage[7], None, "no value after the last window with one");
    assert_eq!(
        idle,
        vec![json!(90), json!(89), json!(88), json!(87), json!(86), json!(85), json!(85), Value::Null]
    );
}

/// SLIMIT and SOFFSET pick series after grouping (InfluxDB 1.6.7 gives host
/// b's mean, 4, for `GROUP BY host SLIMIT 1 SOFFSET 1`).
#[test]
fn slimit_and_soffset_pick_series() {
    let hosts = |q: &str| -> Vec<String> {
        let body = series(q);
        body.as_array().map_or(Vec::new(), |s| {
            s.iter().map(|s| s["tags"]["host"].as_str().unwrap().to_string()).collect()
        })
    };
    assert_eq!(hosts("SELECT mean(usage) FROM cpu GROUP BY host SLIMIT 1"), ["a"]);
    assert_eq!(hosts("SELECT mean(usage) FROM cpu GROUP BY host SLIMIT 1 SOFFSET 1"), ["b"]);
    assert_eq!(hosts("SELECT usage FROM cpu GROUP BY host SOFFSET 2"), Vec::<String>::new());
    assert_eq!(
        series("SELECT mean(usage) FROM cpu GROUP BY host SLIMIT 1 SOFFSET 1")[0]["values"][0][1],
        json!(4.0)
    );
    let stmt = crate::influxql::parser::parse_statements("SELECT usage FROM cpu LIMIT 2 SLIMIT 3 SOFFSET 1")
        .unwrap();
    assert_eq!(stmt[0].to_string(), "SELECT usage FROM cpu LIMIT 2 SLIMIT 3 SOFFSET 1", "printed as parsed");
}

/// `SHOW ... CARDINALITY` in the shapes Debian's InfluxDB 1.6.7 answers:
/// cpu has 2 tag sets and the fields usage and idle; mem 1 tag set (host)
/// and free; events no tags and msg, ok.
#[test]
fn cardinality_statements_count_what_the_plain_show_lists() {
    let total = |q: &str, column: &str| -> Value {
        let body = series(q);
        assert_eq!(body[0]["columns"], json!([column]), "{q}: {body}");
        assert!(body[0].get("name").is_none(), "{q}: unnamed");
        body[0]["values"][0][0].clone()
    };
    assert_eq!(total("SHOW SERIES CARDINALITY", "cardinality estimation"), json!(4));
    assert_eq!(total("SHOW MEASUREMENT CARDINALITY", "cardinality estimation"), json!(3));
    assert_eq!(total("SHOW MEASUREMENT EXACT CARDINALITY", "count"), json!(3));
    let per_measurement = |q: &str| -> Vec<(String, i64)> {
        let body = series(q);
        body.as_array()
            .unwrap()
            .iter()
            .map(|s| {
                assert_eq!(s["columns"], json!(["count"]), "{q}");
                (s["name"].as_str().unwrap().to_string(), s["values"][0][0].as_i64().unwrap())
            })
            .collect()
    };
    let named = |pairs: &[(&str, i64)]| pairs.iter().map(|(n, c)| (n.to_string(), *c)).collect::<Vec<_>>();
    assert_eq!(
        per_measurement("SHOW SERIES EXACT CARDINALITY"),
        named(&[("cpu", 2), ("events", 1), ("mem", 1)])
    );
    assert_eq!(
        per_measurement("SHOW SERIES EXACT CARDINALITY FROM cpu WHERE host = 'a'"),
        named(&[("cpu", 1)])
    );
    assert_eq!(per_measurement("SHOW TAG KEY CARDINALITY"), named(&[("cpu", 2), ("mem", 1)]));
    assert_eq!(
        per_measurement("SHOW FIELD KEY CARDINALITY"),
        named(&[("cpu", 2), ("events", 2), ("mem", 1)])
    );
    assert_eq!(
        per_measurement("SHOW TAG VALUES EXACT CARDINALITY WITH KEY = host"),
        named(&[("cpu", 2), ("mem", 1)])
    );
    for q in ["SHOW SERIES EXACT CARDINALITY ON db FROM cpu", "SHOW TAG VALUES CARDINALITY WITH KEY = host"] {
        let parsed = crate::influxql::parser::parse_statements(q).unwrap();
        assert_eq!(parsed[0].to_string(), q, "printed as parsed");
    }
}

/// Transformations of raw values, with Debian's InfluxDB 1.6.7's answers on
/// the same points: without GROUP BY the series' points are merged in time
/// order and, of several points at one time, the first in series order
/// counts (InfluxDB's derivative skips a zero time step).
#[test]
fn transformations_of_raw_values_match_influxdb() {
    assert_eq!(
        series("SELECT derivative(usage, 1s) FROM cpu"),
        json!([{"name": "cpu", "columns": ["time", "derivative"], "values": [
            ["2020-01-01T00:00:10Z", 0.1], ["2020-01-01T00:00:20Z", 0.25], ["2020-01-01T00:01:00Z", -0.025]]}])
    );
    assert_eq!(
        series("SELECT difference(idle), cumulative_sum(idle) FROM cpu WHERE host = 'a'"),
        json!([{"name": "cpu", "columns": ["time", "difference", "cumulative_sum"], "values": [
            ["2020-01-01T00:00:00Z", null, 90], ["2020-01-01T00:01:00Z", -5, 175]]}])
    );
    let body = series("SELECT non_negative_derivative(usage, 10s) FROM cpu GROUP BY host");
    assert_eq!(body[0]["values"], json!([["2020-01-01T00:00:10Z", 1.0], ["2020-01-01T00:01:00Z", 0.3]]));
    assert_eq!(body[1]["values"], json!([["2020-01-01T00:00:20Z", 1.0]]));
    assert_eq!(
        series("SELECT moving_average(usage, 2) FROM cpu WHERE host = 'b'")[0]["values"],
        json!([["2020-01-01T00:00:20Z", 4.0]])
    );
    assert!(error_of("SELECT derivative(usage) FROM cpu GROUP BY time(1m)").contains("raw values goes with"));
}

/// elapsed and integral, with Debian's InfluxDB 1.6.7's answers on the same
/// points (integral over merged series takes the later of two points at one
/// time: 27.5 + 37.5 + 180 = 245).
#[test]
fn elapsed_and_integral_match_influxdb() {
    assert_eq!(
        series("SELECT elapsed(usage) FROM cpu WHERE host = 'a'")[0]["values"],
        json!([["2020-01-01T00:00:10Z", 10_000_000_000i64], ["2020-01-01T00:01:00Z", 50_000_000_000i64]])
    );
    let q = "SELECT elapsed(mean(usage), 1s) FROM cpu WHERE time >= '2020-01-01T00:00:00Z' \
             AND time < '2020-01-01T00:01:30Z' GROUP BY time(30s)";
    assert_eq!(series(q)[0]["values"], json!([["2020-01-01T00:01:00Z", 60]]));
    assert_eq!(
        series("SELECT integral(usage) FROM cpu")[0]["values"],
        json!([["1970-01-01T00:00:00Z", 245.0]])
    );
    let body = series("SELECT integral(usage, 1m) FROM cpu GROUP BY host");
    assert!((body[0]["values"][0][1].as_f64().unwrap() - 182.5 / 60.0).abs() < 1e-12, "{body}");
    assert!((body[1]["values"][0][1].as_f64().unwrap() - 80.0 / 60.0).abs() < 1e-12, "{body}");
    assert_eq!(series("SELECT integral(idle) FROM cpu WHERE host = 'a'")[0]["values"][0][1], json!(5250.0));
    assert!(error_of("SELECT integral(usage) FROM cpu GROUP BY time(1m)").contains("not supported yet"));
}

/// Fill runs on the inner aggregate before a transformation, which skips
/// nulls and reports only the windows it gives a value: Debian's InfluxDB
/// 1.6.7's answers (windows of 30 s: mean 3.0, none, 4.0).
#[test]
fn transformations_run_after_fill_as_influxdb_does() {
    let range = "time >= '2020-01-01T00:00:00Z' AND time < '2020-01-01T00:01:30Z' GROUP BY time(30s)";
    let values = |q: String| series(&q)[0]["values"].clone();
    assert_eq!(
        values(format!("SELECT derivative(mean(usage), 1s) FROM cpu WHERE {range}")),
        json!([["2020-01-01T00:01:00Z", 1.0 / 60.0]])
    );
    assert_eq!(
        values(format!("SELECT cumulative_sum(mean(usage)) FROM cpu WHERE {range} fill(null)")),
        json!([["2020-01-01T00:00:00Z", 3.0], ["2020-01-01T00:01:00Z", 7.0]])
    );
    assert_eq!(
        values(format!("SELECT difference(mean(usage)) FROM cpu WHERE {range} fill(previous)")),
        json!([["2020-01-01T00:00:30Z", 0.0], ["2020-01-01T00:01:00Z", 1.0]])
    );
    assert_eq!(
        values(format!("SELECT moving_average(mean(usage), 2) FROM cpu WHERE {range} fill(linear)")),
        json!([["2020-01-01T00:00:30Z", 3.25], ["2020-01-01T00:01:00Z", 3.75]])
    );
    assert_eq!(
        values(format!(
            "SELECT cumulative_sum(mean(usage)) FROM cpu WHERE {range} fill(null) ORDER BY time DESC"
        )),
        json!([["2020-01-01T00:01:00Z", 7.0], ["2020-01-01T00:00:00Z", 3.0]]),
        "computed forwards, reported in the order asked"
    );
}
