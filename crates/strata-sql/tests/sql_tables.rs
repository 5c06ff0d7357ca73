//! SQL over the engine's tables, in process: rows assembled from series
//! against a reference model (seeded, printed on failure), pushdown of time
//! ranges and tags, windowed scans of a long series, chunked scans of an
//! event stream with ties at chunk edges, INSERT, LIMIT and errors.

use std::collections::BTreeMap;

use futures::StreamExt;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_engine::tables::streams::{StreamAttr, StreamAttrType};
use strata_engine::Tables;
use strata_series::{FieldValue, Point};
use strata_sql::series_scan::TARGET_ROWS;
use strata_sql::sqlstate;
use strata_sql::stream_table::CHUNK_EVENTS;

mod common;

use common::{batches, fresh, point, rows, BASE_NS, DB};

/// The model: per (host, ts) the last value written of each field.
type Model = BTreeMap<(String, i64), (Option<f64>, Option<i64>)>;

fn random_points(rng: &mut ChaCha8Rng, n: usize, model: &mut Model) -> Vec<Point> {
    let mut points = Vec::new();
    for _ in 0..n {
        let host = ["a", "b", "c"][rng.gen_range(0..3)];
        let ts = BASE_NS + rng.gen_range(0..200) * 1_000_000_000;
        let usage = rng.gen_bool(0.7).then(|| f64::from(rng.gen_range(0..1000)) / 10.0);
        let idle = (usage.is_none() || rng.gen_bool(0.5)).then(|| rng.gen_range(0..100));
        let mut fields = Vec::new();
        let entry = model.entry((host.to_string(), ts)).or_default();
        if let Some(u) = usage {
            fields.push(("usage", FieldValue::Float(u)));
            entry.0 = Some(u);
        }
        if let Some(i) = idle {
            fields.push(("idle", FieldValue::Integer(i)));
            entry.1 = Some(i);
        }
        points.push(point(host, ts, fields));
    }
    points
}

