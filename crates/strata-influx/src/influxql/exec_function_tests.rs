//! Executor tests of the functions, transformations, fills and SHOW
//! statements Grafana and InfluxDB 1.x users write (issue 15 item 3): each
//! answer computed by hand from InfluxDB 1.8's documented rules and checked
//! against Debian's InfluxDB 1.6.7 on the same points.

use serde_json::{json, Value};

use super::exec_test_support::*;
use super::execute;

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
    // Per window (exec_integral_tests has InfluxDB's answers): host a's
    // 1.5@0s 2.5@10s, then 4.0@60s closes [0s, 1m) at 4.0 (20 + 162.5); the
    // last point lies at its window's start, so that window has no area.
    let windows = series("SELECT integral(usage) FROM cpu WHERE host = 'a' GROUP BY time(1m)");
    assert_eq!(windows[0]["values"][0][1], json!(182.5), "{windows}");
    assert_eq!(windows[0]["values"][1][1], json!(null), "{windows}");
    assert!(error_of("SELECT integral(usage) FROM cpu GROUP BY time(1m) tz('Europe/Paris')").contains("tz()"));
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
