//! Tests of the TSBS-style queries: time formatting, canonical answers from
//! InfluxDB- and QuestDB-shaped JSON, the comparison's tolerance, and the
//! five queries run against a Strata server in InfluxQL over HTTP and in SQL
//! over the PostgreSQL protocol, checked against answers computed here from
//! the generated data itself.

use std::collections::BTreeMap;

use serde_json::json;
use strata_engine::Protocol;
use strata_influx::line_protocol::{parse_lines, LineLimits, Precision};
use strata_series::FieldValue;

use super::dataset::Dataset;
use super::generator::{CpuSpec, FIELD_NAMES};
use super::http_loader::HttpTarget;
use super::load::{load, IngestEndpoint};
use super::local_db::{BenchDirs, LocalDb};
use super::local_server::LocalServer;
use super::queries::{
    answer_from_influx, answer_from_questdb, answer_from_text, compare_answers, iso_micros, parse_iso_ns,
    pick_hosts, run_queries, tsbs_queries, Answer, QueryKind, QueryTarget,
};

#[test]
fn iso_times_round_trip() {
    let ns = 1_451_606_400_000_000_000;
    assert_eq!(iso_micros(ns), "2016-01-01T00:00:00.000000Z");
    assert_eq!(iso_micros(ns + 3_723_000_001_000), "2016-01-01T01:02:03.000001Z");
    assert_eq!(iso_micros(0), "1970-01-01T00:00:00.000000Z");
    assert_eq!(iso_micros(951_782_400_000_000_000), "2000-02-29T00:00:00.000000Z");
    for t in [0, ns, ns + 3_723_000_001_000, 951_782_400_000_000_000, 4_102_444_800_000_000_000] {
        assert_eq!(parse_iso_ns(&iso_micros(t)), Some(t), "{t}");
    }
    assert_eq!(parse_iso_ns("2016-01-01T00:00:10Z"), Some(ns + 10_000_000_000));
    assert_eq!(parse_iso_ns("2016-01-01T00:00:00.5Z"), Some(ns + 500_000_000));
    for bad in ["", "2016-01-01", "2016-01-01T00:00:00", "2016-01-01T00:00:00.x1Z", "x-1-1T0:0:0Z"] {
        assert_eq!(parse_iso_ns(bad), None, "{bad:?}");
    }
}

#[test]
fn queries_name_the_same_hosts_and_window_in_both_languages() {
    let spec = CpuSpec::new(3, 20, 720); // 2 hours
    let qs = tsbs_queries(&spec, 3);
    assert_eq!(qs.iter().map(|q| q.kind).collect::<Vec<_>>(), QueryKind::ALL);
    let host = &pick_hosts(&spec, 1, 3)[0];
    let single = &qs[0];
    assert!(single.influxql.contains(&format!("hostname = '{host}'")), "{}", single.influxql);
    assert!(single.sql.contains(&format!("hostname = '{host}'")), "{}", single.sql);
    // One hour from the first row.
    assert!(single.influxql.contains("time >= 1451606400000000000 AND time < 1451610000000000000"));
    assert!(single
        .sql
        .contains("'2016-01-01T00:00:00.000000Z' AND timestamp < '2016-01-01T01:00:00.000000Z'"));
    // Longer windows stop at the end of the data (2 h).
    assert!(qs[1].influxql.contains("time < 1451613600000000000"), "{}", qs[1].influxql);
    let eight = pick_hosts(&spec, 8, 3);
    assert_eq!(eight.len(), 8);
    assert_eq!(eight.iter().collect::<std::collections::BTreeSet<_>>().len(), 8, "distinct hosts");
    for h in &eight {
        assert!(qs[2].influxql.contains(&format!("'{h}'")) && qs[2].sql.contains(&format!("'{h}'")));
    }
    assert_eq!(pick_hosts(&CpuSpec::new(1, 3, 1), 8, 1).len(), 3, "no more hosts than there are");
}

