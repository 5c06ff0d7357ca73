//! Gap filling in SQL (InfluxQL's `fill()`): `date_bin_gapfill` with NULL,
//! `locf`, `interpolate` and `coalesce` fills, per group and without one,
//! with an origin, and the errors that say how to use it.

mod common;

use common::{batches, fresh, point, rows, BASE_NS, DB};
use strata_engine::Tables;
use strata_series::FieldValue;

const MIN_NS: i64 = 60_000_000_000;
/// The first whole minute after [`BASE_NS`].
const T0: i64 = (BASE_NS / MIN_NS + 1) * MIN_NS;

/// Host a: usage 1, 2, 5 at minutes 0, 1, 4 (idle 10, 20, 50); host b:
/// usage 10 at minute 2. The range is minutes [0, 6).
fn write_points(db: &strata_engine::Db) {
    let at = |m: i64| T0 + m * MIN_NS + 7_000_000_000;
    let mut points = Vec::new();
    for (m, u) in [(0, 1.0), (1, 2.0), (4, 5.0)] {
        let idle = FieldValue::Integer(u as i64 * 10);
        points.push(point("a", at(m), vec![("usage", FieldValue::Float(u)), ("idle", idle)]));
    }
    points.push(point("b", at(2), vec![("usage", FieldValue::Float(10.0))]));
    db.tables().write_request(DB, &points).expect("write");
}

fn range() -> String {
    format!("time >= to_timestamp_nanos({T0}) AND time < to_timestamp_nanos({})", T0 + 6 * MIN_NS)
}

/// `select` per host and minute, as (host, minute, value) rows.
async fn per_host(ctx: &datafusion::prelude::SessionContext, select: &str) -> Vec<(String, i64, String)> {
    let sql = format!(
        "SELECT host, CAST(date_bin_gapfill(INTERVAL '1 minute', time) AS BIGINT) AS t, {select} \
         FROM cpu WHERE {} GROUP BY host, date_bin_gapfill(INTERVAL '1 minute', time) ORDER BY host, t",
        range()
    );
    rows(ctx, &sql)
        .await
        .into_iter()
        .map(|r| (r[0].clone(), (r[1].parse::<i64>().unwrap() - T0) / MIN_NS, r[2].clone()))
        .collect()
}

fn expect(a: [&str; 6], b: [&str; 6]) -> Vec<(String, i64, String)> {
    let host = |h: &str, values: [&str; 6]| {
        values
            .into_iter()
            .enumerate()
            .map(|(m, v)| (h.to_string(), m as i64, v.to_string()))
            .collect::<Vec<_>>()
    };
    [host("a", a), host("b", b)].concat()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bucket_of_the_range_appears_once_per_group_filled_as_asked() {
    let (_dir, db, ctx) = fresh();
    write_points(&db);
    // (select, host a's six minutes, host b's)
    let cases = [
        // fill(null)
        ("max(usage)", ["1.0", "2.0", "", "", "5.0", ""], ["", "", "10.0", "", "", ""]),
        // fill(previous)
        (
            "locf(max(usage))",
            ["1.0", "2.0", "2.0", "2.0", "5.0", "5.0"],
            ["", "", "10.0", "10.0", "10.0", "10.0"],
        ),
        // fill(linear): between neighbours with values only; integers stay integers.
        ("interpolate(avg(usage))", ["1.0", "2.0", "3.0", "4.0", "5.0", ""], ["", "", "10.0", "", "", ""]),
        ("interpolate(max(idle))", ["10", "20", "30", "40", "50", ""], ["", "", "", "", "", ""]),
        // fill(0)
        ("coalesce(count(usage), 0)", ["1", "1", "0", "0", "1", "0"], ["0", "0", "1", "0", "0", "0"]),
    ];
    for (select, a, b) in cases {
        assert_eq!(per_host(&ctx, select).await, expect(a, b), "{select}");
    }
    // fill(none) is the query without gap filling.
    let sparse = rows(
        &ctx,
        &format!("SELECT count(*) FROM (SELECT date_bin(INTERVAL '1 minute', time), host FROM cpu WHERE {} GROUP BY 1, 2)", range()),
    )
    .await;
    assert_eq!(sparse, [["4"]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_groups_with_an_origin_and_in_plans() {
    let (_dir, db, ctx) = fresh();
    write_points(&db);
    // Two-minute buckets shifted by one minute: [-1, 1), [1, 3), [3, 5), [5, 7).
    let origin = T0 + MIN_NS;
    let got = rows(
        &ctx,
        &format!(
            "SELECT CAST(date_bin_gapfill(INTERVAL '2 minutes', time, to_timestamp_nanos({origin})) AS BIGINT) AS t, \
             count(usage) AS n FROM cpu WHERE {} \
             GROUP BY date_bin_gapfill(INTERVAL '2 minutes', time, to_timestamp_nanos({origin})) ORDER BY 1",
            range()
        ),
    )
    .await;
    let minutes: Vec<(i64, String)> =
        got.iter().map(|r| ((r[0].parse::<i64>().unwrap() - T0) / MIN_NS, r[1].clone())).collect();
    assert_eq!(minutes, [(-1, "1".into()), (1, "2".into()), (3, "1".into()), (5, "".into())]);
    let explain = rows(&ctx, &format!("EXPLAIN SELECT date_bin_gapfill(INTERVAL '1 minute', time), locf(max(usage)) FROM cpu WHERE {} GROUP BY 1", range())).await;
    let text = explain.iter().map(|r| r.join(" ")).collect::<Vec<_>>().join("\n");
    assert!(text.contains("GapFill: time=#0") && text.contains("#1 locf"), "{text}");
    assert!(text.contains("GapFillExec"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misuse_is_an_error_that_says_how() {
    let (_dir, db, ctx) = fresh();
    write_points(&db);
    let gapfill = "SELECT date_bin_gapfill(INTERVAL '1 minute', time)";
    let in_range = format!("FROM cpu WHERE {} GROUP BY 1", range());
    // (statement, what its error says)
    let cases = [
        (format!("{gapfill}, max(usage) FROM cpu GROUP BY 1"), "needs a time range"),
        (format!("{gapfill}, max(usage) FROM cpu WHERE time >= to_timestamp_nanos({T0}) GROUP BY 1"), "both ends"),
        (format!("SELECT date_bin_gapfill(INTERVAL '1 month', time), max(usage) {in_range}"), "fixed interval"),
        ("SELECT locf(usage) FROM cpu".to_string(), "fills the gaps of date_bin_gapfill()"),
        (format!("{gapfill}, locf(max(usage) * 2) {in_range}"), "takes an aggregate"),
        (
            "SELECT date_bin_gapfill(INTERVAL '1 second', time), max(usage) FROM cpu \
             WHERE time >= to_timestamp_nanos(0) AND time < to_timestamp_nanos(4000000000000000000) GROUP BY 1"
                .to_string(),
            "narrow the time range",
        ),
        (format!("{gapfill}, interpolate(min(host)) {in_range}"), "numeric"),
        (format!("{gapfill}, max(usage), locf(max(usage)) {in_range}"), "filled one way per query"),
        (format!("{gapfill}, interpolate(max(usage)), locf(max(usage)) {in_range}"), "filled one way per query"),
        (
            format!("SELECT CAST(date_bin_gapfill(INTERVAL '1 minute', time) AS BIGINT), max(usage) {in_range}"),
            "itself, not an expression of it",
        ),
    ];
    for (sql, says) in cases {
        let error = batches(&ctx, &sql).await.expect_err(&sql).to_string();
        assert!(error.contains(says), "{sql}: {error}");
    }
}
