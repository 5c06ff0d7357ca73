//! TSBS `cpu-only` style queries after a load (`--queries`): the same five
//! questions in InfluxQL (Strata, InfluxDB; `POST /query`, `epoch=ns`) and in
//! SQL (QuestDB's dialect on `GET /exec`; Strata's on the PostgreSQL
//! protocol), their answers reduced to one canonical form
//! (row key -> field -> value) so that systems can be compared within a
//! floating-point tolerance, and the median latency of each.
//!
//! | query | TSBS name | question |
//! |---|---|---|
//! | `single_groupby` | single-groupby-1-1-1 | max `usage_user` per minute of one host over one hour |
//! | `double_groupby` | double-groupby-1 | mean `usage_user` per hour and host, all hosts, up to 12 hours |
//! | `max_all_8` | max-all-8 | max of all ten fields per hour for eight hosts, up to 8 hours |
//! | `lastpoint` | lastpoint | the last value of every field per host |
//! | `high_cpu_all` | high-cpu-all | every row with `usage_user > 90`, all hosts, up to 12 hours |
//!
//! Time windows start at the first row and end at the data set's end when
//! it is shorter than TSBS's window; empty buckets are left out (InfluxQL
//! `fill(none)`, QuestDB's `SAMPLE BY` default); hosts are drawn from the seed.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use strata_influx::influxql::time::{civil_from_days, parse_time};

use super::generator::{CpuSpec, FIELD_NAMES, MEASUREMENT};
use super::http_client::{form_encode, HttpConnection, HttpUrl};

const HOUR_NS: i64 = 3_600_000_000_000;
/// Relative tolerance when comparing two answers' values (means differ in
/// summation order between systems).
pub const RELATIVE_TOLERANCE: f64 = 1e-9;

/// Which of the five questions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QueryKind {
    SingleGroupby,
    DoubleGroupby,
    MaxAll8,
    Lastpoint,
    HighCpuAll,
}

impl QueryKind {
    pub const ALL: [QueryKind; 5] = [
        QueryKind::SingleGroupby,
        QueryKind::DoubleGroupby,
        QueryKind::MaxAll8,
        QueryKind::Lastpoint,
        QueryKind::HighCpuAll,
    ];

    pub fn name(self) -> &'static str {
        match self {
            QueryKind::SingleGroupby => "single_groupby",
            QueryKind::DoubleGroupby => "double_groupby",
            QueryKind::MaxAll8 => "max_all_8",
            QueryKind::Lastpoint => "lastpoint",
            QueryKind::HighCpuAll => "high_cpu_all",
        }
    }

    /// The metric holding the median latency.
    pub fn metric(self) -> &'static str {
        match self {
            QueryKind::SingleGroupby => "single_groupby_ms",
            QueryKind::DoubleGroupby => "double_groupby_ms",
            QueryKind::MaxAll8 => "max_all_8_ms",
            QueryKind::Lastpoint => "lastpoint_ms",
            QueryKind::HighCpuAll => "high_cpu_all_ms",
        }
    }

    /// The metric holding the median latency of its SQL form.
    pub fn sql_metric(self) -> &'static str {
        match self {
            QueryKind::SingleGroupby => "single_groupby_sql_ms",
            QueryKind::DoubleGroupby => "double_groupby_sql_ms",
            QueryKind::MaxAll8 => "max_all_8_sql_ms",
            QueryKind::Lastpoint => "lastpoint_sql_ms",
            QueryKind::HighCpuAll => "high_cpu_all_sql_ms",
        }
    }

    /// The metric holding a system's SQL latency over its InfluxQL latency
    /// (the median of per-round ratios).
    pub fn sql_ratio_metric(self) -> &'static str {
        match self {
            QueryKind::SingleGroupby => "single_groupby_sql_to_influxql",
            QueryKind::DoubleGroupby => "double_groupby_sql_to_influxql",
            QueryKind::MaxAll8 => "max_all_8_sql_to_influxql",
            QueryKind::Lastpoint => "lastpoint_sql_to_influxql",
            QueryKind::HighCpuAll => "high_cpu_all_sql_to_influxql",
        }
    }

    /// Whether the time is part of a row's key (not for lastpoint, whose
    /// time InfluxQL reports differently for `last(*)`).
    fn keyed_by_time(self) -> bool {
        self != QueryKind::Lastpoint
    }
}

