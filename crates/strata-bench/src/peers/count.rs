//! Counting the rows a peer holds, each in its own query language, and
//! reading the count out of its answer. A row is one line of the data set;
//! every line carries `usage_user`, so each count is of that field:
//!
//! - InfluxDB (and Strata): InfluxQL `SELECT count(usage_user) FROM cpu`
//!   through `/query` ([`crate::ingest::load::count_in_influx_response`]);
//! - VictoriaMetrics: PromQL `sum(count_over_time(cpu_usage_user[W]))`
//!   through `/api/v1/query` at `time` = one second after the last row, with
//!   a window `W` from one second before the first row: `count_over_time`
//!   counts the raw samples of each series in `(time - W, time]` and `sum`
//!   adds the series up. (A window reaching before 1970, like `[100y]`,
//!   returns nothing in 1.79, so the window is computed from the data.)
//!   The data must be flushed first (`/internal/force_flush`);
//! - QuestDB: SQL `select count() from cpu` through `/exec`.

use anyhow::Context;
use serde_json::Value;

use crate::ingest::generator::{CpuSpec, FIELD_NAMES, MEASUREMENT};
use crate::ingest::http_client::form_encode;

/// VictoriaMetrics' metric name for a field: `{measurement}_{field}`.
pub fn victoriametrics_metric(measurement: &str, field: &str) -> String {
    format!("{measurement}_{field}")
}

/// `/api/v1/query?...` counting the samples of `usage_user` of
/// `measurement` over the data set's time range.
pub fn victoriametrics_count_path(spec: &CpuSpec, measurement: &str) -> String {
    let start_s = spec.start_ns.div_euclid(1_000_000_000);
    let end_s = spec.end_ns().unwrap_or(spec.start_ns).div_euclid(1_000_000_000);
    let at_s = end_s + 1;
    let window_s = at_s - (start_s - 1);
    let query =
        format!("sum(count_over_time({}[{window_s}s]))", victoriametrics_metric(measurement, FIELD_NAMES[0]));
    format!("/api/v1/query?{}", form_encode(&[("query", &query), ("time", &at_s.to_string())]))
}

/// The number in a Prometheus instant-vector answer of one element
/// (`data.result[0].value[1]`, a string); an empty result means 0.
pub fn count_in_prometheus_response(v: &Value) -> anyhow::Result<u64> {
    let status = v.get("status").and_then(Value::as_str).unwrap_or("");
    if status != "success" {
        let e = v.get("error").map_or_else(|| v.to_string(), Value::to_string);
        anyhow::bail!("the count query failed: {e}");
    }
    let result = v
        .get("data")
        .and_then(|d| d.get("result"))
        .and_then(Value::as_array)
        .context("no data.result array in the answer")?;
    let Some(first) = result.first() else { return Ok(0) };
    anyhow::ensure!(result.len() == 1, "expected one summed series, got {}", result.len());
    let value = first.get("value").and_then(|v| v.get(1)).context("no value[1] in the answer")?;
    let number = match value {
        Value::String(s) => s.parse::<f64>().with_context(|| format!("the count {s:?} is not a number"))?,
        other => other.as_f64().with_context(|| format!("the count {other} is not a number"))?,
    };
    whole(number)
}

/// The SQL statement QuestDB counts the data set's rows with.
pub fn questdb_count_sql() -> String {
    questdb_count_sql_of(MEASUREMENT)
}

/// The same for the table of `measurement`.
pub fn questdb_count_sql_of(measurement: &str) -> String {
    format!("select count() from {measurement}")
}

/// `/exec?query=...` for `sql`.
pub fn questdb_exec_path(sql: &str) -> String {
    format!("/exec?{}", form_encode(&[("query", sql)]))
}

/// `dataset[0][0]` of a QuestDB `/exec` answer; its `error` if it has one.
pub fn count_in_questdb_response(v: &Value) -> anyhow::Result<u64> {
    if let Some(e) = v.get("error") {
        anyhow::bail!("the count query failed: {e}");
    }
    let n = v
        .get("dataset")
        .and_then(|d| d.get(0))
        .and_then(|row| row.get(0))
        .context("no dataset[0][0] in the answer")?;
    whole(n.as_f64().with_context(|| format!("the count {n} is not a number"))?)
}

fn whole(x: f64) -> anyhow::Result<u64> {
    anyhow::ensure!(x >= 0.0 && x.fract() == 0.0 && x < 2f64.powi(63), "the count {x} is not a whole number");
    Ok(x as u64)
}
