//! Randomized tests: aggregates (windowed or not, fill none or null) equal a
//! naive recomputation from the written points; and the fuzz smoke test,
//! which runs the fuzz entry over seeded random and mutated-valid inputs.

use std::collections::BTreeMap;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use strata_series::reference::MemStore;
use strata_series::{FieldValue, Point, SeriesStore};

use super::{execute, fuzz_influxql, parse_query, QueryParams};

/// Aggregates of one window, computed the obvious way.
struct Naive {
    count: i64,
    sum: f64,
    sum_n: i64,
    min: f64,
    max: f64,
    first: (i64, f64),
    last: (i64, f64),
}

impl Naive {
    fn new(t: i64, v: f64, n: i64) -> Naive {
        Naive { count: 1, sum: v, sum_n: n, min: v, max: v, first: (t, v), last: (t, v) }
    }

    fn add(&mut self, t: i64, v: f64, n: i64) {
        self.count += 1;
        self.sum += v;
        self.sum_n += n;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        if t < self.first.0 || (t == self.first.0 && v > self.first.1) {
            self.first = (t, v);
        }
        if t > self.last.0 || (t == self.last.0 && v > self.last.1) {
            self.last = (t, v);
        }
    }

    fn row(&self, time: i64) -> Value {
        json!([
            time,
            self.count,
            self.sum,
            self.min,
            self.max,
            self.sum / self.count as f64,
            self.first.1,
            self.last.1,
            self.sum_n
        ])
    }
}

fn empty_row(time: i64) -> Value {
    json!([time, 0, null, null, null, null, null, null, null])
}

#[allow(clippy::too_many_arguments)]
fn check_aggregates(
    points: &[(usize, usize, i64, i64)],
    lo: i64,
    span: i64,
    interval: i64,
    offset: i64,
    windowed: bool,
    fill_none: bool,
) -> Result<(), TestCaseError> {
    let store = MemStore::new();
    store.create_database("db").unwrap();
    // Latest write wins per (tag set, time): keep the model the same way.
    let mut model: BTreeMap<(usize, usize, i64), (f64, i64)> = BTreeMap::new();
    let mut batch = Vec::new();
    for &(host, dc, t, v) in points {
        model.insert((host, dc, t), (v as f64, v * 3));
        batch.push(Point {
            measurement: "m".to_string(),
            tags: vec![("dc".to_string(), format!("d{dc}")), ("host".to_string(), format!("h{host}"))],
            fields: vec![
                ("v".to_string(), FieldValue::Float(v as f64)),
                ("n".to_string(), FieldValue::Integer(v * 3)),
            ],
            timestamp_ns: t,
        });
    }
    store.write("db", &batch).unwrap();

    let hi = lo + span;
    let group_by = if windowed {
        format!("GROUP BY time({interval}ns, {offset}ns), host")
    } else {
        "GROUP BY host".into()
    };
    let fill = if fill_none { "fill(none)" } else { "" };
    let q = format!(
        "SELECT count(v), sum(v), min(v), max(v), mean(v), first(v), last(v), sum(n) FROM m \
         WHERE time >= {lo} AND time < {hi} {group_by} {fill}"
    );
    let params =
        QueryParams { db: Some("db".into()), epoch: Some("ns".into()), now_ns: 0, ..Default::default() };
    let body = execute(&store, &q, &params).unwrap();

    let off = offset.rem_euclid(interval);
    let window = |t: i64| if windowed { t - (t - off).rem_euclid(interval) } else { lo };
    let mut groups: BTreeMap<usize, BTreeMap<i64, Naive>> = BTreeMap::new();
    for (&(host, _, t), &(v, n)) in &model {
        if t < lo || t >= hi {
            continue;
        }
        groups
            .entry(host)
            .or_default()
            .entry(window(t))
            .and_modify(|a| a.add(t, v, n))
            .or_insert_with(|| Naive::new(t, v, n));
    }
    let mut expected = Vec::new();
    for (host, windows) in groups {
        let rows: Vec<Value> = if windowed && !fill_none {
            let mut rows = Vec::new();
            let mut start = window(lo);
            while start <= window(hi - 1) {
                rows.push(windows.get(&start).map_or_else(|| empty_row(start), |a| a.row(start)));
                start += interval;
            }
            rows
        } else {
            windows.iter().map(|(start, a)| a.row(*start)).collect()
        };
        expected.push(json!({
            "name": "m",
            "tags": {"host": format!("h{host}")},
            "columns": ["time", "count", "sum", "min", "max", "mean", "first", "last", "sum_1"],
            "values": rows
        }));
    }
    let mut result = json!({"statement_id": 0});
    if !expected.is_empty() {
        result["series"] = Value::Array(expected);
    }
    prop_assert_eq!(body, json!({"results": [result]}), "query: {}", q);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn aggregates_equal_a_naive_recomputation(
        points in prop::collection::vec((0usize..3, 0usize..2, 0i64..1000, -1000i64..1000), 0..60),
        lo in 0i64..600,
        span in 0i64..800,
        interval in 1i64..300,
        offset in 0i64..400,
        windowed in any::<bool>(),
        fill_none in any::<bool>(),
    ) {
        check_aggregates(&points, lo, span, interval, offset, windowed, fill_none)?;
    }
}

