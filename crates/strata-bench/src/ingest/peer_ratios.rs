//! Each Strata variant's query latency over the fastest peer's, per query
//! and language (issue 21's acceptance: every TSBS query at most 1.0x the
//! fastest peer's latency): `<query>_to_fastest_peer` (Strata's InfluxQL)
//! and `<query>_sql_to_fastest_peer` (its SQL) over the lowest latency any
//! peer answered that query with, in either language (InfluxDB's InfluxQL,
//! QuestDB's SQL); the same under `scale_` for the large loads. Printed as
//! a table of its own (a row per Strata variant and language).

use serde_json::{json, Map, Value};

use super::queries::QueryKind;
use super::scale_report::{rows_per_language, table, SCALE_PREFIX};
use crate::report::BenchReport;

/// The ratio metric of a latency metric: `single_groupby_ms` ->
/// `single_groupby_to_fastest_peer`, `single_groupby_sql_ms` ->
/// `single_groupby_sql_to_fastest_peer`.
pub fn to_fastest_peer_metric(ms_metric: &str) -> String {
    format!("{}_to_fastest_peer", ms_metric.strip_suffix("_ms").unwrap_or(ms_metric))
}

fn name(row: &Map<String, Value>) -> &str {
    row.get("variant").and_then(Value::as_str).unwrap_or("?")
}

/// Adds the ratios of the module doc to every row not named in `peers`,
/// from the latencies under `prefix` (`""` or `"scale_"`).
pub fn add_to_fastest_peer(report: &mut BenchReport, peers: &[&str], prefix: &str) {
    for kind in QueryKind::ALL {
        let metrics = [kind.metric(), kind.sql_metric()].map(|m| format!("{prefix}{m}"));
        let fastest = report
            .results
            .iter()
            .filter(|r| peers.contains(&name(r)))
            .flat_map(|r| metrics.iter().filter_map(|m| r.get(m).and_then(Value::as_f64)))
            .fold(f64::INFINITY, f64::min);
        if !fastest.is_finite() || fastest <= 0.0 {
            continue;
        }
        for row in report.results.iter_mut().filter(|r| !peers.contains(&name(r))) {
            for m in &metrics {
                if let Some(ms) = row.get(m).and_then(Value::as_f64) {
                    row.insert(to_fastest_peer_metric(m), json!(ms / fastest));
                }
            }
        }
    }
}

/// The ratios as a table: a row per Strata variant and language, a column
/// per query (and per query at scale); empty when there are none.
pub fn render_to_fastest_peer(report: &BenchReport) -> String {
    let (rows, columns) = rows_per_language(report, |r, kind, m| {
        let ratio = to_fastest_peer_metric(m);
        vec![
            (kind.name().to_string(), r.get(&ratio).cloned()),
            (format!("{}_scale", kind.name()), r.get(&format!("{SCALE_PREFIX}{ratio}")).cloned()),
        ]
    });
    if rows.is_empty() {
        return String::new();
    }
    table(report, "queries, latency over the fastest peer's", rows, columns)
}
