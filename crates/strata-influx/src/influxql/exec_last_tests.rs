//! `last()`-only SELECTs read each series' newest point
//! (`SeriesStore::read_last`, the engine's last-point cache) instead of all
//! its points. Property: their answers equal those of the full read, which
//! the same query takes once a `count()` column is added (the count column
//! is then dropped before comparing), on random points with overwrites,
//! ties across tag sets, fields missing from some points, WHERE clauses on
//! tags and on a field (which must not take the newest points), and time ranges that end before some series' newest point.

use proptest::prelude::*;
use serde_json::Value;
use strata_series::reference::MemStore;
use strata_series::{FieldValue, Point, SeriesStore};

use super::{execute, QueryParams};

/// A point: host, dc, time, value, whether it carries the integer field.
type RandomPoint = (usize, usize, i64, i64, bool);

fn store_with(points: &[RandomPoint]) -> MemStore {
    let store = MemStore::new();
    store.create_database("db").unwrap();
    let batch: Vec<Point> = points
        .iter()
        .map(|&(host, dc, t, v, with_n)| {
            let mut fields = vec![("v".to_string(), FieldValue::Float(v as f64))];
            if with_n {
                fields.push(("n".to_string(), FieldValue::Integer(v * 3)));
            }
            Point {
                measurement: "m".to_string(),
                tags: vec![("dc".to_string(), format!("d{dc}")), ("host".to_string(), format!("h{host}"))],
                fields,
                timestamp_ns: t,
            }
        })
        .collect();
    store.write("db", &batch).unwrap();
    store
}

/// The answer's series with column `drop` removed from columns and rows.
fn without_column(body: Value, drop: &str) -> Value {
    let mut body = body;
    let Some(series) = body["results"][0].get_mut("series").and_then(Value::as_array_mut) else {
        return body;
    };
    for s in series {
        let at = s["columns"].as_array().unwrap().iter().position(|c| c == drop).expect("the column");
        s["columns"].as_array_mut().unwrap().remove(at);
        for row in s["values"].as_array_mut().unwrap() {
            row.as_array_mut().unwrap().remove(at);
        }
    }
    body
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn last_only_selects_answer_as_the_full_read_does(
        points in prop::collection::vec((0usize..3, 0usize..2, 0i64..50, -100i64..100, any::<bool>()), 0..40),
        group_by in 0usize..4,
        dc_only in any::<bool>(),
        positive_only in any::<bool>(),
        range in prop::option::of((0i64..50, 0i64..50)),
    ) {
        let store = store_with(&points);
        let group_by = ["", "GROUP BY host", "GROUP BY dc", "GROUP BY *"][group_by];
        let mut conditions = Vec::new();
        if dc_only {
            conditions.push("dc = 'd0'".to_string());
        }
        if positive_only {
            // A field condition: the newest points no longer suffice.
            conditions.push("v > 0".to_string());
        }
        if let Some((lo, len)) = range {
            conditions.push(format!("time >= {lo} AND time <= {}", lo + len));
        }
        let where_ = if conditions.is_empty() { String::new() } else { format!("WHERE {}", conditions.join(" AND ")) };
        let params =
            QueryParams { db: Some("db".into()), epoch: Some("ns".into()), now_ns: 0, ..Default::default() };
        let newest = format!("SELECT last(v), last(n) FROM m {where_} {group_by}");
        let full = format!("SELECT last(v), last(n), count(v) AS c FROM m {where_} {group_by}");
        let got = execute(&store, &newest, &params).unwrap();
        let want = without_column(execute(&store, &full, &params).unwrap(), "c");
        prop_assert_eq!(got, want, "query: {}", newest);
    }
}
