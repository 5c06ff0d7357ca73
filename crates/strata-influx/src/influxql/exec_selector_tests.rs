//! Executor tests of the selectors `top` and `bottom` (issue 15 item 3) on
//! a dataset of their own, with ties and two hosts. Every expected answer
//! was computed by hand from InfluxDB 1.8's documented rules and then
//! checked against Debian's InfluxDB 1.6.7 on the same points (written
//! at 0s..80s instead of T0 + 0s..80s; the answers differ only by T0).

use serde_json::{json, Value};

use super::exec_test_support::*;

fn top_series(q: &str) -> Value {
    let body = run_on(&cpu_two_hosts_store(), q);
    assert!(body["results"][0].get("error").is_none(), "{q}: {body}");
    body["results"][0].get("series").cloned().unwrap_or(Value::Null)
}

fn top_error(q: &str) -> String {
    let body = run_on(&cpu_two_hosts_store(), q);
    body["results"][0]["error"].as_str().unwrap_or_else(|| panic!("{q}: no error in {body}")).to_string()
}

/// `2020-01-01T00:0M:SSZ` for `s` seconds after T0.
fn at(s: i64) -> String {
    format!("2020-01-01T00:{:02}:{:02}Z", s / 60, s % 60)
}

/// (seconds, value) rows as JSON.
fn rows(points: &[(i64, f64)]) -> Value {
    Value::Array(points.iter().map(|(s, v)| json!([at(*s), v])).collect())
}

fn one_series(columns: Value, values: Value) -> Value {
    json!([{"name": "cpu", "columns": columns, "values": values}])
}

/// The N largest (smallest) values, each at its own point's time, in time
/// order; of equal values the earlier point wins (top 1 is 9@5s, not 9@10s).
#[test]
fn top_and_bottom_return_the_points_in_time_order() {
    assert_eq!(
        top_series("SELECT top(usage, 3) FROM cpu"),
        one_series(json!(["time", "top"]), rows(&[(5, 9.0), (10, 9.0), (65, 8.0)]))
    );
    assert_eq!(
        top_series("SELECT top(usage, 1) FROM cpu"),
        one_series(json!(["time", "top"]), rows(&[(5, 9.0)]))
    );
    assert_eq!(
        top_series("SELECT bottom(usage, 3) FROM cpu"),
        one_series(json!(["time", "bottom"]), rows(&[(15, 1.0), (20, 3.0), (80, 2.0)]))
    );
    assert_eq!(
        top_series("SELECT top(usage, 2) AS t FROM cpu WHERE time >= '2020-01-01T00:01:00Z'"),
        one_series(json!(["time", "t"]), rows(&[(65, 8.0), (70, 7.0)]))
    );
}

/// `top(field, tag, N)`: the best point of each tag value competes; the
/// tag value is a column.
#[test]
fn top_with_a_tag_picks_one_point_per_tag_value() {
    assert_eq!(
        top_series("SELECT top(usage, host, 2) FROM cpu"),
        one_series(json!(["time", "top", "host"]), json!([[at(5), 9.0, "b"], [at(10), 9.0, "a"]]))
    );
    assert_eq!(
        top_series("SELECT top(usage, host, 1) FROM cpu"),
        one_series(json!(["time", "top", "host"]), json!([[at(5), 9.0, "b"]]))
    );
    assert_eq!(
        top_series("SELECT bottom(usage, host, 2) FROM cpu"),
        one_series(json!(["time", "bottom", "host"]), json!([[at(15), 1.0, "b"], [at(20), 3.0, "a"]]))
    );
}

/// Per GROUP BY time window and per tag set; times stay the points' own;
/// fill does not add rows for windows without points.
#[test]
fn top_and_bottom_per_window_and_per_tag_set() {
    let range = "WHERE time >= '2020-01-01T00:00:00Z' AND time < '2020-01-01T00:03:00Z'";
    assert_eq!(
        top_series(&format!("SELECT top(usage, 2) FROM cpu {range} GROUP BY time(60s)")),
        one_series(json!(["time", "top"]), rows(&[(5, 9.0), (10, 9.0), (65, 8.0), (70, 7.0)]))
    );
    assert_eq!(
        top_series(&format!("SELECT bottom(usage, 2) FROM cpu {range} GROUP BY time(60s) fill(0)")),
        one_series(json!(["time", "bottom"]), rows(&[(15, 1.0), (20, 3.0), (70, 7.0), (80, 2.0)]))
    );
    assert_eq!(
        top_series(&format!("SELECT top(usage, 2) FROM cpu {range} GROUP BY time(60s), host")),
        json!([
            {"name": "cpu", "tags": {"host": "a"}, "columns": ["time", "top"],
             "values": rows(&[(0, 5.0), (10, 9.0), (70, 7.0)])},
            {"name": "cpu", "tags": {"host": "b"}, "columns": ["time", "top"],
             "values": rows(&[(5, 9.0), (15, 1.0), (65, 8.0), (80, 2.0)])}
        ])
    );
    assert_eq!(
        top_series("SELECT top(usage, 2) FROM cpu GROUP BY host"),
        json!([
            {"name": "cpu", "tags": {"host": "a"}, "columns": ["time", "top"], "values": rows(&[(10, 9.0), (70, 7.0)])},
            {"name": "cpu", "tags": {"host": "b"}, "columns": ["time", "top"], "values": rows(&[(5, 9.0), (65, 8.0)])}
        ])
    );
}

/// InfluxDB's errors for the misuses it names.
#[test]
fn top_and_bottom_refuse_what_influxdb_refuses() {
    assert_eq!(
        top_error("SELECT top(usage) FROM cpu"),
        "invalid number of arguments for top, expected 2, got 1"
    );
    assert_eq!(top_error("SELECT top(usage, 0) FROM cpu"), "limit (0) in top function must be at least 1");
    assert_eq!(
        top_error("SELECT top(usage, 2.5) FROM cpu"),
        "expected integer as last argument in top(), found 2.5"
    );
    assert_eq!(
        top_error("SELECT top(usage, 2), mean(usage) FROM cpu"),
        "selector function top() cannot be combined with other functions"
    );
    assert_eq!(
        top_error("SELECT top(usage, 3) FROM cpu LIMIT 2"),
        "limit (3) in top function can not be larger than the LIMIT (2) in the select statement"
    );
    assert!(top_error("SELECT derivative(top(usage, 2)) FROM cpu GROUP BY time(1m)").contains("top()"));
    assert_eq!(top_series("SELECT top(host, 2) FROM cpu"), Value::Null, "a tag: no values, as InfluxDB");
}