#[test]
fn answers_from_every_shape_become_the_same_canonical_form() {
    let influx = json!({"results": [{"statement_id": 0, "series": [
        {"name": "cpu", "tags": {"hostname": "host_1"}, "columns": ["time", "usage_user"], "values": [[1451606400000000000i64, 1.5], [1451610000000000000i64, null]]},
        {"name": "cpu", "tags": {"hostname": "host_2"}, "columns": ["time", "usage_user"], "values": [[1451606400000000000i64, 2.25]]}
    ]}]});
    let quest = json!({"query": "...", "columns": [{"name": "timestamp", "type": "TIMESTAMP"}, {"name": "hostname", "type": "SYMBOL"}, {"name": "usage_user", "type": "DOUBLE"}],
        "dataset": [["2016-01-01T00:00:00.000000Z", "host_2", 2.25], ["2016-01-01T00:00:00.000000Z", "host_1", 1.5000000000001], ["2016-01-01T01:00:00.000000Z", "host_1", null]]});
    let a = answer_from_influx(QueryKind::DoubleGroupby, &influx).unwrap();
    let b = answer_from_questdb(QueryKind::DoubleGroupby, &quest).unwrap();
    assert_eq!(a.rows.len(), 3);
    assert!(a.rows.contains_key("host_1|1451606400000000000"));
    assert_eq!(compare_answers(&a, &b), Ok(()), "equal within the tolerance");
    // PostgreSQL text rows, columns in another order.
    let text = |v: &str| Some(v.to_string());
    let columns = ["hostname", "usage_user", "time"].map(String::from);
    let rows = [
        vec![text("host_1"), text("1.5"), text("1451606400000000000")],
        vec![text("host_1"), None, text("1451610000000000000")],
        vec![text("host_2"), text("2.25"), text("1451606400000000000")],
    ];
    let t = answer_from_text(QueryKind::DoubleGroupby, &columns, &rows).unwrap();
    assert_eq!(t, a, "the same rows as InfluxQL's");
    let bad = [vec![text("host_1"), text("x"), text("1451606400000000000")]];
    assert!(answer_from_text(QueryKind::DoubleGroupby, &columns, &bad)
        .unwrap_err()
        .to_string()
        .contains("usage_user"));
    let mut c = b.clone();
    c.rows.get_mut("host_2|1451606400000000000").unwrap().insert("usage_user".into(), Some(2.26));
    assert!(compare_answers(&a, &c).unwrap_err().contains("host_2"));
    let mut d = b.clone();
    d.rows.remove("host_2|1451606400000000000");
    assert!(compare_answers(&a, &d).unwrap_err().contains("3 rows against 2"));
    // lastpoint: keyed by host only; last_ prefixes are dropped.
    let last = json!({"results": [{"series": [{"name": "cpu", "tags": {"hostname": "h"}, "columns": ["time", "last_usage_user"], "values": [[0, 3.0]]}]}]});
    let l = answer_from_influx(QueryKind::Lastpoint, &last).unwrap();
    assert_eq!(l.rows["h"]["usage_user"], Some(3.0));
    let err = json!({"results": [{"statement_id": 0, "error": "unsupported: LATEST"}]});
    assert!(answer_from_influx(QueryKind::Lastpoint, &err).unwrap_err().to_string().contains("unsupported"));
    let qerr = json!({"query": "x", "error": "table does not exist [table=cpu]"});
    assert!(answer_from_questdb(QueryKind::Lastpoint, &qerr).is_err());
}

