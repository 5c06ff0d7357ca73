//! Aggregates answered from partial aggregates per window (`exec::partial`,
//! block summaries in the engine) against the row path, on the durable
//! series engine: TSBS-like cpu data (a point every 10 s, four hosts) with
//! out-of-order points, overwrites, a delete and checkpoints in between, so
//! windows mix summarized blocks, decoded blocks and DRAM points. Each
//! query is compared with itself plus a WHERE that is always true but names
//! a field, which sends it down the row path. Reads pruned by a required
//! field comparison (`exec::prune`) are compared with unpruned ones the
//! same way.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use strata_series::{EngineOptions, FieldValue, Point, SeriesEngine, SeriesStore, TimeRange, WalOpener};

use super::exec::partial::answerable;
use super::exec::plan::{plan_select, Projection};
use super::exec_test_support::{params, point, T0};
use super::time::NS_PER_S;
use super::{execute, parse_query};
use crate::influxql::ast::Statement;

const HOSTS: [&str; 4] = ["host_0", "host_1", "host_2", "host_3"];

/// An engine with no commit log, checkpointing only when told.
fn engine(dir: &std::path::Path) -> Arc<SeriesEngine> {
    let opts = EngineOptions { checkpoint_interval: None, ..EngineOptions::new(dir.join("series")) };
    let log = Box::new(strata_log::NoLog::default());
    let (engine, _) = SeriesEngine::open(opts, WalOpener::boxed(log, Vec::new()), &|_, _, _| {}).unwrap();
    engine.create_database("db").unwrap();
    engine
}

/// One cpu point of `host` at `seconds` past T0: usage_user in quarters
/// (sums stay exact), rising with time (so blocks have distinct ranges),
/// usage_system an integer.
fn cpu(rng: &mut ChaCha8Rng, host: &str, seconds: i64) -> Point {
    let user = FieldValue::Float((seconds / 120) as f64 + f64::from(rng.gen_range(0..40)) / 4.0);
    let system = FieldValue::Integer(rng.gen_range(0..100));
    point("cpu", &[("hostname", host)], vec![("usage_user", user), ("usage_system", system)], seconds)
}

/// Three hours of data written in four parts with checkpoints between, an
/// out-of-order part, overwrites and a delete.
fn load(engine: &SeriesEngine, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let part = |rng: &mut ChaCha8Rng, from: i64, to: i64| -> Vec<Point> {
        (from..to).step_by(10).flat_map(|s| HOSTS.map(|h| cpu(rng, h, s))).collect()
    };
    engine.write("db", &part(&mut rng, 0, 4_000)).unwrap();
    engine.checkpoint().unwrap();
    engine.write("db", &part(&mut rng, 6_000, 9_000)).unwrap();
    engine.checkpoint().unwrap();
    // Late points into the gap, and overwrites of sealed points.
    engine.write("db", &part(&mut rng, 4_000, 6_000)).unwrap();
    engine.write("db", &part(&mut rng, 3_000, 3_100)).unwrap();
    engine.checkpoint().unwrap();
    let ids: Vec<_> = engine.series("db", "cpu").unwrap().iter().map(|s| s.id).collect();
    let gone = TimeRange { min_ns: T0 + 7_000 * NS_PER_S, max_ns: T0 + 7_300 * NS_PER_S };
    engine.delete("db", &ids[..2], gone).unwrap();
    engine.write("db", &part(&mut rng, 9_000, 10_800)).unwrap();
}

/// `query` with a condition that keeps every row but names a field, which
/// sends it down the row path.
fn row_path(query: &str) -> String {
    let cond = "(usage_user > -1 OR hostname != 'none')";
    let extra = if query.contains(" WHERE ") { format!(" AND {cond}") } else { format!(" WHERE {cond}") };
    match query.find(" GROUP BY") {
        Some(at) => format!("{}{extra}{}", &query[..at], &query[at..]),
        None => format!("{query}{extra}"),
    }
}