/// Valid queries the mutations start from.
const CORPUS: &[&str] = &[
    "SELECT usage, count FROM cpu WHERE host = 'a' ORDER BY time DESC LIMIT 3 OFFSET 1",
    "SELECT * FROM cpu WHERE usage > 3 AND (host =~ /^a/ OR region !~ /x/)",
    "SELECT mean(usage), max(count) AS m FROM db.autogen.cpu WHERE time > now() - 1m GROUP BY time(20s), host fill(0)",
    "SELECT count(*) FROM cpu GROUP BY time(30s, 5s), * fill(previous)",
    "SELECT last(*) FROM events WHERE time >= '1970-01-01T00:00:10Z' AND time < 60000000000",
    "SELECT first(msg), count(ok) FROM events GROUP BY time(1m) fill(none)",
    "SELECT sum(count) FROM cpu WHERE \"host\"::tag = 'b' AND usage::field >= -1.5e1",
    "SHOW DATABASES; SHOW MEASUREMENTS WITH MEASUREMENT =~ /c/ LIMIT 2",
    "SHOW TAG KEYS FROM cpu WHERE region = 'eu'",
    "SHOW TAG VALUES ON db FROM cpu WITH KEY IN (\"host\", region) WHERE host != 'x'",
    "SHOW FIELD KEYS FROM \"cpu\"; SHOW SERIES WHERE host = 'a' OFFSET 1",
    "SHOW RETENTION POLICIES ON \"db\"",
    "CREATE DATABASE \"new db\"; DROP MEASUREMENT events",
    "DELETE FROM cpu WHERE host = 'a' AND time < now() - 10s",
    "DELETE WHERE time <= 50000000000",
    "SELECT min(usage) FROM cpu WHERE time = 0 OR time >= 1h -- comment\n",
    "select MEAN(usage) from cpu where usage * 2 + 1 > -(count) group by time(1h30m) order by time asc",
];

/// Fragments the mutations insert.
const FRAGMENTS: &[&str] = &[
    " AND ",
    " OR ",
    "(",
    ")",
    "'",
    "\"",
    "/",
    "=~",
    "!~",
    "*",
    ",",
    ";",
    "1h",
    "-",
    "now()",
    "time",
    ".",
    "::",
    " GROUP BY time(1m)",
    " fill(previous)",
    "\\",
    "µ",
    "9999999999999999999",
    "--",
    "1.5e308",
    " WHERE ",
    "::tag",
    "SELECT ",
    " FROM ",
    "count(",
    "=",
    "<>",
    "0s",
    " LIMIT 0",
    "\n",
];

fn mutate(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut bytes = CORPUS[rng.gen_range(0..CORPUS.len())].as_bytes().to_vec();
    for _ in 0..rng.gen_range(1..3) {
        let at = rng.gen_range(0..=bytes.len());
        match rng.gen_range(0..5) {
            0 => {
                let end = (at + rng.gen_range(1..6)).min(bytes.len());
                bytes.drain(at..end);
            }
            1 => {
                let fragment = FRAGMENTS[rng.gen_range(0..FRAGMENTS.len())].as_bytes();
                bytes.splice(at..at, fragment.iter().copied());
            }
            2 => {
                let end = (at + rng.gen_range(1..12)).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                let to = rng.gen_range(0..=bytes.len());
                bytes.splice(to..to, copy);
            }
            3 if at < bytes.len() => bytes[at] = rng.gen(),
            _ => {
                let end = (at + rng.gen_range(1..4)).min(bytes.len());
                bytes[at..end].reverse();
            }
        }
    }
    bytes
}

fn random_text(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let len = rng.gen_range(0..48);
    if rng.gen_bool(0.5) {
        return (0..len).map(|_| rng.gen()).collect();
    }
    let mut out = Vec::new();
    for _ in 0..len / 4 {
        out.extend_from_slice(FRAGMENTS[rng.gen_range(0..FRAGMENTS.len())].as_bytes());
        if rng.gen_bool(0.3) {
            out.push(b" abcxyz019_"[rng.gen_range(0..11)]);
        }
    }
    out
}

#[test]
fn fuzz_smoke_never_panics_and_round_trips() {
    let seed: u64 = 0x1f1u64 << 20 | 0x5eed;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut parsed = 0;
    for iteration in 0..20_000 {
        let input = if iteration % 4 == 0 { random_text(&mut rng) } else { mutate(&mut rng) };
        let outcome = std::panic::catch_unwind(|| fuzz_influxql(&input));
        assert!(
            outcome.is_ok(),
            "seed {seed:#x}, iteration {iteration}: fuzz_influxql panicked on {:?}",
            String::from_utf8_lossy(&input)
        );
        if parse_query(&String::from_utf8_lossy(&input)).is_ok_and(|s| !s.is_empty()) {
            parsed += 1;
        }
    }
    // The mutations must reach the executor often, not just the lexer.
    assert!(parsed > 1_500, "seed {seed:#x}: only {parsed} of 20000 inputs parsed");
    // And the unmutated corpus parses and round-trips.
    for query in CORPUS {
        assert!(parse_query(query).is_ok(), "{query}");
        fuzz_influxql(query.as_bytes());
    }
}