/// One question in InfluxQL, QuestDB's SQL and Strata's SQL.
#[derive(Clone, Debug)]
pub struct TsbsQuery {
    pub kind: QueryKind,
    pub influxql: String,
    /// QuestDB's dialect (`SAMPLE BY`, `LATEST ON`).
    pub sql: String,
    /// Strata's SQL (DataFusion over the PostgreSQL protocol): `date_bin`
    /// buckets, `last_value(x ORDER BY time)`; times as ns (`BIGINT`).
    pub pg_sql: String,
    /// Values in the query's scope: hosts it names x fields it names x rows
    /// per host in its time window (what a full scan would read; the
    /// denominator of `<query>_ms_per_mvalue`).
    pub scope_values: u64,
}

impl TsbsQuery {
    /// Milliseconds per million values of its scope.
    pub fn ms_per_mvalue(&self, ms: f64) -> f64 {
        ms / (self.scope_values.max(1) as f64 / 1e6)
    }
}

/// `ms` metric name -> its per-million-values metric (`single_groupby_ms`
/// -> `single_groupby_ms_per_mvalue`).
pub fn per_mvalue_metric(ms_metric: &str) -> String {
    format!("{ms_metric}_per_mvalue")
}

/// `2016-01-01T00:00:00.000000Z` for nanoseconds since the epoch (microsecond precision).
pub fn iso_micros(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let micros = ns.rem_euclid(1_000_000_000) / 1000;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction]Z` (QuestDB's timestamps) into
/// nanoseconds since the epoch, with InfluxQL's RFC3339 parser; a date
/// alone or a time without its `Z` is refused.
pub fn parse_iso_ns(s: &str) -> Option<i64> {
    if !s.contains('T') || !s.ends_with('Z') {
        return None;
    }
    parse_time(s)
}

/// The hosts a query looks at: `n` distinct, drawn from `seed`.
pub fn pick_hosts(spec: &CpuSpec, n: usize, seed: u64) -> Vec<String> {
    let mut all: Vec<u32> = (0..spec.hosts).collect();
    all.shuffle(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x7573_6572));
    all.into_iter().take(n.max(1)).map(|h| format!("host_{h}")).collect()
}

/// The five queries over `spec`'s data.
pub fn tsbs_queries(spec: &CpuSpec, seed: u64) -> Vec<TsbsQuery> {
    let start = spec.start_ns;
    let end = spec.end_ns().unwrap_or(start).saturating_add(spec.interval_ns);
    let until = |hours: i64| end.min(start.saturating_add(hours * HOUR_NS));
    let influx_time = |to: i64| format!("time >= {start} AND time < {to}");
    let sql_time =
        |to: i64| format!("timestamp >= '{}' AND timestamp < '{}'", iso_micros(start), iso_micros(to));
    let one_host = &pick_hosts(spec, 1, seed)[0];
    let eight = pick_hosts(spec, 8, seed);
    let influx_or = eight.iter().map(|h| format!("hostname = '{h}'")).collect::<Vec<_>>().join(" OR ");
    let sql_in = eight.iter().map(|h| format!("'{h}'")).collect::<Vec<_>>().join(", ");
    let pg_time =
        |to: i64| format!("time >= to_timestamp_nanos({start}) AND time < to_timestamp_nanos({to})");
    let pg_bucket = |width: &str| format!("CAST(date_bin(INTERVAL '{width}', time) AS BIGINT) AS time");
    let last_all = FIELD_NAMES
        .iter()
        .map(|f| format!("last_value({f} ORDER BY time) AS {f}"))
        .collect::<Vec<_>>()
        .join(", ");
    let max_all_influx =
        FIELD_NAMES.iter().map(|f| format!("max({f}) AS {f}")).collect::<Vec<_>>().join(", ");
    let fields = FIELD_NAMES.join(", ");
    let m = MEASUREMENT;
    let rows_until = |to: i64| {
        let span = (to.saturating_sub(start)).max(0) as u64;
        span.div_ceil(spec.interval_ns.max(1) as u64).min(spec.rows_per_host)
    };
    let hosts = spec.hosts as u64;
    let all_fields = FIELD_NAMES.len() as u64;
    let scope = |kind: QueryKind| match kind {
        QueryKind::SingleGroupby => rows_until(until(1)),
        QueryKind::DoubleGroupby => hosts * rows_until(until(12)),
        QueryKind::MaxAll8 => eight.len() as u64 * all_fields * rows_until(until(8)),
        QueryKind::Lastpoint => hosts * all_fields * spec.rows_per_host,
        QueryKind::HighCpuAll => hosts * all_fields * rows_until(until(12)),
    };
    QueryKind::ALL
        .iter()
        .map(|&kind| {
            let (influxql, sql) = match kind {
                QueryKind::SingleGroupby => (
                    format!(
                        "SELECT max(usage_user) AS usage_user FROM {m} WHERE hostname = '{one_host}' AND {} GROUP BY time(1m) fill(none)",
                        influx_time(until(1))
                    ),
                    format!(
                        "SELECT timestamp, max(usage_user) AS usage_user FROM {m} WHERE hostname = '{one_host}' AND {} SAMPLE BY 1m ALIGN TO CALENDAR",
                        sql_time(until(1))
                    ),
                ),
                QueryKind::DoubleGroupby => (
                    format!(
                        "SELECT mean(usage_user) AS usage_user FROM {m} WHERE {} GROUP BY time(1h), hostname fill(none)",
                        influx_time(until(12))
                    ),
                    format!(
                        "SELECT timestamp, hostname, avg(usage_user) AS usage_user FROM {m} WHERE {} SAMPLE BY 1h ALIGN TO CALENDAR",
                        sql_time(until(12))
                    ),
                ),
                QueryKind::MaxAll8 => (
                    format!(
                        "SELECT {max_all_influx} FROM {m} WHERE ({influx_or}) AND {} GROUP BY time(1h) fill(none)",
                        influx_time(until(8))
                    ),
                    format!(
                        "SELECT timestamp, {} FROM {m} WHERE hostname IN ({sql_in}) AND {} SAMPLE BY 1h ALIGN TO CALENDAR",
                        FIELD_NAMES.iter().map(|f| format!("max({f}) AS {f}")).collect::<Vec<_>>().join(", "),
                        sql_time(until(8))
                    ),
                ),
                QueryKind::Lastpoint => (
                    format!("SELECT last(*) FROM {m} GROUP BY hostname"),
                    format!("SELECT hostname, timestamp, {fields} FROM {m} LATEST ON timestamp PARTITION BY hostname"),
                ),
                QueryKind::HighCpuAll => (
                    format!("SELECT {fields} FROM {m} WHERE usage_user > 90.0 AND {} GROUP BY hostname", influx_time(until(12))),
                    format!(
                        "SELECT hostname, timestamp, {fields} FROM {m} WHERE usage_user > 90.0 AND {}",
                        sql_time(until(12))
                    ),
                ),
            };
            let pg_sql = match kind {
                QueryKind::SingleGroupby => format!(
                    "SELECT {}, max(usage_user) AS usage_user FROM {m} WHERE hostname = '{one_host}' AND {} GROUP BY 1",
                    pg_bucket("1 minute"),
                    pg_time(until(1))
                ),
                QueryKind::DoubleGroupby => format!(
                    "SELECT {}, hostname, avg(usage_user) AS usage_user FROM {m} WHERE {} GROUP BY 1, 2",
                    pg_bucket("1 hour"),
                    pg_time(until(12))
                ),
                QueryKind::MaxAll8 => format!(
                    "SELECT {}, {max_all_influx} FROM {m} WHERE hostname IN ({sql_in}) AND {} GROUP BY 1",
                    pg_bucket("1 hour"),
                    pg_time(until(8))
                ),
                QueryKind::Lastpoint => format!("SELECT hostname, {last_all} FROM {m} GROUP BY hostname"),
                QueryKind::HighCpuAll => format!(
                    "SELECT CAST(time AS BIGINT) AS time, hostname, {fields} FROM {m} WHERE usage_user > 90.0 AND {}",
                    pg_time(until(12))
                ),
            };
            TsbsQuery { kind, influxql, sql, pg_sql, scope_values: scope(kind) }
        })
        .collect()
}

/// An answer in canonical form: row key (`host|time_ns`, `time_ns`, or
/// `host`) -> field name -> value (`None` for null).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    pub rows: BTreeMap<String, BTreeMap<String, Option<f64>>>,
}

fn row_key(kind: QueryKind, host: Option<&str>, time_ns: Option<i64>) -> String {
    let time = if kind.keyed_by_time() { time_ns.map(|t| t.to_string()) } else { None };
    match (host, time) {
        (Some(h), Some(t)) => format!("{h}|{t}"),
        (Some(h), None) => h.to_string(),
        (None, Some(t)) => t,
        (None, None) => String::new(),
    }
}

/// A field name from a column name (`last_usage_user` -> `usage_user`).
fn field_of(column: &str) -> String {
    column.strip_prefix("last_").unwrap_or(column).to_string()
}

fn number(v: &Value) -> anyhow::Result<Option<f64>> {
    match v {
        Value::Null => Ok(None),
        v => v.as_f64().map(Some).with_context(|| format!("{v} is not a number")),
    }
}

/// Canonical form of an InfluxDB 1.x `/query` answer (`epoch=ns`).
pub fn answer_from_influx(kind: QueryKind, v: &Value) -> anyhow::Result<Answer> {
    let result = v.get("results").and_then(|r| r.get(0)).context("no results[0]")?;
    if let Some(e) = result.get("error") {
        anyhow::bail!("{}", e.as_str().map_or_else(|| e.to_string(), str::to_string));
    }
    let mut answer = Answer::default();
    for series in result.get("series").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
        let host = series.get("tags").and_then(|t| t.get("hostname")).and_then(Value::as_str);
        let columns: Vec<&str> = series
            .get("columns")
            .and_then(Value::as_array)
            .context("a series without columns")?
            .iter()
            .map(|c| c.as_str().unwrap_or(""))
            .collect();
        anyhow::ensure!(columns.first() == Some(&"time"), "the first column is not time: {columns:?}");
        for row in series.get("values").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
            let row = row.as_array().context("a row is not an array")?;
            let time = row.first().and_then(Value::as_i64).context("no integer time (epoch=ns)")?;
            let mut fields = BTreeMap::new();
            for (c, v) in columns.iter().zip(row).skip(1) {
                fields.insert(field_of(c), number(v).with_context(|| format!("column {c}"))?);
            }
            answer.rows.insert(row_key(kind, host, Some(time)), fields);
        }
    }
    Ok(answer)
}

/// Canonical form of a QuestDB `/exec` answer.
pub fn answer_from_questdb(kind: QueryKind, v: &Value) -> anyhow::Result<Answer> {
    if let Some(e) = v.get("error") {
        anyhow::bail!("{}", e.as_str().map_or_else(|| e.to_string(), str::to_string));
    }
    let columns: Vec<&str> = v
        .get("columns")
        .and_then(Value::as_array)
        .context("no columns")?
        .iter()
        .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let mut answer = Answer::default();
    for row in v.get("dataset").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
        let row = row.as_array().context("a row is not an array")?;
        let (mut host, mut time, mut fields) = (None, None, BTreeMap::new());
        for (c, v) in columns.iter().zip(row) {
            match *c {
                "hostname" => host = v.as_str(),
                "timestamp" => {
                    let text = v.as_str().context("timestamp is not text")?;
                    time = Some(parse_iso_ns(text).with_context(|| format!("bad timestamp {text:?}"))?);
                }
                c => {
                    fields.insert(field_of(c), number(v).with_context(|| format!("column {c}"))?);
                }
            }
        }
        answer.rows.insert(row_key(kind, host, time), fields);
    }
    Ok(answer)
}

/// Canonical form of rows as text (a PostgreSQL client's simple query):
/// columns `time` (ns since the epoch), `hostname` and fields; `None` is NULL.
pub fn answer_from_text(
    kind: QueryKind,
    columns: &[String],
    rows: &[Vec<Option<String>>],
) -> anyhow::Result<Answer> {
    let mut answer = Answer::default();
    for row in rows {
        let (mut host, mut time, mut fields) = (None, None, BTreeMap::new());
        for (c, v) in columns.iter().zip(row) {
            match (c.as_str(), v.as_deref()) {
                ("hostname", v) => host = v,
                ("time", Some(v)) => time = Some(v.parse::<i64>().with_context(|| format!("time {v:?}"))?),
                (c, v) => {
                    let value = v
                        .map(|v| v.parse::<f64>().with_context(|| format!("column {c}: {v:?}")))
                        .transpose()?;
                    fields.insert(field_of(c), value);
                }
            }
        }
        answer.rows.insert(row_key(kind, host, time), fields);
    }
    Ok(answer)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= RELATIVE_TOLERANCE * a.abs().max(b.abs()).max(1.0)
}

/// `Err` with the first difference if `b` does not give `a`'s answer.
pub fn compare_answers(a: &Answer, b: &Answer) -> Result<(), String> {
    if a.rows.len() != b.rows.len() {
        let only_a = a.rows.keys().find(|k| !b.rows.contains_key(*k));
        let only_b = b.rows.keys().find(|k| !a.rows.contains_key(*k));
        return Err(format!(
            "{} rows against {} (first only in one: {:?} / {:?})",
            a.rows.len(),
            b.rows.len(),
            only_a,
            only_b
        ));
    }
    for (key, fa) in &a.rows {
        let fb = b.rows.get(key).ok_or_else(|| format!("row {key:?} missing"))?;
        if fa.len() != fb.len() || fa.keys().ne(fb.keys()) {
            return Err(format!("row {key:?}: fields {:?} against {:?}", fa.keys(), fb.keys()));
        }
        for (field, va) in fa {
            let vb = fb[field];
            let same = match (va, vb) {
                (Some(x), Some(y)) => close(*x, y),
                (None, None) => true,
                _ => false,
            };
            if !same {
                return Err(format!("row {key:?} field {field}: {va:?} against {vb:?}"));
            }
        }
    }
    Ok(())
}

/// Where and in which language a system is asked.
#[derive(Clone, Debug)]
pub enum QueryTarget {
    /// `POST /query` (Strata, InfluxDB).
    InfluxQl(HttpUrl),
    /// `GET /exec` (QuestDB).
    QuestDbSql(HttpUrl),
    /// Strata's SQL over the PostgreSQL protocol (a simple query from
    /// `tokio-postgres`, rows as text).
    StrataSql(SocketAddr),
}

/// The language of an answer: its latency goes to [`QueryKind::metric`]
/// (InfluxQL) or [`QueryKind::sql_metric`] (SQL).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Language {
    InfluxQl,
    Sql,
}

impl QueryTarget {
    pub fn language(&self) -> Language {
        match self {
            QueryTarget::InfluxQl(_) => Language::InfluxQl,
            QueryTarget::QuestDbSql(_) | QueryTarget::StrataSql(_) => Language::Sql,
        }
    }
}

/// Runs one query once: the answer and the wall time of the request (the
/// connection is made before the clock starts).
pub fn run_once(
    target: &QueryTarget,
    db: &str,
    q: &TsbsQuery,
    runtime: &tokio::runtime::Runtime,
) -> anyhow::Result<(Answer, Duration)> {
    let (url, form) = match target {
        QueryTarget::InfluxQl(url) => (url, form_encode(&[("db", db), ("q", &q.influxql), ("epoch", "ns")])),
        QueryTarget::QuestDbSql(url) => (url, form_encode(&[("query", &q.sql)])),
        QueryTarget::StrataSql(addr) => return runtime.block_on(run_pg_once(*addr, db, q)),
    };
    let mut conn = HttpConnection::connect(url)?;
    let started = Instant::now();
    let response = match target {
        QueryTarget::QuestDbSql(_) => conn.get(&format!("/exec?{form}"))?,
        _ => conn.post("/query", "application/x-www-form-urlencoded", form.as_bytes())?,
    };
    let elapsed = started.elapsed();
    let v: Value = serde_json::from_slice(&response.body)
        .with_context(|| format!("HTTP {}: not JSON: {}", response.status, response.body_text()))?;
    let answer = match target {
        QueryTarget::QuestDbSql(_) => answer_from_questdb(q.kind, &v),
        _ => answer_from_influx(q.kind, &v),
    }
    .with_context(|| format!("HTTP {}", response.status))?;
    Ok((answer, elapsed))
}

/// [`run_once`] for [`QueryTarget::StrataSql`]: `q.pg_sql` in database `db`.
async fn run_pg_once(addr: SocketAddr, db: &str, q: &TsbsQuery) -> anyhow::Result<(Answer, Duration)> {
    use tokio_postgres::SimpleQueryMessage;
    let conninfo = format!("host={} port={} user=bench dbname={db}", addr.ip(), addr.port());
    let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .with_context(|| format!("connecting to {addr}"))?;
    let driving = tokio::spawn(connection);
    let started = Instant::now();
    let messages = client.simple_query(&q.pg_sql).await.with_context(|| q.pg_sql.clone())?;
    let elapsed = started.elapsed();
    drop(client);
    let _ = driving.await;
    let (mut columns, mut rows) = (Vec::new(), Vec::new());
    for m in &messages {
        if let SimpleQueryMessage::Row(row) = m {
            if columns.is_empty() {
                columns = row.columns().iter().map(|c| c.name().to_string()).collect();
            }
            rows.push((0..row.len()).map(|i| row.get(i).map(str::to_string)).collect::<Vec<_>>());
        }
    }
    Ok((answer_from_text(q.kind, &columns, &rows)?, elapsed))
}

/// What one system did with one query: its answer (first run) and the
/// median latency over `runs` further runs, or why it failed.
#[derive(Clone, Debug)]
pub struct QueryOutcome {
    pub kind: QueryKind,
    pub language: Language,
    pub result: Result<(Answer, f64), String>,
}

impl QueryOutcome {
    /// The metric its latency goes to.
    pub fn metric(&self) -> &'static str {
        match self.language {
            Language::InfluxQl => self.kind.metric(),
            Language::Sql => self.kind.sql_metric(),
        }
    }
}

/// Runs every query: one untimed run for the answer, then `runs` timed ones.
pub fn run_queries(target: &QueryTarget, db: &str, queries: &[TsbsQuery], runs: u32) -> Vec<QueryOutcome> {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            let why = format!("building a tokio runtime for the queries: {e}");
            return queries
                .iter()
                .map(|q| QueryOutcome { kind: q.kind, language: target.language(), result: Err(why.clone()) })
                .collect();
        }
    };
    queries
        .iter()
        .map(|q| {
            let result = (|| -> anyhow::Result<(Answer, f64)> {
                let (answer, _) = run_once(target, db, q, &runtime)?;
                let mut ms = Vec::new();
                for _ in 0..runs.max(1) {
                    ms.push(run_once(target, db, q, &runtime)?.1.as_secs_f64() * 1e3);
                }
                Ok((answer, crate::measure::median(&ms)))
            })()
            .map_err(|e| format!("{e:#}"));
            QueryOutcome { kind: q.kind, language: target.language(), result }
        })
        .collect()
}
