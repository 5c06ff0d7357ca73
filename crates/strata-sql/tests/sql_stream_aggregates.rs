//! Temporal aggregates of an event stream answered from the TAB+-tree's
//! stored aggregates: the rewritten plan reads no events, and its answers
//! equal DataFusion's over the events (forced by a filter the tree does not
//! answer), seeded random data, windows with and without an origin, empty
//! ranges, and the shapes the rule must leave alone.

mod common;

use common::{fresh, rows, BASE_NS, DB};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_engine::tables::streams::{StreamAttr, StreamAttrType};
use strata_engine::Tables;
use strata_series::{FieldValue, Point};

const SEC_NS: i64 = 1_000_000_000;

fn seed() -> u64 {
    std::env::var("STRATA_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(19)
}

/// `n` events over about `n` seconds: price (f64), volume (i64), venue (text).
fn write_events(db: &strata_engine::Db, rng: &mut ChaCha8Rng, n: i64) {
    let streams = db.tables().stream_tables().expect("streams");
    let attrs = [
        StreamAttr { name: "price".into(), ty: StreamAttrType::F64 },
        StreamAttr { name: "volume".into(), ty: StreamAttrType::I64 },
        StreamAttr { name: "venue".into(), ty: StreamAttrType::Str { len_bytes: 8 } },
    ];
    streams.create_stream(DB, "trades", &attrs).expect("create the stream");
    let mut t = BASE_NS;
    let points: Vec<Point> = (0..n)
        .map(|_| {
            t += rng.gen_range(0..2 * SEC_NS);
            Point {
                measurement: "trades".into(),
                tags: Vec::new(),
                fields: vec![
                    ("price".into(), FieldValue::Float(f64::from(rng.gen_range(-5000..5000)) / 8.0)),
                    ("volume".into(), FieldValue::Integer(rng.gen_range(0..1000))),
                    ("venue".into(), FieldValue::String(["x", "y"][rng.gen_range(0..2)].into())),
                ],
                timestamp_ns: t,
            }
        })
        .collect();
    for chunk in points.chunks(1000) {
        db.tables().write_request(DB, chunk).expect("write events");
    }
}

async fn plan_text(ctx: &datafusion::prelude::SessionContext, sql: &str) -> String {
    rows(ctx, &format!("EXPLAIN {sql}")).await.iter().map(|r| r.join(" ")).collect::<Vec<_>>().join("\n")
}

fn close(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregates_from_the_tree_equal_those_over_the_events() {
    let seed = seed();
    println!("seed {seed} (STRATA_TEST_SEED)");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (_dir, db, ctx) = fresh();
    write_events(&db, &mut rng, 20_000);
    let lo = BASE_NS + rng.gen_range(0..5_000) * SEC_NS;
    let hi = lo + rng.gen_range(1..20_000) * SEC_NS;
    let range = format!("time >= to_timestamp_nanos({lo}) AND time < to_timestamp_nanos({hi})");
    let aggs = "count(*), count(venue), sum(price), avg(price), min(price), max(price), avg(volume)";
    let queries = [
        format!("SELECT {aggs} FROM trades"),
        format!("SELECT {aggs} FROM trades WHERE {range}"),
        format!("SELECT date_bin(INTERVAL '10 minutes', time) AS w, {aggs} FROM trades WHERE {range} GROUP BY 1"),
        format!(
            "SELECT date_bin(INTERVAL '1 hour', time, to_timestamp_nanos({})) AS w, {aggs} FROM trades GROUP BY 1",
            BASE_NS + 7 * SEC_NS
        ),
        // An empty range: one row of count 0 without a window, none with one.
        format!("SELECT {aggs} FROM trades WHERE time < to_timestamp_nanos({BASE_NS})"),
        format!("SELECT date_bin(INTERVAL '1 minute', time), count(*) FROM trades WHERE time < to_timestamp_nanos({BASE_NS}) GROUP BY 1"),
    ];
    for sql in &queries {
        let plan = plan_text(&ctx, sql).await;
        assert!(plan.contains("tab_aggregates(trades)"), "seed {seed}: not from the tree:\n{sql}\n{plan}");
        // `volume > -1` holds for every event but is not the tree's: DataFusion aggregates the events.
        let over_events = if sql.contains("WHERE") {
            sql.replacen("WHERE", "WHERE volume > -1 AND", 1)
        } else {
            sql.replacen("FROM trades", "FROM trades WHERE volume > -1", 1)
        };
        let plan = plan_text(&ctx, &over_events).await;
        assert!(!plan.contains("tab_aggregates(trades)"), "seed {seed}: {over_events}\n{plan}");
        let ordered =
            |q: &str| if q.contains("GROUP BY") { format!("{q} ORDER BY 1") } else { q.to_string() };
        let (tree, events) = (rows(&ctx, &ordered(sql)).await, rows(&ctx, &ordered(&over_events)).await);
        assert_eq!(tree.len(), events.len(), "seed {seed}: {sql}");
        for (a, b) in tree.iter().zip(&events) {
            assert!(
                a.iter().zip(b).all(|(x, y)| close(x, y)),
                "seed {seed}: {sql}\ntree {a:?}\nevents {b:?}"
            );
        }
    }
    assert_eq!(rows(&ctx, &queries[4]).await[0][0], "0");
    assert!(rows(&ctx, &queries[5]).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shapes_the_tree_does_not_answer_keep_datafusions_plan() {
    let mut rng = ChaCha8Rng::seed_from_u64(seed());
    let (_dir, db, ctx) = fresh();
    write_events(&db, &mut rng, 500);
    for sql in [
        "SELECT sum(volume) FROM trades", // an integer sum: the tree keeps doubles
        "SELECT min(volume) FROM trades", // likewise
        "SELECT count(DISTINCT venue) FROM trades", // not decomposable
        "SELECT venue, count(*) FROM trades GROUP BY venue", // grouped by an attribute
        "SELECT count(*) FROM trades WHERE venue = 'x'", // a filter the tree does not answer
        "SELECT median(price) FROM trades", // another function
        "SELECT date_bin(INTERVAL '1 month', time), count(*) FROM trades GROUP BY 1", // not a fixed width
    ] {
        let plan = plan_text(&ctx, sql).await;
        assert!(!plan.contains("tab_aggregates(trades)"), "{sql}\n{plan}");
        assert!(!rows(&ctx, sql).await.is_empty(), "{sql} answers");
    }
}