#[test]
fn partial_aggregates_answer_as_rows_do() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    load(&engine, 21);
    let (s, e) = (T0, T0 + 10_800 * NS_PER_S);
    let range = format!("time >= {s} AND time < {e}");
    let queries = [
        format!("SELECT mean(usage_user) FROM cpu WHERE {range} GROUP BY time(1h), hostname"),
        format!(
            "SELECT max(usage_user), max(usage_system) FROM cpu WHERE (hostname = 'host_0' OR hostname = 'host_2') AND {range} GROUP BY time(1h)"
        ),
        format!(
            "SELECT max(usage_user) FROM cpu WHERE hostname = 'host_1' AND time >= {} AND time < {} GROUP BY time(1m)",
            s + 3_000 * NS_PER_S,
            s + 6_600 * NS_PER_S
        ),
        format!(
            "SELECT count(usage_user), sum(usage_system), min(usage_user), first(usage_user), last(usage_system), spread(usage_user) FROM cpu WHERE {range} GROUP BY time(30m) fill(none)"
        ),
        format!("SELECT mean(usage_system), count(usage_system) FROM cpu WHERE {range} GROUP BY time(1h, 15m), *"),
        format!("SELECT sum(usage_user), max(usage_user), last(usage_user) FROM cpu WHERE {range}"),
        "SELECT count(usage_user), mean(usage_user) FROM cpu GROUP BY hostname".to_string(),
        format!("SELECT max(usage_user) FROM cpu WHERE {range} GROUP BY time(1h) fill(0) ORDER BY time DESC LIMIT 2"),
    ];
    let p = params(20_000);
    for q in &queries {
        let Statement::Select(stmt) = &parse_query(q).unwrap()[0] else { panic!("{q}") };
        let plan = plan_select(engine.as_ref(), stmt, &p).unwrap().unwrap();
        assert!(answerable(&plan).is_some(), "{q} is answered from partials");
        let fast: Value = execute(engine.as_ref(), q, &p).unwrap();
        let slow_q = row_path(q);
        let Statement::Select(slow_stmt) = &parse_query(&slow_q).unwrap()[0] else { panic!("{slow_q}") };
        let slow_plan = plan_select(engine.as_ref(), slow_stmt, &p).unwrap().unwrap();
        assert!(answerable(&slow_plan).is_none(), "{slow_q} reads rows");
        let slow: Value = execute(engine.as_ref(), &slow_q, &p).unwrap();
        assert!(fast["results"][0].get("error").is_none(), "{q}: {fast}");
        assert!(fast["results"][0]["series"].as_array().is_some_and(|s| !s.is_empty()), "{q}: {fast}");
        assert_eq!(fast, slow, "{q}");
    }
}

#[test]
fn what_partials_do_not_answer_reads_rows() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    load(&engine, 5);
    let p = params(20_000);
    for q in [
        "SELECT max(usage_user) FROM cpu",
        "SELECT median(usage_user) FROM cpu GROUP BY time(1h)",
        "SELECT mean(usage_user) FROM cpu WHERE usage_user > 50 GROUP BY time(1h)",
        "SELECT derivative(mean(usage_user)) FROM cpu WHERE time >= 0 GROUP BY time(1h)",
        "SELECT mean(usage_user) FROM cpu WHERE time >= 0 GROUP BY time(1h) tz('Europe/Paris')",
        "SELECT usage_user FROM cpu",
    ] {
        let Statement::Select(stmt) = &parse_query(q).unwrap()[0] else { panic!("{q}") };
        let plan = plan_select(engine.as_ref(), stmt, &p).unwrap().unwrap();
        assert!(answerable(&plan).is_none(), "{q} reads rows");
    }
}

/// A random aggregate query of the shapes the partial path answers.
fn random_query(rng: &mut ChaCha8Rng) -> String {
    let funcs = ["count", "sum", "mean", "min", "max", "first", "last", "spread"];
    let fields = ["usage_user", "usage_system"];
    let columns: Vec<String> = (0..rng.gen_range(1..4))
        .map(|_| format!("{}({})", funcs[rng.gen_range(0..funcs.len())], fields[rng.gen_range(0..2)]))
        .collect();
    let lo = rng.gen_range(-600..8_000i64);
    let hi = lo + rng.gen_range(60..6_000i64);
    let mut q = format!(
        "SELECT {} FROM cpu WHERE time >= {} AND time < {}",
        columns.join(", "),
        T0 + lo * NS_PER_S,
        T0 + hi * NS_PER_S
    );
    if rng.gen_bool(0.3) {
        q += &format!(" AND hostname = '{}'", HOSTS[rng.gen_range(0..HOSTS.len())]);
    }
    let every = ["1h", "2h", "30m", "1m", "20m"][rng.gen_range(0..5)];
    match rng.gen_range(0..4) {
        0 => q += &format!(" GROUP BY time({every})"),
        1 => q += &format!(" GROUP BY time({every}), hostname"),
        2 => q += &format!(" GROUP BY time({every}, 10m) fill(none)"),
        _ => q += " GROUP BY hostname",
    }
    q
}

