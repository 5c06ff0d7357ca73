//! `integral()` with `GROUP BY time` (issue 15 item 3): InfluxDB's
//! interpolation at window edges. Every expected value is Debian's
//! InfluxDB 1.6.7's on the same points (cpu usage, host a 5@0s 9@10s 3@20s
//! 7@70s, host b 9@5s 1@15s 8@65s 2@80s; epoch=s), with `fill(none)`:
//! InfluxDB 1.6.7 leaves windows without an integral out of its answer
//! (and splits a series' rows in two around them), where Strata fills them
//! per `fill()` as it does for every aggregate.

use serde_json::{json, Value};

use super::exec_test_support::*;
use super::{execute, QueryParams};

const RANGE: &str = "time >= '2020-01-01T00:00:00Z' AND time < '2020-01-01T00:02:00Z'";
const T0_S: i64 = 1_577_836_800;

fn series_of(q: &str) -> Value {
    let params = QueryParams { epoch: Some("s".into()), ..params(90) };
    let body = execute(&cpu_two_hosts_store(), q, &params).unwrap_or_else(|e| panic!("{q}: {e}"));
    let result = &body["results"][0];
    assert!(result.get("error").is_none(), "{q}: {result}");
    result["series"].clone()
}

#[test]
fn integral_per_window_interpolates_at_the_window_end() {
    // Host a, window [0s, 30s): 70 + 60 over 0-20s, then 20s-30s up to the
    // value 3.8 interpolated at 30s toward 7@70s: 34, so 164; [60s, 90s)
    // takes the area from 30s (3.8) to 70s (7): 216.
    let q = format!("SELECT integral(usage) FROM cpu WHERE {RANGE} GROUP BY time(30s), host fill(none)");
    assert_eq!(
        series_of(&q),
        json!([
            {"name": "cpu", "tags": {"host": "a"}, "columns": ["time", "integral"],
             "values": [[T0_S, 164.0], [T0_S + 60, 216.0]]},
            {"name": "cpu", "tags": {"host": "b"}, "columns": ["time", "integral"],
             "values": [[T0_S, 80.75], [T0_S + 60, 269.25]]}
        ])
    );
}

#[test]
fn integral_per_window_with_a_unit_over_merged_series_and_wide_windows() {
    let merged = format!("SELECT integral(usage, 1m) FROM cpu WHERE {RANGE} GROUP BY time(30s) fill(none)");
    assert_eq!(
        series_of(&merged)[0]["values"],
        json!([[T0_S, 2.5092592592592595], [T0_S + 60, 4.907407407407407]])
    );
    let wide = format!("SELECT integral(usage) FROM cpu WHERE {RANGE} GROUP BY time(1m), host fill(none)");
    let wide = series_of(&wide);
    assert_eq!(wide[0]["values"], json!([[T0_S, 314.0], [T0_S + 60, 66.0]]));
    assert_eq!(wide[1]["values"], json!([[T0_S, 236.75000000000003], [T0_S + 60, 113.25]]));
}