/// The five answers computed from the generated lines themselves.
pub(crate) fn expected_answers(data: &Dataset, seed: u64) -> BTreeMap<QueryKind, Answer> {
    let spec = &data.spec;
    let body: Vec<u8> = data.stream().flat_map(|b| b.body).collect();
    let points = parse_lines(&body, Precision::Nanoseconds, 0, &LineLimits::default()).points;
    let rows: Vec<(String, i64, Vec<f64>)> = points
        .iter()
        .map(|p| {
            let host = p.tags.iter().find(|(k, _)| k == "hostname").unwrap().1.clone();
            let vals = p
                .fields
                .iter()
                .map(|(_, v)| if let FieldValue::Float(x) = v { *x } else { f64::NAN })
                .collect();
            (host, p.timestamp_ns, vals)
        })
        .collect();
    let hour = 3_600_000_000_000i64;
    let minute = 60_000_000_000i64;
    let start = spec.start_ns;
    let end = spec.end_ns().unwrap() + spec.interval_ns;
    let one = pick_hosts(spec, 1, seed)[0].clone();
    let eight = pick_hosts(spec, 8, seed);
    let mut out = BTreeMap::new();
    let field_map = |vals: &[f64]| -> BTreeMap<String, Option<f64>> {
        FIELD_NAMES.iter().zip(vals).map(|(f, v)| (f.to_string(), Some(*v))).collect()
    };
    // single_groupby: max usage_user per minute of one host over the first hour.
    let mut a = Answer::default();
    for (h, t, v) in rows.iter().filter(|(h, t, _)| *h == one && *t < (start + hour).min(end)) {
        let _ = h;
        let e = a.rows.entry((t - t.rem_euclid(minute)).to_string()).or_default();
        let cur = e.entry("usage_user".into()).or_insert(Some(f64::MIN));
        *cur = Some(cur.unwrap().max(v[0]));
    }
    out.insert(QueryKind::SingleGroupby, a);
    // double_groupby: mean usage_user per hour and host.
    let mut sums: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for (h, t, v) in rows.iter().filter(|(_, t, _)| *t < (start + 12 * hour).min(end)) {
        let e = sums.entry(format!("{h}|{}", t - t.rem_euclid(hour))).or_insert((0.0, 0.0));
        e.0 += v[0];
        e.1 += 1.0;
    }
    let mut a = Answer::default();
    for (k, (s, n)) in sums {
        a.rows.insert(k, [("usage_user".to_string(), Some(s / n))].into());
    }
    out.insert(QueryKind::DoubleGroupby, a);
    // max_all_8: max of every field per hour over eight hosts.
    let mut a = Answer::default();
    for (_, t, v) in rows.iter().filter(|(h, t, _)| eight.contains(h) && *t < (start + 8 * hour).min(end)) {
        let e = a.rows.entry((t - t.rem_euclid(hour)).to_string()).or_default();
        for (f, x) in FIELD_NAMES.iter().zip(v) {
            let cur = e.entry(f.to_string()).or_insert(Some(f64::MIN));
            *cur = Some(cur.unwrap().max(*x));
        }
    }
    out.insert(QueryKind::MaxAll8, a);
    // lastpoint: the last row of every host.
    let mut a = Answer::default();
    for (h, _, v) in &rows {
        a.rows.insert(h.clone(), field_map(v));
    }
    out.insert(QueryKind::Lastpoint, a);
    // high_cpu_all: rows with usage_user > 90.
    let mut a = Answer::default();
    for (h, t, v) in rows.iter().filter(|(_, t, v)| v[0] > 90.0 && *t < (start + 12 * hour).min(end)) {
        a.rows.insert(format!("{h}|{t}"), field_map(v));
    }
    out.insert(QueryKind::HighCpuAll, a);
    out
}

#[test]
fn strata_answers_the_five_queries_in_influxql_and_sql_as_computed_from_the_data() {
    // 12 hosts x 90 minutes; seed 4 makes some usage_user values exceed 90.
    let spec = CpuSpec::new(4, 12, 540);
    let data = Dataset::generate(&spec, 500).unwrap();
    let expected = expected_answers(&data, 4);
    assert!(!expected[&QueryKind::HighCpuAll].rows.is_empty(), "the data set has high-cpu rows");
    assert_eq!(expected[&QueryKind::Lastpoint].rows.len(), 12);
    assert_eq!(expected[&QueryKind::SingleGroupby].rows.len(), 60);
    assert_eq!(expected[&QueryKind::DoubleGroupby].rows.len(), 24);
    let local = LocalDb::open(Protocol::None, &BenchDirs::detect(), "q", 192 << 20).unwrap();
    let store = local.tables();
    let server = LocalServer::start(store, 1 << 20).unwrap();
    let target = HttpTarget::new(server.url(), "q");
    target.prepare().unwrap();
    load(&target, &data, 2, &indicatif::ProgressBar::hidden()).unwrap();
    // InfluxQL over HTTP, and Strata's SQL over the PostgreSQL protocol.
    for target in [QueryTarget::InfluxQl(server.url()), QueryTarget::StrataSql(server.pg_addr())] {
        let outcomes = run_queries(&target, "q", &tsbs_queries(&spec, 4), 1);
        assert_eq!(outcomes.len(), QueryKind::ALL.len());
        for o in outcomes {
            assert_eq!(o.language, target.language());
            let (answer, ms) = o.result.unwrap_or_else(|e| panic!("{target:?} {}: {e}", o.kind.name()));
            assert!(ms >= 0.0);
            if let Err(diff) = compare_answers(&expected[&o.kind], &answer) {
                panic!("{target:?} {}: Strata differs from the data: {diff}", o.kind.name());
            }
        }
    }
    server.stop().unwrap();
}
