//! Executor tests of subqueries (issue 15 item 3), the shapes Grafana
//! writes: an aggregate over the inner aggregate's windows, and a raw
//! select over a subquery with WHERE on the outer statement. Each expected
//! answer was computed by hand and is also Debian's InfluxDB 1.6.7's on
//! the same points (written at 0s..80s, queried with epoch=s).

use serde_json::{json, Value};

use super::exec_test_support::*;
use super::time::NS_PER_S;
use super::{execute, QueryParams};

/// The answer of `q`: its first result as the JSON the client gets.
fn answer(q: &str) -> Value {
    let params = QueryParams { epoch: Some("s".into()), ..params(90) };
    let body = execute(&cpu_two_hosts_store(), q, &params).unwrap_or_else(|e| panic!("{q}: {e}"));
    body["results"][0].clone()
}

/// Rows of the only series (times in seconds after T0; epoch 0 is -T0);
/// an error answer fails the test.
fn rows_of(q: &str) -> Value {
    let result = answer(q);
    assert!(result.get("error").is_none(), "{q}: {result}");
    let series = &result["series"];
    assert!(series.as_array().is_none_or(|s| s.len() <= 1), "{result}");
    let t0 = T0 / NS_PER_S;
    let values = series[0]["values"].as_array().cloned().unwrap_or_default();
    Value::Array(
        values
            .into_iter()
            .map(|row| {
                let mut row = row.as_array().unwrap().clone();
                row[0] = json!(row[0].as_i64().unwrap() - t0);
                Value::Array(row)
            })
            .collect(),
    )
}

/// The error message `q` answers (the test fails if it answers rows).
fn error_of(q: &str) -> String {
    let result = answer(q);
    result["error"].as_str().unwrap_or_else(|| panic!("{q}: no error in {result}")).to_string()
}

const RANGE: &str = "time >= '2020-01-01T00:00:00Z' AND time < '2020-01-01T00:02:00Z'";

/// Inner: per host, the max of each 30s window (a: 9 at 0s, 7 at 60s; b: 9
/// at 0s, 8 at 60s). Outer: the mean per 60s window: 9, then 7.5.
#[test]
fn an_aggregate_over_a_subquerys_windows() {
    for inner_range in [format!("WHERE {RANGE} "), String::new()] {
        let q = format!(
            "SELECT mean(max) FROM (SELECT max(usage) FROM cpu {inner_range}GROUP BY time(30s), host) \
             WHERE {RANGE} GROUP BY time(60s)"
        );
        assert_eq!(rows_of(&q), json!([[0, 9.0], [60, 7.5]]), "{q}");
    }
    // Unbounded, the inner 10µs windows from the first point to now would be
    // 9 million (above max-select-buckets); the outer range narrows them.
    let q = "SELECT max(max) FROM (SELECT max(usage) FROM cpu GROUP BY time(10u)) \
             WHERE time >= '2020-01-01T00:00:05Z' AND time < '2020-01-01T00:00:06Z'";
    assert_eq!(rows_of(q), json!([[5, 9.0]]), "the outer time range reaches the inner statement");
    assert_eq!(
        rows_of("SELECT sum(max) FROM (SELECT max(usage) FROM cpu GROUP BY host)"),
        json!([[-T0 / NS_PER_S, 18.0]]),
        "9 + 9, at epoch 0 (-T0 here) as an aggregate without bounds"
    );
}

/// A raw select over a subquery, WHERE on the outer statement: the inner
/// series keep their tags, so two hosts' rows at one time both appear.
#[test]
fn a_raw_select_over_a_subquery_filters_on_the_outer_where() {
    let q = format!(
        "SELECT max FROM (SELECT max(usage) FROM cpu GROUP BY time(30s), host) WHERE max > 6 AND {RANGE}"
    );
    assert_eq!(rows_of(&q), json!([[0, 9.0], [0, 9.0], [60, 7.0], [60, 8.0]]));
    assert_eq!(
        rows_of("SELECT usage FROM (SELECT usage, host FROM cpu) WHERE usage > 7"),
        json!([[5, 9.0], [10, 9.0], [65, 8.0]])
    );
    assert_eq!(
        rows_of("SELECT mean(usage) FROM (SELECT usage FROM cpu WHERE host = 'a')"),
        json!([[-T0 / NS_PER_S, 6.0]])
    );
    assert!(error_of("SELECT usage FROM (SELECT usage FROM cpu), cpu").contains("not supported yet"));
}