/// Seeded: random data (as [`load`], with the seed) and random queries;
/// every answer from partials equals the row path's. The seed is in every
/// failure message.
#[test]
fn random_queries_answer_as_rows_do() {
    for seed in 0..6u64 {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine(dir.path());
        load(&engine, seed);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
        let p = params(20_000);
        for _ in 0..24 {
            let q = random_query(&mut rng);
            let Statement::Select(stmt) = &parse_query(&q).unwrap()[0] else { panic!("{q}") };
            let plan = plan_select(engine.as_ref(), stmt, &p).unwrap().unwrap();
            let Projection::Aggregate(columns) = &plan.projection else { panic!("{q}") };
            let lone_selector = plan.window.is_none() && columns.len() == 1 && columns[0].func.is_selector();
            assert_eq!(answerable(&plan).is_some(), !lone_selector, "seed {seed}: {q}");
            let fast = execute(engine.as_ref(), &q, &p).unwrap();
            let slow = execute(engine.as_ref(), &row_path(&q), &p).unwrap();
            assert_eq!(fast, slow, "seed {seed}: {q}");
        }
    }
}

/// Raw and aggregate SELECTs whose WHERE requires a field comparison read
/// pruned (blocks ruled out by their summaries left out) and answer as the
/// same query with the comparison under an OR, which is not pruned.
#[test]
fn pruned_reads_answer_as_unpruned_ones() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    load(&engine, 8);
    let p = params(20_000);
    let span = format!("time >= {} AND time < {}", T0, T0 + 10_800 * NS_PER_S);
    let cases = [
        ("usage_user > 80", "SELECT usage_user, usage_system FROM cpu WHERE {c}"),
        ("60 < usage_user AND hostname = 'host_1'", "SELECT * FROM cpu WHERE {c}"),
        ("usage_user <= 12.5", "SELECT usage_system FROM cpu WHERE {c} ORDER BY time DESC LIMIT 50"),
        ("usage_user = 70.25", "SELECT usage_user FROM cpu WHERE {c}"),
        (
            "usage_system >= 95 AND usage_user > 40",
            "SELECT mean(usage_user) FROM cpu WHERE {c} GROUP BY time(1h)",
        ),
        ("usage_user > 85", "SELECT count(usage_system) FROM cpu WHERE {c} GROUP BY hostname"),
    ];
    for (cond, shape) in cases {
        let pruned_q = shape.replace("{c}", &format!("{cond} AND {span}"));
        let plain_q = shape.replace("{c}", &format!("({cond} OR hostname = 'none') AND {span}"));
        for (q, pruned) in [(&pruned_q, true), (&plain_q, false)] {
            let Statement::Select(stmt) = &parse_query(q).unwrap()[0] else { panic!("{q}") };
            let plan = plan_select(engine.as_ref(), stmt, &p).unwrap().unwrap();
            let required = plan.condition.as_ref().map(|c| c.required_comparisons()).unwrap_or_default();
            assert_eq!(!required.is_empty(), pruned, "{q}");
        }
        let got = execute(engine.as_ref(), &pruned_q, &p).unwrap();
        let want = execute(engine.as_ref(), &plain_q, &p).unwrap();
        assert!(got["results"][0].get("error").is_none(), "{pruned_q}: {got}");
        assert!(got["results"][0]["series"].as_array().is_some_and(|s| !s.is_empty()), "{pruned_q}: {got}");
        assert_eq!(got, want, "{pruned_q}");
    }
}
