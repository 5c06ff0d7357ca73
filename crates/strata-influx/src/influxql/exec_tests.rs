//! Executor tests: exact InfluxDB 1.x JSON for a small fixed dataset in a
//! `MemStore` (raw selects, every aggregate, GROUP BY time and tags, each
//! fill mode, regex and field predicates, now() arithmetic, epochs, SHOW
//! statements, DELETE, DROP, errors).

use serde_json::{json, Value};
use strata_series::reference::MemStore;
use strata_series::{FieldValue, Point, SeriesStore};

use super::exec_test_support::*;
use super::{execute, QueryError, QueryParams};

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
fn drop_series_removes_matching_series_and_their_points() {
    let s = store();
    assert_eq!(
        run_on(&s, "DROP SERIES FROM cpu WHERE host = 'a'"),
        json!({"results": [{"statement_id": 0}]})
    );
    assert_eq!(
        run_on(&s, "SHOW SERIES FROM cpu")["results"][0]["series"][0]["values"],
        json!([["cpu,host=b,region=us"]])
    );
    assert_eq!(
        run_on(&s, "SELECT usage FROM cpu")["results"][0]["series"][0]["values"],
        json!([["2020-01-01T00:00:00Z", 3.0], ["2020-01-01T00:00:20Z", 5.0]]),
        "host b's points stay, host a's are gone"
    );
    assert_eq!(
        run_on(&s, "DROP SERIES WHERE time > 0")["results"][0]["error"],
        json!("DROP SERIES doesn't support time in WHERE clause")
    );
    run_on(&s, "DROP SERIES WHERE host = 'a'");
    assert_eq!(
        run_on(&s, "SHOW MEASUREMENTS")["results"][0]["series"][0]["values"],
        json!([["cpu"], ["events"]])
    );
    run_on(&s, "DROP SERIES FROM cpu");
    assert_eq!(run_on(&s, "SHOW MEASUREMENTS")["results"][0]["series"][0]["values"], json!([["events"]]));
}

#[test]
fn drop_database_removes_it_and_a_missing_one_is_no_error() {
    let s = store();
    assert_eq!(
        run_on(&s, "DROP DATABASE db; DROP DATABASE nope"),
        json!({"results": [{"statement_id": 0}, {"statement_id": 1}]})
    );
    assert_eq!(
        run_on(&s, "SHOW DATABASES")["results"][0]["series"][0],
        json!({"name": "databases", "columns": ["name"]})
    );
    run_on(&s, "CREATE DATABASE db");
    assert_eq!(run_on(&s, "SHOW MEASUREMENTS"), json!({"results": [{"statement_id": 0}]}));
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
    fn drop_database(&self, db: &str) -> Result<(), strata_series::EngineError> {
        self.inner.drop_database(db)
    }
    fn drop_series(
        &self,
        db: &str,
        ids: &[strata_series::SeriesId],
    ) -> Result<u64, strata_series::EngineError> {
        self.inner.drop_series(db, ids)
    }
    fn retention_policies(
        &self,
        db: &str,
    ) -> Result<strata_series::retention::DbRetention, strata_series::EngineError> {
        self.inner.retention_policies(db)
    }
    fn change_retention(
        &self,
        db: &str,
        change: &strata_series::retention::RetentionChange,
    ) -> Result<(), strata_series::EngineError> {
        self.inner.change_retention(db, change)
    }
}

#[test]
fn a_request_landing_between_listing_and_read_is_seen_whole() {
    let inner = MemStore::new();
    inner.create_database("db").unwrap();
    inner.write("db", &[point("race", &[("host", "a")], vec![("v", FieldValue::Float(1.0))], 0)]).unwrap();
    let store = RacingStore { inner, raced: Default::default() };
    let params =
        QueryParams { db: Some("db".into()), epoch: Some("s".into()), now_ns: T0, ..Default::default() };
    let got = execute(&store, "SELECT count(v) FROM race", &params).unwrap();
    assert_eq!(
        got["results"][0]["series"][0]["values"][0][1],
        json!(3),
        "the racing request's two points are both counted, not just the one on the listed series: {got}"
    );
}