fn show<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selects_match_a_reference_model_with_and_without_pushed_filters() {
    let seed: u64 = std::env::var("STRATA_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5A1_0019);
    println!("seed {seed:#x} (STRATA_TEST_SEED to replay)");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (_dir, db, ctx) = fresh();
    let mut model = Model::new();
    for _ in 0..5 {
        let points = random_points(&mut rng, 300, &mut model);
        db.tables().write_request(DB, &points).expect("write");
    }
    let expect = |host: Option<&str>, lo: i64, hi: i64| -> Vec<Vec<String>> {
        model
            .iter()
            .filter(|((h, t), _)| host.is_none_or(|x| x == h) && (lo..hi).contains(t))
            .map(|((h, t), (u, i))| {
                let region = if h == "a" { "eu".to_string() } else { String::new() };
                vec![
                    h.clone(),
                    region,
                    t.to_string(),
                    u.map(|u| format!("{u:?}")).unwrap_or_default(),
                    show(*i),
                ]
            })
            .collect()
    };
    let select = "SELECT host, region, CAST(time AS BIGINT) AS t, usage, idle FROM cpu";
    let all = rows(&ctx, &format!("{select} ORDER BY host, t")).await;
    assert_eq!(all, expect(None, i64::MIN, i64::MAX), "seed {seed:#x}");
    for round in 0..20 {
        let lo = BASE_NS + rng.gen_range(0..200) * 1_000_000_000;
        let hi = lo + rng.gen_range(1..100) * 1_000_000_000;
        let host = ["a", "b", "c"][rng.gen_range(0..3)];
        let sql = format!(
            "{select} WHERE time >= to_timestamp_nanos({lo}) AND time < to_timestamp_nanos({hi}) AND host = '{host}' \
             ORDER BY host, t"
        );
        assert_eq!(rows(&ctx, &sql).await, expect(Some(host), lo, hi), "seed {seed:#x} round {round}: {sql}");
    }
    // A query naming one field still has every row: those where only the
    // other field has a value show NULL (the scan reads its timestamps).
    let one_field =
        rows(&ctx, "SELECT host, CAST(time AS BIGINT) AS t, usage FROM cpu ORDER BY host, t").await;
    let expected: Vec<Vec<String>> = expect(None, i64::MIN, i64::MAX)
        .into_iter()
        .map(|r| vec![r[0].clone(), r[2].clone(), r[3].clone()])
        .collect();
    assert_eq!(one_field, expected, "seed {seed:#x}");
    assert_eq!(rows(&ctx, "SELECT count(*) FROM cpu").await, [[model.len().to_string()]], "seed {seed:#x}");
    // Tag lists are answered by the scan too.
    let in_ab = model.keys().filter(|(h, _)| h != "c").count().to_string();
    for sql in [
        "SELECT count(*) FROM cpu WHERE host IN ('a', 'b')",
        "SELECT count(*) FROM cpu WHERE host = 'a' OR host = 'b'",
    ] {
        assert_eq!(rows(&ctx, sql).await, [[in_ab.clone()]], "seed {seed:#x}: {sql}");
        let plan = format!("{:?}", rows(&ctx, &format!("EXPLAIN {sql}")).await);
        assert!(!plan.contains("FilterExec"), "{sql} is answered by the scan: {plan}");
    }
    let plan =
        rows(&ctx, &format!("EXPLAIN {select} WHERE host = 'a' AND time >= to_timestamp_nanos({BASE_NS})"))
            .await;
    let text = format!("{plan:?}");
    assert!(!text.contains("FilterExec"), "pushed filters are answered by the scan, not re-applied: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_series_streams_in_bounded_batches() {
    let (_dir, db, ctx) = fresh();
    let n = 60_000i64;
    for chunk in (0..n).collect::<Vec<_>>().chunks(10_000) {
        let points: Vec<Point> = chunk
            .iter()
            .map(|i| point("b", BASE_NS + i * 1_000_000, vec![("usage", FieldValue::Float(*i as f64))]))
            .collect();
        db.tables().write_request(DB, &points).expect("write");
    }
    db.engine().checkpoint().expect("checkpoint: part of the series is in sealed blocks");
    let got = batches(&ctx, "SELECT time, usage FROM cpu").await.expect("scan");
    let sizes: Vec<usize> = got.iter().map(|b| b.num_rows()).collect();
    assert_eq!(sizes.iter().sum::<usize>(), n as usize);
    assert!(sizes.len() >= 4, "the scan came in {} batches: {sizes:?}", sizes.len());
    assert!(sizes.iter().all(|s| *s <= 4 * TARGET_ROWS), "batch sizes {sizes:?}");
    assert_eq!(rows(&ctx, "SELECT count(*), sum(usage) FROM cpu").await, [["60000", "1799970000.0"]]);
    // LIMIT stops the scan early and still answers right.
    assert_eq!(rows(&ctx, "SELECT usage FROM cpu LIMIT 3").await.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_is_a_table_read_in_chunks_with_ties_at_their_edges() {
    let (_dir, db, ctx) = fresh();
    let streams = db.tables().stream_tables().expect("streams");
    let attrs = [
        StreamAttr { name: "price".into(), ty: StreamAttrType::F64 },
        StreamAttr { name: "volume".into(), ty: StreamAttrType::I32 },
    ];
    streams.create_stream(DB, "trades", &attrs).expect("create the stream");
    // Runs of up to 3000 events on one timestamp, so chunks end inside runs.
    let total = 2 * CHUNK_EVENTS as i64 + 5000;
    let mut points = Vec::new();
    for i in 0..total {
        points.push(Point {
            measurement: "trades".into(),
            tags: Vec::new(),
            fields: vec![
                ("price".into(), FieldValue::Float(i as f64)),
                ("volume".into(), FieldValue::Integer(i % 100)),
            ],
            timestamp_ns: BASE_NS + (i / 3000) * 1_000,
        });
    }
    for chunk in points.chunks(4000) {
        db.tables().write_request(DB, chunk).expect("write events");
    }
    let got = rows(&ctx, "SELECT price FROM trades").await;
    let prices: Vec<i64> = got.iter().map(|r| r[0].parse::<f64>().unwrap() as i64).collect();
    assert_eq!(prices, (0..total).collect::<Vec<_>>(), "every event once, in time then arrival order");
    let late = BASE_NS + 4 * 1_000;
    let counted = rows(
        &ctx,
        &format!("SELECT count(*), min(volume) FROM trades WHERE time >= to_timestamp_nanos({late})"),
    )
    .await;
    assert_eq!(counted, [[(total - 12_000).to_string(), "0".to_string()]]);
    assert_eq!(rows(&ctx, "SELECT count(*) FROM trades").await, [[total.to_string()]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_writes_through_the_engine_and_bad_rows_get_sqlstate_codes() {
    let (_dir, db, ctx) = fresh();
    db.tables().write_request(DB, &[point("a", BASE_NS, vec![("usage", FieldValue::Float(1.0))])]).unwrap();
    let inserted = rows(
        &ctx,
        &format!("INSERT INTO cpu (time, host, usage) VALUES (to_timestamp_nanos({}), 'z', 7.5), (to_timestamp_nanos({}), 'z', 8.5)", BASE_NS + 1, BASE_NS + 2),
    )
    .await;
    assert_eq!(inserted, [["2"]]);
    // Read back through the series engine, not through SQL.
    let series = db.engine().as_ref();
    let ids: Vec<_> = strata_series::SeriesStore::series(series, DB, "cpu")
        .unwrap()
        .into_iter()
        .filter(|s| s.tags.iter().any(|(_, v)| v == "z"))
        .map(|s| s.id)
        .collect();
    let points = strata_series::SeriesStore::read(series, DB, &ids, strata_series::TimeRange::ALL).unwrap();
    assert_eq!(
        points,
        vec![vec![(BASE_NS + 1, FieldValue::Float(7.5)), (BASE_NS + 2, FieldValue::Float(8.5))]]
    );

    let no_field = batches(&ctx, "INSERT INTO cpu (time, host) VALUES (now(), 'q')").await.unwrap_err();
    assert_eq!(sqlstate::of_datafusion(&no_field), sqlstate::code::NOT_NULL_VIOLATION, "{no_field}");
    let missing = batches(&ctx, "SELECT * FROM nope").await.unwrap_err();
    assert_eq!(sqlstate::of_datafusion(&missing), sqlstate::code::UNDEFINED_TABLE, "{missing}");
    let column = batches(&ctx, "SELECT nope FROM cpu").await.unwrap_err();
    assert_eq!(sqlstate::of_datafusion(&column), sqlstate::code::UNDEFINED_COLUMN, "{column}");
    assert_eq!(rows(&ctx, "SELECT count(*) FROM cpu").await, [["3"]], "the refused INSERT wrote nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_buckets_and_first_last_by_time() {
    let (_dir, db, ctx) = fresh();
    let points: Vec<Point> = (0..10)
        .map(|i| point("b", BASE_NS + i * 1_000_000_000, vec![("usage", FieldValue::Float(i as f64))]))
        .collect();
    db.tables().write_request(DB, &points).unwrap();
    let got = rows(
        &ctx,
        "SELECT CAST(time_bucket(INTERVAL '5 seconds', time) AS BIGINT) AS t, count(*), \
         first_value(usage ORDER BY time), last_value(usage ORDER BY time) FROM cpu GROUP BY 1 ORDER BY 1",
    )
    .await;
    assert_eq!(
        got,
        [
            [BASE_NS.to_string(), "5".into(), "0.0".into(), "4.0".into()],
            [(BASE_NS + 5_000_000_000).to_string(), "5".into(), "5.0".into(), "9.0".into()]
        ]
    );
    let streamed = ctx.sql("SELECT * FROM cpu").await.unwrap().execute_stream().await.unwrap();
    assert_eq!(streamed.map(|b| b.unwrap().num_rows()).collect::<Vec<_>>().await.iter().sum::<usize>(), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_tag_or_field_shows_in_the_next_statement() {
    let (_dir, db, ctx) = fresh();
    db.tables().write_request(DB, &[point("b", BASE_NS, vec![("usage", FieldValue::Float(1.0))])]).unwrap();
    let columns = |ctx: datafusion::prelude::SessionContext| async move {
        let df = ctx.sql("SELECT * FROM cpu").await.expect("plan");
        df.schema().fields().iter().map(|f| f.name().clone()).collect::<Vec<_>>()
    };
    assert_eq!(columns(ctx.clone()).await, ["time", "host", "usage"]);
    assert_eq!(columns(ctx.clone()).await, ["time", "host", "usage"], "the same layout again");
    // Host "a" brings the tag "region"; a new field too.
    db.tables().write_request(DB, &[point("a", BASE_NS, vec![("idle", FieldValue::Integer(3))])]).unwrap();
    assert_eq!(columns(ctx.clone()).await, ["time", "host", "region", "idle", "usage"]);
    assert_eq!(rows(&ctx, "SELECT count(*) FROM cpu").await, [["2"]]);
    // information_schema names PostgreSQL's types (Grafana's query builder reads them).
    let types = rows(
        &ctx,
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'cpu' ORDER BY column_name",
    )
    .await;
    let expected = [
        ["host", "text"],
        ["idle", "bigint"],
        ["region", "text"],
        ["time", "timestamp with time zone"],
        ["usage", "double precision"],
    ];
    assert_eq!(types, expected);
    assert!(rows(&ctx, "SHOW TABLES").await.iter().any(|r| r[2] == "cpu"), "SHOW TABLES lists cpu");
}
